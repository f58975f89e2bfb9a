/*
 * The ranks' output, relayed line by line. Each rank writes into pipes of
 * its own; zshrun is the only writer of its stdout and stderr and writes
 * whole lines only, so lines of different ranks never mix, whatever the
 * ranks' buffering. A line longer than ZSH_RUN_LINE_MAX is cut there, and
 * an unfinished last line is written when its rank's stream ends.
 */
#include "run/run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The longest line kept whole; a stream's buffer grows up to it. */
#define ZSH_RUN_LINE_MAX (64 * 1024)
/* Bytes a stream's buffer starts with, and the least room a read gets. */
#define ZSH_RUN_READ_MIN 4096
/* Lines written by one writev: two pieces each, the prefix and the line. */
#define ZSH_RUN_LINES_PER_WRITE 256

/* Write all of @iov. A reader gone away (EPIPE: `zshrun ... | head`) or a
 * full disk must not stop the job, so what cannot be written is dropped. */
static void zsh_run_write(int fd, struct iovec *iov, int cnt)
{
    ssize_t n;

    while (cnt > 0) {
        n = writev(fd, iov, cnt);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        while ((cnt > 0) && ((size_t)n >= iov->iov_len)) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
}

/* Write @s's whole lines, and with @all its unfinished rest too, as a line
 * of its own when there is a prefix (else as it came). */
static void zsh_run_stream_flush(zsh_run_stream_t *s, int all)
{
    static char newline[] = "\n";
    struct iovec iov[2 * ZSH_RUN_LINES_PER_WRITE + 1];
    size_t start = 0, plen = strlen(s->prefix);
    char *nl;
    int cnt = 0;

    while (start < s->len) {
        nl = memchr(s->buf + start, '\n', s->len - start);
        if ((nl == NULL) && !all) {
            break;
        }
        if (plen > 0) {
            iov[cnt++] = (struct iovec){(char *)s->prefix, plen};
        }
        if (nl == NULL) {
            iov[cnt++] = (struct iovec){s->buf + start, s->len - start};
            if (plen > 0) {
                iov[cnt++] = (struct iovec){newline, 1};
            }
            start = s->len;
        } else {
            iov[cnt++] = (struct iovec){s->buf + start, (size_t)(nl - s->buf) + 1 - start};
            start = (size_t)(nl - s->buf) + 1;
        }
        if (cnt >= 2 * ZSH_RUN_LINES_PER_WRITE - 1) {
            zsh_run_write(s->out, iov, cnt);
            cnt = 0;
        }
    }
    if (cnt > 0) {
        zsh_run_write(s->out, iov, cnt);
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

void zsh_run_stream_close(zsh_run_stream_t *s)
{
    if (s->fd < 0) {
        return;
    }
    zsh_run_stream_flush(s, 1);
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

/* Room for one more read: the buffer doubles up to ZSH_RUN_LINE_MAX, and a
 * line that fills all of it is written cut. 0, or -1 out of memory. */
static int zsh_run_stream_room(zsh_run_stream_t *s)
{
    size_t cap;
    char *buf;

    if (s->cap - s->len >= ZSH_RUN_READ_MIN) {
        return 0;
    }
    if (s->cap >= ZSH_RUN_LINE_MAX) {
        zsh_run_stream_flush(s, 1);
        return 0;
    }
    cap = (s->cap == 0) ? ZSH_RUN_READ_MIN : 2 * s->cap;
    buf = realloc(s->buf, cap);
    if (buf == NULL) {
        return -1;
    }
    s->buf = buf;
    s->cap = cap;
    return 0;
}

void zsh_run_stream_read(zsh_run_stream_t *s)
{
    ssize_t n;

    if (s->fd < 0) {
        return;
    }
    if (zsh_run_stream_room(s) != 0) {
        zsh_run_stream_close(s);
        return;
    }
    n = read(s->fd, s->buf + s->len, s->cap - s->len);
    if ((n < 0) && (errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        zsh_run_stream_close(s);
        return;
    }
    s->len += (size_t)n;
    zsh_run_stream_flush(s, 0);
}
