/*
 * Internal to sim/exp/report.c and sim/exp/plot.c (as SQLite pairs btree.h
 * with btreeInt.h): the loaded form of one experiment of a result database
 * that both the report tables and the figures are drawn from.  Not part of
 * the API; nothing outside sim/exp/ includes it.
 */
#ifndef CRSIM_SIM_EXP_REPORT_INT_H
#define CRSIM_SIM_EXP_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/exp/capacity.h"
#include "sim/exp/report.h"
#include "sim/exp/store.h"

/* The serving metrics the report shows (run_metrics columns): TTFT, TPOT,
 * ITL and E2E mean/p50/p90/p99, then requests/s, output tokens/s and
 * goodput (docs/report.md, "Serving metrics"). */
#define EXP_SERVING_COLS 19
extern const char *const exp__serving_cols[EXP_SERVING_COLS];

/* The runs of one (point, policy) at one tested load, over seeds. */
typedef struct exp__rep_load {
    double load_rps;     /* offered load, requests/s */
    size_t n;            /* complete runs (one per seed) */
    double hit_mean;     /* token-weighted KV hit rate, fraction 0..1; NAN if none */
    double hit_sd;       /* sample sd over seeds; NAN if fewer than 2 */
    double p99_mean;     /* <family>_p99 of the SLO metric, s; +INF if any seed is
                            +Inf (unfinished), NAN if all undefined */
    double slo_mean;     /* the SLO metric itself, s, same conventions */
    size_t slo_n_inf;    /* seeds whose SLO metric is +Inf */
    double imb_mean;     /* imbalance_work (max/mean served work); NAN if none */
    double imb_sd;
    double too_long_mean;    /* n_too_long (engine.max_model_len); NAN if none */
    double failed_mean;      /* n_failed (faults, docs/faults.md); NAN if none */
    double retries_mean;     /* n_retries (faults) */
    double fair_worst_mean;  /* fair_worst_p99, s (+INF as p99_mean) */
    double fair_spread_mean; /* fair_spread_p99, s */
    double fair_jain_mean;   /* fair_jain, in (0, 1]; NAN if no key qualified */
    bool seeds_identical;    /* n >= 2 and every seed's hit rate, SLO metric,
                                p99 and imbalance are bit-identical: the seeds
                                did not vary the request stream */
    /* Serving metrics at this load, means over seeds in the order of
     * exp__serving_cols (+Inf if a seed is +Inf, NaN if none defined);
     * filled by exp__report_serving_load (the figure serving-load). */
    double serving[EXP_SERVING_COLS];
} exp__rep_load;

/* Fill every cell's and every load's serving[] and each cell's joint
 * from the runs and the joint capacities (sim/exp/report_serving.c);
 * r->joint set when the experiment has a joint SLO.  Returns SIM_OK or the store's errors. */
struct exp__report;
int exp__report_serving_load(exp_store *db, struct exp__report *r);

/* One (point, policy): a row of a report table. */
typedef struct exp__rep_cell {
    char *policy;
    size_t n_seeds;           /* distinct seeds with a complete run */
    exp__rep_load *loads;     /* ascending load */
    size_t n_loads;
    const exp__rep_load *at_rate; /* the report rate's entry, or NULL if not tested */
    exp_capacity_agg *caps;   /* one per threshold (exp__report.slos order) */
    /* Serving metrics at the report rate, means over seeds (+Inf if a seed
     * is +Inf, NaN if none defined), in the order of exp__serving_cols. */
    double serving[EXP_SERVING_COLS];
    size_t serving_n[EXP_SERVING_COLS]; /* seeds with a value, per column */
    exp_capacity_agg joint;   /* capacity under exp__report.joint (n_seeds 0: none) */
} exp__rep_cell;

/* One sweep point: a report table. */
typedef struct exp__rep_point {
    int64_t point;            /* runs.point */
    char *label;              /* runs.point_label ('' when no sweep) */
    exp__rep_cell *cells;     /* policies in order of first run */
    size_t n_cells;
} exp__rep_point;

