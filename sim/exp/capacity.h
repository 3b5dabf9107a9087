/*
 * SLO capacity with censoring (docs/design.md §10).  For one (sweep point,
 * policy, seed, SLO threshold), the capacity is the highest tested load up
 * to which the SLO holds at every tested load; it is left-censored when
 * the SLO already fails at the lowest load and right-censored when it holds
 * at the highest.  Across seeds only exact (uncensored) capacities are
 * averaged; censored seeds are counted, never averaged as if exact.
 */
#ifndef CRSIM_SIM_CAPACITY_H
#define CRSIM_SIM_CAPACITY_H

#include <stddef.h>
#include <stdint.h>

/* How a capacity is censored (the capacities.censoring column). */
typedef enum exp_censoring {
    EXP_CENS_NONE = 0,  /* exact: the SLO fails at some tested load above it */
    EXP_CENS_LEFT,      /* fails at the lowest load: capacity < lowest_rps */
    EXP_CENS_RIGHT      /* holds at every load: capacity >= highest_rps */
} exp_censoring;

/* The capacity of one (point, policy, seed, threshold).  Loads in
 * requests/s. */
typedef struct exp_capacity {
    double capacity_rps;      /* NAN when left-censored; highest_rps when right */
    exp_censoring censoring;
    double lowest_rps;        /* lowest tested load */
    double highest_rps;       /* highest tested load */
    size_t n_loads;           /* number of tested loads */
} exp_capacity;

/*
 * Capacity from `n` tested loads `loads_rps` (requests/s, any order,
 * finite and > 0, all distinct) and the SLO metric measured at each load
 * `metric_s` (seconds, same order).  The SLO holds at a load when
 * metric <= slo_s; +Inf (unfinished requests) and NaN (undefined, stored
 * as NULL) fail.  The loads are sorted internally (the inputs are not
 * modified).  Returns SIM_OK and fills *out; SIM_EINVAL when n == 0, a
 * load is not finite and > 0, two loads are equal, or slo_s is not finite
 * and > 0 (then *out is unchanged).
 */
int exp_capacity_compute(const double *loads_rps, const double *metric_s, size_t n,
                         double slo_s, exp_capacity *out);

/* Capacities of several seeds of one (point, policy, threshold). */
typedef struct exp_capacity_agg {
    size_t n_seeds;     /* seeds aggregated */
    size_t n_exact;     /* uncensored seeds */
    size_t n_left;      /* left-censored seeds */
    size_t n_right;     /* right-censored seeds */
    double mean_rps;    /* mean over exact seeds; NAN when n_exact == 0 */
    double sd_rps;      /* sample sd (n - 1) over exact seeds; NAN when n_exact < 2 */
    double left_bound;  /* max lowest_rps over left-censored seeds (each capacity is
                           below it); NAN when n_left == 0 */
    double right_bound; /* min highest_rps over right-censored seeds (each capacity is
                           at least it); NAN when n_right == 0 */
} exp_capacity_agg;

/* Aggregate `n` per-seed capacities into *out.  n may be 0 (all counts
 * 0, all values NAN).  Cannot fail. */
void exp_capacity_aggregate(const exp_capacity *caps, size_t n, exp_capacity_agg *out);

/*
 * Format an aggregate for tables, in UTF-8, into buf (size n, always
 * NUL-terminated when n > 0):
 *   "176 ± 11"           all exact (one exact seed: just "176")
 *   "≥ 200 (R 5/5)"      all right-censored
 *   "< 30 (L 5/5)"       all left-censored
 *   "150 ± 10 (R 1/5)"   exact seeds averaged, the censored ones counted
 *   "< 30 / ≥ 200 (L 2/5, R 3/5)"  censored both ways, none exact
 *   "-"                  no seeds
 * Values of 10 and more are rounded to integers, smaller ones keep one or
 * two decimals.  Returns the length the full string needs (as snprintf).
 * Cannot fail.
 */
size_t exp_capacity_format(const exp_capacity_agg *a, char *buf, size_t n);

/*
 * Joint SLO (experiment.joint_slo, docs/report.md "Serving metrics"):
 * every term METRIC<=SECONDS must hold at a load.  The SLO holds exactly
 * when max over the terms of metric / bound <= 1, so its capacity is
 * exp_capacity_compute on that ratio with slo_s = 1 (NaN or +Inf fail).
 * exp_joint_metric_names: the run_metrics columns a term may name
 * (NULL-terminated).
 */
#define EXP_JOINT_METRIC_MAX 32
extern const char *const exp_joint_metric_names[];

/* Parse one term "METRIC<=SECONDS" (spaces allowed around METRIC and
 * SECONDS) into metric (NUL-terminated) and *bound_s (> 0, finite).
 * SIM_OK, or SIM_EINVAL with a message naming the term and the expected
 * form (an unknown metric is named with the list of known ones). */
int exp_joint_parse(const char *term, char metric[EXP_JOINT_METRIC_MAX], double *bound_s);

/* Name of a censoring value as stored ("none", "left", "right").  Cannot
 * fail. */
const char *exp_censoring_name(exp_censoring c);

/* Parse a censoring name; returns SIM_OK or SIM_EINVAL. */
int exp_censoring_parse(const char *name, exp_censoring *out);

/*
 * Parse the experiments.slos text, comma-separated thresholds in seconds
 * ("2,3.5,5"; spaces allowed), into a new array *slos (caller frees) of *n
 * values in the given order.  Returns SIM_OK; SIM_EINVAL when the text is
 * empty, a value is not a finite number > 0, or one repeats (then *slos
 * is NULL).
 */
int exp_capacity_parse_slos(const char *text, double **slos, size_t *n);

/* SIM_OK when `column` is a run_metrics latency column an SLO may apply
 * to (ttft_p50/p90/p99/mean, tpot_p50/p90/p99, e2e_p50/p90/p99); else
 * SIM_EINVAL naming the accepted ones.  Guards the SQL the column name is
 * pasted into. */
int exp_capacity_check_metric(const char *column);

/* One per-seed capacity of an experiment (the result store computes and
 * reads them: sim/exp/store.h). */
typedef struct exp_capacity_row {
    int64_t point;        /* sweep point index */
    char *point_label;    /* owned by the row array */
    char *policy;         /* owned by the row array */
    int64_t seed;
    double slo_s;         /* threshold, seconds */
    exp_capacity cap;
} exp_capacity_row;

/* Free an array of capacity rows (exp_store_capacity_rows,
 * exp_store_read_capacities).  Accepts NULL. */
void exp_capacity_rows_free(exp_capacity_row *rows, size_t n);

#endif
