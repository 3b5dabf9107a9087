/*
 * Known decisions of the KV-aware production routers on hand-made states
 * (docs/policies.md: dynamo_kv, llmd): cost and score arithmetic, the
 * temperature-0 argmin and its tie-breaks, softmax frequencies at a set
 * temperature, TTL expiry without events, the event-fed indexes, the
 * approximate LRU's capacity and the precise mode's normalisation; and
 * their block index (route__kvidx): walk, bisection, LRU capacity, TTL.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/route_int.h"
#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/u64map.h"
#include "check.h"

enum { R = 3, NB = 6, BS = 16 };

/* A request of NB full blocks (96 tokens) of family `fam`. */
typedef struct req {
    wl_request r;
    uint64_t b[NB];
} req;

static void mkreq(req *q, uint64_t id, uint64_t fam, double t)
{
    uint64_t h = 0;
    for (int i = 0; i < NB; i++)
        h = q->b[i] = wl_block_hash(h, fam * 100 + (uint64_t)i + 1);
    q->r = (wl_request){.id = id, .arrival_s = t, .prompt_tokens = NB * BS, .output_tokens = 4,
                        .n_blocks = NB, .blocks = q->b};
}

typedef struct inst {
    const route_type *rt;
    route_config *cfg;
    void *s;
} inst;

static inst make(const char *name, const char *yaml, uint64_t seed)
{
    inst x = {.rt = route_find(name)};
    CHECK(x.rt != NULL);
    CHECK_INT_EQ(route_config_parse(yaml, "test_route_kv", &x.cfg), SIM_OK);
    route_env env = {.n_dest = R, .seed = seed, .block_size = BS, .batch_tokens = 8192,
                     .ttft_slo_s = 2};
    CHECK_INT_EQ(route_check(x.rt, x.cfg, &env, NULL), SIM_OK);
    const void *args[ROUTE_MAX_READS];
    route_config_args(x.cfg, x.rt, args);
    x.s = calloc(1, x.rt->state_size);
    CHECK_INT_EQ(x.rt->create(x.s, &env, args), SIM_OK);
    return x;
}

static void drop(inst *x)
{
    x->rt->destroy(x->s);
    free(x->s);
    route_config_free(x->cfg);
}

static void stored(inst *x, uint32_t d, const uint64_t *h, uint32_t n, double t)
{
    route_kv_event ev = {.dest = d, .kind = ROUTE_KV_STORED, .hashes = h, .n = n, .t_s = t,
                         .now_s = t};
    x->rt->on_kv_event(x->s, &ev);
}

static void removed(inst *x, uint32_t d, const uint64_t *h, uint32_t n, double t)
{
    route_kv_event ev = {.dest = d, .kind = ROUTE_KV_REMOVED, .hashes = h, .n = n, .t_s = t,
                         .now_s = t};
    x->rt->on_kv_event(x->s, &ev);
}

static uint32_t zero_u32[R];
static uint64_t zero_u64[R];
static double zero_d[R];

static route_view view(double t, const uint32_t *waiting, const double *kv)
{
    return (route_view){.n_dest = R, .outstanding = zero_u32, .queued_tokens = zero_u64,
                        .now_s = t, .waiting = waiting ? waiting : zero_u32,
                        .running = zero_u32, .kv_util = kv ? kv : zero_d, .age_s = 0};
}

static void done(inst *x, const req *q, uint32_t d)
{
    route_done dn = {.now_s = 0, .ttft_s = 0.1, .e2e_s = 0.2, .output_tokens = 4};
    x->rt->on_complete(x->s, &q->r, d, &dn);
}

/* ---- the block index ---- */

static void test_kvidx(void)
{
    uint64_t h[8];
    for (int i = 0; i < 8; i++)
        h[i] = wl_block_hash(i ? h[i - 1] : 0, (uint64_t)i + 1);
    uint32_t len[3], cnt[3];
    /* Unordered (event-fed): d0 holds 5 blocks, d1 2, d2 none. */
    route__kvidx *x = route__kvidx_create(3, false, 0);
    route__kvidx_add(x, 0, h, 5, 0);
    route__kvidx_add(x, 1, h, 2, 0);
    route__kvidx_add(x, 1, h, 2, 0); /* again: no change */
    CHECK_INT_EQ(route__kvidx_size(x, 0), 5);
    CHECK_INT_EQ(route__kvidx_size(x, 1), 2);
    route__kvidx_prefix(x, h, 8, len);
    CHECK(len[0] == 5 && len[1] == 2 && len[2] == 0);
    CHECK_INT_EQ(route__kvidx_walk(x, h, 8, cnt), 5);
    CHECK(cnt[0] == 5 && cnt[1] == 2 && cnt[2] == 0);
    CHECK_INT_EQ(route__kvidx_remove(x, 0, h + 3, 5), 2); /* held 2 of them */
    route__kvidx_prefix(x, h, 8, len);
    CHECK(len[0] == 3 && len[1] == 2);
    CHECK(route__kvidx_has(x, 0, h[2]) && !route__kvidx_has(x, 0, h[3]));
    route__kvidx_remove(x, 0, h, 3);
    route__kvidx_remove(x, 1, h, 2);
    CHECK_INT_EQ(route__kvidx_walk(x, h, 8, cnt), 0);
    route__kvidx_destroy(x);

    /* Ordered with capacity 4: adding 6 keeps the last 4 (LRU). */
    x = route__kvidx_create(2, true, 4);
    route__kvidx_add(x, 0, h, 6, 1.0);
    CHECK_INT_EQ(route__kvidx_size(x, 0), 4);
    CHECK(!route__kvidx_has(x, 0, h[0]) && !route__kvidx_has(x, 0, h[1]));
    CHECK(route__kvidx_has(x, 0, h[2]) && route__kvidx_has(x, 0, h[5]));
    /* The walk stops at the first hash nobody holds: the inference
     * extension's matchLongestPrefix credits nothing here. */
    CHECK_INT_EQ(route__kvidx_walk(x, h, 8, cnt), 0);
    route__kvidx_add(x, 0, h + 2, 1, 2.0); /* touch h[2]: h[3] is now the oldest */
    route__kvidx_add(x, 0, h + 6, 1, 2.0);
    CHECK(!route__kvidx_has(x, 0, h[3]) && route__kvidx_has(x, 0, h[2]));
    /* TTL: touched at 1.0 (h4, h5) and 2.0 (h2, h6). */
    route__kvidx_add(x, 1, h, 3, 5.0);
    route__kvidx_expire(x, 1.5);
    CHECK_INT_EQ(route__kvidx_size(x, 0), 2);
    CHECK(route__kvidx_has(x, 0, h[2]) && route__kvidx_has(x, 0, h[6]));
    CHECK_INT_EQ(route__kvidx_size(x, 1), 3);
    route__kvidx_expire(x, 10);
    CHECK(route__kvidx_size(x, 0) == 0 && route__kvidx_size(x, 1) == 0);
    /* Freed records are reused without confusing the queues. */
    for (int k = 0; k < 50; k++)
        route__kvidx_add(x, (uint32_t)(k % 2), h, 8, 20.0 + k);
    CHECK(route__kvidx_size(x, 0) == 4 && route__kvidx_size(x, 1) == 4);
    CHECK(route__kvidx_has(x, 1, h[7]) && !route__kvidx_has(x, 1, h[3]));
    route__kvidx_destroy(x);
}

