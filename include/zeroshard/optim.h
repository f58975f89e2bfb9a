/**
 * @file zeroshard/optim.h
 * @brief The ZeRO optimizer layer: stage 0-3 partitioning of optimizer
 *        states, gradients and parameters, behind a C API that never sees
 *        the model, only its parameters and gradients.
 *
 * A framework registers each parameter (name, numel, dtype, buffer), then
 * every step:
 * - forward: zsh_optim_fetch() each parameter before use and
 *   zsh_optim_release() it after (at stages 0-2 these return the framework's
 *   own buffer and cost nothing, so one code path serves every stage);
 * - backward: zsh_optim_backward_begin() (optional: it matters with qwZ),
 *   then fetch/release again where the parameter is needed, and hand
 *   each gradient over with zsh_optim_grad_ready() as soon as it is computed:
 *   its reduction starts at once, nonblocking, bucketed, overlapping the rest
 *   of the backward pass;
 * - zsh_optim_step() finishes the reductions and updates the parameters.
 *
 * Stages (Ψ parameters, N ranks):
 * - 0: data parallelism. Gradients are all-reduced; states are replicated.
 * - 1: optimizer states are sharded. Gradients are reduce-scattered into a
 *   full buffer, each rank updates its shard, the parameters are all-gathered.
 * - 2: gradients are sharded too: each bucket is reduce-scattered as soon as
 *   its gradients are ready and only this rank's shard is kept.
 * - 3: parameters are sharded too: the layer owns them, and a fetch gathers
 *   the parameter's bucket (prefetching the next ones in the order the first
 *   step recorded) into a buffer that is valid until release.
 *
 * Parameters are coalesced, in registration order, into flat buckets of
 * ZSH_BUCKET_SIZE bytes (zsh_optim_config_t::bucket_size overrides), so one
 * collective moves many small parameters. Gradients are combined with
 * ZSH_SUM: a framework that wants the mean over a global batch scales its
 * gradients by 1 / (global batch) first.
 *
 * Device memory: when the registered parameters are CUDA device memory
 * (zsh_mem_type() of <zeroshard/device.h>), the optimizer runs on the
 * current CUDA device: its buckets, gathered buffers, gradient shards,
 * optimizer states and master weights are device memory, gradients are
 * handed over as device buffers, the collectives take the NCCL path and the
 * update runs as CUDA kernels that give the host kernels' bits. Its device
 * work is enqueued on zsh_optim_config_t::stream, in call order, with its
 * collectives on a communicator the layout splits from the optimizer's for
 * that stream (the caller's communicator keeps its own). Calls return once
 * their work is enqueued, except zsh_optim_fetch() and zsh_optim_step(),
 * which return once it is done. The stream orders the caller's work too:
 * a gradient is read, and a released parameter's buffer freed, in that
 * stream's order, so produce gradients and use fetched parameters on that
 * stream (or make it wait for the stream that does), and write a handed-over
 * gradient's buffer again only after zsh_optim_step(). Parameters and
 * gradients are all host memory or all device memory. With offload_optimizer cpu the states and
 * master weights live in pinned host memory: each bucket's reduced
 * gradient shard is copied there on a copy stream as its reduction ends,
 * the step runs on the host, and each bucket's updated parameters are
 * copied back on the copy stream while the next bucket is updated. With
 * offload_optimizer nvme the same copies serve the files: a shard is
 * written once it has come down, and the step sends each swapped
 * sub-group's parameters up. offload_params (stage 3) from the device
 * needs offload_optimizer cpu or nvme: the host updates the offloaded
 * shards, and a gather copies this rank's shard up on the stream before
 * the all-gather. Offload needs stage 2 or 3 there; hpZ is not yet
 * supported with device parameters.
 *
 * Precision: fp32 parameters and gradients, or bf16/fp16 ones with fp32
 * master weights and fp32 optimizer states. fp16 uses dynamic loss scaling:
 * scale the loss by zsh_optim_loss_scale(); a step whose gradients overflow
 * is skipped and the scale halved. Gradient clipping uses the global norm
 * over all shards.
 *
 * The optimizer is used by one thread at a time, and every call marked
 * collective must be made by all ranks in the same order.
 */
#ifndef ZEROSHARD_OPTIM_H_
#define ZEROSHARD_OPTIM_H_

#include <zeroshard.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The optimizer layer for one model on one communicator. Opaque. */
typedef struct zsh_optim zsh_optim_t;

/** A registered parameter, owned by its optimizer. Opaque. */
typedef struct zsh_param zsh_param_t;

/** The update rule. */
typedef enum {
    ZSH_OPTIM_SGD,   /**< SGD, with optional momentum, Nesterov and L2 weight decay. */
    ZSH_OPTIM_ADAM,  /**< Adam with bias correction; weight decay is added to the gradient (L2). */
    ZSH_OPTIM_ADAMW  /**< Adam with decoupled weight decay (Loshchilov & Hutter). */
} zsh_optim_kind_t;

/**
 * Where a kind of model state lives (the Infinity tiers). Compute memory is
 * host memory in a build without a device; the host tier is memory the
 * layer allocates apart from it (pinned, once model state can live on a
 * device); the NVMe tier is files under a directory, moved through a
 * bounded pool of host buffers by the asynchronous I/O engine.
 */
typedef enum {
    ZSH_OFFLOAD_DEFAULT = -1, /**< Take the ZSH_OFFLOAD_* variable. */
    ZSH_OFFLOAD_NONE    = 0,  /**< Compute memory. */
    ZSH_OFFLOAD_CPU     = 1,  /**< Host memory. */
    ZSH_OFFLOAD_NVME    = 2   /**< Files under the NVMe directory. */
} zsh_offload_t;

/**
 * Settings of an optimizer. Fill it with zsh_optim_config_init() first, then
 * change what you need. zsh_optim_config_t::size records the layout the caller
 * was built with, so a caller built against other headers is refused instead
 * of misread.
 */