/* Everything a report or a plot shows of one experiment. */
typedef struct exp__report {
    int64_t id;
    char *name, *status, *shard, *build, *host, *started_at, *finished_at;
    char *slo_metric;         /* run_metrics column, e.g. "ttft_p99" */
    char *p99_metric;         /* the same family's p99, e.g. "ttft_p99" */
    double *slos;             /* thresholds, s */
    size_t n_slos;
    double rate_rps;          /* report rate in use, requests/s */
    double stored_rate_rps;   /* experiments.report_rate_rps */
    bool rate_fallback;       /* stored rate not tested: nearest tested load used */
    double *loads;            /* every tested load, ascending, requests/s */
    size_t n_loads;
    int64_t *seeds;           /* every seed, ascending */
    size_t n_seeds;
    int64_t n_runs_planned, n_points_planned;
    size_t n_runs, n_interrupted;
    bool has_faults;         /* some run lost a request (n_failed or n_retries
                                > 0): the tables show failed and retries */
    size_t n_seed_loads;      /* (point, policy, load)s with >= 2 seeds */
    size_t n_seed_identical;  /* of those, seeds_identical */
    size_t n_served_nothing; /* runs with no completed request and some
                                rejected (every request rejected) */
    int caps_source;          /* 0 computed (no rows), 1 table, 2 recomputed (stale table) */
    exp__rep_point *points;   /* ascending point */
    size_t n_points;
    /* Mixed fleet: the group_metrics rows of the complete runs at rate_rps
     * (exp_store_read_groups), none without groups; owned. */
    exp_store_group_row *groups;
    size_t n_groups;
    /* Closed-loop clients (docs/clients.md): every stage row of the
     * complete runs (exp_store_read_stages) and the per-seed capacities
     * of the SLO metric; none for open-loop experiments; owned. */
    exp_store_stage_row *stages;
    size_t n_stages;
    exp_capacity_row *cap_rows;
    size_t n_cap_rows;
    const char *load_unit;    /* unit of the loads (exp_setup_load_unit), static */
    char *calib;              /* calibration notes (exp_setup_calib_notes),
                                 complete lines or ""; owned */
    char *joint;              /* experiments.joint_slo, NULL when none */
    bool has_goodput;         /* goodput bounds were set */
} exp__report;

/* Load experiment `id` (0 = the latest, highest id) of the store `db`
 * (opened with exp_store_open_read or exp_store_open).  `rate_rps`
 * > 0 selects the report rate, which must be a tested load; 0 uses the
 * experiment's report_rate_rps (or, if that was not tested, the nearest
 * tested load, with rate_fallback set).  Returns SIM_OK and a new *out
 * (free with exp__report_free); SIM_EINVAL for an unknown experiment, an
 * untested --rate or invalid SLO settings; SIM_EDB on SQLite errors. */
int exp__report_load(exp_store *db, int64_t id, double rate_rps, exp__report **out);

/* exp_store_open_read + exp__report_load of the database at `path`,
 * closing it again: the one call report and plot make.  Returns SIM_OK;
 * SIM_EIO when the file is missing or unreadable; SIM_EINVAL when it is
 * not a crsim database of this schema version, and as exp__report_load. */
int exp__report_read(const char *path, int64_t id, double rate_rps, exp__report **out);

/* Print the closed-loop client section of `r` (nothing when it has no
 * stage rows): per-stage metrics and the SLO capacity with the
 * throughput achieved there (docs/clients.md), as text or Markdown.
 * (report_clients.c) */
void exp__report_print_clients(const exp__report *r, bool markdown, FILE *out);

/* The same SLO capacities as CSV (`report --format csv --table
 * capacities`): one row per (point, policy, seed, threshold) with the
 * censoring and the requests/s achieved at the capacity load.
 * (report_clients.c) */
void exp__report_print_client_caps_csv(const exp__report *r, FILE *out);

/* Free a report.  Accepts NULL. */
void exp__report_free(exp__report *r);

/* Print the partial-results warnings of `r` (status not complete, shard,
 * interrupted runs, rate fallback) as lines "crsim: warning: ..." to
 * stderr.  Cannot fail. */
void exp__report_warn(const exp__report *r);

/* The request-size split of one run's measured requests (exp__regime_split). */
typedef struct exp__regime {
    size_t n_long, n_rest;    /* the longest 1 % of prompts (at least 1) and the rest */
    double p99_long, p99_rest; /* p99 TTFT of each, s (+Inf: one without a first token
                                  reaches it) */
    double prompt_long, prompt_rest; /* mean prompt of each, tokens */
    double uncached_mean;     /* mean prompt - hit tokens over all, tokens */
} exp__regime;

/*
 * Split `n` measured requests (prompt tokens, uncached = prompt - hit
 * tokens, TTFT s with +Inf for none) into the longest ceil(1 % of n)
 * prompts (ties: the slower first) and the rest, into *out.  Returns
 * SIM_OK; SIM_EINVAL when n < 2 (*out NaN).
 */
int exp__regime_split(const double *prompt, const double *uncached, const double *ttft,
                      size_t n, exp__regime *out);

/*
 * Print the regime statement of experiment `r` of database `path`
 * (docs/report.md, "Which regime limits capacity") to `out` (markdown:
 * bold title and a list): per point and policy, at the first tested load
 * whose mean SLO metric exceeds the headline SLO (the middle of
 * experiment.slos), throughput-bound when the p99 TTFT of the rest
 * (every request but the longest 1 % of prompts) exceeds it, else
 * tail-bound; the two p99s, mean prompts, uncached tokens per request and
 * imbalance, means over the seeds with per-request records.  Prints
 * nothing when the experiment has no per-request records.  Returns SIM_OK
 * or SIM_EDB/SIM_EIO.
 */
int exp__report_regime(const char *path, const exp__report *r, bool markdown, FILE *out);

#endif
