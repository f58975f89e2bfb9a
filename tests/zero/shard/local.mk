# The tests of zero/shard/, listed where they live (Makefile.am builds them).
# rank tests (in process and under mpirun)
ZSH_TEST_CASES += \
	%reldir%/shard_test.c %reldir%/qreduce_test.c %reldir%/qreduce_half_test.c
