# Install rules (docs/install.md): `cmake --install build --prefix P` puts the C ABI header, the
# versioned liboneflow.so (SONAME liboneflow.so.<major> and its symlinks), the `oneflow` CLI, a CMake
# package (find_package(OneFlow CONFIG) -> OneFlow::oneflow, with a version file), oneflow.pc for
# pkg-config, the Go module's sources and the docs under P, laid out by GNUInstallDirs. Included from
# the top-level CMakeLists.txt after the liboneflow and oneflow_cli targets exist; the Java binding adds
# its jar and JNI glue (bindings/java/CMakeLists.txt). tests/install checks what a consumer sees.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ONEFLOW_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/OneFlow" CACHE STRING
    "Where the CMake package (OneFlowConfig.cmake) is installed, relative to the prefix")

# The package's version compatibility is the shared library's: the SONAME carries the major version
# (liboneflow.so.0 for 0.x), and within one SONAME the C ABI only grows (docs/install.md, "Versions").
# So a 0.y library serves every program built against 0.x with x <= y: SameMajorVersion, which is right
# only while SOVERSION and the major version move together. Checked here so that they cannot drift.
get_target_property(_oneflow_soversion liboneflow SOVERSION)
if(NOT "${_oneflow_soversion}" STREQUAL "${PROJECT_VERSION_MAJOR}")
  message(FATAL_ERROR "liboneflow's SOVERSION (${_oneflow_soversion}) differs from the project's major version "
                      "(${PROJECT_VERSION_MAJOR}): OneFlowConfigVersion.cmake (SameMajorVersion) and the SONAME "
                      "would disagree on what is compatible")
endif()

# ---- The library, its header, the CLI --------------------------------------------------------------
# Consumers see OneFlow::oneflow; the header directory is the install's include dir.
set_target_properties(liboneflow PROPERTIES EXPORT_NAME oneflow
  # A CUDA build links the toolkit's libraries from outside the system folders: keep those folders in
  # the installed library's run path (a CPU build links only system libraries, so it gets none).
  INSTALL_RPATH_USE_LINK_PATH ON)
# ONEFLOW_SHARED_CORE (the GPU bundle's build) puts the engine in liboneflow_core.so, which liboneflow.so
# links privately; an exported OneFlow::oneflow would then have to export the core and every module
# object library it links, so that build installs no CMake package (pkg-config's oneflow.pc it does).
set(_oneflow_export EXPORT OneFlowTargets)
if(ONEFLOW_SHARED_CORE)
  set_property(TARGET liboneflow APPEND PROPERTY INSTALL_RPATH "$ORIGIN")
  set(_oneflow_export "")
endif()
install(TARGETS liboneflow ${_oneflow_export}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/oneflow_c.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel)

