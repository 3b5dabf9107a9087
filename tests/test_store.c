/*
 * The result store's API round trip (sim/exp/store.h): create a database,
 * begin an experiment, store runs, copy one as resumed, compute the
 * capacities, then read everything back through the read-only functions;
 * and the errors of bad input (missing file, not a database, unknown
 * metric column, unknown experiment).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "sim/exp/store.h"
#include "check.h"

/* A finished run of two destinations with TTFT p99 `ttft` s. */
static void fake_result(cluster_result *r, cluster_dest *d, double ttft, double hit)
{
    memset(r, 0, sizeof *r);
    memset(d, 0, 2 * sizeof *d);
    r->n_arrived = r->n_completed = r->n_measured = r->measured_completed = 10;
    r->hit_rate = hit;
    r->ttft_p50 = ttft / 2;
    r->ttft_p90 = ttft;
    r->ttft_p99 = ttft;
    r->ttft_mean = ttft / 2;
    r->tpot_p50 = r->tpot_p90 = r->tpot_p99 = NAN; /* undefined: stored as NULL */
    r->e2e_p50 = r->e2e_p90 = r->e2e_p99 = 2 * ttft;
    r->imbalance_work = 1.25;
    r->n_dest = 2;
    r->dest = d;
    d[0].routed = 6;
    d[1].routed = 4;
}

