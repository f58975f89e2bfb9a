#include "mem/account.h"

#include "mem/huge.h"

#include <stdlib.h>
#include <string.h>

#define ZSH_ACCOUNT_ALIGN 64

void zsh_account_hold(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes)
{
    if (acct == NULL) {
        return;
    }
    acct->cur[kind] += bytes;
    if (acct->cur[kind] > acct->peak[kind]) {
        acct->peak[kind] = acct->cur[kind];
    }
    acct->all += bytes;
    if (acct->all > acct->all_peak) {
        acct->all_peak = acct->all;
    }
}

void zsh_account_unhold(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes)
{
    if (acct != NULL) {
        acct->cur[kind] -= bytes;
        acct->all       -= bytes;
    }
}

void *zsh_account_alloc(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes)
{
    void *ptr;

    if ((acct != NULL) && (acct->place != ZSH_PLACE_HOST)) {
        ptr = zsh_dev_alloc(acct->place, bytes, acct->stream);
        if (ptr != NULL) {
            zsh_account_hold(acct, kind, bytes);
        }
        return ptr;
    }
    ptr = zsh_huge_zalloc(bytes, ZSH_ACCOUNT_ALIGN);
    if (ptr == NULL) {
        return NULL;
    }
    zsh_account_hold(acct, kind, bytes);
    return ptr;
}

void zsh_account_free(zsh_account_t *acct, zsh_mem_kind_t kind, void *ptr, size_t bytes)
{
    if (ptr == NULL) {
        return;
    }
    zsh_dev_free((acct != NULL) ? acct->place : ZSH_PLACE_HOST, ptr,
                 (acct != NULL) ? acct->stream : NULL);
    zsh_account_unhold(acct, kind, bytes);
}

void zsh_account_free_buffer(zsh_account_t *acct, zsh_mem_kind_t kind, void *ptr, size_t bytes,
                             zsh_comm_t *comm)
{
    zsh_place_t place = (acct != NULL) ? acct->place : ZSH_PLACE_HOST;

    if (ptr == NULL) {
        return;
    }
    if ((comm == NULL) || (place == ZSH_PLACE_DEVICE) ||
        (zsh_comm_free_buffer(comm, ptr,
                              (place == ZSH_PLACE_PINNED) ? zsh_dev_free_pinned
                                                          : zsh_huge_free) !=
         ZSH_OK)) {
        zsh_dev_free(place, ptr, (acct != NULL) ? acct->stream : NULL);
    }
    zsh_account_unhold(acct, kind, bytes);
}
