/*
 * Order statistics for run metrics.  Knows nothing about LLMs: it turns
 * arrays of per-request values into percentiles.
 */
#ifndef CRSIM_SIM_METRICS_H
#define CRSIM_SIM_METRICS_H

#include <stddef.h>

/*
 * Quantiles of `v[0..n)` at probabilities `q[0..nq)` (each in [0, 1]),
 * written to `out[0..nq)`.  Reorders `v` in place: each quantile is found
 * by selection (GSL gsl_stats_select, O(n)), not a sort, and is exact (no
 * histogram approximation).  Definition:
 * linear interpolation between order statistics at position q·(n−1)
 * (Hyndman & Fan type 7, as numpy's default and GSL's
 * gsl_stats_quantile_from_sorted_data).  +inf values (unfinished requests)
 * are allowed and sort last; a quantile that touches one is +inf.  With
 * n = 0 every output is NaN.  Cannot fail.
 */
void sim_quantiles(double *v, size_t n, const double *q, size_t nq, double *out);

/* Mean of the finite values of v[0..n); NaN if there are none. */
double sim_finite_mean(const double *v, size_t n);

#endif
