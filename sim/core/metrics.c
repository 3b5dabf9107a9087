/*
 * Quantiles with +inf support (an unfinished request is an SLO violation
 * of unbounded latency, so it must push percentiles up, never vanish).
 */
#include "sim/core/metrics.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>

void sim_quantiles(double *v, size_t n, const double *q, size_t nq, double *out)
{
    if (n == 0) {
        for (size_t i = 0; i < nq; i++)
            out[i] = NAN;
        return;
    }
    /* Selection, not a full sort: after selecting order statistic lo,
     * every later element is >= it, so statistic lo+1 is their minimum.
     * O(n) per quantile, exact. */
    for (size_t i = 0; i < nq; i++) {
        double pos = q[i] * (double)(n - 1);
        size_t lo = (size_t)floor(pos);
        if (lo >= n)
            lo = n - 1;
        double frac = pos - (double)lo;
        double vlo = gsl_stats_select(v, 1, n, lo);
        if (lo + 1 >= n || frac == 0.0) {
            out[i] = vlo;
            continue;
        }
        double vhi = v[lo + 1];
        for (size_t j = lo + 2; j < n; j++)
            if (v[j] < vhi)
                vhi = v[j];
        out[i] = isinf(vhi) ? INFINITY : vlo + frac * (vhi - vlo);
    }
}

double sim_finite_mean(const double *v, size_t n)
{
    double s = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            s += v[i];
            k++;
        }
    return k ? s / (double)k : NAN;
}