/* ---- dynamo_kv ---- */

static void test_dynamo_argmin(void)
{
    inst x = make("dynamo_kv", "router: {}", 7);
    CHECK(route_needs(x.rt, x.cfg) & ROUTE_NEEDS_KV_EVENTS);
    req a, b, c;
    mkreq(&a, 1, 1, 0);
    mkreq(&b, 2, 2, 0);
    mkreq(&c, 3, 3, 0);
    route_view v = view(1.0, NULL, NULL);
    /* d1 holds a's first 4 blocks: logits d0 = 96/16 + 6 = 12, d1 = 32/16 +
     * 2 = 4, d2 = 12. */
    stored(&x, 1, a.b, 4, 0.5);
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    /* Now pending at d1: 32 tokens, 2 blocks.  b (no overlap): d0 = 12,
     * d1 = (32 + 96)/16 + 2 + 6 = 16, d2 = 12: d0 and d2 tie with equal
     * trees (0 blocks) -> uniform; give d2 a block: the smaller tree (d0)
     * wins. */
    uint64_t other = wl_block_hash(0, 999);
    stored(&x, 2, &other, 1, 0.6);
    CHECK_INT_EQ(x.rt->route(x.s, &b.r, &v), 0);
    /* a's first token: d1's pending prefill drops back to 0; c then sees
     * d0 = (96 + 96)/16 + 6 + 6 = 24, d1 = 6 + 2 + 6 = 14, d2 = 12: d2. */
    x.rt->on_first_token(x.s, &a.r, 1, 1.1);
    CHECK_INT_EQ(x.rt->route(x.s, &c.r, &v), 2);
    /* Completions empty the in-flight view; removing d1's blocks by event
     * makes a cost 12 everywhere. */
    done(&x, &a, 1);
    done(&x, &b, 0);
    done(&x, &c, 2);
    removed(&x, 1, a.b, 4, 1.2);
    removed(&x, 2, &other, 1, 1.2);
    int seen[R] = {0};
    for (int k = 0; k < 300; k++) {
        req q;
        mkreq(&q, 10 + (uint64_t)k, 50 + (uint64_t)k, 2);
        uint32_t d = x.rt->route(x.s, &q.r, &v);
        seen[d]++;
        done(&x, &q, d);
    }
    for (int d = 0; d < R; d++) /* uniform ties: each ~100 of 300 */
        CHECK(seen[d] > 60 && seen[d] < 140);
    drop(&x);
}

static void test_dynamo_softmax(void)
{
    inst x = make("dynamo_kv", "router: {dynamo_kv: {router_temperature: 1}}", 11);
    req a;
    mkreq(&a, 1, 1, 0);
    stored(&x, 1, a.b, 4, 0.0); /* logits 12, 4, 12 (range 8) */
    route_view v = view(1.0, NULL, NULL);
    enum { N = 20000 };
    int seen[R] = {0};
    for (int k = 0; k < N; k++) {
        a.r.id = (uint64_t)k + 100;
        uint32_t d = x.rt->route(x.s, &a.r, &v);
        seen[d]++;
        done(&x, &a, d);
    }
    /* p ~ exp(-(logit - 4) / (8 * 1)): d1 1, d0 and d2 e^-1 each. */
    const double p1 = 1.0 / (1.0 + 2.0 * exp(-1.0));
    CHECK_NEAR((double)seen[1] / N, p1, 0.015);
    CHECK_NEAR((double)seen[0] / N, (1 - p1) / 2, 0.015);
    drop(&x);
}

static void test_dynamo_ttl(void)
{
    /* Without events, routed blocks expire ttl_s after their last use. */
    int kept = 0, forgot = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        inst x = make("dynamo_kv", "router: {dynamo_kv: {use_kv_events: false, ttl_s: 120}}",
                      seed);
        CHECK_INT_EQ(route_needs(x.rt, x.cfg) & ROUTE_NEEDS_KV_EVENTS, 0);
        req a;
        mkreq(&a, 1, 1, 0);
        route_view v = view(0.0, NULL, NULL);
        const uint32_t first = x.rt->route(x.s, &a.r, &v);
        done(&x, &a, first);
        v.now_s = 119.0; /* still indexed: the overlap wins */
        a.r.id = 2;
        CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), first);
        done(&x, &a, first);
        v.now_s = 238.9; /* last use 119: still there */
        a.r.id = 3;
        CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), first);
        done(&x, &a, first);
        v.now_s = 400.0; /* last use 238.9 + 120 < 400: forgotten, a tie */
        a.r.id = 4;
        const uint32_t d = x.rt->route(x.s, &a.r, &v);
        kept += d == first;
        forgot += d != first;
        drop(&x);
    }
    CHECK(forgot > 15 && kept > 5); /* uniform over 3: ~27 and ~13 of 40 */
}

/* ---- llmd ---- */

