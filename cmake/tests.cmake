# SPDX-License-Identifier: MIT
# Programs the tests drive (FMX_BUILD_TESTS): unit tests, system-test
# programs, MX programs. Nothing here is installed.

if(FMX_WITH_MX_ENABLED)
  # An MX program linked statically, with functions of its own named as the
  # library's internal ones (tests/mx/static/clash.c).
  add_executable(mx_loop_static tests/mx/mx_loop.c tests/mx/static/clash.c)
  add_dependencies(mx_loop_static myriexpress_static)
  target_include_directories(mx_loop_static PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(mx_loop_static PRIVATE ${FMX_MX_A} PkgConfig::HWLOC Threads::Threads)
  set_target_properties(mx_loop_static PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/mx)
  # Programs built against myriexpress.h alone.
  file(GLOB FMX_MX_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/mx/*.c)
  foreach(src ${FMX_MX_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE myriexpress Threads::Threads)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/mx)
  endforeach()
endif()

# Programs driven by the system tests.
file(GLOB FMX_TEST_PROGS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/system/progs/*.c)
foreach(src ${FMX_TEST_PROGS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE fmx m Threads::Threads)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
endforeach()

# Unit tests: one ctest per tests/unit/test_*.c, run alone with a timeout.
enable_testing()
file(GLOB FMX_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src ${FMX_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE fmx_static m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120)
endforeach()

# The simulator (tests/sim): the net protocol on a simulated switch and
# clock, in one process. fmx_sim is its tool, which tests/system/test_sim.py
# and bench/sim.py run.
add_library(simnet STATIC tests/sim/simnet.c)
target_link_libraries(simnet PUBLIC fmx_static)
add_executable(fmx_sim tests/sim/fmx_sim.c)
target_link_libraries(fmx_sim PRIVATE simnet m)
set_target_properties(fmx_sim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
