/*
 * Tests of the regime diagnostic (workloads/diag.h).
 *
 * Unit tests: the rates form on hand-checkable cases (one key against
 * 1 − e^{−λT} and the fixed point itself; symmetric keys with the closed
 * form hit = R·pool / (n·P) under affinity and pool / (n·P) under
 * spreading; an unbounded pool; R = 1) and bad inputs; the stream form on
 * hand-made streams (no reuse, exact LRU behaviour, R = 1, bad inputs).
 *
 * Validation: on three workloads with contended caches, the diagnostic's
 * affinity and spreading hit rates are within 5 percentage points of
 * crsim's own simulation with the `sticky` and `flat_lb` routers (served,
 * token-weighted hit rate over requests arriving after warm-up), on the
 * real deployment (70B fp8 TP2, 453,360-token pools).  The table printed
 * to stdout is the one in docs/diagnostic.md.
 *
 * usage: test_diag MOONCAKE_TRACE WORKLOAD_SPECS_DIR
 * A missing trace skips the Mooncake row (the others still run).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cluster.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "sim/exp/setup.h"
#include "workloads/diag.h"
#include "workloads/synth.h"
#include "check.h"
#include "sim/core/wall.h"

#define TOL_PP 0.05 /* accuracy requirement, absolute share */

/* ---- rates form ---------------------------------------------------- */

static void test_rates_one_key(void)
{
    /* λ = 2/s, P = 1000, L = 3000, pool 10000, R = 1:
     * 1000·(1 − e^{−2T}) + 2·2000·T = 10000, hit = (P/L)(1 − e^{−λT}). */
    const double rate = 2, P = 1000, L = 3000;
    wl_diag d;
    CHECK_INT_EQ(wl_diag_rates(&rate, &P, &L, 1, 1, 10000, &d), SIM_OK);
    double T = d.affinity_window_s;
    CHECK(T > 2.2 && T < 2.3);
    CHECK_NEAR(P * (1 - exp(-rate * T)) + rate * (L - P) * T, 10000, 1e-6);
    CHECK_NEAR(d.affinity_hit, P / L * (1 - exp(-rate * T)), 1e-12);
    CHECK_NEAR(d.spread_hit, d.affinity_hit, 1e-12); /* R = 1 */
    CHECK_NEAR(d.recoverable, 0, 1e-12);
    CHECK_U64_EQ(d.requests, 1);

    /* Whole prompt reusable (P = L): the footprint 1000 fits, so nothing
     * is evicted and every request hits: T = ∞, hit = 1 — on 4
     * destinations as well, for both placements. */
    const double L2 = 1000;
    CHECK_INT_EQ(wl_diag_rates(&rate, &P, &L2, 1, 4, 10000, &d), SIM_OK);
    CHECK(isinf(d.affinity_window_s) && isinf(d.spread_window_s));
    CHECK_NEAR(d.affinity_hit, 1, 0);
    CHECK_NEAR(d.spread_hit, 1, 0);

    /* One key with P = L in a pool smaller than P, spreading over R = 4:
     * the only solution of P·(1 − e^{−λT/R}) = pool is
     * T = −(R/λ) ln(1 − pool/P); hit = pool/P. */
    const double P3 = 20000, L3 = 20000;
    CHECK_INT_EQ(wl_diag_rates(&rate, &P3, &L3, 1, 4, 10000, &d), SIM_OK);
    CHECK_REL(d.spread_window_s, -(4 / rate) * log(1 - 10000 / P3), 1e-9);
    CHECK_NEAR(d.spread_hit, 0.5, 1e-9);
    /* Affinity: 4 pools of 10000 hold the 20000-token prefix. */
    CHECK(isinf(d.affinity_window_s));
    CHECK_NEAR(d.affinity_hit, 1, 0);
}

