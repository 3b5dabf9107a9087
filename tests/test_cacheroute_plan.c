/*
 * CacheRoute's plan policy (issue 19 §3): the churn-aware re-plan
 * (plan_rebalance) on random rate vectors (budget, imbalance, stop rule),
 * unchanged rates, `hold` over drifting intervals, `fresh` against the
 * planner, each rate estimator's closed form on a known count sequence,
 * work-aware k_b and byte-aware admission on hand-made examples, and the
 * router's own work estimate from the block hashes it sees.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/plan.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "check.h"

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 11;
}

static double unif(uint64_t *x) { return (double)lcg(x) / 9007199254740992.0; }

static int same_set(const plan *a, size_t ia, const plan *b, size_t ib)
{
    if (a->k[ia] != b->k[ib])
        return 0;
    for (uint32_t i = a->off[ia]; i < a->off[ia + 1]; i++) {
        int in = 0;
        for (uint32_t j = b->off[ib]; j < b->off[ib + 1]; j++)
            in |= a->dest[i] == b->dest[j];
        if (!in)
            return 0;
    }
    return 1;
}

static double max_load(const plan *pl, uint32_t *arg)
{
    uint32_t h = 0;
    for (uint32_t d = 1; d < pl->n_dest; d++)
        if (pl->load[d] > pl->load[h])
            h = d;
    if (arg)
        *arg = h;
    return pl->load[h];
}

/* Recompute a plan's loads from its table (cold share + w/k per replica). */
static void check_loads(const plan *pl)
{
    double *l = calloc(pl->n_dest, sizeof *l);
    for (uint32_t d = 0; d < pl->n_dest; d++)
        l[d] = pl->cold_w / pl->n_dest;
    for (size_t i = 0; i < pl->n_admitted; i++) {
        CHECK_INT_EQ(pl->off[i + 1] - pl->off[i], pl->k[i]);
        for (uint32_t j = pl->off[i]; j < pl->off[i + 1]; j++) {
            for (uint32_t m = pl->off[i]; m < j; m++)
                CHECK(pl->dest[m] != pl->dest[j]); /* distinct */
            l[pl->dest[j]] += pl->w[i] / pl->k[i];
        }
        CHECK_INT_EQ(plan_lookup(pl, pl->key[i]), (int64_t)i);
    }
    for (uint32_t d = 0; d < pl->n_dest; d++)
        CHECK_NEAR(pl->load[d], l[d], 1e-9 * (1 + l[d]));
    free(l);
}

/*
 * Property test: prev = LPT plan of rates r0; new rates r1 = r0 x a
 * log-normal factor (sigma 0.1 .. 1), some keys vanish, some appear.
 * churn_aware must make at most `budget` moves, move at most `budget`
 * keys whose k_b did not change, keep loads consistent, and end either
 * within 1 + ε, or out of budget, or where no single replica on the most
 * loaded destination fits on a less loaded one (the stop rule) — or skip
 * because the held table was already within max(1 + ε, its own planned
 * imbalance).
 */
