/*
 * Engine tests on hand-checkable scenarios: a lone request's TTFT and E2E
 * equal the sum of its step times; a second identical prompt hits the
 * cached prefix (full blocks only, at least one token recomputed); a pool
 * too small for two requests preempts the later one and still completes
 * both; a request larger than the pool is rejected; pinned prompt blocks
 * of a running request are shared by a concurrent identical request;
 * steady decoders hold exactly the blocks of their computed tokens when
 * brought up to date, whatever the phase of their block ticks, also when
 * a crash interrupts a step; long_prefill_token_threshold bounds short
 * prompts' TTFT behind a 64k-token prompt; the SGLang flavour's batches,
 * prefix-cache timing and waiting-queue order against hand-computed
 * schedules.
 */
#include <stdlib.h>

#include "models/engine.h"
#include "check.h"

typedef struct log_ctx {
    int firsts, finishes;
    double first_t[8], finish_t[8];
    int rejected;
} log_ctx;

static void hk_first(void *ctx, uint32_t dest, engine_req *er, double t)
{
    log_ctx *l = ctx;
    (void)dest;
    l->first_t[er->r->id] = t;
    l->firsts++;
}

static void hk_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    log_ctx *l = ctx;
    (void)dest;
    l->finish_t[er->r->id] = t;
    l->finishes++;
    l->rejected += er->rejected;
}

/* A cost model where a step costs 1 ms + 1 µs per token: easy to sum. */
static cost_model simple_cost(void)
{
    cost_model m = {0};
    m.lin_s_per_token = 1e-6;
    m.overhead_s = 1e-3;
    return m;
}

static wl_request make_req(uint64_t id, uint32_t prompt, uint32_t out, uint32_t bs, uint64_t salt)
{
    wl_request r = {.id = id, .prompt_tokens = prompt, .output_tokens = out};
    r.n_blocks = prompt / bs;
    r.blocks = malloc((r.n_blocks ? r.n_blocks : 1) * sizeof *r.blocks);
    uint64_t parent = 0;
    for (uint32_t j = 0; j < r.n_blocks; j++)
        parent = r.blocks[j] = wl_block_hash(parent, salt * 1000 + j);
    return r;
}

/* Drive one engine until idle; returns the end time. */
static double drain(engine *e, double t)
{
    double d;
    while ((d = engine_try_start(e, t)) > 0) {
        t += d;
        engine_step_done(e, t);
    }
    return t;
}


/* An engine with the simple cost model and the logging hooks. */
static engine *new_engine(log_ctx *l, uint32_t n_blocks, uint32_t budget, uint32_t max_seqs,
                          bool caching)
{
    engine_hooks h = {.ctx = l, .first_token = hk_first, .finish = hk_finish};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = budget,
                       .max_num_seqs = max_seqs, .prefix_caching = caching};
    cost_model cm = simple_cost();
    return engine_create(0, n_blocks, &p, &cm, &h);
}

/* Free a test request (the engine keeps nothing of it after finishing:
 * its blocks are only counts in the cache). */
static void free_req(wl_request *r, engine_req *er)
{
    wl_request_fini(r);
    CHECK(er->nblk == 0 && er->kv.node == 0 && er->kv.n_priv == 0);
}