static void test_llmd_scores(void)
{
    /* Queue (max - q)/(max - min) and 1 - kv: waiting 0, 4, 8 and KV 0.5,
     * 0, 0 give 2*1 + 2*0.5 = 3, 2*0.5 + 2*1 = 3, 0 + 2 = 2: d0 and d1
     * tie, uniformly (fresh routers: no prefix history). */
    const uint32_t w[R] = {0, 4, 8};
    const double kv[R] = {0.5, 0, 0};
    int seen[R] = {0};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        inst x = make("llmd", "router: {}", seed);
        CHECK_INT_EQ(route_needs(x.rt, x.cfg), 0);
        req a;
        mkreq(&a, 1, 1, 0);
        route_view v = view(0, w, kv);
        seen[x.rt->route(x.s, &a.r, &v)]++;
        drop(&x);
    }
    CHECK_INT_EQ(seen[2], 0);
    CHECK(seen[0] > 150 && seen[1] > 150);
    /* Equal queues score 1 everywhere. */
    inst x = make("llmd", "router: {}", 3);
    const uint32_t weq[R] = {5, 5, 5};
    const double kv2[R] = {0.2, 0.1, 0.3};
    req a;
    mkreq(&a, 1, 1, 0);
    route_view v = view(0, weq, kv2);
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    /* a's 7 hashes (model + 6 blocks) now on d1: prefix 3 * 7/7 = 3 beats
     * d0's better queue: waiting 0, 8, 8 -> d0 2 + 2*0.9 = 3.8, d1 3 + 0 +
     * 2*0.9 = 4.8. */
    const uint32_t w2[R] = {0, 8, 8};
    const double kv3[R] = {0.1, 0.1, 0.1};
    v = view(1, w2, kv3);
    a.r.id = 2;
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    drop(&x);
}

static void test_llmd_lru(void)
{
    /* Capacity 7 = one request's hash list: a then b on d0 evicts a's
     * blocks (the model hash is touched again and stays). */
    for (int big = 0; big <= 1; big++) {
        inst x = make("llmd", big ? "router: {}" : "router: {llmd: {lru_capacity: 7}}", 5);
        req a, b;
        mkreq(&a, 1, 1, 0);
        mkreq(&b, 2, 2, 0);
        const uint32_t w0[R] = {0, 9, 9};
        route_view v = view(0, w0, NULL);
        CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 0);
        CHECK_INT_EQ(x.rt->route(x.s, &b.r, &v), 0);
        /* Now d1 has the best queue (2 points).  With a's blocks still on
         * d0, d0 gets prefix 3 and wins (3 + 2 vs 2 + 2); evicted, d0 gets
         * only the model hash, 3 * 1/7, and d1 wins. */
        const uint32_t w1[R] = {9, 0, 9};
        v = view(1, w1, NULL);
        a.r.id = 3;
        CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), big ? 0 : 1);
        drop(&x);
    }
}

static void test_llmd_precise(void)
{
    inst x = make("llmd", "router: {llmd: {mode: precise}}", 9);
    CHECK(route_needs(x.rt, x.cfg) & ROUTE_NEEDS_KV_EVENTS);
    req a;
    mkreq(&a, 1, 1, 0);
    const uint32_t w[R] = {0, 2, 1};
    route_view v = view(0, w, NULL);
    /* Nothing cached: queue (1, 0, 0.5) and KV 1 each: d0. */
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 0);
    /* d1 alone holds a prefix: min = max -> normalised 1, times 2: d1 2 +
     * 0 + 1 = 3 beats d0 0 + 1 + 1 = 2. */
    stored(&x, 1, a.b, 2, 0.1);
    a.r.id = 2;
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    /* d2 holds 4, d1 2: d2 scores 1 (x2), d1 0: d2 2 + 0.5 + 1 = 3.5. */
    stored(&x, 2, a.b, 4, 0.2);
    a.r.id = 3;
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 2);
    /* d2 evicts its last 3: holds 1 < d1's 2: d1 1 * 2 + 0 + 1 = 3 vs d2
     * 0 + 0.5 + 1 = 1.5 vs d0 0 + 1 + 1 = 2. */
    removed(&x, 2, a.b + 1, 3, 0.3);
    a.r.id = 4;
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    drop(&x);
}

/* The no-hit-lru-scorer alone (other weights 0): a cold request (no
 * destination holds its first prompt block) goes to the destination never
 * or least recently sent a cold one; a hot one scores 0.5 everywhere and
 * leaves the LRU as it was.  With an LRU of one destination the evicted
 * one counts as never used again. */
static void test_llmd_nohit_lru(void)
{
    const uint32_t w[R] = {0, 0, 0};
    for (int small = 0; small <= 1; small++) {
        inst x = make("llmd", small ? "router: {llmd: {nohit_lru_weight: 1, queue_weight: 0, "
                                      "kv_weight: 0, prefix_weight: 0, nohit_lru_size: 1}}"
                                    : "router: {llmd: {nohit_lru_weight: 1, queue_weight: 0, "
                                      "kv_weight: 0, prefix_weight: 0}}", 7);
        route_view v = view(0, w, NULL);
        req q;
        /* fresh: scores 1, 0.5, 0 -> d0; then never-used d1 (1) and d2
         * (0.5) beat d0 (1 - 2/2 = 0) -> d1; then d2 (never used: 1) over
         * d0 (0.5) and d1 (0).  With size 1, d0 was evicted when d1
         * entered: d0 and d2 never used, d0 first. */
        mkreq(&q, 1, 1, 0);
        CHECK_INT_EQ(x.rt->route(x.s, &q.r, &v), 0);
        mkreq(&q, 2, 2, 0);
        CHECK_INT_EQ(x.rt->route(x.s, &q.r, &v), 1);
        mkreq(&q, 3, 3, 0);
        CHECK_INT_EQ(x.rt->route(x.s, &q.r, &v), small ? 0 : 2);
        if (small) {
            drop(&x);
            continue;
        }
        /* All used, LRU d0 d1 d2: the oldest, d0 (1), wins. */
        mkreq(&q, 4, 4, 0);
        CHECK_INT_EQ(x.rt->route(x.s, &q.r, &v), 0);
        /* Family 1 again is hot (d0 holds it): ties everywhere, and the
         * LRU (d1 d2 d0) does not move, so the next cold one goes to d1. */
        int seen[R] = {0};
        for (int i = 0; i < 60; i++) {
            mkreq(&q, 10 + (uint64_t)i, 1, 0);
            seen[x.rt->route(x.s, &q.r, &v)]++;
        }
        CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
        mkreq(&q, 100, 5, 0);
        CHECK_INT_EQ(x.rt->route(x.s, &q.r, &v), 1);
        drop(&x);
    }
    /* Precise mode: cold = no raw prefix score.  d1 holds family 1: hot,
     * prefix 2 wins there; family 2 is cold and goes to d0 (never used,
     * first), with queue 1 + KV 1 equal everywhere. */
    inst x = make("llmd", "router: {llmd: {mode: precise, nohit_lru_weight: 2}}", 9);
    route_view v = view(0, w, NULL);
    req a, b;
    mkreq(&a, 1, 1, 0);
    mkreq(&b, 2, 2, 0);
    stored(&x, 1, a.b, 3, 0);
    CHECK_INT_EQ(x.rt->route(x.s, &a.r, &v), 1);
    CHECK_INT_EQ(x.rt->route(x.s, &b.r, &v), 0);
    b.r.id = 3; /* still cold (no event yet): d1 never sent a cold one */
    CHECK_INT_EQ(x.rt->route(x.s, &b.r, &v), 1);
    drop(&x);
}

