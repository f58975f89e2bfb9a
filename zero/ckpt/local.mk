# zero/ckpt: checkpoints (format, manifest, shard files, save and load)
libzsh_zero_la_SOURCES += \
	%reldir%/format.h %reldir%/hash.h %reldir%/manifest.c %reldir%/manifest_read.c \
	%reldir%/writer.c %reldir%/writer.h %reldir%/reader.c %reldir%/reader.h \
	%reldir%/dir.c %reldir%/dir.h %reldir%/save.c %reldir%/load.c %reldir%/ckpt_impl.h \
	%reldir%/plan.c %reldir%/snapshot.c %reldir%/buddy.c %reldir%/buddy.h \
	%reldir%/fetch.c
libzsh_zero_la_CPPFLAGS += $(JSONC_CFLAGS)