static void test_lone_request(void)
{
    log_ctx l = {0};
    engine *e = new_engine(&l, 1000, 100, 8, true);
    wl_request r = make_req(0, 250, 4, 16, 1);
    engine_req er = {.r = &r};
    engine_submit(e, &er, 0.0);
    double end = drain(e, 0.0);
    /* Prefill 250 tokens in chunks of 100, 100, 50: three steps of
     * 1 ms + 100/100/50 µs = 3.25 ms; the third emits token 1.  Then 3
     * decode steps of 1.001 ms emit tokens 2..4. */
    CHECK_NEAR(l.first_t[0], 0.003 + 250e-6, 1e-12);
    CHECK_NEAR(end, 0.003 + 250e-6 + 3 * 0.001001, 1e-12);
    CHECK_NEAR(l.finish_t[0], end, 0);
    const engine_stats *st = engine_get_stats(e);
    CHECK_INT_EQ(st->steps, 6);
    CHECK_INT_EQ(st->prefill_tokens, 250);
    CHECK_INT_EQ(st->decode_tokens, 3);
    CHECK_INT_EQ(st->hit_tokens, 0);
    /* 250 tokens -> 15 full blocks registered, all unpinned now. */
    CHECK_INT_EQ(pcache_cached(engine_cache(e)), 15);
    CHECK_INT_EQ(pcache_pinned(engine_cache(e)), 0);
    pcache_check(engine_cache(e));

    /* The same prompt again hits all 15 full blocks (240 tokens), computes
     * the last 10 tokens in one step. */
    wl_request r2 = make_req(1, 250, 1, 16, 1);
    engine_req er2 = {.r = &r2};
    engine_submit(e, &er2, end);
    double end2 = drain(e, end);
    CHECK_INT_EQ(er2.hit_tokens, 240);
    CHECK_NEAR(end2 - end, 0.001 + 10e-6, 1e-12);
    /* A prompt of exactly 256 tokens = 16 full blocks, fully cached after a
     * first run, still recomputes its last block (vLLM keeps >= 1 token). */
    wl_request r3 = make_req(2, 256, 1, 16, 7);
    engine_req er3 = {.r = &r3};
    engine_submit(e, &er3, end2);
    double end3 = drain(e, end2);
    wl_request r4 = make_req(3, 256, 1, 16, 7);
    engine_req er4 = {.r = &r4};
    engine_submit(e, &er4, end3);
    drain(e, end3);
    CHECK_INT_EQ(er4.hit_tokens, 240);
    CHECK_INT_EQ(l.finishes, 4);
    CHECK_INT_EQ(engine_inflight(e), 0);
    pcache_check(engine_cache(e));
    engine_destroy(e);
    free_req(&r, &er);
    free_req(&r2, &er2);
    free_req(&r3, &er3);
    free_req(&r4, &er4);
}

static void test_preemption_and_reject(void)
{
    log_ctx l = {0};
    /* 10 blocks = 160 tokens.  Two requests of 64 prompt + 60 output
     * tokens each need up to 8 blocks each: they fit together at the start
     * (4 + 4 blocks) but not at the end, so the later one is preempted and
     * recomputed after the first finishes. */
    engine *e = new_engine(&l, 10, 1000, 8, false);
    wl_request a = make_req(0, 64, 60, 16, 1), b = make_req(1, 64, 60, 16, 2);
    wl_request big = make_req(2, 150, 20, 16, 3); /* needs 11 blocks > 10 */
    engine_req ea = {.r = &a}, eb = {.r = &b}, ebig = {.r = &big};
    engine_submit(e, &ea, 0);
    engine_submit(e, &eb, 0);
    engine_submit(e, &ebig, 0);
    drain(e, 0);
    CHECK_INT_EQ(l.finishes, 3);
    CHECK_INT_EQ(l.rejected, 1);
    CHECK(ebig.rejected);
    CHECK(!ea.rejected && !eb.rejected);
    CHECK(eb.preemptions >= 1);
    CHECK_INT_EQ(ea.preemptions, 0);
    CHECK(l.finish_t[1] > l.finish_t[0]);
    const engine_stats *st = engine_get_stats(e);
    CHECK_INT_EQ(st->rejected, 1);
    /* Recompute: b's prefill work exceeds its prompt. */
    CHECK(st->prefill_tokens > 128);
    CHECK_INT_EQ(pcache_pinned(engine_cache(e)), 0);
    pcache_check(engine_cache(e));
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
    free_req(&big, &ebig);
}

