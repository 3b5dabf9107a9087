/*
 * Known-answer tests of the SLO capacity (docs/design.md §10): per-seed capacity
 * and censoring on hand-made pass/fail grids, including non-monotone ones,
 * unsorted input, Inf/NaN metrics and duplicate loads; the across-seed
 * aggregation and its table strings; and the result store's capacities
 * (exp_store_capacity_rows, exp_store_capacities) on a small database whose
 * runs are written here with SQL through a second connection.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/exp/capacity.h"
#include "sim/exp/store.h"
#include "sim/core/error.h"
#include "check.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static exp_capacity cap_of(const double *loads, const double *metric, size_t n, double slo)
{
    exp_capacity c;
    int rc = exp_capacity_compute(loads, metric, n, slo, &c);
    if (rc) {
        fprintf(stderr, "unexpected error: %s\n", sim_errmsg());
        exit(1);
    }
    return c;
}

static void test_grids(void)
{
    const double loads[] = {30, 50, 100, 200};
    /* Pass everywhere: right-censored at the highest load. */
    const double all_pass[] = {1, 2, 3, 3.5};
    exp_capacity c = cap_of(loads, all_pass, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_RIGHT);
    CHECK_NEAR(c.capacity_rps, 200, 0);
    CHECK_NEAR(c.lowest_rps, 30, 0);
    CHECK_NEAR(c.highest_rps, 200, 0);
    CHECK_INT_EQ(c.n_loads, 4);
    /* Fail at the lowest load: left-censored, capacity undefined. */
    const double fail_low[] = {4, 1, 1, 1};
    c = cap_of(loads, fail_low, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_LEFT);
    CHECK(isnan(c.capacity_rps));
    /* Exact: the last passing load before the first failure. */
    const double exact[] = {1, 2, 5, 9};
    c = cap_of(loads, exact, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_NONE);
    CHECK_NEAR(c.capacity_rps, 50, 0);
    /* Non-monotone: pass, fail, pass -> the first load only. */
    const double pfp[] = {1, 9, 1, 1};
    c = cap_of(loads, pfp, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_NONE);
    CHECK_NEAR(c.capacity_rps, 30, 0);
    /* Fail, pass, pass: still left-censored. */
    const double fpp[] = {9, 1, 1, 1};
    CHECK_INT_EQ(cap_of(loads, fpp, 4, 3.5).censoring, EXP_CENS_LEFT);
    /* +Inf (unfinished requests) and NaN (undefined) fail. */
    const double with_inf[] = {1, 1, INFINITY, 1};
    c = cap_of(loads, with_inf, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_NONE);
    CHECK_NEAR(c.capacity_rps, 50, 0);
    const double with_nan[] = {1, NAN, 1, 1};
    c = cap_of(loads, with_nan, 4, 3.5);
    CHECK_NEAR(c.capacity_rps, 30, 0);
    const double inf_low[] = {INFINITY, 1, 1, 1};
    CHECK_INT_EQ(cap_of(loads, inf_low, 4, 3.5).censoring, EXP_CENS_LEFT);
    /* The threshold itself passes (metric <= threshold). */
    const double at_slo[] = {3.5, 3.5, 3.5000001, 1};
    CHECK_NEAR(cap_of(loads, at_slo, 4, 3.5).capacity_rps, 50, 0);
    /* Unsorted input is sorted with its metrics (inputs untouched). */
    const double uload[] = {100, 30, 200, 50};
    const double umetric[] = {5, 1, 9, 2};   /* sorted: 1, 2, 5, 9 */
    c = cap_of(uload, umetric, 4, 3.5);
    CHECK_INT_EQ(c.censoring, EXP_CENS_NONE);
    CHECK_NEAR(c.capacity_rps, 50, 0);
    CHECK_NEAR(c.lowest_rps, 30, 0);
    CHECK_NEAR(c.highest_rps, 200, 0);
    CHECK_NEAR(uload[0], 100, 0);
    const double unonmono[] = {1, 9, 1, 1};  /* at 100, 30, 200, 50: fails at 30 */
    CHECK_INT_EQ(cap_of(uload, unonmono, 4, 3.5).censoring, EXP_CENS_LEFT);
    /* One load: pass -> right, fail -> left. */
    const double one[] = {10}, m_ok[] = {1}, m_bad[] = {5};
    CHECK_INT_EQ(cap_of(one, m_ok, 1, 3.5).censoring, EXP_CENS_RIGHT);
    CHECK_INT_EQ(cap_of(one, m_bad, 1, 3.5).censoring, EXP_CENS_LEFT);

    /* Errors leave *out unchanged. */
    exp_capacity keep = {.capacity_rps = -7};
    const double dup[] = {30, 50, 30}, dm[] = {1, 1, 1};
    CHECK_INT_EQ(exp_capacity_compute(dup, dm, 3, 3.5, &keep), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "load 30 requests/s tested twice");
    CHECK_NEAR(keep.capacity_rps, -7, 0);
    CHECK_INT_EQ(exp_capacity_compute(loads, all_pass, 0, 3.5, &keep), SIM_EINVAL);
    CHECK_INT_EQ(exp_capacity_compute(loads, all_pass, 4, 0, &keep), SIM_EINVAL);
    CHECK_INT_EQ(exp_capacity_compute(loads, all_pass, 4, NAN, &keep), SIM_EINVAL);
    const double badload[] = {30, -1};
    CHECK_INT_EQ(exp_capacity_compute(badload, dm, 2, 3.5, &keep), SIM_EINVAL);
    const double nanload[] = {30, NAN};
    CHECK_INT_EQ(exp_capacity_compute(nanload, dm, 2, 3.5, &keep), SIM_EINVAL);
    CHECK_NEAR(keep.capacity_rps, -7, 0);
}

