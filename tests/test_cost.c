/*
 * Known-answer tests of the roofline step-time model (models/cost.h) and
 * the KV-pool derivation (spec_kv_pool), for Llama-3.3-70B on two
 * H100-SXM GPUs (TP = 2) with fp8 weights and fp8 KV cache.
 *
 * Every expected value is worked out by hand in the comments, from the
 * formula documented at cost_roofline_init and spec_kv_pool and from the
 * figures of models/specs/h100-sxm.yaml and llama-3.3-70b.yaml, then typed
 * in as a decimal (computed in exact rational arithmetic) and also
 * recomputed here from the raw figures, so a change of either the code or
 * the spec files is caught.  Usage: test_cost [SPEC_DIR] (default: the
 * build-time spec dir, as spec_path() resolves it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/cost.h"
#include "models/spec.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "check.h"

/*
 * HEADER/CODE DISCREPANCY (reported, not resolved here).  The header of
 * cost_roofline_init says the memory side reads "weights once"; cost.c
 * reads the weights minus the untied input embedding (vocab × hidden bf16
 * = 2,101,346,304 B), on the ground that the embedding is a gather of a
 * few rows.  Only the memory-bound batch (a) depends on it.  By default
 * this test pins what cost.c does (WEIGHTS_READ_PER_STEP below) and checks
 * that the header's reading gives exactly the larger value; build with
 * -DPIN_HEADER_WEIGHTS=1 to assert the header's formula instead (which
 * fails against the current cost.c).
 */
#ifndef PIN_HEADER_WEIGHTS
#define PIN_HEADER_WEIGHTS 0
#endif

#define REL 1e-9

/* ---- raw figures (spec files), checked against what the loader read ---- */
#define P_PARAMS 70553706496.0   /* Llama-3.3-70B total parameters */
#define VOCAB 128256.0
#define HIDDEN 8192.0
#define LAYERS 80.0
#define Q_HEADS 64.0
#define HEAD_DIM 128.0
#define PEAK_FP8 1979e12         /* FLOP/s per GPU, dense */
#define PEAK_BF16 989.5e12
#define HBM_BW 3.35e12           /* B/s per GPU */
#define LINK_BW 450e9            /* B/s per direction (NVLink 4) */
#define MEM_BYTES 85899345920.0  /* 80 GiB */
#define RESERVE 3.842e9          /* B per GPU */
#define TP 2.0

/*
 * Derived figures, by hand:
 *   E (embedding params, untied)  = 2 × 128,256 × 8,192 = 2,101,346,304
 *   P − E (linear params)         = 70,553,706,496 − 2,101,346,304
 *                                 = 68,452,360,192
 *   fp8 checkpoint bytes          = (P − E)·1 + E·2 = 68,452,360,192
 *                                   + 4,202,692,608 = 72,655,052,800 B
 *   KV bytes per token (fp8)      = 2 × 80 × 8 × 128 × 1 = 163,840 B
 *                                   (over both GPUs; 81,920 B per GPU)
 */
#define EMB (2.0 * VOCAB * HIDDEN)
#define W_BYTES_FP8 ((P_PARAMS - EMB) * 1.0 + EMB * 2.0)
#define KV_TOKEN 163840.0

static spec_hw hw;
static spec_model model;

