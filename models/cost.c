/*
 * Step-time models: coefficients are folded once per deployment so that a
 * step costs a handful of multiply-adds.  The roofline and the linear model
 * share one plain struct and cost_step_time switches on its kind (why a
 * switch and not a vtable: see cost.h).
 */
#include "models/cost.h"

#include <math.h>
#include <string.h>

const char *const cost_kind_names[] = {COST_KINDS(SIM_XENUM_NAME) NULL};

int cost_kind_parse(const char *name, enum cost_kind *out)
{
    for (int i = 0; cost_kind_names[i]; i++)
        if (strcmp(name, cost_kind_names[i]) == 0) {
            *out = (enum cost_kind)i;
            return 0;
        }
    return -1;
}

const char *cost_kind_name(enum cost_kind kind)
{
    return (unsigned)kind < (unsigned)COST_KIND_N ? cost_kind_names[kind] : "?";
}

void cost_linear_init(cost_model *m, const cost_linear *c)
{
    memset(m, 0, sizeof *m);
    m->kind = COST_LINEAR;
    m->linear = *c;
}

void cost_roofline_init(cost_model *m, const spec_deploy *d, const cost_params *p)
{
    const spec_model *md = d->model;
    const spec_hw *hw = d->hw;
    const double tp = (double)d->tp;
    const double peak_w = d->weight_dtype == SPEC_FP8 ? hw->peak_fp8_flops : hw->peak_bf16_flops;
    const double peak_a = hw->peak_bf16_flops;
    const double emb = spec_embedding_params(md);
    const double head_params = (double)md->vocab * (double)md->hidden;
    const double attn_width = (double)md->q_heads * (double)md->head_dim;
    const double L = (double)md->layers;
    const double bw = hw->hbm_bw * p->mbu;

    memset(m, 0, sizeof *m);
    m->kind = COST_ROOFLINE;
    m->lin_s_per_token = 2.0 * (md->params - emb) / tp / (peak_w * p->mfu);
    m->head_s_per_sample = 2.0 * head_params / tp / (peak_w * p->mfu);
    m->attn_s_per_unit = 4.0 * L * attn_width / tp / (peak_a * p->mfu);
    /* The input embedding is a gather (a few rows), not a full read. */
    m->weight_s = (spec_weight_bytes(md, d->weight_dtype) -
                   (md->tied_embeddings ? 0.0 : head_params * 2.0)) / tp / bw;
    m->kv_s_per_token = spec_kv_bytes_per_token(md, d->kv_dtype) / tp / bw;
    if (d->tp > 1) {
        double ops = 2.0 * L;
        double bytes_per_token = (double)md->hidden * 2.0;
        m->ar_s_per_token = ops * 2.0 * (tp - 1.0) / tp * bytes_per_token / hw->link_bw;
        m->ar_fixed_s = ops * p->allreduce_latency_s;
    } else {
        m->ar_s_per_token = 0.0;
        m->ar_fixed_s = 0.0;
    }
    m->overhead_s = p->step_overhead_s;
}

static inline double roofline_step(const cost_model *m, const cost_batch *b)
{
    const double n = (double)(b->prefill_tokens + b->decode_tokens);
    const double t_flop = m->lin_s_per_token * n + m->head_s_per_sample * (double)b->sampled +
                          m->attn_s_per_unit * (b->prefill_attn + (double)b->decode_ctx);
    const double t_mem = m->weight_s +
                         m->kv_s_per_token * ((double)b->prefill_ctx + (double)b->decode_ctx + n);
    return fmax(t_flop, t_mem) + m->ar_s_per_token * n + m->ar_fixed_s + m->overhead_s;
}

static inline double linear_step(const cost_linear *c, const cost_batch *b)
{
    return c->a_s + c->b_s_per_token * (double)b->prefill_tokens +
           c->c_s_per_attn * b->prefill_attn + c->d_s_per_decode * (double)b->decode_tokens +
           c->e_s_per_ctx * (double)b->decode_ctx;
}

double cost_step_time(const cost_model *m, const cost_batch *b)
{
    switch (m->kind) {
    case COST_LINEAR:
        return linear_step(&m->linear, b);
    case COST_ROOFLINE:
    default:
        return roofline_step(m, b);
    }
}
