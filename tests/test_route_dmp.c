/*
 * Property tests of the dualmap and preble routers (models/DM->c,
 * models/PB->c) on small synthetic requests and a fake
 * route_ops "cluster" whose per-destination FIFO queues never start a
 * request unless the test says so.
 *
 * Both: same seed and inputs give the same decisions; destinations are in
 * [0, R); bad parameters give SIM_EINVAL with a message.  dualmap: the
 * requests of one key only ever reach two destinations (its candidates),
 * also through migrations; identical prompts stick to one destination
 * while unloaded; a backlog on the preferred candidate switches to the
 * other; both candidates overloaded migrates queued requests.  preble: a
 * repeated long prefix is exploited (same destination even when it is
 * busier); a fresh prompt explores to the least-loaded destination;
 * rebalancing migrates some (not all) prefixes off an overloaded
 * destination; a single hot prefix whose TTFT estimate keeps rising is
 * replicated to the light destination; after the window expires the tree
 * forgets the prefix, and heap use stays bounded over many windows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "models/cost.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "check.h"

#define BS 16

/* ---- synthetic requests ---- */

/* A request of `prompt` tokens whose first `shared` blocks come from
 * content `prefix` and the rest from `tail`. */
static wl_request make_req(uint64_t id, uint32_t prompt, uint32_t shared, uint64_t prefix,
                           uint64_t tail, double t)
{
    wl_request r = {.id = id, .arrival_s = t, .prompt_tokens = prompt, .output_tokens = 8};
    r.n_blocks = prompt / BS;
    r.blocks = malloc((r.n_blocks ? r.n_blocks : 1) * sizeof *r.blocks);
    uint64_t parent = 0;
    for (uint32_t j = 0; j < r.n_blocks; j++)
        parent = r.blocks[j] = wl_block_hash(parent, j < shared ? prefix * 1000003 + j
                                                                : tail * 1000003 + j);
    r.key = r.n_blocks ? r.blocks[0] : id;
    return r;
}

/* ---- a fake cluster: per-destination queues of waiting requests ---- */

#define MAXQ 4096
typedef struct fake {
    uint32_t n;
    const wl_request *q[16][MAXQ];
    uint32_t len[16];
    uint64_t queued[16];
    uint32_t outstanding[16];
    int migrations;
} fake;

static uint32_t fk_waiting(void *ctx, uint32_t dest, const wl_request **out, uint32_t max)
{
    fake *f = ctx;
    uint32_t n = f->len[dest] < max ? f->len[dest] : max;
    memcpy(out, f->q[dest], n * sizeof *out);
    return n;
}

static int fk_find(const fake *f, const wl_request *r, uint32_t *dest, uint32_t *pos)
{
    for (uint32_t d = 0; d < f->n; d++)
        for (uint32_t i = 0; i < f->len[d]; i++)
            if (f->q[d][i] == r) {
                *dest = d;
                *pos = i;
                return 1;
            }
    return 0;
}

static void fk_push(fake *f, const wl_request *r, uint32_t d)
{
    CHECK(f->len[d] < MAXQ);
    f->q[d][f->len[d]++] = r;
    f->queued[d] += r->prompt_tokens;
    f->outstanding[d]++;
}

static int fk_migrate(void *ctx, const wl_request *r, uint32_t to)
{
    fake *f = ctx;
    uint32_t d, i;
    if (to >= f->n || !fk_find(f, r, &d, &i) || d == to)
        return 0;
    memmove(&f->q[d][i], &f->q[d][i + 1], (f->len[d] - i - 1) * sizeof f->q[d][0]);
    f->len[d]--;
    f->queued[d] -= r->prompt_tokens;
    f->outstanding[d]--;
    fk_push(f, r, to);
    f->migrations++;
    return 1;
}

static route_view fk_view(fake *f, route_ops *ops, double now)
{
    *ops = (route_ops){.ctx = f, .waiting = fk_waiting, .migrate = fk_migrate};
    return (route_view){.n_dest = f->n, .outstanding = f->outstanding,
                        .queued_tokens = f->queued, .now_s = now, .ops = ops};
}

/* ---- parameters ---- */

static cost_model test_cost(void)
{
    cost_model m = {0}; /* roofline: 0.1 ms per token + 2 ms per step */
    m.lin_s_per_token = 1e-4;
    m.overhead_s = 2e-3;
    return m;
}

/* What a test varies: the gateway's inputs (route_env) and the dualmap and
 * preble keys (0 = the key's default), as one flat struct. */
