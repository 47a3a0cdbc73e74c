# Decides whether the runtime builds its GPU executor (src/cuda): with
# M2N_RUNTIME_ENABLE_CUDA=AUTO, when a CUDA compiler, the CUDA toolkit and
# nccl.h are found. Sets M2N_RUNTIME_CUDA and, when on, enables CUDA.
set(M2N_RUNTIME_ENABLE_CUDA AUTO CACHE STRING
  "Build the GPU executor: AUTO (when CUDA and nccl.h are found), ON or OFF")
set_property(CACHE M2N_RUNTIME_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(M2N_RUNTIME_CUDA OFF)
if(M2N_RUNTIME_ENABLE_CUDA STREQUAL "AUTO" OR M2N_RUNTIME_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  # The toolkit's usual place, for shells whose PATH lacks it.
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH
      "CUDA compiler" FORCE)
  endif()
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100, H200) by default; one architecture keeps nvcc quick.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    find_path(M2N_NCCL_INCLUDE_DIR nccl.h
      HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME ENV NCCL_INCLUDE_DIR
      PATH_SUFFIXES include
      DOC "Directory of nccl.h (NCCL itself is loaded at run time)")
  endif()
  if(CUDAToolkit_FOUND AND M2N_NCCL_INCLUDE_DIR)
    set(M2N_RUNTIME_CUDA ON)
    message(STATUS "m2n runtime: GPU executor on (CUDA ${CUDAToolkit_VERSION}, "
      "architectures ${CMAKE_CUDA_ARCHITECTURES}, nccl.h in "
      "${M2N_NCCL_INCLUDE_DIR})")
  elseif(M2N_RUNTIME_ENABLE_CUDA STREQUAL "AUTO")
    message(STATUS "m2n runtime: GPU executor off (no CUDA compiler, toolkit "
      "or nccl.h found)")
  else()
    message(FATAL_ERROR "M2N_RUNTIME_ENABLE_CUDA=ON, but no CUDA compiler, "
      "toolkit or nccl.h was found (set CMAKE_CUDA_COMPILER, or "
      "M2N_NCCL_INCLUDE_DIR to the directory of nccl.h)")
  endif()
endif()