/* The direct mode (unordered, <= 64 destinations: entries in the table's
 * slots) against the general layout (65 destinations, using the first
 * 40): the same random adds and removes of chained runs over 3000 hashes
 * (growth from 1024 slots, deletions inside probe runs) give the same
 * sizes, membership, walks and prefixes after every step. */
static void test_kvidx_direct_equiv(void)
{
    enum { NH = 3000, ND = 40 };
    static uint64_t h[NH];
    for (int i = 0; i < NH; i++)
        h[i] = wl_block_hash(i % 50 ? h[i - 1] : (uint64_t)i, (uint64_t)i + 7);
    route__kvidx *a = route__kvidx_create(ND, false, 0);
    route__kvidx *b = route__kvidx_create(65, false, 0);
    route__kvidx_reserve(a, 3000); /* sized ahead; again at step 2000, held */
    static uint32_t la[65], lb[65], ca[65], cb[65];
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, 42, 1);
    int bad = 0;
    uint64_t held = 0;
    for (int step = 0; step < 4000; step++) {
        const uint32_t d = sim_pcg32_bounded(&rng, ND);
        const uint32_t off = sim_pcg32_bounded(&rng, NH - 64);
        const uint32_t n = 1 + sim_pcg32_bounded(&rng, 64);
        if (step == 2000)
            route__kvidx_reserve(a, 100000);
        if (sim_pcg32_bounded(&rng, 3)) {
            route__kvidx_add(a, d, h + off, n, 0);
            route__kvidx_add(b, d, h + off, n, 0);
        } else {
            bad += route__kvidx_remove(a, d, h + off, n) != route__kvidx_remove(b, d, h + off, n);
        }
        bad += route__kvidx_size(a, d) != route__kvidx_size(b, d);
        bad += route__kvidx_has(a, d, h[off]) != route__kvidx_has(b, d, h[off]);
        const uint32_t q = sim_pcg32_bounded(&rng, NH - 64);
        bad += route__kvidx_walk(a, h + q, 64, ca) != route__kvidx_walk(b, h + q, 64, cb);
        route__kvidx_prefix(a, h + q, 64, la);
        route__kvidx_prefix(b, h + q, 64, lb);
        bad += memcmp(ca, cb, ND * sizeof *ca) != 0 || memcmp(la, lb, ND * sizeof *la) != 0;
    }
    for (uint32_t d = 0; d < ND; d++)
        held += route__kvidx_size(a, d);
    CHECK_INT_EQ(bad, 0);
    CHECK(held > 10000); /* the table grew well past its first size */
    route__kvidx_destroy(a);
    route__kvidx_destroy(b);
}

/* KV-event changes queued (route__kvidx_queue, applied in order at the
 * next read) against the same changes applied at once: bursts of 0-9
 * events (adds and removes of overlapping chained runs, the same hash
 * added and removed within one burst, several destinations) between
 * reads, 40 destinations (direct mode, queued) and 65 (general layout,
 * applied at once by route__kvidx_queue itself) against an immediate
 * direct index; every kind of read after every burst agrees, and the
 * first read of a burst sees all of it. */
static void test_kvidx_queue_equiv(void)
{
    enum { NH = 2000, ND = 40 };
    static uint64_t h[NH];
    for (int i = 0; i < NH; i++)
        h[i] = wl_block_hash(i % 40 ? h[i - 1] : (uint64_t)i, (uint64_t)i + 3);
    route__kvidx *a = route__kvidx_create(ND, false, 0);  /* queued */
    route__kvidx *g = route__kvidx_create(65, false, 0);  /* general: at once */
    route__kvidx *b = route__kvidx_create(ND, false, 0);  /* immediate */
    static uint32_t la[65], lb[65], ca[65], cb[65];
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, 77, 1);
    int bad = 0, queued = 0;
    for (int burst = 0; burst < 3000; burst++) {
        const uint32_t ne = sim_pcg32_bounded(&rng, 10);
        for (uint32_t e = 0; e < ne; e++) {
            const uint32_t d = sim_pcg32_bounded(&rng, burst % 5 ? 4 : ND);
            const uint32_t off = sim_pcg32_bounded(&rng, NH - 40);
            const uint32_t n = 1 + sim_pcg32_bounded(&rng, 40);
            const bool stored = sim_pcg32_bounded(&rng, 5) < 3;
            route__kvidx_queue(a, d, stored, h + off, n);
            route__kvidx_queue(g, d, stored, h + off, n);
            if (stored)
                route__kvidx_add(b, d, h + off, n, 0);
            else
                (void)route__kvidx_remove(b, d, h + off, n);
            queued++;
        }
        const uint32_t q = sim_pcg32_bounded(&rng, NH - 64), d = sim_pcg32_bounded(&rng, ND);
        switch (burst % 4) { /* which read comes first after the burst */
        case 0:
            bad += route__kvidx_size(a, d) != route__kvidx_size(b, d);
            break;
        case 1:
            bad += route__kvidx_has(a, d, h[q]) != route__kvidx_has(b, d, h[q]);
            break;
        case 2:
            bad += route__kvidx_walk(a, h + q, 64, ca) != route__kvidx_walk(b, h + q, 64, cb);
            bad += memcmp(ca, cb, ND * sizeof *ca) != 0;
            break;
        default:
            route__kvidx_prefix(a, h + q, 64, la);
            route__kvidx_prefix(b, h + q, 64, lb);
            bad += memcmp(la, lb, ND * sizeof *la) != 0;
        }
        for (uint32_t e = 0; e < ND; e++)
            bad += route__kvidx_size(a, e) != route__kvidx_size(b, e) ||
                   route__kvidx_size(g, e) != route__kvidx_size(b, e);
        route__kvidx_prefix(g, h + q, 64, la);
        route__kvidx_prefix(b, h + q, 64, lb);
        bad += memcmp(la, lb, ND * sizeof *la) != 0;
    }
    uint64_t held = 0;
    for (uint32_t e = 0; e < ND; e++)
        held += route__kvidx_size(b, e);
    CHECK_INT_EQ(bad, 0);
    CHECK(queued > 10000 && held > 1000); /* real traffic, a populated index */
    route__kvidx_destroy(a);
    route__kvidx_destroy(g);
    route__kvidx_destroy(b);
}

