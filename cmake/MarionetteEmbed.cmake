# marionette_embed_files(<out_var> SYMBOL <name> BASE <folder> FILES <file>...)
# Generates a C++ source that embeds FILES (paths relative to BASE) as
#   const marionette::embedded::FileSet marionette::embedded::<name>,
# regenerated when any of them changes; <out_var> receives the source's path, to be added to a
# library.  See marionette/common/embedded_file.hpp.
function(marionette_embed_files out_var)
  cmake_parse_arguments(ARG "" "SYMBOL;BASE" "FILES" ${ARGN})
  set(output ${CMAKE_CURRENT_BINARY_DIR}/generated/embedded_${ARG_SYMBOL}.cpp)
  string(REPLACE ";" "|" inputs "${ARG_FILES}")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} -DBASE=${ARG_BASE} "-DINPUTS=${inputs}"
            -DSYMBOL=${ARG_SYMBOL} -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${ARG_SYMBOL}"
    VERBATIM)
  set(${out_var} ${output} PARENT_SCOPE)
endfunction()
