/*
 * A bound on every test, for both runners: a test still running
 * ZSH_TEST_LIMIT seconds after it started (ZSH_TEST_LIMIT_DEFAULT unless
 * set; 0 turns the bound off, for a debugger) fails the run instead of
 * hanging it. A hung rank cannot be stopped from outside its thread, so the
 * watchdog reports what GoogleTest would have (the test's failure, then
 * the summary lines of the tests done so far, which tests/run_all.sh
 * counts) and ends the process with status 1.
 */
#ifndef ZSH_TESTS_HARNESS_WATCHDOG_H_
#define ZSH_TESTS_HARNESS_WATCHDOG_H_

/* Seconds: far above any test's time in the plain and sanitizer builds, and
 * above the collective timeout make check sets (ZSH_TIMEOUT), so that a hung
 * collective fails with its own error first; tests/system/sanitizers/env.sh
 * raises it for the instrumented runs, valgrind's longer timeout among them. */
#define ZSH_TEST_LIMIT_DEFAULT 300

/* Watch every test GoogleTest runs from now on; call after InitGoogleTest.
 * Exits with status 2 if ZSH_TEST_LIMIT is not a number of seconds. */
void zsh_watchdog_install();

#endif