static void test_queued_tokens(void)
{
    log_ctx l = {0};
    engine *e = new_engine(&l, 100, 64, 1, true);
    wl_request a = make_req(0, 100, 2, 16, 1), b = make_req(1, 50, 2, 16, 2);
    engine_req ea = {.r = &a}, eb = {.r = &b};
    engine_submit(e, &ea, 0);
    engine_submit(e, &eb, 0);
    CHECK_INT_EQ(engine_queued_tokens(e), 150);
    double t = engine_try_start(e, 0);
    engine_step_done(e, t); /* a: 64 of 100 computed */
    CHECK_INT_EQ(engine_queued_tokens(e), 36 + 50);
    drain(e, t);
    CHECK_INT_EQ(engine_queued_tokens(e), 0);
    CHECK_INT_EQ(l.finishes, 2);
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
}

/* Withdrawing never-started requests (for routers that rebalance queued
 * work): only waiting requests that were never admitted can leave. */
static void test_withdraw(void)
{
    log_ctx l = {0};
    engine *e = new_engine(&l, 100, 64, 1, true);
    wl_request a = make_req(0, 100, 2, 16, 1), b = make_req(1, 50, 2, 16, 2);
    engine_req ea = {.r = &a}, eb = {.r = &b};
    engine_submit(e, &ea, 0);
    engine_submit(e, &eb, 0);
    double t = engine_try_start(e, 0); /* admits a only (max_num_seqs 1) */
    engine_req *w[4];
    CHECK_INT_EQ(engine_waiting(e, w, 4), 1);
    CHECK(w[0] == &eb);
    CHECK_INT_EQ(engine_withdraw(e, &ea), 0); /* started */
    CHECK_INT_EQ(engine_withdraw(e, &eb), 1);
    CHECK_INT_EQ(engine_withdraw(e, &eb), 0); /* already gone */
    CHECK_INT_EQ(engine_inflight(e), 1);
    CHECK_INT_EQ(engine_queued_tokens(e), 100); /* a scheduled, not yet computed; b gone */
    engine_step_done(e, t);
    drain(e, t);
    CHECK_INT_EQ(l.finishes, 1);
    CHECK_INT_EQ(engine_get_stats(e)->requests, 1);
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
}

/* Generated-output blocks with known hashes enter the cache as they fill,
 * so the next turn of a conversation (prompt = previous prompt + output +
 * new input) hits past the previous prompt. */
static void test_output_blocks(void)
{
    log_ctx l = {0};
    engine *e = new_engine(&l, 100, 1000, 8, true);
    /* Turn 1: 64 prompt + 40 output tokens; hashes for all 6 full blocks
     * of the 104-token sequence (blocks 4 and 5 hold output). */
    wl_request a = make_req(0, 104, 1, 16, 3);
    a.prompt_tokens = 64;
    a.output_tokens = 40;
    engine_req ea = {.r = &a};
    engine_submit(e, &ea, 0);
    double t = drain(e, 0);
    /* KV exists for 64 + 39 tokens: 6 full blocks, all registered. */
    CHECK_INT_EQ(pcache_cached(engine_cache(e)), 6);
    /* Turn 2: the same 104 tokens + 30 new: hits all 6 blocks (96 tokens). */
    wl_request b = make_req(1, 134, 1, 16, 3);
    b.output_tokens = 1;
    engine_req eb = {.r = &b};
    engine_submit(e, &eb, t);
    drain(e, t);
    CHECK_INT_EQ(eb.hit_tokens, 96);
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
}

/* engine_foreach callback: every running request holds exactly the KV
 * blocks of its computed tokens (steady decoders' blocks are counted per
 * phase while they decode and credited when engine_foreach brings them up
 * to date); sums them. */
typedef struct blk_ctx {
    uint64_t held;
    int running;
} blk_ctx;