static void test_churn_random(void)
{
    uint64_t x = 20240601;
    int reached = 0, skipped = 0, stuck = 0, out_of_budget = 0;
    for (int trial = 0; trial < 400; trial++) {
        const uint32_t R = 2 + (uint32_t)(lcg(&x) % 15);
        const size_t n = 5 + lcg(&x) % 200;
        const double sigma = 0.1 + 0.9 * unif(&x), eps = 0.02 + 0.3 * unif(&x);
        plan_key *k0 = malloc(n * sizeof *k0), *k1 = malloc((n + 20) * sizeof *k1);
        double tot = 0;
        for (size_t i = 0; i < n; i++) {
            k0[i] = (plan_key){1000 + i, 0.05 / (unif(&x) + 0.01)};
            tot += k0[i].rate;
        }
        size_t n1 = 0;
        for (size_t i = 0; i < n; i++) {
            if (unif(&x) < 0.05)
                continue; /* the key vanished */
            double g = sqrt(-2 * log(unif(&x) + 1e-300)) * cos(6.283185307179586 * unif(&x));
            k1[n1++] = (plan_key){k0[i].key, k0[i].rate * exp(sigma * g)};
        }
        for (int j = 0; j < 20; j++)
            k1[n1++] = (plan_key){900000 + (uint64_t)j, 0.05 / (unif(&x) + 0.01)};
        plan_params p = {.n_dest = R, .q_cap = tot / R * (0.2 + unif(&x)),
                         .slots = 1 + (double)(lcg(&x) % 8), .placement = PLAN_LPT,
                         .replicate = 1};
        plan prev, next, fresh;
        CHECK_INT_EQ(plan_build(k0, n, &p, &prev), SIM_OK);
        const uint64_t budget = lcg(&x) % 12;
        plan_churn_stats st;
        CHECK_INT_EQ(plan_rebalance(&prev, k1, NULL, NULL, n1, &p, eps, budget, &next, &st),
                     SIM_OK);
        CHECK_INT_EQ(plan_build(k1, n1, &p, &fresh), SIM_OK);
        check_loads(&next);
        CHECK(st.moves <= budget);
        const double mean = (next.admitted_w + next.cold_w) / R, imb = plan_imbalance(&next);
        if (st.skipped) {
            skipped++;
            CHECK_INT_EQ(next.n_admitted, prev.n_admitted);
            for (size_t i = 0; i < prev.n_admitted; i++)
                CHECK(same_set(&next, i, &prev, i)); /* the table is kept */
            CHECK(st.held_imbalance <=
                  fmax(1 + eps, plan_imbalance(&prev)) * (1 + 1e-12));
        } else {
            /* Same admitted set and k_b as a fresh plan. */
            CHECK_INT_EQ(next.n_admitted, fresh.n_admitted);
            CHECK_INT_EQ(next.sum_k, fresh.sum_k);
            for (size_t i = 0; i < next.n_admitted; i++) {
                CHECK_U64_EQ(next.key[i], fresh.key[i]);
                CHECK_INT_EQ(next.k[i], fresh.k[i]);
            }
            /* Keys kept with the same k_b move only through the budget. */
            uint64_t moved_same_k = 0;
            for (size_t i = 0; i < next.n_admitted; i++) {
                int64_t j = plan_lookup(&prev, next.key[i]);
                if (j >= 0 && prev.k[j] == next.k[i] && !same_set(&next, i, &prev, (size_t)j))
                    moved_same_k++;
            }
            CHECK(moved_same_k <= st.moves);
            if (imb <= 1 + eps + 1e-12) {
                reached++;
            } else if (st.moves == budget) {
                out_of_budget++;
            } else {
                /* Stuck: no replica on h fits on the least-loaded outsider. */
                uint32_t h;
                const double lh = max_load(&next, &h);
                CHECK(lh > (1 + eps) * mean);
                for (size_t i = 0; i < next.n_admitted; i++) {
                    const uint32_t *d = next.dest + next.off[i];
                    int on_h = 0;
                    for (uint32_t j = 0; j < next.k[i]; j++)
                        on_h |= d[j] == h;
                    if (!on_h)
                        continue;
                    const double s = next.w[i] / next.k[i];
                    for (uint32_t l = 0; l < R; l++) {
                        int in = 0;
                        for (uint32_t j = 0; j < next.k[i]; j++)
                            in |= d[j] == l;
                        if (!in)
                            CHECK(!(next.load[l] + s < lh));
                    }
                }
                stuck++;
            }
        }
        plan_fini(&prev);
        plan_fini(&next);
        plan_fini(&fresh);
        free(k0);
        free(k1);
    }
    /* The cases are all exercised. */
    CHECK(reached > 20);
    CHECK(skipped > 5);
    CHECK(out_of_budget > 5);
    printf("churn_aware random: %d within 1+eps, %d skipped, %d out of budget, %d stuck\n",
           reached, skipped, out_of_budget, stuck);
}