typedef struct tparams {
    uint32_t n_dest;
    uint64_t seed;
    double ttft_slo_s;
    uint32_t block_size, batch_tokens, pool_blocks;
    const cost_model *cost;
    uint32_t dm_vnodes;
    double dm_tp_s, dm_max_wait_s, pb_window_s, pb_high_load;
    const char *dm_extra, *pb_extra; /* more keys, e.g. "router_queue: true" */
} tparams;

/* The rules of crsim <= 0.1, for the tests written against them. */
#define DM_LEGACY "switch_tokens: 0, rebalance_tokens: 0, router_queue: true, index_blocks: 0"
#define PB_LEGACY "tpot: cost_model, overload: dispatch_estimate, migrate: segment, " \
                  "rebalance: per_second"

static tparams params(uint32_t n_dest, uint64_t seed, const cost_model *cm)
{
    return (tparams){.n_dest = n_dest, .seed = seed, .ttft_slo_s = 2.0,
                          .block_size = BS, .batch_tokens = 2048, .pool_blocks = 4096,
                          .cost = cm};
}

static void put_str(char *buf, size_t n, const char *text)
{
    if (text) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", buf[used - 1] == '{' ? "" : ", ", text);
    }
}

static void put_key(char *buf, size_t n, const char *key, double v)
{
    if (v != 0) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s: %.17g", buf[used - 1] == '{' ? "" : ", ", key, v);
    }
}

/* Bind the keys of `p` as a config would, check and create `rt` in `s`.
 * Returns the first error (binding, check or create). */
static int create_from(const route_type *rt, void *s, const tparams *p)
{
    const route_env env = {.n_dest = p->n_dest, .seed = p->seed, .ttft_slo_s = p->ttft_slo_s,
                           .block_size = p->block_size, .batch_tokens = p->batch_tokens,
                           .pool_blocks = p->pool_blocks, .cost = p->cost};
    char dm[256] = "{", pb[256] = "{", yaml[600];
    put_key(dm, sizeof dm, "vnodes", p->dm_vnodes);
    put_key(dm, sizeof dm, "tp_s", p->dm_tp_s);
    put_key(dm, sizeof dm, "max_wait_s", p->dm_max_wait_s);
    put_key(pb, sizeof pb, "window_s", p->pb_window_s);
    put_key(pb, sizeof pb, "high_load", p->pb_high_load);
    put_str(dm, sizeof dm, p->dm_extra);
    put_str(pb, sizeof pb, p->pb_extra);
    snprintf(yaml, sizeof yaml, "router:\n  dualmap: %s}\n  preble: %s}\n", dm, pb);
    route_config *c = NULL;
    int rc = route_config_parse(yaml, "test_route_dmp", &c);
    if (rc == SIM_OK)
        rc = route_check(rt, c, &env, NULL);
    if (rc == SIM_OK) {
        const void *args[ROUTE_MAX_READS];
        route_config_args(c, rt, args);
        rc = rt->create(s, &env, args);
    }
    route_config_free(c);
    return rc;
}

