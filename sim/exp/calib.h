/*
 * Calibration of CacheRoute's two inputs (docs/design.md §8, docs/qcap.md):
 *
 *  * W, the warm-slot budget per destination: how many keys' warm prefix
 *    footprints fit in one destination's KV pool after reserving a share
 *    for running requests, W = max(1, floor(safety · pool / F)), with F the
 *    mean warm footprint per key measured from the request stream (the
 *    oracle "live block" estimator of exp_calib_footprint);
 *  * q_cap, the per-destination capacity: the latency/load knee of ONE
 *    destination serving affinity traffic (the workload restricted to the
 *    keys one destination holds: its top-W keys) with warm caches — the
 *    highest load whose p99 of the SLO metric meets the SLO — found by a
 *    load grid and bisection, per run seed; q_cap is the mean of the
 *    per-seed knees.
 *
 * `crsim calibrate CONFIG` (exp_calib_main) prints both and the config
 * lines to paste; exp_calibrate is the library entry for the harness.
 */
#ifndef CRSIM_SIM_CALIB_H
#define CRSIM_SIM_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "workloads/request.h"
#include "sim/exp/cli.h"
#include "sim/exp/exp.h"

/* ---- knee search (pure; no simulation) ---- */

/* A latency probe: the SLO metric (s) at `load_rps` into *metric_s.  +Inf
 * and NaN count as failing.  Returns SIM_OK or an error code (with a
 * message), which aborts the search. */
typedef int (*exp_knee_fn)(void *ctx, double load_rps, double *metric_s);

/* Outcome of one knee search.  Loads in requests/s. */
typedef struct exp_knee {
    double knee_rps;   /* highest load that passed (the lower end of the
                          final bracket); NAN when left-censored; the
                          highest grid load when right-censored */
    double fail_rps;   /* lowest load that failed above the knee; NAN when
                          right-censored */
    int censoring;     /* 0 exact, 1 left (fails at the lowest grid load,
                          and at every downward extension), 2 right
                          (passes at the highest); = exp_censoring */
    size_t n_evals;    /* probes made (grid + extension + bisection) */
    size_t n_ext;      /* downward extensions probed (halvings of the
                          lowest grid load; exp_knee_search_down) */
} exp_knee;

/*
 * Find the latency/load knee of a (presumed monotone) metric: probe the
 * loads of `grid` (n_grid > 0, finite, > 0, strictly ascending) in order
 * until the first failure (metric > slo_s, +Inf or NaN), then bisect
 * (arithmetic midpoint) between the last passing and first failing load
 * until (fail − pass) <= rel_tol · pass.  No probe above a failing load is
 * made, so a non-monotone metric gives the first crossing.  Returns
 * SIM_OK and fills *out; SIM_EINVAL when slo_s is not finite and > 0,
 * n_grid is 0, the grid is not finite, > 0 and strictly ascending, or
 * rel_tol is not in (0, 1) (then *out is unchanged); or the probe's error.
 */
int exp_knee_search(const double *grid, size_t n_grid, double slo_s, double rel_tol,
                    exp_knee_fn probe, void *ctx, exp_knee *out);

/* The default floor of the downward extension (exp_calib_ext_floor):
 * 1/64 of the lowest grid load — six halvings, 1.8 decades, enough to
 * move a default-grid knee search (lowest 0.25 requests/s) to the knee of
 * a long-prompt trace on one destination (a 100k-token prefill of several
 * seconds puts it near 0.1 requests/s) — and never below 0.01 requests/s:
 * below it a destination is idle between requests (a request every 100 s
 * or more), so the SLO metric is the zero-load latency of one request
 * and a failure there is not a load knee but an SLO no load can meet. */
#define CALIB_EXT_SHARE (1.0 / 64)
#define CALIB_EXT_MIN_RPS 0.01

/* The extension floor for a lowest grid load `lowest` (requests/s):
 * max(CALIB_EXT_SHARE x lowest, CALIB_EXT_MIN_RPS).  Cannot fail. */
double exp_calib_ext_floor(double lowest);

/*
 * exp_knee_search with a downward extension: when the metric fails at
 * the lowest grid load g0, probe g0/2, g0/4, ... while the load is >=
 * floor_rps (an extension; out->n_ext counts them); at the first one that
 * passes, bisect between it and the load above it (an exact knee); if all
 * fail, the search is left-censored with fail_rps the lowest load probed.
 * floor_rps >= g0 (or NaN) makes no extension: exp_knee_search.  Same
 * errors as exp_knee_search.
 */
int exp_knee_search_down(const double *grid, size_t n_grid, double slo_s, double rel_tol,
                         double floor_rps, exp_knee_fn probe, void *ctx, exp_knee *out);

/* Parse an ascending comma-separated load grid "L1,L2,..." (requests/s,
 * finite, > 0, strictly ascending; spaces after a value allowed) into a
 * new array *grid (caller frees) of *n loads.  `what` names the option in
 * the error (e.g. "calibrate: --grid").  Returns SIM_OK or SIM_EINVAL. */
