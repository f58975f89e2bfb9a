/*
 * The asynchronous file I/O engine of the NVMe tier.
 *
 * One engine per optimizer: it owns a directory of its own under the
 * configured NVMe directory, <dir>/zeroshard-<job id>/r<rank>-<k>, created
 * 0700 and locked with flock() while the engine lives, and files in it
 * created 0600. At create, every directory of the same job id and rank that
 * no live process holds locked (left by a killed job) is swept; at destroy
 * the engine removes its files and its directory, and the job directory
 * once it is empty. Two jobs may share the NVMe directory.
 *
 * Backends, tried in this order unless ZSH_AIO forces one: io_uring through
 * liburing, libaio, and a small pool of threads doing pread/pwrite. Files
 * are opened with O_DIRECT where the filesystem allows it (tmpfs does not:
 * then buffered I/O, said once at info level). Every request is split into
 * pieces of at most the block size, and up to the queue depth of pieces are
 * in flight at once across the engine, several per file.
 *
 * The engine moves the disk without the caller's help: a thread of its own
 * reaps completions and submits queued pieces, so requests progress while
 * the caller computes or communicates. Requests are submitted and waited
 * for by one caller thread at a time.
 *
 * An engine made without a directory (zsh_aio_params_t::dir NULL) serves
 * files the caller names by path (zsh_aio_open_path()), as a checkpoint's
 * are: they are closed at destroy, never removed.
 *
 * Buffers, offsets and lengths are multiples of ZSH_AIO_ALIGN.
 */
#ifndef ZSH_AIO_AIO_H_
#define ZSH_AIO_AIO_H_

#include <zeroshard.h>

#include <stddef.h>
#include <stdint.h>

/* Alignment of buffers, offsets and lengths: the largest logical block size
 * O_DIRECT asks for on the disks this runs on. */
#define ZSH_AIO_ALIGN 4096

typedef enum {
    ZSH_AIO_AUTO,    /* the first backend that works, in the order above */
    ZSH_AIO_URING,
    ZSH_AIO_LIBAIO,
    ZSH_AIO_THREADS
} zsh_aio_kind_t;

typedef struct zsh_aio      zsh_aio_t;
typedef struct zsh_aio_file zsh_aio_file_t;
typedef struct zsh_aio_req  zsh_aio_req_t;

typedef struct zsh_aio_params {
    const char    *dir;         /* the NVMe directory; must exist and be writable. NULL: no
                                   directory of its own (zsh_aio_open_path() files only) */
    const char    *job_id;      /* names the job directory; NULL or "" takes "default" */
    int            rank;
    zsh_aio_kind_t kind;        /* ZSH_AIO_AUTO takes ZSH_AIO */
    unsigned       queue_depth; /* pieces in flight; 0 takes ZSH_AIO_QUEUE_DEPTH */
    size_t         block_size;  /* bytes per piece, a multiple of ZSH_AIO_ALIGN; 0 takes
                                   ZSH_AIO_BLOCK_SIZE */
} zsh_aio_params_t;

/* Create the engine and its directory. ZSH_ERR_IO naming the directory and
 * errno when it is missing, not a directory or not writable; ZSH_ERR_INVALID_ARG
 * for a malformed ZSH_AIO* variable or a forced backend this build or kernel
 * lacks (named, with why). */
zsh_status_t zsh_aio_create(const zsh_aio_params_t *params, zsh_aio_t **aio_p);

/* Wait for every request in flight, close and remove the files and the
 * directory. NULL is ignored. Requests not yet freed outlive the engine:
 * zsh_aio_test(), zsh_aio_wait() and zsh_aio_req_free() still take them. */
void zsh_aio_destroy(zsh_aio_t *aio);

/* "io_uring", "libaio" or "threads". */
const char *zsh_aio_backend(const zsh_aio_t *aio);

/* The engine's own directory. */
const char *zsh_aio_dir(const zsh_aio_t *aio);

