# Read by ctest (TEST_INCLUDE_FILES, written by vela_test with VELA_TEST_PER_SUITE): registers
# one test per GoogleTest suite of a binary, named "Suite.*" so that `ctest -R '^Suite\.'`
# still selects it. A sanitizer binary takes a tenth of a second to start, and starting it once
# per test instead of once per suite was most of CI's ASan test time.
#   In: VELA_SUITE_BINARY, VELA_SUITE_TIMEOUT, VELA_SUITE_LOCK (a RESOURCE_LOCK or empty).
if(NOT EXISTS "${VELA_SUITE_BINARY}")
  add_test("${VELA_SUITE_BINARY}_NOT_BUILT" "${VELA_SUITE_BINARY}")
  return()
endif()
execute_process(COMMAND "${VELA_SUITE_BINARY}" --gtest_list_tests
  OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  add_test("${VELA_SUITE_BINARY}_CANNOT_LIST" "${VELA_SUITE_BINARY}" --gtest_list_tests)
  return()
endif()
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # Suites start in column one and end with a dot ("Name." or "Prefix/Name/0.  # TypeParam...");
  # their tests are indented. gtest_main's own "Running main() from ..." line has no dot at the end.
  string(REGEX REPLACE "  #.*$" "" line "${line}")
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
  else()
    continue()
  endif()
  if(NOT suite MATCHES "^DISABLED_")
    add_test("${suite}.*" "${VELA_SUITE_BINARY}" "--gtest_filter=${suite}.*")
    set_tests_properties("${suite}.*" PROPERTIES TIMEOUT "${VELA_SUITE_TIMEOUT}")
    if(VELA_SUITE_LOCK)
      # First, one after another, beside the rest (see vela_test in tests/CMakeLists.txt).
      set_tests_properties("${suite}.*" PROPERTIES RESOURCE_LOCK "${VELA_SUITE_LOCK}" COST 1000)
    endif()
  endif()
endforeach()
