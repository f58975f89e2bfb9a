/*
 * ZeRO++'s quantized traffic across nodes (zsh_optim_estimate_quant()),
 * counted as zsh_optim_estimate_nodes() counts (an all-gather or
 * reduce-scatter of T bytes as T) for Ψ parameters of p bytes on K nodes
 * of L ranks, at stage 3 with hpZ, which keeps backward's gather in the
 * node (with one rank per node there is no hpZ group, and backward's
 * gather crosses nodes in the precision, pΨ more):
 * - qwZ: forward's gather moves int8 levels and a 4-byte scale per block
 *   of B elements: Ψ (1 + 4 / B) bytes instead of pΨ;
 * - the gradients' reduce-scatter: pΨ without qgZ; with it, each rank sends
 *   across nodes its 1 / L of its node's partial sums (the node's
 *   reduce-scatter stays inside): Ψ / L (bits / 8 + 4 / B).
 * In the paper's units (M, the fp16 model, 2Ψ bytes) that is, for L >= 2,
 * (1 + 4 / B) / 2 + (bits / 8 + 4 / B) / (2L): with int4 gradients and
 * large blocks 0.5 + 0.25 / L M, against ZeRO-3's 3M and the paper's 0.75M
 * (whose qgZ quantizes before any sum, so every rank sends its 0.25M; here
 * the node sums in full precision first, and each rank sends 1 / L of it).
 */
#include "core/status.h"

#include <zeroshard/optim.h>

zsh_status_t zsh_optim_estimate_quant(const zsh_optim_estimate_in_t *in, int ranks_per_node,
                                      size_t block, int grad_bits, zsh_quant_estimate_out_t *out)
{
    const char *fn = "zsh_optim_estimate_quant";
    zsh_node_estimate_out_t nodes;
    zsh_status_t status;
    double psi, p, share, qw, qg, bwd;

    if (out == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: out is NULL", fn);
    }
    status = zsh_optim_estimate_nodes(in, ranks_per_node, ZSH_HPZ_AUTO, &nodes);
    if (status != ZSH_OK) {
        return status;
    }
    if (in->stage != 3) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: qwZ and qgZ are modelled at stage 3 (with "
                         "hpZ), and the stage is %d", fn, in->stage);
    }
    if (nodes.nodes < 2) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: one node of %d ranks: nothing crosses a "
                         "node to quantize", fn, ranks_per_node);
    }
    if ((block < 1) || (block > (1u << 20))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: block of %zu elements: must be 1 to 1048576",
                         fn, block);
    }
    if ((grad_bits != 8) && (grad_bits != 4)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: grad_bits %d: must be 8 or 4", fn, grad_bits);
    }
    psi   = in->params;
    p     = (in->precision == ZSH_FLOAT32) ? 4.0 : 2.0;
    share = (nodes.nodes - 1.0) / nodes.nodes;
    bwd   = (ranks_per_node > 1) ? 0.0 : p * psi;
    qw    = psi * (1.0 + 4.0 / (double)block) + bwd;
    qg    = psi / ranks_per_node * (grad_bits / 8.0 + 4.0 / (double)block);
    out->cross_node_bytes_qwz = qw + p * psi;
    out->cross_node_bytes_qgz = qw + qg;
    out->link_bytes_qwz       = out->cross_node_bytes_qwz * share;
    out->link_bytes_qgz       = out->cross_node_bytes_qgz * share;
    out->paper_m              = out->cross_node_bytes_qgz / (2.0 * psi);
    return ZSH_OK;
}