/* The same for ordered indexes (capacity 300 per destination, touch times,
 * TTL expiry): direct mode (40 destinations) and the general layout (65)
 * evict and expire the same pairs. */
static void test_kvidx_direct_equiv_ordered(void)
{
    enum { NH = 3000, ND = 40 };
    static uint64_t h[NH];
    for (int i = 0; i < NH; i++)
        h[i] = wl_block_hash(i % 50 ? h[i - 1] : (uint64_t)i, (uint64_t)i + 7);
    route__kvidx *a = route__kvidx_create(ND, true, 300);
    route__kvidx *b = route__kvidx_create(65, true, 300);
    static uint32_t ca[65], cb[65];
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, 7, 1);
    int bad = 0, full = 0;
    for (int step = 0; step < 4000; step++) {
        const double now = step * 0.01;
        const uint32_t d = sim_pcg32_bounded(&rng, ND);
        const uint32_t off = sim_pcg32_bounded(&rng, NH - 64);
        const uint32_t n = 1 + sim_pcg32_bounded(&rng, 64);
        const uint32_t op = sim_pcg32_bounded(&rng, 8);
        if (op < 6) {
            route__kvidx_add(a, d, h + off, n, now);
            route__kvidx_add(b, d, h + off, n, now);
        } else if (op == 6) {
            bad += route__kvidx_remove(a, d, h + off, n) != route__kvidx_remove(b, d, h + off, n);
        } else if (step % 16 == 0) {
            route__kvidx_expire(a, now - 5);
            route__kvidx_expire(b, now - 5);
        }
        full += route__kvidx_size(a, d) == 300;
        for (uint32_t e = 0; e < ND; e++)
            bad += route__kvidx_size(a, e) != route__kvidx_size(b, e);
        for (uint32_t j = 0; j < n; j++)
            bad += route__kvidx_has(a, d, h[off + j]) != route__kvidx_has(b, d, h[off + j]);
        const uint32_t q = sim_pcg32_bounded(&rng, NH - 64);
        bad += route__kvidx_walk(a, h + q, 64, ca) != route__kvidx_walk(b, h + q, 64, cb);
        bad += memcmp(ca, cb, ND * sizeof *ca) != 0;
    }
    CHECK_INT_EQ(bad, 0);
    CHECK(full > 100); /* the capacity bound was exercised */
    route__kvidx_destroy(a);
    route__kvidx_destroy(b);
}

/* A chained hash list of 1..48 blocks from family f (of 6): a shared
 * stretch of (7 f mod 20) blocks, then blocks from a 3-letter alphabet,
 * so that lists share prefixes and branch often. */
static uint32_t chained_list(sim_pcg32 *rng, uint64_t *h, uint32_t f)
{
    const uint32_t n = 1 + sim_pcg32_bounded(rng, 48), shared = (f * 7u) % 20u;
    uint64_t prev = 0x9e3779b97f4a7c15ULL * (f + 1);
    for (uint32_t j = 0; j < n; j++)
        h[j] = prev = wl_block_hash(prev, j < shared ? 1000 + j : sim_pcg32_bounded(rng, 3));
    return n;
}

/* route__kvlru (per-destination run queues + the unordered set) against
 * the per-pair ordered route__kvidx it replaced in llmd and dynamo_kv:
 * random adds of chained lists at advancing times, with expiries, for a
 * capacity below one list (a list evicting its own blocks), a capacity of
 * a few lists (constant eviction) and no capacity (expiry only), over 5
 * destinations (direct mode) and 70 (general layout, two words).  After
 * every step every destination's size, the added list's membership, and
 * the walk and prefix of a probe list agree. */
static void test_kvlru_equiv(uint32_t nd, uint32_t cap, double ttl, uint64_t seed)
{
    route__kvlru *a = route__kvlru_create(nd, cap, true);
    route__kvlru *w = route__kvlru_create(nd, cap, false); /* walk over run heads */
    route__kvidx *b = route__kvidx_create(nd, true, cap);
    route__kvidx *ax = route__kvlru_index(a);
    CHECK((route__kvlru_index(w) == NULL) == (nd <= 64)); /* > 64: the set anyway */
    static uint32_t cw[70];
    int walked = 0;
    static uint32_t ca[70], cb[70];
    uint64_t h[48], q[48];
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, seed, 1);
    int bad = 0, evicted = 0, expired = 0;
    for (int step = 0; step < 3000; step++) {
        const double now = step * 0.01;
        const uint32_t d = sim_pcg32_bounded(&rng, nd < 8 ? nd : 8); /* busy destinations */
        const uint32_t n = chained_list(&rng, h, sim_pcg32_bounded(&rng, 6));
        const uint32_t before = route__kvidx_size(b, d);
        route__kvlru_add(a, d, h, n, now);
        route__kvlru_add(w, d, h, n, now);
        route__kvidx_add(b, d, h, n, now);
        evicted += cap && before + n > cap;
        if (ttl > 0 && step % 7 == 0) {
            uint32_t sz = 0;
            for (uint32_t e = 0; e < nd; e++)
                sz += route__kvidx_size(b, e);
            route__kvlru_expire(a, now - ttl);
            route__kvlru_expire(w, now - ttl);
            route__kvidx_expire(b, now - ttl);
            for (uint32_t e = 0; e < nd; e++)
                sz -= route__kvidx_size(b, e);
            expired += sz > 0;
        }
        for (uint32_t e = 0; e < nd; e++)
            bad += route__kvidx_size(ax, e) != route__kvidx_size(b, e);
        for (uint32_t j = 0; j < n; j++)
            bad += route__kvidx_has(ax, d, h[j]) != route__kvidx_has(b, d, h[j]);
        const uint32_t m = chained_list(&rng, q, sim_pcg32_bounded(&rng, 6));
        const uint32_t wb = route__kvidx_walk(b, q, m, cb);
        bad += route__kvidx_walk(ax, q, m, ca) != wb;
        bad += memcmp(ca, cb, nd * sizeof *ca) != 0;
        bad += route__kvlru_walk(w, q, m, cw) != wb;
        bad += memcmp(cw, cb, nd * sizeof *cw) != 0;
        /* The list just added, walked: its own destination's runs met
         * part-way (holes where eviction took a run's head). */
        const uint32_t wh = route__kvidx_walk(b, h, n, cb);
        bad += route__kvlru_walk(w, h, n, cw) != wh;
        bad += memcmp(cw, cb, nd * sizeof *cw) != 0;
        walked += wb > 1;
        route__kvidx_prefix(ax, q, m, ca);
        route__kvidx_prefix(b, q, m, cb);
        bad += memcmp(ca, cb, nd * sizeof *ca) != 0;
    }
    CHECK_INT_EQ(bad, 0);
    CHECK(!cap || evicted > 100);  /* the capacity bound was exercised */
    CHECK(ttl <= 0 || expired > 10); /* and the expiry */
    CHECK(walked > 100);             /* walks that met held blocks */
    route__kvlru_destroy(a);
    route__kvlru_destroy(w);
    route__kvidx_destroy(b);
}

