/*
 * The SQLite result store (schema in docs/results-schema.md).
 *
 * One database per experiment config (default results/<name>.db).  Every
 * `crsim run` appends an experiments row (status 'running'), writes each
 * finished run — its runs row, metrics row and one row per destination — in
 * one transaction, and finally marks the experiment 'complete' or
 * 'incomplete'.  Nothing is ever overwritten; an interrupted run leaves the
 * runs stored so far intact.
 *
 * The store is the only module that speaks SQL: every statement of the
 * tree lives in store.c (writing, resuming, merging shards) and
 * store_read.c (reading back for report, plot, regime and capacities), and
 * every failing SQLite call is reported the same way, naming the database
 * file, what was being done and SQLite's message (SIM_EDB unless said
 * otherwise).  Callers hold an opaque exp_store; none sees the connection.
 */
#ifndef CRSIM_SIM_STORE_H
#define CRSIM_SIM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cluster.h"
#include "sim/exp/capacity.h"

/* Version of the schema written by this build (meta.schema_version). */
#define EXP_STORE_SCHEMA_VERSION 9

/* Default busy timeout of a connection, s: how long a write waits for
 * another process's lock on the database before failing with SIM_EIO
 * "database is locked by another process (pid N, NAME)".  The
 * environment variable CRSIM_DB_BUSY_TIMEOUT_S overrides it
 * (docs/harness.md). */
#define EXP_STORE_BUSY_TIMEOUT_S 10

typedef struct exp_store exp_store;

/* An experiment's identity (one `crsim run` invocation). */
typedef struct exp_store_meta {
    const char *name;
    const char *config_path;
    const char *config_text;  /* full resolved config (canonical YAML) */
    const char *config_hash;  /* hex XXH3-64 of config_text */
    const char *build;        /* build version */
    int64_t n_runs_planned;   /* runs of the whole sweep */
    int64_t n_points;         /* sweep points */
    const char *shard;        /* "I/N", or NULL for the whole sweep */
    const char *slo_metric;   /* run_metrics column the SLOs apply to */
    const char *slos;         /* thresholds, s, comma-separated */
    double report_rate;       /* requests/s */
    double goodput_ttft_s;    /* goodput bounds, s; 0 = none (stored NULL) */
    double goodput_tpot_s;
    const char *joint_slo;    /* experiment.joint_slo terms joined by " and ",
                                 "" or NULL = none (stored NULL) */
} exp_store_meta;

/* One run's identity and bookkeeping. */
typedef struct exp_run_row {
    int64_t run_index;        /* position in the sweep order */
    int64_t point;            /* sweep point */
    const char *point_label;  /* its overrides, "" without a sweep */
    const char *policy;
    int64_t seed;
    double rate_rps;          /* offered load, requests/s */
    const char *config_text;  /* full config of this run (rerunnable) */
    const char *config_hash;  /* hex XXH3-64 of config_text */
    const char *inputs;       /* the input files' manifest (exp_inputs_diff:
                                 "HASH SIZE PATH" lines); NULL = "" */
    const char *started_at;   /* ISO-8601 UTC */
    double wall_s;            /* wall-clock seconds of the simulation */
    bool requests;            /* also store one requests row per arrived
                                 request (experiment.requests, --requests) */
    /* Mixed fleet (docs/mixed-fleets.md): the run's destination groups
     * (their names, in cluster.groups order; borrowed), one
     * group_metrics row each; NULL / 0 without groups (no rows). */
    const struct exp_setup_group *groups;
    size_t n_groups;
    /* Closed-loop client (docs/clients.md): its summary, one client_runs
     * row and one stage_metrics row per stage; NULL for an open-loop run
     * (no rows).  Borrowed. */
    const struct exp_client_summary *client;
} exp_run_row;

/* Open (creating if needed, with its parent folder) the database at `path`
 * and create the schema if missing.  Returns SIM_OK, SIM_EIO (folder) or
 * SIM_EDB (not a database, schema of another version, locked).  *out is
 * set only on success; close with exp_store_close.  A non-empty SQLite
 * file that is not a crsim database (no meta.schema_version) is refused
 * with SIM_EINVAL and left unchanged; a database locked by another
 * process past the busy timeout gives SIM_EIO naming the process when
 * it can be found. */
