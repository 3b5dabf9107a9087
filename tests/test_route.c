/*
 * Router property tests, run over every registered router (STYLE.md §3):
 * create/destroy, destinations always in range, determinism for a seed.
 * Then policy-specific properties: flat_lb picks the less loaded of two
 * distinct random candidates and spreads uniformly; sticky maps a key to a
 * fixed destination and moves only ~1/R of keys when a destination is
 * added; round_robin cycles, random is uniform, both skip down
 * destinations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost.h"
#include "models/routers/plan.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "check.h"

/* Create `rt` in `s` from `env` and the router config text `yaml`
 * ("router: {...}"); returns create's result (the params are read at
 * create only, so the config is freed right after). */
static int create_with(const route_type *rt, void *s, const route_env *env, const char *yaml)
{
    route_config *c = NULL;
    CHECK_INT_EQ(route_config_parse(yaml, "test_route", &c), SIM_OK);
    CHECK_INT_EQ(route_check(rt, c, env, NULL), SIM_OK);
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    int rc = rt->create(s, env, args);
    route_config_free(c);
    return rc;
}

static void *make(const route_type *rt, uint32_t n_dest, uint64_t seed)
{
    void *s = calloc(1, rt->state_size ? rt->state_size : 1);
    static cost_model cm = {.lin_s_per_token = 1e-4, .overhead_s = 1e-3};
    const route_env env = {.n_dest = n_dest, .seed = seed, .ttft_slo_s = 3.5, .block_size = 16,
                           .pool_blocks = 4096, .cost = &cm, .batch_tokens = 8192};
    CHECK_INT_EQ(create_with(rt, s, &env,
                             "router:\n  cacheroute: {q_cap: 50, slots: 4, interval_s: 10}\n"
                             "  dualmap: {tp_s: 1e-4}\n"),
                 SIM_OK);
    return s;
}

static void drop(const route_type *rt, void *s)
{
    if (rt->destroy)
        rt->destroy(s);
    free(s);
}