static exp_capacity exact_cap(double x)
{
    return (exp_capacity){.capacity_rps = x, .censoring = EXP_CENS_NONE, .lowest_rps = 30,
                          .highest_rps = 200, .n_loads = 5};
}

static exp_capacity left_cap(double lowest)
{
    return (exp_capacity){.capacity_rps = NAN, .censoring = EXP_CENS_LEFT,
                          .lowest_rps = lowest, .highest_rps = 200, .n_loads = 5};
}

static exp_capacity right_cap(double highest)
{
    return (exp_capacity){.capacity_rps = highest, .censoring = EXP_CENS_RIGHT,
                          .lowest_rps = 30, .highest_rps = highest, .n_loads = 5};
}

static void check_format(const exp_capacity *caps, size_t n, const char *want)
{
    exp_capacity_agg a;
    exp_capacity_aggregate(caps, n, &a);
    char buf[128];
    size_t len = exp_capacity_format(&a, buf, sizeof buf);
    CHECK_INT_EQ(len, strlen(buf));
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "%s:%d: format gave \"%s\", expected \"%s\"\n", __FILE__, __LINE__, buf,
                want);
        exit(1);
    }
}

static void test_aggregate(void)
{
    /* Mean and sample sd (n - 1) over exact seeds. */
    exp_capacity a5[] = {exact_cap(160), exact_cap(180), exact_cap(190), exact_cap(170),
                         exact_cap(180)};
    exp_capacity_agg g;
    exp_capacity_aggregate(a5, 5, &g);
    CHECK_INT_EQ(g.n_seeds, 5);
    CHECK_INT_EQ(g.n_exact, 5);
    CHECK_NEAR(g.mean_rps, 176, 1e-12);
    CHECK_NEAR(g.sd_rps, sqrt((256 + 16 + 196 + 36 + 16) / 4.0), 1e-12);
    check_format(a5, 5, "176 \u00b1 11");

    /* Censored seeds are counted, never averaged. */
    exp_capacity mixed[] = {exact_cap(140), right_cap(200), exact_cap(160), exact_cap(150),
                            exact_cap(150)};
    exp_capacity_aggregate(mixed, 5, &g);
    CHECK_INT_EQ(g.n_exact, 4);
    CHECK_INT_EQ(g.n_right, 1);
    CHECK_NEAR(g.mean_rps, 150, 1e-12);
    CHECK_NEAR(g.right_bound, 200, 0);
    check_format(mixed, 5, "150 \u00b1 8 (R 1/5)");
    exp_capacity mixed2[] = {exact_cap(140), right_cap(200), exact_cap(160), left_cap(30),
                             exact_cap(150)};
    check_format(mixed2, 5, "150 \u00b1 10 (L 1/5, R 1/5)");

    exp_capacity allr[] = {right_cap(200), right_cap(200), right_cap(200), right_cap(200),
                           right_cap(200)};
    exp_capacity_aggregate(allr, 5, &g);
    CHECK(isnan(g.mean_rps));
    CHECK(isnan(g.sd_rps));
    check_format(allr, 5, "\u2265 200 (R 5/5)");
    exp_capacity alll[] = {left_cap(30), left_cap(30), left_cap(30), left_cap(30),
                           left_cap(30)};
    check_format(alll, 5, "< 30 (L 5/5)");
    exp_capacity both[] = {left_cap(30), right_cap(200), right_cap(200)};
    check_format(both, 3, "< 30 / \u2265 200 (L 1/3, R 2/3)");
    /* The conservative bounds when seeds tested different grids. */
    exp_capacity rb[] = {right_cap(200), right_cap(150)};
    exp_capacity_aggregate(rb, 2, &g);
    CHECK_NEAR(g.right_bound, 150, 0);
    exp_capacity lb[] = {left_cap(20), left_cap(30)};
    exp_capacity_aggregate(lb, 2, &g);
    CHECK_NEAR(g.left_bound, 30, 0);

    /* One exact seed: the tested load itself, no sd. */
    exp_capacity one[] = {exact_cap(30), left_cap(30)};
    exp_capacity_aggregate(one, 2, &g);
    CHECK(isnan(g.sd_rps));
    check_format(one, 2, "30 (L 1/2)");
    exp_capacity single[] = {exact_cap(42.5)};
    check_format(single, 1, "42.5");
    check_format(NULL, 0, "-");
    /* Small values keep decimals. */
    exp_capacity small[] = {exact_cap(2), exact_cap(3)};
    check_format(small, 2, "2.5 \u00b1 0.7");
    exp_capacity tiny[] = {exact_cap(0.25), exact_cap(0.5)};
    check_format(tiny, 2, "0.38 \u00b1 0.18");
    /* Truncation: snprintf semantics. */
    exp_capacity_aggregate(allr, 5, &g);
    char b4[4];
    size_t need = exp_capacity_format(&g, b4, sizeof b4);
    CHECK_INT_EQ(need, strlen("\u2265 200 (R 5/5)"));
    CHECK_INT_EQ(strlen(b4), 3);
}

