# zero/aio: the NVMe tier's asynchronous I/O engine (io_uring, libaio or threads)
libzsh_zero_la_SOURCES += \
	%reldir%/aio.h %reldir%/aio_impl.h %reldir%/backend.h %reldir%/aio.c %reldir%/request.c \
	%reldir%/progress.c %reldir%/dir.c %reldir%/file.c %reldir%/config.c %reldir%/probe.c \
	%reldir%/uring.c %reldir%/libaio.c %reldir%/threads.c
libzsh_zero_la_CPPFLAGS += $(URING_CFLAGS)