int main(void)
{
    char dir[] = "/tmp/test_store.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[sizeof dir + 16], text[sizeof dir + 16];
    snprintf(path, sizeof path, "%s/sub/r.db", dir); /* the folder is created */
    snprintf(text, sizeof text, "%s/text.db", dir);

    exp_store *s = NULL;
    CHECK_INT_EQ(exp_store_open(path, &s), SIM_OK);
    exp_store_meta m = {.name = "t", .config_path = "t.yaml", .config_text = "a: 1\n",
                        .config_hash = "00000000000000aa", .build = "test", .n_runs_planned = 3,
                        .n_points = 1, .slo_metric = "ttft_p99", .slos = "2,5",
                        .report_rate = 20};
    int64_t exp_id = 0, run1 = 0, run2 = 0;
    CHECK_INT_EQ(exp_store_begin(s, &m, &exp_id), SIM_OK);
    CHECK_INT_EQ(exp_id, 1);
    cluster_result res;
    cluster_dest d[2];
    exp_run_row row = {.run_index = 0, .point = 0, .point_label = "", .policy = "flat_lb",
                       .seed = 1, .rate_rps = 10, .config_text = "r: 10\n",
                       .config_hash = "00000000000000b1", .started_at = "2024-01-01T00:00:00Z",
                       .wall_s = 0.5};
    fake_result(&res, d, 1.0, 0.5);
    CHECK_INT_EQ(exp_store_add_run(s, exp_id, &row, &res, &run1), SIM_OK);
    row.run_index = 1;
    row.rate_rps = 20;
    row.config_hash = "00000000000000b2";
    fake_result(&res, d, 3.0, 0.25);
    CHECK_INT_EQ(exp_store_add_run(s, exp_id, &row, &res, &run2), SIM_OK);
    CHECK(run2 > run1);

    /* Resume: find a run by hash, copy it into a second experiment. */
    int64_t found = -1;
    char fb[64] = "x";
    CHECK_INT_EQ(exp_store_find_run(s, "00000000000000b2", "test", &found, fb, sizeof fb, NULL), SIM_OK);
    CHECK_INT_EQ(found, run2);
    CHECK(strcmp(fb, "test") == 0);
    CHECK_INT_EQ(exp_store_find_run(s, "ffffffffffffffff", "test", &found, fb, sizeof fb, NULL), SIM_OK);
    CHECK_INT_EQ(found, 0);
    CHECK(fb[0] == 0);
    /* Resume matches the build (issue 17 item 4): another build's run is
     * not found, unless any build (NULL) is asked for. */
    CHECK_INT_EQ(exp_store_find_run(s, "00000000000000b2", "other", &found, fb, sizeof fb, NULL), SIM_OK);
    CHECK_INT_EQ(found, 0);
    CHECK_INT_EQ(exp_store_find_run(s, "00000000000000b2", NULL, &found, NULL, 0, NULL), SIM_OK);
    CHECK_INT_EQ(found, run2);
    double v = 0;
    CHECK_INT_EQ(exp_store_run_metric(s, run2, "ttft_p99", &v), SIM_OK);
    CHECK_NEAR(v, 3.0, 0);
    CHECK_INT_EQ(exp_store_run_metric(s, run2, "tpot_p99", &v), SIM_OK);
    CHECK(isnan(v));
    CHECK_INT_EQ(exp_store_capacities(s, exp_id), SIM_OK);
    CHECK_INT_EQ(exp_store_end(s, exp_id, "complete"), SIM_OK);
    int64_t exp2 = 0;
    CHECK_INT_EQ(exp_store_begin(s, &m, &exp2), SIM_OK);
    row.run_index = 0;
    CHECK_INT_EQ(exp_store_copy_run(s, exp2, &row, run1), SIM_OK);
    CHECK_INT_EQ(exp_store_end(s, exp2, "incomplete"), SIM_OK);
    int64_t n_idx = 0;
    CHECK_INT_EQ(exp_store_count_run_indexes(s, exp_id, &n_idx), SIM_OK);
    CHECK_INT_EQ(n_idx, 2);
    exp_store_close(s);

    /* Read it back, read-only. */
    CHECK_INT_EQ(exp_store_open_read(path, &s), SIM_OK);
    CHECK(strcmp(exp_store_path(s), path) == 0);
    int64_t latest = 0;
    CHECK_INT_EQ(exp_store_latest_experiment(s, &latest), SIM_OK);
    CHECK_INT_EQ(latest, exp2);
    exp_store_experiment e;
    CHECK_INT_EQ(exp_store_read_experiment(s, 0, &e), SIM_OK);
    CHECK_INT_EQ(e.id, exp2);
    CHECK(strcmp(e.status, "incomplete") == 0);
    exp_store_experiment_fini(&e);
    CHECK_INT_EQ(exp_store_read_experiment(s, exp_id, &e), SIM_OK);
    CHECK(strcmp(e.name, "t") == 0 && strcmp(e.status, "complete") == 0);
    CHECK(strcmp(e.slo_metric, "ttft_p99") == 0 && strcmp(e.slos, "2,5") == 0);
    CHECK(strcmp(e.shard, "") == 0); /* NULL reads as "" */
    CHECK_NEAR(e.report_rate_rps, 20, 0);
    CHECK_INT_EQ(e.n_runs_planned, 3);
    exp_store_experiment_fini(&e);
    exp_store_experiment_fini(&e); /* twice is safe */
    CHECK_INT_EQ(exp_store_read_experiment(s, 9, &e), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "no experiment with id 9");

    const char *cols[] = {"hit_rate", "ttft_p99", "tpot_p99"};
    exp_store_run *runs = NULL;
    size_t n = 0;
    CHECK_INT_EQ(exp_store_read_runs(s, exp_id, cols, 3, &runs, &n), SIM_OK);
    CHECK_INT_EQ(n, 2);
    CHECK(strcmp(runs[0].policy, "flat_lb") == 0 && runs[0].has_metrics && !runs[0].interrupted);
    CHECK_NEAR(runs[0].rate_rps, 10, 0);
    CHECK_NEAR(runs[0].v[0], 0.5, 0);
    CHECK_NEAR(runs[1].v[1], 3.0, 0);
    CHECK(isnan(runs[1].v[2]));
    exp_store_runs_free(runs, n);
    const char *bad[] = {"ttft_p99; DROP TABLE runs"};
    CHECK_INT_EQ(exp_store_read_runs(s, exp_id, bad, 1, &runs, &n), SIM_EINVAL);
    CHECK(runs == NULL && n == 0);

    /* Capacities: stored rows equal the computed ones.  SLO 2 s holds at
     * 10/s and fails at 20/s (exact 10); 5 s holds at both (right). */
    exp_capacity_row *rows = NULL, *comp = NULL;
    size_t nr = 0, nc = 0;
    CHECK_INT_EQ(exp_store_read_capacities(s, exp_id, "ttft_p99", &rows, &nr), SIM_OK);
    CHECK_INT_EQ(exp_store_capacity_rows(s, exp_id, &comp, &nc), SIM_OK);
    CHECK_INT_EQ(nr, 2);
    CHECK_INT_EQ(nc, 2);
    for (size_t i = 0; i < nr; i++) {
        const exp_capacity_row *c = NULL;
        for (size_t j = 0; j < nc; j++)
            if (comp[j].slo_s == rows[i].slo_s)
                c = &comp[j];
        CHECK(c != NULL);
        CHECK_INT_EQ(c->cap.censoring, rows[i].cap.censoring);
        CHECK_NEAR(c->cap.capacity_rps, rows[i].cap.capacity_rps, 0);
    }
    CHECK_INT_EQ(comp[0].cap.censoring, EXP_CENS_NONE);
    CHECK_NEAR(comp[0].cap.capacity_rps, 10, 0);
    CHECK_INT_EQ(comp[1].cap.censoring, EXP_CENS_RIGHT);
    exp_capacity_rows_free(rows, nr);
    exp_capacity_rows_free(comp, nc);
    CHECK_INT_EQ(exp_store_read_capacities(s, exp2, "ttft_p99", &rows, &nr), SIM_OK);
    CHECK_INT_EQ(nr, 0);

    exp_store_policy_mean *pm = NULL;
    size_t npm = 0;
    CHECK_INT_EQ(exp_store_policy_means(s, exp_id, "hit_rate", 20, &pm, &npm), SIM_OK);
    CHECK_INT_EQ(npm, 1);
    CHECK(strcmp(pm[0].policy, "flat_lb") == 0);
    CHECK_NEAR(pm[0].mean, 0.25, 0);
    exp_store_policy_means_free(pm, npm);
    CHECK_INT_EQ(exp_store_policy_means(s, exp_id, "policy", 20, &pm, &npm), SIM_EINVAL);
    exp_store_close(s);

    /* Bad input. */
    char missing[sizeof dir + 16];
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    CHECK_INT_EQ(exp_store_open_read(missing, &s), SIM_EIO);
    FILE *f = fopen(text, "w");
    CHECK(f != NULL);
    fputs("not a database, just text\n", f);
    fclose(f);
    CHECK_INT_EQ(exp_store_open_read(text, &s), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "not a crsim result database");
    CHECK_INT_EQ(exp_store_open(text, &s), SIM_EIO); /* bad input, exit 2 (issue 38 C7) */
    CHECK_STR_CONTAINS(sim_errmsg(), "text.db");

    unlink(text);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
    printf("store: all tests passed\n");
    return 0;
}