int exp_store_open(const char *path, exp_store **out);

/* Close the database.  Accepts NULL. */
void exp_store_close(exp_store *s);

/* Insert an experiments row with status 'running'; *id receives its id.
 * Strings are copied by SQLite.  Returns SIM_OK or SIM_EDB. */
int exp_store_begin(exp_store *s, const exp_store_meta *m, int64_t *id);

/* The most recent complete run stored with config hash `hash` (any
 * experiment) by build `build` (a CRSIM_VERSION; NULL = any build) into
 * *run_id, or 0 if there is none; its build_version into found_build (n
 * bytes, NUL-terminated; "" if none; found_build may be NULL) and, when
 * `inputs` is not NULL, its input-file manifest (runs.inputs) into
 * *inputs (malloc'd, the caller frees; NULL if no run).  Resume
 * matches the build because the same config run by other code may give
 * other numbers.  Returns SIM_OK or SIM_EDB. */
int exp_store_find_run(exp_store *s, const char *hash, const char *build, int64_t *run_id,
                       char *found_build, size_t n, char **inputs);

/* Store run `from` (its metrics and destination rows) again as a run of
 * experiment `exp_id` with the identity in `row` (resumed_from = from), in
 * one transaction.  Returns SIM_OK or SIM_EDB. */
int exp_store_copy_run(exp_store *s, int64_t exp_id, const exp_run_row *row, int64_t from);

/*
 * Compute the per-seed SLO capacities of experiment `exp_id` (as
 * exp_store_capacity_rows) and replace its rows of the capacities table
 * with them, in one transaction that also encloses the reading, so the
 * rows match the runs committed at that moment: on any error nothing is
 * changed.  The store must be writable and outside a transaction.  Returns
 * SIM_OK, the errors of exp_store_capacity_rows, or SIM_EDB.
 */
int exp_store_capacities(exp_store *s, int64_t exp_id);

/* The value of run_metrics column `column` (a known column name) of run
 * `run_id` into *value (NAN when NULL).  Returns SIM_OK or SIM_EDB. */
int exp_store_run_metric(exp_store *s, int64_t run_id, const char *column, double *value);

/* Store one finished run of experiment `exp_id` (runs, run_metrics and
 * dest_metrics rows) in one transaction.  Returns SIM_OK or SIM_EDB (then
 * nothing of the run is stored). */
int exp_store_add_run(exp_store *s, int64_t exp_id, const exp_run_row *row,
                      const cluster_result *res, int64_t *run_id);

/* Set the experiment's finish time and status ("complete" or
 * "incomplete").  Returns SIM_OK or SIM_EDB. */
int exp_store_end(exp_store *s, int64_t exp_id, const char *status);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into buf (>= 21 bytes). */
void exp_utc_now(char *buf, size_t n);

/* ---- reading (store_read.c) ---------------------------------------- */

/* Open the existing result database at `path` read-only and check it is a
 * crsim database of schema version EXP_STORE_SCHEMA_VERSION.  Returns
 * SIM_OK (*out set; close with exp_store_close); SIM_EIO when the file is
 * missing, not a regular file or cannot be opened; SIM_EINVAL when it is
 * not a crsim database or of another schema version.  Never creates or
 * writes anything. */
int exp_store_open_read(const char *path, exp_store **out);

/* Formats of exp_store_export. */
enum { EXP_EXPORT_CSV = 0, EXP_EXPORT_JSONL = 1 };

/*
 * Write table `table` of the database to `out` (store_export.c): CSV
 * (RFC 4180: a header row of the column names, CRLF line ends, fields
 * with , " CR LF quoted, NULL empty) or JSON Lines (one object per row,
 * NULL as null); integers in full, reals with 17 significant digits
 * (exact round trip).  With run_id > 0 only that run's rows (run_id
 * column; id for the runs table).  Rows in insertion order.  *rows
 * receives the number of rows written.  Returns SIM_OK; SIM_EINVAL for a
 * table that does not exist (the message lists those that do) or --run
 * with a table without run_id; SIM_EIO when `out` fails; SIM_EDB.
 */
int exp_store_export(exp_store *s, const char *table, int64_t run_id, int format, FILE *out,
                     uint64_t *rows);

