/*
 * Serving metrics (models/latency.h) on hand-made records and steps:
 * means and type-7 percentiles against numpy's values, unfinished
 * requests as +Inf, TPOT only over requests with more than one output
 * token, goodput per request on both bounds (TPOT 0 for one token, as
 * vLLM), a subset chosen by the keep function, and the ITL of pooled
 * step durations weighted by their decode tokens, with its time window.
 */
#include <math.h>
#include <stdlib.h>

#include "models/cluster.h"
#include "models/latency.h"
#include "check.h"

static bool even(const cluster_rec *r, void *ctx)
{
    (void)ctx;
    return ((uint64_t)r->arrival_s) % 2 == 0;
}

static void test_requests(void)
{
    /* TTFT 1, 2, 3, unfinished; E2E 5, 4, 13, unfinished; outputs 5, 1, 11, 3. */
    const cluster_rec rec[4] = {
        {.arrival_s = 0, .ttft_s = 1, .e2e_s = 5, .output_tokens = 5},
        {.arrival_s = 1, .ttft_s = 2, .e2e_s = 4, .output_tokens = 1},
        {.arrival_s = 2, .ttft_s = 3, .e2e_s = 13, .output_tokens = 11},
        {.arrival_s = 3, .ttft_s = -1, .e2e_s = -1, .output_tokens = 3},
    };
    latency_stats s;
    latency_requests(rec, 4, NULL, NULL, 10, NULL, &s);
    CHECK_INT_EQ(s.n, 4);
    CHECK_INT_EQ(s.completed, 3);
    CHECK_INT_EQ(s.output_tokens, 17);
    CHECK_NEAR(s.ttft_mean, 2, 1e-12);      /* finite ones */
    CHECK_NEAR(s.ttft_p50, 2.5, 1e-12);     /* numpy: percentile([1,2,3,inf], 50) */
    CHECK(isinf(s.ttft_p99));               /* touches the unfinished one */
    CHECK_NEAR(s.e2e_mean, 22.0 / 3, 1e-12);
    CHECK_NEAR(s.e2e_p50, 9, 1e-12);        /* sorted 4 5 13 inf */
    /* TPOT: (5-1)/4 = 1, (13-3)/10 = 1, unfinished inf; the one-token
     * request has none. */
    CHECK_NEAR(s.tpot_mean, 1, 1e-12);
    CHECK_NEAR(s.tpot_p50, 1, 1e-12);
    CHECK(isinf(s.tpot_p99));
    CHECK_NEAR(s.request_rps, 0.3, 1e-12);
    CHECK_NEAR(s.output_tps, 1.7, 1e-12);
    CHECK(isnan(s.goodput_rps) && s.good == 0);
    CHECK(isnan(s.itl_mean));
    /* Goodput: TTFT <= 2 and TPOT <= 1: the first two (the second has one
     * token: TPOT 0); TTFT <= 2.5 alone: the same two; TPOT <= 0.5 alone:
     * only the one-token request. */
    latency_requests(rec, 4, NULL, NULL, 10, &(latency_slo){2, 1}, &s);
    CHECK_INT_EQ(s.good, 2);
    CHECK_NEAR(s.goodput_rps, 0.2, 1e-12);
    latency_requests(rec, 4, NULL, NULL, 10, &(latency_slo){.ttft_s = 2.5}, &s);
    CHECK_INT_EQ(s.good, 2);
    latency_requests(rec, 4, NULL, NULL, 10, &(latency_slo){.tpot_s = 0.5}, &s);
    CHECK_INT_EQ(s.good, 1);
    /* A subset: arrivals 0 and 2. */
    latency_requests(rec, 4, even, NULL, 2, NULL, &s);
    CHECK_INT_EQ(s.n, 2);
    CHECK_NEAR(s.ttft_p50, 2, 1e-12);
    CHECK_NEAR(s.request_rps, 1, 1e-12);
    /* Nothing: NaN, no span: NaN rates. */
    latency_requests(rec, 0, NULL, NULL, 0, NULL, &s);
    CHECK(s.n == 0 && isnan(s.ttft_p50) && isnan(s.ttft_mean) && isnan(s.request_rps));
}

static void test_itl(void)
{
    /* Pooled gaps {1, 2, 2, 4} (numpy: mean 2.25, p50 2, p90 3.4, p99
     * 3.94), split over two engines; a step outside [0, 10) is left out. */
    const engine_itl_step a[2] = {{1, 1, 1}, {5, 4, 1}};
    const engine_itl_step b[2] = {{3, 2, 2}, {10, 100, 7}};
    const engine_itl_step *steps[2] = {a, b};
    const size_t n[2] = {2, 2};
    latency_stats s = {0};
    latency_itl(steps, n, 2, 0, 10, &s);
    CHECK_INT_EQ(s.itl_gaps, 4);
    CHECK_NEAR(s.itl_mean, 2.25, 1e-12);
    CHECK_NEAR(s.itl_p50, 2, 1e-12);
    CHECK_NEAR(s.itl_p90, 3.4, 1e-12);
    CHECK_NEAR(s.itl_p99, 3.94, 1e-12);
    /* One gap: every percentile is it. */
    latency_itl(steps, n, 1, 0, 2, &s);
    CHECK(s.itl_gaps == 1 && s.itl_p50 == 1 && s.itl_p99 == 1);
    /* None in the window. */
    latency_itl(steps, n, 2, 20, 30, &s);
    CHECK(s.itl_gaps == 0 && isnan(s.itl_mean) && isnan(s.itl_p99));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The weighted selection against the expanded, sorted multiset: 2000
 * steps with many equal durations (ties) and weights 1..5. */
static void test_itl_random(void)
{
    enum { S = 2000 };
    static engine_itl_step st[S];
    static double all[5 * S];
    size_t n_all = 0;
    uint64_t x = 12345;
    for (int i = 0; i < S; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const double dur = 0.001 * (double)(1 + (x >> 40) % 300); /* ties */
        const uint64_t w = 1 + (x >> 20) % 5;
        st[i] = (engine_itl_step){(double)i, dur, w};
        for (uint64_t k = 0; k < w; k++)
            all[n_all++] = dur;
    }
    qsort(all, n_all, sizeof *all, cmp_double);
    const engine_itl_step *steps[1] = {st};
    const size_t n[1] = {S};
    latency_stats s = {0};
    latency_itl(steps, n, 1, 0, INFINITY, &s);
    CHECK_INT_EQ(s.itl_gaps, n_all);
    const double qs[3] = {0.5, 0.9, 0.99};
    const double got[3] = {s.itl_p50, s.itl_p90, s.itl_p99};
    for (int k = 0; k < 3; k++) {
        const double h = qs[k] * (double)(n_all - 1);
        const size_t lo = (size_t)floor(h);
        const double want = all[lo] + (h - (double)lo) * (all[lo + 1 < n_all ? lo + 1 : lo] -
                                                          all[lo]);
        CHECK(got[k] == want);
    }
}

int main(void)
{
    test_requests();
    test_itl();
    test_itl_random();
    puts("latency: ok");
    return 0;
}
