#ifndef ZSH_TRAIN_BOOT_H_
#define ZSH_TRAIN_BOOT_H_

#include <zeroshard.h>

/* A communicator over the launched job, or over this process alone. */
zsh_status_t zsh_train_comm_init(zsh_comm_t **comm_p);

#endif