static void test_all_registered(void)
{
    enum { R = 7, N = 5000 };
    uint32_t load[R] = {0};
    uint64_t queued[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    int count = 0;
    for (size_t i = 0; route_registry[i]; i++, count++) {
        const route_type *rt = route_registry[i];
        CHECK(rt->name && rt->help && rt->create && rt->route);
        CHECK(route_find(rt->name) == rt);
        void *a = make(rt, R, 42), *b = make(rt, R, 42);
        for (uint64_t k = 0; k < N; k++) {
            wl_request r = {.id = k, .key = k * 0x9e3779b97f4a7c15ULL, .prompt_tokens = 100,
                            .output_tokens = 10};
            memset(load, 0, sizeof load);
            load[k % R] = (uint32_t)(k % 5);
            uint32_t da = rt->route(a, &r, &v), db = rt->route(b, &r, &v);
            CHECK(da < R);
            CHECK_INT_EQ(da, db); /* same seed, same inputs: same decision */
            if (rt->on_interval && k % 500 == 499)
                {
                    rt->on_interval(a, (double)k / 50);
                    rt->on_interval(b, (double)k / 50);
                }
            if (rt->on_complete) {
                rt->on_complete(a, &r, da, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
                rt->on_complete(b, &r, db, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
            }
        }
        drop(rt, a);
        drop(rt, b);
        /* A single destination always gets everything. */
        void *one = make(rt, 1, 1);
        route_view v1 = {.n_dest = 1, .outstanding = load, .queued_tokens = queued};
        wl_request r = {.key = 5, .prompt_tokens = 1, .output_tokens = 1};
        CHECK_INT_EQ(rt->route(one, &r, &v1), 0);
        drop(rt, one);
    }
    CHECK(count >= 2);
    CHECK(route_find("no_such_router") == NULL);
}

static void test_flat_lb(void)
{
    enum { R = 10, N = 200000 };
    const route_type *rt = route_find("flat_lb");
    void *s = make(rt, R, 7);
    uint32_t load[R] = {0};
    uint64_t queued[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    wl_request r = {.prompt_tokens = 1, .output_tokens = 1};
    /* Equal loads: the first draw wins ties, so choices are uniform. */
    uint32_t hist[R] = {0};
    for (int i = 0; i < N; i++)
        hist[rt->route(s, &r, &v)]++;
    for (int d = 0; d < R; d++)
        CHECK_NEAR(hist[d], N / R, 0.03 * N / R);
    /* Destination 3 with a huge load is chosen only when both draws would
     * be 3, which cannot happen (distinct draws): never. */
    load[3] = 1000;
    for (int i = 0; i < N / 10; i++)
        CHECK(rt->route(s, &r, &v) != 3);
    /* Only destination 0 lightly loaded, all others busy: 0 wins whenever
     * drawn, i.e. with probability 2/R. */
    for (int d = 0; d < R; d++)
        load[d] = d == 0 ? 0 : 5;
    int zero = 0;
    for (int i = 0; i < N; i++)
        zero += rt->route(s, &r, &v) == 0;
    CHECK_NEAR((double)zero / N, 2.0 / R, 0.01);
    drop(rt, s);
}

static void test_sticky(void)
{
    enum { R = 30, K = 20000 };
    const route_type *rt = route_find("sticky");
    void *s30 = make(rt, R, 1), *s30b = make(rt, R, 99), *s31 = make(rt, R + 1, 1);
    uint32_t load[R + 1] = {0};
    uint64_t queued[R + 1] = {0};
    route_view v30 = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    route_view v31 = {.n_dest = R + 1, .outstanding = load, .queued_tokens = queued};
    uint32_t hist[R] = {0};
    int moved = 0, moved_elsewhere = 0;
    for (uint64_t k = 0; k < K; k++) {
        wl_request r = {.key = k * 0x9e3779b97f4a7c15ULL + 1, .prompt_tokens = 1,
                        .output_tokens = 1};
        uint32_t d = rt->route(s30, &r, &v30);
        CHECK_INT_EQ(rt->route(s30, &r, &v30), d); /* same key, same destination */
        CHECK_INT_EQ(rt->route(s30b, &r, &v30), d); /* independent of the run seed */
        load[d] += 3; /* load-blind: load changes nothing */
        CHECK_INT_EQ(rt->route(s30, &r, &v30), d);
        hist[d]++;
        uint32_t d31 = rt->route(s31, &r, &v31);
        if (d31 != d) {
            moved++;
            moved_elsewhere += d31 != R; /* a key may only move to the new node */
        }
    }
    /* Adding a 31st destination moves ~1/31 of keys, all to it. */
    CHECK_NEAR((double)moved / K, 1.0 / (R + 1), 0.012);
    CHECK_INT_EQ(moved_elsewhere, 0);
    /* 256 virtual nodes: every destination owns 1/R ± 25 %. */
    for (int d = 0; d < R; d++)
        CHECK_NEAR(hist[d], K / R, 0.25 * K / R);
    drop(rt, s30);
    drop(rt, s30b);
    drop(rt, s31);
}

static void test_chwbl(void)
{
    enum { R = 30, N = 100000 };
    const route_type *ch = route_find("chwbl"), *st = route_find("sticky");
    CHECK(ch != NULL);
    void *s = make(ch, R, 1), *sticky = make(st, R, 1);
    uint32_t load[R] = {0};
    uint64_t queued[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    /* Idle cluster: every key goes home (its sticky destination). */
    for (uint64_t k = 0; k < 1000; k++) {
        wl_request r = {.key = k * 7919 + 3};
        CHECK_INT_EQ(ch->route(s, &r, &v), st->route(sticky, &r, &v));
    }
    /* Random arrivals and departures with a skewed key popularity: after
     * placement no destination exceeds ceil(c * mean), mean = (T+1)/R, and
     * the bound never drops below one request. */
    uint64_t x = 1, total = 0;
    int moved = 0;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        if ((x >> 61) < 3 && total > 0) { /* a departure */
            uint32_t d = (uint32_t)((x >> 20) % R);
            while (load[d] == 0)
                d = (d + 1) % R;
            load[d]--;
            total--;
            continue;
        }
        wl_request r = {.key = (x >> 33) % 8}; /* 8 hot keys */
        uint32_t d = ch->route(s, &r, &v);
        double bound = ceil(1.25 * (double)(total + 1) / R);
        if (bound < 1)
            bound = 1;
        CHECK(load[d] + 1 <= bound);
        moved += d != st->route(sticky, &r, &v);
        load[d]++;
        total++;
    }
    CHECK(moved > 0); /* the bound did push hot keys off their home */
    drop(ch, s);
    /* c huge (the largest the schema allows) is sticky. */
    const route_env env = {.n_dest = R, .seed = 1};
    void *inf = calloc(1, ch->state_size);
    CHECK_INT_EQ(create_with(ch, inf, &env, "router: {chwbl: {c: 1e9}}\n"), SIM_OK);
    for (uint64_t k = 0; k < 2000; k++) {
        wl_request r = {.key = k};
        load[k % R] = (uint32_t)(k % 50);
        CHECK_INT_EQ(ch->route(inf, &r, &v), st->route(sticky, &r, &v));
    }
    drop(ch, inf);
    drop(st, sticky);
    /* c < 1 is rejected (by the schema, when the config is bound). */
    route_config *bad = NULL;
    CHECK_INT_EQ(route_config_parse("router: {chwbl: {c: 0.9}}\n", "test_route", &bad),
                 SIM_EINVAL);
    CHECK(bad == NULL);
}

/* round_robin (kube-proxy IPVS rr): destinations in turn from a seeded
 * start, blind to load; a down destination is skipped and the cycle goes
 * on after it. */
static void test_round_robin(void)
{
    enum { R = 7 };
    const route_type *rt = route_find("round_robin");
    CHECK(rt != NULL);
    void *s = make(rt, R, 3);
    uint32_t load[R] = {0};
    uint8_t down[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load};
    wl_request r = {.prompt_tokens = 1, .output_tokens = 1};
    uint32_t first = rt->route(s, &r, &v);
    for (uint32_t i = 1; i < 3 * R; i++) {
        load[i % R] = 100 * i; /* load-blind */
        CHECK_INT_EQ(rt->route(s, &r, &v), (first + i) % R);
    }
    /* The next one is `first` again (3R requests sent); mark it and the
     * one after down: both skipped, the cycle continues past them. */
    down[first] = 1;
    down[(first + 1) % R] = 1;
    v.down = down;
    CHECK_INT_EQ(rt->route(s, &r, &v), (first + 2) % R);
    CHECK_INT_EQ(rt->route(s, &r, &v), (first + 3) % R);
    drop(rt, s);
    /* Replicas (other seeds) do not all start at one destination. */
    int starts[R] = {0}, distinct = 0;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        void *x = make(rt, R, seed);
        starts[rt->route(x, &r, &(route_view){.n_dest = R, .outstanding = load})]++;
        drop(rt, x);
    }
    for (int d = 0; d < R; d++)
        distinct += starts[d] > 0;
    CHECK(distinct >= 4);
}

/* random (kube-proxy iptables mode): uniform over the destinations,
 * blind to load, uniform over the live ones under faults. */
static void test_random(void)
{
    enum { R = 10, N = 200000 };
    const route_type *rt = route_find("random");
    CHECK(rt != NULL);
    void *s = make(rt, R, 11);
    uint32_t load[R] = {0};
    uint8_t down[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load};
    wl_request r = {.prompt_tokens = 1, .output_tokens = 1};
    uint32_t hist[R] = {0};
    load[4] = 1000; /* load-blind: 4 still gets its share */
    for (int i = 0; i < N; i++)
        hist[rt->route(s, &r, &v)]++;
    for (int d = 0; d < R; d++)
        CHECK_NEAR(hist[d], N / R, 0.03 * N / R);
    /* Two down: never chosen, the other eight share uniformly. */
    down[2] = down[7] = 1;
    v.down = down;
    memset(hist, 0, sizeof hist);
    for (int i = 0; i < N; i++)
        hist[rt->route(s, &r, &v)]++;
    for (int d = 0; d < R; d++)
        if (down[d])
            CHECK_INT_EQ(hist[d], 0);
        else
            CHECK_NEAR(hist[d], N / (R - 2), 0.03 * N / (R - 2));
    drop(rt, s);
}

/* cacheroute re-plans from each interval's counts; with replan off the
 * first plan stays (a stale plan) whatever the traffic does later. */
static void test_cacheroute_replan(void)
{
    enum { R = 6 };
    const route_type *rt = route_find("cacheroute");
    uint32_t load[R] = {0};
    uint64_t queued[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    for (int replan = 0; replan <= 1; replan++) {
        void *s = calloc(1, rt->state_size);
        const route_env env = {.n_dest = R, .seed = 1};
        char yaml[200];
        snprintf(yaml, sizeof yaml, "router:\n  sticky: {vnodes: 64}\n  cacheroute: {q_cap: 1000, "
                 "slots: 1, interval_s: 10, replan: %s}\n", replan ? "true" : "false");
        CHECK_INT_EQ(create_with(rt, s, &env, yaml), SIM_OK);
        /* Interval 1: keys 1..6 hot; interval 2: keys 7..12 hot instead.
         * C = 6 slots, k_b = 1: each plan admits the six hot keys. */
        wl_request r = {.prompt_tokens = 1, .output_tokens = 1};
        for (int i = 0; i < 600; i++) {
            r.key = 1 + (uint64_t)(i % 6);
            rt->route(s, &r, &v);
        }
        rt->on_interval(s, 10);
        uint32_t d_first = rt->route(s, &(wl_request){.key = 1}, &v);
        for (int i = 0; i < 600; i++) {
            r.key = 7 + (uint64_t)(i % 6);
            rt->route(s, &r, &v);
        }
        rt->on_interval(s, 20);
        route_telemetry t = {0};
        rt->telemetry(s, &t);
        CHECK_INT_EQ(t.n_keys, 6);
        int old_keys = 0;
        for (size_t i = 0; i < t.n_keys; i++)
            old_keys += t.key[i] <= 6;
        /* Stale: still the first six keys; fresh: the new six. */
        CHECK_INT_EQ(old_keys, replan ? 0 : 6);
        CHECK_INT_EQ(t.n_iv, 2); /* hold records every interval too */
        if (!replan) { /* ... and never moves a key */
            CHECK_INT_EQ(t.iv[1].keys_moved, 0);
            CHECK_INT_EQ(t.iv[1].skipped, 1);
        }
        if (!replan) /* key 1 keeps its table entry */
            CHECK_INT_EQ(rt->route(s, &(wl_request){.key = 1}, &v), d_first);
        route_telemetry_fini(&t);
        rt->destroy(s);
        free(s);
    }
}

/* Warm start: with the workload's nominal shares the table exists at
 * t = 0 (before any interval), and a key too hot for one destination is
 * already spread over k_b of them. */
static void test_cacheroute_warm_start(void)
{
    enum { R = 8 };
    const route_type *rt = route_find("cacheroute");
    uint32_t load[R] = {0};
    uint64_t queued[R] = {0};
    route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
    plan_key nominal[3] = {{42, 0.5}, {7, 0.3}, {9, 0.2}};
    void *s = calloc(1, rt->state_size);
    const route_env env = {.n_dest = R, .seed = 1, .nominal = nominal, .n_nominal = 3,
                           .nominal_rate = 100};
    CHECK_INT_EQ(create_with(rt, s, &env,
                             "router:\n  sticky: {vnodes: 64}\n  cacheroute: {q_cap: 10, "
                             "slots: 4, interval_s: 60, warm_start: true}\n"),
                 SIM_OK);
    /* Key 42: 50 requests/s -> k_b = 5 distinct destinations; sending 5
     * requests while none completes visits all five of them once. */
    int seen[R] = {0};
    for (int i = 0; i < 5; i++) {
        uint32_t d = rt->route(s, &(wl_request){.key = 42}, &v);
        CHECK(d < R);
        seen[d]++;
        load[d]++;
    }
    int distinct = 0;
    for (int d = 0; d < R; d++) {
        CHECK(seen[d] <= 1);
        distinct += seen[d];
    }
    CHECK_INT_EQ(distinct, 5);
    route_telemetry t = {0};
    rt->telemetry(s, &t);
    CHECK_INT_EQ(t.n_keys, 3);
    CHECK_INT_EQ(t.kb[0], 5);
    route_telemetry_fini(&t);
    rt->destroy(s);
    free(s);
}

int main(void)
{
    test_all_registered();
    test_flat_lb();
    test_sticky();
    test_chwbl();
    test_round_robin();
    test_random();
    test_cacheroute_replan();
    test_cacheroute_warm_start();
    puts("route: ok");
    return 0;
}
