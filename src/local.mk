# services: status, logging, the config registry, dtypes and half precision,
# clocks, untrusted files (core/); the bootstrap (boot/); topology (topo/)
libzsh_services_la_SOURCES += \
	%reldir%/core/status.c %reldir%/core/status.h %reldir%/core/log.c %reldir%/core/log.h \
	%reldir%/core/config.c %reldir%/core/config.h %reldir%/core/dtype.c %reldir%/core/dtype.h \
	%reldir%/core/clock.h %reldir%/core/sticky.h %reldir%/core/list.h %reldir%/core/half.h \
	%reldir%/core/half.c %reldir%/core/clones.h %reldir%/core/elem.h %reldir%/core/version.c \
	%reldir%/core/array.c %reldir%/core/array.h \
	%reldir%/core/file.c %reldir%/core/file.h %reldir%/core/escape.c %reldir%/core/escape.h \
	%reldir%/boot/store_frame.c %reldir%/boot/store_frame.h %reldir%/boot/store_table.c \
	%reldir%/boot/store_table.h %reldir%/boot/store_server.c %reldir%/boot/store_server.h \
	%reldir%/boot/store_server_conn.c %reldir%/boot/store_server_request.c \
	%reldir%/boot/store_auth.c %reldir%/boot/store_auth.h %reldir%/boot/store_client.c \
	%reldir%/boot/store_client.h %reldir%/boot/store_client_handshake.c %reldir%/boot/store.h \
	%reldir%/boot/config.c %reldir%/boot/config.h %reldir%/boot/env.c %reldir%/boot/env.h \
	%reldir%/boot/oob.c %reldir%/boot/oob.h %reldir%/boot/pmix.c %reldir%/boot/pmix.h \
	%reldir%/boot/launcher.c %reldir%/boot/launcher.h \
	%reldir%/topo/topo.c %reldir%/topo/topo.h %reldir%/topo/map.c %reldir%/topo/config.c \
	%reldir%/topo/config.h
