# zt_add_gtest(NAME <name> SOURCES <files...> LIBS <targets...> [LABELS <l...>] [TIMEOUT s]
#              [RUN_SERIAL])
# One GoogleTest binary; its cases are registered with ctest at test time
# (PRE_TEST discovery, so building does not run the binaries).
find_package(GTest REQUIRED)
include(GoogleTest)

function(zt_add_gtest)
  cmake_parse_arguments(ARG "RUN_SERIAL" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;FIXTURES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${ARG_NAME}
    DISCOVERY_MODE PRE_TEST
    # Passive OpenMP waits: ctest runs tests in parallel on few cores, where
    # spinning worker threads of one test starve the others.
    # RUN_SERIAL: timing assertions that a loaded machine (ctest -j with
    # multi-process tests beside them) could break run alone.
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "OMP_WAIT_POLICY=passive"
               RUN_SERIAL ${ARG_RUN_SERIAL} FIXTURES_REQUIRED "${ARG_FIXTURES}"
    TEST_PREFIX "${ARG_NAME}.")
endfunction()
