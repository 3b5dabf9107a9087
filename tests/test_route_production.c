/*
 * Known decisions of the production-router re-implementations on
 * hand-made states (docs/policies.md, sections sglang_cache_aware and
 * aibrix_prefix), 4 destinations, 16-token blocks:
 *
 * sglang_cache_aware: the balance gate fires at max - min = 65 and not at
 * 64, at max = 196 > 1.5 x 130 and not at 195 (strict, both parts), and
 * then picks the lowest-index least-loaded worker; a match rate of 0.3
 * exactly goes to the smallest tree, 0.375 to the matched tenant, the
 * lowest-index one when two hold the node; the smallest tree wins on a
 * miss; tree sizes count tokens and a split does not change them; the LRU
 * trim to max_tree_size happens at the eviction interval (not before),
 * evicting the oldest leaves first until the tenant fits.
 *
 * aibrix_prefix: the load gate fires at max - min = 8 and not 7, at
 * max = 21 > 2 (mean + 1) = 20.5 and not at 20 (= 20); the mean + 1 x
 * sample-std bound excludes a matched pod above it and keeps one at it;
 * the highest match share wins within the bound, then fewer requests;
 * equal pods are chosen at random (both seen, no other); the table forgets
 * blocks idle for ttl_s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/route.h"
#include "sim/core/error.h"
#include "check.h"

#define BS 16
#define R 4

uint64_t route__sglang_tree_tokens(const void *state, uint32_t d);
uint64_t route__sglang_evictions(const void *state);

/* A request of n blocks (plus `extra` tokens of a partial block): the
 * first `shared` blocks from content `prefix`, the rest from `tail`. */
static wl_request req(uint32_t n, uint32_t extra, uint32_t shared, uint64_t prefix,
                      uint64_t tail, double t)
{
    static uint64_t id;
    wl_request r = {.id = id++, .arrival_s = t, .prompt_tokens = n * BS + extra,
                    .output_tokens = 4, .n_blocks = n};
    r.blocks = malloc((n ? n : 1) * sizeof *r.blocks);
    uint64_t parent = 0;
    for (uint32_t j = 0; j < n; j++)
        parent = r.blocks[j] =
            wl_block_hash(parent, j < shared ? prefix * 1000003 + j : tail * 1000003 + j);
    r.key = n ? r.blocks[0] : r.id;
    return r;
}

typedef struct rt {
    const route_type *t;
    route_config *c;
    void *s;
} rt;

static rt make(const char *name, const char *yaml, uint64_t seed)
{
    rt x = {.t = route_find(name)};
    CHECK(x.t);
    int rc = route_config_parse(yaml, "test_route_production", &x.c);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    route_env env = {.n_dest = R, .seed = seed, .block_size = BS, .batch_tokens = 2048,
                     .pool_blocks = 1024, .ttft_slo_s = 2};
    CHECK_INT_EQ(route_check(x.t, x.c, &env, NULL), SIM_OK);
    x.s = calloc(1, x.t->state_size);
    const void *args[ROUTE_MAX_READS];
    route_config_args(x.c, x.t, args);
    CHECK_INT_EQ(x.t->create(x.s, &env, args), SIM_OK);
    return x;
}

static void drop(rt *x)
{
    x->t->destroy(x->s);
    free(x->s);
    route_config_free(x->c);
}

/* Route r (freed after) with in-flight counts l[0..3] at time t. */
static uint32_t go(rt *x, wl_request r, uint32_t l0, uint32_t l1, uint32_t l2, uint32_t l3)
{
    uint32_t load[R] = {l0, l1, l2, l3};
    route_view v = {.n_dest = R, .outstanding = load, .now_s = r.arrival_s};
    uint32_t d = x->t->route(x->s, &r, &v);
    wl_request_fini(&r);
    CHECK(d < R);
    return d;
}