/* Unchanged rates: churn_aware keeps every key where it is. */
static void test_churn_unchanged(void)
{
    uint64_t x = 7;
    for (int trial = 0; trial < 50; trial++) {
        enum { N = 300 };
        plan_key keys[N];
        for (int i = 0; i < N; i++)
            keys[i] = (plan_key){(uint64_t)i + 1, 0.01 / (unif(&x) + 1e-3)};
        plan_params p = {.n_dest = 8, .q_cap = 2, .slots = 5, .placement = PLAN_LPT,
                         .replicate = 1};
        plan prev, next;
        CHECK_INT_EQ(plan_build(keys, N, &p, &prev), SIM_OK);
        plan_churn_stats st;
        CHECK_INT_EQ(plan_rebalance(&prev, keys, NULL, NULL, N, &p, 0.0, 1000, &next, &st),
                     SIM_OK);
        CHECK_INT_EQ(st.skipped, 1);
        CHECK_INT_EQ(st.moves, 0);
        CHECK_INT_EQ(next.n_admitted, prev.n_admitted);
        for (size_t i = 0; i < prev.n_admitted; i++)
            CHECK(same_set(&next, i, &prev, i));
        plan_fini(&prev);
        plan_fini(&next);
    }
}

/* A hand-made churn case: one key's rate doubles; the table is outside
 * 1 + ε, one move restores balance. */
static void test_churn_known(void)
{
    /* R = 2, k_b = 1: keys 1..4 at rate 1: LPT gives {1,3} on 0, {2,4} on 1. */
    plan_key k0[4] = {{1, 1}, {2, 1}, {3, 1}, {4, 1}};
    plan_params p = {.n_dest = 2, .q_cap = 100, .slots = 10, .placement = PLAN_LPT,
                     .replicate = 1};
    plan prev, next;
    CHECK_INT_EQ(plan_build(k0, 4, &p, &prev), SIM_OK);
    CHECK_INT_EQ(prev.dest[0], 0);
    CHECK_INT_EQ(prev.dest[1], 1);
    /* New rates: key 1 -> 3, key 3 -> 2: loads 5 | 2, mean 3.5, 1.43. */
    plan_key k1[4] = {{1, 3}, {2, 1}, {3, 2}, {4, 1}};
    plan_churn_stats st;
    CHECK_INT_EQ(plan_rebalance(&prev, k1, NULL, NULL, 4, &p, 0.1, 5, &next, &st), SIM_OK);
    CHECK_NEAR(st.held_imbalance, 5 / 3.5, 1e-12);
    CHECK_INT_EQ(st.skipped, 0);
    /* Heaviest replica on 0 that fits on 1: key 1 (3) gives 2 | 5, no
     * better; key 3 (2): 3 | 4 (fits: 2 + 2 < 5).  Then 4 | 3: 4 > 3.85
     * and no replica fits (3 + 3 > 4, 1 + 3 = 4 not < 4): stop. */
    CHECK_INT_EQ(st.moves, 1);
    CHECK_NEAR(max_load(&next, NULL), 4, 1e-12);
    CHECK_INT_EQ(next.dest[next.off[plan_lookup(&next, 3)]], 1);
    plan_fini(&next);
    /* Budget 0: nothing moves, the table is the held one. */
    CHECK_INT_EQ(plan_rebalance(&prev, k1, NULL, NULL, 4, &p, 0.1, 0, &next, &st), SIM_OK);
    CHECK_INT_EQ(st.moves, 0);
    CHECK_INT_EQ(st.budget_hit, 1);
    CHECK_NEAR(max_load(&next, NULL), 5, 1e-12);
    plan_fini(&next);
    /* ε large enough: skipped. */
    CHECK_INT_EQ(plan_rebalance(&prev, k1, NULL, NULL, 4, &p, 0.5, 5, &next, &st), SIM_OK);
    CHECK_INT_EQ(st.skipped, 1);
    plan_fini(&next);
    CHECK_INT_EQ(plan_rebalance(&prev, k1, NULL, NULL, 4, &p, -1, 5, &next, &st), SIM_EINVAL);
    plan_fini(&prev);
}

