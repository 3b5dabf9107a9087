/*
 * Hardware and LLM specifications, and what follows from them: weight
 * bytes, KV bytes per token and the KV-cache pool of one destination.
 *
 * Specs are read from YAML files in models/specs/ (see spec_load_*), each
 * constant with its public source in the file.  Nothing here is a free
 * constant: the KV pool is derived from GPU memory, utilisation, tensor
 * parallelism, weight and KV dtypes and a documented memory reserve, as in
 * docs/design.md §5.
 */
#ifndef CRSIM_MODELS_SPEC_H
#define CRSIM_MODELS_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/core/xenum.h"

/* Numeric formats of weights and KV cache, defined once (X-macro,
 * sim/core/xenum.h): X(constant, name).  The order is the enum value and the index a
 * SIM_CFG_ENUM key with spec_dtype_names as choices stores; append only. */
#define SPEC_DTYPES(X) X(SPEC_BF16, bf16) X(SPEC_FP16, fp16) X(SPEC_FP8, fp8)

/* SPEC_DTYPE_N is the number of formats. */
enum spec_dtype { SPEC_DTYPES(SIM_XENUM_CONST) SPEC_DTYPE_N };

/* Names of the formats by enum spec_dtype (from SPEC_DTYPES),
 * NULL-terminated: {"bf16", "fp16", "fp8", NULL}. */
extern const char *const spec_dtype_names[];

/* One GPU model.  All figures per GPU. */
typedef struct spec_hw {
    char *name;
    double peak_bf16_flops; /* dense BF16/FP16 tensor FLOP/s */
    double peak_fp8_flops;  /* dense FP8 tensor FLOP/s */
    double hbm_bw;          /* HBM bandwidth, bytes/s */
    double mem_bytes;       /* HBM capacity, bytes */
    double link_bw;         /* intra-node (NVLink) bandwidth, bytes/s per direction */
    double reserve_bytes;   /* memory not available to weights or KV: CUDA
                               context, NCCL buffers, activations, bytes */
    char *source;
} spec_hw;

/* One decoder-only transformer (Llama-style: GQA attention, gated MLP). */
typedef struct spec_model {
    char *name;
    int64_t layers;
    int64_t hidden;    /* model width d */
    int64_t q_heads;
    int64_t kv_heads;
    int64_t head_dim;
    int64_t ffn;       /* MLP intermediate size */
    int64_t vocab;
    double params;     /* total parameter count */
    bool tied_embeddings; /* input embedding shared with the LM head */
    char *source;
} spec_model;

/* One destination: a model served on `tp` GPUs of one kind. */
typedef struct spec_deploy {
    const spec_hw *hw;
    const spec_model *model;
    int64_t tp;                 /* tensor-parallel degree (GPUs) */
    enum spec_dtype weight_dtype;
    enum spec_dtype kv_dtype;
    double mem_util;            /* share of GPU memory the engine may use
                                   (vLLM gpu_memory_utilization, default 0.9) */
    int64_t block_size;         /* tokens per KV block */
} spec_deploy;

/* Bytes per element of a dtype (2, 2 or 1).  Cannot fail. */
double spec_dtype_bytes(enum spec_dtype t);

/* "bf16", "fp16" or "fp8"; "?" for an invalid value.  Cannot fail. */
const char *spec_dtype_name(enum spec_dtype t);

/* Parse "bf16", "fp16" or "fp8"; returns 0 on success, -1 otherwise. */
int spec_dtype_parse(const char *s, enum spec_dtype *out);

/* Parameters in the input embedding and LM head together (vocab × hidden,
 * once if tied, twice if not). */
double spec_embedding_params(const spec_model *m);

/* Total weight bytes of the model across all GPUs.  Quantised (fp8)
 * checkpoints quantise the linear layers only; the embedding and LM head
 * stay in bf16, as in the public FP8 checkpoints of Llama 3.x.  Bytes. */
double spec_weight_bytes(const spec_model *m, enum spec_dtype w);

/* KV-cache bytes per token over all layers and all GPUs:
 * 2 (K and V) × layers × kv_heads × head_dim × bytes(kv dtype).
 * Llama-3.3-70B: 2·80·8·128·1 = 163,840 B = 160 KiB at fp8. */
double spec_kv_bytes_per_token(const spec_model *m, enum spec_dtype kv);

/*
 * KV pool of one destination, docs/design.md §5:
 *   pool bytes  = mem_bytes·tp·mem_util − weight bytes − reserve_bytes·tp
 *   pool tokens = floor(pool bytes / KV bytes per token)
 *   blocks      = floor(pool tokens / block_size)
 * Writes the block count to *blocks and the usable pool in tokens
 * (blocks × block_size) to *tokens.  Returns SIM_OK, or SIM_EINVAL with a
 * message naming the model, GPU, TP and dtypes when the weights do not fit
 * or the pool has fewer blocks than one maximal request needs (< 1 block).
 */
int spec_kv_pool(const spec_deploy *d, uint64_t *tokens, uint32_t *blocks);

#endif