static void check_blocks(void *ctx, engine_req *er)
{
    blk_ctx *b = ctx;
    if (er->computed == 0)
        return; /* waiting, nothing held */
    CHECK_INT_EQ(er->nblk, (er->computed + 15) / 16);
    CHECK_INT_EQ(er->kv.n_tree + er->kv.n_priv, er->nblk);
    b->held += er->nblk;
    b->running++;
}

/* Five requests, submitted at t = 0, whose block ticks fall in different
 * phases of block_size 16 (prompts 20..81 tokens) and that decode 33..120
 * tokens together; `salt` makes their prompts distinct from other
 * tests'. */
static void submit_phases(engine *e, wl_request r[5], engine_req er[5], uint64_t salt)
{
    static const uint32_t prompt[5] = {20, 37, 50, 64, 81}, out[5] = {70, 90, 45, 120, 33};
    for (int i = 0; i < 5; i++) {
        r[i] = make_req((uint64_t)i, prompt[i], out[i], 16, salt + (uint64_t)i);
        er[i] = (engine_req){.r = &r[i]};
        engine_submit(e, &er[i], 0.0);
    }
}

static void test_steady_blocks(void)
{
    /* The five requests of submit_phases decode together; every 7 steps
     * the running ones are brought up to date and their blocks checked
     * against the pool's pinned count (distinct prompts: nothing shared).
     * Then all finish and the pool holds nothing. */
    log_ctx l = {0};
    engine *e = new_engine(&l, 1000, 4096, 8, true);
    wl_request r[5];
    engine_req er[5];
    submit_phases(e, r, er, 11);
    double t = 0, d;
    int steps = 0, checks = 0;
    while ((d = engine_try_start(e, t)) > 0) {
        t += d;
        engine_step_done(e, t);
        if (++steps % 7 == 0) {
            blk_ctx b = {0};
            engine_foreach(e, check_blocks, &b);
            CHECK_INT_EQ(b.held, pcache_pinned(engine_cache(e)));
            CHECK_INT_EQ(engine_kv_used_blocks(e), b.held);
            checks += b.running > 0;
            pcache_check(engine_cache(e));
        }
    }
    CHECK(checks >= 15); /* 120 output tokens: checked through the decode */
    CHECK_INT_EQ(l.finishes, 5);
    CHECK_INT_EQ(pcache_pinned(engine_cache(e)), 0);
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(l.finish_t[i] > 0, 1, 0);
    pcache_check(engine_cache(e));
    engine_destroy(e);
    for (int i = 0; i < 5; i++)
        free_req(&r[i], &er[i]);
}

static void count_lost(void *ctx, engine_req *er)
{
    (void)er;
    (*(int *)ctx)++;
}

static void test_steady_crash(void)
{
    /* A crash in the middle of a step, at each of 16 consecutive steps of
     * the decode (every phase of the steady decoders' block ticks): the
     * blocks the step in progress took for them are theirs, so the crash
     * leaves the pool with nothing pinned; the same when idle. */
    for (int crash_at = 20; crash_at < 36 + 2; crash_at++) {
        log_ctx l = {0};
        engine *e = new_engine(&l, 1000, 4096, 8, true);
        wl_request r[5];
        engine_req er[5];
        submit_phases(e, r, er, 21);
        double t = 0, d = 0;
        for (int step = 0; step < crash_at && (d = engine_try_start(e, t)) > 0; step++) {
            t += d;
            engine_step_done(e, t);
        }
        const bool mid = crash_at < 36; /* the last two crash between steps */
        if (mid)
            CHECK(engine_try_start(e, t) > 0); /* a step in progress */
        int lost = 0;
        CHECK_INT_EQ(engine_crash(e, false, count_lost, &lost), (uint32_t)lost);
        CHECK(lost >= 4);
        CHECK_INT_EQ(pcache_pinned(engine_cache(e)), 0);
        pcache_check(engine_cache(e));
        engine_destroy(e);
        for (int i = 0; i < 5; i++) {
            wl_request_fini(&r[i]);
            CHECK(er[i].nblk == 0 && er[i].kv.n_priv == 0);
        }
    }
}

