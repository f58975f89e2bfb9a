/*
 * The device path: collective calls on GPU buffers, run by the device
 * transport (tl.h's device table, NCCL) after the same checks and the same
 * descriptor exchange as every call.
 *
 *   mem.c   where a call's buffers are, and which calls the path refuses
 *   boot.c  a communicator's device communicator: made at its first device
 *           call from an id that rank 0 sends the others over the host
 *           transport; aborted and destroyed with it
 *   call.c  a device call as a task: its descriptors matched, it is
 *           enqueued in call order, then watched until its stream work is
 *           done (or only enqueued, for ZSH_STREAM_ENQUEUE)
 */
#ifndef ZSH_COLL_DEVICE_DEVICE_H_
#define ZSH_COLL_DEVICE_DEVICE_H_

#include "task/task.h"

#include <stdbool.h>

/* Whether call @args of @fn on @comm runs on the device path, and on which
 * device (*@dev_p). Host calls answer false; buffers of both kinds in one
 * call, of two devices, a `_stream` call on host buffers and a stream of
 * another device are refused, naming what they are. */
zsh_status_t zsh_dev_classify(const char *fn, zsh_comm_t *comm, const zsh_coll_args_t *args,
                              bool *device_p, int *dev_p);

/* Make sure @comm has its device communicator on device @dev, making it
 * now if this is its first device call (collective: every member makes the
 * same call). Fails at once after an earlier device call failed. */
zsh_status_t zsh_dev_comm_ready(const char *fn, zsh_comm_t *comm, const zsh_coll_args_t *args,
                                int dev);

/* Set up @task, prepared for call @args, as a device call. */
zsh_status_t zsh_dev_init(zsh_task_t *task);

/* Any thread: stop @comm's device communicator, if it has one. */
void zsh_dev_comm_abort(zsh_comm_t *comm);

/* At zsh_comm_destroy(): free @comm's device communicator. */
void zsh_dev_comm_release(zsh_comm_t *comm);

/* Device calls on @comm fail from now on, with @status and the error text
 * of the moment; the device communicator is aborted. */
void zsh_dev_comm_fail(zsh_comm_t *comm, zsh_status_t status);

#endif