/* The database path the store was opened with.  Owned by `s`. */
const char *exp_store_path(const exp_store *s);

/* One experiments row as read (strings owned; free with
 * exp_store_experiment_fini).  NULL text columns read as "". */
typedef struct exp_store_experiment {
    int64_t id;
    char *name, *status, *shard, *build, *host, *started_at, *finished_at;
    char *slo_metric;         /* run_metrics column the SLOs apply to */
    char *slos;               /* thresholds, s, comma-separated (as stored) */
    double report_rate_rps;   /* requests/s; NAN when NULL */
    int64_t n_runs_planned, n_points;
    char *config_text;        /* the experiment's canonical config */
} exp_store_experiment;

/* Read experiment `id` (0 = the latest, highest id) into *out (zeroed
 * first).  Returns SIM_OK; SIM_EINVAL when there is no such experiment (or
 * none at all for id 0), or the experiments table is not of this schema;
 * SIM_EDB on SQLite errors.  On error *out holds nothing to free. */
int exp_store_read_experiment(exp_store *s, int64_t id, exp_store_experiment *out);

/* Free what an experiment row owns.  Safe on a zeroed row and twice. */
void exp_store_experiment_fini(exp_store_experiment *e);

/* The id of the latest (highest-id) experiment into *id, 0 when there is
 * none.  Returns SIM_OK or SIM_EDB. */
int exp_store_latest_experiment(exp_store *s, int64_t *id);

/* Most run_metrics columns exp_store_read_runs returns per run. */
#define EXP_STORE_RUN_COLS 12

/* One stored run of an experiment with selected run_metrics values. */
typedef struct exp_store_run {
    int64_t point;            /* sweep point */
    char *point_label;        /* owned by the array */
    char *policy;             /* owned by the array */
    int64_t seed;
    double rate_rps;          /* offered load, requests/s, exactly as stored */
    bool interrupted;         /* status 'interrupted' */
    bool has_metrics;         /* a run_metrics row exists */
    double v[EXP_STORE_RUN_COLS]; /* the requested columns, NAN when NULL or
                                     without metrics row (+Inf as stored) */
} exp_store_run;

/*
 * Every run of experiment `exp_id`, in run order (run_index, then id),
 * interrupted ones included, with the `n_cols` (<= EXP_STORE_RUN_COLS)
 * run_metrics columns `cols` (names of REAL columns of run_metrics, e.g.
 * "hit_rate", "ttft_p99", "imbalance_work"; checked against the schema,
 * since they are pasted into the SQL).  *runs is a new array of *n runs
 * (NULL and 0 when there are none) freed with exp_store_runs_free.
 * Returns SIM_OK; SIM_EINVAL for an unknown column or too many; SIM_EDB.
 * On error *runs is NULL and *n is 0.
 */
int exp_store_read_runs(exp_store *s, int64_t exp_id, const char *const *cols, size_t n_cols,
                        exp_store_run **runs, size_t *n);

/* Free an array from exp_store_read_runs.  Accepts NULL. */
void exp_store_runs_free(exp_store_run *runs, size_t n);

/*
 * The rows of the capacities table of experiment `exp_id` for SLO metric
 * `slo_metric`, in table order, into a new array *rows of *n (free with
 * exp_capacity_rows_free; *n == 0 when the table holds none).  Returns
 * SIM_OK; SIM_EINVAL for a censoring value other than none/left/right;
 * SIM_EDB.  On error *rows is NULL and *n is 0.
 */
int exp_store_read_capacities(exp_store *s, int64_t exp_id, const char *slo_metric,
                              exp_capacity_row **rows, size_t *n);

/*
 * Compute every per-seed capacity of experiment `exp_id` from its runs
 * (sim/exp/capacity.h): for each (point, policy, seed) with at least one
 * complete run and each threshold in experiments.slos, the capacity of
 * experiments.slo_metric over the loads tested.  Interrupted runs are
 * ignored, and a run without a run_metrics row counts as failing.  *rows
 * is a new array of *n rows in the order of each (point, policy, seed)'s
 * first run and then threshold order (free with exp_capacity_rows_free);
 * an experiment without runs gives *n == 0.  Only reads; works inside or
 * outside a transaction.  Returns SIM_OK; SIM_EINVAL when the experiment
 * does not exist, its slo_metric or slos are invalid, or a (point, policy,
 * seed) has two runs at the same load; SIM_EDB.  On error *rows is NULL
 * and *n is 0.
 */