typedef struct zsh_optim_config {
    size_t           size;          /**< sizeof(zsh_optim_config_t), set by
                                         zsh_optim_config_init(). */
    int              stage;         /**< ZeRO stage, 0-3 (default 0). */
    zsh_optim_kind_t kind;          /**< Update rule (default ::ZSH_OPTIM_ADAMW). */
    zsh_dtype_t      precision;     /**< Parameter and gradient dtype: ZSH_FLOAT32 (default),
                                         ZSH_BFLOAT16 or ZSH_FLOAT16 (fp32 master weights). */
    /* The rule's hyperparameters are doubles, as torch.optim's Python floats
     * are: the update derives its fp32 scalars from them in double, as
     * torch.optim does, so the same settings give torch's bits. */
    double           lr;            /**< Learning rate (default 1e-3). */
    double           beta1,         /**< Adam decay rate of the first moment, the moving
                                         average of the gradient (default 0.9). */
                     beta2;         /**< Adam decay rate of the second moment, the moving
                                         average of the squared gradient (default 0.999). */
    double           eps;           /**< Adam denominator term (default 1e-8). */
    double           weight_decay;  /**< L2 (SGD, Adam) or decoupled (AdamW) decay (default 0). */
    double           momentum;      /**< SGD momentum (default 0: none). */
    int              nesterov;      /**< SGD Nesterov momentum, needs momentum > 0 (default 0). */
    float            max_grad_norm; /**< Clip to this global L2 norm; 0 disables (default 0). */
    float            loss_scale;    /**< Initial loss scale (default 65536 for fp16, else 1). */
    int              dynamic_loss_scale; /**< Skip overflowing steps and adapt the scale
                                              (default 1 for fp16, else 0). */
    unsigned         loss_scale_window;  /**< Overflow-free steps before the scale doubles
                                              (default 1000). */
    float            min_loss_scale;     /**< The scale never drops below this (default 1). */
    size_t           bucket_size;   /**< Bytes per flat bucket; 0 takes ZSH_BUCKET_SIZE. */
    size_t           max_live_bytes;/**< Bound on buffers, applied separately to the gathered
                                         buckets of stage 3 (fetched, cached or prefetched) and
                                         to gradient staging of stages 2-3 (the oldest reduction
                                         is waited for first); a single bucket may exceed it.
                                         In host memory, buffers given back are kept within the
                                         same bounds for the next step's buckets (counted in
                                         buffer_bytes). 0 takes ZSH_MAX_LIVE_BYTES. */
    int              prefetch;      /**< Stage 3: buckets to prefetch ahead of use (at most 16
                                         are used); -1 takes ZSH_PREFETCH (default -1). */
    /* The offload tiers. A caller built before these fields existed passes
     * the shorter size and gets every tier's default. */
    zsh_offload_t    offload_optimizer; /**< Tier of the optimizer states and fp32 master
                                             weights; at stages 2-3 the reduced gradient
                                             shards follow it (default ZSH_OFFLOAD_DEFAULT:
                                             ZSH_OFFLOAD_OPTIMIZER). */
    zsh_offload_t    offload_params;    /**< Tier of the parameter shards, stage 3 only
                                             (default ZSH_OFFLOAD_DEFAULT: ZSH_OFFLOAD_PARAMS). */
    const char      *nvme_dir;      /**< Directory of the NVMe tier's files; NULL takes
                                         ZSH_NVME_DIR. Copied at create. */
    size_t           host_mem_limit;/**< Bytes of host buffers the NVMe tier may hold at once
                                         (swap buffers of the step, gradient shards on their
                                         way to disk); 0 takes ZSH_HOST_MEM_LIMIT. */
    size_t           sub_group_size;/**< Elements of this rank's state updated per sub-group:
                                         the step reads, updates and writes back the NVMe
                                         tier one sub-group at a time; 0 takes
                                         ZSH_SUB_GROUP_SIZE. */
    /* A caller built before this field passes the shorter size and gets
     * ZSH_OPTIM_THREADS. */
    int              update_threads;/**< Threads that apply the update rule in a step, the
                                         caller's included, each on its own slice (the rules
                                         are element-wise: any count gives the same bits);
                                         0 takes ZSH_OPTIM_THREADS (default 1). More pays
                                         where a rank has cores to itself. */
    /* A caller built before this field passes the shorter size and gets
     * ZSH_HPZ. */
    int              hpz;           /**< Stage 3: ZeRO++ hierarchical partitioning (hpZ). Each
                                         rank also keeps a secondary copy of the parameters,
                                         partitioned over a group of this many ranks of its
                                         node; a bucket gathered once since the last update
                                         is gathered again (backward) from that copy, inside
                                         the node. ::ZSH_HPZ_AUTO: the ranks per node (off on
                                         one node); ::ZSH_HPZ_OFF (1): off; 2 or more: the
                                         group size, which divides the ranks per node; 0 takes
                                         ZSH_HPZ (default off). Needs stage 3, in-memory
                                         parameters (offload_params none) and the same
                                         number of ranks on every node. */
    /* A caller built before this field passes the shorter size and gets
     * the default stream. */
    void            *stream;        /**< Device parameters: the cudaStream_t the optimizer's
                                         device work is enqueued on; NULL: the legacy default
                                         stream. Ignored for host parameters. */
    /* A caller built before this field passes the shorter size and gets
     * its communicator's mode. */
    int              deterministic; /**< 1: the optimizer's reductions give the same bits
                                         whatever the bucket size, sub-group size, hpZ,
                                         offload or node layout: its communicator is set
                                         to the deterministic mode
                                         (zsh_comm_set_deterministic(), which every rank
                                         then shares), and the global gradient norm is
                                         summed exactly, so its rounding does not depend on
                                         which rank holds which gradient. 0: as the
                                         communicator is set (the norm is exact whenever
                                         the communicator is deterministic).
                                         Host parameters only: reductions on device buffers
                                         are refused in the mode. */
    /* A caller built before these fields passes the shorter size and gets
     * ZSH_QUANTIZE_WEIGHTS and ZSH_QUANTIZE_BLOCK. */
    int              quantize_weights; /**< Stage 3: ZeRO++'s quantized weights (qwZ). A
                                            bucket's first gather after each update (the
                                            forward pass's) travels as int8 levels with one
                                            fp32 scale per block of quantize_block elements,
                                            dequantized into the gathered buffer; later
                                            gathers (backward's) travel in full precision, or
                                            come from hpZ's secondary partition, which holds
                                            what the first one gave. The shards, the master
                                            weights and the update are untouched.
                                            ::ZSH_QUANTIZE_AUTO: on across nodes, off on one
                                            (nothing crosses a link there); ::ZSH_QUANTIZE_OFF;
                                            ::ZSH_QUANTIZE_ON; 0 takes ZSH_QUANTIZE_WEIGHTS
                                            (default off). Needs stage 3, fp32 precision and
                                            host parameters in memory (offload_params none). */
    size_t           quantize_block;   /**< Elements per quantization block, each with its own
                                            scale, 1 to 1048576; 0 takes ZSH_QUANTIZE_BLOCK
                                            (default 2048). */
    int              quantize_grads;   /**< Stages 2-3: ZeRO++'s quantized gradients (qgZ).
                                            Each bucket's gradients are reduce-scattered in
                                            full precision inside the node, the node's partial
                                            sums quantized to quantize_grad_bits in blocks of
                                            quantize_block, exchanged across nodes by one
                                            all-to-all over the ranks of each local index (the
                                            rails), dequantized and summed in fp32 by each
                                            shard's owner. The reduction is blocking (it does
                                            not overlap the backward pass yet). Modes as
                                            quantize_weights; 0 takes ZSH_QUANTIZE_GRADS
                                            (default off). ::ZSH_QUANTIZE_ON on one node is
                                            refused (nothing crosses a node). Needs fp32, host
                                            parameters, offload_optimizer none and the same
                                            number of ranks on every node. */
    int              quantize_grad_bits;   /**< Bits of qgZ's levels: 8 or 4; 0 takes
                                                ZSH_QUANTIZE_GRAD_BITS (default 8). */
    int              quantize_weight_bits; /**< Bits of qwZ's levels: 8 (int4 weights are
                                                refused: too coarse for the forward pass);
                                                0 takes 8. */
    /* A new field goes here, last, with its row in python/src/optim_settings.h,
     * which builds the Python keywords from the rows (the module's build
     * refuses a field without one). */
} zsh_optim_config_t;

/** zsh_optim_config_t::hpz: a secondary group of every rank of a node. */
#define ZSH_HPZ_AUTO (-1)
/** zsh_optim_config_t::hpz: no secondary partition. */
#define ZSH_HPZ_OFF 1

/** zsh_optim_config_t::quantize_weights: on across nodes, off on one node. */
#define ZSH_QUANTIZE_AUTO (-1)
/** zsh_optim_config_t::quantize_weights: off. */
#define ZSH_QUANTIZE_OFF 1
/** zsh_optim_config_t::quantize_weights: on, on one node too (where it only costs). */
#define ZSH_QUANTIZE_ON 2

/** @brief Fill @p cfg with the defaults listed in ::zsh_optim_config_t. */
void zsh_optim_config_init(zsh_optim_config_t *cfg);

/**
 * Bytes a rank holds and moves, as counted where the layer allocates and
 * communicates. Model states are params + grads + states.
 */