/* One 64k-token prompt (65,536 tokens, 2 output tokens) at t = 0 and four
 * 100-token prompts (2 output tokens) at t = 20 ms share an engine with
 * budget 8,192 tokens; a step costs 1 ms + 1 us per token.  Returns the
 * short prompts' TTFT (all four equal) and the long one's in *long_ttft. */
static double long_and_short(uint32_t threshold, double *long_ttft)
{
    log_ctx l = {0};
    engine_hooks h = {.ctx = &l, .first_token = hk_first, .finish = hk_finish};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = 8192, .max_num_seqs = 8,
                       .prefix_caching = true, .long_prefill_token_threshold = threshold};
    cost_model cm = simple_cost();
    engine *e = engine_create(0, 5000, &p, &cm, &h);
    wl_request r[5];
    engine_req er[5];
    r[0] = make_req(0, 65536, 2, 16, 40);
    for (int i = 1; i < 5; i++)
        r[i] = make_req((uint64_t)i, 100, 2, 16, 40 + (uint64_t)i);
    for (int i = 0; i < 5; i++)
        er[i] = (engine_req){.r = &r[i]};
    engine_submit(e, &er[0], 0.0);
    const double t_short = 0.020;
    bool submitted = false;
    double t = 0, d;
    for (;;) {
        if (!submitted && t >= t_short) { /* they wait for the step in progress */
            for (int i = 1; i < 5; i++)
                engine_submit(e, &er[i], t_short);
            submitted = true;
        }
        if ((d = engine_try_start(e, t)) <= 0)
            break;
        t += d;
        engine_step_done(e, t);
    }
    CHECK_INT_EQ(l.finishes, 5);
    for (int i = 2; i < 5; i++)
        CHECK_NEAR(l.first_t[i], l.first_t[1], 0);
    *long_ttft = l.first_t[0];
    engine_destroy(e);
    for (int i = 0; i < 5; i++)
        free_req(&r[i], &er[i]);
    return l.first_t[1] - t_short;
}

static void test_long_prefill_threshold(void)
{
    double long_ttft;
    /* Off (vLLM's default): the long prompt takes the whole budget, 8
     * steps of 1 ms + 8,192 us = 9.192 ms; the short prompts arrive during
     * step 3 and are admitted in step 9, beside the long one's first
     * decode: 1 ms + (1 + 400) us.  TTFT = 8 x 9.192 + 1.401 - 20 ms. */
    double ttft = long_and_short(0, &long_ttft);
    CHECK_NEAR(ttft, 8 * 0.009192 + 0.001401 - 0.020, 1e-12);
    CHECK_NEAR(long_ttft, 8 * 0.009192, 1e-12);
    /* Threshold 2,048: the long prompt takes 2,048 tokens a step (3.048
     * ms); the short ones arrive during step 7 (18.288-21.336 ms) and are
     * all prefilled in step 8 beside its chunk: 1 ms + 2,448 us.  Their
     * TTFT is bounded by one threshold step in progress plus one step of
     * threshold + their tokens, not by the long prefill (~74 ms). */
    ttft = long_and_short(2048, &long_ttft);
    CHECK_NEAR(ttft, 7 * 0.003048 + 0.003448 - 0.020, 1e-12);
    CHECK(ttft <= 0.003048 + 0.003448);
    /* The long prompt: 32 chunks; step 9 also holds the four decodes
     * (1 ms + 2,052 us), the rest 1 ms + 2,048 us. */
    CHECK_NEAR(long_ttft, 30 * 0.003048 + 0.003448 + 0.003052, 1e-12);
    /* A threshold above the budget changes nothing. */
    double ttft_big = long_and_short(100000, &long_ttft);
    CHECK_NEAR(ttft_big, 8 * 0.009192 + 0.001401 - 0.020, 1e-12);
}