static void test_rates_symmetric(void)
{
    /* n equal keys, P = L: spreading n·P·(1 − e^{−λT/R}) = pool gives
     * hit = pool/(n·P); affinity n·P·(1 − e^{−λT}) = R·pool gives
     * hit = R·pool/(n·P).  n = 100, P = 1000, R = 4, pool 10000:
     * 0.1 and 0.4, recoverable 0.3 (whatever λ). */
    enum { N = 100 };
    double rate[N], P[N], L[N];
    for (int b = 0; b < N; b++)
        rate[b] = 0.37, P[b] = 1000, L[b] = 1000;
    wl_diag d;
    CHECK_INT_EQ(wl_diag_rates(rate, P, L, N, 4, 10000, &d), SIM_OK);
    CHECK_NEAR(d.spread_hit, 0.1, 1e-9);
    CHECK_NEAR(d.affinity_hit, 0.4, 1e-9);
    CHECK_NEAR(d.recoverable, 0.3, 1e-9);
    /* Windows: 1 − e^{−λT} = 0.4 and 1 − e^{−λT/4} = 0.1. */
    CHECK_REL(d.affinity_window_s, -log(0.6) / 0.37, 1e-9);
    CHECK_REL(d.spread_window_s, -4 * log(0.9) / 0.37, 1e-9);

    /* Keys with rate 0 change nothing. */
    double rate2[N + 1], P2[N + 1], L2[N + 1];
    memcpy(rate2, rate, sizeof rate);
    memcpy(P2, P, sizeof P);
    memcpy(L2, L, sizeof L);
    rate2[N] = 0, P2[N] = 5e6, L2[N] = 5e6;
    wl_diag d2;
    CHECK_INT_EQ(wl_diag_rates(rate2, P2, L2, N + 1, 4, 10000, &d2), SIM_OK);
    CHECK_NEAR(d2.affinity_hit, d.affinity_hit, 1e-12);
    CHECK_NEAR(d2.spread_hit, d.spread_hit, 1e-12);

    /* A bigger pool never hurts; spreading never beats affinity here. */
    wl_diag prev = d;
    for (uint64_t pool = 20000; pool <= 200000; pool *= 2) {
        CHECK_INT_EQ(wl_diag_rates(rate, P, L, N, 4, pool, &d), SIM_OK);
        CHECK(d.affinity_hit >= prev.affinity_hit - 1e-12);
        CHECK(d.spread_hit >= prev.spread_hit - 1e-12);
        CHECK(d.affinity_hit >= d.spread_hit - 1e-12);
        prev = d;
    }
    /* An unbounded pool: every repeated prefix hits under both. */
    CHECK_INT_EQ(wl_diag_rates(rate, P, L, N, 4, UINT64_C(1) << 50, &d), SIM_OK);
    CHECK_NEAR(d.affinity_hit, 1, 0);
    CHECK_NEAR(d.spread_hit, 1, 0);
}

static void check_bad_rates(const double *r, const double *p, const double *l, size_t n,
                            uint32_t R, uint64_t pool, const char *needle)
{
    wl_diag d;
    d.affinity_hit = 7;
    CHECK_INT_EQ(wl_diag_rates(r, p, l, n, R, pool, &d), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), needle);
    CHECK_NEAR(d.affinity_hit, 0, 0);
}

