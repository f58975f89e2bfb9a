# Sourced by the sanitizer and valgrind runs. UCX's memory hooks patch malloc
# and mmap underneath the sanitizers' (and valgrind's) own interception, so
# they are turned off; nothing in the tests needs them.
export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
# A test's bound (tests/harness/watchdog.h) stays above the collective
# timeout, so that a hung collective fails with its own error first: make
# valgrind gives collectives ZSH_TIMEOUT=600, and instrumented tests run
# many times slower than the plain build the default is set for.
export ZSH_TEST_LIMIT=${ZSH_TEST_LIMIT:-1200}
