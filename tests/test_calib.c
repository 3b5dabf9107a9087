/*
 * Tests of the q_cap / W calibration (sim/calib.c): the knee search on
 * synthetic monotone functions (exact answers), censoring and bad input;
 * the slot arithmetic W = max(1, floor(safety · pool / F)); the live-block
 * footprint estimator on a hand-made stream with a known answer; and one
 * small end-to-end calibration on the default deployment (70B fp8, TP=2
 * H100) that must give a finite q_cap > 0 and W >= 1.  No timed
 * assertions.  Usage: test_calib.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/exp/calib.h"
#include "sim/core/error.h"
#include "check.h"

/* ---- knee search ---- */

typedef struct lin {
    double slope;  /* metric = slope · load */
    size_t calls;
} lin;

static int lin_probe(void *ctx, double load, double *m)
{
    lin *l = ctx;
    l->calls++;
    *m = l->slope * load;
    return SIM_OK;
}

/* metric 1 s up to `edge` requests/s, +Inf above (a cliff). */
static int cliff_probe(void *ctx, double load, double *m)
{
    *m = load <= *(const double *)ctx ? 1.0 : INFINITY;
    return SIM_OK;
}

static int nan_probe(void *ctx, double load, double *m)
{
    (void)ctx;
    *m = load < 3 ? 0.5 : NAN;
    return SIM_OK;
}

static int err_probe(void *ctx, double load, double *m)
{
    (void)ctx;
    (void)load;
    (void)m;
    return SIM_ERROR(SIM_EIO, "probe failed");
}