typedef struct zsh_optim_stats {
    size_t   param_bytes;   /**< Parameters: the framework's registered buffers at stages
                                 0-2, the layer's shards at stage 3. */
    size_t   grad_bytes;    /**< Reduced gradients (full at stages 0-1, sharded at 2-3). */
    size_t   state_bytes;   /**< Optimizer states, plus fp32 master weights in mixed precision. */
    size_t   buffer_bytes;  /**< Gather, staging and reduction buffers held now. */
    size_t   buffer_peak_bytes; /**< The most buffer bytes held at once so far. */
    size_t   gathered_peak_bytes; /**< Stage 3: the most bytes of gathered (fetched, cached or
                                       prefetched) buckets held at once so far; with tiles, at
                                       most max_live_bytes or one tile's bucket. */
    size_t   comm_bytes_last_step; /**< Bytes this rank moved through collectives in the last
                                        step (fetches since the previous step included),
                                        counting an all-gather or reduce-scatter of a T-byte
                                        buffer as T and an all-reduce as 2T, as the ZeRO paper
                                        does; a ring sends (N-1)/N of that. */
    unsigned long steps;        /**< Steps taken, skipped ones included. */
    unsigned long skipped_steps;/**< Steps skipped because gradients overflowed. */
    float    loss_scale;        /**< The loss scale in force. */
    double   last_grad_norm;    /**< Global L2 norm of the last step's unscaled gradients
                                     (computed when clipping or loss scaling needs it, else 0). */
    size_t   nbuckets;          /**< Flat buckets the parameters were coalesced into. */
    unsigned long prefetch_hits;   /**< Stage 3 fetches served by a prefetched bucket. */
    unsigned long order_rebuilds;  /**< Stage 3 times the recorded fetch order was rebuilt. */
    /* The offload tiers. Filled only for a caller whose config carried these
     * fields' size (zsh_optim_config_t::size); an older caller's shorter
     * struct is never written past. */
    size_t   compute_bytes;     /**< Model state (params + grads + states) in compute memory. */
    size_t   host_bytes;        /**< Model state in the host tier. */
    size_t   nvme_bytes;        /**< Model state in the NVMe tier's files. */
    size_t   host_buffer_bytes; /**< Host buffers of the NVMe tier held now. */
    size_t   host_buffer_peak_bytes; /**< The most held at once so far; never above
                                          zsh_optim_config_t::host_mem_limit. */
    unsigned long long io_read_bytes;  /**< Bytes read from the NVMe tier so far. */
    unsigned long long io_write_bytes; /**< Bytes written to the NVMe tier so far. */
    double   io_wait_s;         /**< Seconds the caller was blocked waiting for I/O so far. */
    double   io_busy_s;         /**< Seconds with any I/O of the tier in flight so far. */
    double   io_overlap_s;      /**< Of io_busy_s, the seconds the caller was not waiting:
                                     I/O hidden behind compute or communication. */
    const char *io_engine;      /**< The I/O engine in use ("io_uring", "libaio",
                                     "threads"), or NULL without an NVMe tier. */
    /* Nodes and hpZ. Filled only for a caller whose config carried
     * zsh_optim_config_t::hpz. */
    size_t   comm_bytes_cross_node_last_step; /**< Of comm_bytes_last_step, the bytes of
                                                   collectives on a communicator that spans
                                                   more than one node (0 on one node). */
    size_t   comm_bytes_node_last_step; /**< Of comm_bytes_last_step, the bytes of hpZ's
                                             gathers on the node group, which never leave
                                             the node. */
    int      hpz;               /**< The hpZ group size in force (1: off). */
    int      nnodes;            /**< Nodes the optimizer's communicator spans. */
    size_t   hpz_bytes;         /**< The secondary partition held (included in
                                     param_bytes). */
    unsigned long hpz_gathers;  /**< Stage 3 gathers served from the secondary partition
                                     over the node group, so far. */
    /* Device memory. Filled only for a caller whose config carried
     * zsh_optim_config_t::stream. */
    int      device;            /**< 1 when the parameters are CUDA device memory. */
    size_t   device_bytes;      /**< Bytes of device memory the layer holds now: model state
                                     in compute memory and every buffer (0 on the host). */
    size_t   device_peak_bytes; /**< The most held at once so far. */
    unsigned long long copy_bytes; /**< offload_optimizer from the device: bytes copied
                                        between host and device so far (reduced gradient
                                        shards down, updated parameters up; not the shards
                                        an offload_params gather takes up). */
    double   copy_s;            /**< Seconds the copy stream spent on those copies. */
    double   copy_wait_s;       /**< Seconds the caller was blocked waiting for them: of
                                     copy_s, copy_s - copy_wait_s (at least) was hidden behind
                                     the reductions, the host update and the caller's work. */
    /* Quantization. Filled only for a caller whose config carried
     * zsh_optim_config_t::quantize_weights. */
    int      quantize_weights;  /**< 1 when qwZ is in force. */
    size_t   comm_bytes_quantized_last_step; /**< Of comm_bytes_last_step, the bytes that
                                                  travelled quantized, levels and scales as
                                                  sent (comm_bytes_last_step counts a quantized
                                                  gather as sent, not as the fp32 it stands
                                                  for); over the optimizer's communicator, so
                                                  across nodes where it spans several. */
    unsigned long qwz_gathers;  /**< Stage 3 gathers that travelled quantized, so far. */
    unsigned long qwz_nonfinite_blocks; /**< Blocks holding NaN or inf that this rank's
                                             quantized gathers sent, so far: each came back as
                                             NaN across its block, never beyond it. */
    int      quantize_grads;    /**< 1 when qgZ is in force. */
    unsigned long qgz_reductions;      /**< Buckets reduced through qgZ, so far. */
    unsigned long qgz_nonfinite_blocks; /**< Blocks holding NaN or inf that this rank's qgZ
                                             partial sums sent, so far (the step then sees a
                                             NaN gradient, as an overflow). */
} zsh_optim_stats_t;

/**
 * @brief Create an optimizer over @p comm (not collective; nothing is sent
 *        until the layout is built).
 * @param comm The data-parallel ranks; must outlive the optimizer.
 * @param cfg  Settings; NULL takes every default. Copied.
 * @param[out] opt_p The optimizer, set only on success.
 * @return ZSH_ERR_INVALID_ARG naming a bad setting (stage, precision, ...), or a
 *         malformed ZSH_* variable.
 */
zsh_status_t zsh_optim_create(zsh_comm_t *comm, const zsh_optim_config_t *cfg,
                              zsh_optim_t **opt_p);

/** @brief Destroy an optimizer, waiting for any reduction still in flight. NULL is ignored. */
void zsh_optim_destroy(zsh_optim_t *opt);

/**
 * @brief Register a parameter. Every rank registers the same parameters, with
 *        the same initial values, in the same order.
 * @param opt   The optimizer; its layout must not be built yet.
 * @param name  For error messages; copied.
 * @param numel Elements (> 0).
 * @param dtype Must equal the configured precision.
 * @param buf   numel elements holding the initial values. At stages 0-2 the
 *              framework keeps it: it stays valid for the optimizer's life
 *              and each step updates it in place. At stage 3 it is read when
 *              the layout is built (zsh_optim_setup()) and may be freed after.
 * @param[out] param_p The handle, set only on success.
 * @return ZSH_ERR_INVALID_ARG for a wrong dtype, a zero numel, a call after
 *         the layout was built (after setup, the first fetch, grad-ready or step),
 *         or a numel whose bytes (parameter, gradient and fp32 optimizer states
 *         per element), alone or summed with the parameters registered before,
 *         do not fit a size_t; the message names the parameter and its index,
 *         and the optimizer is left as it was.
 */
zsh_status_t zsh_optim_register(zsh_optim_t *opt, const char *name, size_t numel,
                                zsh_dtype_t dtype, void *buf, zsh_param_t **param_p);