static void *make(const route_type *rt, const tparams *p)
{
    void *s = calloc(1, rt->state_size);
    CHECK(s != NULL);
    int rc = create_from(rt, s, p);
    if (rc)
        fprintf(stderr, "create %s: %s\n", rt->name, sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    return s;
}

static void drop(const route_type *rt, void *s)
{
    rt->destroy(s);
    free(s);
}

#define DM route_find("dualmap")
#define PB route_find("preble")

static const route_type *both(size_t k) { return route_find(k == 0 ? "dualmap" : "preble"); }

/* ---- both routers ---- */

/* Same seed, same inputs: same decisions; always in range.  Random
 * prompts from a few shared prefixes, random loads, occasional
 * completions, requests without a full block. */
static void test_determinism_and_range(void)
{
    enum { R = 7, N = 3000 };
    cost_model cm = test_cost();
    for (size_t k = 0; k < 2; k++) {
        const route_type *rt = both(k);
        tparams p = params(R, 42, &cm);
        p.pool_blocks = 64; /* small: dualmap's prefix index evicts */
        p.pb_window_s = 30; /* preble prunes and rebalances */
        void *a = make(rt, &p), *b = make(rt, &p);
        sim_pcg32 g;
        sim_pcg32_seed(&g, 7, 1);
        uint32_t out[R] = {0};
        uint64_t qt[R] = {0};
        route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
        for (uint64_t i = 0; i < N; i++) {
            uint32_t prompt = 1 + sim_pcg32_bounded(&g, 600);
            wl_request r = make_req(i, prompt, sim_pcg32_bounded(&g, 30),
                                    sim_pcg32_bounded(&g, 5), i + 100, 0.05 * (double)i);
            for (uint32_t d = 0; d < R; d++) {
                out[d] = sim_pcg32_bounded(&g, 8);
                qt[d] = sim_pcg32_bounded(&g, 3) ? 0 : sim_pcg32_bounded(&g, 200000);
            }
            v.now_s = r.arrival_s;
            uint32_t da = rt->route(a, &r, &v), db = rt->route(b, &r, &v);
            CHECK(da < R);
            CHECK_INT_EQ(da, db);
            if (rt->on_interval && i % 400 == 399) {
                rt->on_interval(a, v.now_s);
                rt->on_interval(b, v.now_s);
            }
            rt->on_complete(a, &r, da, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
            rt->on_complete(b, &r, db, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
            wl_request_fini(&r);
        }
        drop(rt, a);
        drop(rt, b);
    }
}

static void expect_einval(const route_type *rt, const tparams *p, const char *what)
{
    void *s = calloc(1, rt->state_size);
    int rc = create_from(rt, s, p);
    if (rc != SIM_EINVAL)
        fprintf(stderr, "%s accepted bad parameters: %s\n", rt->name, what);
    CHECK_INT_EQ(rc, SIM_EINVAL);
    CHECK(strlen(sim_errmsg()) > 0);
    free(s);
}

static void test_bad_params(void)
{
    cost_model cm = test_cost();
    for (size_t k = 0; k < 2; k++) {
        const route_type *rt = both(k);
        tparams p = params(4, 1, &cm);
        p.ttft_slo_s = 0;
        expect_einval(rt, &p, "SLO 0");
        p.ttft_slo_s = -1;
        expect_einval(rt, &p, "SLO < 0");
        p.ttft_slo_s = NAN;
        expect_einval(rt, &p, "SLO NaN");
        p = params(0, 1, &cm);
        expect_einval(rt, &p, "R = 0");
        p = params(4, 1, &cm);
        p.block_size = 0;
        expect_einval(rt, &p, "block size 0");
        p = params(4, 1, &cm);
        p.dm_tp_s = -1;
        expect_einval(rt, &p, "t_p < 0");
    }
    tparams p = params(4, 1, &cm);
    p.pool_blocks = 0;
    expect_einval(route_find("dualmap"), &p, "dualmap pool 0");
    p = params(4, 1, NULL);
    expect_einval(route_find("dualmap"), &p, "dualmap without cost model or t_p");
    p.dm_tp_s = 1e-4; /* an explicit t_p replaces the cost model */
    drop(route_find("dualmap"), make(route_find("dualmap"), &p));
    p = params(4, 1, NULL);
    expect_einval(route_find("preble"), &p, "preble without cost model");
    p = params(4, 1, &cm);
    p.pb_high_load = 0.5;
    expect_einval(route_find("preble"), &p, "preble high-load ratio < 1");
    p = params(4, 1, &cm);
    p.pb_window_s = -3;
    expect_einval(route_find("preble"), &p, "preble window < 0");
}

/* ---- dualmap ---- */

/* Single-block prompts (fixed depth, so a fixed candidate pair): under
 * random backlogs every key reaches at most two destinations, and some
 * key reaches two (the SLO switch fires). */
static void test_dm_two_candidates(void)
{
    enum { R = 16, K = 60, REP = 40 };
    cost_model cm = test_cost();
    tparams p = params(R, 3, &cm);
    p.dm_extra = DM_LEGACY; /* the SLO switch at ttft_slo_s */
    void *s = make(route_find("dualmap"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    uint32_t seen[K] = {0}; /* bitmask of destinations per key */
    sim_pcg32 g;
    sim_pcg32_seed(&g, 11, 2);
    uint64_t id = 0;
    int pairs = 0;
    for (int rep = 0; rep < REP; rep++)
        for (uint32_t k = 0; k < K; k++) {
            for (uint32_t d = 0; d < R; d++)
                qt[d] = sim_pcg32_bounded(&g, 4) ? 0 : 100000; /* 10 s of backlog */
            wl_request r = make_req(id, 20, 1, k, 0, (double)id);
            id++;
            uint32_t d = DM->route(s, &r, &v);
            CHECK(d < R);
            seen[k] |= 1u << d;
            DM->on_complete(s, &r, d, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
            wl_request_fini(&r);
        }
    for (uint32_t k = 0; k < K; k++) {
        int c = __builtin_popcount(seen[k]);
        CHECK(c >= 1 && c <= 2);
        pairs += c == 2;
    }
    CHECK(pairs > K / 2);
    drop(route_find("dualmap"), s);
}

/* Identical prompts go to one destination while unloaded: at once for a
 * one-block prompt; for a long prompt once the adaptive depth has reached
 * the prompt's length (the hot key expands block by block, each level
 * after its key reaches the hot share). */
static void test_dm_affinity(void)
{
    enum { R = 8 };
    cost_model cm = test_cost();
    tparams p = params(R, 5, &cm);
    void *s = make(route_find("dualmap"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    uint32_t first = UINT32_MAX;
    for (uint64_t i = 0; i < 100; i++) {
        wl_request r = make_req(i, 30, 1, 77, 0, (double)i);
        uint32_t d = DM->route(s, &r, &v);
        if (first == UINT32_MAX)
            first = d;
        CHECK_INT_EQ(d, first);
        DM->on_complete(s, &r, d, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
        wl_request_fini(&r);
    }
    drop(route_find("dualmap"), s);

    s = make(route_find("dualmap"), &p);
    enum { NB = 6 };
    uint32_t last = UINT32_MAX;
    for (uint64_t i = 0; i < 400; i++) {
        wl_request r = make_req(i, NB * BS + 5, NB, 99, 0, (double)i);
        uint32_t d = DM->route(s, &r, &v);
        /* Each expansion needs the new key at 6.12 % of the window, about
         * 13 requests, so depth NB is reached within 20 + 14·NB requests. */
        if (i > 20 + 14 * NB)
            CHECK_INT_EQ(d, last);
        last = d;
        DM->on_complete(s, &r, d, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
        wl_request_fini(&r);
    }
    drop(route_find("dualmap"), s);
}

/* A backlog beyond the SLO on the preferred candidate switches the key to
 * its other candidate; without the backlog it goes back to affinity. */
static void test_dm_hotspot_switch(void)
{
    enum { R = 8 };
    cost_model cm = test_cost();
    tparams p = params(R, 9, &cm);
    p.dm_extra = DM_LEGACY; /* the SLO switch at ttft_slo_s */
    void *s = make(route_find("dualmap"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    wl_request r0 = make_req(0, 30, 1, 5, 0, 0);
    uint32_t home = DM->route(s, &r0, &v);
    DM->on_complete(s, &r0, home, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
    qt[home] = 1000000;  /* ~100 s of prefill at 0.1 ms/token */
    out[home] = 50;
    wl_request r1 = make_req(1, 30, 1, 5, 0, 1);
    uint32_t other = DM->route(s, &r1, &v);
    CHECK(other != home);
    DM->on_complete(s, &r1, other, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
    /* The other candidate now also has the prefix: with the backlog moved
     * there, the key returns home. */
    qt[home] = 0;
    out[home] = 0;
    qt[other] = 1000000;
    wl_request r2 = make_req(2, 30, 1, 5, 0, 2);
    CHECK_INT_EQ(DM->route(s, &r2, &v), home);
    DM->on_complete(s, &r2, home, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
    wl_request_fini(&r0);
    wl_request_fini(&r1);
    wl_request_fini(&r2);
    drop(route_find("dualmap"), s);
}

/* Cold keys spread over the cluster, then a hot key overloads both of its
 * candidates: queued cold requests are migrated to their other candidate,
 * and no key's requests ever sit outside its two candidates. */
static void test_dm_rebalance(void)
{
    enum { R = 8, COLD = 48, HOT = 300 };
    static fake f;
    memset(&f, 0, sizeof f);
    f.n = R;
    tparams p = params(R, 13, NULL);
    p.dm_tp_s = 1e-3;   /* 1 ms per token */
    p.ttft_slo_s = 0.5; /* backlog threshold 500 tokens */
    p.dm_extra = DM_LEGACY; /* router-held queue, SLO-derived thresholds */
    void *s = make(route_find("dualmap"), &p);
    route_ops ops;
    static wl_request reqs[COLD * 2 + HOT];
    uint32_t n = 0;
    /* Two waves of cold single-block keys, each key twice. */
    for (int wave = 0; wave < 2; wave++)
        for (uint32_t k = 0; k < COLD; k++) {
            reqs[n] = make_req(n, 31, 1, 1000 + k, 0, n * 0.01);
            route_view v = fk_view(&f, &ops, reqs[n].arrival_s);
            fk_push(&f, &reqs[n], DM->route(s, &reqs[n], &v));
            n++;
        }
    for (uint32_t i = 0; i < HOT; i++) {
        reqs[n] = make_req(n, 31, 1, 1, 0, n * 0.01);
        route_view v = fk_view(&f, &ops, reqs[n].arrival_s);
        fk_push(&f, &reqs[n], DM->route(s, &reqs[n], &v));
        n++;
    }
    CHECK(f.migrations > 0);
    /* Every key sits on at most two destinations. */
    uint32_t mask[COLD + 1] = {0};
    for (uint32_t d = 0; d < R; d++)
        for (uint32_t i = 0; i < f.len[d]; i++) {
            const wl_request *q = f.q[d][i];
            uint32_t key = q->id < 2 * COLD ? (uint32_t)(q->id % COLD) : COLD;
            mask[key] |= 1u << d;
        }
    for (uint32_t k = 0; k <= COLD; k++)
        CHECK(__builtin_popcount(mask[k]) <= 2);
    CHECK_INT_EQ(__builtin_popcount(mask[COLD]), 2); /* the hot key uses both */
    for (uint32_t i = 0; i < n; i++)
        wl_request_fini(&reqs[i]);
    drop(route_find("dualmap"), s);
}

/* ---- preble ---- */

/* Long shared prefix: the first request explores to the least-loaded
 * destination; later ones with the prefix and a short new tail stay there
 * even when it is the busiest.  A fresh prompt explores to the least
 * loaded. */
static void test_pb_exploit_explore(void)
{
    enum { R = 4 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {5, 5, 0, 5};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    wl_request r = make_req(0, 66 * BS, 64, 3, 1, 0);
    uint32_t home = PB->route(s, &r, &v);
    CHECK_INT_EQ(home, 2);
    wl_request_fini(&r);
    out[0] = 0, out[1] = 0, out[2] = 9, out[3] = 0;
    for (uint64_t i = 1; i < 20; i++) {
        r = make_req(i, 66 * BS, 64, 3, 100 + i, (double)i);
        CHECK_INT_EQ(PB->route(s, &r, &v), home);
        wl_request_fini(&r);
    }
    /* Fresh prompt: nothing matched; least loaded is 1 (dest 2 also
     * carries the window's prefill cost). */
    out[0] = 5, out[1] = 0, out[2] = 9, out[3] = 7;
    r = make_req(50, 40 * BS, 40, 777, 0, 30);
    CHECK_INT_EQ(PB->route(s, &r, &v), 1);
    wl_request_fini(&r);
    drop(route_find("preble"), s);
}

/* After the window the prefix is forgotten (the tree was pruned): the
 * same prompt no longer goes to its old destination but explores. */
static void test_pb_window_expiry(void)
{
    enum { R = 4 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    p.pb_window_s = 10;
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {3, 0, 3, 3};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    wl_request r = make_req(0, 40 * BS, 40, 4, 0, 0);
    CHECK_INT_EQ(PB->route(s, &r, &v), 1);
    memset(out, 0, sizeof out);
    v.now_s = 5; /* within the window: exploited */
    CHECK_INT_EQ(PB->route(s, &r, &v), 1);
    v.now_s = 16; /* 11 s after the last touch: pruned, explores to 0 */
    CHECK_INT_EQ(PB->route(s, &r, &v), 0);
    wl_request_fini(&r);
    drop(route_find("preble"), s);
}

/* Four long prefixes all placed on destination 0 (1 was busy when they
 * arrived): once rebalancing starts, the cheapest are migrated to 1, and
 * each prefix keeps going to one destination. */
static void test_pb_migrate(void)
{
    enum { R = 2, P = 4, N = 400 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {0, 50};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    uint32_t first[P], last[P];
    uint32_t moved = 0;
    for (uint64_t i = 0; i < N; i++) {
        uint32_t k = (uint32_t)(i % P);
        v.now_s = 0.05 * (double)i;
        if (i == P)
            out[1] = 0;
        wl_request r = make_req(i, 66 * BS, 64, 10 + k, 1000 + i, v.now_s);
        uint32_t d = PB->route(s, &r, &v);
        wl_request_fini(&r);
        if (i < P) {
            CHECK_INT_EQ(d, 0);
            first[k] = d;
        } else if (i >= N - 2 * P) {
            CHECK(d == last[k]); /* stable at the end */
        }
        last[k] = d;
    }
    for (uint32_t k = 0; k < P; k++)
        moved += last[k] != first[k];
    CHECK(moved >= 1 && moved < P); /* some, not all, prefixes moved */
    drop(route_find("preble"), s);
}

/* One hot prefix on destination 0 whose TTFT estimate keeps rising: the
 * overload detector fires and the prefix is replicated to destination 1,
 * which then takes its requests (lower decode load). */
static void test_pb_autoscale(void)
{
    enum { R = 2, N = 300 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    p.pb_window_s = 20;
    p.pb_extra = PB_LEGACY; /* the detector on dispatch-time estimates */
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {0, 50};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    int on1 = 0, first_on1 = -1;
    for (uint64_t i = 0; i < N; i++) {
        v.now_s = 0.1 * (double)i;
        qt[0] = 1000 * i; /* a growing backlog on 0 */
        if (i == 1)
            out[0] = 5, out[1] = 0;
        wl_request r = make_req(i, 66 * BS, 64, 7, 1000 + i, v.now_s);
        uint32_t d = PB->route(s, &r, &v);
        wl_request_fini(&r);
        if (first_on1 < 0) {
            if (d == 1)
                first_on1 = (int)i;
            else
                CHECK_INT_EQ(d, 0); /* exploit keeps it on 0 until replicated */
        }
        on1 += d == 1;
    }
    CHECK(first_on1 >= 100); /* not before 50 · R placements */
    CHECK(on1 > 0);
    drop(route_find("preble"), s);
}


/* With router_queue off (the default) dualmap never lists or moves queued
 * requests, however loaded both candidates are. */
static int waiting_calls;
static uint32_t counting_waiting(void *ctx, uint32_t dest, const wl_request **out, uint32_t max)
{
    waiting_calls++;
    return fk_waiting(ctx, dest, out, max);
}

static void test_dm_no_router_queue(void)
{
    enum { R = 4, N = 400 };
    static fake f;
    memset(&f, 0, sizeof f);
    f.n = R;
    tparams p = params(R, 13, NULL);
    p.dm_tp_s = 1e-3;
    p.dm_extra = "rebalance_tokens: 100"; /* every candidate overloaded */
    void *s = make(route_find("dualmap"), &p);
    static wl_request reqs[N];
    waiting_calls = 0;
    for (uint32_t i = 0; i < N; i++) {
        reqs[i] = make_req(i, 31, 1, i % 3, 0, i * 0.01);
        route_ops ops = {.ctx = &f, .waiting = counting_waiting, .migrate = fk_migrate};
        route_view v = {.n_dest = R, .outstanding = f.outstanding, .queued_tokens = f.queued,
                        .now_s = reqs[i].arrival_s, .ops = &ops};
        fk_push(&f, &reqs[i], DM->route(s, &reqs[i], &v));
    }
    CHECK_INT_EQ(f.migrations, 0);
    CHECK_INT_EQ(waiting_calls, 0);
    for (uint32_t i = 0; i < N; i++)
        wl_request_fini(&reqs[i]);
    drop(route_find("dualmap"), s);
}

/* The lock-out of the shared-system-prompt scenario, as a known decision:
 * once one candidate holds the prompt's blocks, the other loses every
 * affinity comparison until the holder's pending tokens pass the switch
 * threshold (AIBrix 1e6 tokens), whatever the in-flight counts. */
static void test_dm_affinity_lockout(void)
{
    enum { R = 2 };
    cost_model cm = test_cost();
    tparams p = params(R, 9, &cm);
    void *s = make(route_find("dualmap"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    wl_request r0 = make_req(0, 30, 1, 5, 0, 0);
    const uint32_t home = DM->route(s, &r0, &v);
    out[home] = 200;         /* far busier than the other ... */
    qt[home] = 999000;       /* ... but below 1e6 pending tokens */
    for (uint64_t i = 1; i < 50; i++) {
        wl_request r = make_req(i, 30, 1, 5, 0, (double)i);
        CHECK_INT_EQ(DM->route(s, &r, &v), home);
        wl_request_fini(&r);
    }
    qt[home] = 1000001;      /* past the switch: the other candidate */
    wl_request r1 = make_req(60, 30, 1, 5, 0, 60);
    CHECK(DM->route(s, &r1, &v) != home);
    wl_request_fini(&r0);
    wl_request_fini(&r1);
    drop(route_find("dualmap"), s);
}

/* The global index forgets a prefix idle for index_ttl_s: the holder wins
 * while the entry lives (despite more requests in flight), the less busy
 * candidate after expiry (hits tie, in-flight decides). */
static void test_dm_index_expiry(void)
{
    enum { R = 2 };
    cost_model cm = test_cost();
    tparams p = params(R, 9, &cm);
    p.dm_extra = "index_ttl_s: 100";
    void *s = make(route_find("dualmap"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    wl_request r0 = make_req(0, 30, 1, 5, 0, 0);
    const uint32_t home = DM->route(s, &r0, &v);
    out[home] = 3;
    v.now_s = 99;
    wl_request r1 = make_req(1, 30, 1, 5, 0, 99);
    CHECK_INT_EQ(DM->route(s, &r1, &v), home); /* touched again at 99 s */
    v.now_s = 198;
    wl_request r2 = make_req(2, 30, 1, 5, 0, 198);
    CHECK_INT_EQ(DM->route(s, &r2, &v), home); /* 99 s idle: still there */
    v.now_s = 400;
    wl_request r3 = make_req(3, 30, 1, 5, 0, 400);
    CHECK(DM->route(s, &r3, &v) != home);       /* expired */
    wl_request_fini(&r0);
    wl_request_fini(&r1);
    wl_request_fini(&r2);
    wl_request_fini(&r3);
    drop(route_find("dualmap"), s);
}

/* The overload detector on TTFTs reported at completion (the reference's
 * TTFTWindowedOverloadedDetector): one hot prefix on destination 0 whose
 * completions report TTFTs jumping from 0.1 s to 5 s at 8 s.  No replication before the
 * window's older half holds a completion (window 20 s: t >= 10 s after
 * the first completion); then destination 1 joins and takes requests. */
static void test_pb_autoscale_completion(void)
{
    enum { R = 2, N = 400 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    p.pb_window_s = 20;
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    int first_on1 = -1;
    for (uint64_t i = 0; i < N; i++) {
        v.now_s = 0.1 * (double)i;
        if (i == 1)
            out[0] = 5, out[1] = 0;
        wl_request r = make_req(i, 66 * BS, 64, 7, 1000 + i, v.now_s);
        uint32_t d = PB->route(s, &r, &v);
        if (first_on1 < 0 && d == 1)
            first_on1 = (int)i;
        if (first_on1 < 0)
            CHECK_INT_EQ(d, 0);
        /* It completes at once; on 0 the TTFT jumps from 0.1 s to 5 s at 8 s. */
        double ttft = d == 0 && v.now_s >= 8 ? 5 : 0.1;
        PB->on_complete(s, &r, d, &(route_done){.now_s = v.now_s, .ttft_s = ttft,
                                                 .e2e_s = ttft + 0.7, .output_tokens = 8});
        wl_request_fini(&r);
    }
    CHECK(first_on1 >= 100); /* the older half-window (10 s = 100 requests) filled first */
    CHECK(first_on1 <= 105); /* and fires as soon as it has */
    drop(route_find("preble"), s);
}

/* Migration moves the whole subtree (the reference's update_children):
 * after a prefix moves, a request deeper in it (its own continuation,
 * whose blocks went to the old destination) follows to the new one under
 * migrate: subtree, and stays behind under migrate: segment. */
static uint32_t pb_deep_after_move(const char *extra)
{
    enum { R = 2, P = 4, N = 400 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    p.pb_extra = extra;
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {0, 50};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    uint32_t last[P] = {0};
    /* Each prefix k has a deeper continuation: 64 shared blocks + 1 own. */
    for (uint64_t i = 0; i < N; i++) {
        uint32_t k = (uint32_t)(i % P);
        v.now_s = 0.05 * (double)i;
        if (i == P)
            out[1] = 0;
        wl_request r = i < P ? make_req(i, 66 * BS, 65, 10 + k, 0, v.now_s)
                             : make_req(i, 66 * BS, 64, 10 + k, 1000 + i, v.now_s);
        last[k] = PB->route(s, &r, &v);
        wl_request_fini(&r);
    }
    /* The continuation of a prefix that moved off destination 0. */
    uint32_t moved = P;
    for (uint32_t k = 0; k < P; k++)
        if (last[k] != 0)
            moved = k;
    CHECK(moved < P);
    v.now_s += 0.05;
    wl_request r = make_req(N, 66 * BS, 65, 10 + moved, 0, v.now_s);
    uint32_t d = PB->route(s, &r, &v);
    wl_request_fini(&r);
    drop(route_find("preble"), s);
    return d;
}

static void test_pb_migrate_subtree(void)
{
    CHECK(pb_deep_after_move("migrate: subtree, rebalance: per_second") != 0);
    CHECK_INT_EQ(pb_deep_after_move("migrate: segment, rebalance: per_second"), 0);
}

/* chwbl's key: with key: prefix two requests with the same leading 25
 * tokens (2 blocks of 16) but different business keys go to one
 * destination, requests differing in block 2 may not; with key:
 * routing_key the business key decides. */
static uint32_t chwbl_dest(const char *yaml, const wl_request *r)
{
    route_config *c = NULL;
    CHECK_INT_EQ(route_config_parse(yaml, "test", &c), SIM_OK);
    const route_type *rt = route_find("chwbl");
    const route_env env = {.n_dest = 16, .block_size = BS};
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    void *s = calloc(1, rt->state_size);
    CHECK_INT_EQ(rt->create(s, &env, args), SIM_OK);
    uint32_t out[16] = {0};
    route_view v = {.n_dest = 16, .outstanding = out};
    uint32_t d = rt->route(s, r, &v);
    drop(rt, s);
    route_config_free(c);
    return d;
}

static void test_chwbl_key(void)
{
    int same_prefix = 0, same_key = 0;
    for (uint64_t k = 0; k < 64; k++) {
        wl_request a = make_req(2 * k, 10 * BS, 2, k, 1, 0), b = make_req(2 * k + 1, 10 * BS, 2, k, 2, 0);
        a.key = 1000 + 2 * k;
        b.key = 1000 + 2 * k + 1;
        CHECK_INT_EQ(chwbl_dest("router: {}", &a), chwbl_dest("router: {}", &b));
        same_key += chwbl_dest("router: {chwbl: {key: routing_key}}", &a) ==
                    chwbl_dest("router: {chwbl: {key: routing_key}}", &b);
        wl_request c = make_req(3 * k, 10 * BS, 1, k, 3, 0);
        same_prefix += chwbl_dest("router: {}", &a) == chwbl_dest("router: {}", &c);
        /* prefix_tokens 16 = one block: a and c share it */
        CHECK_INT_EQ(chwbl_dest("router: {chwbl: {prefix_tokens: 16}}", &a),
                     chwbl_dest("router: {chwbl: {prefix_tokens: 16}}", &c));
        wl_request_fini(&a);
        wl_request_fini(&b);
        wl_request_fini(&c);
    }
    CHECK(same_key < 16);    /* business keys: about 1/16 collide */
    CHECK(same_prefix < 16); /* block 2 differs: about 1/16 collide */
}

#if defined(__GLIBC__)
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks;
}
#endif

/* Distinct prompts at a steady rate over 40 windows: heap use after 40
 * windows is close to that after 4 (the tree and the window are pruned). */
static void test_pb_memory_bounded(void)
{
#if defined(__GLIBC__)
    enum { R = 8 };
    cost_model cm = test_cost();
    tparams p = params(R, 1, &cm);
    p.pb_window_s = 10;
    void *s = make(route_find("preble"), &p);
    uint32_t out[R] = {0};
    uint64_t qt[R] = {0};
    route_view v = {.n_dest = R, .outstanding = out, .queued_tokens = qt};
    size_t at4 = 0;
    const double rate = 20; /* requests/s */
    for (uint64_t i = 0; i < (uint64_t)(40 * 10 * rate); i++) {
        v.now_s = (double)i / rate;
        wl_request r = make_req(i, 64 * BS, 8, i % 50, 1000 + i, v.now_s);
        uint32_t d = PB->route(s, &r, &v);
        PB->on_complete(s, &r, d, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
        wl_request_fini(&r);
        if (i == (uint64_t)(4 * 10 * rate))
            at4 = heap_in_use();
    }
    size_t at40 = heap_in_use();
    if (at4 > 0) { /* 0 under sanitizers that replace malloc */
        if (!(at40 < at4 + at4 / 2))
            fprintf(stderr, "heap after 4 windows %zu, after 40 windows %zu\n", at4, at40);
        CHECK(at40 < at4 + at4 / 2);
    }
    drop(route_find("preble"), s);
#endif
}

int main(void)
{
    test_determinism_and_range();
    test_bad_params();
    test_dm_two_candidates();
    test_dm_affinity();
    test_dm_hotspot_switch();
    test_dm_rebalance();
    test_pb_exploit_explore();
    test_pb_window_expiry();
    test_pb_migrate();
    test_pb_autoscale();
    test_pb_memory_bounded();
    test_dm_no_router_queue();
    test_dm_affinity_lockout();
    test_dm_index_expiry();
    test_pb_autoscale_completion();
    test_pb_migrate_subtree();
    test_chwbl_key();
    puts("route_dmp: all tests passed");
    return 0;
}
