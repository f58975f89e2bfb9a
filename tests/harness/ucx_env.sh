# Sourced before every test (make check's AM_TESTS_ENVIRONMENT, make
# valgrind): UCX's shared-memory transports sized for tests, unless the
# caller set them. Each UCX worker opens a posix and a sysv interface, and
# each of those touches its first pool of receive segments at creation,
# whatever the FIFO needs: the tests open thousands of workers (every
# in-process rank of every rank test, every process under mpirun), and
# those page faults were most of the unit tests' kernel time
# (docs/DECISIONS.md, "The test house's time"). A FIFO of 16 elements, with
# segments grown 16 at a time, leaves more back-pressure on the
# shared-memory lanes than UCX's defaults, so the tests also see the
# pending sends more often.
export UCX_POSIX_FIFO_SIZE=${UCX_POSIX_FIFO_SIZE:-16} UCX_SYSV_FIFO_SIZE=${UCX_SYSV_FIFO_SIZE:-16}
export UCX_POSIX_RX_BUFS_GROW=${UCX_POSIX_RX_BUFS_GROW:-16}
export UCX_SYSV_RX_BUFS_GROW=${UCX_SYSV_RX_BUFS_GROW:-16}