static void test_rates_bad(void)
{
    const double r[2] = {1, 2}, p[2] = {100, 100}, l[2] = {200, 200};
    check_bad_rates(r, p, l, 0, 4, 1000, "no keys");
    check_bad_rates(r, p, l, 2, 0, 1000, "0 destinations");
    check_bad_rates(r, p, l, 2, 4, 0, "0 tokens");
    const double zero[2] = {0, 0};
    check_bad_rates(zero, p, l, 2, 4, 1000, "sum to 0");
    const double neg[2] = {1, -1};
    check_bad_rates(neg, p, l, 2, 4, 1000, "rate of key 1 is -1");
    const double nan_[2] = {1, NAN};
    check_bad_rates(nan_, p, l, 2, 4, 1000, "rate of key 1");
    const double inf_[2] = {INFINITY, 1};
    check_bad_rates(inf_, p, l, 2, 4, 1000, "rate of key 0");
    check_bad_rates(r, neg, l, 2, 4, 1000, "prefix length of key 1");
    const double lnan[2] = {200, NAN};
    check_bad_rates(r, p, lnan, 2, 4, 1000, "prompt length of key 1");
    const double longp[2] = {100, 300};
    check_bad_rates(r, longp, l, 2, 4, 1000, "longer than its mean prompt");
    check_bad_rates(r, zero, zero, 2, 4, 1000, "positive number of tokens");
}

/* ---- stream form on hand-made streams -------------------------------- */

/* A stream of single requests given by (arrival, key, blocks of a path in
 * a tree: content ids) with 16-token blocks and prompt = blocks·16 + 1. */
typedef struct hreq {
    double t;
    uint64_t key;
    uint32_t n;
    uint64_t content[4];
} hreq;

typedef struct hstream {
    const hreq *q;
    size_t n, i;
} hstream;

static int hnext(void *state, wl_request *out)
{
    hstream *s = state;
    if (s->i == s->n)
        return 0;
    const hreq *h = &s->q[s->i];
    *out = (wl_request){.id = s->i, .arrival_s = h->t, .key = h->key, .n_blocks = h->n,
                        .prompt_tokens = h->n * 16 + 1, .output_tokens = 1};
    out->blocks = malloc((h->n ? h->n : 1) * sizeof *out->blocks);
    CHECK(out->blocks);
    uint64_t parent = 0;
    for (uint32_t j = 0; j < h->n; j++)
        parent = out->blocks[j] = wl_block_hash(parent, h->content[j]);
    s->i++;
    return 1;
}

