/*
 * The children of a communicator across nodes (zsh_comm_hier_t in
 * comm.h): its node's members and its rail, made with it on every member
 * alike, without a message, from ids its creator knows no member uses.
 */
#ifndef ZSH_COLL_COMM_HIER_H_
#define ZSH_COLL_COMM_HIER_H_

#include "comm/comm.h"

#include <stdint.h>

/* Whether a communicator with map @topo gets children: more than one node,
 * and more than one rank on some node. */
bool zsh_comm_hier_wants(const zsh_topo_t *topo);

/* The first communicator id from @from on (going round past the last to
 * the first after the job's world) that @used does not mark, marking it;
 * -1 when every id is in use. */
int zsh_comm_hier_pick(uint8_t used[ZSH_MAX_COMMS / 8], uint32_t from);

/* Make @comm's children where zsh_comm_hier_wants() says so, with
 * communicator ids @node_id and @rail_id, which no member of @comm may be
 * using; nothing otherwise. Every member calls it with the same ids. */
zsh_status_t zsh_comm_hier_create(zsh_comm_t *comm, uint32_t node_id, uint32_t rail_id);

/* Destroy @comm's children, if it has them; before @comm itself. */
void zsh_comm_hier_free(zsh_comm_t *comm);

#endif
