# Build options. Every optional backend defaults to ON when its package is found and lives in
# its own source files, so a machine without it still builds and tests the rest.
# The tests are configured where GoogleTest is installed (tools/setup.sh --tests); the product
# alone needs none of the test packages. tools/build.sh builds the tests only with --tests.
find_package(GTest QUIET)
option(ACCELTUNE_BUILD_TESTS "Build the GoogleTest suite" ${GTest_FOUND})
if(ACCELTUNE_BUILD_TESTS AND NOT GTest_FOUND)
  message(FATAL_ERROR "the tests need GoogleTest, which is not installed: run tools/setup.sh --tests, "
                      "or configure with -DACCELTUNE_BUILD_TESTS=OFF")
endif()
option(ACCELTUNE_WERROR "Treat compiler warnings as errors" OFF)
# Hooks the test suite drives through the acceltune binary it runs (a GPU sensor read from the
# file ACCELTUNE_TEST_GPU_TEMP_FILE names). Off in a build without tests and in the GPU bundle.
option(ACCELTUNE_TEST_SEAMS "Build the test-only hooks into the product" ${ACCELTUNE_BUILD_TESTS})

# ccache, when installed (tools/setup.sh --tests), in front of every compiler: a rebuild after a
# change, a branch switch or in a fresh clone of the same sources compiles only what differs.
find_program(ACCELTUNE_CCACHE ccache)
option(ACCELTUNE_USE_CCACHE "Compile through ccache when it is installed" ON)
if(ACCELTUNE_USE_CCACHE AND ACCELTUNE_CCACHE)
  foreach(_lang C CXX CUDA)
    if(NOT DEFINED CMAKE_${_lang}_COMPILER_LAUNCHER)
      set(CMAKE_${_lang}_COMPILER_LAUNCHER ${ACCELTUNE_CCACHE})
    endif()
  endforeach()
  message(STATUS "acceltune: compiling through ${ACCELTUNE_CCACHE}")
endif()

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

# Unity builds: the files of a target compiled eight at a time as one translation unit, so the
# templates they share (nlohmann/json, CLI11, fmt, GoogleTest) are instantiated and optimised once
# per batch instead of once per file; a fresh build compiles less than half as much. A target may
# batch by folder instead (acceltune_unity_by_folder). OFF compiles file by file, which suits a
# long edit-compile loop on one file.
option(ACCELTUNE_UNITY_BUILD "Compile each target's files in batches (unity build)" ON)
if(ACCELTUNE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()
# One batch per folder of TARGET's C++ sources (the kernel families): what shares a batch is what
# already shares names.
function(acceltune_unity_by_folder TARGET)
  if(NOT ACCELTUNE_UNITY_BUILD)
    return()
  endif()
  get_target_property(_sources ${TARGET} SOURCES)
  get_target_property(_dir ${TARGET} SOURCE_DIR)
  foreach(_s IN LISTS _sources)
    if(_s MATCHES "\\.cpp$")
      cmake_path(ABSOLUTE_PATH _s BASE_DIRECTORY ${_dir} OUTPUT_VARIABLE _abs)
      cmake_path(GET _abs PARENT_PATH _folder)
      cmake_path(GET _folder FILENAME _group)
      set_source_files_properties(${_abs} PROPERTIES UNITY_GROUP ${_group})
    endif()
  endforeach()
  set_target_properties(${TARGET} PROPERTIES UNITY_BUILD_MODE GROUP)
endfunction()

# Ships the spaces of the calling family's folder (spaces/*.json): copied to the build's spaces/
# folder at configure time (an edit re-runs it) and installed under share/acceltune/spaces.
function(acceltune_ship_spaces)
  file(GLOB _files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/spaces/*.json)
  foreach(_f ${_files})
    get_filename_component(_name ${_f} NAME)
    if(EXISTS ${ACCELTUNE_SPACES_DIR}/${_name})
      message(FATAL_ERROR "space ${_name} is shipped by two families (${_f})")
    endif()
    configure_file(${_f} ${ACCELTUNE_SPACES_DIR}/${_name} COPYONLY)
  endforeach()
  install(FILES ${_files} DESTINATION share/acceltune/spaces)
endfunction()
