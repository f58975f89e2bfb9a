/*
 * The device API of <zeroshard/device.h> that is not a collective: whether
 * the device path exists here, where memory is, and a communicator's
 * memory type and stream.
 */
#include "comm/comm.h"
#include "core/status.h"

#include <zeroshard/device.h>

int zsh_device_available(void)
{
    const zsh_tl_dev_ops_t *tl = zsh_tl_device();

    if (tl == NULL) {
        zsh_error(ZSH_ERR_UNSUPPORTED, "this build has no device transport (configure found no "
                  "CUDA or no NCCL)");
        return 0;
    }
    return tl->probe() == ZSH_OK;
}

zsh_status_t zsh_mem_type(const void *ptr, zsh_mem_type_t *type_p)
{
    const zsh_tl_dev_ops_t *tl = zsh_tl_device();
    zsh_status_t status;
    bool device = false;
    int dev;

    if (type_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_mem_type: type_p is NULL");
    }
    if (tl != NULL) {
        status = tl->mem_query(ptr, &device, &dev);
        if (status != ZSH_OK) {
            return status;
        }
    }
    *type_p = device ? ZSH_MEM_CUDA : ZSH_MEM_HOST;
    return ZSH_OK;
}

zsh_status_t zsh_comm_set_mem_type(zsh_comm_t *comm, zsh_mem_type_t type)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_set_mem_type", comm);

    if (status != ZSH_OK) {
        return status;
    }
    if ((type != ZSH_MEM_AUTO) && (type != ZSH_MEM_HOST) && (type != ZSH_MEM_CUDA)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_set_mem_type: type=%d is not a "
                         "zsh_mem_type_t", (int)type);
    }
    if ((type == ZSH_MEM_CUDA) && (zsh_tl_device() == NULL)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "zsh_comm_set_mem_type: ZSH_MEM_CUDA needs a "
                         "build with CUDA and NCCL");
    }
    comm->dev.mem_type = (int)type;
    return ZSH_OK;
}

zsh_status_t zsh_comm_set_stream(zsh_comm_t *comm, void *stream, unsigned flags)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_set_stream", comm);

    if (status != ZSH_OK) {
        return status;
    }
    if (flags & ~(unsigned)ZSH_STREAM_ENQUEUE) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_set_stream: flags=0x%x: expected "
                         "ZSH_STREAM_WAIT or ZSH_STREAM_ENQUEUE", flags);
    }
    if (zsh_tl_device() == NULL) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "zsh_comm_set_stream: this build has no device "
                         "transport (configure found no CUDA or no NCCL)");
    }
    comm->dev.stream = stream;
    comm->dev.flags  = flags;
    return ZSH_OK;
}