int exp_calib_parse_grid(const char *what, const char *v, double **grid, size_t *n);

/* ---- warm footprint and W ---- */

/* The warm prefix footprint of a request stream (exp_calib_footprint). */
typedef struct exp_calib_footprint {
    uint64_t requests;     /* requests consumed */
    uint64_t keys;         /* distinct routing keys seen */
    double window_s;       /* length of the averaging window, s */
    double live_blocks;    /* time-mean of blocks that have been seen and
                              will be seen again (an oracle cache's content) */
    double live_keys;      /* time-mean of keys holding at least one such block */
    double tokens_per_key; /* F = live_blocks · block_size / live_keys, tokens */
    double mean_prompt;    /* mean prompt length, tokens */
    double mean_reuse;     /* mean longest already-seen block prefix per
                              request (infinite-cache hit), tokens */
} exp_calib_footprint;

/*
 * Measure the warm footprint per key of `src` from up to `max` requests (0
 * = until the stream ends): a block is live from its first to its last use
 * (an oracle cache that holds exactly the blocks that will be re-used and
 * drops each after its last use never misses a re-use); a key is live from
 * the first to the last use of its re-used blocks.  Both are averaged over
 * the middle half of the stream's time span (first quarter and last quarter
 * discarded, so warm-up and the end of the stream do not bias the mean
 * down), and F = mean live tokens / mean live keys.  Every request is
 * freed.  Memory O(distinct blocks + keys).  Returns SIM_OK; SIM_EINVAL when
 * block_size is 0, arrivals decrease, or fewer than 2 requests or no
 * re-used block fall in the window (F undefined: nothing to keep warm);
 * SIM_ENOMEM.
 */
int exp_calib_footprint_measure(wl_source src, uint64_t max, uint32_t block_size,
                                exp_calib_footprint *out);

/*
 * W = max(1, floor(safety · pool_tokens / tokens_per_key)) into *w: the
 * keys whose warm footprints fit in the share `safety` of a destination's
 * KV pool.  Returns SIM_OK; SIM_EINVAL when pool_tokens is 0, safety is not
 * in (0, 1], or tokens_per_key is not finite and > 0 (*w unchanged).
 */
int exp_calib_slots(uint64_t pool_tokens, double safety, double tokens_per_key, int64_t *w);

/*
 * Step 1 of exp_calibrate_opts alone: the warm footprint of `cfg`'s
 * workload as configured (its active set) from `fp_requests` requests (0 =
 * 256 per key of the active set, at most 200,000) of run seed `seed`,
 * generated at `rate` requests/s (0: a fixed 10 requests/s; an open-loop
 * estimate does not depend on the rate, docs/qcap.md), into *fp, and the
 * KV pool of one destination of its deployment (tokens) into
 * *pool_tokens.  A closed-loop client (workload.client.mode other than
 * open) is read as an infinitely fast server receives it
 * (exp_stream_source_unloaded, setup.h): its conversations stay open for
 * their think times, so its footprint does depend on the rate.  W is then
 * exp_calib_slots of the two.  Used by `crsim fit`'s admission-scale
 * target.  Returns SIM_OK or the errors of exp_setup_init and
 * exp_calib_footprint_measure.
 */
int exp_calib_footprint_cfg(const exp_config *cfg, uint64_t seed, uint64_t fp_requests,
                            double rate, exp_calib_footprint *fp, uint64_t *pool_tokens);

/* ---- one single-destination run ---- */

/* One run of the affinity workload on one destination. */
typedef struct exp_calib_point {
    double load_rps;       /* offered load, requests/s */
    double metric_s;       /* the SLO metric (experiment.slo_metric), s;
                              +Inf when unfinished requests reach its tail */
    double ttft_p99_s, ttft_p50_s, e2e_p99_s; /* s */
    double hit_rate;       /* served token-weighted KV hit rate */
    uint64_t n_measured;   /* requests arriving in the measurement window */
    uint64_t n_unfinished; /* still inside the engine when the run stopped */
    uint64_t backlog_end;  /* requests that had arrived but had no first
                              token at the last arrival (the queue then) */
    double last_arrival_s; /* s */
} exp_calib_point;

/*
 * Run the workload of `cfg`, restricted to its top `keys` keys (synthetic:
 * workload.keys.active_set = keys, or as configured when keys <= 0; a trace
 * is replayed whole), on ONE destination of the config's deployment with
 * run seed `seed` at `load_rps` requests/s, arrivals ending at `duration_s`
 * (> 0; or the workload's own end when 0), measuring requests that arrive
 * after experiment.warmup_s, simulating at most experiment.drain_s after
 * the last arrival.  Router flat_lb (trivial for one destination).
 * Returns SIM_OK or the errors of exp_setup_init, the stream and
 * cluster_run (SIM_EINVAL also for load_rps not finite and > 0).
 */
int exp_calib_point_run(const exp_config *cfg, int64_t keys, uint64_t seed, double load_rps,
                        double duration_s, exp_calib_point *out);

/* ---- the whole calibration ---- */

