/*
 * Calibration of CacheRoute's q_cap and W (see calib.h and docs/qcap.md):
 * the knee search (grid, then bisection), the oracle live-block footprint
 * estimator, the slot arithmetic, single-destination runs of the affinity
 * workload, and `crsim calibrate`.
 */
#include "sim/exp/calib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_statistics_double.h>

#include "models/cluster.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "sim/exp/pool.h"
#include "sim/exp/setup.h"
#include "sim/core/u64map.h"
#include "sim/core/wall.h"
#include "workloads/client.h"

#define CALIB_DEFAULT_TOL 0.02
#define CALIB_DEFAULT_SAFETY 0.5
#define CALIB_FP_PER_KEY 256
#define CALIB_FP_MAX 200000
#define CALIB_FP_RATE 10.0 /* the estimate does not depend on it (docs/qcap.md) */

static const double default_grid[] = {0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

/* ------------------------------------------------------------------ */
/* knee search                                                         */

static bool passes(double metric, double slo) { return metric <= slo; } /* NaN fails */

int exp_knee_search(const double *grid, size_t n_grid, double slo_s, double rel_tol,
                    exp_knee_fn probe, void *ctx, exp_knee *out)
{
    return exp_knee_search_down(grid, n_grid, slo_s, rel_tol, NAN, probe, ctx, out);
}

double exp_calib_ext_floor(double lowest)
{
    return fmax(CALIB_EXT_SHARE * lowest, CALIB_EXT_MIN_RPS);
}

int exp_knee_search_down(const double *grid, size_t n_grid, double slo_s, double rel_tol,
                         double floor_rps, exp_knee_fn probe, void *ctx, exp_knee *out)
{
    if (!(isfinite(slo_s) && slo_s > 0))
        return SIM_ERROR(SIM_EINVAL, "SLO %g s; expected a finite threshold > 0 s", slo_s);
    if (n_grid == 0 || !grid)
        return SIM_ERROR(SIM_EINVAL, "empty load grid; expected at least one load > 0 "
                         "requests/s");
    for (size_t i = 0; i < n_grid; i++)
        if (!(isfinite(grid[i]) && grid[i] > 0) || (i > 0 && !(grid[i] > grid[i - 1])))
            return SIM_ERROR(SIM_EINVAL, "load grid entry %zu is %g; expected finite loads "
                             "> 0 requests/s in strictly ascending order", i + 1, grid[i]);
    if (!(rel_tol > 0 && rel_tol < 1))
        return SIM_ERROR(SIM_EINVAL, "bisection tolerance %g; expected a relative tolerance "
                         "in (0, 1), e.g. 0.02", rel_tol);
    exp_knee k = {.knee_rps = NAN, .fail_rps = NAN};
    double lo = NAN, hi = NAN, m;
    int rc;
    for (size_t i = 0; i < n_grid; i++) {
        if ((rc = probe(ctx, grid[i], &m)))
            return rc;
        k.n_evals++;
        if (!passes(m, slo_s)) {
            hi = grid[i];
            break;
        }
        lo = grid[i];
    }
    /* Fails at the lowest grid load: halve it while >= the floor, until a
     * load passes (then the bracket is [it, the failing load above]). */
    if (isnan(lo) && hi == grid[0]) {
        for (double x = 0.5 * grid[0]; x >= floor_rps; x *= 0.5) {
            if ((rc = probe(ctx, x, &m)))
                return rc;
            k.n_evals++;
            k.n_ext++;
            if (passes(m, slo_s)) {
                lo = x;
                break;
            }
            hi = x;
        }
    }
    if (isnan(lo)) {          /* fails at the lowest load (and extensions) */
        k.censoring = 1;
        k.fail_rps = hi;
    } else if (isnan(hi)) {   /* passes everywhere */
        k.censoring = 2;
        k.knee_rps = lo;
    } else {
        while (hi - lo > rel_tol * lo) {
            double mid = 0.5 * (lo + hi);
            if ((rc = probe(ctx, mid, &m)))
                return rc;
            k.n_evals++;
            if (passes(m, slo_s))
                lo = mid;
            else
                hi = mid;
        }
        k.knee_rps = lo;
        k.fail_rps = hi;
    }
    *out = k;
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* footprint                                                           */

/* A table of distinct 64-bit ids (block hashes or keys) with per-id data
 * in dense arrays, in order of first use: the shared hash map maps an id
 * to its index. */
typedef struct id_tab {
    sim_u64map idx;
    uint64_t *id;
    double *first, *last; /* blocks: first and last use; keys: span of re-used blocks */
    uint64_t *key;        /* blocks: key of the first use */
    uint8_t *reused;      /* blocks: used more than once */
    size_t cap, n;
} id_tab;

static void tab_fini(id_tab *t)
{
    sim_u64map_fini(&t->idx);
    free(t->id);
    free(t->first);
    free(t->last);
    free(t->key);
    free(t->reused);
    memset(t, 0, sizeof *t);
}

/* Index of `id`, adding it (with first = a, last = b) if absent; *added
 * says which.  Returns SIZE_MAX if out of memory (error recorded). */
static size_t tab_add(id_tab *t, uint64_t id, double a, double b, int *added)
{
    if (!t->idx.slot && sim_u64map_init(&t->idx, 1024))
        return SIZE_MAX;
    *added = 0;
    if (t->n == UINT32_MAX - 1) {
        SIM_ERROR(SIM_ENOMEM, "footprint: more than 2^32 distinct blocks or keys");
        return SIZE_MAX;
    }
    uint32_t i = sim_u64map_insert(&t->idx, id, (uint32_t)t->n);
    if (i != SIM_U64MAP_NONE)
        return i;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        uint64_t *ids = realloc(t->id, cap * sizeof *ids);
        if (ids)
            t->id = ids;
        double *f = ids ? realloc(t->first, cap * sizeof *f) : NULL;
        if (f)
            t->first = f;
        double *l = f ? realloc(t->last, cap * sizeof *l) : NULL;
        if (l)
            t->last = l;
        uint64_t *k = l ? realloc(t->key, cap * sizeof *k) : NULL;
        if (k)
            t->key = k;
        uint8_t *r = k ? realloc(t->reused, cap) : NULL;
        if (!r) {
            sim_u64map_del(&t->idx, id);
            SIM_ERROR(SIM_ENOMEM, "out of memory in the footprint table (%zu entries)", cap);
            return SIZE_MAX;
        }
        t->reused = r;
        t->cap = cap;
    }
    const size_t j = t->n++;
    t->id[j] = id;
    t->first[j] = a;
    t->last[j] = b;
    t->key[j] = 0;
    t->reused[j] = 0;
    *added = 1;
    return j;
}

/* Length of [a, b] ∩ [lo, hi] (0 if empty). */
static double overlap(double a, double b, double lo, double hi)
{
    double x = a > lo ? a : lo, y = b < hi ? b : hi;
    return y > x ? y - x : 0;
}

int exp_calib_footprint_measure(wl_source src, uint64_t max, uint32_t block_size,
                                exp_calib_footprint *out)
{
    if (block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "footprint: block size 0; expected >= 1 token");
    id_tab bt = {0}, kt = {0};
    int rc = SIM_OK, added;
    exp_calib_footprint f = {0};
    double t0 = NAN, t1 = NAN, prompt_sum = 0, reuse_sum = 0;
    wl_request r;
    int got = 0;
    while ((max == 0 || f.requests < max) && (got = src.next(src.state, &r)) > 0) {
        if (f.requests > 0 && r.arrival_s < t1) {
            wl_request_fini(&r);
            rc = SIM_ERROR(SIM_EINVAL, "footprint: request %" PRIu64 " arrives at %.9g s, "
                           "before the previous one (%.9g s); expected non-decreasing arrivals",
                           r.id, r.arrival_s, t1);
            goto done;
        }
        if (f.requests == 0)
            t0 = r.arrival_s;
        t1 = r.arrival_s;
        f.requests++;
        prompt_sum += r.prompt_tokens;
        if (tab_add(&kt, r.key, INFINITY, -INFINITY, &added) == SIZE_MAX) {
            wl_request_fini(&r);
            rc = SIM_ENOMEM;
            goto done;
        }
        bool prefix = true;
        uint32_t reuse = 0;
        for (uint32_t b = 0; b < r.n_blocks; b++) {
            size_t i = tab_add(&bt, r.blocks[b], r.arrival_s, r.arrival_s, &added);
            if (i == SIZE_MAX) {
                wl_request_fini(&r);
                rc = SIM_ENOMEM;
                goto done;
            }
            if (!added) {
                bt.last[i] = r.arrival_s;
                bt.reused[i] = 1;
                if (prefix)
                    reuse++;
            } else {
                prefix = false;
                bt.key[i] = r.key;
            }
        }
        reuse_sum += (double)reuse * block_size;
        wl_request_fini(&r);
    }
    /* A stream error (e.g. no memory for a request's blocks). */
    if (got < 0 && rc == SIM_OK)
        rc = -got;
    f.keys = kt.n;
    if (f.requests < 2 || !(t1 > t0)) {
        rc = SIM_ERROR(SIM_EINVAL, "footprint: %" PRIu64 " requests spanning %g s; expected "
                       "at least 2 requests over a positive time span", f.requests,
                       f.requests ? t1 - t0 : 0.0);
        goto done;
    }
    double ta = t0 + 0.25 * (t1 - t0), tb = t0 + 0.75 * (t1 - t0);
    f.window_s = tb - ta;
    /* Sums in order of first use (deterministic for a given stream). */
    double live = 0;
    for (size_t i = 0; i < bt.n; i++) {
        if (!bt.reused[i])
            continue;
        live += overlap(bt.first[i], bt.last[i], ta, tb);
        size_t ks = sim_u64map_get(&kt.idx, bt.key[i]);
        if (bt.first[i] < kt.first[ks])
            kt.first[ks] = bt.first[i];
        if (bt.last[i] > kt.last[ks])
            kt.last[ks] = bt.last[i];
    }
    double live_keys = 0;
    for (size_t i = 0; i < kt.n; i++)
        if (kt.last[i] > kt.first[i])
            live_keys += overlap(kt.first[i], kt.last[i], ta, tb);
    f.live_blocks = live / f.window_s;
    f.live_keys = live_keys / f.window_s;
    f.mean_prompt = prompt_sum / (double)f.requests;
    f.mean_reuse = reuse_sum / (double)f.requests;
    if (!(f.live_keys > 0 && f.live_blocks > 0)) {
        rc = SIM_ERROR(SIM_EINVAL, "footprint: no block of the %" PRIu64 " requests is "
                       "re-used inside the measurement window, so there is no warm prefix "
                       "to keep and W (warm slots) is undefined: cacheroute then degenerates "
                       "to its cold-tail dispatch, power of two choices, i.e. flat_lb (which "
                       "needs no calibration), whatever W; expected a workload with reuse (a trace: "
                       "workload.key_field and workload.trace_prefix per_key with "
                       "trace_prefix_tokens, or JSONL hash_ids), or set "
                       "router.cacheroute.slots and q_cap by hand (docs/calibration.md)",
                       f.requests);
        goto done;
    }
    f.tokens_per_key = f.live_blocks * block_size / f.live_keys;
    *out = f;
    rc = SIM_OK;
done:
    tab_fini(&bt);
    tab_fini(&kt);
    return rc;
}

int exp_calib_slots(uint64_t pool_tokens, double safety, double tokens_per_key, int64_t *w)
{
    if (pool_tokens == 0)
        return SIM_ERROR(SIM_EINVAL, "KV pool of 0 tokens; expected a deployment with a pool");
    if (!(safety > 0 && safety <= 1))
        return SIM_ERROR(SIM_EINVAL, "safety factor %g; expected a share of the pool in (0, 1]",
                         safety);
    if (!(isfinite(tokens_per_key) && tokens_per_key > 0))
        return SIM_ERROR(SIM_EINVAL, "warm footprint %g tokens per key; expected a finite "
                         "number > 0", tokens_per_key);
    double v = floor(safety * (double)pool_tokens / tokens_per_key);
    *w = v < 1 ? 1 : (int64_t)v;
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* single-destination runs                                             */

/* The config of the single-destination runs, derived from `cfg`'s source
 * (exp_config_derive_from, the one way configs are derived): one
 * destination; for a synthetic workload the top `keys` keys (if > 0 and
 * fewer than the active set) and `duration_s` of arrivals (if > 0, with no
 * request limit); `max_requests` >= 0 replaces the request limit (and, for
 * a synthetic workload, lifts the duration).  *d is the caller's to
 * exp_config_fini.  Returns as exp_config_load. */
static int derive(const exp_config *cfg, int64_t keys, double duration_s, int64_t max_requests,
                  exp_config *d)
{
    char buf[4][64];
    const char *sets[5];
    size_t n = 0;
    sets[n++] = "cluster.destinations=1";
    bool synth = strcmp(cfg->wl.type, "synthetic") == 0;
    if (synth && keys > 0 && (cfg->wl.keys.active_set == 0 || keys < cfg->wl.keys.active_set)) {
        snprintf(buf[0], sizeof buf[0], "workload.keys.active_set=%lld", (long long)keys);
        sets[n++] = buf[0];
    }
    if (synth && duration_s > 0) {
        snprintf(buf[1], sizeof buf[1], "workload.duration_s=%.17g", duration_s);
        sets[n++] = buf[1];
        sets[n++] = "workload.max_requests=0";
    }
    if (max_requests >= 0) {
        snprintf(buf[2], sizeof buf[2], "workload.max_requests=%lld", (long long)max_requests);
        sets[n++] = buf[2];
        if (synth)
            sets[n++] = "workload.duration_s=0";
    }
    return exp_config_derive_from(cfg, sets, n, d);
}

static double slo_metric_of(const cluster_result *r, int metric)
{
    switch (metric) {
    case 0: return r->ttft_p99;
    case 1: return r->ttft_p90;
    case 2: return r->ttft_p50;
    case 3: return r->e2e_p99;
    case 4: return r->e2e_p90;
    case 5: return r->tpot_p99;
    default: return NAN;
    }
}

static int run_point(const exp_setup *s, uint64_t seed, double load, exp_calib_point *out)
{
    if (!(isfinite(load) && load > 0))
        return SIM_ERROR(SIM_EINVAL, "load %g requests/s; expected a finite load > 0", load);
    const route_env env = exp_setup_route_env(s, seed, load);
    cluster_params cp = s->cp;
    exp_stream *st = NULL;
    cluster_result res = {0};
    int rc = exp_stream_open(s, seed, load, &st);
    if (rc == SIM_OK)
        rc = cluster_run(&cp, route_find("flat_lb"), &env, s->cfg->router,
                         exp_stream_source(st), &res);
    exp_stream_close(st);
    if (rc == SIM_OK) {
        exp_calib_point p = {.load_rps = load,
                             .metric_s = slo_metric_of(&res, s->cfg->slo_metric),
                             .ttft_p99_s = res.ttft_p99, .ttft_p50_s = res.ttft_p50,
                             .e2e_p99_s = res.e2e_p99, .hit_rate = res.hit_rate,
                             .n_measured = res.n_measured, .n_unfinished = res.n_unfinished,
                             .last_arrival_s = res.last_arrival_s};
        for (uint64_t i = 0; i < res.n_arrived; i++) {
            const cluster_rec *c = &res.rec[i];
            if (c->rejected || c->arrival_s > res.last_arrival_s)
                continue;
            if (c->ttft_s < 0 || c->arrival_s + c->ttft_s > res.last_arrival_s)
                p.backlog_end++;
        }
        *out = p;
    }
    cluster_result_fini(&res);
    return rc;
}

int exp_calib_point_run(const exp_config *cfg, int64_t keys, uint64_t seed, double load_rps,
                        double duration_s, exp_calib_point *out)
{
    if (!(duration_s >= 0 && isfinite(duration_s)))
        return SIM_ERROR(SIM_EINVAL, "duration %g s; expected a finite time >= 0 s", duration_s);
    exp_config d;
    int rc = derive(cfg, keys, duration_s, -1, &d);
    if (rc)
        return rc;
    exp_setup s;
    rc = exp_setup_init(&d, &s);
    if (rc == SIM_OK)
        rc = run_point(&s, seed, load_rps, out);
    exp_setup_fini(&s);
    exp_config_fini(&d);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the calibration                                                     */

typedef struct seed_job {
    const exp_setup *setup;
    const exp_calib_opts *o;
    const double *grid;
    size_t n_grid;
    double slo_s, tol;
    double floor_rps;        /* downward extension floor (NAN: none) */
    uint64_t seed;
    exp_calib_probe *probes; /* grown by the probe */
    size_t n_probes, cap;
    exp_knee knee;
    int in_bisect;
    int rc;
    char err[1024];
    pthread_mutex_t *io;
} seed_job;

static int seed_probe(void *ctx, double load, double *metric)
{
    seed_job *j = ctx;
    exp_calib_point p;
    int rc = run_point(j->setup, j->seed, load, &p);
    if (rc)
        return rc;
    *metric = p.metric_s;
    if (j->n_probes == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 16;
        j->probes = sim_xrealloc(j->probes, j->cap * sizeof *j->probes);
    }
    /* The grid is probed first, in order; a probe whose load is not the
     * next grid load is a bisection probe. */
    /* A load below the lowest grid load, before any bisection, is a
     * downward extension (exp_knee_search_down); bisection probes after
     * an extension lie above the extension that passed. */
    const int ext = !j->in_bisect && load < j->grid[0];
    if (ext && j->o->progress) {
        pthread_mutex_lock(j->io);
        fprintf(j->o->progress, "calibrate: seed %" PRIu64 ": the SLO fails at %.4g req/s; "
                "extending the grid down to %.4g req/s (floor %.4g)\n", j->seed, 2 * load, load,
                j->floor_rps);
        pthread_mutex_unlock(j->io);
    }
    if (!ext && !j->in_bisect && (j->n_probes >= j->n_grid || load != j->grid[j->n_probes]))
        j->in_bisect = 1;
    exp_calib_probe pr = {.seed = j->seed, .load_rps = load, .metric_s = p.metric_s,
                          .hit_rate = p.hit_rate, .pass = passes(p.metric_s, j->slo_s),
                          .bisect = j->in_bisect, .ext = ext};
    if (ext && pr.pass)
        j->in_bisect = 1; /* what follows is the bisection above it */
    j->probes[j->n_probes++] = pr;
    if (j->o->progress) {
        pthread_mutex_lock(j->io);
        fprintf(j->o->progress, "calibrate: seed %" PRIu64 " load %8.3f req/s  p99 %9.3f s  "
                "hit %5.1f %%  %s\n", j->seed, load, p.metric_s, 100 * p.hit_rate,
                pr.pass ? "pass" : "FAIL");
        fflush(j->o->progress);
        pthread_mutex_unlock(j->io);
    }
    return SIM_OK;
}

static void run_seed(seed_job *j)
{
    j->rc = exp_knee_search_down(j->grid, j->n_grid, j->slo_s, j->tol, j->floor_rps, seed_probe,
                                 j, &j->knee);
    if (j->rc)
        snprintf(j->err, sizeof j->err, "%s", sim_errmsg());
}

/* Pool callbacks (sim/exp/pool.h): the seeds in order. */
typedef struct seed_pool {
    seed_job *jobs;
    size_t n, next;
} seed_pool;

static void *take_seed(void *ctx, int *finished)
{
    seed_pool *p = ctx;
    if (p->next >= p->n) {
        *finished = 1;
        return NULL;
    }
    return &p->jobs[p->next++];
}

static void run_seed_task(void *ctx, void *job)
{
    (void)ctx;
    run_seed(job);
}

static const exp_pool_ops seed_ops = {.take = take_seed, .run = run_seed_task};

void exp_calib_result_fini(exp_calib_result *r)
{
    free(r->seeds);
    free(r->probes);
    r->seeds = NULL;
    r->probes = NULL;
    r->n_seeds = r->n_probes = 0;
}

int exp_calibrate(const exp_config *cfg, double slo_s, exp_calib_result *out)
{
    return exp_calibrate_opts(cfg, slo_s, NULL, out);
}

/* Step 1 of a calibration (exp_calib_footprint_cfg, calib.h). */
int exp_calib_footprint_cfg(const exp_config *cfg, uint64_t seed, uint64_t fp_requests,
                            double rate, exp_calib_footprint *fp, uint64_t *pool_tokens)
{
    bool synth = strcmp(cfg->wl.type, "synthetic") == 0;
    uint64_t fp_n = fp_requests;
    if (fp_n == 0) {
        uint64_t k = 0;
        if (synth)
            k = cfg->wl.keys.active_set > 0 ? (uint64_t)cfg->wl.keys.active_set
                                            : (uint64_t)cfg->wl.keys.n;
        fp_n = synth && k > 0 && k < CALIB_FP_MAX / CALIB_FP_PER_KEY ? CALIB_FP_PER_KEY * k
                                                                     : CALIB_FP_MAX;
    }
    exp_config dfp;
    int rc = derive(cfg, 0, 0, (int64_t)fp_n, &dfp);
    if (rc)
        return rc;
    exp_setup s;
    rc = exp_setup_init(&dfp, &s);
    if (rc) {
        exp_config_fini(&dfp);
        return rc;
    }
    *pool_tokens = s.pool_tokens;
    exp_stream *st = NULL;
    rc = exp_stream_open(&s, seed, rate > 0 ? rate : CALIB_FP_RATE, &st);
    if (rc == SIM_OK) /* a closed-loop client: as an infinitely fast server receives it */
        rc = exp_calib_footprint_measure(exp_stream_source_unloaded(st), fp_n,
                                         (uint32_t)cfg->block_size, fp);
    exp_stream_close(st);
    exp_setup_fini(&s);
    exp_config_fini(&dfp);
    return rc;
}

int exp_calibrate_opts(const exp_config *cfg, double slo_s, const exp_calib_opts *o,
                       exp_calib_result *out)
{
    memset(out, 0, sizeof *out);
    double t_start = sim_wall_s();
    exp_calib_opts def = {0};
    if (!o)
        o = &def;
    if (!(isfinite(slo_s) && slo_s > 0))
        return SIM_ERROR(SIM_EINVAL, "SLO %g s; expected a finite threshold > 0 s", slo_s);
    double tol = o->rel_tol > 0 ? o->rel_tol : CALIB_DEFAULT_TOL;
    double safety = o->safety > 0 ? o->safety : CALIB_DEFAULT_SAFETY;
    if (!(tol < 1))
        return SIM_ERROR(SIM_EINVAL, "bisection tolerance %g; expected (0, 1)", tol);
    if (!(safety <= 1))
        return SIM_ERROR(SIM_EINVAL, "safety factor %g; expected a share of the pool in "
                         "(0, 1]", safety);
    if (!(o->duration_s >= 0 && isfinite(o->duration_s)))
        return SIM_ERROR(SIM_EINVAL, "duration %g s; expected a finite time >= 0 s",
                         o->duration_s);
    const double *grid = o->grid ? o->grid : default_grid;
    size_t n_grid = o->grid ? o->n_grid : sizeof default_grid / sizeof *default_grid;
    if (n_grid == 0)
        return SIM_ERROR(SIM_EINVAL, "empty load grid; expected at least one load > 0 "
                         "requests/s");
    size_t n_seeds = o->seeds ? o->n_seeds : cfg->n_seeds;
    if (n_seeds == 0)
        return SIM_ERROR(SIM_EINVAL, "no seeds; expected at least one run seed");
    out->slo_s = slo_s;
    out->slo_metric = cfg->slo_metric;
    out->safety = safety;
    bool synth = strcmp(cfg->wl.type, "synthetic") == 0;

    /* 1. Footprint of the workload as configured (its active set). */
    int rc = exp_calib_footprint_cfg(cfg, o->seeds ? o->seeds[0] : (uint64_t)cfg->seeds[0],
                                     o->fp_requests, 0, &out->fp, &out->pool_tokens);
    if (rc)
        return rc;

    /* 2. W. */
    if ((rc = exp_calib_slots(out->pool_tokens, safety, out->fp.tokens_per_key, &out->slots)))
        return rc;

    /* 3. The knee of one destination serving the top keys, per seed. */
    int64_t keys = !synth ? 0 : o->keys == 0 ? out->slots : o->keys > 0 ? o->keys : 0;
    if (synth && keys > 0 && cfg->wl.keys.active_set > 0 && keys > cfg->wl.keys.active_set)
        keys = cfg->wl.keys.active_set;
    out->keys = keys;
    out->duration_s = synth ? (o->duration_s > 0 ? o->duration_s : cfg->wl.duration_s) : 0;
    exp_config dk;
    if ((rc = derive(cfg, keys, o->duration_s, -1, &dk)))
        return rc;
    exp_setup s;
    if ((rc = exp_setup_init(&dk, &s))) {
        exp_config_fini(&dk);
        return rc;
    }
    seed_job *jobs = sim_xcalloc(n_seeds, sizeof *jobs);
    pthread_mutex_t io = PTHREAD_MUTEX_INITIALIZER;
    const double floor_rps = o->ext_floor_rps < 0 ? NAN
                             : o->ext_floor_rps > 0 ? o->ext_floor_rps
                                                    : exp_calib_ext_floor(grid[0]);
    out->ext_floor_rps = floor_rps;
    for (size_t i = 0; i < n_seeds; i++)
        jobs[i] = (seed_job){.setup = &s, .o = o, .grid = grid, .n_grid = n_grid,
                             .slo_s = slo_s, .tol = tol, .floor_rps = floor_rps,
                             .seed = o->seeds ? o->seeds[i] : (uint64_t)cfg->seeds[i],
                             .io = &io};
    unsigned nj = o->jobs > 0 ? o->jobs : 1;
    if (nj > n_seeds)
        nj = (unsigned)n_seeds;
    seed_pool sp = {.jobs = jobs, .n = n_seeds};
    exp_pool wp;
    if (exp_pool_start(&wp, nj > 1 ? nj : 0, &seed_ops, &sp) == 0)
        exp_pool_work(&wp); /* one job, or no thread could start */
    exp_pool_join(&wp);
    exp_setup_fini(&s);
    exp_config_fini(&dk);

    out->n_seeds = n_seeds;
    out->seeds = sim_xcalloc(n_seeds, sizeof *out->seeds);
    size_t total = 0;
    for (size_t i = 0; i < n_seeds; i++)
        total += jobs[i].n_probes;
    out->probes = sim_xcalloc(total ? total : 1, sizeof *out->probes);
    double *exact = sim_xmalloc((n_seeds ? n_seeds : 1) * sizeof *exact), mn = INFINITY;
    for (size_t i = 0; i < n_seeds; i++) {
        seed_job *j = &jobs[i];
        if (j->rc && rc == SIM_OK)
            rc = SIM_ERROR(j->rc, "%s", j->err);
        memcpy(out->probes + out->n_probes, j->probes, j->n_probes * sizeof *j->probes);
        out->n_probes += j->n_probes;
        free(j->probes);
        out->seeds[i] = (exp_calib_seed){.seed = j->seed, .knee = j->knee};
        out->n_ext += j->knee.n_ext;
        if (j->rc)
            continue;
        if (j->knee.censoring == 1) {
            out->n_left++;
        } else if (j->knee.censoring == 2) {
            out->n_right++;
        } else {
            exact[out->n_exact++] = j->knee.knee_rps;
            if (j->knee.knee_rps < mn)
                mn = j->knee.knee_rps;
        }
    }
    free(jobs);
    out->q_cap_rps = out->n_exact ? gsl_stats_mean(exact, 1, out->n_exact) : NAN;
    out->q_cap_min_rps = out->n_exact ? mn : NAN;
    out->q_cap_sd_rps = out->n_exact >= 2 ? gsl_stats_sd(exact, 1, out->n_exact) : NAN;
    free(exact);
    out->wall_s = sim_wall_s() - t_start;
    return rc;
}

/* ------------------------------------------------------------------ */
/* report and command line                                             */

static const char *cens_name(int c) { return c == 1 ? "left" : c == 2 ? "right" : "exact"; }

void exp_calib_print(const exp_calib_result *r, FILE *f)
{
    const char *metric = exp_slo_metric_names[r->slo_metric];
    fprintf(f, "warm footprint: %" PRIu64 " requests, %" PRIu64 " keys, window %.0f s: "
            "%.1f live blocks over %.2f live keys = %.0f tokens per key "
            "(mean prompt %.0f, mean re-used prefix %.0f tokens)\n",
            r->fp.requests, r->fp.keys, r->fp.window_s, r->fp.live_blocks, r->fp.live_keys,
            r->fp.tokens_per_key, r->fp.mean_prompt, r->fp.mean_reuse);
    fprintf(f, "W = floor(%.2f x %" PRIu64 " pool tokens / %.0f tokens per key) = %" PRId64 "\n",
            r->safety, r->pool_tokens, r->fp.tokens_per_key, r->slots);
    if (r->keys > 0)
        fprintf(f, "knee search: one destination, the top %" PRId64 " keys, ", r->keys);
    else
        fprintf(f, "knee search: one destination, the workload as configured, ");
    fprintf(f, "SLO %s <= %g s\n\n", metric, r->slo_s);
    fprintf(f, "%6s %10s %12s %7s %6s %7s\n", "seed", "load/s", metric, "hit", "SLO", "probe");
    for (size_t i = 0; i < r->n_probes; i++) {
        const exp_calib_probe *p = &r->probes[i];
        fprintf(f, "%6" PRIu64 " %10.3f %12.3f %6.1f%% %6s %7s\n", p->seed, p->load_rps,
                p->metric_s, 100 * p->hit_rate, p->pass ? "pass" : "FAIL",
                p->ext ? "extend" : p->bisect ? "bisect" : "grid");
    }
    fprintf(f, "\n%6s %10s %10s %9s\n", "seed", "knee/s", "fail/s", "censored");
    for (size_t i = 0; i < r->n_seeds; i++) {
        const exp_calib_seed *s = &r->seeds[i];
        fprintf(f, "%6" PRIu64 " %10.3f %10.3f %9s\n", s->seed, s->knee.knee_rps,
                s->knee.fail_rps, cens_name(s->knee.censoring));
    }
    fprintf(f, "\nq_cap = %.3f requests/s (mean of %zu exact knees; sd %.3f, min %.3f; "
            "left-censored %zu, right-censored %zu)\n", r->q_cap_rps, r->n_exact,
            r->q_cap_sd_rps, r->q_cap_min_rps, r->n_left, r->n_right);
    fprintf(f, "wall time %.1f s\n\n", r->wall_s);
    if (r->n_exact > 0)
        fprintf(f, "router.cacheroute.q_cap: %.4g\n", r->q_cap_rps);
    else if (r->n_left && r->n_ext > 0)
        fprintf(f, "# router.cacheroute.q_cap: no exact knee (the SLO fails at the lowest "
                "load, extended down to the floor %.4g req/s: no load meets it); loosen "
                "--slo or lower --grid\n", r->ext_floor_rps);
    else
        fprintf(f, "# router.cacheroute.q_cap: no exact knee (%s); widen --grid\n",
                r->n_left ? "the SLO fails at the lowest load" : "the SLO holds at every load");
    fprintf(f, "router.cacheroute.slots: %" PRId64 "\n", r->slots);
}

int exp_calib_parse_grid(const char *what, const char *v, double **grid, size_t *n)
{
    size_t cap = 8, k = 0;
    double *g = sim_xmalloc(cap * sizeof *g);
    const char *p = v ? v : "";
    while (*p) {
        char *end = NULL;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !isfinite(x) || !(x > 0) || (k > 0 && !(x > g[k - 1])))
            goto bad;
        if (k == cap)
            g = sim_xrealloc(g, (cap *= 2) * sizeof *g);
        g[k++] = x;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (k == 0)
        goto bad;
    *grid = g;
    *n = k;
    return SIM_OK;
bad:
    free(g);
    return SIM_ERROR(SIM_EINVAL, "%s '%s'; expected ascending comma-separated "
                     "loads > 0 requests/s, e.g. 1,2,4,8", what, v ? v : "");
}

/* Mixed fleets (docs/mixed-fleets.md): the overrides that make group
 * `g` of `cfg` a uniform cluster of its deployment (cluster.groups=[] and
 * the group's resolved cluster.*, engine.* and cost.profile), into
 * buf[0..10) / sets[0..10); returns their count (10). */
static size_t group_sets(const exp_group *g, char buf[10][320], const char *sets[10])
{
    snprintf(buf[0], sizeof buf[0], "cluster.groups=[]");
    snprintf(buf[1], sizeof buf[1], "cluster.hardware=\"%s\"", g->hardware);
    snprintf(buf[2], sizeof buf[2], "cluster.model=\"%s\"", g->model);
    snprintf(buf[3], sizeof buf[3], "cluster.tp=%lld", (long long)g->tp);
    snprintf(buf[4], sizeof buf[4], "cluster.weight_dtype=%s", g->weight_dtype);
    snprintf(buf[5], sizeof buf[5], "cluster.kv_dtype=%s", g->kv_dtype);
    snprintf(buf[6], sizeof buf[6], "cluster.mem_util=%.17g", g->mem_util);
    snprintf(buf[7], sizeof buf[7], "cost.profile=\"%s\"", g->cost_profile);
    snprintf(buf[8], sizeof buf[8], "engine.max_num_batched_tokens=%lld",
             (long long)g->max_num_batched_tokens);
    snprintf(buf[9], sizeof buf[9], "engine.max_num_seqs=%lld", (long long)g->max_num_seqs);
    for (size_t i = 0; i < 10; i++)
        sets[i] = buf[i];
    return 10;
}

/* `crsim calibrate` of a mixed fleet: the calibration of every group as
 * a uniform cluster of its deployment (`cfg` is the loaded config of
 * `config` with `sets`), each printed under its name, then the
 * q_cap_by_group line and one W (the smallest group's: the same slot
 * count must fit every group's pool). */
static int calib_groups(const char *config, const char *const *sets, size_t n_set,
                        const exp_config *cfg, double slo, const exp_calib_opts *o)
{
    double *q = sim_xcalloc(cfg->n_groups, sizeof *q);
    int64_t w = 0;
    int rc = SIM_OK;
    for (size_t i = 0; rc == SIM_OK && i < cfg->n_groups; i++) {
        const exp_group g = exp_config_group(cfg, i);
        char buf[10][320];
        const char **all = sim_xcalloc(n_set + 10, sizeof *all);
        for (size_t j = 0; j < n_set; j++)
            all[j] = sets[j];
        size_t n = n_set + group_sets(&g, buf, all + n_set);
        exp_config gc;
        rc = exp_config_load_unchecked(config, all, n, &gc);
        free(all);
        if (rc)
            break;
        printf("== group %s (destinations %u-%u): %s on %lld x %s\n", g.name, g.first,
               g.first + g.n_dest - 1, g.model, (long long)g.tp, g.hardware);
        exp_calib_result res;
        rc = exp_calibrate_opts(&gc, slo, o, &res);
        if (rc == SIM_OK) {
            exp_calib_print(&res, stdout);
            q[i] = res.q_cap_rps;
            w = i == 0 || res.slots < w ? res.slots : w;
        }
        exp_calib_result_fini(&res);
        exp_config_fini(&gc);
        printf("\n");
    }
    for (size_t i = 0; rc == SIM_OK && i < cfg->n_groups; i++)
        if (!isfinite(q[i])) {
            printf("# router.cacheroute.q_cap_by_group: group %s has no exact knee; widen "
                   "--grid\n", cfg->groups[i].name);
            free(q);
            return SIM_OK;
        }
    if (rc == SIM_OK) {
        printf("mixed fleet (docs/mixed-fleets.md): per-group q_cap and the smallest group's W\n"
               "router:\n  cacheroute:\n    q_cap_by_group: [");
        for (size_t i = 0; i < cfg->n_groups; i++)
            printf("%s%.3f", i ? ", " : "", q[i]);
        printf("]\n    slots: %lld\n", (long long)w);
    }
    free(q);
    return rc;
}

int exp_calib_main(const exp_cli_args *a)
{
    const char *config = a->pos[0];
    size_t n_set = 0;
    const char *const *sets = exp_cli_list(a, "set", &n_set);
    double slo = exp_cli_real(a, "slo", 0), tol = exp_cli_real(a, "tol", 0);
    double safety = exp_cli_real(a, "safety", 0), duration = exp_cli_real(a, "duration", 0);
    double keys = (double)exp_cli_int(a, "keys", 0), nseeds = (double)exp_cli_int(a, "seeds", 0);
    double jobs = (double)exp_cli_int(a, "jobs", 0);
    double *grid = NULL;
    size_t n_grid = 0;
    bool quiet = exp_cli_has(a, "quiet");
    int rc = SIM_OK;
    if (exp_cli_has(a, "grid"))
        rc = exp_calib_parse_grid("calibrate: --grid", exp_cli_str(a, "grid", NULL), &grid,
                                  &n_grid);
    exp_config cfg = {0};
    if (rc == SIM_OK)
        rc = exp_config_load_unchecked(config, sets, n_set, &cfg); /* measures q_cap */
    if (rc == SIM_OK && wl_client_closed(&cfg.wl))
        /* q_cap is a request rate at an open-loop knee; a closed-loop
         * client's load is a concurrency or a ladder multiplier. */
        rc = SIM_ERROR(SIM_EINVAL, "%s: workload.client.mode is %s; expected open: calibrate "
                       "measures the open-loop knee (request rate) of the workload; run it on "
                       "the open-loop twin, e.g. --set workload.client.mode=open "
                       "(docs/clients.md, \"Example configs\")", config, cfg.wl.client.mode);
    uint64_t *seeds = NULL;
    if (rc == SIM_OK) {
        if (!(slo > 0)) /* the median threshold, as the harness uses for routers */
            slo = exp_config_median_slo(&cfg);
        exp_calib_opts o = {.grid = grid, .n_grid = n_grid, .rel_tol = tol, .safety = safety,
                            .keys = (int64_t)keys, .duration_s = duration,
                            .progress = quiet ? NULL : stderr};
        if (nseeds > 0) {
            o.n_seeds = (size_t)nseeds;
            seeds = sim_xcalloc(o.n_seeds, sizeof *seeds);
            for (size_t i = 0; i < o.n_seeds; i++)
                seeds[i] = i + 1;
            o.seeds = seeds;
        }
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = jobs > 0 ? (unsigned)jobs : ncpu > 0 ? (unsigned)ncpu : 1;
        if (cfg.n_groups) {
            rc = calib_groups(config, sets, n_set, &cfg, slo, &o);
        } else {
            exp_calib_result res;
            rc = exp_calibrate_opts(&cfg, slo, &o, &res);
            if (rc == SIM_OK)
                exp_calib_print(&res, stdout);
            exp_calib_result_fini(&res);
        }
    }
    exp_config_fini(&cfg);
    free(seeds);
    free(grid);
    return rc;
}