/**
 * @brief Register one parameter as consecutive tiles of @p tile_numel
 *        elements (the last may be shorter), named "name[k]", each fetched,
 *        released and given its gradient on its own.
 *
 * Memory-centric tiling: a layer computed tile by tile (say, by blocks of
 * output rows) needs only one tile gathered at a time at stage 3, so a layer
 * larger than the memory budget still runs. A tile is gathered alone when it
 * fills a bucket (tile_numel * element size >= the bucket size); smaller
 * tiles are coalesced like any parameter.
 * @param opt        The optimizer; its layout must not be built yet.
 * @param name       Base name of the tiles, for error messages; copied.
 * @param numel      Elements of the whole parameter (> 0).
 * @param dtype      Must equal the configured precision.
 * @param buf        numel elements holding the initial values, kept or read as
 *                   for zsh_optim_register(); tile k starts at element
 *                   k * tile_numel.
 * @param tile_numel Elements per tile (> 0); the last tile takes the rest.
 * @param[out] tiles ceil(numel / tile_numel) handles, in order; set only on
 *                   success (on failure no tile stays registered).
 */
zsh_status_t zsh_optim_register_tiled(zsh_optim_t *opt, const char *name, size_t numel,
                                      zsh_dtype_t dtype, void *buf, size_t tile_numel,
                                      zsh_param_t **tiles);

/**
 * @brief Build the layout: buckets, shards and states (collective). Called by
 *        the first fetch, grad-ready or step if not called before.
 * @return ZSH_ERR_INVALID_ARG when a bucket padded to equal shards on every
 *         rank no longer fits a size_t, ZSH_ERR_NO_MEMORY when its buffers
 *         cannot be allocated; either names the bucket's first parameter, and
 *         the optimizer can still be destroyed.
 */
zsh_status_t zsh_optim_setup(zsh_optim_t *opt);

/**
 * @brief Where a parameter lies in the layout: its bucket, its first element
 *        in the bucket's flat layout, and the bucket's elements padded to
 *        equal blocks on every rank (what zsh_optim_set_bucket_storage()
 *        needs).
 * @param opt   The optimizer; its layout is built first if it was not (a
 *              collective call then, as zsh_optim_setup()).
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param[out] bucket_p       The bucket's index, 0 to nbuckets - 1; may be NULL.
 * @param[out] offset_p       The parameter's first element there; may be NULL.
 * @param[out] bucket_numel_p The bucket's padded elements; may be NULL.
 */
zsh_status_t zsh_optim_param_place(zsh_optim_t *opt, const zsh_param_t *param, size_t *bucket_p,
                                   size_t *offset_p, size_t *bucket_numel_p);

/**
 * @brief Move a bucket's parameters into @p buf, each at its offset in the
 *        bucket's flat layout (zsh_optim_param_place()): flat parameters, as
 *        FSDP and DeepSpeed keep them (stages 0-2, host memory).
 *
 * The parameters' values are copied into @p buf, which is then their buffer
 * in place of the one given at registration: each step updates them there,
 * zsh_optim_fetch() returns addresses in it, and the buffers registered
 * before are no longer read or written. At stages 1-2 the step then
 * all-gathers the updated parameters into @p buf in place, where it would
 * otherwise copy this rank's block into a buffer of its own and the peers'
 * blocks back out of it. The padding elements of @p buf (those no parameter
 * covers) are written by the all-gather and hold nothing of use. Once the
 * layout is built (zsh_optim_setup(), collective), every rank may call it or
 * not, for any of its buckets, independently; the framework keeps @p buf for
 * the optimizer's life or until it moves the bucket again.
 * @param opt    The optimizer; its layout is built first if it was not (a
 *               collective call then, as zsh_optim_setup()).
 * @param bucket The bucket's index (zsh_optim_param_place()).
 * @param buf    Host memory of at least the bucket's padded elements,
 *               aligned to the element size.
 * @param bytes  Its size in bytes.
 * @return ZSH_ERR_INVALID_ARG at stage 3 (the layer keeps the parameters),
 *         for a bucket out of range, a @p buf too small or unaligned, a
 *         parameter of the bucket fetched, or a @p buf that overlaps another
 *         bucket's storage or any parameter's current buffer anywhere but at
 *         that parameter's own place in it; ZSH_ERR_UNSUPPORTED with
 *         parameters on a device. The message names the bucket, and nothing
 *         is changed then.
 */
zsh_status_t zsh_optim_set_bucket_storage(zsh_optim_t *opt, size_t bucket, void *buf,
                                          size_t bytes);

/**
 * @brief Make a parameter's full values available (collective at stage 3).
 *
 * At stage 3 it gathers the parameter's bucket unless it is live already
 * (fetched, cached or prefetched). At stages 0-2 it returns the framework's
 * buffer. Every fetch needs a zsh_optim_release() before the parameter is
 * fetched again and before the step.
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param[out] data_p numel elements of the configured precision, valid until
 *                    release; read only at stage 3.
 * @return ZSH_ERR_INVALID_ARG if the parameter is fetched and not released.
 */
zsh_status_t zsh_optim_fetch(zsh_optim_t *opt, zsh_param_t *param, void **data_p);

/** @brief End the use that zsh_optim_fetch() began; the pointer it gave becomes invalid. */
zsh_status_t zsh_optim_release(zsh_optim_t *opt, zsh_param_t *param);

/**
 * @brief Say that this step's backward pass begins (optional; collective).
 *
 * With qwZ (zsh_optim_config_t::quantize_weights) stage 3 gathers the
 * weights as int8 for the forward only: backward computes its gradients
 * through the exact values (or hpZ's secondary partition). This call drops
 * every gathered bucket that came as int8 and that no hpZ secondary holds,
 * cached or prefetched (one still fetched goes at its release), so the
 * next gather of each is full precision. Call it after the forward and
 * before backward's first zsh_optim_fetch(): the units that ran last in the
 * forward are the first whose backward gathers, before any gradient exists.
 * Without it, the step's first zsh_optim_grad_ready() marks the start, and
 * a bucket fetched again before that serves the forward's int8 copy.
 * It does nothing at stages 0-2, without qwZ, or when called again before
 * zsh_optim_step() or zsh_optim_zero_grad() (idempotent within a step).
 * Every rank calls it at the same point of the step, or none does.
 * @param opt The optimizer; its layout is built first if it was not.
 * @return ZSH_ERR_INVALID_ARG if @p opt is NULL, or the failure of a
 *         prefetched gather it waited for.
 */
zsh_status_t zsh_optim_backward_begin(zsh_optim_t *opt);

/**
 * @brief Hand over a parameter's gradient for this step and start its
 *        reduction (nonblocking; collective per bucket).
 *
 * The gradient is copied before the call returns, so the caller may reuse
 * @p grad at once. When every parameter of a bucket is ready, the bucket's
 * all-reduce (stage 0) or reduce-scatter (stages 1-3) starts.
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param grad  numel elements of the configured precision (scaled by the loss scale for fp16).
 * @return ZSH_ERR_INVALID_ARG if this parameter already has a gradient pending this step.
 */
zsh_status_t zsh_optim_grad_ready(zsh_optim_t *opt, zsh_param_t *param, const void *grad);

/**
 * @brief zsh_optim_grad_ready() of @p grad multiplied by @p mul, in one pass
 *        over it (nonblocking; collective per bucket, as it).
 *
 * Each element is widened to fp32, multiplied by @p mul and rounded once to
 * the configured precision as it is copied into the bucket (in fp32 the
 * product itself: the bits of `grad * mul` computed elementwise in float).
 * @p grad is only read. Averaging over N ranks (@p mul = 1/N) this way costs
 * no pass over the gradient of its own, where scaling it first and then
 * handing it over reads and writes it twice.
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param grad  numel elements of the configured precision, in host memory.
 * @param mul   A finite factor.
 * @return ZSH_ERR_INVALID_ARG if @p mul is not finite or this parameter
 *         already has a gradient pending this step; ZSH_ERR_UNSUPPORTED with
 *         parameters on a device (scale there, then zsh_optim_grad_ready()).
 *         Nothing is changed then.
 */
