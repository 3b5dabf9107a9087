/*
 * Quantiles with +inf support (an unfinished request is an SLO violation
 * of unbounded latency, so it must push percentiles up, never vanish).
 */
#include "metrics.h"

#include <gsl/gsl_sort.h>
#include <math.h>

void sim_quantiles(double *v, size_t n, const double *q, size_t nq, double *out)
{
    if (n == 0) {
        for (size_t i = 0; i < nq; i++)
            out[i] = NAN;
        return;
    }
    gsl_sort(v, 1, n);
    for (size_t i = 0; i < nq; i++) {
        double pos = q[i] * (double)(n - 1);
        size_t lo = (size_t)floor(pos);
        double frac = pos - (double)lo;
        if (lo + 1 >= n || frac == 0.0)
            out[i] = v[lo < n ? lo : n - 1];
        else if (isinf(v[lo + 1]))
            out[i] = INFINITY;
        else
            out[i] = v[lo] + frac * (v[lo + 1] - v[lo]);
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