/* Options of a calibration; a zeroed struct (or NULL) means the defaults. */
typedef struct exp_calib_opts {
    const double *grid;     /* loads of the grid, requests/s, ascending;
                               NULL = doubling 0.25, 0.5, ..., 512 */
    size_t n_grid;
    const uint64_t *seeds;  /* run seeds; NULL = experiment.seeds */
    size_t n_seeds;
    double rel_tol;         /* bisection tolerance (0 = 0.02) */
    double safety;          /* share of the pool for warm prefixes
                               (0 = 0.5) */
    int64_t keys;           /* keys on the destination for the knee: 0 = W,
                               > 0 = that many top keys, < 0 = the
                               workload as configured */
    uint64_t fp_requests;   /* requests for the footprint (0 = 256 per
                               key of the active set, at most 200,000) */
    double duration_s;      /* arrivals per knee probe, s (0 = the
                               workload's own end) */
    unsigned jobs;          /* seeds searched in parallel (0 = 1) */
    FILE *progress;         /* optional: one line per probe as measured */
    double ext_floor_rps;   /* floor of the downward extension when the SLO
                               fails at the lowest grid load (0 = the
                               default, exp_calib_ext_floor; < 0 = none) */
} exp_calib_opts;

/* One probe of the knee search. */
typedef struct exp_calib_probe {
    uint64_t seed;
    double load_rps;
    double metric_s;        /* SLO metric, s */
    double hit_rate;
    int pass;               /* metric <= SLO */
    int bisect;             /* 0 grid probe, 1 bisection probe */
    int ext;                /* 1: a downward extension below the grid */
} exp_calib_probe;

/* Per-seed knee. */
typedef struct exp_calib_seed {
    uint64_t seed;
    exp_knee knee;
} exp_calib_seed;

/* Result of exp_calibrate; free with exp_calib_result_fini. */
typedef struct exp_calib_result {
    double slo_s;           /* SLO threshold, s */
    int slo_metric;         /* index into exp_slo_metric_names */
    uint64_t pool_tokens;   /* KV pool per destination, tokens */
    double safety;          /* share of the pool given to warm prefixes */
    exp_calib_footprint fp; /* the footprint estimate (whole workload) */
    int64_t slots;          /* W, warm-slot budget per destination (>= 1) */
    int64_t keys;           /* keys on the destination in the knee search
                               (0 = the workload as configured, a trace) */
    double duration_s;      /* arrivals per probe, s */
    size_t n_seeds;
    exp_calib_seed *seeds;  /* n_seeds entries, owned */
    size_t n_probes;
    exp_calib_probe *probes; /* every probe, seed by seed, owned */
    size_t n_exact, n_left, n_right; /* censoring counts of the seeds */
    double ext_floor_rps;   /* floor of the downward extension, requests/s
                               (NAN: none) */
    size_t n_ext;           /* extension probes, all seeds */
    double q_cap_rps;       /* mean of the exact per-seed knees (requests/s);
                               NAN when no seed is exact */
    double q_cap_sd_rps;    /* sample sd of the exact knees; NAN if < 2 */
    double q_cap_min_rps;   /* smallest exact knee (the conservative choice) */
    double wall_s;          /* wall-clock time of the calibration, s */
} exp_calib_result;

/*
 * Calibrate q_cap and W for `cfg` (its deployment, cost model, engine,
 * workload, experiment.warmup_s/drain_s/seeds/slo_metric) at SLO `slo_s`
 * (s) with options `o` (NULL = defaults): measure the footprint, derive
 * W, then search the knee of one destination serving the top-W keys for
 * every seed.  *out is zeroed first and must be freed with
 * exp_calib_result_fini (also after an error).  Returns SIM_OK (also when
 * seeds are censored: see n_left/n_right and q_cap_rps); SIM_EINVAL for bad
 * input (slo_s, options, the config's specs or workload); SIM_EIO;
 * SIM_ENOMEM.
 */
int exp_calibrate_opts(const exp_config *cfg, double slo_s, const exp_calib_opts *o,
                       exp_calib_result *out);

/* exp_calibrate_opts with the default options. */
int exp_calibrate(const exp_config *cfg, double slo_s, exp_calib_result *out);

/* Free what a result owns.  Safe on a zeroed result and twice. */
void exp_calib_result_fini(exp_calib_result *r);

/* Print the calibration report (probe table, knees, q_cap, footprint, W
 * and the config lines) to `f`.  Cannot fail. */
void exp_calib_print(const exp_calib_result *r, FILE *f);

/*
 * `crsim calibrate CONFIG [--set K=V]... [--seeds N] [--slo S]
 * [--grid a,b,...] [--tol T] [--safety X] [--keys K] [--duration S]
 * [--jobs N] [--quiet]`, on the arguments parsed by sim/exp/cli.c (CONFIG
 * is a->pos[0]; the options of its "calibrate" table entry).  Prints the
 * report to stdout and progress to stderr.  Returns SIM_OK or an error
 * code whose message sim_errmsg() holds (the caller maps it to an exit
 * status).
 */
int exp_calib_main(const exp_cli_args *a);

#endif
