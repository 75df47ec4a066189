# marionette_library(<name> <source>...)
# The project's library layout in one place: target marionette_<name> (alias marionette::<name>)
# built from the sources, its public headers in include/ of the calling folder, its private ones
# in src/, and generated sources' headers (marionette_embed_files) in the binary folder's
# generated/.
function(marionette_library name)
  add_library(marionette_${name} ${ARGN})
  add_library(marionette::${name} ALIAS marionette_${name})
  target_include_directories(marionette_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_BINARY_DIR}/generated)
endfunction()