static void load_specs(const char *dir)
{
    char path[4096];
    int rc;
    if (dir) {
        snprintf(path, sizeof path, "%s/h100-sxm.yaml", dir);
        rc = spec_hw_load(path, &hw);
    } else {
        rc = spec_hw_load("h100-sxm", &hw);
    }
    if (rc) {
        fprintf(stderr, "spec_hw_load: %s\n", sim_errmsg());
        exit(99);
    }
    if (dir) {
        snprintf(path, sizeof path, "%s/llama-3.3-70b.yaml", dir);
        rc = spec_model_load(path, &model);
    } else {
        rc = spec_model_load("llama-3.3-70b", &model);
    }
    if (rc) {
        fprintf(stderr, "spec_model_load: %s\n", sim_errmsg());
        exit(99);
    }
    /* The hand arithmetic below uses these figures: fail loudly if the spec
     * files change under it. */
    CHECK_REL(hw.peak_fp8_flops, PEAK_FP8, 1e-15);
    CHECK_REL(hw.peak_bf16_flops, PEAK_BF16, 1e-15);
    CHECK_REL(hw.hbm_bw, HBM_BW, 1e-15);
    CHECK_REL(hw.link_bw, LINK_BW, 1e-15);
    CHECK_REL(hw.mem_bytes, MEM_BYTES, 0);
    CHECK_REL(hw.reserve_bytes, RESERVE, 1e-15);
    CHECK_REL(model.params, P_PARAMS, 0);
    CHECK_INT_EQ(model.vocab, 128256);
    CHECK_INT_EQ(model.hidden, 8192);
    CHECK_INT_EQ(model.layers, 80);
    CHECK_INT_EQ(model.q_heads, 64);
    CHECK_INT_EQ(model.kv_heads, 8);
    CHECK_INT_EQ(model.head_dim, 128);
    CHECK(!model.tied_embeddings);
    CHECK_REL(spec_embedding_params(&model), 2101346304.0, 0);
    CHECK_REL(spec_weight_bytes(&model, SPEC_FP8), 72655052800.0, 0);
    CHECK_REL(spec_kv_bytes_per_token(&model, SPEC_FP8), KV_TOKEN, 0);
}

static spec_deploy deploy(int64_t tp, enum spec_dtype w, enum spec_dtype kv)
{
    return (spec_deploy){.hw = &hw, .model = &model, .tp = tp, .weight_dtype = w,
                         .kv_dtype = kv, .mem_util = 0.9, .block_size = 16};
}

/*
 * Coefficients of the model, per GPU (everything divided by TP = 2), with
 * mfu = 0.5 and mbu = 0.8:
 *
 *   linear time per token = 2·(P − E)/TP / (peak_fp8·mfu)
 *       = 2 × 68,452,360,192 / 2 / (1979e12 × 0.5)
 *       = 68,452,360,192 / 989.5e12              = 6.91787369297625e-05 s
 *   LM head per sampled sequence = 2·V·d/TP / (peak_fp8·mfu)
 *       = 2 × 128,256 × 8,192 / 2 / 989.5e12
 *       = 1,050,673,152 / 989.5e12              = 1.0618222860030318e-06 s
 *   attention per token² unit = 4·L·(H·h)/TP / (peak_bf16·mfu)
 *       = 4 × 80 × 8,192 / 2 / (989.5e12 × 0.5)
 *       = 1,310,720 / 494.75e12                  = 2.649257200606367e-09 s
 *   effective HBM bandwidth = 3.35e12 × 0.8       = 2.68e12 B/s
 *   weights per step (what cost.c reads: all but the untied input
 *   embedding V·d·2 = 2,101,346,304 B)
 *       = (72,655,052,800 − 2,101,346,304) / 2 / 2.68e12
 *       = 35,276,853,248 / 2.68e12               = 0.013163004943283582 s
 *   weights per step by the header ("weights once", all 72,655,052,800 B)
 *       = 36,327,526,400 / 2.68e12               = 0.013555047164179105 s
 *   KV per token = 163,840 / 2 / 2.68e12
 *       = 81,920 / 2.68e12                        = 3.056716417910448e-08 s
 *   all-reduce per token = 2 per layer × 80 layers × 2(tp−1)/tp × d·2 B
 *                          / link_bw
 *       = 160 × 1 × 16,384 / 450e9
 *       = 2,621,440 / 450e9                      = 5.825422222222222e-06 s
 *   all-reduce latency per step = 160 × 10e-6     = 1.6e-3 s
 *   overhead per step                             = 4.4e-3 s
 */
#define LIN_S ((P_PARAMS - EMB) / (PEAK_FP8 * 0.5))
#define HEAD_S (VOCAB * HIDDEN / (PEAK_FP8 * 0.5))
#define ATTN_S (4.0 * LAYERS * Q_HEADS * HEAD_DIM / TP / (PEAK_BF16 * 0.5))
#define BW_EFF (HBM_BW * 0.8)
#define W_S_CODE ((W_BYTES_FP8 - VOCAB * HIDDEN * 2.0) / TP / BW_EFF)
#define W_S_HEADER (W_BYTES_FP8 / TP / BW_EFF)
#define KV_S (KV_TOKEN / TP / BW_EFF)
#define AR_S (2.0 * LAYERS * (2.0 * (TP - 1.0) / TP) * HIDDEN * 2.0 / LINK_BW)
#define AR_FIXED (2.0 * LAYERS * 10e-6)
#define OVERHEAD 0.0044

