# SPDX-License-Identifier: BSD-3-Clause
# marionette_library(<name> [INSTALLED] <source>...)
# The project's library layout in one place: target marionette_<name> (alias marionette::<name>)
# built from the sources, its public headers in include/ of the calling folder, its private ones
# in src/, and generated sources' headers (marionette_embed_files) in the binary folder's
# generated/.
#
# INSTALLED: a library of the C++ API (docs/install.md).  It is shared, versioned
# (libmarionette_<name>.so.<major>.<minor>), installed with its public headers, and exported as
# marionette::<name> in the package that find_package(marionette) loads.  Its PRIVATE
# dependencies (FCL, assimp, OMPL, Ipopt, yaml-cpp, the internal common library) stay behind
# its .so: users' include paths and link lines get only its PUBLIC ones.  Without INSTALLED: a
# static library of the front ends, linked into the programs and not installed.
#
# A fuzz build (MARIONETTE_FUZZ) links everything statically: one binary per target, instrumented
# whole.
if(MARIONETTE_FUZZ)
  set(MARIONETTE_API_LIBRARY_TYPE STATIC)
else()
  set(MARIONETTE_API_LIBRARY_TYPE SHARED)
endif()

function(marionette_library name)
  cmake_parse_arguments(ARG "INSTALLED" "" "" ${ARGN})
  set(target marionette_${name})
  if(ARG_INSTALLED)
    add_library(${target} ${MARIONETTE_API_LIBRARY_TYPE} ${ARG_UNPARSED_ARGUMENTS})
    marionette_shared_library(${target} ${name})
    install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
            COMPONENT dev)
  else()
    add_library(${target} STATIC ${ARG_UNPARSED_ARGUMENTS})
  endif()
  add_library(marionette::${name} ALIAS ${target})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_BINARY_DIR}/generated)
endfunction()

# marionette_shared_library(<target> <export name>): the properties and install rules of every
# shared library of the project (the API's and the internal common one; static in a fuzz build,
# which installs nothing).
function(marionette_shared_library target export_name)
  # Hidden visibility: a library exports its public headers' API only (each public header
  # declares it under `#pragma GCC visibility push(default)`); its src/ stays inside it.
  set_target_properties(${target} PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    EXPORT_NAME ${export_name}
    CXX_VISIBILITY_PRESET hidden)
  # Calls between a library's own functions bind inside it (no PLT): the integration step
  # calls across translation units, and nobody interposes the project's symbols.
  target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  install(TARGETS ${target} EXPORT marionetteTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                  NAMELINK_COMPONENT dev)
endfunction()
