#include "device/device.h"

#include "core/status.h"

#include <zeroshard/device.h>

#include <stdio.h>

static const char *zsh_dev_where(bool device, int dev, char *buf, size_t len)
{
    if (!device) {
        return "host memory";
    }
    snprintf(buf, len, "CUDA memory of device %d", dev);
    return buf;
}

/* Where the call's buffers are, asked of the device transport. */
static zsh_status_t zsh_dev_query(const char *fn, const zsh_tl_dev_ops_t *tl,
                                  const zsh_coll_args_t *args, bool *device_p, int *dev_p)
{
    bool bcast = (args->type == ZSH_COLL_BROADCAST);
    bool sdev = false, rdev = false;
    int sn = -1, rn = -1;
    char sw[48], rw[48];
    zsh_status_t status;

    status = tl->mem_query(args->recvbuf, &rdev, &rn);
    if ((status == ZSH_OK) && !bcast) {
        status = tl->mem_query(args->sendbuf, &sdev, &sn);
    } else {
        sdev = rdev;
        sn   = rn;
    }
    if (status != ZSH_OK) {
        return status;
    }
    if ((sdev != rdev) || (sn != rn)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: sendbuf=%p is %s but recvbuf=%p is %s: a call takes buffers of "
                         "one kind (and one device)", fn, args->sendbuf,
                         zsh_dev_where(sdev, sn, sw, sizeof(sw)), args->recvbuf,
                         zsh_dev_where(rdev, rn, rw, sizeof(rw)));
    }
    *device_p = rdev;
    *dev_p    = rn;
    return ZSH_OK;
}

zsh_status_t zsh_dev_classify(const char *fn, zsh_comm_t *comm, const zsh_coll_args_t *args,
                              bool *device_p, int *dev_p)
{
    const zsh_tl_dev_ops_t *tl = zsh_tl_device();
    zsh_status_t status;
    void *stream;

    *device_p = false;
    *dev_p    = -1;
    if ((args->type == ZSH_COLL_BARRIER) || (args->type == ZSH_COLL_FENCE) ||
        (args->count == 0)) {
        return ZSH_OK;
    }
    if (tl == NULL) {
        return args->stream_set
                   ? zsh_error(ZSH_ERR_UNSUPPORTED, "%s: this build has no device transport "
                               "(configure found no CUDA or no NCCL)", fn)
                   : ZSH_OK;
    }
    if (comm->dev.mem_type == ZSH_MEM_CUDA) {
        *device_p = true;
        status    = tl->current(dev_p);
    } else if (comm->dev.mem_type == ZSH_MEM_HOST) {
        status = ZSH_OK;
    } else {
        status = zsh_dev_query(fn, tl, args, device_p, dev_p);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (!*device_p) {
        return args->stream_set
                   ? zsh_error(ZSH_ERR_INVALID_ARG, "%s: buffers in host memory: a call with a "
                               "stream takes CUDA device buffers", fn)
                   : ZSH_OK;
    }
    if ((args->type == ZSH_COLL_ALLTOALL) && (args->sendbuf == args->recvbuf)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s: in place (sendbuf == recvbuf) on device "
                         "buffers: NCCL's grouped sends and receives would overwrite blocks "
                         "before they are sent; pass a separate recvbuf", fn);
    }
    /* A stream stays on its device: asking once per stream is enough. */
    stream = args->stream_set ? args->stream : comm->dev.stream;
    if ((stream == comm->dev.checked_stream) && (*dev_p == comm->dev.checked_dev)) {
        return ZSH_OK;
    }
    status = tl->stream_check(stream, *dev_p);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", fn);
        return status;
    }
    comm->dev.checked_stream = stream;
    comm->dev.checked_dev    = *dev_p;
    return ZSH_OK;
}
