# The installed package, used as an engine would: installs the runtime's
# build into a fresh prefix, then builds the C worked example of
# docs/runtime.md as a project of its own against it, once with
# find_package(m2n_runtime) and once with pkg-config, and runs both on the
# plan of docs/plan-format.md's worked example.
#
#   cmake -DBUILD=<runtime build> -DWORK=<dir> -DDOC=<docs/runtime.md>
#         -DPLAN_WRITER=<m2n_write_doc_plan> -DGENERATOR=<generator>
#         -DC_COMPILER=<cc> -DCXX_COMPILER=<c++> [-DPKG_CONFIG=<pkg-config>]
#         [-DLINK_FLAGS=<flags>] -P install_test.cmake
#
# LINK_FLAGS are the runtime build's own linker flags, which an engine
# linking it must pass too (a sanitizer build's runtimes, for one).

function(check_run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result
    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGN}\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
check_run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
foreach(installed include/m2n/executor.h include/m2n/export.h
    lib/cmake/m2n_runtime/m2n_runtimeConfig.cmake
    lib/pkgconfig/m2n_runtime.pc)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "the install has no ${installed}")
  endif()
endforeach()

# The example is the page's C block after "## A worked example".
include(${CMAKE_CURRENT_LIST_DIR}/doc_block.cmake)
file(READ ${DOC} page)
m2n_doc_block("${page}" "## A worked example" "```c" example)
file(WRITE ${WORK}/example/main.c "${example}\n")
# C for the example; C++ only to link the static library's C++ runtime.
file(WRITE ${WORK}/example/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.20)
project(m2n_example C CXX)
find_package(m2n_runtime REQUIRED)
add_executable(example main.c)
target_link_libraries(example PRIVATE m2n::runtime)
]=])

set(run_dir ${WORK}/run)
file(MAKE_DIRECTORY ${run_dir})
check_run(${PLAN_WRITER} ${run_dir}/refit.m2n)
set(ENV{LD_LIBRARY_PATH} "${prefix}/lib:$ENV{LD_LIBRARY_PATH}")

function(expect_example binary how)
  execute_process(COMMAND ${binary} WORKING_DIRECTORY ${run_dir}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0 OR NOT out MATCHES "\n2 3 6 7\n")
    message(FATAL_ERROR "the example built with ${how} printed:\n${out}${err}")
  endif()
  message(STATUS "${how}: ${out}")
endfunction()

check_run(${CMAKE_COMMAND} -S ${WORK}/example -B ${WORK}/example-build
  -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
check_run(${CMAKE_COMMAND} --build ${WORK}/example-build)
expect_example(${WORK}/example-build/example "find_package")

if(NOT PKG_CONFIG)
  message(STATUS "no pkg-config on this machine: only find_package checked")
  return()
endif()
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
check_run(${PKG_CONFIG} --cflags --libs --static m2n_runtime)
string(STRIP "${output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags} ${LINK_FLAGS}")
check_run(${C_COMPILER} ${WORK}/example/main.c -o ${WORK}/example-pc ${flags})
expect_example(${WORK}/example-pc "pkg-config")