zsh_status_t zsh_optim_grad_ready_scaled(zsh_optim_t *opt, zsh_param_t *param, const void *grad,
                                         float mul);

/** @brief Told by the optimizer that it no longer reads a gradient lent with
 *         zsh_optim_grad_lend(); @p arg is the one given there. */
typedef void (*zsh_optim_lent_fn)(void *arg);

/**
 * @brief zsh_optim_grad_ready_scaled() that reduces @p grad from where it
 *        lies where it can, instead of copying it into the bucket first
 *        (nonblocking; collective per bucket, as it).
 *
 * The copy is a pass over the gradient, read and written, before the
 * reduction reads it again. The reduction reads the caller's memory instead
 * where all of these hold: stage 2 or 3, host memory, fp32 or bf16, no
 * quantized gradients (qgZ), a bucket holding this parameter alone (a
 * parameter over the bucket size is one) whose element count the ranks
 * divide, and @p mul either 1 or exactly 1/N for a power-of-two number of
 * ranks N (the reduction then averages: each element's sum divided by N,
 * which for a power of two gives the bits of the scaled copy's sum, except
 * where the products fall below the smallest normal number of the type or
 * the sum beyond the largest finite one).
 * Anywhere else the gradient is copied as zsh_optim_grad_ready_scaled()
 * copies it. A lent bucket's reduction averages where a copied one sums the
 * scaled copies, so every rank hands a bucket's gradient over alike: with
 * this call and the same @p mul on every rank (zeros where a rank has none),
 * or with the other calls on every rank; ranks that differ fail with
 * ZSH_ERR_MISMATCH naming both reductions.
 *
 * Lent, @p grad must stay allocated and unchanged until @p done(@p arg) is
 * called. The optimizer calls it exactly once, whatever happens: before
 * this returns where it copied, and where this refuses the call
 * (ZSH_ERR_INVALID_ARG, ZSH_ERR_UNSUPPORTED: nothing was handed over);
 * after any other return, ZSH_OK or a failure (another bucket's reduction
 * may report one here), the caller waits for it: from the call on @p opt
 * that finds the reduction complete (a later gradient's hand-over,
 * zsh_optim_grad_wait(), the step, zsh_optim_zero_grad(),
 * zsh_optim_destroy()), on the thread making
 * that call, which must not call into @p opt from @p done. A failed
 * reduction's peers may still read the memory: @p done then comes through
 * zsh_comm_free_buffer() of the optimizer's communicator, once no transfer
 * can. Lent gradients count in max_live_bytes as staging buffers do (the
 * bytes in flight are the same; whose memory holds them differs), not in
 * zsh_optim_stats_t's buffer bytes, which are the layer's own.
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param grad  numel elements of the configured precision, in host memory.
 * @param mul   A finite factor.
 * @param done  Called once the optimizer no longer reads @p grad; NULL: the
 *              caller keeps @p grad until zsh_optim_grad_wait() of @p param
 *              or the step returns ZSH_OK, or zsh_optim_zero_grad() or
 *              zsh_optim_destroy() returns, instead.
 * @param arg   Passed to @p done.
 * @return As zsh_optim_grad_ready_scaled(); nothing is changed on a
 *         refusal, and @p done has been called.
 */
zsh_status_t zsh_optim_grad_lend(zsh_optim_t *opt, zsh_param_t *param, const void *grad,
                                 float mul, zsh_optim_lent_fn done, void *arg);

/**
 * @brief Wait until the layer no longer reads a gradient lent for
 *        @p param (collective with the bucket's peers, as the reduction).
 *
 * Where zsh_optim_grad_lend() lent it, this completes the bucket's
 * reduction and gives the gradient back before it returns (its done is
 * called), so the caller may free or reuse it at once:
 * what a framework whose allocator reuses freed memory at once wants (torch
 * on the host: held until a later call, its gradients made torch's next
 * allocations fault fresh pages in, which cost more than the copy saved).
 * Returns at once where nothing is lent for @p param: it was copied (its
 * bucket's reduction then goes on without waiting), not handed over yet,
 * or already given back.
 * @param opt   The optimizer.
 * @param param A parameter of @p opt.
 * @return ZSH_ERR_INVALID_ARG for NULL; else how the reduction ended (a
 *         failure is the optimizer's from then on, as in the step).
 */
zsh_status_t zsh_optim_grad_wait(zsh_optim_t *opt, zsh_param_t *param);

/**
 * @brief Say that a parameter has no gradient this step, on any rank, in
 *        place of zsh_optim_grad_ready() (collective per bucket, as it).
 *
 * As torch.optim leaves a parameter whose gradient is None, the step leaves
 * it as it is: no weight decay, no change to its optimizer states, and its
 * own count of updates, which Adam's bias correction uses, does not advance
 * (it then lags the optimizer's, and its next update is corrected by its
 * own count). Its bucket's reduction adds zeros in its place, and the
 * gradient norm counts none. Every rank calls it for the same parameters:
 * a parameter that has a gradient on some rank gets zeros from the others
 * through zsh_optim_grad_ready(), as DDP sums it.
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @return ZSH_ERR_INVALID_ARG if this parameter already has a gradient (or
 *         none) pending this step.
 */
zsh_status_t zsh_optim_grad_none(zsh_optim_t *opt, zsh_param_t *param);

/**
 * @brief Finish the gradient reductions and update the parameters (collective).
 *
 * Checks overflow (dynamic loss scaling) and clips to the global norm when
 * configured. At stages 1-2 the updated parameters are all-gathered into the
 * framework's buffers; at stage 3 the next fetch sees them. The gradients are
 * consumed: the next step needs new ones for every parameter.
 * @param opt The optimizer; its layout is built first if it was not.
 * @param[out] applied_p 1 if the parameters were updated, 0 if the step was
 *                       skipped for overflow; may be NULL.
 * @return ZSH_ERR_INVALID_ARG naming a parameter without a gradient (neither
 *         zsh_optim_grad_ready() nor zsh_optim_grad_none()) or still
 *         fetched; nothing is changed then.
 */
zsh_status_t zsh_optim_step(zsh_optim_t *opt, int *applied_p);

/**
 * @brief The global L2 norm of this step's gradients, and clip them to
 *        @p max_norm at this step, as torch.nn.utils.clip_grad_norm_ between
 *        backward and the optimizer's step (collective).
 *
 * Finishes the gradient reductions and computes the norm of the reduced
 * (averaged, unscaled by the loss scale) gradients now, as the step would;
 * the step uses that norm and multiplies the gradients by
 * max_norm / (norm + 1e-6) where that is below 1, torch's factor, before the
 * update. It applies to the coming step only, beside
 * zsh_optim_config_t::max_grad_norm: the lower of the two clips. Called again
 * in the same step, it returns the norm as the earlier call left the
 * gradients, and the lowest @p max_norm applies. Every rank calls it in the
 * same step, after every parameter has its gradient (zsh_optim_grad_ready()
 * or zsh_optim_grad_none()).
 * @param opt      The optimizer.
 * @param max_norm Finite and > 0.
 * @param[out] norm_p The norm before this call's clipping (inf or NaN if a
 *                    gradient is; the step then skips under dynamic loss
 *                    scaling, and otherwise updates with them, as torch does).
 * @return ZSH_ERR_INVALID_ARG if @p max_norm is out of range, or naming a
 *         parameter without a gradient or still fetched, as zsh_optim_step();
 *         nothing is changed then.
 */
zsh_status_t zsh_optim_clip_grad_norm(zsh_optim_t *opt, double max_norm, double *norm_p);

