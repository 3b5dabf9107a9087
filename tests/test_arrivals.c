/*
 * Tests of workloads/arrivals.c: Poisson and Gamma gaps hit the target
 * mean rate and CV over 10^6 draws; the circular block bootstrap of the
 * Azure conversation trace keeps the series' mean and (most of) its lag-1
 * autocorrelation; the CSV reader and the parameters reject bad input with
 * file:line messages.  Usage: test_arrivals AZURE_CONV_CSV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "workloads/arrivals.h"
#include "check.h"

#define N_DRAWS 1000000

static void moments(wl_arrivals *a, size_t n, double *mean, double *cv)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        double g = wl_arrivals_next(a);
        CHECK(g >= 0);
        s += g;
        s2 += g * g;
    }
    *mean = s / (double)n;
    double var = s2 / (double)n - *mean * *mean;
    *cv = sqrt(var) / *mean;
}

static void test_renewal(void)
{
    const double rate = 37.5;
    const double cvs[4] = {0.5, 1.0, 1.9, 4.0};
    for (int i = 0; i < 4; i++) {
        gsl_rng *r = sim_rng_create(11, SIM_STREAM_ARRIVALS);
        wl_arrival_params p = {.kind = WL_ARRIVAL_GAMMA, .rate = rate, .cv = cvs[i]};
        wl_arrivals *a;
        CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_OK);
        double m, cv;
        moments(a, N_DRAWS, &m, &cv);
        printf("gamma cv %.1f: rate %.4f (target %.1f), cv %.4f\n", cvs[i], 1 / m, rate, cv);
        CHECK_REL(1.0 / m, rate, 0.03);
        CHECK_REL(cv, cvs[i], 0.03);
        wl_arrivals_destroy(a);
        sim_rng_destroy(r);
    }
    gsl_rng *r = sim_rng_create(12, SIM_STREAM_ARRIVALS);
    wl_arrival_params p = {.kind = WL_ARRIVAL_POISSON, .rate = 4.0};
    wl_arrivals *a;
    CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_OK);
    double m, cv;
    moments(a, N_DRAWS, &m, &cv);
    printf("poisson: rate %.4f (target 4), cv %.4f\n", 1 / m, cv);
    CHECK_REL(1.0 / m, 4.0, 0.03);
    CHECK_REL(cv, 1.0, 0.03);
    wl_arrivals_destroy(a);
    /* Bad parameters. */
    const double bad_cv[3] = {0.0, -1.0, NAN};
    for (int i = 0; i < 3; i++) {
        wl_arrival_params q = {.kind = WL_ARRIVAL_GAMMA, .rate = 1, .cv = bad_cv[i]};
        CHECK_INT_EQ(wl_arrivals_create(&q, r, &a), SIM_EINVAL);
        CHECK(a == NULL);
        CHECK_STR_CONTAINS(sim_errmsg(), "expected a finite CV > 0");
    }
    const double bad_rate[3] = {0.0, -2.0, NAN};
    for (int i = 0; i < 3; i++) {
        wl_arrival_params q = {.kind = WL_ARRIVAL_POISSON, .rate = bad_rate[i]};
        CHECK_INT_EQ(wl_arrivals_create(&q, r, &a), SIM_EINVAL);
        CHECK_STR_CONTAINS(sim_errmsg(), "expected a finite rate > 0");
    }
    enum wl_arrival_kind k;
    CHECK_INT_EQ(wl_arrival_kind_parse("hawkes", &k), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "unknown arrival process 'hawkes'");
    sim_rng_destroy(r);
}