# The CLI links the engine's objects itself (it inspects graphs through internal APIs), so it needs no
# liboneflow.so and nothing else from lib/: only system libraries (and, in a CUDA build, the toolkit's,
# kept in its run path like the library's). With ONEFLOW_SHARED_CORE it links liboneflow_core.so, which
# it finds through $ORIGIN/../lib. That run path is not given otherwise: CMake reserves room for an
# install run path by padding the build tree's with empty entries, which the loader reads as the current
# directory.
set_target_properties(oneflow_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
if(ONEFLOW_SHARED_CORE)
  file(RELATIVE_PATH _oneflow_bin_to_lib "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set_property(TARGET oneflow_cli PROPERTY INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
  else()
    set_property(TARGET oneflow_cli PROPERTY INSTALL_RPATH "$ORIGIN/${_oneflow_bin_to_lib}")
  endif()
  set_target_properties(oneflow_core PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS oneflow_core LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(TARGETS oneflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# ---- CMake package: lib/cmake/OneFlow/OneFlow{Config,ConfigVersion,Targets}.cmake -------------------
if(_oneflow_export)
  install(EXPORT OneFlowTargets NAMESPACE OneFlow:: FILE OneFlowTargets.cmake
          DESTINATION ${ONEFLOW_INSTALL_CMAKEDIR} COMPONENT devel)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/OneFlowConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/OneFlowConfig.cmake
                                INSTALL_DESTINATION ${ONEFLOW_INSTALL_CMAKEDIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/OneFlowConfigVersion.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/OneFlowConfig.cmake ${PROJECT_BINARY_DIR}/OneFlowConfigVersion.cmake
          DESTINATION ${ONEFLOW_INSTALL_CMAKEDIR} COMPONENT devel)
endif()

# ---- pkg-config: oneflow.pc -----------------------------------------------------------------------
# configure_file writes build/oneflow.pc for the configured prefix; `cmake --install --prefix P` installs
# to another prefix than the configured one, so the install step writes it again for the prefix it
# installs to (same template, same configure_file) and installs that copy. DESTDIR is honoured (the
# file says the final prefix, the staged copy lands under DESTDIR).
set(ONEFLOW_PC_TEMPLATE ${PROJECT_SOURCE_DIR}/cmake/oneflow.pc.in)
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(ONEFLOW_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(ONEFLOW_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
set(ONEFLOW_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file(${ONEFLOW_PC_TEMPLATE} ${PROJECT_BINARY_DIR}/oneflow.pc @ONLY)
install(CODE "
  set(ONEFLOW_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(ONEFLOW_PC_LIBDIR [[${ONEFLOW_PC_LIBDIR}]])
  set(ONEFLOW_PC_INCLUDEDIR [[${ONEFLOW_PC_INCLUDEDIR}]])
  set(PROJECT_VERSION [[${PROJECT_VERSION}]])
  configure_file([[${ONEFLOW_PC_TEMPLATE}]] [[${PROJECT_BINARY_DIR}/install-pc/oneflow.pc]] @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\" TYPE FILE
       FILES [[${PROJECT_BINARY_DIR}/install-pc/oneflow.pc]])" COMPONENT devel)

# The same for the build tree (oneflow-uninstalled.pc, which pkg-config prefers to oneflow.pc in the
# same search path): the source tree's header and this build's library, with a run path to it. The Go
# binding's tests build through it (tests/go).
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/oneflow-uninstalled.pc CONTENT
"prefix=${PROJECT_BINARY_DIR}
libdir=$<TARGET_FILE_DIR:liboneflow>
includedir=${PROJECT_SOURCE_DIR}/include

Name: OneFlow (build tree)
Description: OneFlow inference and training engine, C ABI (uninstalled build tree)
Version: ${PROJECT_VERSION}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -loneflow
Cflags: -I\${includedir}
")

# ---- The Go module's sources, where Debian keeps Go libraries (share/gocode/src/<module path>) ------
# A Go program uses them through a `replace` directive (docs/install.md, "Go"); cgo finds the header and
# the library through `#cgo pkg-config: oneflow`.
set(ONEFLOW_GO_MODULE "github.com/oneflow-engine/oneflow/bindings/go")
file(GLOB _oneflow_go_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bindings/go/*.go)
list(FILTER _oneflow_go_sources EXCLUDE REGEX "_test\\.go$")
install(FILES ${_oneflow_go_sources} ${PROJECT_SOURCE_DIR}/bindings/go/go.mod ${PROJECT_SOURCE_DIR}/bindings/go/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gocode/src/${ONEFLOW_GO_MODULE} COMPONENT go)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/go/examples
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gocode/src/${ONEFLOW_GO_MODULE} COMPONENT go)

# ---- Docs and licence ------------------------------------------------------------------------------
file(GLOB _oneflow_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_oneflow_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
# No licence file is in the tree yet (docs/install.md, "Licence"): whichever LICENSE/COPYING file is
# added at the root is installed with the docs, without another change here.
file(GLOB _oneflow_licences CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/LICENSE* ${PROJECT_SOURCE_DIR}/LICENCE* ${PROJECT_SOURCE_DIR}/COPYING*
     ${PROJECT_SOURCE_DIR}/NOTICE*)
if(_oneflow_licences)
  install(FILES ${_oneflow_licences} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
endif()