int exp_store_capacity_rows(exp_store *s, int64_t exp_id, exp_capacity_row **rows, size_t *n);

/*
 * The per-seed capacities under the experiment's joint SLO
 * (experiments.joint_slo, terms "METRIC<=SECONDS" joined by " and ";
 * sim/exp/capacity.h): the highest tested load up to which every term
 * holds, computed as exp_capacity_compute on max over terms of metric /
 * bound with slo_s = 1.  *joint receives the stored text (owned, free()),
 * NULL when the experiment has no joint SLO (then no rows).  Returns
 * SIM_OK, SIM_EINVAL (a bad stored term, loads as in
 * exp_store_capacity_rows) or SIM_EDB; on error nothing is returned.
 */
int exp_store_joint_capacity_rows(exp_store *s, int64_t exp_id, char **joint,
                                  exp_capacity_row **rows, size_t *n);

/* The SQL average of run_metrics column `column` (checked as in
 * exp_store_read_runs) per policy over the runs of experiment `exp_id` at
 * load exactly `rate_rps` that have a metrics row.  One entry per policy. */
typedef struct exp_store_policy_mean {
    char *policy;             /* owned by the array */
    double mean;              /* 0 when every value is NULL (as SQLite's avg reads) */
} exp_store_policy_mean;

/* Fill a new array *out of *n entries (free with exp_store_policy_means_free).
 * Returns SIM_OK, SIM_EINVAL (unknown column) or SIM_EDB; on error *out is
 * NULL and *n is 0. */
int exp_store_policy_means(exp_store *s, int64_t exp_id, const char *column, double rate_rps,
                           exp_store_policy_mean **out, size_t *n);

/* Free an array from exp_store_policy_means.  Accepts NULL. */
void exp_store_policy_means_free(exp_store_policy_mean *m, size_t n);

/* One timeline row (experiment.timeline_s; docs/results-schema.md,
 * "timeline") of a complete run, with the run's identity. */
typedef struct exp_store_tl_row {
    int64_t point;            /* sweep point */
    char *point_label;        /* its overrides ('' without a sweep); owned */
    char *policy;             /* owned */
    int64_t seed;
    int64_t idx;              /* window number */
    double t0_s;              /* window start, s */
    int64_t arrivals;         /* requests arriving in the window */
    double hit_rate;          /* served hit rate, 0..1; NAN if none served */
    double ttft_p99;          /* p99 TTFT, s; +INF if one is unfinished; NAN if none */
    char *faults_events;      /* the run's stored faults.events line (the
                                 flow list after "events:", e.g.
                                 ["630:crash:7", "750:recover:7"]), '' if
                                 none; owned */
} exp_store_tl_row;

/* The timeline rows of the complete runs of experiment `exp_id` at load
 * exactly `rate_rps`, ordered by point, run order and window.  Fills a new
 * array *out of *n rows (free with exp_store_timeline_free; none when the
 * runs stored no timeline, or the database has no timeline table).
 * Returns SIM_OK or SIM_EDB; on error *out is
 * NULL and *n is 0. */
int exp_store_read_timeline(exp_store *s, int64_t exp_id, double rate_rps,
                            exp_store_tl_row **out, size_t *n);

/* One group_metrics row (a destination group of a mixed fleet,
 * docs/results-schema.md) of a complete run, with the run's identity. */
typedef struct exp_store_group_row {
    int64_t point;            /* sweep point */
    char *policy;             /* owned */
    int64_t seed;
    int64_t grp;              /* group index, cluster.groups order */
    char *name;               /* group name; owned */
    int64_t destinations;     /* destinations in the group */
    int64_t requests;         /* measured requests it served */
    int64_t n_measured;       /* the run's measured requests (run_metrics) */
    double hit_rate;          /* 0..1; NAN if none admitted */
    double ttft_p99;          /* s; +INF if over 1 % had no first token; NAN if none */
    double utilization;       /* busy fraction after warm-up, 0..1; NAN if undefined */
} exp_store_group_row;