/* An engine of flavour `fl` with the simple cost model and the logging
 * hooks, budget 1,000 tokens (no chunking below), 8 running at most. */
static engine *flavor_engine(log_ctx *l, enum engine_flavor fl, enum engine_policy pol,
                             uint32_t max_seqs)
{
    engine_hooks h = {.ctx = l, .first_token = hk_first, .finish = hk_finish};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = 1000,
                       .max_num_seqs = max_seqs, .prefix_caching = true, .flavor = fl,
                       .policy = pol};
    cost_model cm = simple_cost();
    return engine_create(0, 1000, &p, &cm, &h);
}

/* Submit `er` at `at` if the engine's clock `t` has reached it. */
static void submit_due(engine *e, engine_req *er, double at, double t, bool *done)
{
    if (!*done && t >= at) {
        engine_submit(e, er, at);
        *done = true;
    }
}

/* A (160 tokens, 4 out) at 0; B and C (A's 10 blocks + 16 tokens, 1 out)
 * at 0.5 ms and 1.5 ms, during A's and B's steps.  vLLM (crsim): a prefix
 * is matchable from the step after the one that computed it, and prefill
 * and decodes share a step.  SGLang: A's prefix enters the cache after
 * step 2 is formed, so B recomputes it and C (step 3) hits it; B's and
 * C's prefill batches hold A's decode back. */
static void test_same_prefix(enum engine_flavor fl)
{
    log_ctx l = {0};
    engine *e = flavor_engine(&l, fl, ENGINE_FCFS, 8);
    wl_request a = make_req(0, 160, 4, 16, 1), b = make_req(1, 176, 1, 16, 1),
               c = make_req(2, 176, 1, 16, 1);
    engine_req ea = {.r = &a}, eb = {.r = &b}, ec = {.r = &c};
    engine_submit(e, &ea, 0);
    bool sb = false, sc = false;
    double t = 0, d;
    for (;;) {
        submit_due(e, &eb, 0.0005, t, &sb);
        submit_due(e, &ec, 0.0015, t, &sc);
        if ((d = engine_try_start(e, t)) <= 0)
            break;
        t += d;
        engine_step_done(e, t);
    }
    CHECK_INT_EQ(l.finishes, 3);
    CHECK_NEAR(l.first_t[0], 0.001160, 1e-12); /* step 1: A's 160 tokens */
    if (fl == ENGINE_VLLM) {
        /* Step 2: A's decode + B's 16 (hit 160): 1.017 ms; step 3 the
         * same with C; step 4 A's last decode. */
        CHECK_INT_EQ(eb.hit_tokens, 160);
        CHECK_INT_EQ(ec.hit_tokens, 160);
        CHECK_NEAR(l.first_t[1], 0.001160 + 0.001017, 1e-12);
        CHECK_NEAR(l.first_t[2], 0.001160 + 2 * 0.001017, 1e-12);
        CHECK_NEAR(l.finish_t[0], 0.001160 + 2 * 0.001017 + 0.001001, 1e-12);
    } else {
        /* Step 2: B alone, all 176 tokens (A's blocks not yet cached);
         * step 3: C alone, hit 160, 16 tokens; steps 4-6: A's decodes. */
        CHECK_INT_EQ(eb.hit_tokens, 0);
        CHECK_INT_EQ(ec.hit_tokens, 160);
        CHECK_NEAR(l.first_t[1], 0.001160 + 0.001176, 1e-12);
        CHECK_NEAR(l.first_t[2], 0.001160 + 0.001176 + 0.001016, 1e-12);
        CHECK_NEAR(l.finish_t[0], 0.001160 + 0.001176 + 0.001016 + 3 * 0.001001, 1e-12);
    }
    CHECK_INT_EQ(pcache_pinned(engine_cache(e)), 0);
    pcache_check(engine_cache(e));
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
    free_req(&c, &ec);
}

