/*
 * Roofline step-time model: coefficients are folded once per deployment so
 * that a step costs a handful of multiply-adds.
 */
#include "cost.h"

#include <math.h>

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

double cost_step_time(const cost_model *m, const cost_batch *b)
{
    const double n = (double)(b->prefill_tokens + b->decode_tokens);
    const double t_flop = m->lin_s_per_token * n + m->head_s_per_sample * (double)b->sampled +
                          m->attn_s_per_unit * (b->prefill_attn + (double)b->decode_ctx);
    const double t_mem = m->weight_s +
                         m->kv_s_per_token * ((double)b->prefill_ctx + (double)b->decode_ctx + n);
    return fmax(t_flop, t_mem) + m->ar_s_per_token * n + m->ar_fixed_s + m->overhead_s;
}
