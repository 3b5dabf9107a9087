/*
 * Tests of workloads/keyrates.c: Gini and top shares on hand-computable
 * vectors, the share cap, active set and whales, the Brent fit, the paper
 * preset's statistics (the acceptance numbers of issue 4) and bad key-rate
 * files, and the process-wide memo (a population built again is bit for
 * bit the one built fresh, in one thread or two; every input is in the
 * key).  Usage: test_keyrates SPEC_DIR (workloads/specs).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "workloads/keyrates.h"
#include "workloads/synth.h"
#include "check.h"

static const char *spec_dir;

static void test_hand_vectors(void)
{
    wl_keystats st;
    /* Equal keys: Gini 0, each top-p share = ceil(p·n)/n. */
    double eq[100];
    for (int i = 0; i < 100; i++)
        eq[i] = 2.5;
    CHECK_INT_EQ(wl_rates_describe(eq, 100, &st), SIM_OK);
    CHECK_NEAR(st.gini, 0.0, 1e-15);
    CHECK_NEAR(st.top1, 0.01, 1e-15);
    CHECK_NEAR(st.top4, 0.04, 1e-15);
    CHECK_NEAR(st.top10, 0.10, 1e-15);
    CHECK_NEAR(st.max_share, 0.01, 1e-15);
    CHECK_NEAR(st.total, 250.0, 1e-12);
    /* Equal rates whose Gini sum cancels to a negative rounding error
     * (about −2e-17 for five keys of 0.1; a fuzz finding): exactly 0. */
    for (size_t n = 1; n <= 64; n++) {
        double tenth[64];
        for (size_t i = 0; i < n; i++)
            tenth[i] = 0.1;
        CHECK_INT_EQ(wl_rates_describe(tenth, n, &st), SIM_OK);
        CHECK(st.gini >= 0 && st.gini <= 1.0 - 1.0 / (double)n);
    }
    double five[5] = {0.1, 0.1, 0.1, 0.1, 0.1};
    CHECK_INT_EQ(wl_rates_describe(five, 5, &st), SIM_OK);
    CHECK(st.gini == 0);
    /* One key holds everything among n = 4: G = 1 − 1/n = 0.75. */
    double one[4] = {0, 0, 7, 0};
    CHECK_INT_EQ(wl_rates_describe(one, 4, &st), SIM_OK);
    CHECK_NEAR(st.gini, 0.75, 1e-15);
    CHECK_NEAR(st.max_share, 1.0, 1e-15);
    /* {1,2,3,4}: mean abs difference = (1+2+3+1+2+1)·2/16 = 1.25, mean 2.5,
     * G = 1.25 / (2·2.5) = 0.25.  Top 1 % of 4 keys = 1 key = 4/10. */
    double v[4] = {3, 1, 4, 2};
    CHECK_INT_EQ(wl_rates_describe(v, 4, &st), SIM_OK);
    CHECK_NEAR(st.gini, 0.25, 1e-15);
    CHECK_NEAR(st.top1, 0.4, 1e-15);
    CHECK_NEAR(st.top10, 0.4, 1e-15);
    /* 200 keys: 2 of rate 49, 198 of rate 1 → total 296; top 1 % (2 keys)
     * = 98/296; top 4 % (8 keys) = 104/296; top 10 % (20 keys) = 116/296. */
    double w[200];
    for (int i = 0; i < 200; i++)
        w[i] = i < 2 ? 49 : 1;
    CHECK_INT_EQ(wl_rates_describe(w, 200, &st), SIM_OK);
    CHECK_NEAR(st.top1, 98.0 / 296, 1e-15);
    CHECK_NEAR(st.top4, 104.0 / 296, 1e-15);
    CHECK_NEAR(st.top10, 116.0 / 296, 1e-15);
    /* Gini by the definition: Σ_i Σ_j |x_i − x_j| / (2 n² mean):
     * pairs (49,1): 2·198·2 ordered pairs × 48 = 38016; n² mean = 200·296. */
    CHECK_NEAR(st.gini, 38016.0 / (2.0 * 200 * 296), 1e-14);
    /* Rates near DBL_MAX: the Gini numerator (3 x 1e308) overflows though
     * the sum does not; computed on exactly rescaled rates (the fuzz
     * finding keyrates-near-max).  Here G = (3e308 - 3 - 2.5 + 2.5) /
     * (4 (1e308 + 6)) = 0.75 in double precision. */
    double big[4] = {2.5, 1, 2.5, 1e308};
    CHECK_INT_EQ(wl_rates_describe(big, 4, &st), SIM_OK);
    CHECK_NEAR(st.gini, 0.75, 1e-15);
    CHECK(st.total == 1e308 + 6.0);
    CHECK_NEAR(st.max_share, 1.0, 1e-15);
    double over[2] = {1e308, 1e308};
    CHECK_INT_EQ(wl_rates_describe(over, 2, &st), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "key rates sum to inf (the sum overflows)");
    /* Bad vectors. */
    double bad[2] = {1, -1};
    CHECK_INT_EQ(wl_rates_describe(bad, 2, &st), SIM_EINVAL);
    double zero[2] = {0, 0};
    CHECK_INT_EQ(wl_rates_describe(zero, 2, &st), SIM_EINVAL);
    CHECK_INT_EQ(wl_rates_describe(eq, 0, &st), SIM_EINVAL);
}