static void test_bootstrap(const char *azure)
{
    wl_iat_series s;
    if (wl_iat_load_csv(azure, "TIMESTAMP", 0, &s)) {
        fprintf(stderr, "%s\n", sim_errmsg());
        exit(1);
    }
    CHECK_INT_EQ(s.n, 19365); /* 19,366 requests */
    const double m0 = wl_series_mean(s.gap_s, s.n);
    const double ac0 = wl_series_autocorr(s.gap_s, s.n, 1);
    double cv0 = 0;
    for (size_t i = 0; i < s.n; i++)
        cv0 += (s.gap_s[i] - m0) * (s.gap_s[i] - m0);
    cv0 = sqrt(cv0 / (double)s.n) / m0;
    /* 3,541.7 s span: first 18:15:46.6805900, last 19:14:08.4025270. */
    CHECK_NEAR(m0 * (double)s.n, 3501.7219370, 1e-6);
    printf("azure: %zu gaps, mean %.6f s, cv %.3f, lag-1 autocorrelation %.4f\n", s.n, m0, cv0,
           ac0);
    /* Bootstrap at the recorded rate: mean and lag-1 autocorrelation. */
    const size_t L = 50, n = 400000;
    gsl_rng *r = sim_rng_create(5, SIM_STREAM_ARRIVALS);
    wl_arrival_params p = {.kind = WL_ARRIVAL_BOOTSTRAP, .rate = 1.0 / m0, .series = &s,
                           .block_len = L};
    wl_arrivals *a;
    CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_OK);
    double *g = malloc(n * sizeof *g);
    for (size_t i = 0; i < n; i++)
        g[i] = wl_arrivals_next(a);
    double m1 = wl_series_mean(g, n), ac1 = wl_series_autocorr(g, n, 1);
    printf("bootstrap L=%zu: mean %.6f s, lag-1 autocorrelation %.4f (expected ~%.4f)\n", L, m1,
           ac1, ac0 * (double)(L - 1) / (double)L);
    CHECK_REL(m1, m0, 0.02);
    CHECK_NEAR(ac1, ac0 * (double)(L - 1) / (double)L, 0.03);
    wl_arrivals_destroy(a);
    /* Rescaled to 10 requests/s: the mean gap is 0.1 s. */
    p.rate = 10;
    CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_OK);
    for (size_t i = 0; i < n; i++)
        g[i] = wl_arrivals_next(a);
    CHECK_REL(wl_series_mean(g, n), 0.1, 0.02);
    wl_arrivals_destroy(a);
    /* Block length 1 is an i.i.d. bootstrap: the correlation vanishes. */
    p.block_len = 1;
    CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_OK);
    for (size_t i = 0; i < n; i++)
        g[i] = wl_arrivals_next(a);
    CHECK_NEAR(wl_series_autocorr(g, n, 1), 0.0, 0.01);
    wl_arrivals_destroy(a);
    p.block_len = 0;
    CHECK_INT_EQ(wl_arrivals_create(&p, r, &a), SIM_EINVAL);
    free(g);
    sim_rng_destroy(r);
    wl_iat_series_fini(&s);
}

static char tmpdir[] = "/tmp/crsim_arrivals_XXXXXX";

static void expect_bad(const char *name, const char *text, const char *col, int as_gaps,
                       const char *where, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    wl_iat_series s;
    CHECK_INT_EQ(wl_iat_load_csv(path, col, as_gaps, &s), SIM_EINVAL);
    char full[600];
    snprintf(full, sizeof full, "%s%s", path, where);
    CHECK_STR_CONTAINS(sim_errmsg(), full);
    CHECK_STR_CONTAINS(sim_errmsg(), what);
    CHECK_STR_CONTAINS(sim_errmsg(), "expected");
    CHECK(s.gap_s == NULL);
    unlink(path);
}