/* The group_metrics rows of the complete runs of experiment `exp_id` at
 * load exactly `rate_rps`, ordered by point, policy's first run, seed and
 * group.  Fills a new array *out of *n rows (free with
 * exp_store_groups_free; none without groups, or when the database has no
 * group_metrics table).  Returns SIM_OK or SIM_EDB; on error *out is NULL
 * and *n is 0. */
int exp_store_read_groups(exp_store *s, int64_t exp_id, double rate_rps,
                          exp_store_group_row **out, size_t *n);

/* One stage_metrics row of a closed-loop client run with its run's
 * identity and client counters (docs/clients.md); strings owned (free
 * with exp_store_stages_free). */
typedef struct exp_store_stage_row {
    int64_t point;
    char *policy;
    int64_t seed;
    double rate_rps;          /* the run's load (experiment.rates) */
    char *mode;               /* workload.client.mode */
    int64_t stage;
    double load;              /* the stage's rate or concurrency */
    char *load_kind;          /* rate | concurrency | batch */
    double start_s, end_s;
    int64_t sent, completed, abandoned, unsent; /* abandoned, unsent: the run's */
    double throughput_rps, output_tps, hit_rate;
    double ttft_p50, ttft_p99, tpot_p50, tpot_p99, e2e_p99, ttft_p99_intended;
} exp_store_stage_row;

/* The stage rows of experiment `exp_id`'s complete runs, ordered by
 * point, load, policy (first run order), seed and stage, into a new
 * array *out (*n rows; none when the database has no stage_metrics
 * table or no client run).  Returns SIM_OK or SIM_EDB; on error *out is
 * NULL and *n is 0. */
int exp_store_read_stages(exp_store *s, int64_t exp_id, exp_store_stage_row **out, size_t *n);

/* Free an array from exp_store_read_stages.  Accepts NULL. */
void exp_store_stages_free(exp_store_stage_row *rows, size_t n);

/* Free an array from exp_store_read_groups.  Accepts NULL. */
void exp_store_groups_free(exp_store_group_row *rows, size_t n);

/* Free an array from exp_store_read_timeline.  Accepts NULL. */
void exp_store_timeline_free(exp_store_tl_row *rows, size_t n);

/* ---- fits (store_fit.c) ------------------------------------------- */

/* One candidate of `crsim fit` (docs/fit.md): the experiment that
 * evaluated it and its summary.  Strings are copied by SQLite. */
typedef struct exp_store_fit_candidate {
    int64_t fit_id;           /* the fit invocation (exp_store_fit_next_id) */
    int64_t experiment_id;    /* its experiment (one per candidate) */
    int64_t seq;              /* evaluation order within the fit, from 0 */
    const char *alternative;  /* structural alternative's name */
    const char *stage;        /* "coarse" or "refine" */
    const char *overrides;    /* the candidate's overrides, "; "-joined */
    double objective;         /* sum of squared residuals */
    double max_abs_residual;  /* largest |residual| */
    bool identified;          /* every |residual| <= 1 */
    const char *targets_path; /* the targets file as given */
} exp_store_fit_candidate;

/* One residual of a candidate: (sim - target) / tol of one metric. */
typedef struct exp_store_fit_residual {
    const char *policy;
    const char *metric;       /* "hit", "ttft_p99", "e2e_p99", "capacity_ttft_p99", ... */
    double at;                /* load, requests/s (capacity: the SLO threshold, s) */
    double target, tol;       /* observed value and tolerance, its unit */
    double sim;               /* simulated value (NAN/Inf stored as NULL/Inf) */
    double residual;          /* (sim - target) / tol, or EXP_FIT_RESIDUAL_NONFINITE */
} exp_store_fit_residual;

/* The next unused fit_id (1 + the largest stored, 1 for none) into *id.
 * Returns SIM_OK or SIM_EDB. */
int exp_store_fit_next_id(exp_store *s, int64_t *id);

/* Store a candidate and its `n` residuals in one transaction; its row id
 * into *cand_id (may be NULL).  Returns SIM_OK or SIM_EDB (then nothing
 * is stored). */
int exp_store_fit_add(exp_store *s, const exp_store_fit_candidate *c,
                      const exp_store_fit_residual *r, size_t n, int64_t *cand_id);

