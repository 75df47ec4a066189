# SPDX-License-Identifier: BSD-3-Clause
# What `cmake --install` puts beside the programs and libraries (their own folders install
# those), and the Debian package CPack makes of it all (docs/install.md).
include(CMakePackageConfigHelpers)

# ---- The CMake package: find_package(marionette) -------------------------------------------
set(MARIONETTE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/marionette)
install(EXPORT marionetteTargets NAMESPACE marionette:: DESTINATION ${MARIONETTE_CMAKE_DIR}
        COMPONENT dev)
configure_package_config_file(cmake/marionetteConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/marionetteConfig.cmake
  INSTALL_DESTINATION ${MARIONETTE_CMAKE_DIR}
  PATH_VARS MARIONETTE_INSTALL_DATADIR)
# Before 1.0, a minor version may change the API: 0.1.x satisfies a request for 0.1 only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/marionetteConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/marionetteConfig.cmake
              ${PROJECT_BINARY_DIR}/package/marionetteConfigVersion.cmake
        DESTINATION ${MARIONETTE_CMAKE_DIR} COMPONENT dev)

# ---- Examples, the service unit, the install guide -----------------------------------------
install(DIRECTORY examples/ DESTINATION ${MARIONETTE_INSTALL_DATADIR}/examples COMPONENT runtime)
install(FILES deploy/systemd/marionette-server.service
        DESTINATION lib/systemd/system COMPONENT runtime)
# The licence (LICENSE), what of others the build contains (THIRD-PARTY.md), and the Debian
# copyright file of both (the .deb's /usr/share/doc/marionette/copyright).
install(FILES README.md LICENSE THIRD-PARTY.md docs/install.md deploy/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# ---- The Debian package: cpack -G DEB in the build folder ----------------------------------
# marionette_<version>_amd64.deb, installing under /usr.  Its Depends are the Debian runtime
# packages its programs and libraries link (dpkg-shlibdeps), and adduser for the service's user.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME marionette)
set(CPACK_PACKAGE_VENDOR "the marionette project")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "marionette maintainers <marionette@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "motion planning for robotic marionettes: gRPC server, CLI and C++ libraries")
set(CPACK_PACKAGE_DESCRIPTION
    "Plans obstacle-aware motions of string-driven puppets on a variational integrator with\n\
unilateral strings, FCL collision checking of links and strings, OMPL planners and trajectory\n\
optimization. Ships marionette-server (gRPC marionette.v1, a systemd unit on loopback), the\n\
marionette command, the C++ libraries with their headers and CMake package, and the built-in\n\
models and scenes.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# The optimizer's factorizations (Ipopt's MUMPS) run on whatever BLAS libblas.so.3 points to, and
# the plans follow its rounding: the reference BLAS gives another (as good) plan than the serial
# OpenBLAS the project is built and measured with.  Depending on it, an installed server plans
# what the build does, and faster.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libopenblas0-serial")
# The C++ package's public dependency: Eigen's headers (the libraries' headers use Eigen).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libeigen3-dev")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm ${PROJECT_SOURCE_DIR}/deploy/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
