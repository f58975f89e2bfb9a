/*
 * Which launcher started this job. A program that bootstraps one way but was
 * started by a launcher of the other kind does not fail by itself: under
 * zshrun or torchrun each rank is an MPI job of one, and under mpirun or
 * srun stale torchrun-style variables make each rank a job of its own. Both
 * give N jobs of one rank that exit 0. These checks turn that into an error
 * naming the launcher each side expects.
 */
#ifndef ZSH_BOOT_LAUNCHER_H_
#define ZSH_BOOT_LAUNCHER_H_

#include "boot/config.h"

#include <zeroshard.h>

/*
 * For zsh_comm_init_mpi(): fails where @cfg's WORLD_SIZE (torchrun-style,
 * set) is above 1 and MPI_COMM_WORLD has @mpi_world_size 1, or the reverse.
 */
zsh_status_t zsh_boot_launcher_check_mpi(const zsh_boot_config_t *cfg, int mpi_world_size);

/*
 * For zsh_comm_init() on the torchrun-style path: fails where WORLD_SIZE and
 * the size an MPI launcher gave the job (OMPI_COMM_WORLD_SIZE from Open
 * MPI's mpirun, PMI_SIZE from MPICH's and Slurm's PMI) are 1 and above 1.
 */
zsh_status_t zsh_boot_launcher_check_env(const zsh_boot_config_t *cfg);

#endif
