/*
 * Quantile tests: hand-computed type-7 quantiles, +Inf (unfinished
 * requests) pushing tails to +Inf, empty input, and agreement with a
 * sort-based reference on random data (selection must be exact).
 */
#include <gsl/gsl_sort.h>
#include <stdlib.h>

#include "sim/core/metrics.h"
#include "check.h"

int main(void)
{
    const double qs[3] = {0.5, 0.9, 0.99};
    double out[3];
    /* 1..10: positions q*(n-1) = 4.5, 8.1, 8.91 -> 5.5, 9.1, 9.91. */
    double v[10] = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
    sim_quantiles(v, 10, qs, 3, out);
    CHECK_NEAR(out[0], 5.5, 1e-12);
    CHECK_NEAR(out[1], 9.1, 1e-12);
    CHECK_NEAR(out[2], 9.91, 1e-12);
    /* One unfinished request among 10: p50 finite, p99 and p90 infinite
     * (p90 interpolates between 9 and +Inf). */
    double w[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, INFINITY};
    sim_quantiles(w, 10, qs, 3, out);
    CHECK_NEAR(out[0], 5.5, 1e-12);
    CHECK(isinf(out[1]) && isinf(out[2]));
    double one[1] = {4.25};
    sim_quantiles(one, 1, qs, 3, out);
    CHECK(out[0] == 4.25 && out[2] == 4.25);
    sim_quantiles(one, 0, qs, 3, out);
    CHECK(isnan(out[0]) && isnan(out[2]));
    /* Random data vs a full sort. */
    enum { N = 100001 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t x = 9;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = b[i] = (double)(x >> 11) / 9007199254740992.0;
    }
    gsl_sort(b, 1, N);
    const double q4[4] = {0.0, 0.5, 0.999, 1.0};
    double o4[4];
    sim_quantiles(a, N, q4, 4, o4);
    for (int i = 0; i < 4; i++) {
        double pos = q4[i] * (N - 1);
        size_t lo = (size_t)pos;
        double frac = pos - (double)lo, want = lo + 1 < N ? b[lo] + frac * (b[lo + 1] - b[lo]) : b[lo];
        CHECK(o4[i] == want);
    }
    free(a);
    free(b);
    CHECK_NEAR(sim_finite_mean(w, 10), 5.0, 1e-12);
    puts("metrics: ok");
    return 0;
}