/* SGLang's waiting-queue order, one request running at a time: after W
 * (salt 5, 10 blocks) is cached, X1 (salt 9, 64 tokens), X2 (salt 5, 96),
 * X3 (salt 5, 176) and X4 (salt 9, 80: X1's 4 blocks + 1) wait.  fcfs
 * admits them as they came; lpm by cached prefix, longest first (X3: 160
 * tokens, X2: 80, X1: 0), X4 last: it matches nothing cached but shares
 * 64 >= 32 tokens with X1 ahead of it (the in-batch prefix check). */
static void test_queue_order(enum engine_policy pol)
{
    log_ctx l = {0};
    engine *e = flavor_engine(&l, ENGINE_SGLANG, pol, 1);
    wl_request w = make_req(5, 160, 1, 16, 5);
    engine_req ew = {.r = &w};
    engine_submit(e, &ew, 0);
    double t = drain(e, 0);
    wl_request x[4] = {make_req(0, 64, 1, 16, 9), make_req(1, 96, 1, 16, 5),
                       make_req(2, 176, 1, 16, 5), make_req(3, 80, 1, 16, 9)};
    engine_req ex[4];
    for (int i = 0; i < 4; i++) {
        ex[i] = (engine_req){.r = &x[i]};
        engine_submit(e, &ex[i], t);
    }
    drain(e, t);
    CHECK_INT_EQ(l.finishes, 5);
    static const int fcfs[4] = {0, 1, 2, 3}, lpm[4] = {2, 1, 0, 3};
    const int *order = pol == ENGINE_LPM ? lpm : fcfs;
    for (int k = 1; k < 4; k++)
        CHECK(l.first_t[order[k - 1]] < l.first_t[order[k]]);
    /* Each prefill alone: 1 ms + its uncached tokens. */
    if (pol == ENGINE_LPM) {
        CHECK_INT_EQ(ex[2].hit_tokens, 160);
        CHECK_INT_EQ(ex[1].hit_tokens, 80);
        CHECK_INT_EQ(ex[3].hit_tokens, 64); /* after X1 computed the shared blocks */
        CHECK_NEAR(l.first_t[2] - t, 0.001016, 1e-12);
        CHECK_NEAR(l.first_t[3] - t, 0.001016 + 0.001016 + 0.001064 + 0.001016, 1e-12);
    }
    engine_destroy(e);
    free_req(&w, &ew);
    for (int i = 0; i < 4; i++)
        free_req(&x[i], &ex[i]);
}

typedef struct order_ctx {
    int n, pos; /* first tokens so far; rank of request id 999 */
} order_ctx;

static void ord_first(void *ctx, uint32_t dest, engine_req *er, double t)
{
    order_ctx *o = ctx;
    (void)dest, (void)t;
    o->n++;
    if (er->r->id == 999)
        o->pos = o->n;
}

static void ord_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    (void)ctx, (void)dest, (void)er, (void)t;
}

/* lpm falls back to FCFS while more than 128 requests wait: 129 distinct
 * 32-token prompts, then one whose 10 blocks are cached, one running at
 * a time.  The queue is 130 and 129 long at the first two admissions
 * (FCFS: fillers 0 and 1), 128 at the third: the cached one goes first. */
