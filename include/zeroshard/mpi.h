/**
 * @file zeroshard/mpi.h
 * @brief Header-only MPI bootstrap for ZeroShard.
 *
 * This is the only ZeroShard file that includes <mpi.h>. The out-of-band
 * allgather is implemented inline over MPI_Allgather, so libzeroshard itself
 * never links MPI: the application does.
 */
#ifndef ZEROSHARD_MPI_H_
#define ZEROSHARD_MPI_H_

#include <limits.h>
#include <mpi.h>
#include <zeroshard.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @cond INTERNAL */
static inline zsh_status_t zsh_mpi_oob_allgather_(const void *send, void *recv, size_t len,
                                                  void *ctx, void **req_p)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;

    *req_p = NULL;
    if (len > (size_t)INT_MAX) {
        return ZSH_ERR_INVALID_ARG;
    }
    if (MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, comm) != MPI_SUCCESS) {
        return ZSH_ERR_TRANSPORT;
    }
    return ZSH_OK;
}

static inline zsh_status_t zsh_mpi_oob_test_(void *req)
{
    (void)req; /* MPI_Allgather above is blocking: done when it returns */
    return ZSH_OK;
}

static inline void zsh_mpi_oob_free_(void *req)
{
    (void)req;
}
/** @endcond */

/**
 * @brief Create a ZeroShard communicator over the processes of @p mpi_comm.
 *
 * Collective over @p mpi_comm. Ranks keep their MPI ranks. MPI is used only
 * during this call; @p mpi_comm may be freed afterwards.
 *
 * The program must be started by an MPI launcher (mpirun, srun). Under zshrun
 * or torchrun each process would be an MPI job of one rank, so where
 * `WORLD_SIZE` says N > 1 and MPI_COMM_WORLD has 1 rank (or the reverse) the
 * call fails on every process with ZSH_ERR_INVALID_ARG, and zsh_last_error()
 * says which launcher each expects (zsh_comm_check_mpi_world()).
 * @param[in]  mpi_comm An intracommunicator.
 * @param[out] comm_p   The new communicator, set only on success.
 */
static inline zsh_status_t zsh_comm_init_mpi(MPI_Comm mpi_comm, zsh_comm_t **comm_p)
{
    zsh_status_t status;
    zsh_oob_t oob;
    int rank, size, world_size;

    if ((MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS) ||
        (MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS) ||
        (MPI_Comm_size(MPI_COMM_WORLD, &world_size) != MPI_SUCCESS)) {
        return ZSH_ERR_INVALID_ARG;
    }
    /* MPI_COMM_WORLD, not mpi_comm: a communicator of one rank is legitimate,
     * a world of one under a launcher of N is not. */
    status = zsh_comm_check_mpi_world(world_size);
    if (status != ZSH_OK) {
        return status;
    }
    oob.rank      = rank;
    oob.size      = size;
    oob.ctx       = &mpi_comm;
    oob.allgather = zsh_mpi_oob_allgather_;
    oob.test      = zsh_mpi_oob_test_;
    oob.free      = zsh_mpi_oob_free_;
    return zsh_comm_init_oob(&oob, comm_p);
}

#ifdef __cplusplus
}
#endif

#endif /* ZEROSHARD_MPI_H_ */
