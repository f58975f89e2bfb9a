# zero/shard: sharded tensors, flat buckets, tiles
libzsh_zero_la_SOURCES += \
	%reldir%/shard_impl.h %reldir%/shard.c %reldir%/bucket.c %reldir%/tiles.c \
	%reldir%/qgather.c %reldir%/qgather.h %reldir%/qreduce.c %reldir%/qreduce.h