/* Direct mode at its limits (round 4, second pass): 64 destinations
 * (bit 63), the one shared bisection of route__kvidx_prefix splitting
 * into many answers (known lengths, ties, a hole that a bisection may or
 * may not see, as the per-destination bisection), and a table grown
 * without a reserve from its first 16 KiB past the 2-MiB size from which
 * it is a huge-page mapping (grown, read, emptied and freed there). */
static void test_kvidx_direct_limits(void)
{
    enum { NH = 300, BIG = 150000 };
    static uint64_t h[NH], g[BIG];
    for (int i = 0; i < NH; i++)
        h[i] = wl_block_hash(i ? h[i - 1] : 0, (uint64_t)i + 11);
    route__kvidx *x = route__kvidx_create(64, false, 0);
    uint32_t len[64], cnt[64];
    for (uint32_t d = 0; d < 64; d++) /* lengths 1..300, pairs of equal ones */
        route__kvidx_add(x, d, h, d == 63 ? NH : 1 + (d / 2) * 9, 0);
    route__kvidx_prefix(x, h, NH, len);
    int bad = 0;
    for (uint32_t d = 0; d < 64; d++)
        bad += len[d] != (d == 63 ? NH : 1 + (d / 2) * 9);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(route__kvidx_walk(x, h, NH, cnt), NH);
    CHECK(cnt[63] == NH && cnt[0] == 1 && cnt[62] == 1 + 31 * 9);
    /* A hole: 63 loses block 150 (the first probe of [1, 300]), so its
     * bisection ends below it, at 150; 0 keeps its one block. */
    route__kvidx_remove(x, 63, h + 150, 1);
    route__kvidx_prefix(x, h, NH, len);
    CHECK(len[63] == 150 && len[0] == 1 && len[62] == 280);
    CHECK_INT_EQ(route__kvidx_walk(x, h, NH, cnt), NH); /* 62 holds 150 */
    CHECK_INT_EQ(cnt[63], NH - 1);
    /* A hole at block 200 instead is not seen: 63's probes are blocks
     * 150, 225, 263, 282, 291, 296, 298, 299 (as its own bisection). */
    route__kvidx_add(x, 63, h + 150, 1, 0);
    route__kvidx_remove(x, 63, h + 200, 1);
    route__kvidx_prefix(x, h, NH, len);
    CHECK(len[63] == NH && len[61] == 271);
    route__kvidx_destroy(x);

    for (int i = 0; i < BIG; i++)
        g[i] = wl_block_hash(i ? g[i - 1] : 7, (uint64_t)i + 3);
    x = route__kvidx_create(64, false, 0);
    route__kvidx_add(x, 5, g, BIG, 0);
    route__kvidx_add(x, 63, g, BIG / 2, 0);
    CHECK(route__kvidx_size(x, 5) == BIG && route__kvidx_size(x, 63) == BIG / 2);
    CHECK(route__kvidx_has(x, 5, g[BIG - 1]) && !route__kvidx_has(x, 63, g[BIG / 2]));
    CHECK_INT_EQ(route__kvidx_walk(x, g, BIG, cnt), BIG);
    CHECK(cnt[5] == BIG && cnt[63] == BIG / 2 && cnt[0] == 0);
    route__kvidx_prefix(x, g, BIG, len);
    CHECK(len[5] == BIG && len[63] == BIG / 2 && len[6] == 0);
    CHECK_INT_EQ(route__kvidx_remove(x, 5, g, BIG), BIG);
    CHECK_INT_EQ(route__kvidx_walk(x, g, BIG, cnt), BIG / 2);
    CHECK(cnt[5] == 0 && cnt[63] == BIG / 2);
    route__kvidx_destroy(x);
}

/* The direct table's chunk overflow (models/routers/route_kvidx.c, "direct
 * mode"): 700 hashes made to share one home chunk of the first table (the
 * last of its 256 chunks, so that the probe wraps to chunk 0), by
 * inverting its Fibonacci hashing -- a white-box construction: if the
 * hashing changes, they are merely random.  They pass the chunk's
 * saturating overflow count (255) and make the table grow once (at 512
 * entries), after which they share two home chunks (510 and 511), again
 * on one long run of full chunks that wraps.
 * Against a plain array: after every add and removal, in a shuffled
 * order with re-adds, has() of every hash, held or not (absent lookups
 * cross the saturated counts), and each destination's size. */