static void test_parse(void)
{
    double *v = NULL;
    size_t n = 0;
    CHECK_INT_EQ(exp_capacity_parse_slos("2,3.5, 5", &v, &n), SIM_OK);
    CHECK_INT_EQ(n, 3);
    CHECK_NEAR(v[0], 2, 0);
    CHECK_NEAR(v[1], 3.5, 0);
    CHECK_NEAR(v[2], 5, 0);
    free(v);
    const char *bad[] = {"", "2,", "2,,3", "x", "-1", "0", "2,2", "inf", "3 4"};
    for (size_t i = 0; i < N(bad); i++) {
        CHECK_INT_EQ(exp_capacity_parse_slos(bad[i], &v, &n), SIM_EINVAL);
        CHECK(v == NULL);
    }
    CHECK_INT_EQ(exp_capacity_check_metric("ttft_p99"), SIM_OK);
    CHECK_INT_EQ(exp_capacity_check_metric("e2e_p90"), SIM_OK);
    CHECK_INT_EQ(exp_capacity_check_metric("hit_rate"), SIM_EINVAL);
    CHECK_INT_EQ(exp_capacity_check_metric("ttft_p99; DROP TABLE runs"), SIM_EINVAL);
    exp_censoring c;
    for (int k = EXP_CENS_NONE; k <= EXP_CENS_RIGHT; k++) {
        CHECK_INT_EQ(exp_censoring_parse(exp_censoring_name((exp_censoring)k), &c), SIM_OK);
        CHECK_INT_EQ(c, k);
    }
    CHECK_INT_EQ(exp_censoring_parse("both", &c), SIM_EINVAL);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "SQL failed: %s\n%s\n", err, sql);
        exit(99);
    }
}

static int64_t count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int run_id;

