#include "boot/launcher.h"
#include "boot/env.h"
#include "core/status.h"

#include <errno.h>
#include <stdlib.h>

/* The variables MPI launchers set to the job's size, in the order they are
 * trusted: Open MPI's mpirun, then PMI (MPICH's hydra, srun --mpi=pmi2). */
static const char *const zsh_boot_launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};

/* The job's size as an MPI launcher gave it, or -1 where none did (or said
 * something that is not a positive number); *var_p names the variable. */
static int zsh_boot_launcher_size(const char **var_p)
{
    const char *text;
    char *end;
    size_t i;
    long v;

    for (i = 0; i < sizeof(zsh_boot_launcher_vars) / sizeof(zsh_boot_launcher_vars[0]); i++) {
        text = zsh_config_env(zsh_boot_launcher_vars[i]);
        if (text == NULL) {
            continue;
        }
        errno = 0;
        v     = strtol(text, &end, 10);
        if ((end != text) && (*end == '\0') && (errno == 0) && (v > 0) && (v <= 1048576)) {
            *var_p = zsh_boot_launcher_vars[i];
            return (int)v;
        }
    }
    return -1;
}

/* One side says one rank and the other more: the N-jobs-of-one mistake. Two
 * sizes above 1 that differ are left alone: a launcher per node starting
 * zshrun or torchrun (srun -N 2 torchrun --nproc-per-node 4) gives both. */
static int zsh_boot_launcher_conflict(int world_size, int launcher_size)
{
    return (world_size > 0) && (launcher_size > 0) &&
           (((world_size == 1) && (launcher_size > 1)) ||
            ((world_size > 1) && (launcher_size == 1)));
}

zsh_status_t zsh_boot_launcher_check_mpi(const zsh_boot_config_t *cfg, int mpi_world_size)
{
    char var[128];

    if (!zsh_boot_launcher_conflict(cfg->world_size, mpi_world_size)) {
        return ZSH_OK;
    }
    zsh_boot_env_var("WORLD_SIZE", var, sizeof(var));
    if (mpi_world_size == 1) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "MPI_COMM_WORLD has 1 rank, but "
                         "%s=%d: a torchrun-style launcher (zshrun, torchrun) started this "
                         "process, and it starts each rank as an MPI job of its own. "
                         "zsh_comm_init_mpi() expects an MPI launcher: run the program with "
                         "mpirun -np %d or srun -n %d; under zshrun or torchrun, call "
                         "zsh_comm_init() instead", var, cfg->world_size, cfg->world_size,
                         cfg->world_size);
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "MPI_COMM_WORLD has %d ranks, but "
                     "%s=1 says this job has one: the torchrun-style variables (RANK, WORLD_SIZE) "
                     "were set for another launcher (zshrun, torchrun) or left from another job. "
                     "zsh_comm_init_mpi() expects an MPI launcher (mpirun, srun) alone: unset %s "
                     "and RANK", mpi_world_size, var, var);
}

zsh_status_t zsh_boot_launcher_check_env(const zsh_boot_config_t *cfg)
{
    const char *launcher_var = NULL;
    int launcher_size        = zsh_boot_launcher_size(&launcher_var);
    char var[128];

    if (!zsh_boot_launcher_conflict(cfg->world_size, launcher_size)) {
        return ZSH_OK;
    }
    zsh_boot_env_var("WORLD_SIZE", var, sizeof(var));
    if (launcher_size == 1) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%d, but %s=1: an MPI launcher "
                         "(mpirun, srun) started this process as a job of one rank, while the "
                         "torchrun-style variables, which zsh_comm_init() reads first, expect "
                         "%d ranks started by zshrun or torchrun. Start the program with "
                         "zshrun -n %d (or torchrun) without mpirun, or unset %s and RANK and "
                         "start it with mpirun -np %d or srun -n %d", var, cfg->world_size,
                         launcher_var, cfg->world_size, cfg->world_size, var, cfg->world_size,
                         cfg->world_size);
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "%s=1, but %s=%d: an MPI launcher "
                     "(mpirun, srun) started %d ranks, while the torchrun-style variables, which "
                     "zsh_comm_init() reads first, make each of them a job of one rank. Under "
                     "mpirun or srun, unset %s and RANK (zsh_comm_init() then joins the "
                     "launcher's job through PMIx); a job of torchrun-style ranks is started by "
                     "zshrun or torchrun", var, launcher_var, launcher_size, launcher_size, var);
}
