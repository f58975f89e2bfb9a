#include "optim/config.h"

#define ZSH_ZERO_OFF(_field) offsetof(zsh_zero_config_t, _field)

const char *const zsh_offload_names[] = {"none", "cpu", "nvme", NULL};
const char *const zsh_quantize_names[] = {"off", "on", "auto", NULL};

static const zsh_config_field_t zsh_zero_config_fields[] = {
    {"BUCKET_SIZE", NULL, "16m",
     "Bytes per flat bucket: parameters coalesced so one collective moves them all",
     ZSH_ZERO_OFF(bucket_size), ZSH_CONFIG_SIZE, NULL, "1k", "4g"},
    {"MAX_LIVE_BYTES", NULL, "256m",
     "Bytes of gathered parameter buckets kept live at stage 3 (fetched, cached, prefetched), "
     "and separately of gradient staging buffers at stages 2-3; each bound also holds the "
     "host buffers kept for the next step",
     ZSH_ZERO_OFF(max_live_bytes), ZSH_CONFIG_SIZE, NULL, "1k", "1024g"},
    {"PREFETCH", NULL, "2",
     "ZeRO stage 3: buckets gathered ahead of use in the recorded fetch order "
     "(0: none, at most 16)",
     ZSH_ZERO_OFF(prefetch), ZSH_CONFIG_UINT, NULL, "0", "16"}, /* fetch.c's window */
    {"OFFLOAD_OPTIMIZER", NULL, "none",
     "Tier of the optimizer states and fp32 master weights, and at stages 2-3 of the reduced "
     "gradient shards: none (compute memory), cpu (host memory) or nvme (files under "
     "ZSH_NVME_DIR)",
     ZSH_ZERO_OFF(offload_optimizer), ZSH_CONFIG_ENUM, zsh_offload_names, NULL, NULL},
    {"OFFLOAD_PARAMS", NULL, "none",
     "ZeRO stage 3: tier of the parameter shards: none, cpu or nvme",
     ZSH_ZERO_OFF(offload_params), ZSH_CONFIG_ENUM, zsh_offload_names, NULL, NULL},
    {"NVME_DIR", NULL, "",
     "Directory of the NVMe tier's files (each job and rank gets a subdirectory of its own); "
     "needed by an nvme tier",
     ZSH_ZERO_OFF(nvme_dir), ZSH_CONFIG_STRING, NULL, NULL, NULL},
    {"HOST_MEM_LIMIT", NULL, "1g",
     "Bytes of host buffers the NVMe tier may hold at once: the step's swap buffers and "
     "gradient shards on their way to disk",
     ZSH_ZERO_OFF(host_mem_limit), ZSH_CONFIG_SIZE, NULL, "64k", "1024g"},
    {"SUB_GROUP_SIZE", NULL, "16m",
     "Elements of a rank's optimizer state updated per sub-group: the NVMe tier is read, "
     "updated and written back one sub-group at a time, the next read and the previous "
     "written while one is updated",
     ZSH_ZERO_OFF(sub_group_size), ZSH_CONFIG_SIZE, NULL, "4k", "64g"},
    {"JOB_ID", "SLURM_JOB_ID", "default",
     "Names the job's directory of NVMe files; a job sweeps the files a killed job of the same "
     "id left",
     ZSH_ZERO_OFF(job_id), ZSH_CONFIG_STRING, NULL, NULL, NULL},
    {"OPTIM_THREADS", NULL, "1",
     "Threads that apply the update rule in a step, the caller's included, each on its own "
     "slice (any count gives the same bits); more pays where a rank has cores to itself",
     ZSH_ZERO_OFF(update_threads), ZSH_CONFIG_UINT, NULL, "1", "256"},
    {"HPZ", NULL, "off",
     "ZeRO stage 3: hpZ's secondary partition of the parameters within each node, so the "
     "backward all-gather stays in the node: off, auto (a group of every rank of the node; "
     "off on one node) or the group size, which divides the ranks per node; ignored below "
     "stage 3",
     ZSH_ZERO_OFF(hpz), ZSH_CONFIG_STRING, NULL, NULL, NULL},
    {"QUANTIZE_WEIGHTS", NULL, "off",
     "ZeRO stage 3: qwZ, a bucket's first gather after each update (forward's) as int8 with "
     "an fp32 scale per block, the later ones (backward's) in full precision or from hpZ: off, "
     "on, or auto (on across nodes, off on one); host parameters in fp32, bf16 or fp16; "
     "ignored below stage 3",
     ZSH_ZERO_OFF(quantize_weights), ZSH_CONFIG_ENUM, zsh_quantize_names, NULL, NULL},
    {"QUANTIZE_BLOCK", NULL, "2048",
     "Elements per quantization block, each with its own fp32 scale (qwZ)",
     ZSH_ZERO_OFF(quantize_block), ZSH_CONFIG_UINT, NULL, "1", "1048576"},
    {"QUANTIZE_GRADS", NULL, "off",
     "ZeRO stages 2-3: qgZ, gradients reduce-scattered in full precision inside the node, the "
     "node's partial sums quantized and exchanged across nodes by an all-to-all over the rails, "
     "summed in fp32: off, on (refused on one node) or auto (on across nodes); host "
     "parameters in fp32, bf16 or fp16; ignored below stage 2",
     ZSH_ZERO_OFF(quantize_grads), ZSH_CONFIG_ENUM, zsh_quantize_names, NULL, NULL},
    {"QUANTIZE_GRAD_BITS", NULL, "8",
     "Bits of qgZ's levels: 8 or 4",
     ZSH_ZERO_OFF(quantize_grad_bits), ZSH_CONFIG_UINT, NULL, "4", "8"},
};

static zsh_config_table_t zsh_zero_config_table = {
    "zero", ZSH_CONFIG_ORDER_ZERO, zsh_zero_config_fields,
    sizeof(zsh_zero_config_fields) / sizeof(zsh_zero_config_fields[0]),
    sizeof(zsh_zero_config_t), NULL};

__attribute__((constructor)) static void zsh_zero_config_register(void)
{
    zsh_config_register(&zsh_zero_config_table);
}

zsh_status_t zsh_zero_config_read(zsh_zero_config_t *cfg)
{
    return zsh_config_read(&zsh_zero_config_table, cfg);
}
