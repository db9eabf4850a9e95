# libcagra.a and libcagra.so from the one set of objects that cagra_objects compiles (the CUDA
# objects are the expensive ones: they compile once for both). Included by the top-level
# CMakeLists.txt after cagra_objects and CAGRA_PRIVATE_LIBS (zlib, HDF5, CUDA) are set.
#
#   cagra         libcagra.a: what the tests, the tools and the Python extension link; installed
#                 as cagra::cagra_static
#   cagra_shared  libcagra.so (CAGRA_BUILD_SHARED): installed as cagra::cagra, the default
#
# The public headers are the only include directory either exports. OpenMP is public on the
# static library (its users link libgomp; tests use OpenMP through it), private on the shared
# one. The warning flags (cagra_flags) stay in the build.

add_library(cagra STATIC $<TARGET_OBJECTS:cagra_objects>)
set(_cagra_libraries cagra)
if(CAGRA_BUILD_SHARED)
  add_library(cagra_shared SHARED $<TARGET_OBJECTS:cagra_objects>)
  # libcagra.so.0.1 -> libcagra.so.0.1.0: until 1.0 a minor version may change the ABI.
  set_target_properties(cagra_shared PROPERTIES OUTPUT_NAME cagra VERSION ${PROJECT_VERSION}
                        SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  list(APPEND _cagra_libraries cagra_shared)
  # What it links from archives (CUDA's static runtime; libstdc++ where the compiler links it
  # statically) stays private: exported, their STB_GNU_UNIQUE symbols would bind process-wide
  # (python/CMakeLists.txt says what that broke for the Python module).
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(cagra_shared PRIVATE "LINKER:--exclude-libs,ALL")
  endif()
endif()

foreach(_lib IN LISTS _cagra_libraries)
  target_include_directories(${_lib} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                            $<INSTALL_INTERFACE:include>)
  target_link_libraries(${_lib} PRIVATE ${CAGRA_PRIVATE_LIBS} $<BUILD_INTERFACE:cagra_flags>)
  target_compile_features(${_lib} PUBLIC cxx_std_17)
  if(CAGRA_HAVE_CUDA AND CAGRA_TRACE_KERNELS)
    target_compile_definitions(${_lib} PUBLIC CAGRA_MCTA_TRACE=1)
  endif()
endforeach()
target_link_libraries(cagra PUBLIC OpenMP::OpenMP_CXX)
if(TARGET cagra_shared)
  target_link_libraries(cagra_shared PRIVATE OpenMP::OpenMP_CXX)
endif()
# Sources that are objects only name no language; the CUDA objects need no device link step
# (no separable compilation), so the C++ compiler links.
set_target_properties(${_cagra_libraries} PROPERTIES LINKER_LANGUAGE CXX)

# The names a project that adds this tree with add_subdirectory() uses, as with find_package().
add_library(cagra::cagra_static ALIAS cagra)
if(TARGET cagra_shared)
  add_library(cagra::cagra ALIAS cagra_shared)
else()
  add_library(cagra::cagra ALIAS cagra)
endif()
