/*
 * The SQLite result store (schema in docs/results-schema.md).
 *
 * One database per experiment config (default results/<name>.db).  Every
 * `crsim run` appends an experiments row (status 'running'), writes each
 * finished run — its runs row, metrics row and one row per destination — in
 * one transaction, and finally marks the experiment 'complete' or
 * 'incomplete'.  Nothing is ever overwritten; an interrupted run leaves the
 * runs stored so far intact.
 */
#ifndef CRSIM_SIM_STORE_H
#define CRSIM_SIM_STORE_H

#include <stdint.h>

#include "models/cluster.h"

/* Version of the schema written by this build (meta.schema_version). */
#define EXP_STORE_SCHEMA_VERSION 3

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
    const char *started_at;   /* ISO-8601 UTC */
    double wall_s;            /* wall-clock seconds of the simulation */
} exp_run_row;

/* Open (creating if needed, with its parent folder) the database at `path`
 * and create the schema if missing.  Returns SIM_OK, SIM_EIO (folder) or
 * SIM_EDB (not a database, schema of another version, locked).  *out is
 * set only on success; close with exp_store_close. */
int exp_store_open(const char *path, exp_store **out);

/* Close the database.  Accepts NULL. */
void exp_store_close(exp_store *s);

/* Insert an experiments row with status 'running'; *id receives its id.
 * Strings are copied by SQLite.  Returns SIM_OK or SIM_EDB. */
int exp_store_begin(exp_store *s, const exp_store_meta *m, int64_t *id);

/* The most recent complete run stored with config hash `hash` (any
 * experiment) into *run_id, or 0 if there is none.  Returns SIM_OK or
 * SIM_EDB. */
int exp_store_find_run(exp_store *s, const char *hash, int64_t *run_id);

/* Store run `from` (its metrics and destination rows) again as a run of
 * experiment `exp_id` with the identity in `row` (resumed_from = from), in
 * one transaction.  Returns SIM_OK or SIM_EDB. */
int exp_store_copy_run(exp_store *s, int64_t exp_id, const exp_run_row *row, int64_t from);

/* Compute and store the SLO capacities of experiment `exp_id` from its runs
 * (sim/capacity.h).  Returns SIM_OK or SIM_EDB. */
int exp_store_capacities(exp_store *s, int64_t exp_id);

/* The value of run_metrics column `column` (a known column name) of run
 * `run_id` into *value (NAN when NULL).  Returns SIM_OK or SIM_EDB. */
int exp_store_run_metric(exp_store *s, int64_t run_id, const char *column, double *value);

/* The underlying connection (for report and merge code).  Owned by `s`. */
struct sqlite3 *exp_store_db(exp_store *s);

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

#endif