#if PIN_HEADER_WEIGHTS
#define W_S W_S_HEADER
#else
#define W_S W_S_CODE
#endif

static double max2(double a, double b) { return a > b ? a : b; }

static void test_coefficients(const cost_model *m)
{
    CHECK_REL(LIN_S, 6.91787369297625e-05, 1e-14);
    CHECK_REL(HEAD_S, 1.0618222860030318e-06, 1e-14);
    CHECK_REL(ATTN_S, 2.649257200606367e-09, 1e-14);
    CHECK_REL(W_S_CODE, 0.013163004943283582, 1e-14);
    CHECK_REL(W_S_HEADER, 0.013555047164179105, 1e-14);
    CHECK_REL(KV_S, 3.056716417910448e-08, 1e-14);
    CHECK_REL(AR_S, 5.825422222222222e-06, 1e-14);

    CHECK_REL(m->lin_s_per_token, LIN_S, REL);
    CHECK_REL(m->head_s_per_sample, HEAD_S, REL);
    CHECK_REL(m->attn_s_per_unit, ATTN_S, REL);
    CHECK_REL(m->kv_s_per_token, KV_S, REL);
    CHECK_REL(m->ar_s_per_token, AR_S, REL);
    CHECK_REL(m->ar_fixed_s, AR_FIXED, REL);
    CHECK_REL(m->overhead_s, OVERHEAD, REL);
    /* The discrepancy: header minus code is exactly the input embedding,
     * 2,101,346,304 B / 2 / 2.68e12 = 3.9204222089552237e-04 s. */
    CHECK_REL(W_S_HEADER - W_S_CODE, 3.9204222089552237e-04, 1e-9);
    if (fabs(m->weight_s - W_S_HEADER) > REL * W_S_HEADER)
        printf("NOTE: cost.c streams %.6g s of weights per step; the header's "
               "\"weights once\" gives %.6g s (input embedding excluded in the "
               "code)\n", m->weight_s, W_S_HEADER);
    CHECK_REL(m->weight_s, W_S, REL);
}

/*
 * (a) 10 decodes, context 500 each (context counts the token being decoded,
 * as the engine's decode_ctx does).  N = 10, S = 10, Σctx = 5,000.
 *   compute = 10 × 6.91787e-05 + 10 × 1.06182e-06 + 5,000 × 2.64926e-09
 *           = 6.91787e-04 + 1.06182e-05 + 1.32463e-05   = 7.1565188e-04 s
 *   memory  = 0.0131630 + (5,000 + 10) × 3.05672e-08
 *           = 0.0131630 + 1.53141e-04                   = 0.0133161464 s
 *   memory-bound: 0.0133161 > 0.000716 (18.6×)
 *   t = 0.0133161464 + 10 × 5.82542e-06 + 1.6e-3 + 4.4e-3
 *     = 0.0133161464 + 5.82542e-05 + 0.006             = 0.019374400658043116 s
 *   (with the header's weights: 0.01976644287893864 s, +2.0 %)
 */
static void test_decode_batch(const cost_model *m)
{
    const cost_batch b = {.decode_tokens = 10, .sampled = 10, .decode_ctx = 5000};
    const double flop = 10 * LIN_S + 10 * HEAD_S + 5000 * ATTN_S;
    const double mem = W_S + (5000 + 10) * KV_S;
    CHECK(mem > flop);
    const double hand = max2(flop, mem) + 10 * AR_S + AR_FIXED + OVERHEAD;
    CHECK_REL(hand, PIN_HEADER_WEIGHTS ? 0.01976644287893864 : 0.019374400658043116, 1e-12);
    const double t = cost_step_time(m, &b);
    printf("(a) 10 decodes @ ctx 500:        model %.12f s  hand %.12f s  (memory-bound)\n",
           t, hand);
    CHECK_REL(t, hand, REL);
}

