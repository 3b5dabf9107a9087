/*
 * `crsim fit` (docs/fit.md): identify the free parameters of a config from
 * observed metrics.  A targets file names, per policy, observed KV hit
 * rates, p99 TTFT / E2E at loads (one load or a p99-vs-load curve) and SLO
 * capacities, each with a tolerance; the free parameters (config keys with
 * continuous or discrete ranges); and structural alternatives (named sets
 * of overrides: where the request-size tail lives).  The search runs a
 * Latin-hypercube design crossed with the discrete axes, then GSL
 * Nelder-Mead (nmsimplex2) per structural alternative on the
 * tolerance-scaled residual, every candidate one experiment of `crsim run`
 * in the fit's database with the same seeds (common random numbers).
 */
#ifndef CRSIM_SIM_EXP_FIT_H
#define CRSIM_SIM_EXP_FIT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/exp/cli.h"

/* Residual given to a simulated metric that is not finite (+Inf p99 from
 * unfinished requests, NaN from a run with no served request): a large
 * constant, in tolerance units, so such a candidate is never identified
 * and the objective stays finite for Nelder-Mead. */
#define EXP_FIT_RESIDUAL_NONFINITE 1000.0

/* Added to the objective of a screening candidate whose workload targets
 * missed by more than screen.max_residual (docs/fit.md, "Screening"): it
 * has no router residuals, and must rank below every candidate that ran. */
#define EXP_FIT_SCREENED_PENALTY 1e9

/* The outcome of a fit per structural alternative (exp_fit_opts.result). */
typedef struct exp_fit_alt_result {
    char *name;            /* the alternative ("base" without alternatives) */
    size_t n_cand;         /* candidates evaluated under it */
    size_t n_identified;   /* of which every |residual| <= 1 */
    bool identified;       /* its best point is within tolerance */
    double best_obj;       /* its best point's objective (sum of squared residuals) */
    double best_maxabs;    /* ... and largest |residual| */
    char *point;           /* the best point's free-parameter overrides, "; "-joined */
    char **sets;           /* the overrides that make the best point's config from the
                              base config (after the fit's --set): the targets' `set`,
                              the alternative's, the free parameters', in order */
    size_t n_sets;
    char *fitted_path;     /* the fitted config written for it */
    struct exp_store_fit_residual *res; /* best point's residuals (names static) */
    size_t n_res;
} exp_fit_alt_result;

typedef struct exp_fit_result {
    exp_fit_alt_result *alt;
    size_t n_alt;
    size_t best;           /* the alternative of the overall best point */
} exp_fit_result;

/* Free what exp_fit_run put into *r (r may be NULL).  Cannot fail. */
void exp_fit_result_fini(exp_fit_result *r);

/* Options of `crsim fit`. */
typedef struct exp_fit_opts {
    const char *config_path;   /* base config (as given) */
    const char *const *sets;   /* --set overrides of the base, in order */
    size_t n_set;
    const char *targets_path;  /* the targets file */
    unsigned jobs;             /* parallel runs per candidate (>= 1) */
    const char *db;            /* fit database, or NULL: results/<name>-fit.db */
    int64_t budget;            /* coarse design size, or 0: the targets' budget */
    const char *out_path;      /* fitted config, or NULL: the db path with
                                  ".db" replaced by "-fitted.yaml" */
    bool quiet;                /* no progress on stderr */
    const volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM, or NULL */
    FILE *progress;            /* progress lines, or NULL: stderr */
    exp_fit_result *result;    /* NULL, or receives the outcome per alternative (caller
                                  frees with exp_fit_result_fini) */
} exp_fit_opts;

/*
 * Smoothed SLO capacity, requests/s, from `n` loads `loads` (ascending,
 * > 0, requests/s) and the SLO metric measured at each (`metric`, s; +Inf
 * or NaN fail).  With j the first load where the SLO fails (metric >
 * slo_s), the capacity is the load where log(metric) crosses log(slo_s),
 * linearly interpolated between loads j-1 and j (so it moves continuously
 * with the metric, unlike the step capacity of sim/exp/capacity.h, which
 * is loads[j-1]); when metric[j] is not finite, the midpoint of the two.
 * Censored ends: holding at every load extrapolates the last two points'
 * log-metric line (at most 2 loads[n-1]; exactly that when it does not
 * rise); failing at the lowest load extrapolates the first two (at least
 * 0; loads[0] / 2 when they do not rise or are not finite).  n == 1
 * gives 2 loads[0] or loads[0] / 2.  Returns NAN when n == 0 or slo_s is
 * not > 0.  Cannot fail otherwise.
 */
double exp_fit_capacity_smooth(const double *loads, const double *metric, size_t n,
                               double slo_s);

/*
 * Run the fit: load and check the targets (every error before any run:
 * SIM_EINVAL naming "TARGETS:LINE"), evaluate the coarse design and the
 * refinement, store every candidate (one experiment each) with its
 * residuals in the fit database, print the residual tables, the best
 * point and the identified set per structural alternative to `out`,
 * progress and ETA to stderr, and write the fitted config.  Returns
 * SIM_OK; SIM_EINVAL/SIM_EIO for bad input; SIM_EDB; SIM_EINTR.
 */
int exp_fit_run(const exp_fit_opts *o, FILE *out);

/*
 * Load and check the targets file o->targets_path against the base config
 * (o->config_path with o->sets), exactly as exp_fit_run does before its
 * first run, then stop: nothing is run or written.  Returns SIM_OK, or
 * SIM_EINVAL/SIM_EIO naming "TARGETS:LINE" (or the base config).  Used by
 * the fuzz target tests/fuzz/fuzz_fittargets.c.
 */
int exp_fit_check(const exp_fit_opts *o);

/*
 * The policies a targets file has a `targets.POLICY` section for, in
 * registry order, as the registry's static names (at most `max` into
 * pol[], their count in *n).  Only reads the file: a bad file fails here
 * with its parse error (SIM_EINVAL/SIM_EIO naming it) and every other
 * check is exp_fit_run's.
 */
int exp_fit_target_policies(const char *targets_path, const char **pol, size_t max,
                            size_t *n);

/* `crsim fit`: the CLI glue (sim/exp/cli.c's table entry).  Returns the
 * status code of exp_fit_run. */
int exp_fit_main(const exp_cli_args *a, const volatile sig_atomic_t *stop);

#endif