/**
 * @brief Replace a parameter's values, as when loading a checkpoint (not
 *        collective once the layout is built; builds it first if not).
 *
 * Every rank calls it with the same values for the same parameters in the
 * same order. Every copy the layer keeps is rewritten: the framework's buffer
 * at stages 0-2, this rank's part of the stage 3 shard, and the fp32 master
 * weights in mixed precision: set from @p values, except that an element
 * whose master already rounds to its value keeps its master (on the host;
 * with device parameters every master is set from @p values). So loading
 * the parameters a step left, or writing a buffer back where a framework
 * changed a few elements, keeps the masters' low bits wherever the values
 * did not change. Optimizer states are kept.
 * @param opt    The optimizer.
 * @param param  A parameter of @p opt (or one tile of a tiled parameter).
 * @param values numel elements of the configured precision; may be the
 *               parameter's own buffer at stages 0-2 (after the framework
 *               wrote it, to refresh the master weights).
 * @return ZSH_ERR_INVALID_ARG if the parameter (at stage 3, any parameter of
 *         its bucket) is fetched, or it has a gradient pending this step;
 *         nothing is changed then.
 */
zsh_status_t zsh_optim_set_param(zsh_optim_t *opt, zsh_param_t *param, const void *values);

/**
 * @brief Copy a parameter's values out, exact (collective at stage 3).
 *
 * What zsh_optim_set_param() sets and the step updates: the framework's
 * buffer at stages 0-2; at stage 3 the parameter's bucket gathered as
 * zsh_optim_fetch() does, but in full precision always under qwZ
 * (zsh_optim_config_t::quantize_weights: a fetch's first gather after an
 * update is int8) and outside the order the prefetch records. A state
 * dict, a checkpoint of the whole model or a model given back reads
 * through it. A gathered copy it leaves cached is not served to the step's
 * first fetch under qwZ, so reading changes no step's values. Every rank
 * calls it for the same parameters in the same order.
 * @param opt    The optimizer; its layout is built first if it was not.
 * @param param  A parameter of @p opt (or one tile of a tiled parameter).
 * @param[out] values numel elements of the configured precision, memory
 *                    of the parameters' kind (host or device), written
 *                    when the call returns.
 * @return ZSH_ERR_INVALID_ARG if the parameter is fetched, or (qwZ) its
 *         bucket is fetched with int8 values: release first.
 */
zsh_status_t zsh_optim_get_param(zsh_optim_t *opt, zsh_param_t *param, void *values);

/** A per-element optimizer state of a parameter, as torch.optim names it. */
typedef enum {
    ZSH_OPTIM_EXP_AVG    = 1, /**< Adam's and AdamW's "exp_avg", SGD's "momentum_buffer". */
    ZSH_OPTIM_EXP_AVG_SQ = 2, /**< Adam's and AdamW's "exp_avg_sq". */
    ZSH_OPTIM_MASTER     = 3  /**< The fp32 master weights of mixed precision (bf16 or fp16
                                   parameters): what the step updates and rounds into the
                                   parameters; "master_weight" in a torch-format state dict. */
} zsh_optim_state_t;

/**
 * @brief Copy one optimizer state of a parameter out, whole, on every rank
 *        (collective).
 *
 * Each rank contributes its part, read wherever the tiers keep it (memory,
 * the NVMe tier's files), and every rank gets every element's exact bits
 * (-0.0 and NaN payloads included), as torch.optim's state dict holds them
 * in fp32. What a torch-format optimizer state dict is built from, with
 * zsh_optim_get_updates(); zsh_optim_save() is the sharded checkpoint.
 * Every rank calls it for the same parameters and states in the same
 * order; ranks asking for different ones are told so (ZSH_ERR_MISMATCH).
 * @param opt   The optimizer; its layout is built first if it was not.
 * @param param A parameter of @p opt (or one tile of a tiled parameter).
 * @param kind  A state the rule keeps: both for Adam and AdamW, the first
 *              for SGD with momentum, none for SGD without; and
 *              ZSH_OPTIM_MASTER in mixed precision, whatever the rule.
 * @param[out] values numel fp32 values in host memory.
 * @return ZSH_ERR_INVALID_ARG, on every rank, if a rank's arguments are
 *         wrong (another optimizer's parameter, a state the rule does not
 *         keep, a gradient pending) or ZSH_ERR_UNSUPPORTED for device
 *         parameters; the rank's own message where it failed, elsewhere
 *         naming that rank.
 */
zsh_status_t zsh_optim_get_state(zsh_optim_t *opt, zsh_param_t *param, zsh_optim_state_t kind,
                                 float *values);

/**
 * @brief Replace one optimizer state of a parameter (not collective: each
 *        rank writes its own part from the whole).
 *
 * Every rank passes the same @p values, as for zsh_optim_set_param(); the
 * next step continues from them. Between steps: a gradient pending is
 * refused. ZSH_OPTIM_MASTER replaces the master weights alone: the
 * parameter keeps its values until the next step rounds the updated
 * masters into it (zsh_optim_set_param() sets them, and keeps a master that
 * already rounds to the value given, so the two calls may come in either
 * order).
 * @param opt    The optimizer; its layout is built first if it was not.
 * @param param  A parameter of @p opt.
 * @param kind   A state the rule keeps (see zsh_optim_get_state()).
 * @param values numel fp32 values in host memory.
 * @return ZSH_ERR_INVALID_ARG as zsh_optim_get_state(); nothing changes then.
 */
zsh_status_t zsh_optim_set_state(zsh_optim_t *opt, zsh_param_t *param, zsh_optim_state_t kind,
                                 const float *values);

/**
 * @brief The updates applied to a parameter: Adam's t for its bias
 *        correction, torch.optim's "step"; behind the optimizer's steps
 *        where they left the parameter out (zsh_optim_grad_none()).
 * @param opt       The optimizer.
 * @param param     A parameter of @p opt.
 * @param[out] updates_p The count.
 * @return ZSH_ERR_INVALID_ARG if an argument is NULL.
 */
zsh_status_t zsh_optim_get_updates(const zsh_optim_t *opt, const zsh_param_t *param,
                                   unsigned long *updates_p);

/**
 * @brief Set a parameter's count of updates, as a loaded optimizer state
 *        dict gives it (not collective; every rank sets the same).
 *
 * The next update of the parameter is its @p updates + 1st.
 * @param opt     The optimizer.
 * @param param   A parameter of @p opt.
 * @param updates The count.
 * @return ZSH_ERR_INVALID_ARG for another optimizer's parameter or a
 *         gradient pending; nothing changes then.
 */
zsh_status_t zsh_optim_set_updates(zsh_optim_t *opt, zsh_param_t *param, unsigned long updates);

/**
 * @brief Save everything needed to continue training exactly: the fp32
 *        weights (master weights in mixed precision), the optimizer states,
 *        the step counters, the loss scaler and the hyperparameters, from
 *        whichever tier holds them (collective).
 *
 * Each rank writes its part of every bucket to its own files, in parallel,
 * through the NVMe tier's I/O engine (O_DIRECT where the filesystem allows
 * it, through bounded buffers: no second copy of the state is made). The
 * files go to a temporary directory under @p dir; once every rank's are
 * fsynced, rank 0 writes the manifest (docs/CHECKPOINT.md), renames the
 * directory to `step-<steps>` and rewrites `dir/latest` to name it, each
 * atomically. A process killed at any moment leaves the previous checkpoint
 * and `latest` as they were; what it left half-written is ignored by loads
 * and swept, with a warning, by the next save. One job saves into @p dir at
 * a time. Ranks must see @p dir as one directory (a local disk for one
 * node, a shared filesystem across nodes).
 * @param opt The optimizer, between steps: no gradient pending.
 * @param dir The checkpoint directory; created if missing (its parent must
 *            exist). A checkpoint of the same step is replaced.
 * @return ZSH_ERR_INVALID_ARG for a NULL argument or a gradient pending,
 *         ZSH_ERR_UNSUPPORTED for device parameters, ZSH_ERR_IO naming the
 *         file (nothing is saved then, on any rank), or a collective's failure.
 */
zsh_status_t zsh_optim_save(zsh_optim_t *opt, const char *dir);