/* Mark candidate `cand_id` as the best of its fit (best = 1).  Returns
 * SIM_OK or SIM_EDB. */
int exp_store_fit_mark_best(exp_store *s, int64_t cand_id);

/* ---- merging shards (store.c) -------------------------------------- */

/* The latest experiment of an attached shard database. */
typedef struct exp_store_shard {
    const char *path;         /* as given; not owned */
    int64_t id;               /* its experiment id in the shard */
    char config_hash[17];     /* hex XXH3-64 of its config text */
    int64_t n_runs_planned;
    bool complete;            /* status 'complete' */
} exp_store_shard;

/* Attach the shard database at `path` to the writable store `s` and read
 * its latest experiment into *out.  Returns SIM_OK (detach with
 * exp_store_shard_detach); SIM_EINVAL when it is not a crsim result
 * database or holds no experiment (then it is detached again); SIM_EDB
 * when it cannot be attached.  One shard at a time. */
int exp_store_shard_attach(exp_store *s, const char *path, exp_store_shard *out);

/* Add a new experiments row to `s` that copies the attached shard's
 * experiment, unsharded, status 'running', no finish time; its id into
 * *exp_id.  Returns SIM_OK or SIM_EDB. */
int exp_store_shard_adopt(exp_store *s, const exp_store_shard *sh, int64_t *exp_id);

/* Copy every run of the attached shard's experiment (with its metrics,
 * destination, router-interval, plan-key and timeline rows) into
 * experiment `exp_id` of `s`, in run-index order, in one transaction.
 * Returns SIM_OK; SIM_EINVAL when a run index of the shard is already
 * present in `exp_id` (nothing copied); SIM_EDB. */
int exp_store_shard_copy(exp_store *s, const exp_store_shard *sh, int64_t exp_id);

/* The first run of the attached shard whose input-file manifest
 * (runs.inputs) differs from that of a run of the same sweep point already
 * in experiment `exp_id`: its point into *point and the two manifests into
 * *was (in exp_id) and *now (in the shard), malloc'd, the caller frees;
 * *was and *now NULL when every point agrees.  Returns SIM_OK or SIM_EDB. */
int exp_store_shard_inputs(exp_store *s, const exp_store_shard *sh, int64_t exp_id,
                           int64_t *point, char **was, char **now);

/* Detach the shard database.  Cannot fail (a detach error is ignored). */
void exp_store_shard_detach(exp_store *s);

/* The number of distinct run indexes stored for experiment `exp_id` into
 * *n.  Returns SIM_OK or SIM_EDB. */
int exp_store_count_run_indexes(exp_store *s, int64_t exp_id, int64_t *n);

/* The regime statement's reads (sim/exp/store_regime.c, docs/report.md
 * "Which regime limits capacity").  Whether experiment `exp_id` has any
 * per-request records into *any (false, not an error, for a database
 * without a requests table).  Returns SIM_OK or SIM_EDB. */
int exp_store_has_requests(exp_store *s, int64_t exp_id, bool *any);

/* The complete runs of (exp_id, point, policy, rate_rps, in requests/s)
 * that carry per-request records, in seed order: their ids into *run_id
 * and their served-work imbalance (max/mean, NAN when not stored) into
 * *imbalance, *n of each (malloc'd, the caller frees both).  Returns
 * SIM_OK or SIM_EDB (then both NULL and *n 0). */
int exp_store_request_runs(exp_store *s, int64_t exp_id, int64_t point, const char *policy,
                           double rate_rps, int64_t **run_id, double **imbalance, size_t *n);

/* The measured requests of run `run_id` (too-long ones excluded), in id
 * order: prompt tokens, uncached tokens (prompt - prefix hit) and TTFT in s
 * (+Inf without a first token), *n of each (malloc'd, the caller frees
 * all three).  Returns SIM_OK or SIM_EDB (then NULL and *n 0). */
int exp_store_request_sizes(exp_store *s, int64_t run_id, double **prompt, double **uncached,
                            double **ttft, size_t *n);

/* Copy the database at `path` into the new file `dest` (which must not
 * exist or be empty), as one consistent snapshot (SQLite VACUUM INTO).
 * Returns SIM_OK or SIM_EDB. */
int exp_store_copy_to(const char *path, const char *dest);

#endif