/* Work-aware k_b and byte-aware admission on hand-made keys. */
static void test_work_and_bytes(void)
{
    /* Rates 2, 2; work 900 and 100 tokens per request; q_cap = 2.
     * Rate weight: k = 1, 1.  Work: mean work 500, q_cap_w = 1000;
     * w = 1800 -> k = 2, w = 200 -> k = 1. */
    plan_key keys[2] = {{1, 2}, {2, 2}};
    const double work[2] = {900, 100};
    plan_params p = {.n_dest = 4, .q_cap = 2, .slots = 4, .placement = PLAN_LPT,
                     .replicate = 1};
    plan pl;
    CHECK_INT_EQ(plan_build_ex(keys, work, NULL, 2, &p, &pl), SIM_OK);
    CHECK_INT_EQ(pl.k[0], 1);
    CHECK_INT_EQ(pl.k[1], 1);
    plan_fini(&pl);
    p.weight = PLAN_WEIGHT_WORK;
    CHECK_INT_EQ(plan_build_ex(keys, work, NULL, 2, &p, &pl), SIM_OK);
    CHECK_NEAR(pl.q_cap_w, 1000, 1e-9);
    CHECK_U64_EQ(pl.key[0], 1);
    CHECK_INT_EQ(pl.k[0], 2);
    CHECK_INT_EQ(pl.k[1], 1);
    CHECK_NEAR(pl.load[pl.dest[0]], 900, 1e-9);
    plan_fini(&pl);
    /* A constant work (a power of two: exact) is rate weighting. */
    enum { N = 500 };
    plan_key many[N];
    double two[N];
    uint64_t x = 3;
    for (int i = 0; i < N; i++)
        many[i] = (plan_key){(uint64_t)i + 7, 0.02 / (unif(&x) + 1e-3)}, two[i] = 2;
    plan a, b;
    p = (plan_params){.n_dest = 12, .q_cap = 3, .slots = 6, .placement = PLAN_LPT, .replicate = 1};
    CHECK_INT_EQ(plan_build(many, N, &p, &a), SIM_OK);
    p.weight = PLAN_WEIGHT_WORK;
    CHECK_INT_EQ(plan_build_ex(many, two, NULL, N, &p, &b), SIM_OK);
    CHECK_INT_EQ(a.sum_k, b.sum_k);
    CHECK(memcmp(a.dest, b.dest, a.sum_k * sizeof *a.dest) == 0);
    plan_fini(&a);
    plan_fini(&b);

    /* Bytes: R = 1, W = 2; footprints 3000, 100, 100 tokens, rates 3, 2, 1.
     * Slots admit the top two by rate (keys 1, 2).  Bytes: F̄ = 1066.7,
     * budget 2133 tokens; value per token 0.001, 0.02, 0.01: admit 2 (100),
     * 3 (200), skip 1 (3200 > 2133). */
    plan_key kb[3] = {{1, 3}, {2, 2}, {3, 1}};
    const double tok[3] = {3000, 100, 100};
    p = (plan_params){.n_dest = 1, .q_cap = 100, .slots = 2, .placement = PLAN_LPT,
                      .replicate = 1};
    CHECK_INT_EQ(plan_build_ex(kb, NULL, tok, 3, &p, &pl), SIM_OK);
    CHECK_INT_EQ(pl.n_admitted, 2);
    CHECK(plan_lookup(&pl, 1) >= 0 && plan_lookup(&pl, 2) >= 0);
    plan_fini(&pl);
    p.admission = PLAN_ADMIT_BYTES;
    CHECK_INT_EQ(plan_build_ex(kb, NULL, tok, 3, &p, &pl), SIM_OK);
    CHECK_NEAR(pl.warm_budget, 2 * 3200.0 / 3, 1e-9);
    CHECK_INT_EQ(pl.n_admitted, 2);
    CHECK_INT_EQ(plan_lookup(&pl, 1), -1);
    CHECK_U64_EQ(pl.key[0], 2); /* placement order: weight descending */
    CHECK_U64_EQ(pl.key[1], 3);
    CHECK_NEAR(pl.warm_used, 200, 1e-12);
    plan_fini(&pl);
    /* The pool caps the budget: 150 tokens admits key 2 only. */
    p.pool_tokens = 150;
    CHECK_INT_EQ(plan_build_ex(kb, NULL, tok, 3, &p, &pl), SIM_OK);
    CHECK_INT_EQ(pl.n_admitted, 1);
    CHECK_U64_EQ(pl.key[0], 2);
    plan_fini(&pl);
}

