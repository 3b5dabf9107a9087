/*
 * `crsim regime`: will planned prefix-affinity routing (cacheroute) win,
 * tie or lose against plain load balancing (flat_lb) on this traffic and
 * cluster?  Calibrates q_cap and W, computes the fast hit-rate diagnostic,
 * runs paired simulations over a load grid and several seeds, and prints a
 * verdict with the capacity ratio, hit rates and the deciding condition
 * (docs/regime.md).
 */
#ifndef CRSIM_SIM_REGIME_H
#define CRSIM_SIM_REGIME_H

#include <stdio.h>

#include "sim/exp/cli.h"

/* Verdicts. */
enum exp_verdict { EXP_TIE = 0, EXP_WIN, EXP_LOSE };

/* Capacity of one seed as an interval [lo, hi] (requests/s): exact
 * (lo = hi), left-censored [0, lowest) or right-censored [highest, inf). */
typedef struct exp_cap_interval {
    double lo, hi;
} exp_cap_interval;

/*
 * The verdict from paired per-seed capacities of the candidate (cacheroute)
 * `cand[0..n)` and the baseline (flat_lb) `base[0..n)`: the ratio of the
 * means (censored values counted at their bound) and
 *   win  if ratio > 1 + tie and the candidate's seed range lies above the
 *        baseline's (no overlap),
 *   lose if ratio < 1 − tie and it lies below,
 *   tie  otherwise (within ±tie, or overlapping seed ranges).
 * *ratio receives the ratio, *ratio_lo and *ratio_hi the smallest and largest
 * per-seed ratio bounds (0 or +inf when censoring leaves them open).
 * `tie` is a fraction (0.1 = ±10 %).  Cannot fail (n >= 1).
 */
enum exp_verdict exp_regime_verdict(const exp_cap_interval *cand, const exp_cap_interval *base,
                                    size_t n, double tie, double *ratio, double *ratio_lo,
                                    double *ratio_hi);

/*
 * A grid load `x` (requests/s) rounded to 3 significant digits, as the
 * double that "%.3g" text parses to, so the load printed, passed as
 * experiment.rates and stored are one value (round(x / 10^k) · 10^k is not:
 * 0.0411 became 0.041100000000000005, whose stored runs an exact rate
 * match then missed, printing hit@mid 0.0 %).  x <= 0 or not finite:
 * returned unchanged.  Cannot fail.
 */
double exp_regime_round_load(double x);

/* The verdict's name ("win", "tie", "lose"). */
const char *exp_verdict_name(enum exp_verdict v);

/*
 * crsim regime CONFIG [--rates CSV | --servegen DIR | --trace JSONL] [--iat CSV]
 *   [--prefix-tokens N] [--input-tokens N] [--output-tokens N] [--set K=V]...
 *   [--seeds N] [--slo S] [--tie X] [--jobs N] [--fast] [--db PATH]
 *   [--map "KEY=[v...]" "KEY=[v...]" [--out DIR]]
 * on the arguments parsed by sim/exp/cli.c (CONFIG is a->pos[0]; the
 * options of its "regime" table entry).  Prints to `out`.  Returns SIM_OK
 * or an error code (the message is in sim_errmsg()).
 */
int exp_regime_main(const exp_cli_args *a, FILE *out);

#endif
