# `cmake --install build --prefix P`: the C++ package. Included by the top-level CMakeLists.txt
# when CAGRA_INSTALL is on (the default, except in pip's build). It installs
#
#   include/cagra/                    the public headers (the whole folder)
#   lib/libcagra.so*, lib/libcagra.a  the library, shared (CAGRA_BUILD_SHARED) and static
#   bin/cagra                         the command-line tool (CAGRA_BUILD_CLI)
#   lib/cmake/cagra/                  find_package(cagra CONFIG): targets cagra::cagra (the shared
#                                     library; the static one when built without it) and
#                                     cagra::cagra_static
#   lib/pkgconfig/cagra.pc            pkg-config: `--libs cagra` (shared), `--static` (static)
#
# scripts/check-install.sh installs a build and compiles tests/consumer against it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CAGRA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cagra)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cagra DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set_target_properties(cagra PROPERTIES EXPORT_NAME cagra_static)
set(_cagra_installed cagra)
if(TARGET cagra_shared)
  # Keep the library folders of its dependencies (the CUDA toolkit's cuBLAS) in the installed
  # library's run path; the prefix's own lib folder is the user's to add (or a system one).
  set_target_properties(cagra_shared PROPERTIES EXPORT_NAME cagra INSTALL_RPATH_USE_LINK_PATH ON)
  list(APPEND _cagra_installed cagra_shared)
endif()
install(TARGETS ${_cagra_installed} EXPORT cagraTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET cagra_cli)
  set_target_properties(cagra_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS cagra_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# ---- CMake package ----------------------------------------------------------------------------
install(EXPORT cagraTargets NAMESPACE cagra:: DESTINATION ${CAGRA_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cagraConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cagraConfig.cmake
                              INSTALL_DESTINATION ${CAGRA_CMAKE_DIR})
# Until 1.0, a minor version may change the API: 0.1.x satisfies find_package(cagra 0.1) only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cagraConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cagraConfig.cmake ${PROJECT_BINARY_DIR}/cagraConfigVersion.cmake
        DESTINATION ${CAGRA_CMAKE_DIR})

# ---- pkg-config ---------------------------------------------------------------------------------
# Libs.private lists what the static library needs (`pkg-config --static --libs cagra`), as
# linker flags: a library file /dir/libX.so becomes -L/dir -lX.
set(_cagra_pc_private ${OpenMP_CXX_FLAGS})
foreach(_lib IN ITEMS ${ZLIB_LIBRARIES} ${HDF5_C_LIBRARIES})
  if(_lib MATCHES "^(.*)/lib([^/]+)\\.(so|a)(\\.[0-9.]*)?$")
    if(NOT CMAKE_MATCH_1 IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND _cagra_pc_private "-L${CMAKE_MATCH_1}")
    endif()
    list(APPEND _cagra_pc_private "-l${CMAKE_MATCH_2}")
  elseif(_lib MATCHES "^-")
    list(APPEND _cagra_pc_private "${_lib}")
  else()
    list(APPEND _cagra_pc_private "-l${_lib}")
  endif()
endforeach()
if(CAGRA_HAVE_CUDA)
  list(APPEND _cagra_pc_private "-L${CUDAToolkit_LIBRARY_DIR}" -lcudart_static -lcublas -ldl -lrt
       -lpthread)
endif()
list(REMOVE_DUPLICATES _cagra_pc_private)
list(JOIN _cagra_pc_private " " CAGRA_PC_LIBS_PRIVATE)
# The prefix relative to the .pc file, so that an installed tree can move.
file(RELATIVE_PATH CAGRA_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" CAGRA_PC_PREFIX_FROM_PCDIR "${CAGRA_PC_PREFIX_FROM_PCDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/cagra.pc.in ${PROJECT_BINARY_DIR}/cagra.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cagra.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