/* ---- through the router ---- */

static void *make_cr(const char *yaml, const route_env *env)
{
    const route_type *rt = route_find("cacheroute");
    route_config *c = NULL;
    CHECK_INT_EQ(route_config_parse(yaml, "test_cacheroute_plan", &c), SIM_OK);
    CHECK_INT_EQ(route_check(rt, c, env, NULL), SIM_OK);
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    void *s = calloc(1, rt->state_size);
    CHECK_INT_EQ(rt->create(s, env, args), SIM_OK);
    route_config_free(c);
    return s;
}

static void drop_cr(void *s)
{
    route_find("cacheroute")->destroy(s);
    free(s);
}

/* Known count sequence for one key (plus a filler key): 10, 20, 40
 * requests in three 10 s intervals.  interval: 4/s; window N = 2:
 * (20 + 40) / 20 s = 3/s; ewma h = 1 (α = 1/2): e = 0.5, 1.25, 2.625,
 * bias-corrected by 1 - 2^-3 = 0.875: 3/s; nominal: share 0.25 × 8/s. */
static void test_estimators(void)
{
    const route_type *rt = route_find("cacheroute");
    plan_key nominal[2] = {{5, 0.75}, {1, 0.25}};
    const route_env env = {.n_dest = 4, .seed = 1, .nominal = nominal, .n_nominal = 2,
                           .nominal_rate = 8};
    const char *est[4] = {"interval", "window", "ewma", "nominal"};
    const double want[4] = {4, 3, 3, 2};
    uint32_t load[4] = {0};
    route_view v = {.n_dest = 4, .outstanding = load};
    for (int e = 0; e < 4; e++) {
        char yaml[300];
        snprintf(yaml, sizeof yaml, "router:\n  cacheroute: {q_cap: 1000, slots: 4, interval_s: "
                 "10, rate_estimate: %s, rate_window: 2, rate_half_life: 1}\n", est[e]);
        void *s = make_cr(yaml, &env);
        const int counts[3] = {10, 20, 40};
        for (int i = 0; i < 3; i++) {
            for (int c = 0; c < counts[i]; c++)
                rt->route(s, &(wl_request){.key = 1, .prompt_tokens = 1, .output_tokens = 1}, &v);
            rt->route(s, &(wl_request){.key = 5, .prompt_tokens = 1, .output_tokens = 1}, &v);
            rt->on_interval(s, 10.0 * (i + 1));
        }
        route_telemetry t = {0};
        rt->telemetry(s, &t);
        int found = 0;
        for (size_t i = 0; i < t.n_keys; i++)
            if (t.key[i] == 1) {
                CHECK_NEAR(t.rate[i], want[e], 1e-12);
                found = 1;
            }
        CHECK(found);
        /* The nominal plan is the same every interval: nothing moves. */
        if (e == 3)
            for (size_t i = 0; i < t.n_iv; i++)
                CHECK_INT_EQ(t.iv[i].keys_moved, 0);
        route_telemetry_fini(&t);
        drop_cr(s);
    }
}

/* hold never moves a key over many intervals of drifting rates; fresh
 * under the same traffic does. */