static void test_stream_small(void)
{
    wl_diag d;
    /* No reuse at all: both 0, not an error. */
    hreq uniq[50];
    for (int i = 0; i < 50; i++)
        uniq[i] = (hreq){.t = i, .key = (uint64_t)i, .n = 3,
                         .content = {(uint64_t)i * 3 + 1, (uint64_t)i * 3 + 2, (uint64_t)i * 3 + 3}};
    hstream s = {uniq, 50, 0};
    CHECK_INT_EQ(wl_diag_stream((wl_source){.state = &s, .next = hnext}, 0, 16, 4, 1000, &d), SIM_OK);
    CHECK_U64_EQ(d.requests, 50);
    CHECK_U64_EQ(d.prompt_tokens, 50 * 49);
    CHECK_NEAR(d.affinity_hit, 0, 0);
    CHECK_NEAR(d.spread_hit, 0, 0);
    CHECK_NEAR(d.span_s, 49, 0);

    /* Exact LRU on one destination of 2 blocks, one-block requests
     * A B A C B A: hits at the 3rd (A) only — B was evicted by C, then A
     * by B.  R = 1, so affinity and spreading coincide. */
    const uint64_t A = 11, B = 12, C = 13;
    hreq lr[6] = {{0, 1, 1, {A}}, {1, 2, 1, {B}}, {2, 1, 1, {A}},
                  {3, 3, 1, {C}}, {4, 2, 1, {B}}, {5, 1, 1, {A}}};
    s = (hstream){lr, 6, 0};
    CHECK_INT_EQ(wl_diag_stream((wl_source){.state = &s, .next = hnext}, 0, 16, 1, 32, &d), SIM_OK);
    CHECK_U64_EQ(d.affinity_hit_tokens, 16);
    CHECK_U64_EQ(d.spread_hit_tokens, 16);
    CHECK_U64_EQ(d.prompt_tokens, 6 * 17);
    /* Evictions: B at t=3 (touched at 1), C at t=5... : C evicts B (age 2),
     * B evicts A (age 2), A evicts C (age 2). */
    CHECK_U64_EQ(d.affinity_evictions, 3);
    CHECK_NEAR(d.affinity_window_s, 2, 1e-12);
    CHECK_NEAR(d.spread_window_s, 2, 1e-12);

    /* A shared prefix of 2 blocks plus a unique block, 20 requests, one
     * key, unbounded pool: request i > 0 hits 2 blocks (the cap leaves the
     * unique block).  Affinity sees the prefix 19 times; spreading over 4
     * destinations misses the first visit of each destination it uses. */
    hreq pre[20];
    for (int i = 0; i < 20; i++)
        pre[i] = (hreq){.t = i, .key = 42, .n = 3, .content = {1, 2, 100 + (uint64_t)i}};
    s = (hstream){pre, 20, 0};
    CHECK_INT_EQ(wl_diag_stream((wl_source){.state = &s, .next = hnext}, 0, 16, 4, 1 << 20, &d), SIM_OK);
    CHECK_U64_EQ(d.affinity_hit_tokens, 19 * 32);
    CHECK(d.spread_hit_tokens >= 16 * 32 && d.spread_hit_tokens < 19 * 32);
    CHECK(isinf(d.affinity_window_s));
    CHECK_NEAR(d.recoverable, d.affinity_hit - d.spread_hit, 0);
    /* Units of 2 blocks ({1,2} and {100+i}): the shared prefix is a whole
     * unit, so the answer is the same; units of 3 blocks lose it. */
    s = (hstream){pre, 20, 0};
    wl_diag_opts og = {.block_size = 16, .n_dest = 4, .pool_tokens = 1 << 20, .group = 2};
    CHECK_INT_EQ(wl_diag_stream_opts((wl_source){.state = &s, .next = hnext}, &og, &d), SIM_OK);
    CHECK_U64_EQ(d.affinity_hit_tokens, 19 * 32);
    s = (hstream){pre, 20, 0};
    og.group = 3;
    CHECK_INT_EQ(wl_diag_stream_opts((wl_source){.state = &s, .next = hnext}, &og, &d), SIM_OK);
    CHECK_U64_EQ(d.affinity_hit_tokens, 0);
    /* `max` stops early; warm-up excludes early requests from the counts. */
    s = (hstream){pre, 20, 0};
    wl_diag_opts o = {.max = 10, .block_size = 16, .n_dest = 1, .pool_tokens = 1 << 20,
                      .warmup_s = 5};
    CHECK_INT_EQ(wl_diag_stream_opts((wl_source){.state = &s, .next = hnext}, &o, &d), SIM_OK);
    CHECK_U64_EQ(d.requests, 10);
    CHECK_U64_EQ(d.counted, 5);
    CHECK_U64_EQ(d.affinity_hit_tokens, 5 * 32);

    /* Bad inputs. */
    const struct {
        uint32_t bs, R;
        uint64_t pool;
        const char *needle;
    } bad[] = {{0, 4, 1000, "block size 0"}, {16, 0, 1000, "0 destinations"},
               {16, 4, 0, "smaller than one 16-token block"},
               {16, 4, 15, "smaller than one 16-token block"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = (hstream){pre, 20, 0};
        CHECK_INT_EQ(wl_diag_stream((wl_source){.state = &s, .next = hnext}, 0, bad[i].bs, bad[i].R, bad[i].pool,
                                    &d),
                     SIM_EINVAL);
        CHECK_STR_CONTAINS(sim_errmsg(), bad[i].needle);
    }
    hreq back[2] = {{5, 1, 1, {A}}, {4, 1, 1, {A}}};
    s = (hstream){back, 2, 0};
    CHECK_INT_EQ(wl_diag_stream((wl_source){.state = &s, .next = hnext}, 0, 16, 2, 1000, &d), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "non-decreasing arrivals");
    CHECK_U64_EQ(d.requests, 0);
}

/* ---- validation against the simulator ------------------------------- */

/* The sticky router's own key → destination map, for the "ring" column. */
typedef struct ring_ctx {
    const route_type *rt;
    void *state;
} ring_ctx;

static uint32_t ring_map(void *ctx, uint64_t key, uint32_t n_dest)
{
    ring_ctx *c = ctx;
    wl_request r = {.key = key};
    (void)n_dest;
    return c->rt->route(c->state, &r, NULL);
}

static char *write_temp(const char *text)
{
    const char *dir = getenv("TMPDIR");
    char *path = malloc(4096);
    CHECK(path);
    snprintf(path, 4096, "%s/crsim_diag_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    size_t n = strlen(text);
    CHECK(write(fd, text, n) == (ssize_t)n);
    close(fd);
    return path;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    CHECK(s && fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static double sim_hit(const exp_setup *s, const char *policy, uint64_t seed, double rate)
{
    const route_type *rt = route_find(policy);
    CHECK(rt);
    const route_env env = exp_setup_route_env(s, seed, rate);
    exp_stream *st = NULL;
    CHECK_INT_EQ(exp_stream_open(s, seed, rate, &st), SIM_OK);
    cluster_result res;
    int rc = cluster_run(&s->cp, rt, &env, s->cfg->router, exp_stream_source(st), &res);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    double h = res.hit_rate;
    cluster_result_fini(&res);
    exp_stream_close(st);
    return h;
}

/* One row of the accuracy table: simulate sticky and flat_lb, run the
 * diagnostic (default key map, and the sticky ring's map), print, check. */
static void validate(const char *label, const char *cfg_text, const char *const *sets,
                     size_t n_set, uint32_t group)
{
    char *path = write_temp(cfg_text);
    exp_config cfg;
    int rc = exp_config_load(path, sets, n_set, &cfg);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    exp_setup s;
    rc = exp_setup_init(&cfg, &s);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    const uint64_t seed = (uint64_t)cfg.seeds[0];
    const double rate = cfg.rates[0];

    double t0 = sim_wall_s();
    double h_sticky = sim_hit(&s, "sticky", seed, rate);
    double h_flat = sim_hit(&s, "flat_lb", seed, rate);
    double t_sim = sim_wall_s() - t0;

    wl_diag_opts o = {.block_size = (uint32_t)cfg.block_size, .n_dest = s.cp.n_dest,
                      .pool_tokens = s.pool_tokens, .warmup_s = cfg.warmup_s};
    exp_stream *st = NULL;
    wl_diag d, dr;
    CHECK_INT_EQ(exp_stream_open(&s, seed, rate, &st), SIM_OK);
    t0 = sim_wall_s();
    CHECK_INT_EQ(wl_diag_stream_opts(exp_stream_source(st), &o, &d), SIM_OK);
    double t_diag = sim_wall_s() - t0;
    exp_stream_close(st);

    /* Coarser cache units: the same answer when sharing happens at unit
     * boundaries (Mooncake: 512-token ids = 32 blocks of 16 tokens). */
    if (group > 1) {
        wl_diag dg;
        o.group = group;
        CHECK_INT_EQ(exp_stream_open(&s, seed, rate, &st), SIM_OK);
        t0 = sim_wall_s();
        CHECK_INT_EQ(wl_diag_stream_opts(exp_stream_source(st), &o, &dg), SIM_OK);
        double t_g = sim_wall_s() - t0;
        exp_stream_close(st);
        fprintf(stderr, "%s: group %u: affinity %.4f spread %.4f in %.2f s (exact %.4f %.4f)\n",
                label, group, dg.affinity_hit, dg.spread_hit, t_g, d.affinity_hit, d.spread_hit);
        CHECK_NEAR(dg.affinity_hit, d.affinity_hit, 0.002);
        CHECK_NEAR(dg.spread_hit, d.spread_hit, 0.002);
        o.group = 0;
    }

    /* The same with sticky's own ring as the affinity map. */
    const route_env env = exp_setup_route_env(&s, seed, 1.0);
    ring_ctx rc_ = {route_find("sticky"), NULL};
    rc_.state = calloc(1, rc_.rt->state_size);
    CHECK(rc_.state);
    const void *args[ROUTE_MAX_READS];
    route_config_args(cfg.router, rc_.rt, args);
    CHECK_INT_EQ(rc_.rt->create(rc_.state, &env, args), SIM_OK);
    o.affinity_map = ring_map;
    o.affinity_ctx = &rc_;
    CHECK_INT_EQ(exp_stream_open(&s, seed, rate, &st), SIM_OK);
    CHECK_INT_EQ(wl_diag_stream_opts(exp_stream_source(st), &o, &dr), SIM_OK);
    exp_stream_close(st);
    if (rc_.rt->destroy)
        rc_.rt->destroy(rc_.state);
    free(rc_.state);

    printf("| %-26s | %3u | %7" PRIu64 " | %5.1f %% | %5.1f %% (%5.1f %%) | %5.1f %% | %5.1f %% "
           "| %5.1f %% | %5.1f %% | %7.0f | %7.0f | %5.2f s | %5.1f s |\n",
           label, s.cp.n_dest, d.requests, 100 * h_sticky, 100 * d.affinity_hit,
           100 * dr.affinity_hit, 100 * h_flat, 100 * d.spread_hit, 100 * (h_sticky - h_flat),
           100 * d.recoverable, d.affinity_window_s, d.spread_window_s, t_diag, t_sim);
    fflush(stdout);
    CHECK_NEAR(d.affinity_hit, h_sticky, TOL_PP);
    CHECK_NEAR(d.spread_hit, h_flat, TOL_PP);

    /* Rates form, for a single-turn synthetic workload with constant
     * lengths: key b has rate λ_b, prefix P (whole blocks) and prompt
     * P + input. */
    if (!s.is_trace && strcmp(cfg.wl.prefix.dist, "const") == 0 &&
        strcmp(cfg.wl.input.dist, "const") == 0 && cfg.wl.turns.max == 1 &&
        cfg.wl.global_prefix_tokens == 0) {
        wl_keyrates kr;
        CHECK_INT_EQ(wl_synth_keys(&cfg.wl, &kr, NULL), SIM_OK);
        double *P = malloc(kr.n * sizeof *P), *L = malloc(kr.n * sizeof *L);
        CHECK(P && L);
        double sum = 0;
        for (size_t b = 0; b < kr.n; b++)
            sum += kr.rate[b];
        const double bs = (double)cfg.block_size;
        for (size_t b = 0; b < kr.n; b++) {
            kr.rate[b] *= rate / sum;
            P[b] = floor(cfg.wl.prefix.mean / bs) * bs;
            L[b] = cfg.wl.prefix.mean + cfg.wl.input.mean;
        }
        wl_diag dq;
        t0 = sim_wall_s();
        CHECK_INT_EQ(wl_diag_rates(kr.rate, P, L, kr.n, s.cp.n_dest, s.pool_tokens, &dq), SIM_OK);
        double t_q = sim_wall_s() - t0;
        printf("| %-26s | rates form: affinity %5.1f %% (sim %5.1f %%), spread %5.1f %% "
               "(sim %5.1f %%), T_aff %.0f s, T_spr %.0f s, %.4f s |\n",
               label, 100 * dq.affinity_hit, 100 * h_sticky, 100 * dq.spread_hit, 100 * h_flat,
               dq.affinity_window_s, dq.spread_window_s, t_q);
        CHECK_NEAR(dq.affinity_hit, h_sticky, TOL_PP);
        CHECK_NEAR(dq.spread_hit, h_flat, TOL_PP);
        free(P);
        free(L);
        wl_keyrates_fini(&kr);
    }
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
    unlink(path);
    free(path);
}

static void test_validation(const char *trace, const char *specs)
{
    printf("| workload | R | requests | sticky sim | diag affinity (ring) | flat_lb sim | "
           "diag spread | sim recov. | diag recov. | T_aff (s) | T_spr (s) | diag wall | "
           "sim wall |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");

    /* 1. Mooncake conversation trace, 30 destinations at 10 requests/s. */
    if (trace && access(trace, R_OK) == 0) {
        char set[4200];
        snprintf(set, sizeof set, "workload.trace=%s", trace);
        const char *sets[] = {set};
        validate("mooncake 10 req/s",
                 "experiment: {name: diag, policies: [sticky, flat_lb], rates: [10],\n"
                 "             seeds: [1], warmup_s: 120, drain_s: 600}\n"
                 "cluster: {destinations: 30}\n"
                 "workload: {type: mooncake, trace: missing.jsonl}\n",
                 sets, 1, 32);
    } else {
        fprintf(stderr, "mooncake trace '%s' not readable: row skipped\n", trace ? trace : "");
    }

    /* 2. paper-main, active set of 128 keys, 8 destinations, 10 req/s. */
    char buf[8192];
    char p[4096];
    snprintf(p, sizeof p, "%s/paper-main.yaml", specs);
    char *wl = read_all(p);
    CHECK(wl);
    snprintf(buf, sizeof buf,
             "experiment: {name: diag, policies: [sticky, flat_lb], rates: [10],\n"
             "             seeds: [1], warmup_s: 300, drain_s: 600}\n"
             "cluster: {destinations: 8}\n%s",
             wl);
    const char *sets2[] = {"workload.keys.active_set=128", "workload.duration_s=1500"};
    validate("paper-main K128", buf, sets2, 2, 0);
    free(wl);

    /* 3. low-reuse-chat on 4 destinations at 8 req/s. */
    snprintf(p, sizeof p, "%s/low-reuse-chat.yaml", specs);
    wl = read_all(p);
    CHECK(wl);
    snprintf(buf, sizeof buf,
             "experiment: {name: diag, policies: [sticky, flat_lb], rates: [8],\n"
             "             seeds: [1], warmup_s: 300, drain_s: 600}\n"
             "cluster: {destinations: 4}\n%s",
             wl);
    const char *sets3[] = {"workload.duration_s=1500"};
    validate("low-reuse-chat", buf, sets3, 1, 0);
    free(wl);

    /* 4. Single-turn keys with constant lengths (also checks the rates
     * form): 1000 keys, 2048-token prefixes (2.0 M tokens, more than the
     * 4 pools hold), 4 destinations at 8 req/s. */
    validate("1000 keys, 2k prefix",
             "experiment: {name: diag, policies: [sticky, flat_lb], rates: [8],\n"
             "             seeds: [1], warmup_s: 300, drain_s: 600}\n"
             "cluster: {destinations: 4}\n"
             "workload:\n"
             "  type: synthetic\n"
             "  seed: 11\n"
             "  duration_s: 1500\n"
             "  keys: {distribution: lognormal, n: 1000, sigma: 1.0}\n"
             "  prefix: {dist: const, mean: 2048, min: 16, max: 8192}\n"
             "  turns: {dist: const, mean: 1, min: 1, max: 1}\n"
             "  input: {dist: const, mean: 256, min: 1, max: 8192}\n"
             "  output: {dist: const, mean: 128, min: 1, max: 4096}\n",
             NULL, 0, 0);
}

int main(int argc, char **argv)
{
    test_rates_one_key();
    test_rates_symmetric();
    test_rates_bad();
    test_stream_small();
    if (argc >= 3)
        test_validation(argv[1], argv[2]);
    else
        fprintf(stderr, "usage: test_diag TRACE SPECS_DIR (validation skipped)\n");
    return 0;
}