static void test_sglang_gate(void)
{
    rt x = make("sglang_cache_aware", "router: {}\n", 1);
    /* Worker 0 holds prompt A. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 0), 0, 0, 0, 0), 0);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 1), 0, 0, 0, 0), 0); /* full match */
    /* Absolute part: 64 is not > 64 (cache wins), 65 is. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 2), 65, 1, 1, 1), 0);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 3), 66, 1, 1, 1), 1);
    /* Relative part: 195 is not > 1.5 x 130, 196 is. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 4), 195, 130, 130, 130), 0);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 5), 196, 130, 130, 130), 1);
    /* Least loaded: the first of the tied minima. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 6), 100, 30, 10, 10), 2);
    drop(&x);
}

static void test_sglang_match(void)
{
    rt x = make("sglang_cache_aware", "router: {}\n", 1);
    /* Empty trees: all sizes 0, the first tenant. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 0), 0, 0, 0, 0), 0);
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 0), 160);
    /* A miss goes to the smallest tree. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 2, 1), 0, 0, 0, 0), 1);
    /* 3 of 10 blocks = 0.3, not > 0.3: the smallest tree (2).  The split
     * of A's node after 3 blocks keeps tenant 0 at 160 tokens. */
    CHECK_INT_EQ(go(&x, req(10, 0, 3, 1, 3, 2), 0, 0, 0, 0), 2);
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 0), 160);
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 2), 160);
    /* 3 of 8 blocks = 0.375: the deepest node (A's first 3 blocks) is held
     * by 0 and 2: the first, 0, even though it is busier. */
    CHECK_INT_EQ(go(&x, req(8, 0, 3, 1, 4, 3), 5, 0, 0, 0), 0);
    /* 4 of 10 into A's tail node (tenant 0 only). */
    CHECK_INT_EQ(go(&x, req(10, 0, 4, 1, 5, 4), 0, 0, 0, 0), 0);
    /* The partial block counts in the denominator: 5 blocks matched of
     * 16 x 16 + 15 tokens = 80/271 < 0.3: a miss -> smallest tree (3). */
    CHECK_INT_EQ(go(&x, req(16, 15, 5, 1, 6, 5), 0, 0, 0, 0), 3);
    drop(&x);
}

static void test_sglang_evict(void)
{
    /* 320 characters at 4 per token = 80 tokens = 5 blocks per tenant. */
    rt x = make("sglang_cache_aware",
                "router: {sglang_cache_aware: {max_tree_size: 320, eviction_interval_s: 10}}\n",
                1);
    /* Worker 0 is the only least-loaded one: the gate sends all there. */
    CHECK_INT_EQ(go(&x, req(4, 0, 0, 0, 11, 0), 0, 100, 100, 100), 0); /* P1 at t 0 */
    CHECK_INT_EQ(go(&x, req(4, 0, 0, 0, 12, 1), 0, 100, 100, 100), 0); /* P2 at t 1 */
    CHECK_INT_EQ(go(&x, req(4, 0, 2, 11, 13, 2), 0, 100, 100, 100), 0); /* P3 shares 2 of P1 */
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 0), 160);
    /* Before the interval: nothing trimmed (a sub-block prompt inserts nothing). */
    CHECK_INT_EQ(go(&x, req(0, 8, 0, 0, 0, 9.999), 0, 100, 100, 100), 0);
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 0), 160);
    CHECK_U64_EQ(route__sglang_evictions(x.s), 0);
    /* At 10 s: the leaves by age — P1's tail (t 0), then P2 (t 1); then
     * 64 <= 80 tokens and the rest (P1's head, P3's tail; t 2) stays. */
    CHECK_INT_EQ(go(&x, req(0, 8, 0, 0, 0, 10), 0, 100, 100, 100), 0);
    CHECK_U64_EQ(route__sglang_tree_tokens(x.s, 0), 64);
    CHECK_U64_EQ(route__sglang_evictions(x.s), 2);
    /* P1 now matches 2 of 4 blocks (0.5) on 0; P2 is a miss -> smallest (1). */
    CHECK_INT_EQ(go(&x, req(4, 0, 2, 11, 14, 11), 0, 0, 0, 0), 0);
    CHECK_INT_EQ(go(&x, req(4, 0, 0, 0, 12, 12), 0, 0, 0, 0), 1);
    drop(&x);
}