static void test_kvidx_chunk_overflow(void)
{
    enum { NC = 700, ND = 3 };
    const uint64_t phi = 0x9e3779b97f4a7c15ULL;
    uint64_t inv = phi; /* phi^-1 mod 2^64 by Newton's iteration */
    for (int i = 0; i < 6; i++)
        inv *= 2 - phi * inv;
    CHECK(phi * inv == 1);
    static uint64_t h[NC];
    static uint8_t held[ND][NC];
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, 9, 2);
    for (int i = 0; i < NC; i++) {
        const uint64_t low = (uint64_t)sim_pcg32_next(&rng) << 24 ^ (uint64_t)sim_pcg32_next(&rng);
        h[i] = ((0xffull << 56) | (low & ((1ull << 56) - 1))) * inv;
    }
    route__kvidx *x = route__kvidx_create(ND, false, 0);
    int bad = 0;
    uint32_t size[ND] = {0};
    for (int step = 0; step < 9000; step++) {
        const uint32_t d = sim_pcg32_bounded(&rng, ND);
        const uint32_t i = sim_pcg32_bounded(&rng, NC);
        /* Mostly adds for the first third, then mostly removals, through
         * the states where more entries than a saturated count can tell
         * have left and some are still past it. */
        const bool add = sim_pcg32_bounded(&rng, 8) < (step < 3000 ? 6u : 1u);
        if (add) {
            route__kvidx_add(x, d, h + i, 1, 0);
            size[d] += !held[d][i];
            held[d][i] = 1;
        } else {
            bad += (uint32_t)route__kvidx_remove(x, d, h + i, 1) != held[d][i];
            size[d] -= held[d][i];
            held[d][i] = 0;
        }
        for (uint32_t e = 0; e < ND; e++) {
            bad += route__kvidx_size(x, e) != size[e];
            for (int j = 0; j < NC; j += 7)
                bad += route__kvidx_has(x, e, h[j]) != held[e][j];
        }
    }
    for (uint32_t e = 0; e < ND; e++)
        for (int j = 0; j < NC; j++)
            bad += route__kvidx_has(x, e, h[j]) != held[e][j];
    CHECK_INT_EQ(bad, 0);
    route__kvidx_destroy(x);
}

/* Every chunk of the direct table with a non-zero overflow count while a
 * quarter of the slots are taken: for each chunk c in turn, fillers homed
 * at c up to a full chunk (four in chunk 0, three beside X_(c-1) in the
 * others) and one more hash X_c homed at c (which goes on to chunk c + 1,
 * the last one's to chunk 0, and counts in c), then the fillers
 * removed.  (Hashes homed at a chosen chunk of the first table,
 * 256 chunks, by inverting its Fibonacci hashing, as above.)  A lookup of
 * an absent hash must then stop after one turn of the table instead of
 * circling (a hang fails the test by its timeout), and every X_c must
 * still be found. */
static void test_kvidx_chunk_all_counted(void)
{
    enum { NCH = 256 };
    const uint64_t phi = 0x9e3779b97f4a7c15ULL;
    uint64_t inv = phi;
    for (int i = 0; i < 6; i++)
        inv *= 2 - phi * inv;
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, 11, 3);
#define HOMED(c) ((((uint64_t)(c) << 56) | (((uint64_t)sim_pcg32_next(&rng) << 24 ^ \
                                             sim_pcg32_next(&rng)) & ((1ull << 56) - 1))) * inv)
    route__kvidx *x = route__kvidx_create(2, false, 0);
    static uint64_t xs[NCH];
    for (uint32_t c = 0; c < NCH; c++) {
        const uint32_t nf = c ? 3 : 4; /* chunk c > 0 holds X_(c-1) */
        uint64_t f[4];
        for (uint32_t k = 0; k < nf; k++)
            f[k] = HOMED(c);
        route__kvidx_add(x, 0, f, nf, 0);
        xs[c] = HOMED(c);
        route__kvidx_add(x, 1, xs + c, 1, 0);
        CHECK_INT_EQ(route__kvidx_remove(x, 0, f, nf), nf);
    }
    CHECK_INT_EQ(route__kvidx_size(x, 1), NCH);
    CHECK_INT_EQ(route__kvidx_size(x, 0), 0);
    int bad = 0;
    for (uint32_t c = 0; c < NCH; c++) {
        bad += !route__kvidx_has(x, 1, xs[c]);
        bad += route__kvidx_has(x, 0, HOMED(c)) || route__kvidx_has(x, 1, HOMED(c));
    }
    CHECK_INT_EQ(bad, 0);
    uint32_t cnt[2];
    const uint64_t absent[2] = {HOMED(7), HOMED(200)};
    CHECK_INT_EQ(route__kvidx_walk(x, absent, 2, cnt), 0);
#undef HOMED
    route__kvidx_destroy(x);
}

/* Event mode (route__kvidx_create_events: the engines' trees as runs)
 * against the unordered per-block index fed the same events.  Each
 * destination's cache is a random tree over one shared space of chained
 * hashes (4 tokens a position, so destinations build the same blocks
 * independently): STORED runs of 1-6 new blocks below a held block or
 * the root; REMOVED events of 1-3 leaf stretches taken one after the
 * other (a stretch's parent may become a leaf and go in the next one, as
 * an engine's eviction calls of one instant), each in chain order.  After
 * every event the sizes agree, and the prefix of lists through held
 * blocks (with unheld blocks after) for every destination. */
enum { EV_MAXB = 4096 };
typedef struct ev_dest {
    uint64_t held[EV_MAXB]; /* held blocks, unordered */
    uint32_t n;
    sim_u64map at;          /* block -> its index in held */
    sim_u64map kids;        /* block -> held children */
} ev_dest;

static uint32_t ev_kids(ev_dest *e, uint64_t h)
{
    const uint32_t k = sim_u64map_get(&e->kids, h);
    return k == SIM_U64MAP_NONE ? 0 : k;
}

static void ev_hold(ev_dest *e, uint64_t h, uint64_t parent)
{
    sim_u64map_put(&e->at, h, e->n);
    e->held[e->n++] = h;
    if (parent)
        sim_u64map_put(&e->kids, parent, ev_kids(e, parent) + 1);
}

static void ev_drop(ev_dest *e, uint64_t h, uint64_t parent)
{
    const uint32_t i = sim_u64map_get(&e->at, h);
    e->held[i] = e->held[--e->n];
    if (i < e->n)
        sim_u64map_put(&e->at, e->held[i], i);
    sim_u64map_del(&e->at, h);
    if (parent)
        sim_u64map_put(&e->kids, parent, ev_kids(e, parent) - 1);
}

static void test_kvidx_event_mode(uint32_t nd, uint64_t seed, uint64_t *par_of, uint32_t cap_par)
{
    (void)cap_par;
    route__kvidx *a = route__kvidx_create_events(nd, 0);
    route__kvidx *b = route__kvidx_create(nd, false, 0);
    ev_dest *e = calloc(nd, sizeof *e);
    for (uint32_t d = 0; d < nd; d++)
        CHECK(sim_u64map_init(&e[d].at, 64) == 0 && sim_u64map_init(&e[d].kids, 64) == 0);
    sim_u64map par; /* block -> index in par_of (its parent) */
    CHECK(sim_u64map_init(&par, 64) == 0);
    uint32_t n_par = 0;
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, seed, 3);
    static uint32_t la[70], lb[70];
    uint64_t ev[64], q[64];
    int bad = 0, multi = 0, deep = 0;