static void test_hold_drift(void)
{
    const route_type *rt = route_find("cacheroute");
    enum { R = 6, K = 40 };
    const route_env env = {.n_dest = R, .seed = 1};
    uint32_t load[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load};
    uint64_t fresh_moved = 0;
    for (int pol = 0; pol < 2; pol++) {
        void *s = make_cr(pol ? "router:\n  cacheroute: {q_cap: 3, slots: 3, interval_s: 1, "
                                "plan_policy: fresh}\n"
                              : "router:\n  cacheroute: {q_cap: 3, slots: 3, interval_s: 1, "
                                "plan_policy: hold}\n",
                          &env);
        uint64_t x = 11;
        double rate[K];
        for (int k = 0; k < K; k++)
            rate[k] = 1 + 10 * unif(&x);
        route_telemetry t0 = {0};
        for (int iv = 0; iv < 30; iv++) {
            for (int k = 0; k < K; k++) {
                rate[k] *= exp(0.4 * (unif(&x) - 0.5));
                for (int c = 0; c < (int)rate[k]; c++)
                    rt->route(s, &(wl_request){.key = (uint64_t)k + 1}, &v);
            }
            rt->on_interval(s, iv + 1.0);
            if (iv == 0) { /* the first table (telemetry only copies) */
                rt->telemetry(s, &t0);
                CHECK(t0.n_keys > 0);
            }
            /* Held: every admitted key's first member (no request is in
             * flight, so the first member wins) stays the same. */
            if (!pol)
                for (size_t i = 0; i < t0.n_keys; i++)
                    CHECK_INT_EQ(rt->route(s, &(wl_request){.key = t0.key[i]}, &v),
                                 t0.dest[t0.off[i]]);
        }
        route_telemetry_fini(&t0);
        route_telemetry t = {0};
        rt->telemetry(s, &t);
        CHECK_INT_EQ(t.n_iv, 30);
        for (size_t i = 1; i < t.n_iv; i++) {
            if (!pol) {
                CHECK_INT_EQ(t.iv[i].keys_moved, 0);
                CHECK_INT_EQ(t.iv[i].skipped, 1);
                CHECK(t.iv[i].held_imbalance >= 1);
            } else {
                fresh_moved += t.iv[i].keys_moved;
            }
        }
        route_telemetry_fini(&t);
        drop_cr(s);
    }
    CHECK(fresh_moved > 0);
}

/* The router's work estimate: key 1's prompts (20 blocks of 16 tokens)
 * share nothing (each request's first block differs), so u = 320 + 30
 * tokens; key 2's prompts are identical (320 tokens shared), u = 0 + 30.  Both at 10 requests/s, q_cap 10:
 * rate weight gives k = 1, 1; work weight: mean u = 190, q_cap_w = 1900,
 * w_1 = 3500 -> k = 2, w_2 = 300 -> k = 1.  The shared-prefix footprint
 * shows in warm_tokens_moved when a fresh plan moves key 2. */