static void test_aibrix_gate(void)
{
    /* Destination 1 holds P (10 blocks): routed there as the least loaded. */
    const char *y = "router: {}\n";
    struct { uint32_t l[R]; int gate; } cases[] = {
        {{7, 1, 0, 0}, 0},  /* gap 7 < 8 */
        {{8, 1, 0, 0}, 1},  /* gap 8, 8 > 2 (2.25 + 1) */
        {{20, 8, 8, 0}, 0}, /* 20 = 2 (9 + 1), not > */
        {{21, 8, 8, 0}, 1}, /* 21 > 2 (9.25 + 1) */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt x = make("aibrix_prefix", y, 3);
        CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 0), 1, 0, 1, 1), 1);
        const uint32_t *l = cases[c].l;
        uint32_t d = go(&x, req(10, 0, 0, 0, 1, 1), l[0], l[1], l[2], l[3]);
        if (cases[c].gate)
            CHECK(d != 1 && l[d] == (l[2] < l[3] ? l[2] : l[3])); /* a least-loaded pod */
        else
            CHECK_INT_EQ(d, 1); /* the match, within mean + std */
        drop(&x);
    }
}

static void test_aibrix_std(void)
{
    /* 0 holds P (10 blocks, 100 %), 1 holds P's first 5 blocks (50 %). */
    struct { uint32_t l[R]; uint32_t want; } cases[] = {
        {{1, 1, 1, 1}, 0}, /* sd 0: bound 1, 1 <= 1 */
        {{2, 1, 1, 1}, 1}, /* bound 1.25 + 0.5 = 1.75 < 2: 0 out, 1 (50 %) in */
        {{3, 3, 0, 0}, 0}, /* bound 1.5 + sqrt(3) = 3.23 */
        {{2, 1, 0, 0}, 1}, /* bound 0.75 + 0.957 = 1.71 < 2: 0 out */
        /* sample sd: 3.25 + 3.775 = 7.03 >= 7 (a population sd, 3.27,
         * would exclude 0) */
        {{7, 6, 0, 0}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt x = make("aibrix_prefix", "router: {}\n", 5);
        CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 0), 0, 1, 1, 1), 0);
        /* P' (5 of P's blocks, then new): 0 above its bound -> least (1). */
        CHECK_INT_EQ(go(&x, req(10, 0, 5, 1, 2, 1), 5, 0, 1, 1), 1);
        const uint32_t *l = cases[c].l;
        uint32_t d = go(&x, req(10, 0, 0, 0, 1, 2), l[0], l[1], l[2], l[3]);
        CHECK_INT_EQ(d, cases[c].want);
        drop(&x);
    }
    /* Equal share and requests: random between the two holders only. */
    int seen[R] = {0};
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rt x = make("aibrix_prefix", "router: {}\n", seed);
        CHECK_INT_EQ(go(&x, req(10, 0, 0, 7, 1, 0), 0, 1, 1, 1), 0);
        CHECK_INT_EQ(go(&x, req(10, 0, 0, 7, 1, 1), 5, 0, 1, 1), 1); /* 0 above bound */
        seen[go(&x, req(10, 0, 0, 7, 1, 2), 0, 0, 0, 0)]++;
        drop(&x);
    }
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] == 0 && seen[3] == 0);
    /* Fewer requests break an equal share. */
    rt x = make("aibrix_prefix", "router: {}\n", 9);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 7, 1, 0), 0, 1, 1, 1), 0);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 7, 1, 1), 5, 0, 1, 1), 1);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 7, 1, 2), 1, 0, 1, 1), 1);
    drop(&x);
}

static void test_aibrix_ttl(void)
{
    rt x = make("aibrix_prefix", "router: {aibrix_prefix: {ttl_s: 100}}\n", 2);
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 0), 1, 1, 0, 1), 2);
    /* Still known at 99 s (and refreshed): the match beats fewer requests. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 99), 1, 0, 1, 1), 2);
    /* Idle from 99 s to 199 s: forgotten, least requests wins. */
    CHECK_INT_EQ(go(&x, req(10, 0, 0, 0, 1, 199), 1, 0, 1, 1), 1);
    drop(&x);
}

int main(void)
{
    test_sglang_gate();
    test_sglang_match();
    test_sglang_evict();
    test_aibrix_gate();
    test_aibrix_std();
    test_aibrix_ttl();
    printf("route_production: ok\n");
    return 0;
}