/*
 * (b) One prefill chunk of c = 8,192 tokens with p = 0 earlier tokens,
 * completing its prompt (so it samples one token: S = 1).
 *   Σc·(p + c/2) = 8,192 × 4,096 = 33,554,432 token²
 *   compute = 8,192 × 6.91787e-05 + 1 × 1.06182e-06 + 33,554,432 × 2.64926e-09
 *           = 0.566712 + 0.00000106 + 0.0888942            = 0.6556075953 s
 *   memory  = 0.0131630 + (0 + 8,192) × 3.05672e-08         = 0.0134134 s
 *   compute-bound (49×)
 *   t = 0.6556076 + 8,192 × 5.82542e-06 + 1.6e-3 + 4.4e-3
 *     = 0.6556076 + 0.0477219 + 0.006                      = 0.7093294541836016 s
 */
static void test_prefill_batch(const cost_model *m)
{
    const cost_batch b = {.prefill_tokens = 8192, .sampled = 1,
                          .prefill_attn = 8192.0 * (0 + 8192.0 / 2), .prefill_ctx = 0};
    const double flop = 8192 * LIN_S + 1 * HEAD_S + 33554432.0 * ATTN_S;
    const double mem = W_S + 8192 * KV_S;
    CHECK(flop > mem);
    const double hand = max2(flop, mem) + 8192 * AR_S + AR_FIXED + OVERHEAD;
    CHECK_REL(hand, 0.7093294541836016, 1e-12);
    const double t = cost_step_time(m, &b);
    printf("(b) prefill 8192 from scratch:   model %.12f s  hand %.12f s  (compute-bound)\n",
           t, hand);
    CHECK_REL(t, hand, REL);
}

/*
 * (c) Mixed: one chunk of c = 2,048 tokens after p = 4,096 earlier tokens
 * (a middle chunk: the prompt is longer, so it samples nothing) plus 32
 * decodes of context 3,000.  N = 2,080, S = 32.
 *   prefill attention  = 2,048 × (4,096 + 1,024) = 10,485,760 token²
 *   decode attention   = 32 × 3,000               =     96,000 token²
 *   compute = 2,080 × 6.91787e-05 + 32 × 1.06182e-06
 *             + (10,485,760 + 96,000) × 2.64926e-09
 *           = 0.1438918 + 0.0000340 + 0.0280338     = 0.17195955500214655 s
 *   KV read/written = Σp 4,096 + Σctx 96,000 + N 2,080 = 102,176 tokens
 *   memory  = 0.0131630 + 102,176 × 3.05672e-08
 *           = 0.0131630 + 0.0031232                  = 0.0162862355 s
 *   compute-bound (10.6×)
 *   t = 0.1719596 + 2,080 × 5.82542e-06 + 1.6e-3 + 4.4e-3
 *     = 0.1719596 + 0.0121169 + 0.006                = 0.19007643322436876 s
 */
static void test_mixed_batch(const cost_model *m)
{
    const cost_batch b = {.prefill_tokens = 2048, .decode_tokens = 32, .sampled = 32,
                          .prefill_attn = 2048.0 * (4096 + 2048.0 / 2), .prefill_ctx = 4096,
                          .decode_ctx = 32 * 3000};
    const double flop = 2080 * LIN_S + 32 * HEAD_S + (10485760.0 + 96000.0) * ATTN_S;
    const double mem = W_S + (4096 + 96000 + 2080) * KV_S;
    CHECK(flop > mem);
    const double hand = max2(flop, mem) + 2080 * AR_S + AR_FIXED + OVERHEAD;
    CHECK_REL(hand, 0.19007643322436876, 1e-12);
    const double t = cost_step_time(m, &b);
    printf("(c) 2048 after 4096 + 32 decodes: model %.12f s  hand %.12f s  (compute-bound)\n",
           t, hand);
    CHECK_REL(t, hand, REL);
}

/* With tp = 1 there is no all-reduce term at all (header: "none when
 * tp = 1"). */
static void test_tp1_no_allreduce(const cost_params *p)
{
    const spec_deploy d = deploy(1, SPEC_FP8, SPEC_FP8);
    cost_model m;
    cost_roofline_init(&m, &d, p);
    CHECK(m.ar_s_per_token == 0.0);
    CHECK(m.ar_fixed_s == 0.0);
    CHECK_REL(m.lin_s_per_token, 2.0 * LIN_S, REL);
}

