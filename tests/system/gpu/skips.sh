# Sourced by tests/system/gpu/run.sh (and its test): which skips a run on the
# GPU machine may show. GoogleTest and the test scripts exit 0 when every
# case skips, so there a skip fails the step, but for the cases that are
# right on a one-GPU machine with nvcc: the build-without-nvcc case, cases
# that need more ranks than the job has (a device test's one-rank instance:
# NCCL refuses two ranks on one GPU), and zsh_bench's no-device case.
expected_skips='cuda_kernels\.without_nvcc_|/np1( \(|$)|\(needs [0-9]+ ranks|device_cuda_without_a_device_exits_2'

unexpected_skips() { # LOG: print the skipped cases not expected there; false if none
    grep '^\[  SKIPPED \] [A-Za-z_]*[./]' "$1" | grep -Ev "$expected_skips"
}
