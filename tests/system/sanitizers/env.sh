# Sourced by the sanitizer and valgrind runs. UCX's memory hooks patch malloc
# and mmap underneath the sanitizers' (and valgrind's) own interception, so
# they are turned off; nothing in the tests needs them.
export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