#define PARENT(h) (par_of[sim_u64map_get(&par, (h))])
    for (int step = 0; step < 6000; step++) {
        const uint32_t d = sim_pcg32_bounded(&rng, nd < 6 ? nd : 6);
        ev_dest *E = &e[d];
        uint32_t n = 0;
        bool stored = E->n == 0 || E->n + 8 < EV_MAXB / 2 ? sim_pcg32_bounded(&rng, 10) < 6
                                                          : sim_pcg32_bounded(&rng, 10) < 3;
        if (E->n == 0)
            stored = true;
        uint64_t parent = 0;
        if (stored) {
            parent = E->n == 0 || sim_pcg32_bounded(&rng, 5) == 0
                         ? 0
                         : E->held[sim_pcg32_bounded(&rng, E->n)];
            const uint32_t k = 1 + sim_pcg32_bounded(&rng, 6);
            uint64_t p = parent;
            for (uint32_t j = 0; j < k; j++) {
                const uint64_t h = sim_hash_pair(p ? p : 0x5eedULL, sim_pcg32_bounded(&rng, 4));
                if (sim_u64map_get(&E->at, h) != SIM_U64MAP_NONE)
                    break; /* held: an engine pins it, stores nothing from here */
                if (sim_u64map_get(&par, h) == SIM_U64MAP_NONE) {
                    CHECK(n_par < cap_par);
                    par_of[n_par] = p;
                    sim_u64map_put(&par, h, n_par++);
                }
                ev[n++] = h;
                ev_hold(E, h, p);
                p = h;
            }
        } else {
            /* 1-3 stretches, each from a leaf up while the parent would
             * become a leaf, listed in chain order one after the other. */
            const uint32_t stretches = 1 + sim_pcg32_bounded(&rng, 3);
            for (uint32_t s = 0; s < stretches && E->n; s++) {
                uint64_t leaf = 0;
                for (int tries = 0; tries < 64 && !leaf; tries++) {
                    const uint64_t h = E->held[sim_pcg32_bounded(&rng, E->n)];
                    if (ev_kids(E, h) == 0)
                        leaf = h;
                }
                if (!leaf)
                    break;
                uint64_t st[16];
                uint32_t k = 0;
                const uint32_t want = 1 + sim_pcg32_bounded(&rng, 8);
                for (uint64_t h = leaf; h && k < want && k < 16 && n + k < 64;) {
                    const uint64_t p = PARENT(h);
                    st[k++] = h;
                    ev_drop(E, h, p);
                    if (!p || ev_kids(E, p) != 0)
                        break;
                    h = p;
                }
                for (uint32_t j = 0; j < k; j++) /* chain order: root side first */
                    ev[n++] = st[k - 1 - j];
                multi += s > 0;
            }
        }
        if (n == 0)
            continue;
        route__kvidx_event(a, d, stored, parent, ev, n);
        route__kvidx_queue(b, d, stored, ev, n);
        for (uint32_t t = 0; t < nd; t++)
            bad += route__kvidx_size(a, t) != route__kvidx_size(b, t);
        /* A list through a held block of some destination, then 0-3 more. */
        const ev_dest *Q = &e[sim_pcg32_bounded(&rng, nd < 6 ? nd : 6)];
        if (Q->n) {
            uint64_t path[64];
            uint32_t m = 0;
            for (uint64_t h = Q->held[sim_pcg32_bounded(&rng, Q->n)]; h && m < 64; h = PARENT(h))
                path[m++] = h;
            if (m < 64) {
                for (uint32_t j = 0; j < m; j++)
                    q[j] = path[m - 1 - j];
                const uint32_t extra = sim_pcg32_bounded(&rng, 4);
                for (uint32_t j = 0; j < extra && m < 64; j++, m++)
                    q[m] = sim_hash_pair(q[m - 1], 4 + sim_pcg32_bounded(&rng, 4));
                route__kvidx_prefix(a, q, m, la);
                route__kvidx_prefix(b, q, m, lb);
                bad += memcmp(la, lb, nd * sizeof *la) != 0;
                for (uint32_t t = 0; t < nd; t++)
                    deep += la[t] > 8;
            }
        }
    }
#undef PARENT
    CHECK_INT_EQ(bad, 0);
    CHECK(multi > 100); /* REMOVED events of several stretches */
    CHECK(deep > 100);  /* prefixes through several runs */
    for (uint32_t d = 0; d < nd; d++) {
        sim_u64map_fini(&e[d].at);
        sim_u64map_fini(&e[d].kids);
    }
    sim_u64map_fini(&par);
    free(e);
    route__kvidx_destroy(a);
    route__kvidx_destroy(b);
}

int main(void)
{
    test_kvlru_equiv(5, 20, 0, 1);
    test_kvlru_equiv(5, 150, 0, 2);
    test_kvlru_equiv(5, 0, 1.5, 3);
    test_kvlru_equiv(70, 60, 0, 4);
    test_kvlru_equiv(70, 0, 0.5, 5);
    test_kvlru_equiv(5, 100, 0.15, 6);
    test_kvlru_equiv(64, 40, 0, 7); /* walk over run heads at 64 destinations */
    test_kvlru_equiv(64, 0, 0.3, 8);
    {
        static uint64_t par_of[200000];
        test_kvidx_event_mode(5, 21, par_of, 200000);
        test_kvidx_event_mode(64, 22, par_of, 200000);
        test_kvidx_event_mode(70, 23, par_of, 200000); /* beyond 64: the per-block index */
    }
    test_kvidx();
    test_kvidx_direct_equiv();
    test_kvidx_queue_equiv();
    test_kvidx_direct_equiv_ordered();
    test_kvidx_direct_limits();
    test_kvidx_chunk_overflow();
    test_kvidx_chunk_all_counted();
    test_dynamo_argmin();
    test_dynamo_softmax();
    test_dynamo_ttl();
    test_llmd_scores();
    test_llmd_lru();
    test_llmd_precise();
    test_llmd_nohit_lru();
    puts("route_kv: ok");
    return 0;
}
