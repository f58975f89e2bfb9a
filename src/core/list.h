/*
 * Intrusive doubly-linked list: a task sits in its context's in-flight list
 * without a separate allocation, and unlinks in O(1) when it completes.
 */
#ifndef ZSH_CORE_LIST_H_
#define ZSH_CORE_LIST_H_

#include <stdbool.h>
#include <stddef.h>

typedef struct zsh_list {
    struct zsh_list *prev, *next;
} zsh_list_t;

static inline void zsh_list_init(zsh_list_t *head)
{
    head->prev = head->next = head;
}

static inline bool zsh_list_empty(const zsh_list_t *head)
{
    return head->next == head;
}

static inline void zsh_list_push_tail(zsh_list_t *head, zsh_list_t *elem)
{
    elem->prev       = head->prev;
    elem->next       = head;
    head->prev->next = elem;
    head->prev       = elem;
}

static inline void zsh_list_del(zsh_list_t *elem)
{
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
    elem->prev = elem->next = elem;
}

/* The struct of type @_type whose member @_member is @_ptr. */
#define zsh_container_of(_ptr, _type, _member) \
    ((_type *)((char *)(_ptr) - offsetof(_type, _member)))

#endif
