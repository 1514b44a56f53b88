# zt_add_gtest(NAME <name> SOURCES <files...> LIBS <targets...> [LABELS <l...>] [TIMEOUT s]
#              [RUN_SERIAL] [NO_SANITIZER])
# One GoogleTest binary; its cases are registered with ctest at test time
# (PRE_TEST discovery, so building does not run the binaries).
find_package(GTest REQUIRED)
include(GoogleTest)

function(zt_add_gtest)
  cmake_parse_arguments(ARG "RUN_SERIAL;NO_SANITIZER" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;FIXTURES"
                        ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # The sanitizer pass (scripts/test.sh) runs only unit and reliability
  # tests that are not slow: in a sanitizer build the others stay out of
  # `all` and register nothing, so CI does not compile what it never runs.
  # NO_SANITIZER: a unit test whose code paths other tests already run
  # under the sanitizers, left out there to keep CI in budget (each use
  # says why).
  set(sanitizer_runs OFF)
  if(("unit" IN_LIST ARG_LABELS OR "reliability" IN_LIST ARG_LABELS)
     AND NOT "slow" IN_LIST ARG_LABELS AND NOT ARG_NO_SANITIZER)
    set(sanitizer_runs ON)
  endif()
  if(ZEROTRAIN_SANITIZE AND NOT sanitizer_runs)
    add_executable(${ARG_NAME} EXCLUDE_FROM_ALL ${ARG_SOURCES})
  else()
    add_executable(${ARG_NAME} ${ARG_SOURCES})
  endif()
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  if(ZEROTRAIN_SANITIZE AND NOT sanitizer_runs)
    return()
  endif()
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