/**
 * @brief Restore what zsh_optim_save() saved (collective), at any world size
 *        and stage, with or without offload.
 *
 * @p dir is a checkpoint directory (its `latest` is loaded) or one
 * checkpoint (`dir/step-N`). The model must be the same: the same
 * parameters, names, numels and precision, in the same order, and the same
 * update rule (SGD with momentum or without, as saved). Each rank reads only
 * the ranges of the files that hold the state it now owns; every byte read
 * is checked against its checksum first, on every rank, before any state is
 * changed. On success the parameters, master weights, optimizer states, step
 * counters (so Adam's bias correction continues), loss scaler and
 * hyperparameters (lr, betas, eps, weight decay, momentum, clipping) are the
 * saved ones; at stages 0-2 the framework's buffers hold the loaded values.
 * @param opt The optimizer: no gradient pending, no parameter fetched.
 * @param dir The checkpoint directory or a checkpoint.
 * @return ZSH_ERR_INVALID_ARG for a NULL argument, a gradient pending, a
 *         fetched parameter, or a checkpoint of another model or rule (naming
 *         the parameter); ZSH_ERR_IO for a missing, truncated or corrupted
 *         file (naming the file, the parameter and the offset). Either way
 *         the optimizer keeps its state.
 */
zsh_status_t zsh_optim_load(zsh_optim_t *opt, const char *dir);

/**
 * @brief Snapshot the optimizer into node memory (collective): zsh_optim_save()
 *        into the directory `ZSH_SNAPSHOT_DIR` names, a directory in tmpfs
 *        (such as one under /dev/shm) that outlives the ranks' processes.
 *
 * Call it every K steps: a job started again after a rank died (zshrun
 * --max-restarts) calls zsh_optim_restore() and continues from the newest
 * complete snapshot without reading the disk, losing at most K steps. The
 * commit is zsh_optim_save()'s, so a snapshot a death interrupted is never
 * the one restored. Only the newest complete snapshot is kept: the node's
 * memory holds at most two (it and the one being written), each the size of
 * a checkpoint (the fp32 weights and the optimizer states of every rank).
 * On several nodes each node has its own directory (the ranks with the same
 * host name and `ZSH_SNAPSHOT_DIR` share one) and each rank's part is also
 * copied into the directory of a buddy, a rank of the next node, before any
 * node commits: a lost node's parts survive there, and a node's memory holds
 * twice its ranks' share. zshrun gives each job (on each node) a fresh
 * directory and removes it when the job ends; the disk checkpoint stays the
 * fallback when a rank and its buddy are both lost.
 * @param opt The optimizer, between steps: no gradient pending.
 * @return ZSH_ERR_INVALID_ARG when `ZSH_SNAPSHOT_DIR` is not set, else what
 *         zsh_optim_save() returns; the previous snapshot stands on error.
 */
zsh_status_t zsh_optim_snapshot(zsh_optim_t *opt);

/**
 * @brief Restore the newest complete snapshot zsh_optim_snapshot() left in
 *        `ZSH_SNAPSHOT_DIR` (collective), at any world size and stage, as
 *        zsh_optim_load() does; the snapshot stays for a later restore.
 *
 * On several nodes the step restored is the newest every node committed,
 * each rank reading its own node's directory (its ranks' parts and its
 * buddies' copies). Each node's must then hold every rank's part: on two
 * nodes it does, also after one was lost; on more, a restore after a lost
 * node fails (ZSH_ERR_IO, every rank alike) and the disk is the fallback.
 * @param opt The optimizer: no gradient pending, no parameter fetched.
 * @return ZSH_ERR_INVALID_ARG when `ZSH_SNAPSHOT_DIR` is not set; ZSH_ERR_IO
 *         when it (or another node's) holds no snapshot (every rank alike);
 *         else what
 *         zsh_optim_load() returns. The optimizer keeps its state on error.
 */
zsh_status_t zsh_optim_restore(zsh_optim_t *opt);

/**
 * @brief Drop the gradients handed over this step (collective if reductions
 *        are in flight: they are completed and discarded).
 */
zsh_status_t zsh_optim_zero_grad(zsh_optim_t *opt);

/** @brief The loss scale to multiply the loss by (1 unless loss scaling is on). */
float zsh_optim_loss_scale(const zsh_optim_t *opt);

/**
 * @brief The loss scaler's state: what a torch-format state dict carries
 *        beside the optimizer states so that a resumed fp16 run skips the
 *        steps the uninterrupted one skips (zsh_optim_save() carries it too).
 * @param opt          The optimizer.
 * @param[out] scale_p The loss scale in force.
 * @param[out] clean_p Steps without overflow since the dynamic scale last
 *                     changed (0 for a static scaler).
 * @return ZSH_ERR_INVALID_ARG if an argument is NULL.
 */
zsh_status_t zsh_optim_get_loss_scaler(const zsh_optim_t *opt, float *scale_p,
                                       unsigned *clean_p);

/**
 * @brief Restore the loss scaler's state that zsh_optim_get_loss_scaler()
 *        gave (not collective: every rank sets the same), between steps.
 * @param opt   The optimizer.
 * @param scale The loss scale: finite, positive, and with dynamic scaling
 *              at least the configured minimum.
 * @param clean Clean steps since the last change: below
 *              zsh_optim_config_t::loss_scale_window with dynamic scaling,
 *              0 without.
 * @return ZSH_ERR_INVALID_ARG for a value out of range or a gradient handed
 *         over since the last step; nothing changes then.
 */
zsh_status_t zsh_optim_set_loss_scaler(zsh_optim_t *opt, float scale, unsigned clean);

/**
 * @brief Set the learning rate of the steps that follow, as a schedule does
 *        between steps (warmup, decay; torch's param_groups' "lr").
 *
 * Not collective, but every rank sets the same rate before the same step, as
 * every rank configured the same one: a part updated at another rate leaves
 * the ranks' replicas apart. The rate in effect is saved with a checkpoint
 * and is the rate after zsh_optim_load() or zsh_optim_restore(). AdamW's
 * decay (1 - lr * weight_decay) follows it, as torch.optim's does.
 * @param opt The optimizer.
 * @param lr  The rate: finite and >= 0.
 * @return ZSH_ERR_INVALID_ARG if @p lr is negative, NaN or infinite; the
 *         rate is unchanged then.
 */
zsh_status_t zsh_optim_set_lr(zsh_optim_t *opt, double lr);

/**
 * @brief The learning rate the next step uses: the configured one, the last
 *        zsh_optim_set_lr(), or a loaded checkpoint's.
 * @param opt The optimizer.
 * @param[out] lr_p The rate.
 * @return ZSH_ERR_INVALID_ARG if an argument is NULL.
 */
zsh_status_t zsh_optim_get_lr(const zsh_optim_t *opt, double *lr_p);

/**
 * @brief Give one parameter a weight decay of its own, in place of
 *        zsh_optim_config_t::weight_decay, as a torch.optim parameter group
 *        does (commonly 0 for biases and norms' weights).
 *
 * Not collective, but every rank sets the same decay for the same
 * parameter. It applies from the next step on, in the rule's own way (L2 for
 * SGD and Adam, decoupled (1 - lr * weight_decay) for AdamW), with
 * torch.optim's bits for that group. It is a setting, not state: a
 * checkpoint does not carry it, and the caller sets it again after a
 * restart, as it builds its groups again.
 * @param opt          The optimizer.
 * @param param        A parameter of @p opt (or one tile of a tiled parameter).
 * @param weight_decay Finite and >= 0.
 * @return ZSH_ERR_INVALID_ARG if @p weight_decay is negative, NaN or
 *         infinite; nothing changes then.
 */
zsh_status_t zsh_optim_set_weight_decay(zsh_optim_t *opt, zsh_param_t *param,
                                        double weight_decay);