static void test_router_work(void)
{
    const route_type *rt = route_find("cacheroute");
    enum { R = 4, B = 20 };
    const route_env env = {.n_dest = R, .seed = 1, .block_size = 16};
    uint32_t load[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load};
    uint64_t blocks[B];
    for (int w = 0; w < 2; w++) {
        void *s = make_cr(w ? "router:\n  cacheroute: {q_cap: 10, slots: 4, interval_s: 1, "
                              "plan_weight: work}\n"
                            : "router:\n  cacheroute: {q_cap: 10, slots: 4, interval_s: 1}\n",
                          &env);
        for (int i = 0; i < 10; i++) {
            for (int b = 0; b < B; b++)
                blocks[b] = 1000 * (uint64_t)(i + 1) + (uint64_t)b + 1; /* unique */
            wl_request r = {.key = 1, .prompt_tokens = 16 * B, .output_tokens = 30,
                            .n_blocks = B, .blocks = blocks};
            rt->route(s, &r, &v);
            uint64_t same[B];
            for (int b = 0; b < B; b++)
                same[b] = 77 + (uint64_t)b;
            wl_request q = {.key = 2, .prompt_tokens = 16 * B, .output_tokens = 30,
                            .n_blocks = B, .blocks = same};
            rt->route(s, &q, &v);
        }
        rt->on_interval(s, 1);
        route_telemetry t = {0};
        rt->telemetry(s, &t);
        CHECK_INT_EQ(t.n_keys, 2);
        CHECK_U64_EQ(t.key[0], 1);
        CHECK_INT_EQ(t.kb[0], w ? 2 : 1);
        CHECK_INT_EQ(t.kb[1], 1);
        route_telemetry_fini(&t);
        drop_cr(s);
    }
    /* Footprints: key 2 alone, then key 3 hotter so LPT moves key 2 onto
     * the other destination (R = 2, k = 1): one move of 320 tokens. */
    const route_env e2 = {.n_dest = 2, .seed = 1, .block_size = 16};
    void *s = make_cr("router:\n  cacheroute: {q_cap: 1000, slots: 4, interval_s: 1}\n", &e2);
    uint64_t same[B], other[4] = {5, 6, 7, 8};
    for (int b = 0; b < B; b++)
        same[b] = 77 + (uint64_t)b;
    wl_request q = {.key = 2, .prompt_tokens = 16 * B, .output_tokens = 1, .n_blocks = B,
                    .blocks = same};
    wl_request o = {.key = 3, .prompt_tokens = 64, .output_tokens = 1, .n_blocks = 4,
                    .blocks = other};
    for (int i = 0; i < 5; i++)
        rt->route(s, &q, &v);
    for (int i = 0; i < 2; i++)
        rt->route(s, &o, &v);
    rt->on_interval(s, 1); /* key 2 on 0, key 3 on 1 */
    for (int i = 0; i < 2; i++)
        rt->route(s, &q, &v);
    for (int i = 0; i < 5; i++)
        rt->route(s, &o, &v);
    rt->on_interval(s, 2); /* key 3 first now: on 0, key 2 on 1 */
    route_telemetry t = {0};
    rt->telemetry(s, &t);
    CHECK_INT_EQ(t.n_iv, 2);
    CHECK_INT_EQ(t.iv[1].keys_moved, 2);
    CHECK_NEAR(t.iv[1].warm_tokens_moved, 320 + 64, 1e-12);
    route_telemetry_fini(&t);
    drop_cr(s);
}

/* Contradictory legacy + new keys are refused at check. */
static void test_bad_combination(void)
{
    const route_type *rt = route_find("cacheroute");
    route_config *c = NULL;
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {q_cap: 1, slots: 1, replan: false, "
                                    "plan_policy: churn_aware}\n", "t", &c),
                 SIM_OK);
    const route_env env = {.n_dest = 2};
    CHECK_INT_EQ(route_check(rt, c, &env, NULL), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "router.cacheroute.replan");
    CHECK_STR_CONTAINS(sim_errmsg(), "churn_aware");
    route_config_free(c);
    /* replan: false with the default policy is hold (legacy configs load). */
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {q_cap: 1, slots: 1, replan: false}\n",
                                    "t", &c),
                 SIM_OK);
    CHECK_INT_EQ(route_check(rt, c, &env, NULL), SIM_OK);
    route_config_free(c);
    /* nominal without the gateway's nominal rates: create fails. */
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {q_cap: 1, slots: 1, rate_estimate: "
                                    "nominal}\n", "t", &c),
                 SIM_OK);
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    void *s = calloc(1, rt->state_size);
    CHECK_INT_EQ(rt->create(s, &env, args), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "nominal");
    free(s);
    route_config_free(c);
    /* Out-of-range values are refused by the schema. */
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {rate_window: 0}\n", "t", &c),
                 SIM_EINVAL);
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {churn_budget: 1.5}\n", "t", &c),
                 SIM_EINVAL);
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {plan_policy: lazy}\n", "t", &c),
                 SIM_EINVAL);
}

int main(void)
{
    test_churn_known();
    test_churn_unchanged();
    test_churn_random();
    test_work_and_bytes();
    test_estimators();
    test_hold_drift();
    test_router_work();
    test_bad_combination();
    puts("cacheroute_plan: ok");
    return 0;
}
