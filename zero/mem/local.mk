# zero/mem: byte accounting, checked sizes, the NVMe tier's buffer pool, huge
# pages, the layer's CUDA runtime calls
libzsh_zero_la_SOURCES += \
	%reldir%/account.c %reldir%/account.h %reldir%/checked.h %reldir%/pool.c %reldir%/pool.h \
	%reldir%/huge.c %reldir%/huge.h %reldir%/device.c %reldir%/device.h
