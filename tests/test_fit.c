/*
 * Known answers of the smoothed SLO capacity of `crsim fit`
 * (exp_fit_capacity_smooth, docs/fit.md "Smoothing"): the log-linear
 * crossing between the two bracketing loads, its continuity in the metric
 * (the step capacity jumps, the smoothed one moves a little), and the
 * censored ends.  Also the request-size split of `crsim report`'s regime
 * statement (exp__regime_split, docs/report.md "Which regime limits
 * capacity").
 */
#include <math.h>
#include <stdio.h>

#include "sim/exp/fit.h"
#include "sim/exp/report_int.h"
#include "check.h"

static void test_crossing(void)
{
    const double x[] = {10, 20, 40};
    /* Crossing between 20 (p99 1 s) and 40 (p99 4 s) at SLO 2 s: log 2 is
     * half-way between log 1 and log 4, so 30 requests/s. */
    const double m[] = {0.5, 1, 4};
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 3, 2.0), 30.0, 1e-12);
    /* SLO 1 s exactly: holds at 20, crosses at 20. */
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 3, 1.0), 20.0, 1e-12);
    /* Between 10 (0.5 s) and 20 (1 s) at 0.7071 s = sqrt(0.5): 15. */
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 3, sqrt(0.5)), 15.0, 1e-9);
    /* Continuity: the metric at 20 moving across the SLO moves the
     * capacity by little (the step capacity jumps 20 -> 10). */
    const double below[] = {0.5, 1.999, 4}, above[] = {0.5, 2.001, 4};
    double a = exp_fit_capacity_smooth(x, below, 3, 2.0);
    double b = exp_fit_capacity_smooth(x, above, 3, 2.0);
    CHECK(fabs(a - b) < 0.1);
    CHECK(a > 20 && b < 20 && b > 19.9);
    /* A failing load with +Inf (unfinished requests): the midpoint. */
    const double inf[] = {0.5, 1, INFINITY};
    CHECK_NEAR(exp_fit_capacity_smooth(x, inf, 3, 2.0), 30.0, 1e-12);
}

static void test_censored(void)
{
    const double x[] = {10, 20};
    /* Holds at both: extrapolate log p99 1 -> 2 s (per 10 requests/s):
     * 4 s at 30, 2^1.5 s at 25; beyond the cap (2 x 20) the cap. */
    const double m[] = {1, 2};
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 2, 4.0), 30.0, 1e-12);
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 2, 2.8284271247461903), 25.0, 1e-9);
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 2, 100.0), 40.0, 1e-12);
    /* Flat: the cap. */
    const double flat[] = {1, 1};
    CHECK_NEAR(exp_fit_capacity_smooth(x, flat, 2, 4.0), 40.0, 1e-12);
    /* Fails at both: extrapolate down, 1 -> 2 s per 10, SLO 0.5 s at 0. */
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 2, 0.5), 0.0, 1e-12);
    CHECK_NEAR(exp_fit_capacity_smooth(x, m, 2, 0.7071067811865476), 5.0, 1e-9);
    const double bad[] = {INFINITY, INFINITY};
    CHECK_NEAR(exp_fit_capacity_smooth(x, bad, 2, 1.0), 5.0, 1e-12);
    CHECK(isnan(exp_fit_capacity_smooth(x, m, 0, 1.0)));
    CHECK(isnan(exp_fit_capacity_smooth(x, m, 2, 0.0)));
}

/* 200 requests with prompts 1..200 tokens (given in reverse), half of
 * each cached, TTFT prompt / 100 s: the longest 1 % is ceil(2) = the
 * prompts 200 and 199; p99 (type 7) of {1.99, 2.00} is 1.9999, of
 * 0.01..1.98 (198 values) it is position 0.99 * 197 = 195.03 between
 * 1.96 and 1.97: 1.9603.  A request without a first token (+Inf) among
 * the longest makes their p99 +Inf and leaves the rest's unchanged. */
static void test_regime_split(void)
{
    double p[200], u[200], t[200];
    for (int i = 0; i < 200; i++) {
        p[i] = 200 - i;
        u[i] = p[i] / 2;
        t[i] = p[i] / 100;
    }
    exp__regime g;
    CHECK(exp__regime_split(p, u, t, 200, &g) == 0);
    CHECK(g.n_long == 2 && g.n_rest == 198);
    CHECK_NEAR(g.p99_long, 1.9999, 1e-12);
    CHECK_NEAR(g.p99_rest, 1.9603, 1e-12);
    CHECK_NEAR(g.prompt_long, 199.5, 1e-12);
    CHECK_NEAR(g.prompt_rest, 99.5, 1e-12);
    CHECK_NEAR(g.uncached_mean, 50.25, 1e-12);
    t[0] = INFINITY;
    CHECK(exp__regime_split(p, u, t, 200, &g) == 0);
    CHECK(isinf(g.p99_long));
    CHECK_NEAR(g.p99_rest, 1.9603, 1e-12);
    /* too few requests */
    CHECK(exp__regime_split(p, u, t, 1, &g) != 0 && isnan(g.p99_rest));
}

int main(void)
{
    test_crossing();
    test_censored();
    test_regime_split();
    printf("fit: all tests passed\n");
    return 0;
}