/* Add a run and its metrics row (metric NAN -> NULL; no row when skip). */
static void add_run(sqlite3 *db, int64_t exp, int64_t point, const char *policy, int64_t seed,
                    double rate, double ttft, const char *status)
{
    char sql[1024], val[64];
    run_id++;
    if (isnan(ttft))
        snprintf(val, sizeof val, "NULL");
    else if (isinf(ttft))
        snprintf(val, sizeof val, "9e999");
    else
        snprintf(val, sizeof val, "%.17g", ttft);
    snprintf(sql, sizeof sql,
             "INSERT INTO runs(id, experiment_id, run_index, point, point_label, policy, seed,"
             " rate_rps, status, config_text, config_hash, build_version, started_at, wall_s)"
             " VALUES (%d, %lld, %d, %lld, 'q=%lld', '%s', %lld, %.17g, '%s', '', '', '', '', 0);"
             "INSERT INTO run_metrics(run_id, ttft_p99, e2e_p99, n_arrived, n_completed,"
             " n_unfinished, n_rejected, n_measured, measured_completed, prompt_tokens,"
             " hit_tokens, steps, events, preemptions, kv_pool_blocks, kv_pool_tokens)"
             " VALUES (%d, %s, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);",
             run_id, (long long)exp, run_id, (long long)point, (long long)point, policy,
             (long long)seed, rate, status, run_id, val);
    exec(db, sql);
}

/* An experiments row with the columns capacities read; the rest filler. */
static void add_exp(sqlite3 *db, int id, const char *name, const char *metric,
                    const char *slos, const char *status)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO experiments(id, name, n_points, shard, slo_metric, slos,"
             " report_rate_rps, status, config_text, config_hash, build_version, started_at,"
             " n_runs_planned) VALUES (%d, '%s', 1, NULL, '%s', '%s', 100, '%s', '', '', '', '',"
             " 0);", id, name, metric, slos, status);
    exec(db, sql);
}

/* No transaction is left open on the database: another writer gets in at
 * once (the fixture connection has no busy timeout). */
static void check_unlocked(sqlite3 *db)
{
    CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE; ROLLBACK;", NULL, NULL, NULL) == SQLITE_OK);
}