static void test_cap_active_whales(void)
{
    /* Cap: {10, 5, 3, 1, 1} (T = 20) at cap 0.3 → key 0 capped at 6; the
     * rest (10) are scaled to fill 14: 7, 4.2, 1.4, 1.4 — 7 > 6, so cap two:
     * 6, 6, rest (5) scaled to 8: 4.8, 1.6, 1.6. */
    wl_keyrates kr = {0};
    CHECK_INT_EQ(wl_keyrates_zipf(5, 0, 0, 0, &kr), SIM_OK); /* placeholder to allocate */
    double r[5] = {10, 5, 3, 1, 1};
    memcpy(kr.rate, r, sizeof r);
    CHECK_INT_EQ(wl_keyrates_cap(&kr, 0.3), SIM_OK);
    CHECK_NEAR(kr.rate[0], 6, 1e-12);
    CHECK_NEAR(kr.rate[1], 6, 1e-12);
    CHECK_NEAR(kr.rate[2], 4.8, 1e-12);
    CHECK_NEAR(kr.rate[3], 1.6, 1e-12);
    CHECK_NEAR(wl_keyrates_total(&kr), 20, 1e-12);
    CHECK_INT_EQ(wl_keyrates_cap(&kr, 0.1), SIM_EINVAL); /* 5 keys × 0.1 < 1 */
    /* Active set: top 2, renormalised to the same total. */
    wl_keyrates_active(&kr, 2);
    CHECK_INT_EQ(kr.n, 2);
    CHECK_NEAR(kr.rate[0], 10, 1e-12);
    CHECK_NEAR(wl_keyrates_total(&kr), 20, 1e-12);
    /* Whales: 25 % and 45 % of the total; old keys share 30 %. */
    const double sh[2] = {0.25, 0.45};
    CHECK_INT_EQ(wl_keyrates_add_whales(&kr, sh, 2), SIM_OK);
    CHECK_INT_EQ(kr.n, 4);
    CHECK_NEAR(kr.rate[0], 9, 1e-12); /* 0.45 · 20 */
    CHECK_NEAR(kr.rate[1], 5, 1e-12);
    CHECK_NEAR(kr.rate[2], 3, 1e-12);
    CHECK_NEAR(wl_keyrates_total(&kr), 20, 1e-12);
    CHECK_U64_EQ(kr.id[0], 3); /* whales follow the largest id (1) */
    CHECK_U64_EQ(kr.id[1], 2);
    const double too_much[2] = {0.6, 0.5};
    CHECK_INT_EQ(wl_keyrates_add_whales(&kr, too_much, 2), SIM_EINVAL);
    CHECK_INT_EQ(kr.n, 4); /* unchanged */
    wl_keyrates_fini(&kr);
    wl_keyrates_fini(&kr); /* twice is harmless */
}

