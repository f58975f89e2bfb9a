# coll: the collective layer, a folder per part (docs/ARCHITECTURE.md)
libzsh_coll_la_SOURCES += \
	%reldir%/base/call.h %reldir%/base/config.c %reldir%/base/config.h %reldir%/base/desc.c \
	%reldir%/base/desc.h %reldir%/base/partition.h %reldir%/base/tag.h %reldir%/base/trace.c \
	%reldir%/base/trace.h \
	%reldir%/fault/failure.c %reldir%/fault/failure.h %reldir%/fault/ctrl.c \
	%reldir%/fault/ctrl.h %reldir%/fault/revoke.c %reldir%/fault/revoke.h \
	%reldir%/comm/context.c %reldir%/comm/context.h %reldir%/comm/comm.c %reldir%/comm/comm.h \
	%reldir%/comm/retire.c %reldir%/comm/retire.h %reldir%/comm/hier.c %reldir%/comm/hier.h \
	%reldir%/comm/health.c %reldir%/comm/health.h %reldir%/comm/xfer.c %reldir%/comm/xfer.h \
	%reldir%/handshake/handshake.c %reldir%/handshake/handshake.h %reldir%/handshake/variant.h \
	%reldir%/handshake/ring.c %reldir%/handshake/all.c %reldir%/handshake/box.c \
	%reldir%/handshake/board.c \
	%reldir%/task/task.h %reldir%/task/pool.c %reldir%/task/engine.c %reldir%/task/fail.c \
	%reldir%/task/validate.c %reldir%/task/validate.h \
	%reldir%/reduce/kernels.c %reldir%/reduce/kernels.h \
	%reldir%/algo/ring.c %reldir%/algo/ring.h %reldir%/algo/rounds.c %reldir%/algo/rounds.h \
	%reldir%/algo/rd.c %reldir%/algo/rd.h %reldir%/algo/copy.c %reldir%/algo/copy.h \
	%reldir%/algo/direct.c %reldir%/algo/direct.h %reldir%/algo/eager.c %reldir%/algo/eager.h \
	%reldir%/algo/hier.c %reldir%/algo/hier.h %reldir%/algo/chain.c %reldir%/algo/chain.h \
	%reldir%/select/select.c %reldir%/select/select.h %reldir%/select/prepare.c \
	%reldir%/select/prepare.h \
	%reldir%/allgather/allgather.c %reldir%/allgather/allgather.h \
	%reldir%/allgather/allgather_ring.c %reldir%/allgather/allgather_bruck.c \
	%reldir%/allgather/allgather_rma.c %reldir%/allgather/allgather_direct.c \
	%reldir%/allgather/allgather_eager.c %reldir%/allgather/allgather_hier.c \
	%reldir%/reduce_scatter/reduce_scatter.c %reldir%/reduce_scatter/reduce_scatter.h \
	%reldir%/reduce_scatter/reduce_scatter_ring.c \
	%reldir%/reduce_scatter/reduce_scatter_direct.c \
	%reldir%/reduce_scatter/reduce_scatter_eager.c \
	%reldir%/reduce_scatter/reduce_scatter_hier.c \
	%reldir%/reduce_scatter/reduce_scatter_ordered.c %reldir%/reduce_scatter/reduce_scatter_chain.c \
	%reldir%/allreduce/allreduce.c %reldir%/allreduce/allreduce.h \
	%reldir%/allreduce/allreduce_ring.c %reldir%/allreduce/allreduce_direct.c \
	%reldir%/allreduce/allreduce_eager.c %reldir%/allreduce/allreduce_hier.c \
	%reldir%/allreduce/allreduce_ordered.c %reldir%/allreduce/allreduce_chain.c \
	%reldir%/bcast/bcast.c %reldir%/bcast/bcast.h %reldir%/bcast/bcast_binomial.c \
	%reldir%/bcast/bcast_direct.c %reldir%/bcast/bcast_eager.c %reldir%/bcast/bcast_hier.c \
	%reldir%/alltoall/alltoall.c %reldir%/alltoall/alltoall.h \
	%reldir%/alltoall/alltoall_pairwise.c %reldir%/alltoall/alltoall_direct.c \
	%reldir%/alltoall/alltoall_eager.c \
	%reldir%/p2p/p2p.c \
	%reldir%/barrier/barrier.c %reldir%/barrier/barrier_eager.c \
	%reldir%/barrier/barrier_hier.c %reldir%/barrier/barrier.h \
	%reldir%/api/config.c %reldir%/api/config.h %reldir%/api/comm.c %reldir%/api/comm.h \
	%reldir%/api/split.c %reldir%/api/request.c %reldir%/api/device.c \
	%reldir%/device/device.h %reldir%/device/mem.c %reldir%/device/boot.c \
	%reldir%/device/call.c