/*
 * KV pool of the fp8/fp8 TP = 2 deployment, mem_util 0.9, block 16:
 *   usable  = 2 × 85,899,345,920 × 0.9              = 154,618,822,656 B
 *   weights = (70,553,706,496 − 2,101,346,304) × 1
 *             + 2,101,346,304 × 2                   =  72,655,052,800 B
 *   reserve = 2 × 3.842e9                           =   7,684,000,000 B
 *   pool    = 154,618,822,656 − 72,655,052,800 − 7,684,000,000
 *                                                   =  74,279,769,856 B
 *   tokens  = floor(74,279,769,856 / 163,840) = floor(453,367.73) = 453,367
 *   blocks  = floor(453,367 / 16) = floor(28,335.4)  = 28,335
 *   usable tokens reported = 28,335 × 16            = 453,360
 */
static void test_kv_pool(void)
{
    spec_deploy d = deploy(2, SPEC_FP8, SPEC_FP8);
    uint64_t tokens = 0;
    uint32_t blocks = 0;
    CHECK_INT_EQ(spec_kv_pool(&d, &tokens, &blocks), SIM_OK);
    printf("KV pool fp8 weights, fp8 KV, TP=2: %u blocks, %llu tokens\n", blocks,
           (unsigned long long)tokens);
    CHECK_INT_EQ(blocks, 28335);
    CHECK_U64_EQ(tokens, 453360);

    /*
     * fp16 weights (all 70,553,706,496 params × 2 = 141,107,412,992 B):
     *   pool = 154,618,822,656 − 141,107,412,992 − 7,684,000,000
     *        = 5,827,409,664 B
     *   fp8 KV:  floor(5,827,409,664 / 163,840) = 35,567 tokens
     *            → 2,222 blocks → 35,552 tokens
     *   fp16 KV: floor(5,827,409,664 / 327,680) = 17,783 tokens
     *            → 1,111 blocks → 17,776 tokens
     * i.e. tens of thousands of tokens instead of 453,360: a dozen 3k-token
     * conversations, not a prefix cache.
     */
    d = deploy(2, SPEC_FP16, SPEC_FP8);
    CHECK_INT_EQ(spec_kv_pool(&d, &tokens, &blocks), SIM_OK);
    printf("KV pool fp16 weights, fp8 KV, TP=2: %u blocks, %llu tokens\n", blocks,
           (unsigned long long)tokens);
    CHECK_INT_EQ(blocks, 2222);
    CHECK_U64_EQ(tokens, 35552);
    d = deploy(2, SPEC_FP16, SPEC_FP16);
    CHECK_INT_EQ(spec_kv_pool(&d, &tokens, &blocks), SIM_OK);
    CHECK_INT_EQ(blocks, 1111);
    CHECK_U64_EQ(tokens, 17776);

    /*
     * Impossible: TP = 1 with fp16 weights.
     *   usable = 85,899,345,920 × 0.9 = 77,309,411,328 B
     *   pool   = 77,309,411,328 − 141,107,412,992 − 3,842,000,000
     *          = −67,640,001,664 B  < 0  → SIM_EINVAL naming the model.
     */
    d = deploy(1, SPEC_FP16, SPEC_FP8);
    CHECK_INT_EQ(spec_kv_pool(&d, &tokens, &blocks), SIM_EINVAL);
    printf("TP=1 fp16: %s\n", sim_errmsg());
    CHECK_STR_CONTAINS(sim_errmsg(), "Llama-3.3-70B");
    CHECK_STR_CONTAINS(sim_errmsg(), "fp16");
    CHECK_STR_CONTAINS(sim_errmsg(), "H100-SXM");
}

int main(int argc, char **argv)
{
    load_specs(argc > 1 ? argv[1] : NULL);
    const cost_params p = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 0.0044,
                           .allreduce_latency_s = 10e-6};
    const spec_deploy d = deploy(2, SPEC_FP8, SPEC_FP8);
    cost_model m;
    cost_roofline_init(&m, &d, &p);
    test_coefficients(&m);
    test_decode_batch(&m);
    test_prefill_batch(&m);
    test_mixed_batch(&m);
    test_tp1_no_allreduce(&p);
    test_kv_pool();
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    return 0;
}
