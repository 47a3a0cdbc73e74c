# cmake --install: the headers, the libraries, a CMake package
# (find_package(m2n_runtime) gives m2n::runtime and, when built,
# m2n::runtime_cuda) and pkg-config files (m2n_runtime, m2n_runtime_cuda).
include(CMakePackageConfigHelpers)

set(M2N_RUNTIME_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/m2n_runtime)
set(M2N_RUNTIME_INSTALLED m2n_runtime)
if(TARGET m2n_runtime_cuda)
  list(APPEND M2N_RUNTIME_INSTALLED m2n_runtime_cuda)
endif()

install(DIRECTORY include/m2n DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(TARGETS ${M2N_RUNTIME_INSTALLED} EXPORT m2n_runtime_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT m2n_runtime_targets NAMESPACE m2n::
  DESTINATION ${M2N_RUNTIME_CMAKE_DIR})

# What the package must find again for its targets' dependencies.
set(M2N_RUNTIME_STATIC OFF)
if(NOT M2N_RUNTIME_SHARED)
  set(M2N_RUNTIME_STATIC ON)
endif()
set(M2N_RUNTIME_CONFIG_MPI ${M2N_RUNTIME_ENABLE_MPI})
set(M2N_RUNTIME_CONFIG_CUDA OFF)
if(TARGET m2n_runtime_cuda)
  set(M2N_RUNTIME_CONFIG_CUDA ON)
endif()
configure_package_config_file(cmake/m2n_runtimeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtimeConfig.cmake
  INSTALL_DESTINATION ${M2N_RUNTIME_CMAKE_DIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtimeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtimeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtimeConfigVersion.cmake
  DESTINATION ${M2N_RUNTIME_CMAKE_DIR})

# pkg-config: a static library lists what it needs in Libs.private, so that
# `pkg-config --static --libs` links it; a shared one needs nothing more.
set(M2N_PC_LIBS_PRIVATE "-lpthread")
if(M2N_RUNTIME_ENABLE_MPI)
  foreach(library ${MPI_C_LIBRARIES})
    string(APPEND M2N_PC_LIBS_PRIVATE " ${library}")
  endforeach()
endif()
if(M2N_RUNTIME_STATIC)
  string(APPEND M2N_PC_LIBS_PRIVATE " -lstdc++ -lm")
endif()
file(RELATIVE_PATH M2N_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" M2N_PC_UP "${M2N_PC_UP}")
configure_file(cmake/m2n_runtime.pc.in
  ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtime.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtime.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET m2n_runtime_cuda)
  # Static, it builds on m2n_runtime; shared, it holds the whole runtime.
  set(M2N_PC_CUDA_REQUIRES "")
  set(M2N_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  if(M2N_RUNTIME_STATIC)
    set(M2N_PC_CUDA_REQUIRES "m2n_runtime")
  endif()
  configure_file(cmake/m2n_runtime_cuda.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtime_cuda.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/m2n_runtime_cuda.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