static void test_lpm_fallback(void)
{
    order_ctx o = {0};
    engine_hooks h = {.ctx = &o, .first_token = ord_first, .finish = ord_finish};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = 1000, .max_num_seqs = 1,
                       .prefix_caching = true, .flavor = ENGINE_SGLANG, .policy = ENGINE_LPM};
    cost_model cm = simple_cost();
    engine *e = engine_create(0, 2000, &p, &cm, &h);
    wl_request w = make_req(998, 160, 1, 16, 5);
    engine_req ew = {.r = &w};
    engine_submit(e, &ew, 0);
    double t = drain(e, 0);
    enum { N = 130 };
    wl_request *r = malloc(N * sizeof *r);
    engine_req *er = malloc(N * sizeof *er);
    for (int i = 0; i < N; i++) {
        r[i] = i < N - 1 ? make_req((uint64_t)i, 32, 1, 16, 100 + (uint64_t)i)
                         : make_req(999, 176, 1, 16, 5);
        er[i] = (engine_req){.r = &r[i]};
        engine_submit(e, &er[i], t);
    }
    drain(e, t);
    CHECK_INT_EQ(o.n, N + 1);
    CHECK_INT_EQ(o.pos, 1 + 3); /* after W and two fillers */
    CHECK_INT_EQ(er[N - 1].hit_tokens, 160);
    engine_destroy(e);
    wl_request_fini(&w);
    for (int i = 0; i < N; i++)
        wl_request_fini(&r[i]);
    free(r);
    free(er);
}

/* SGLang: the chunks of a prefill in progress are matchable from the next
 * step.  Chunk budget 160: A (250 tokens, 2 out) computes 160 in step 1;
 * B (176 tokens, A's first 11 blocks) arrives during it and is admitted in
 * step 2 beside A's last 90 tokens, hitting the 10 blocks of A's first
 * chunk: 1 ms + (90 + 16) us.  Step 3: A's decode. */
static void test_sglang_chunk_prefix(void)
{
    log_ctx l = {0};
    engine_hooks h = {.ctx = &l, .first_token = hk_first, .finish = hk_finish};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = 160, .max_num_seqs = 8,
                       .prefix_caching = true, .flavor = ENGINE_SGLANG};
    cost_model cm = simple_cost();
    engine *e = engine_create(0, 1000, &p, &cm, &h);
    wl_request a = make_req(0, 250, 2, 16, 3), b = make_req(1, 176, 1, 16, 3);
    engine_req ea = {.r = &a}, eb = {.r = &b};
    engine_submit(e, &ea, 0);
    double t = engine_try_start(e, 0);
    engine_submit(e, &eb, 0.0005);
    engine_step_done(e, t);
    drain(e, t);
    CHECK_INT_EQ(eb.hit_tokens, 160);
    CHECK_NEAR(l.first_t[0], 0.001160 + 0.001106, 1e-12);
    CHECK_NEAR(l.first_t[1], 0.001160 + 0.001106, 1e-12);
    CHECK_NEAR(l.finish_t[0], 0.001160 + 0.001106 + 0.001001, 1e-12);
    engine_destroy(e);
    free_req(&a, &ea);
    free_req(&b, &eb);
}

static void test_sglang_chunk_default(void)
{
    const double gib = 1073741824.0;
    CHECK_INT_EQ(engine_sglang_chunk_default(24 * gib), 2048);  /* A10G */
    CHECK_INT_EQ(engine_sglang_chunk_default(48 * gib), 4096);  /* L40S */
    CHECK_INT_EQ(engine_sglang_chunk_default(80 * gib), 8192);  /* H100, A100-80GB */
    CHECK_INT_EQ(engine_sglang_chunk_default(141e9), 8192);     /* H200 */
    CHECK_INT_EQ(engine_sglang_chunk_default(180 * gib), 16384); /* B200 */
}

int main(void)
{
    test_lone_request();
    test_preemption_and_reject();
    test_queued_tokens();
    test_withdraw();
    test_output_blocks();
    test_steady_blocks();
    test_steady_crash();
    test_long_prefill_threshold();
    test_same_prefix(ENGINE_VLLM);
    test_same_prefix(ENGINE_SGLANG);
    test_queue_order(ENGINE_FCFS);
    test_queue_order(ENGINE_LPM);
    test_lpm_fallback();
    test_sglang_chunk_prefix();
    test_sglang_chunk_default();
    puts("engine: ok");
    return 0;
}