static void test_store(void)
{
    char dir[] = "/tmp/test_capacity.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[sizeof dir + 8];
    snprintf(path, sizeof path, "%s/c.db", dir);
    exp_store *st = NULL;
    CHECK_INT_EQ(exp_store_open(path, &st), SIM_OK);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    add_exp(db, 1, "e", "ttft_p99", "2,3.5", "complete");
    add_exp(db, 2, "other", "ttft_p99", "3.5", "complete");
    /* Point 0: policy a seed 1 exact at 3.5 s (pass, pass, fail), left at 2 s. */
    add_run(db, 1, 0, "a", 1, 30, 2.5, "complete");
    add_run(db, 1, 0, "a", 1, 60, 3.0, "complete");
    add_run(db, 1, 0, "a", 1, 90, INFINITY, "complete");
    /* Seed 2, loads unsorted in run order, non-monotone: 60 fails, 90 passes. */
    add_run(db, 1, 0, "a", 2, 90, 1.0, "complete");
    add_run(db, 1, 0, "a", 2, 30, 1.0, "complete");
    add_run(db, 1, 0, "a", 2, 60, NAN, "complete");
    /* An interrupted run is ignored (it would make the grid fail). */
    add_run(db, 1, 0, "a", 2, 120, 99, "interrupted");
    /* Policy b passes everywhere: right-censored. */
    add_run(db, 1, 0, "b", 1, 30, 0.5, "complete");
    add_run(db, 1, 0, "b", 1, 60, 0.5, "complete");
    /* Point 1: policy a seed 1, one load. */
    add_run(db, 1, 1, "a", 1, 30, 1.5, "complete");
    /* Experiment 2 must be left alone. */
    add_run(db, 2, 0, "a", 1, 30, 1.0, "complete");
    exec(db, "INSERT INTO capacities VALUES (2, 0, '', 'a', 1, 'ttft_p99', 3.5, 30, 'right',"
             " 30, 30, 1);"
             "INSERT INTO capacities VALUES (1, 7, '', 'stale', 1, 'ttft_p99', 3.5, 30, 'right',"
             " 30, 30, 1);");

    exp_capacity_row *rows = NULL;
    size_t n = 0;
    CHECK_INT_EQ(exp_store_capacity_rows(st, 1, &rows, &n), SIM_OK);
    CHECK_INT_EQ(n, 8); /* 4 (point, policy, seed) x 2 thresholds */
    CHECK_INT_EQ(rows[0].point, 0);
    CHECK(strcmp(rows[0].policy, "a") == 0);
    CHECK_INT_EQ(rows[0].seed, 1);
    CHECK_NEAR(rows[0].slo_s, 2, 0);
    CHECK(strcmp(rows[6].point_label, "q=1") == 0);
    exp_capacity_rows_free(rows, n);

    CHECK_INT_EQ(exp_store_capacities(st, 1), SIM_OK);
    /* Twice: rows are replaced, not duplicated. */
    CHECK_INT_EQ(exp_store_capacities(st, 1), SIM_OK);
    CHECK_INT_EQ(count(db, "SELECT count(*) FROM capacities WHERE experiment_id = 1"), 8);
    CHECK_INT_EQ(count(db, "SELECT count(*) FROM capacities WHERE policy = 'stale'"), 0);
    CHECK_INT_EQ(count(db, "SELECT count(*) FROM capacities WHERE experiment_id = 2"), 1);
    struct {
        const char *where;
        int64_t want;
    } checks[] = {
        {"point=0 AND policy='a' AND seed=1 AND slo_s=3.5 AND censoring='none' AND "
         "capacity_rps=60 AND lowest_rps=30 AND highest_rps=90 AND n_loads=3", 1},
        {"point=0 AND policy='a' AND seed=1 AND slo_s=2 AND censoring='left' AND "
         "capacity_rps IS NULL", 1},
        {"point=0 AND policy='a' AND seed=2 AND slo_s=3.5 AND censoring='none' AND "
         "capacity_rps=30 AND n_loads=3 AND highest_rps=90", 1},
        {"point=0 AND policy='b' AND seed=1 AND censoring='right' AND capacity_rps=60", 2},
        {"point=1 AND policy='a' AND slo_s=2 AND censoring='right' AND capacity_rps=30 AND "
         "point_label='q=1' AND n_loads=1", 1},
        {"point=1 AND policy='a' AND slo_s=3.5 AND censoring='right'", 1},
        {"slo_metric='ttft_p99'", 8},
    };
    for (size_t i = 0; i < N(checks); i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM capacities WHERE experiment_id = 1 AND %s",
                 checks[i].where);
        int64_t got = count(db, sql);
        if (got != checks[i].want) {
            fprintf(stderr, "%s:%d: %s: %lld rows, expected %lld\n", __FILE__, __LINE__,
                    checks[i].where, (long long)got, (long long)checks[i].want);
            exit(1);
        }
    }

    /* A duplicate load is an error, and nothing is changed. */
    add_run(db, 1, 0, "b", 1, 60, 0.4, "complete");
    CHECK_INT_EQ(exp_store_capacities(st, 1), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "point 0, policy b, seed 1");
    CHECK_STR_CONTAINS(sim_errmsg(), "load 60 requests/s tested twice");
    CHECK_INT_EQ(count(db, "SELECT count(*) FROM capacities WHERE experiment_id = 1"), 8);
    check_unlocked(db); /* the transaction was rolled back */

    /* Unknown experiment, bad SLO settings. */
    CHECK_INT_EQ(exp_store_capacities(st, 42), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "experiment 42 does not exist");
    add_exp(db, 3, "x", "hit_rate", "3.5", "running");
    add_exp(db, 4, "y", "ttft_p99", "3.5,", "running");
    CHECK_INT_EQ(exp_store_capacities(st, 3), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "SLO metric 'hit_rate'");
    CHECK_INT_EQ(exp_store_capacities(st, 4), SIM_EINVAL);
    /* An experiment without runs: no rows, no error. */
    add_exp(db, 5, "z", "e2e_p99", "3.5", "running");
    CHECK_INT_EQ(exp_store_capacities(st, 5), SIM_OK);
    CHECK_INT_EQ(count(db, "SELECT count(*) FROM capacities WHERE experiment_id = 5"), 0);
    check_unlocked(db);
    sqlite3_close(db);
    exp_store_close(st);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    test_grids();
    test_aggregate();
    test_parse();
    test_store();
    printf("capacity: all tests passed\n");
    return 0;
}