/** @brief Bytes held and moved, and step counters. */
zsh_status_t zsh_optim_get_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats);

/** @brief The name a parameter was registered with. */
const char *zsh_param_name(const zsh_param_t *param);

/** @brief The number of elements of a parameter. */
size_t zsh_param_numel(const zsh_param_t *param);

/**
 * What zsh_optim_estimate() models: Ψ parameters trained with Adam on N ranks.
 */
typedef struct zsh_optim_estimate_in {
    double      params;     /**< Ψ, number of parameters. */
    int         ranks;      /**< N, data-parallel ranks. */
    int         stage;      /**< ZeRO stage 0-3. */
    zsh_dtype_t precision;  /**< ZSH_FLOAT32, or ZSH_BFLOAT16 / ZSH_FLOAT16 for mixed precision. */
    int         offload;    /**< 1: optimizer states, master weights and gradient shards live
                                 in host memory (ZeRO-Offload); 0: all on the device. */
} zsh_optim_estimate_in_t;

/** Expected bytes per rank, by the ZeRO paper's formulas (buffers excluded). */
typedef struct zsh_optim_estimate_out {
    double param_bytes,  /**< Parameters, per rank. */
           grad_bytes,   /**< Gradients, per rank. */
           state_bytes;  /**< Optimizer states, plus fp32 master weights in mixed
                              precision, per rank. */
    double device_bytes; /**< What stays on the device. */
    double host_bytes;   /**< What offload moves to host memory (0 without offload). */
    double comm_bytes;   /**< Bytes moved per rank per step (2Ψ or 3Ψ elements). */
} zsh_optim_estimate_out_t;

/** @brief Expected memory and traffic per rank for a model of Ψ parameters. */
zsh_status_t zsh_optim_estimate(const zsh_optim_estimate_in_t *in, zsh_optim_estimate_out_t *out);

/** The offload tiers and the disk, for zsh_optim_estimate_offload(). */
typedef struct zsh_offload_estimate_in {
    zsh_offload_t optimizer;     /**< Tier of optimizer states and master weights (and, at
                                      stages 2-3, gradient shards). */
    zsh_offload_t params;        /**< Tier of parameter shards (stage 3 only). */
    double        read_bw;       /**< Disk read bandwidth, bytes/s, shared by the ranks on it;
                                      0: no time estimate. */
    double        write_bw;      /**< Disk write bandwidth, bytes/s; 0: no time estimate. */
    int           ranks_per_disk;/**< Ranks sharing one disk; 0 takes all the ranks. */
} zsh_offload_estimate_in_t;

/** Bytes per rank in each tier, disk traffic per step, and the disk bound. */
typedef struct zsh_offload_estimate_out {
    double compute_bytes;  /**< Model state per rank in compute memory. */
    double host_bytes;     /**< Model state per rank in the host tier. */
    double nvme_bytes;     /**< Model state per rank in the NVMe tier. */
    double read_bytes;     /**< Bytes a rank reads from disk per step. */
    double write_bytes;    /**< Bytes a rank writes to disk per step. */
    double disk_bound_s;   /**< Seconds per step if the disk were the only limit: the bytes of
                                the ranks sharing a disk over its bandwidths; 0 without them. */
} zsh_offload_estimate_out_t;

/**
 * @brief Memory per tier, disk traffic and the disk-bound step time for a
 *        model of Ψ parameters trained with Adam (the model of
 *        zsh_optim_estimate(), its offload field ignored).
 * @return ZSH_ERR_INVALID_ARG for a bad model (as zsh_optim_estimate()), a tier
 *         that is not none, cpu or nvme, parameters offloaded below stage 3, or
 *         a negative bandwidth.
 */
zsh_status_t zsh_optim_estimate_offload(const zsh_optim_estimate_in_t *in,
                                        const zsh_offload_estimate_in_t *tiers,
                                        zsh_offload_estimate_out_t *out);

/** Traffic across nodes per step, and hpZ's memory, for zsh_optim_estimate_nodes(). */
typedef struct zsh_node_estimate_out {
    int    nodes;                /**< N / ranks per node. */
    int    hpz;                  /**< The hpZ group size modelled (1: off). */
    double cross_node_bytes;     /**< Bytes per rank per step in collectives across nodes,
                                      without hpZ (the paper's counting, as comm_bytes). */
    double cross_node_bytes_hpz; /**< The same with hpZ (2Ψ elements at stage 3). */
    double link_bytes;           /**< Bytes into each node's link per step, without hpZ, with
                                      the hierarchical collectives that run across nodes of
                                      equal size ((nodes - 1) / nodes of each collective). */
    double link_bytes_hpz;       /**< The same with hpZ. */
    double hpz_bytes;            /**< hpZ's secondary partition per rank (Ψ elements / group). */
} zsh_node_estimate_out_t;

/**
 * @brief Cross-node traffic per step with and without hpZ, and the memory of
 *        hpZ's secondary partition, for the model of zsh_optim_estimate().
 * @param in             The model.
 * @param ranks_per_node Ranks on each node; divides in->ranks.
 * @param hpz            ::ZSH_HPZ_AUTO (every rank of a node), ::ZSH_HPZ_OFF or 0 (off), or
 *                       a group size dividing @p ranks_per_node (stage 3 only).
 * @param[out] out       The estimate, set only on success.
 * @return ZSH_ERR_INVALID_ARG for a bad model or any of the above.
 */
zsh_status_t zsh_optim_estimate_nodes(const zsh_optim_estimate_in_t *in, int ranks_per_node,
                                      int hpz, zsh_node_estimate_out_t *out);

/** ZeRO++'s quantized traffic at stage 3 with hpZ, for zsh_optim_estimate_quant(). */
typedef struct zsh_quant_estimate_out {
    double cross_node_bytes_qwz; /**< Bytes per rank per step across nodes with hpZ and qwZ:
                                      forward's gather as int8 levels and a 4-byte scale per
                                      block (Ψ (1 + 4 / block)), the gradients' reduce-scatter
                                      in the precision (as comm_bytes counts them); with one
                                      rank per node (no hpZ group) backward's gather too. */
    double cross_node_bytes_qgz; /**< The same with qgZ too: the reduce-scatter's cross-node
                                      part is this rank's 1 / L of the node's partial sums in
                                      grad_bits levels with their scales
                                      (Ψ / L (grad_bits / 8 + 4 / block)). */
    double link_bytes_qwz;       /**< Bytes into each node's link per step with hpZ and qwZ
                                      ((nodes - 1) / nodes of each collective). */
    double link_bytes_qgz;       /**< The same with qgZ too. */
    double paper_m;              /**< cross_node_bytes_qgz in units of the fp16 model (2Ψ bytes),
                                      the ZeRO++ paper's M, whose ZeRO-3 moves 3M and ZeRO++
                                      0.75M per rank: 0.5M for int8 weights, 0.25M for int4
                                      gradients (here divided by L: the node sums in full
                                      precision first). */
} zsh_quant_estimate_out_t;

/**
 * @brief Cross-node traffic per step at stage 3 with hpZ and qwZ, and with
 *        qgZ too, for the model of zsh_optim_estimate().
 * @param in             The model; stage 3.
 * @param ranks_per_node L, ranks on each node; divides in->ranks, whose nodes must be 2 or more.
 * @param block          Elements per quantization block (1 to 1048576).
 * @param grad_bits      Bits of qgZ's levels: 8 or 4.
 * @param[out] out       The estimate, set only on success.
 * @return ZSH_ERR_INVALID_ARG for a bad model or any of the above.
 */
zsh_status_t zsh_optim_estimate_quant(const zsh_optim_estimate_in_t *in, int ranks_per_node,
                                      size_t block, int grad_bits, zsh_quant_estimate_out_t *out);

#ifdef __cplusplus
}
#endif

#endif /* ZEROSHARD_OPTIM_H_ */
