#include <zeroshard.h>

void zsh_get_version(int *major_p, int *minor_p, int *patch_p)
{
    if (major_p != NULL) {
        *major_p = ZSH_VERSION_MAJOR;
    }
    if (minor_p != NULL) {
        *minor_p = ZSH_VERSION_MINOR;
    }
    if (patch_p != NULL) {
        *patch_p = ZSH_VERSION_PATCH;
    }
}