static void test_csv(void)
{
    CHECK(mkdtemp(tmpdir) != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/ok.csv", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("a,t\nx,2023-12-31 23:59:59.9\ny,2024-01-01 00:00:00.0000001\nz,2024-01-01 00:00:01\n",
          f);
    fclose(f);
    wl_iat_series s;
    CHECK_INT_EQ(wl_iat_load_csv(path, "t", 0, &s), SIM_OK);
    CHECK_INT_EQ(s.n, 2);
    CHECK_NEAR(s.gap_s[0], 0.1000001, 1e-12); /* across a year boundary */
    CHECK_NEAR(s.gap_s[1], 0.9999999, 1e-12);
    wl_iat_series_fini(&s);
    unlink(path);
    expect_bad("empty.csv", "", "TIMESTAMP", 0, ":", "empty file");
    expect_bad("nocol.csv", "A,B\n1,2\n", "TIMESTAMP", 0, ":1:", "no column 'TIMESTAMP'");
    expect_bad("short.csv", "A,T\n1,2\n3\n", "T", 0, ":3:", "no field");
    expect_bad("word.csv", "T\n1\n2\nsoon\n", "T", 0, ":4:", "not a time");
    expect_bad("back.csv", "T\n1\n3\n2\n", "T", 0, ":4:", "earlier than the previous");
    expect_bad("neg.csv", "G\n1\n-1\n", "G", 1, ":3:", "-1");
    expect_bad("nan.csv", "G\n1\nnan\n", "G", 1, ":3:", "nan");
    expect_bad("one.csv", "T\n1\n2\n", "T", 0, ":", "1 inter-arrival gap");
    expect_bad("baddate.csv", "T\n2023-13-01 00:00:00\n", "T", 0, ":2:", "not a time");
    /* Issue 17 item 1.  Impossible days are named on their own line
     * (before: accepted, and the next line blamed as "earlier"). */
    expect_bad("feb30.csv", "T\n2023-02-28 00:00:00\n2023-02-30 00:00:00\n2023-03-01 00:00:01\n",
               "T", 0, ":3:", "'2023-02-30 00:00:00' in column 'T' names a day that does not exist");
    expect_bad("apr31.csv", "T\n2023-04-31 00:00:00\n", "T", 0, ":2:", "does not exist");
    expect_bad("feb29.csv", "T\n2100-02-29 00:00:00\n", "T", 0, ":2:", "does not exist");
    /* A number then a date-time is "mixes" on the date's line, naming the
     * number's (before: INT64_MIN was subtracted: "earlier than"). */
    expect_bad("mix.csv", "TIMESTAMP\n202\n2023-11-16 18:15:54.9320210\n2023-11-16 18:15:55\n",
               "TIMESTAMP", 0, ":3:", "mixes numeric and date-time times (line 2 has a number)");
    expect_bad("mix2.csv", "T\n2023-11-16 18:15:54\n5\n6\n", "T", 0, ":3:",
               "(line 2 has a date-time)");
    expect_bad("hex.csv", "G\n1\n0x10\n", "G", 1, ":3:", "'0x10' in column 'G' is not a "
               "decimal number");
    /* Leap days exist in leap years; a BOM before the header is dropped. */
    snprintf(path, sizeof path, "%s/leap.csv", tmpdir);
    f = fopen(path, "w");
    fputs("\xef\xbb\xbf" "T\n2024-02-29 23:59:59\n2000-02-29 00:00:00\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_iat_load_csv(path, "T", 0, &s), SIM_EINVAL); /* 2000 < 2024: earlier */
    CHECK_STR_CONTAINS(sim_errmsg(), "leap.csv:3: time '2000-02-29 00:00:00' is earlier");
    f = fopen(path, "w");
    fputs("\xef\xbb\xbf" "T\n2024-02-28 23:59:59\n2024-02-29 00:00:00\n2024-03-01 00:00:00\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_iat_load_csv(path, "T", 0, &s), SIM_OK);
    CHECK_INT_EQ(s.n, 2);
    CHECK_NEAR(s.gap_s[0], 1.0, 0);
    CHECK_NEAR(s.gap_s[1], 86400.0, 0);
    wl_iat_series_fini(&s);
    /* Years far from 1970 (before: signed overflow multiplying seconds by
     * 1e9 beyond ~2262 or before ~1678; UBSan aborts there): exact 1 s
     * gaps in 9999 and 0001, and the 9998 years between 0001 and 9999 in
     * double seconds.  Days from 0001-01-01 to 9999-01-01: 3651694 (Python
     * date(9999,1,1).toordinal() - date(1,1,1).toordinal()). */
    f = fopen(path, "w");
    fputs("T\n9999-01-01 00:00:00\n9999-01-01 00:00:01\n9999-12-31 23:59:60.5\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_iat_load_csv(path, "T", 0, &s), SIM_OK);
    CHECK_NEAR(s.gap_s[0], 1.0, 0);
    CHECK_NEAR(s.gap_s[1], 364.0 * 86400 + 86399.5, 1e-8); /* via integer ns */
    wl_iat_series_fini(&s);
    f = fopen(path, "w");
    fputs("T\n0001-01-01 00:00:00\n0001-01-01 00:00:01.25\n9999-01-01 00:00:01.25\n", f);
    fclose(f);
    CHECK_INT_EQ(wl_iat_load_csv(path, "T", 0, &s), SIM_OK);
    CHECK_NEAR(s.gap_s[0], 1.25, 0);
    CHECK_NEAR(s.gap_s[1], 3651694.0 * 86400, 0);
    wl_iat_series_fini(&s);
    unlink(path);
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s AZURE_CONV_CSV\n", argv[0]);
        return 99;
    }
    test_renewal();
    test_csv();
    test_bootstrap(argv[1]);
    printf("arrivals: all tests passed\n");
    return 0;
}