static void test_fit(void)
{
    /* The fit reproduces its target for both families and both cap modes. */
    const double targets[3] = {0.3, 0.6, 0.9};
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 3; i++) {
            double th;
            enum wl_keydist fam = f ? WL_KEYS_ZIPF : WL_KEYS_LOGNORMAL;
            CHECK_INT_EQ(wl_keyrates_fit_gini(fam, 5000, targets[i], 0, 2, 9, &th), SIM_OK);
            wl_keyrates kr;
            CHECK_INT_EQ(f ? wl_keyrates_zipf(5000, th, 2, 0, &kr)
                           : wl_keyrates_lognormal(5000, th, 0, 9, &kr), SIM_OK);
            wl_keystats st;
            CHECK_INT_EQ(wl_keyrates_describe(&kr, &st), SIM_OK);
            CHECK_NEAR(st.gini, targets[i], 1e-9);
            wl_keyrates_fini(&kr);
        }
    /* A tight cap bounds the Gini: the fit says so instead of approximating. */
    double th;
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 100, 0.9, 0.011, 0, 1, &th), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "reaches a Gini of at most");
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_FILE, 100, 0.5, 0, 0, 1, &th), SIM_EINVAL);
    /* The population depends on the workload seed only. */
    wl_keyrates a, b, c;
    CHECK_INT_EQ(wl_keyrates_lognormal(1000, 1.5, 0, 42, &a), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_lognormal(1000, 1.5, 0, 42, &b), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_lognormal(1000, 1.5, 0, 43, &c), SIM_OK);
    CHECK(memcmp(a.rate, b.rate, 1000 * sizeof *a.rate) == 0);
    CHECK(memcmp(a.rate, c.rate, 1000 * sizeof *a.rate) != 0);
    wl_keyrates_fini(&a);
    wl_keyrates_fini(&b);
    wl_keyrates_fini(&c);
}

/* One fitted, capped lognormal population: theta and rates. */
typedef struct built {
    double theta;
    wl_keyrates kr;
} built;

static void build(size_t n, double gini, double cap, uint64_t seed, built *b)
{
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, n, gini, cap, 0, seed, &b->theta),
                 SIM_OK);
    CHECK_INT_EQ(wl_keyrates_lognormal(n, b->theta, cap, seed, &b->kr), SIM_OK);
}

static int same_built(const built *a, const built *b)
{
    return memcmp(&a->theta, &b->theta, sizeof a->theta) == 0 && a->kr.n == b->kr.n &&
           memcmp(a->kr.rate, b->kr.rate, a->kr.n * sizeof *a->kr.rate) == 0 &&
           memcmp(a->kr.id, b->kr.id, a->kr.n * sizeof *a->kr.id) == 0;
}

static void free_built(built *b) { wl_keyrates_fini(&b->kr); }

typedef struct memo_job {
    const built *ref; /* [2]: seeds 5 and 6 */
    int ok;
} memo_job;

static void *memo_thread(void *arg)
{
    memo_job *j = arg;
    j->ok = 1;
    for (int i = 0; i < 20; i++) {
        built b;
        build(4000, 0.75, 0.003, 5 + (uint64_t)(i & 1), &b);
        j->ok &= same_built(&b, &j->ref[i & 1]);
        free_built(&b);
    }
    return NULL;
}