static void test_knee(void)
{
    const double grid[] = {1, 2, 4, 8, 16, 32, 64};
    exp_knee k;
    /* metric = load / 10, SLO 3.5: the knee is 35; the grid brackets it
     * in (32, 64], bisection narrows to 2 %. */
    lin l = {.slope = 0.1};
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.02, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 0);
    CHECK(k.knee_rps <= 35.0 && k.fail_rps > 35.0);
    CHECK(k.fail_rps - k.knee_rps <= 0.02 * k.knee_rps);
    CHECK_INT_EQ(k.n_evals, l.calls);
    CHECK_INT_EQ(k.n_evals, 7 + 6); /* whole grid, then 32 -> 0.5 <= 0.02 * 35 in 6 halvings */
    /* A knee on a grid point is found exactly: metric(35) = 3.5 passes. */
    const double g2[] = {5, 35, 70};
    l.calls = 0;
    CHECK_INT_EQ(exp_knee_search(g2, 3, 3.5, 0.5, lin_probe, &l, &k), SIM_OK);
    CHECK_NEAR(k.knee_rps, 35, 0);
    CHECK_NEAR(k.fail_rps, 52.5, 0); /* 70 − 35 > 0.5·35: one bisection, at 52.5 */
    /* A cliff: a probe above the first failure is never made. */
    double edge = 7;
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.001, cliff_probe, &edge, &k), SIM_OK);
    CHECK(k.knee_rps <= 7 && k.knee_rps >= 7 * (1 - 0.001) && k.fail_rps > 7);
    CHECK(k.n_evals < 7 + 20);
    /* NaN fails. */
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.02, nan_probe, NULL, &k), SIM_OK);
    CHECK(k.knee_rps < 3 && k.fail_rps >= 3 && k.fail_rps - k.knee_rps <= 0.02 * k.knee_rps);
    /* Censoring. */
    l = (lin){.slope = 10};
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.02, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 1);
    CHECK(isnan(k.knee_rps));
    CHECK_NEAR(k.fail_rps, 1, 0);
    CHECK_INT_EQ(l.calls, 1);
    l = (lin){.slope = 0.001};
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.02, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 2);
    CHECK_NEAR(k.knee_rps, 64, 0);
    CHECK(isnan(k.fail_rps));
    /* Bad input: *out unchanged, SIM_EINVAL with a message. */
    exp_knee keep = {.knee_rps = 123};
    k = keep;
    CHECK_INT_EQ(exp_knee_search(grid, 7, 0, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "SLO");
    CHECK_INT_EQ(exp_knee_search(grid, 7, -1, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(grid, 7, NAN, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(grid, 7, INFINITY, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(grid, 0, 3.5, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "empty load grid");
    CHECK_INT_EQ(exp_knee_search(NULL, 3, 3.5, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    const double bad1[] = {1, 4, 2}, bad2[] = {0, 1}, bad3[] = {1, 1};
    CHECK_INT_EQ(exp_knee_search(bad1, 3, 3.5, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(bad2, 2, 3.5, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(bad3, 2, 3.5, 0.02, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 1, lin_probe, &l, &k), SIM_EINVAL);
    CHECK_NEAR(k.knee_rps, 123, 0);
    /* A probe's error aborts the search and is returned. */
    CHECK_INT_EQ(exp_knee_search(grid, 7, 3.5, 0.02, err_probe, NULL, &k), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "probe failed");
}

/* Issue 16: when the SLO fails at the lowest grid load the search halves
 * it down to a floor and finds a knee below the grid (before: left-
 * censored at once, "widen --grid"). */
static void test_knee_down(void)
{
    const double grid[] = {0.25, 0.5, 1, 2, 4};
    exp_knee k;
    CHECK_NEAR(exp_calib_ext_floor(0.25), 0.01, 0);     /* 0.25/64 < 0.01 */
    CHECK_NEAR(exp_calib_ext_floor(8), 0.125, 0);       /* 8/64 */
    /* metric = 35 x load, SLO 3.5: the knee is 0.1 requests/s.  The old
     * search is left-censored after one probe... */
    lin l = {.slope = 35};
    CHECK_INT_EQ(exp_knee_search(grid, 5, 3.5, 0.02, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 1);
    CHECK_INT_EQ(k.n_ext, 0);
    /* ...the extended one probes 0.125 (fails) and 0.0625 (passes), then
     * bisects [0.0625, 0.125] to 2 %: an exact knee at 0.1. */
    l.calls = 0;
    CHECK_INT_EQ(exp_knee_search_down(grid, 5, 3.5, 0.02, exp_calib_ext_floor(0.25), lin_probe,
                                      &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 0);
    CHECK_INT_EQ(k.n_ext, 2);
    CHECK(k.knee_rps <= 0.1 && k.fail_rps > 0.1);
    CHECK(k.knee_rps >= 0.0625 && k.fail_rps <= 0.125);
    CHECK(k.fail_rps - k.knee_rps <= 0.02 * k.knee_rps);
    CHECK_INT_EQ(k.n_evals, l.calls);
    /* 0.0625 -> bracket width 0.0625 halves until <= 0.02 x knee (about
     * 0.002): 5 bisections. */
    CHECK_INT_EQ(k.n_evals, 1 + 2 + 5);
    /* A knee below the floor (0.0035 requests/s): 0.125, 0.0625, 0.03125,
     * 0.015625 all fail, 0.0078 is under the 0.01 floor: left-censored
     * with the lowest probed load as the failing one. */
    l = (lin){.slope = 1000};
    CHECK_INT_EQ(exp_knee_search_down(grid, 5, 3.5, 0.02, exp_calib_ext_floor(0.25), lin_probe,
                                      &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 1);
    CHECK_INT_EQ(k.n_ext, 4);
    CHECK_INT_EQ(k.n_evals, 5);
    CHECK(isnan(k.knee_rps));
    CHECK_NEAR(k.fail_rps, 0.015625, 0);
    /* A floor at or above the lowest load: no extension. */
    l = (lin){.slope = 35};
    CHECK_INT_EQ(exp_knee_search_down(grid, 5, 3.5, 0.02, 0.25, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 1);
    CHECK_INT_EQ(l.calls, 1);
    /* A knee inside the grid: no extension, as before. */
    l = (lin){.slope = 1};
    CHECK_INT_EQ(exp_knee_search_down(grid, 5, 3.5, 0.02, 0.01, lin_probe, &l, &k), SIM_OK);
    CHECK_INT_EQ(k.censoring, 0);
    CHECK_INT_EQ(k.n_ext, 0);
    CHECK(k.knee_rps <= 3.5 && k.fail_rps > 3.5);
    /* The --grid parser shared by calibrate and regime. */
    double *g = NULL;
    size_t n = 0;
    CHECK_INT_EQ(exp_calib_parse_grid("regime: --grid", "0.5, 1,2.5", &g, &n), SIM_OK);
    CHECK_INT_EQ(n, 3);
    CHECK_NEAR(g[0], 0.5, 0);
    CHECK_NEAR(g[2], 2.5, 0);
    free(g);
    CHECK_INT_EQ(exp_calib_parse_grid("regime: --grid", "1,1", &g, &n), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "regime: --grid '1,1'; expected ascending");
    CHECK_INT_EQ(exp_calib_parse_grid("regime: --grid", "", &g, &n), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_parse_grid("regime: --grid", "1,x", &g, &n), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_parse_grid("regime: --grid", "-1,2", &g, &n), SIM_EINVAL);
}

/* ---- W ---- */

static void test_slots(void)
{
    int64_t w = -1;
    /* The flagship pool (docs/engine.md) and a 6,850-token footprint:
     * 0.5 · 453,360 / 6,850 = 33.09. */
    CHECK_INT_EQ(exp_calib_slots(453360, 0.5, 6850, &w), SIM_OK);
    CHECK_INT_EQ(w, 33);
    CHECK_INT_EQ(exp_calib_slots(1000, 1.0, 250, &w), SIM_OK); /* exactly 4 */
    CHECK_INT_EQ(w, 4);
    CHECK_INT_EQ(exp_calib_slots(1000, 1.0, 251, &w), SIM_OK); /* 3.98 -> 3 */
    CHECK_INT_EQ(w, 3);
    CHECK_INT_EQ(exp_calib_slots(1000, 0.5, 1e6, &w), SIM_OK); /* at least 1 */
    CHECK_INT_EQ(w, 1);
    w = 77;
    CHECK_INT_EQ(exp_calib_slots(0, 0.5, 100, &w), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_slots(1000, 0, 100, &w), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_slots(1000, 1.5, 100, &w), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_slots(1000, 0.5, 0, &w), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_slots(1000, 0.5, NAN, &w), SIM_EINVAL);
    CHECK_INT_EQ(exp_calib_slots(1000, 0.5, INFINITY, &w), SIM_EINVAL);
    CHECK_INT_EQ(w, 77);
}

/* ---- footprint on a hand-made stream ---- */

/* Requests at t = 0, 1, ..., n−1 alternating key 1 and key 2.  Key 1's
 * prompts are its 2 shared blocks plus 1 unique block; key 2's are its 4
 * shared blocks plus 3 unique ones.  Shared blocks are live all the time,
 * unique ones never: 6 live blocks over 2 live keys, F = 3 blocks. */
typedef struct hand {
    uint64_t i, n;
    int backwards; /* produce a decreasing arrival at i == 5 */
} hand;

static int hand_next(void *state, wl_request *out)
{
    hand *h = state;
    if (h->i >= h->n)
        return 0;
    uint64_t i = h->i++;
    int k2 = (int)(i & 1);
    uint32_t shared = k2 ? 4 : 2, uniq = k2 ? 3 : 1;
    memset(out, 0, sizeof *out);
    out->id = i;
    out->arrival_s = h->backwards && i == 5 ? 0.5 : (double)i;
    out->key = k2 ? 2 : 1;
    out->n_blocks = shared + uniq;
    out->prompt_tokens = 16 * out->n_blocks;
    out->output_tokens = 1;
    out->blocks = malloc(out->n_blocks * sizeof *out->blocks);
    CHECK(out->blocks);
    uint64_t parent = 0;
    for (uint32_t b = 0; b < out->n_blocks; b++) {
        uint64_t content = b < shared ? (k2 ? 200 : 100) + b : 1000000 + 10 * i + b;
        parent = out->blocks[b] = wl_block_hash(parent, content);
    }
    return 1;
}

static void test_footprint(void)
{
    hand h = {.n = 400};
    exp_calib_footprint f;
    CHECK_INT_EQ(exp_calib_footprint_measure((wl_source){.state = &h, .next = hand_next}, 0, 16, &f), SIM_OK);
    CHECK_U64_EQ(f.requests, 400);
    CHECK_U64_EQ(f.keys, 2);
    CHECK_NEAR(f.window_s, 0.5 * 399, 1e-9);
    CHECK_NEAR(f.live_blocks, 6, 1e-9);
    CHECK_NEAR(f.live_keys, 2, 1e-9);
    CHECK_NEAR(f.tokens_per_key, 48, 1e-9);
    /* Every request but the first of each key re-uses its shared blocks. */
    CHECK_NEAR(f.mean_reuse, 16.0 * (2 + 4) / 2 * 398 / 400, 1e-9);
    /* max limits the requests read. */
    h = (hand){.n = 400};
    CHECK_INT_EQ(exp_calib_footprint_measure((wl_source){.state = &h, .next = hand_next}, 100, 16, &f), SIM_OK);
    CHECK_U64_EQ(f.requests, 100);
    /* Bad input. */
    h = (hand){.n = 400};
    CHECK_INT_EQ(exp_calib_footprint_measure((wl_source){.state = &h, .next = hand_next}, 0, 0, &f), SIM_EINVAL);
    h = (hand){.n = 400, .backwards = 1};
    CHECK_INT_EQ(exp_calib_footprint_measure((wl_source){.state = &h, .next = hand_next}, 0, 16, &f), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "non-decreasing");
    h = (hand){.n = 1};
    CHECK_INT_EQ(exp_calib_footprint_measure((wl_source){.state = &h, .next = hand_next}, 0, 16, &f), SIM_EINVAL);
}

/* ---- end to end ---- */

/* The default deployment (70B fp8, TP=2 H100, calibrated roofline
 * profile) and a small synthetic business-key workload. */
static const char small_yaml[] =
    "experiment:\n"
    "  name: calib-test\n"
    "  rates: [1]\n"
    "  seeds: [1, 2]\n"
    "  warmup_s: 30\n"
    "  drain_s: 600\n"
    "  slos: [3.5]\n"
    "cluster:\n"
    "  destinations: 4\n"
    "workload:\n"
    "  type: synthetic\n"
    "  seed: 7\n"
    "  duration_s: 300\n"
    "  keys: {distribution: lognormal, n: 2000, fit_gini: 0.75, cap: 0.01, active_set: 32}\n"
    "  prefix: {dist: lognormal, mean: 1024, cv: 0.5, min: 16, max: 8192}\n"
    "  turns: {dist: gamma, mean: 4, cv: 1, min: 1, max: 64}\n"
    "  input: {dist: lognormal, mean: 256, cv: 1, min: 1, max: 8192}\n"
    "  output: {dist: lognormal, mean: 256, cv: 1, min: 1, max: 4096}\n"
    "  session: {per_key: 4, max_prompt_tokens: 32768}\n";

static void write_config(char *path, size_t n, const char *text)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/crsim_calib_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    size_t len = strlen(text);
    CHECK(write(fd, text, len) == (ssize_t)len);
    close(fd);
}

static void test_end_to_end(void)
{
    char path[512];
    write_config(path, sizeof path, small_yaml);
    exp_config cfg;
    /* The file stays until the end: calibration derives its
     * single-destination configs from it (exp_config_derive_from). */
    int rc = exp_config_load(path, NULL, 0, &cfg);
    if (rc) {
        fprintf(stderr, "%s\n", sim_errmsg());
        exit(1);
    }
    exp_calib_result r;
    /* Bad input through the library entry. */
    CHECK_INT_EQ(exp_calibrate(&cfg, 0, &r), SIM_EINVAL);
    exp_calib_result_fini(&r);
    CHECK_INT_EQ(exp_calibrate(&cfg, -2, &r), SIM_EINVAL);
    exp_calib_result_fini(&r);
    const double g[] = {1};
    exp_calib_opts bad = {.grid = g, .n_grid = 0};
    CHECK_INT_EQ(exp_calibrate_opts(&cfg, 3.5, &bad, &r), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "empty load grid");
    exp_calib_result_fini(&r);

    const double grid[] = {1, 2, 4, 8, 16, 32};
    exp_calib_opts o = {.grid = grid, .n_grid = 6, .jobs = 2};
    rc = exp_calibrate_opts(&cfg, 3.5, &o, &r);
    if (rc) {
        fprintf(stderr, "%s\n", sim_errmsg());
        exit(1);
    }
    exp_calib_print(&r, stdout);
    CHECK_INT_EQ(r.n_seeds, 2);
    CHECK_INT_EQ(r.n_exact, 2);
    CHECK(isfinite(r.q_cap_rps) && r.q_cap_rps > 0);
    CHECK(r.q_cap_min_rps <= r.q_cap_rps);
    CHECK(r.slots >= 1);
    CHECK_U64_EQ(r.pool_tokens, 453360); /* docs/engine.md */
    CHECK(r.fp.tokens_per_key > 1024 * 0.5 && r.fp.tokens_per_key < 32768);
    CHECK(r.keys >= 1 && r.keys <= 32);
    for (size_t i = 0; i < r.n_seeds; i++) {
        const exp_knee *k = &r.seeds[i].knee;
        CHECK(k->knee_rps < k->fail_rps && k->fail_rps - k->knee_rps <= 0.02 * k->knee_rps);
    }
    /* Every probe's verdict agrees with its metric and the SLO. */
    for (size_t i = 0; i < r.n_probes; i++)
        CHECK_INT_EQ(r.probes[i].pass, r.probes[i].metric_s <= 3.5);
    exp_calib_result_fini(&r);
    exp_calib_result_fini(&r); /* twice is safe */
    exp_config_fini(&cfg);
    unlink(path);
}

int main(void)
{
    test_knee();
    test_knee_down();
    test_slots();
    test_footprint();
    test_end_to_end();
    puts("calib: ok");
    return 0;
}
