/*
 * The Infinity tiers' model, per rank (Ψ parameters, N ranks, p bytes per
 * parameter element, S = Ψ/N, R the state region: Ψ at stage 0, else S,
 * K fp32 state arrays per element: Adam's two moments, plus the master
 * weights in mixed precision):
 * - where model state lives: parameters in the params tier at stage 3, else
 *   compute memory; gradients (pΨ at stages 0-1, pS at 2-3) in compute
 *   memory at stages 0-1 and in the optimizer tier at 2-3, where each
 *   bucket's shard goes as its reduce-scatter completes; states (4KR) in
 *   the optimizer tier;
 * - what a step reads and writes on disk: the optimizer tier on NVMe reads
 *   and writes the states once (4KR each way) and, at stages 2-3, writes
 *   the gradient shards and reads them back for the update (pS each way);
 *   the params tier on NVMe (stage 3) is read by the forward and the
 *   backward gathers (2pS), and the step reads and writes the fp32 shard it
 *   updates (4S each way), or in mixed precision writes only the half
 *   shard rounded from the master weights (pS); with the optimizer tier on
 *   NVMe and the parameters in memory, the step also writes the parameters
 *   it is about to update (pR), which a failed step puts back;
 * - the disk bound: the ranks sharing a disk move their bytes through its
 *   read and write bandwidths one after the other.
 */
#include "core/status.h"

#include <zeroshard/optim.h>

#include <stdbool.h>

static bool zsh_offload_tier_ok(zsh_offload_t t)
{
    return (t == ZSH_OFFLOAD_NONE) || (t == ZSH_OFFLOAD_CPU) || (t == ZSH_OFFLOAD_NVME);
}

/* Adds @bytes to the tier @t of @out. */
static void zsh_offload_put(zsh_offload_estimate_out_t *out, zsh_offload_t t, double bytes)
{
    if (t == ZSH_OFFLOAD_CPU) {
        out->host_bytes += bytes;
    } else if (t == ZSH_OFFLOAD_NVME) {
        out->nvme_bytes += bytes;
    } else {
        out->compute_bytes += bytes;
    }
}

static zsh_status_t zsh_offload_check(const zsh_optim_estimate_in_t *in,
                                      const zsh_offload_estimate_in_t *tiers)
{
    zsh_optim_estimate_out_t model;

    if (zsh_optim_estimate(in, &model) != ZSH_OK) {
        zsh_error_prefix("zsh_optim_estimate_offload: ");
        return ZSH_ERR_INVALID_ARG;
    }
    if (!zsh_offload_tier_ok(tiers->optimizer) || !zsh_offload_tier_ok(tiers->params)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_estimate_offload: tiers->%s is %d: need "
                         "ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_CPU or ZSH_OFFLOAD_NVME",
                         zsh_offload_tier_ok(tiers->optimizer) ? "params" : "optimizer",
                         zsh_offload_tier_ok(tiers->optimizer) ? (int)tiers->params
                                                               : (int)tiers->optimizer);
    }
    if ((tiers->params != ZSH_OFFLOAD_NONE) && (in->stage != 3)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_estimate_offload: tiers->params is %s at stage %d: "
                         "parameters are offloaded at stage 3 only",
                         (tiers->params == ZSH_OFFLOAD_CPU) ? "cpu" : "nvme", in->stage);
    }
    if (!(tiers->read_bw >= 0) || !(tiers->write_bw >= 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_estimate_offload: tiers->%s is %g: need a bandwidth >= 0 "
                         "(bytes/s; 0: no time estimate)",
                         !(tiers->read_bw >= 0) ? "read_bw" : "write_bw",
                         !(tiers->read_bw >= 0) ? tiers->read_bw : tiers->write_bw);
    }
    if (tiers->ranks_per_disk < 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_estimate_offload: tiers->ranks_per_disk is %d: need >= 0 "
                         "(0: all the ranks share one disk)", tiers->ranks_per_disk);
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_estimate_offload(const zsh_optim_estimate_in_t *in,
                                        const zsh_offload_estimate_in_t *tiers,
                                        zsh_offload_estimate_out_t *out)
{
    zsh_offload_estimate_out_t o = {0, 0, 0, 0, 0, 0};
    double psi, n, p, s, r, k, d;
    bool mixed;
    zsh_status_t status;

    if ((in == NULL) || (tiers == NULL) || (out == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_estimate_offload: %s is NULL",
                         (in == NULL) ? "in" : (tiers == NULL) ? "tiers" : "out");
    }
    status = zsh_offload_check(in, tiers);
    if (status != ZSH_OK) {
        return status;
    }
    psi   = in->params;
    n     = in->ranks;
    mixed = in->precision != ZSH_FLOAT32;
    p     = mixed ? 2.0 : 4.0;
    s     = psi / n;
    r     = (in->stage == 0) ? psi : s;
    k     = mixed ? 3.0 : 2.0;

    zsh_offload_put(&o, (in->stage == 3) ? tiers->params : ZSH_OFFLOAD_NONE,
                    p * ((in->stage == 3) ? s : psi));
    zsh_offload_put(&o, (in->stage >= 2) ? tiers->optimizer : ZSH_OFFLOAD_NONE,
                    p * ((in->stage >= 2) ? s : psi));
    zsh_offload_put(&o, tiers->optimizer, 4.0 * k * r);

    if (tiers->optimizer == ZSH_OFFLOAD_NVME) {
        o.read_bytes  += 4.0 * k * r;
        o.write_bytes += 4.0 * k * r;
        if (in->stage >= 2) {
            o.read_bytes  += p * s;
            o.write_bytes += p * s;
        }
        if ((in->stage < 3) || (tiers->params != ZSH_OFFLOAD_NVME)) {
            o.write_bytes += p * r; /* the undo copy */
        }
    }
    if ((in->stage == 3) && (tiers->params == ZSH_OFFLOAD_NVME)) {
        o.read_bytes += 2.0 * p * s;
        if (mixed) {
            o.write_bytes += p * s;
        } else {
            o.read_bytes  += 4.0 * s;
            o.write_bytes += 4.0 * s;
        }
    }
    d = (tiers->ranks_per_disk == 0) ? n : (double)tiers->ranks_per_disk;
    if ((tiers->read_bw > 0) && (tiers->write_bw > 0)) {
        o.disk_bound_s = o.read_bytes * d / tiers->read_bw + o.write_bytes * d / tiers->write_bw;
    }
    *out = o;
    return ZSH_OK;
}
