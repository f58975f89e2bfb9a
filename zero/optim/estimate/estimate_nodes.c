/*
 * The traffic across nodes, per step, of the model of zsh_optim_estimate()
 * (Ψ parameters of p bytes, N ranks, L ranks per node, K = N / L nodes):
 * - every collective runs on all N ranks, so on more than one node all of
 *   a rank's traffic crosses nodes: 2pΨ (stages 0-2) or 3pΨ (stage 3),
 *   counting a collective as the ZeRO paper does (an all-gather or a
 *   reduce-scatter of T bytes as T, an all-reduce as 2T);
 * - hpZ (stage 3, a secondary partition over groups of G ranks of a node)
 *   keeps backward's all-gather within the group: 2pΨ cross nodes, and each
 *   rank holds pΨ / G more parameter bytes;
 * - across nodes of equal size the collectives run hierarchically (each
 *   step within the node or on a rail, the automatic choice of
 *   coll/select/select.c), which brings into each node over its link only
 *   what the other K - 1 nodes hold, (K - 1) / K of each collective's
 *   count; with one rank per node that is the ring in node order's
 *   (N - 1) / N. So a node's link receives the cross-node bytes times
 *   (K - 1) / K.
 */
#include "core/status.h"

#include <zeroshard/optim.h>

zsh_status_t zsh_optim_estimate_nodes(const zsh_optim_estimate_in_t *in, int ranks_per_node,
                                      int hpz, zsh_node_estimate_out_t *out)
{
    const char *fn = "zsh_optim_estimate_nodes";
    zsh_optim_estimate_out_t base;
    zsh_status_t status;
    double pbytes, share;
    int g;

    if ((in == NULL) || (out == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn, (in == NULL) ? "in" : "out");
    }
    status = zsh_optim_estimate(in, &base);
    if (status != ZSH_OK) {
        return status;
    }
    if ((ranks_per_node < 1) || (in->ranks % ranks_per_node != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: %d ranks per node do not divide the %d ranks into equal nodes", fn,
                         ranks_per_node, in->ranks);
    }
    g = (hpz == ZSH_HPZ_AUTO) ? ranks_per_node : (hpz == 0) ? ZSH_HPZ_OFF : hpz;
    if ((g < 1) || (ranks_per_node % g != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: hpz=%d is not off, auto or a group size that divides the %d ranks "
                         "per node", fn, hpz, ranks_per_node);
    }
    if ((g > 1) && (in->stage != 3)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: hpz=%d needs stage 3, and the stage is %d",
                         fn, hpz, in->stage);
    }
    pbytes = ((in->precision == ZSH_FLOAT32) ? 4.0 : 2.0) * in->params;
    out->nodes                = in->ranks / ranks_per_node;
    share                     = (out->nodes - 1.0) / out->nodes;
    out->hpz                  = g;
    out->cross_node_bytes     = (out->nodes > 1) ? base.comm_bytes : 0.0;
    out->cross_node_bytes_hpz = (g > 1) ? ((out->nodes > 1) ? 2.0 * pbytes : 0.0)
                                        : out->cross_node_bytes;
    out->link_bytes           = out->cross_node_bytes * share;
    out->link_bytes_hpz       = out->cross_node_bytes_hpz * share;
    out->hpz_bytes            = (g > 1) ? pbytes / g : 0.0;
    return ZSH_OK;
}
