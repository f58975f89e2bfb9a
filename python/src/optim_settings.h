// The optimizer's settings: every field of zsh_optim_config_t but size, in
// the struct's order, one row each. The module builds the dict it trades
// with Python from these rows (optim.cc, where a static assertion refuses a
// struct with a field no row names), python/zeroshard/settings.py builds the
// keywords, policies and docstrings from what the module reports of them,
// and tests/python/test_settings.py holds the header's fields and the
// manual's table (docs/zero.md) to them. A new setting is a field in the header and a row
// here (and a field of its policy's class, if it has one).
//
// X(field, kind, policy, variable, doc):
//   kind      how Python takes the value: "int", "size" (an integer >= 0),
//             "float", "flag" (a bool), "kind" (a rule's name), "precision"
//             (a dtype's name), "tier" (an offload tier's name), "hpz"
//             (off, auto or a group size), "path", "stream" (a CUDA stream),
//             "quantize" (off, on or auto)
//   policy    the zeroshard policy class holding it, or "" (a keyword of its own)
//   variable  the ZSH_* variable that the field's unset value (0, -1 or NULL) takes, or ""
//   doc       one line for the docstrings and the manual's table
#ifndef ZSH_PYTHON_OPTIM_SETTINGS_H_
#define ZSH_PYTHON_OPTIM_SETTINGS_H_

#define ZSH_PY_OPTIM_SETTINGS(X)                                                                \
    X(stage, "int", "", "", "ZeRO stage, 0-3")                                                  \
    X(kind, "kind", "", "", "update rule: sgd, adam or adamw")                                  \
    X(precision, "precision", "MixedPrecisionPolicy", "",                                       \
      "parameter and gradient dtype: fp32, bf16 or fp16 (fp32 master weights)")                 \
    X(lr, "float", "", "", "learning rate")                                                     \
    X(beta1, "float", "", "", "Adam's decay rate of the first moment")                          \
    X(beta2, "float", "", "", "Adam's decay rate of the second moment")                         \
    X(eps, "float", "", "", "Adam's denominator term")                                          \
    X(weight_decay, "float", "", "", "L2 (sgd, adam) or decoupled (adamw) weight decay")        \
    X(momentum, "float", "", "", "SGD momentum (0: none)")                                      \
    X(nesterov, "flag", "", "", "SGD Nesterov momentum (needs momentum > 0)")                   \
    X(max_grad_norm, "float", "", "", "clip to this global L2 norm (0: no clipping)")           \
    X(loss_scale, "float", "MixedPrecisionPolicy", "",                                          \
      "initial loss scale (0: 65536 for fp16, else 1)")                                         \
    X(dynamic_loss_scale, "flag", "MixedPrecisionPolicy", "",                                   \
      "skip overflowing steps and adapt the scale (None: on for fp16 only)")                      \
    X(loss_scale_window, "int", "MixedPrecisionPolicy", "",                                     \
      "overflow-free steps before the scale doubles")                                           \
    X(min_loss_scale, "float", "MixedPrecisionPolicy", "", "the scale never drops below this")  \
    X(bucket_size, "size", "ShardingPolicy", "ZSH_BUCKET_SIZE", "bytes per flat bucket")        \
    X(max_live_bytes, "size", "ShardingPolicy", "ZSH_MAX_LIVE_BYTES",                           \
      "bound on gathered buckets (stage 3) and on gradient staging (stages 2-3)")               \
    X(prefetch, "int", "ShardingPolicy", "ZSH_PREFETCH",                                        \
      "stage 3: buckets gathered ahead of use (at most 16)")                                    \
    X(offload_optimizer, "tier", "OffloadPolicy", "ZSH_OFFLOAD_OPTIMIZER",                      \
      "tier of the optimizer states and master weights, and at stages 2-3 of the "              \
      "reduced gradient shards: none, cpu or nvme")                                             \
    X(offload_params, "tier", "OffloadPolicy", "ZSH_OFFLOAD_PARAMS",                            \
      "stage 3: tier of the parameter shards: none, cpu or nvme")                               \
    X(nvme_dir, "path", "OffloadPolicy", "ZSH_NVME_DIR", "directory of the nvme tier's files")  \
    X(host_mem_limit, "size", "OffloadPolicy", "ZSH_HOST_MEM_LIMIT",                            \
      "bytes of host buffers the nvme tier may hold at once")                                   \
    X(sub_group_size, "size", "OffloadPolicy", "ZSH_SUB_GROUP_SIZE",                            \
      "elements of the rank's state the step swaps and updates at a time")                      \
    X(update_threads, "int", "", "ZSH_OPTIM_THREADS",                                           \
      "threads applying the update rule in a step, the caller's included")                      \
    X(hpz, "hpz", "ShardingPolicy", "ZSH_HPZ",                                                  \
      "stage 3: hpZ's secondary partition within each node: off, auto or the group size")       \
    X(stream, "stream", "", "",                                                                 \
      "device parameters: the CUDA stream the optimizer's work is enqueued on "                 \
      "(None: the default stream)")                                                             \
    X(deterministic, "flag", "", "",                                                            \
      "the same bits whatever the bucket size, sub-group size, hpZ, offload or node layout: "   \
      "the communicator in the deterministic mode, and the gradient norm summed exactly")    \
    X(quantize_weights, "quantize", "ShardingPolicy", "ZSH_QUANTIZE_WEIGHTS",                   \
      "stage 3: qwZ, forward's gathers as int8 with a scale per block: off, on or auto "        \
      "(on across nodes)")                                                                      \
    X(quantize_block, "size", "ShardingPolicy", "ZSH_QUANTIZE_BLOCK",                           \
      "elements per quantization block, each with its own scale")                               \
    X(quantize_grads, "quantize", "ShardingPolicy", "ZSH_QUANTIZE_GRADS",                       \
      "stages 2-3: qgZ, gradients summed in full precision in the node, quantized across "      \
      "nodes: off, on or auto (on across nodes)")                                               \
    X(quantize_grad_bits, "int", "ShardingPolicy", "ZSH_QUANTIZE_GRAD_BITS",                    \
      "bits of qgZ's levels: 8 or 4")                                                           \
    X(quantize_weight_bits, "int", "ShardingPolicy", "",                                        \
      "bits of qwZ's levels: 8 (int4 weights are refused)")

#endif