static void test_memo(void)
{
    /* Fresh references, each computed with an empty memo. */
    built ref[2], again, other;
    wl_keyrates_memo_clear();
    build(4000, 0.75, 0.003, 5, &ref[0]);
    wl_keyrates_memo_stats st = wl_keyrates_memo_get_stats();
    /* The fit drew z once (a miss, kept), the constructor found it. */
    CHECK_U64_EQ(st.theta_misses, 1);
    CHECK_U64_EQ(st.theta_hits, 0);
    CHECK_U64_EQ(st.z_misses, 1);
    CHECK_U64_EQ(st.z_hits, 1);
    wl_keyrates_memo_clear();
    build(4000, 0.75, 0.003, 6, &ref[1]);
    CHECK(memcmp(ref[0].kr.rate, ref[1].kr.rate, 4000 * sizeof(double)) != 0);
    /* Built again from the memo: bit for bit the fresh one. */
    build(4000, 0.75, 0.003, 6, &again);
    st = wl_keyrates_memo_get_stats();
    CHECK_U64_EQ(st.theta_hits, 1);
    CHECK_U64_EQ(st.z_hits, 2);
    CHECK(same_built(&again, &ref[1]));
    free_built(&again);
    /* Every input is in the key: another seed, cap, Gini, n or family
     * misses and gives its own answer. */
    build(4000, 0.75, 0.003, 5, &other); /* seed 6 memoised, 5 is not */
    CHECK(same_built(&other, &ref[0]));
    free_built(&other);
    double th_cap, th_gini, th_n, th_zipf, th_q;
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 4000, 0.75, 0.004, 0, 6, &th_cap), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 4000, 0.7, 0.003, 0, 6, &th_gini), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 4001, 0.75, 0.003, 0, 6, &th_n), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_ZIPF, 4000, 0.75, 0.003, 0, 6, &th_zipf), SIM_OK);
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_ZIPF, 4000, 0.75, 0.003, 2, 6, &th_q), SIM_OK);
    CHECK(th_cap != ref[1].theta && th_gini != ref[1].theta && th_n != ref[1].theta);
    CHECK(th_zipf != ref[1].theta && th_q != th_zipf);
    st = wl_keyrates_memo_get_stats();
    CHECK_U64_EQ(st.theta_hits, 1); /* none of the five was a hit */
    /* An error is not kept: the same bad input fails again. */
    double th;
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 100, 0.9, 0.011, 0, 1, &th), SIM_EINVAL);
    CHECK_INT_EQ(wl_keyrates_fit_gini(WL_KEYS_LOGNORMAL, 100, 0.9, 0.011, 0, 1, &th), SIM_EINVAL);
    /* Two threads building both populations at once (the memo's round-robin
     * replacement under contention) always get the fresh results. */
    wl_keyrates_memo_clear();
    memo_job jobs[2] = {{ref, 0}, {ref, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(pthread_create(&t[i], NULL, memo_thread, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(pthread_join(t[i], NULL), 0);
    CHECK(jobs[0].ok && jobs[1].ok);
    st = wl_keyrates_memo_get_stats();
    CHECK(st.theta_hits >= 36); /* at most 2 misses per seed across the threads */
    free_built(&ref[0]);
    free_built(&ref[1]);
    wl_keyrates_memo_clear();
}

static void check_preset(const char *name, int paper)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", spec_dir, name);
    wl_config cfg;
    if (wl_config_load(path, &cfg)) {
        fprintf(stderr, "%s\n", sim_errmsg());
        exit(1);
    }
    wl_keyrates kr;
    double th;
    CHECK_INT_EQ(wl_synth_keys(&cfg, &kr, &th), SIM_OK);
    wl_keystats st;
    CHECK_INT_EQ(wl_keyrates_describe(&kr, &st), SIM_OK);
    printf("%-22s keys %zu  theta %.6f  Gini %.4f  top1%% %.4f  top4%% %.4f  top10%% %.4f  "
           "max %.5f\n", name, st.n, th, st.gini, st.top1, st.top4, st.top10, st.max_share);
    if (paper) {
        CHECK_INT_EQ(st.n, 128824);
        CHECK_NEAR(st.gini, 0.756, 0.01);
        CHECK_NEAR(st.top4, 0.47, 0.02);
        CHECK(st.max_share <= 0.003 + 1e-12);
        /* Active sets: top K, renormalised; the order is the population's. */
        const size_t ks[2] = {128, 256};
        for (int i = 0; i < 2; i++) {
            wl_keyrates act;
            CHECK_INT_EQ(wl_keyrates_copy(&kr, &act), SIM_OK);
            wl_keyrates_active(&act, ks[i]);
            CHECK_INT_EQ(act.n, ks[i]);
            CHECK_NEAR(wl_keyrates_total(&act), 1.0, 1e-12);
            CHECK_U64_EQ(act.id[0], kr.id[0]);
            wl_keyrates_fini(&act);
        }
    }
    wl_keyrates_fini(&kr);
    wl_config_fini(&cfg);
}

static char tmpdir[] = "/tmp/crsim_keyrates_XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

static void expect_bad(const char *name, const char *text, const char *where, const char *what)
{
    const char *p = write_tmp(name, text);
    char full[600];
    snprintf(full, sizeof full, "%s%s", p, where);
    wl_keyrates kr;
    CHECK_INT_EQ(wl_keyrates_load_csv(p, &kr), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), full);
    CHECK_STR_CONTAINS(sim_errmsg(), what);
    CHECK_STR_CONTAINS(sim_errmsg(), "expected");
    CHECK(kr.rate == NULL && kr.n == 0);
    unlink(p);
}

static void test_file(void)
{
    CHECK(mkdtemp(tmpdir) != NULL);
    const char *p = write_tmp("ok.csv", "key,rate\n# comment\nalpha, 2\nbeta,8\n\ngamma,0.5e1\n");
    wl_keyrates kr;
    CHECK_INT_EQ(wl_keyrates_load_csv(p, &kr), SIM_OK);
    CHECK_INT_EQ(kr.n, 3);
    CHECK_NEAR(kr.rate[0], 8, 0);
    CHECK_U64_EQ(kr.id[0], 1); /* row order */
    CHECK_NEAR(kr.rate[2], 2, 0);
    wl_keyrates_fini(&kr);
    unlink(p);
    expect_bad("empty.csv", "", ":", "no key-rate rows");
    expect_bad("header.csv", "key,rate\n", ":", "no key-rate rows");
    expect_bad("zero.csv", "key,rate\na,1\nb,0\n", ":3:", "rate 0");
    expect_bad("neg.csv", "a,1\nb,2\nc,-3\n", ":3:", "rate -3");
    expect_bad("nan.csv", "a,nan\n", ":1:", "rate nan");
    expect_bad("inf.csv", "a,1\nb,inf\n", ":2:", "rate inf");
    expect_bad("word.csv", "a,1\nb,lots\n", ":2:", "not a number");
    expect_bad("three.csv", "a,1,2\n", ":1:", "more than two fields");
    expect_bad("nokey.csv", "a,1\n ,2\n", ":2:", "empty key");
    /* Issue 17 items 3, 15, 16: a sum that overflows (before: "complete"
     * runs and `plan` printing "total inf"), hexadecimal rates (strtod
     * read 0x10 as 16, or took the row for a header), duplicate keys
     * (before: two keys of one name), binary data and a one-field row
     * (before: "one field, no comma, fields"). */
    expect_bad("overflow.csv", "a,1e308\nb,1e308\n", ": the 2 key rates sum to inf",
               "expected rates whose sum is finite");
    expect_bad("hex.csv", "key,rate\na,0x10\n", ":2:", "rate '0x10' is hexadecimal");
    expect_bad("hex1.csv", "a,0X1p4\n", ":1:", "rate '0X1p4' is hexadecimal");
    expect_bad("dup.csv", "key,rate\na,1\nb,2\n# c\na,3\n", ":5:",
               "key 'a' again (first on line 2); expected each key once");
    expect_bad("onefield.csv", "a,1\nb\n", ":2:", "one field (no comma); expected key,rate");
    expect_bad("binary.csv", "\x7f" "ELF\x02\x01\x01\n", ":1:", "control character 0x7f");
    p = write_tmp("bom.csv", "\xef\xbb\xbf" "key,rate\na,1\nb,3\n");
    CHECK_INT_EQ(wl_keyrates_load_csv(p, &kr), SIM_OK); /* a byte order mark is accepted */
    CHECK_INT_EQ(kr.n, 2);
    CHECK_NEAR(kr.rate[0], 3, 0);
    wl_keyrates_fini(&kr);
    unlink(p);
    p = write_tmp("bom1.csv", "\xef\xbb\xbf" "a,1\nb,3\n"); /* and is not part of key 'a' */
    char **names;
    CHECK_INT_EQ(wl_keyrates_load_csv_names(p, &kr, &names), SIM_OK);
    CHECK_INT_EQ(kr.n, 2);
    CHECK(strcmp(names[0], "a") == 0);
    wl_names_free(names, kr.n);
    wl_keyrates_fini(&kr);
    unlink(p);
    /* The fuzz finding keyrates-long-value: a long value of white-space
     * controls; the message keeps its expected form (before: escaped and
     * cut at 1 KiB). */
    {
        char text[2000] = "key,rate\nmz,a";
        for (int i = 0; i < 600; i++)
            strcat(text, "\r\v");
        strcat(text, "6\n");
        expect_bad("long.csv", text, ":2: rate 'a\\r\\x0b\\r", "is not a number; expected key,rate");
        CHECK_STR_CONTAINS(sim_errmsg(), " bytes cut ...] ");
    }
    /* Large but summable rates load; the total is finite. */
    p = write_tmp("big.csv", "a,1e307\nb,1e307\n");
    CHECK_INT_EQ(wl_keyrates_load_csv(p, &kr), SIM_OK);
    CHECK_NEAR(wl_keyrates_total(&kr), 2e307, 1e292);
    wl_keyrates_fini(&kr);
    unlink(p);
    CHECK_INT_EQ(wl_keyrates_load_csv("/dev/zero", &kr), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "/dev/zero: key-rate file is a character device");
    CHECK_INT_EQ(wl_keyrates_load_csv("/nonexistent/rates.csv", &kr), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "/nonexistent/rates.csv");
    enum wl_keydist d;
    CHECK_INT_EQ(wl_keydist_parse("pareto", &d), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "unknown key-rate distribution 'pareto'");
    CHECK_INT_EQ(rmdir(tmpdir), 0); /* every file written above was removed */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SPEC_DIR\n", argv[0]);
        return 99;
    }
    spec_dir = argv[1];
    test_hand_vectors();
    test_cap_active_whales();
    test_fit();
    test_memo();
    test_file();
    check_preset("paper-main.yaml", 1);
    check_preset("paper-second.yaml", 1);
    check_preset("zipf-gini0756.yaml", 0);
    check_preset("low-reuse-chat.yaml", 0);
    check_preset("low-reuse-api.yaml", 0);
    printf("keyrates: all tests passed\n");
    return 0;
}
