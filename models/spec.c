/*
 * Derived quantities of hardware and model specs (weights, KV bytes, pool).
 */
#include "models/spec.h"

#include <math.h>
#include <string.h>

#include "sim/core/error.h"

double spec_dtype_bytes(enum spec_dtype t)
{
    return t == SPEC_FP8 ? 1.0 : 2.0;
}

const char *const spec_dtype_names[] = {SPEC_DTYPES(SIM_XENUM_NAME) NULL};

const char *spec_dtype_name(enum spec_dtype t)
{
    return (unsigned)t < (unsigned)SPEC_DTYPE_N ? spec_dtype_names[t] : "?";
}

int spec_dtype_parse(const char *s, enum spec_dtype *out)
{
    for (int i = 0; spec_dtype_names[i]; i++)
        if (strcmp(s, spec_dtype_names[i]) == 0) {
            *out = (enum spec_dtype)i;
            return 0;
        }
    return -1;
}

double spec_embedding_params(const spec_model *m)
{
    double e = (double)m->vocab * (double)m->hidden;
    return m->tied_embeddings ? e : 2.0 * e;
}

double spec_weight_bytes(const spec_model *m, enum spec_dtype w)
{
    double emb = spec_embedding_params(m);
    /* Embedding and LM head stay in bf16 in fp8 checkpoints. */
    return (m->params - emb) * spec_dtype_bytes(w) + emb * 2.0;
}

double spec_kv_bytes_per_token(const spec_model *m, enum spec_dtype kv)
{
    return 2.0 * (double)m->layers * (double)m->kv_heads * (double)m->head_dim *
           spec_dtype_bytes(kv);
}

int spec_kv_pool(const spec_deploy *d, uint64_t *tokens, uint32_t *blocks)
{
    const double tp = (double)d->tp;
    double usable = d->hw->mem_bytes * tp * d->mem_util;
    double weights = spec_weight_bytes(d->model, d->weight_dtype);
    double pool = usable - weights - d->hw->reserve_bytes * tp;
    double per_tok = spec_kv_bytes_per_token(d->model, d->kv_dtype);
    double toks = floor(pool / per_tok);
    double nb = floor(toks / (double)d->block_size);
    if (pool <= 0 || nb < 1)
        return SIM_ERROR(SIM_EINVAL,
                         "%s with %s weights on %lld x %s at memory utilisation %.2f: "
                         "weights (%.1f GB) and reserve (%.1f GB) leave no KV pool "
                         "(%.2f GB of %.1f GB usable); expected a deployment whose weights "
                         "fit, e.g. more GPUs (cluster.tp) or fp8 weights",
                         d->model->name, spec_dtype_name(d->weight_dtype), (long long)d->tp,
                         d->hw->name, d->mem_util, weights / 1e9,
                         d->hw->reserve_bytes * tp / 1e9, pool / 1e9, usable / 1e9);
    if (nb > (double)UINT32_MAX - 1)
        nb = (double)UINT32_MAX - 1;
    *blocks = (uint32_t)nb;
    *tokens = (uint64_t)nb * (uint64_t)d->block_size;
    return SIM_OK;
}
