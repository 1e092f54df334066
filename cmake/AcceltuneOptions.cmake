# Build options. Every optional backend defaults to ON when its package is found and lives in
# its own source files, so a machine without it still builds and tests the rest.
option(ACCELTUNE_BUILD_TESTS "Build the GoogleTest suite" ON)
option(ACCELTUNE_WERROR "Treat compiler warnings as errors" OFF)
# Hooks the test suite drives through the acceltune binary it runs (a GPU sensor read from the
# file ACCELTUNE_TEST_GPU_TEMP_FILE names). Off in a build without tests and in the GPU bundle.
option(ACCELTUNE_TEST_SEAMS "Build the test-only hooks into the product" ${ACCELTUNE_BUILD_TESTS})

function(acceltune_optional_backend NAME PACKAGE_FOUND DOC)
  if(${PACKAGE_FOUND})
    set(_default ON)
  else()
    set(_default OFF)
  endif()
  option(ACCELTUNE_WITH_${NAME} "${DOC}" ${_default})
  if(ACCELTUNE_WITH_${NAME} AND NOT ${PACKAGE_FOUND})
    message(FATAL_ERROR "ACCELTUNE_WITH_${NAME}=ON but its package was not found; install it "
                        "(tools/setup.sh) or configure with -DACCELTUNE_WITH_${NAME}=OFF")
  endif()
  message(STATUS "acceltune backend ${NAME}: ${ACCELTUNE_WITH_${NAME}}")
endfunction()

# The backends that arrive later probe their packages here; none is required.
find_package(CUDAToolkit QUIET)
set(_nccl_found OFF)
if(CUDAToolkit_FOUND)
  find_library(ACCELTUNE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(ACCELTUNE_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(ACCELTUNE_NCCL_LIBRARY AND ACCELTUNE_NCCL_INCLUDE)
    set(_nccl_found ON)
  endif()
endif()
find_package(PkgConfig QUIET)
set(_ucx_found OFF)
set(_verbs_found OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(ACCELTUNE_UCX QUIET ucx)
  pkg_check_modules(ACCELTUNE_VERBS QUIET libibverbs)
  set(_ucx_found ${ACCELTUNE_UCX_FOUND})
  set(_verbs_found ${ACCELTUNE_VERBS_FOUND})
endif()
# FindMPI probes its C component with the C compiler, which a C++ project does not enable.
include(CheckLanguage)
check_language(C)
if(CMAKE_C_COMPILER)
  enable_language(C)
endif()
find_package(MPI QUIET COMPONENTS C)

acceltune_optional_backend(CUDA CUDAToolkit_FOUND "CUDA copy kernels")
acceltune_optional_backend(NCCL _nccl_found "NCCL collective kernels")
acceltune_optional_backend(UCX _ucx_found "UCX transfer kernels")
acceltune_optional_backend(MPI MPI_C_FOUND "MPI collective kernels")
acceltune_optional_backend(VERBS _verbs_found "RDMA verbs kernels")

function(acceltune_warnings TARGET)
  target_compile_options(${TARGET} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(ACCELTUNE_WERROR)
    target_compile_options(${TARGET} PRIVATE -Werror)
  endif()
endfunction()

# Adds SOURCES to TARGET with the include directories and link libraries that pkg-config found
# for ACCELTUNE_<PKG> (UCX, VERBS, HWLOC).
function(acceltune_pkg_sources TARGET PKG)
  target_sources(${TARGET} PRIVATE ${ARGN})
  target_include_directories(${TARGET} PRIVATE ${ACCELTUNE_${PKG}_INCLUDE_DIRS})
  target_link_libraries(${TARGET} PUBLIC ${ACCELTUNE_${PKG}_LINK_LIBRARIES})
endfunction()