/* Create (truncating) the file @name in the engine's directory, 0600. */
zsh_status_t zsh_aio_open(zsh_aio_t *aio, const char *name, zsh_aio_file_t **file_p);

/* Open a file by path, outside the engine's directory, and keep it at
 * destroy: @create makes it (0644 less the umask; an existing file is
 * refused, EEXIST) for writing, else it is opened to read. O_DIRECT where
 * the filesystem takes it. ZSH_ERR_IO naming the path and errno. */
zsh_status_t zsh_aio_open_path(zsh_aio_t *aio, const char *path, int create,
                               zsh_aio_file_t **file_p);

/* fsync() the file: ZSH_ERR_IO naming it and errno. */
zsh_status_t zsh_aio_sync(zsh_aio_file_t *file);

/* Close a file of zsh_aio_open_path() (no request of it may be in flight),
 * leaving it on disk. NULL is ignored. */
void zsh_aio_close(zsh_aio_file_t *file);

/* The file's full path, for messages. */
const char *zsh_aio_file_path(const zsh_aio_file_t *file);

/* Allocate @bytes of the file's blocks now (fallocate, or writing zeros
 * where it is not supported), so a full disk shows at setup, not in the
 * middle of a step: ZSH_ERR_IO naming the file, the size and errno. */
zsh_status_t zsh_aio_reserve(zsh_aio_file_t *file, uint64_t bytes);

/* Start reading or writing @len bytes at @offset; never blocks. The buffer
 * must stay untouched until the request completes. ZSH_ERR_INVALID_ARG for
 * a misaligned buffer, offset or length. */
zsh_status_t zsh_aio_read(zsh_aio_t *aio, zsh_aio_file_t *file, uint64_t offset, void *buf,
                          size_t len, zsh_aio_req_t **req_p);
zsh_status_t zsh_aio_write(zsh_aio_t *aio, zsh_aio_file_t *file, uint64_t offset,
                           const void *buf, size_t len, zsh_aio_req_t **req_p);

/* ZSH_OK once every piece completed, ZSH_INPROGRESS before, or ZSH_ERR_IO
 * with a message naming the file, the offset and length of the failed
 * piece and errno (ENOSPC, EIO, ...), or a short read ("got n of len
 * bytes"). A failed request still waits for its other pieces before it
 * reports, so its buffer is free once test or wait returned. */
zsh_status_t zsh_aio_test(zsh_aio_req_t *req);

/* Block until the request completes; the time counts as I/O wait. */
zsh_status_t zsh_aio_wait(zsh_aio_req_t *req);

/* Free a request, waiting for it first if it is in flight. NULL is ignored. */
void zsh_aio_req_free(zsh_aio_req_t *req);

/* Counters since create. */
typedef struct zsh_aio_stats {
    uint64_t read_bytes;
    uint64_t write_bytes;
    double   wait_s;   /* caller time spent in zsh_aio_wait() */
    double   busy_s;   /* time with at least one piece in flight */
} zsh_aio_stats_t;

void zsh_aio_get_stats(const zsh_aio_t *aio, zsh_aio_stats_t *stats);

/* A test hook: make pieces fail as if the disk had. After @after more
 * pieces of the given direction succeed, every following piece of that
 * direction fails with @fault until the hook is cleared with
 * ZSH_AIO_FAULT_NONE. ZSH_AIO_FAULT sets the same from the environment. */
typedef enum {
    ZSH_AIO_FAULT_NONE,
    ZSH_AIO_FAULT_EIO,    /* the piece fails with EIO */
    ZSH_AIO_FAULT_ENOSPC, /* a write fails with ENOSPC */
    ZSH_AIO_FAULT_SHORT   /* a read returns half of the piece */
} zsh_aio_fault_t;

void zsh_aio_inject(zsh_aio_t *aio, zsh_aio_fault_t fault, int writes, unsigned long after);

/* A buffer of @bytes aligned to ZSH_AIO_ALIGN, or NULL; free it with free(). */
void *zsh_aio_buf_alloc(size_t bytes);

#endif
