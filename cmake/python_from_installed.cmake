# CAGRA_USE_INSTALLED: the Python extension alone, linked against an installed cagra package
# (find_package(cagra): CMAKE_PREFIX_PATH names the prefix) instead of compiling the library a
# second time. scripts/test.sh builds the wheel this way from the library its CMake build made;
# a plain `pip install .` compiles the library as usual. Included by the top-level CMakeLists.txt,
# which then stops.
if(NOT CAGRA_BUILD_PYTHON)
  message(FATAL_ERROR "CAGRA_USE_INSTALLED builds the Python extension only: set CAGRA_BUILD_PYTHON=ON")
endif()
find_package(cagra ${PROJECT_VERSION} EXACT CONFIG REQUIRED)
message(STATUS "cagra: the Python extension links ${cagra_DIR} (CUDA ${cagra_HAVE_CUDA})")
# python/CMakeLists.txt links `cagra` and asks CAGRA_HAVE_CUDA, as in a full build.
add_library(cagra ALIAS cagra::cagra_static)
set(CAGRA_HAVE_CUDA ${cagra_HAVE_CUDA})
add_subdirectory(python)
