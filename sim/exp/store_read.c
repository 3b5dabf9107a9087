/*
 * The reading side of the result store: opening a database read-only,
 * experiments and runs as stored, the capacities table, and the per-seed
 * capacities computed from the runs (sim/exp/capacity.h does the
 * arithmetic, this file only fetches).  Never writes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/core/error.h"
#include "sim/exp/capacity.h"
#include "sim/exp/store_int.h"

int exp_store_open_read(const char *path, exp_store **out)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open: %s; expected a crsim result database "
                         "(crsim run writes results/<experiment>.db)", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return SIM_ERROR(SIM_EIO, "%s: not a regular file; expected a crsim result database",
                         path);
    exp_store *s = sim_xcalloc(1, sizeof *s);
    s->path = sim_xstrdup(path);
    int rc = SIM_OK;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = exp__store_fail(s, SIM_EIO, NULL, "cannot open");
        exp_store_close(s);
        return rc;
    }
    sqlite3_busy_timeout(s->db, 10000);
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                           &st, NULL) != SQLITE_OK)
        rc = exp__store_fail(s, SIM_EINVAL, NULL, "not a crsim result database");
    else if (sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    else
        rc = SIM_ERROR(SIM_EINVAL, "%s: not a crsim result database (no schema version)", path);
    sqlite3_finalize(st);
    if (rc == SIM_OK && version != EXP_STORE_SCHEMA_VERSION)
        rc = SIM_ERROR(SIM_EINVAL, "%s: result schema version %d; this crsim reads version %d "
                       "(re-run the experiment with this build)", path, version,
                       EXP_STORE_SCHEMA_VERSION);
    if (rc) {
        exp_store_close(s);
        return rc;
    }
    *out = s;
    return SIM_OK;
}

void exp_store_experiment_fini(exp_store_experiment *e)
{
    free(e->name);
    free(e->status);
    free(e->shard);
    free(e->build);
    free(e->host);
    free(e->started_at);
    free(e->finished_at);
    free(e->slo_metric);
    free(e->slos);
    free(e->config_text);
    memset(e, 0, sizeof *e);
}

int exp_store_read_experiment(exp_store *s, int64_t id, exp_store_experiment *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = NULL;
    const char *sql = id > 0
        ? "SELECT id, name, status, shard, build_version, host, started_at, finished_at,"
          " slo_metric, slos, report_rate_rps, n_runs_planned, n_points, config_text"
          " FROM experiments WHERE id = ?"
        : "SELECT id, name, status, shard, build_version, host, started_at, finished_at,"
          " slo_metric, slos, report_rate_rps, n_runs_planned, n_points, config_text"
          " FROM experiments ORDER BY id DESC LIMIT 1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        char what[96];
        snprintf(what, sizeof what, "not a crsim result database of version %d",
                 EXP_STORE_SCHEMA_VERSION);
        return exp__store_fail(s, SIM_EINVAL, NULL, what);
    }
    if (id > 0)
        sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), rc = SIM_OK;
    if (step == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, 0);
        out->name = exp__store_col_dup(st, 1);
        out->status = exp__store_col_dup(st, 2);
        out->shard = exp__store_col_dup(st, 3);
        out->build = exp__store_col_dup(st, 4);
        out->host = exp__store_col_dup(st, 5);
        out->started_at = exp__store_col_dup(st, 6);
        out->finished_at = exp__store_col_dup(st, 7);
        out->slo_metric = exp__store_col_dup(st, 8);
        out->slos = exp__store_col_dup(st, 9);
        out->report_rate_rps = exp__store_col_real(st, 10);
        out->n_runs_planned = sqlite3_column_int64(st, 11);
        out->n_points = sqlite3_column_int64(st, 12);
        out->config_text = exp__store_col_dup(st, 13);
    } else if (step == SQLITE_DONE) {
        if (id > 0)
            rc = SIM_ERROR(SIM_EINVAL, "%s: no experiment with id %lld (see: sqlite3 %s "
                           "'SELECT id, name, status FROM experiments')", s->path,
                           (long long)id, s->path);
        else
            rc = SIM_ERROR(SIM_EINVAL, "%s: the database holds no experiment yet", s->path);
    } else {
        rc = exp__store_dberr(s, "cannot read the experiment");
    }
    sqlite3_finalize(st);
    return rc;
}

int exp_store_latest_experiment(exp_store *s, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    *id = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT max(id) FROM experiments", -1, &st, NULL) !=
        SQLITE_OK)
        return exp__store_dberr(s, "cannot read the experiments");
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0); /* NULL (no experiment) reads as 0 */
    sqlite3_finalize(st);
    return step == SQLITE_ROW ? SIM_OK : exp__store_dberr(s, "cannot read the experiments");
}

int exp__store_slo_settings(exp_store *s, int64_t id, char **metric, char **slos)
{
    *metric = *slos = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT slo_metric, slos FROM experiments WHERE id = ?", -1,
                           &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the experiment");
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), rc = SIM_OK;
    if (step == SQLITE_ROW) {
        *metric = exp__store_col_dup(st, 0);
        *slos = exp__store_col_dup(st, 1);
    } else if (step == SQLITE_DONE) {
        rc = SIM_ERROR(SIM_EINVAL, "experiment %lld does not exist", (long long)id);
    } else {
        rc = exp__store_dberr(s, "cannot read the experiment");
    }
    sqlite3_finalize(st);
    return rc;
}

/* The REAL columns of run_metrics (store.c schema): the names that may be
 * pasted into a query. */
static const char *const real_columns[] = {
    "hit_rate", "ttft_p50", "ttft_p90", "ttft_p99", "ttft_mean", "tpot_p50", "tpot_p90",
    "tpot_p99", "e2e_p50", "e2e_p90", "e2e_p99", "imbalance_work", "imbalance_requests",
    "first_arrival_s", "last_arrival_s", "sim_end_s", "throughput_rps",
    "fair_worst_p99", "fair_spread_p99", "fair_jain",
    "tpot_mean", "e2e_mean", "itl_mean", "itl_p50", "itl_p90", "itl_p99", "output_tps",
    "goodput_rps",
    /* request counts, read as doubles (exact below 2^53) */
    "n_arrived", "n_completed", "n_measured", "measured_completed", "n_unfinished", "n_rejected", "n_too_long", "fair_keys",
    "n_failed", "n_lost", "n_refused", "n_retries", "n_crashes", "itl_gaps", "n_good", NULL,
};

static int check_column(const char *c)
{
    for (size_t i = 0; real_columns[i]; i++)
        if (c && strcmp(c, real_columns[i]) == 0)
            return SIM_OK;
    return SIM_ERROR(SIM_EINVAL, "run_metrics column '%s'; expected a real-valued metric such "
                     "as hit_rate, ttft_p99, e2e_p99 or imbalance_work", c ? c : "(null)");
}

void exp_store_runs_free(exp_store_run *runs, size_t n)
{
    if (!runs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(runs[i].point_label);
        free(runs[i].policy);
    }
    free(runs);
}

int exp_store_read_runs(exp_store *s, int64_t exp_id, const char *const *cols, size_t n_cols,
                        exp_store_run **runs, size_t *n)
{
    *runs = NULL;
    *n = 0;
    if (n_cols > EXP_STORE_RUN_COLS)
        return SIM_ERROR(SIM_EINVAL, "%zu run_metrics columns; expected at most %d", n_cols,
                         EXP_STORE_RUN_COLS);
    char sql[1024];
    size_t used = (size_t)snprintf(sql, sizeof sql, "SELECT r.point, r.point_label, r.policy,"
                                   " r.seed, r.rate_rps, r.status, m.run_id IS NOT NULL");
    for (size_t c = 0; c < n_cols; c++) {
        int rc = check_column(cols[c]);
        if (rc)
            return rc;
        used += (size_t)snprintf(sql + used, sizeof sql - used, ", m.%s", cols[c]);
    }
    snprintf(sql + used, sizeof sql - used, " FROM runs r LEFT JOIN run_metrics m ON m.run_id"
             " = r.id WHERE r.experiment_id = ? ORDER BY r.run_index, r.id");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the runs");
    sqlite3_bind_int64(st, 1, exp_id);
    exp_store_run *v = NULL;
    size_t k = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap)
            v = sim_xrealloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
        exp_store_run *r = &v[k++];
        *r = (exp_store_run){.point = sqlite3_column_int64(st, 0),
                             .point_label = exp__store_col_dup(st, 1),
                             .policy = exp__store_col_dup(st, 2),
                             .seed = sqlite3_column_int64(st, 3),
                             .rate_rps = sqlite3_column_double(st, 4),
                             .interrupted = strcmp(exp__store_col_str(st, 5), "interrupted") == 0,
                             .has_metrics = sqlite3_column_int(st, 6) != 0};
        for (size_t c = 0; c < EXP_STORE_RUN_COLS; c++)
            r->v[c] = c < n_cols ? exp__store_col_real(st, 7 + (int)c) : NAN;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        exp_store_runs_free(v, k);
        return exp__store_dberr(s, "cannot read the runs");
    }
    *runs = v;
    *n = k;
    return SIM_OK;
}

int exp_store_read_capacities(exp_store *s, int64_t exp_id, const char *slo_metric,
                              exp_capacity_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT point, point_label, policy, seed, slo_s, capacity_rps,"
                           " censoring, lowest_rps, highest_rps, n_loads FROM capacities"
                           " WHERE experiment_id = ? AND slo_metric = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the capacities");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_text(st, 2, slo_metric, -1, SQLITE_STATIC);
    size_t cap = 0;
    int step, rc = SIM_OK;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap)
            *rows = sim_xrealloc(*rows, (cap = cap ? 2 * cap : 64) * sizeof **rows);
        exp_capacity_row *w = &(*rows)[(*n)++];
        *w = (exp_capacity_row){.point = sqlite3_column_int64(st, 0),
                                .point_label = exp__store_col_dup(st, 1),
                                .policy = exp__store_col_dup(st, 2),
                                .seed = sqlite3_column_int64(st, 3),
                                .slo_s = sqlite3_column_double(st, 4)};
        w->cap.capacity_rps = exp__store_col_real(st, 5);
        w->cap.lowest_rps = sqlite3_column_double(st, 7);
        w->cap.highest_rps = sqlite3_column_double(st, 8);
        w->cap.n_loads = (size_t)sqlite3_column_int64(st, 9);
        rc = exp_censoring_parse(exp__store_col_str(st, 6), &w->cap.censoring);
        if (rc) {
            char *why = sim_xstrdup(sim_errmsg()); /* SIM_ERROR overwrites it */
            rc = SIM_ERROR(SIM_EINVAL, "%s: capacities table: %s", s->path, why);
            free(why);
            break;
        }
    }
    if (rc == SIM_OK && step != SQLITE_DONE)
        rc = exp__store_dberr(s, "cannot read the capacities");
    sqlite3_finalize(st);
    if (rc) {
        exp_capacity_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
    }
    return rc;
}

/* The complete runs of one (point, policy, seed), in run order. */
typedef struct group {
    int64_t point, seed;
    const char *label, *policy;  /* point into the runs array */
    double *loads, *metric;
    size_t n, cap;
} group;

/* Group the complete runs by (point, policy, seed), in run order; each
 * run's value is v[0], or with n_terms > 0 the joint ratio max over k of
 * v[k] / bounds[k] (NaN if any is NaN: fails; capacity.h). */
static void build_groups(const exp_store_run *runs, size_t n_runs, const double *bounds,
                         size_t n_terms, group **out, size_t *n_out)
{
    group *g = NULL;
    size_t n_g = 0, cap_g = 0;
    /* Grouping by linear search is O(runs × groups); a sweep has at most a
     * few thousand runs, so a hash table is not worth its code. */
    for (size_t i = 0; i < n_runs; i++) {
        const exp_store_run *r = &runs[i];
        if (r->interrupted)
            continue;
        group *gr = NULL;
        for (size_t j = 0; j < n_g && !gr; j++)
            if (g[j].point == r->point && g[j].seed == r->seed &&
                strcmp(g[j].policy, r->policy) == 0)
                gr = &g[j];
        if (!gr) {
            if (n_g == cap_g)
                g = sim_xrealloc(g, (cap_g = cap_g ? 2 * cap_g : 16) * sizeof *g);
            gr = &g[n_g++];
            *gr = (group){.point = r->point, .seed = r->seed, .policy = r->policy,
                          .label = r->point_label};
        }
        if (gr->n == gr->cap) {
            gr->cap = gr->cap ? 2 * gr->cap : 8;
            gr->loads = sim_xrealloc(gr->loads, gr->cap * sizeof *gr->loads);
            gr->metric = sim_xrealloc(gr->metric, gr->cap * sizeof *gr->metric);
        }
        double x = r->v[0]; /* NAN without a metrics row: fails */
        if (n_terms > 0) {
            x = -INFINITY;
            for (size_t k = 0; k < n_terms; k++) {
                const double q = r->v[k] / bounds[k];
                x = isnan(q) || isnan(x) ? NAN : q > x ? q : x;
            }
        }
        gr->loads[gr->n] = r->rate_rps;
        gr->metric[gr->n] = x;
        gr->n++;
    }
    *out = g;
    *n_out = n_g;
}

int exp_store_capacity_rows(exp_store *s, int64_t exp_id, exp_capacity_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    char *metric = NULL, *slos_text = NULL;
    double *slos = NULL;
    size_t n_slos = 0, n_runs = 0, n_g = 0, n_out = 0;
    exp_store_run *runs = NULL;
    group *g = NULL;
    exp_capacity_row *out = NULL;

    int rc = exp__store_slo_settings(s, exp_id, &metric, &slos_text);
    if (rc == SIM_OK)
        rc = exp_capacity_parse_slos(slos_text, &slos, &n_slos);
    if (rc == SIM_OK)
        rc = exp_capacity_check_metric(metric);
    if (rc == SIM_OK)
        rc = exp_store_read_runs(s, exp_id, (const char *const *)&metric, 1, &runs, &n_runs);
    if (rc)
        goto done;
    build_groups(runs, n_runs, NULL, 0, &g, &n_g);
    out = sim_xcalloc(n_g * n_slos + 1, sizeof *out);
    for (size_t i = 0; i < n_g && rc == SIM_OK; i++) {
        for (size_t k = 0; k < n_slos; k++) {
            exp_capacity c;
            rc = exp_capacity_compute(g[i].loads, g[i].metric, g[i].n, slos[k], &c);
            if (rc) {
                /* Copy first: sim_errmsg() is the buffer SIM_ERROR writes to. */
                char *why = sim_xstrdup(sim_errmsg());
                rc = SIM_ERROR(SIM_EINVAL, "experiment %lld, point %lld, policy %s, seed %lld: "
                               "%s", (long long)exp_id, (long long)g[i].point, g[i].policy,
                               (long long)g[i].seed, why);
                free(why);
                break;
            }
            out[n_out++] = (exp_capacity_row){
                .point = g[i].point, .point_label = sim_xstrdup(g[i].label),
                .policy = sim_xstrdup(g[i].policy), .seed = g[i].seed, .slo_s = slos[k],
                .cap = c};
        }
    }
done:
    for (size_t i = 0; i < n_g; i++) {
        free(g[i].loads);
        free(g[i].metric);
    }
    free(g);
    exp_store_runs_free(runs, n_runs);
    free(slos);
    free(slos_text);
    free(metric);
    if (rc) {
        exp_capacity_rows_free(out, n_out);
        return rc;
    }
    *rows = out;
    *n = n_out;
    return SIM_OK;
}

int exp_store_joint_capacity_rows(exp_store *s, int64_t exp_id, char **joint,
                                  exp_capacity_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    *joint = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT joint_slo FROM experiments WHERE id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the experiment");
    sqlite3_bind_int64(st, 1, exp_id);
    int step = sqlite3_step(st);
    char *text = step == SQLITE_ROW ? exp__store_col_dup(st, 0) : NULL;
    sqlite3_finalize(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return exp__store_dberr(s, "cannot read the experiment");
    if (!text || !text[0]) {
        free(text);
        return SIM_OK;
    }
    /* Terms joined by " and " (sim/exp/exp.c). */
    char names[EXP_STORE_RUN_COLS][EXP_JOINT_METRIC_MAX];
    const char *cols[EXP_STORE_RUN_COLS];
    double bounds[EXP_STORE_RUN_COLS];
    size_t n_terms = 0;
    int rc = SIM_OK;
    char *copy = sim_xstrdup(text), *p = copy;
    while (rc == SIM_OK && p) {
        char *and = strstr(p, " and ");
        if (and)
            *and = '\0';
        if (n_terms == EXP_STORE_RUN_COLS)
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment %lld: joint SLO '%s' has more than %d "
                           "terms", s->path, (long long)exp_id, text, EXP_STORE_RUN_COLS);
        else if (exp_joint_parse(p, names[n_terms], &bounds[n_terms]) != SIM_OK) {
            char *why = sim_xstrdup(sim_errmsg());
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment %lld: joint SLO: %s", s->path,
                           (long long)exp_id, why);
            free(why);
        } else {
            cols[n_terms] = names[n_terms];
            n_terms++;
        }
        p = and ? and + 5 : NULL;
    }
    free(copy);
    exp_store_run *runs = NULL;
    size_t n_runs = 0, n_g = 0, n_out = 0;
    group *g = NULL;
    exp_capacity_row *out = NULL;
    if (rc == SIM_OK)
        rc = exp_store_read_runs(s, exp_id, cols, n_terms, &runs, &n_runs);
    if (rc == SIM_OK) {
        build_groups(runs, n_runs, bounds, n_terms, &g, &n_g);
        out = sim_xcalloc(n_g + 1, sizeof *out);
    }
    for (size_t i = 0; i < n_g && rc == SIM_OK; i++) {
        exp_capacity c;
        rc = exp_capacity_compute(g[i].loads, g[i].metric, g[i].n, 1.0, &c);
        if (rc)
            break;
        out[n_out++] = (exp_capacity_row){
            .point = g[i].point, .point_label = sim_xstrdup(g[i].label),
            .policy = sim_xstrdup(g[i].policy), .seed = g[i].seed, .slo_s = 1.0, .cap = c};
    }
    for (size_t i = 0; i < n_g; i++) {
        free(g[i].loads);
        free(g[i].metric);
    }
    free(g);
    exp_store_runs_free(runs, n_runs);
    if (rc) {
        exp_capacity_rows_free(out, n_out);
        free(text);
        return rc;
    }
    *rows = out;
    *n = n_out;
    *joint = text;
    return SIM_OK;
}

void exp_store_policy_means_free(exp_store_policy_mean *m, size_t n)
{
    if (!m)
        return;
    for (size_t i = 0; i < n; i++)
        free(m[i].policy);
    free(m);
}

int exp_store_policy_means(exp_store *s, int64_t exp_id, const char *column, double rate_rps,
                           exp_store_policy_mean **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int rc = check_column(column);
    if (rc)
        return rc;
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT r.policy, avg(m.%s) FROM runs r JOIN run_metrics m ON "
             "m.run_id = r.id WHERE r.experiment_id = ? AND r.rate_rps = ? GROUP BY r.policy",
             column);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the runs");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_double(st, 2, rate_rps);
    exp_store_policy_mean *v = NULL;
    size_t k = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        v = sim_xrealloc(v, (k + 1) * sizeof *v);
        v[k++] = (exp_store_policy_mean){.policy = exp__store_col_dup(st, 0),
                                         .mean = sqlite3_column_double(st, 1)};
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        exp_store_policy_means_free(v, k);
        return exp__store_dberr(s, "cannot read the runs");
    }
    *out = v;
    *n = k;
    return SIM_OK;
}

void exp_store_timeline_free(exp_store_tl_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++) {
        free(rows[i].point_label);
        free(rows[i].policy);
        free(rows[i].faults_events);
    }
    free(rows);
}

/* The flow list of "faults:\n  events: [...]" in a stored config text
 * (the canonical dump, sim/core/config.c), or "" when absent. */
static char *faults_events_of(const char *text)
{
    const char *l = strstr(text, "\nfaults:\n");
    if (!l)
        return sim_xstrdup("");
    /* The section's lines are indented by two blanks. */
    for (l += strlen("\nfaults:\n"); l[0] == ' ' && l[1] == ' '; l += strcspn(l, "\n") + 1) {
        static const char key[] = "  events: ";
        if (strncmp(l, key, sizeof key - 1) == 0) {
            l += sizeof key - 1;
            size_t len = strcspn(l, "\n");
            char *v = sim_xmalloc(len + 1);
            memcpy(v, l, len);
            v[len] = '\0';
            return v;
        }
        if (!l[strcspn(l, "\n")])
            break;
    }
    return sim_xstrdup("");
}

int exp__store_has_table(exp_store *s, const char *table, bool *found)
{
    sqlite3_stmt *st = NULL;
    *found = false;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                           "AND name = ?1 AND name NOT LIKE 'sqlite_%'", -1, &st,
                           NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot list the tables");
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return exp__store_dberr(s, "cannot list the tables");
    }
    *found = sqlite3_column_int64(st, 0) > 0;
    sqlite3_finalize(st);
    return SIM_OK;
}

int exp_store_read_timeline(exp_store *s, int64_t exp_id, double rate_rps,
                            exp_store_tl_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    /* A database made by hand (or by tests) may lack the table: no rows. */
    bool has_table;
    const int rc_table = exp__store_has_table(s, "timeline", &has_table);
    if (rc_table != SIM_OK || !has_table)
        return rc_table;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT r.point, r.point_label, r.policy, r.seed, t.idx, t.t0_s,"
                           " t.arrivals, t.hit_rate, t.ttft_p99, r.config_text, r.id"
                           " FROM timeline t JOIN runs r ON r.id = t.run_id"
                           " WHERE r.experiment_id = ? AND r.rate_rps = ?"
                           " AND r.status = 'complete'"
                           " ORDER BY r.point, r.run_index, r.id, t.idx",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the timeline");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_double(st, 2, rate_rps);
    exp_store_tl_row *v = NULL;
    size_t k = 0, cap = 0;
    int64_t last_run = -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap)
            v = sim_xrealloc(v, (cap = cap ? 2 * cap : 256) * sizeof *v);
        const int64_t run = sqlite3_column_int64(st, 10);
        v[k] = (exp_store_tl_row){.point = sqlite3_column_int64(st, 0),
                                  .point_label = exp__store_col_dup(st, 1),
                                  .policy = exp__store_col_dup(st, 2),
                                  .seed = sqlite3_column_int64(st, 3),
                                  .idx = sqlite3_column_int64(st, 4),
                                  .t0_s = sqlite3_column_double(st, 5),
                                  .arrivals = sqlite3_column_int64(st, 6),
                                  .hit_rate = exp__store_col_real(st, 7),
                                  .ttft_p99 = exp__store_col_real(st, 8)};
        /* The config text is parsed once per run. */
        v[k].faults_events = run == last_run ? sim_xstrdup(v[k - 1].faults_events)
                                             : faults_events_of(exp__store_col_str(st, 9));
        last_run = run;
        k++;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        exp_store_timeline_free(v, k);
        return exp__store_dberr(s, "cannot read the timeline");
    }
    *out = v;
    *n = k;
    return SIM_OK;
}

void exp_store_groups_free(exp_store_group_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].policy);
        free(rows[i].name);
    }
    free(rows);
}

int exp_store_read_groups(exp_store *s, int64_t exp_id, double rate_rps,
                          exp_store_group_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    /* A database made by hand (or by tests) may lack the table: no rows. */
    bool has_table;
    const int rc_table = exp__store_has_table(s, "group_metrics", &has_table);
    if (rc_table != SIM_OK || !has_table)
        return rc_table;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT r.point, r.policy, r.seed, g.grp, g.name, g.destinations,"
                           " g.requests, m.n_measured, g.hit_rate, g.ttft_p99, g.utilization"
                           " FROM group_metrics g JOIN runs r ON r.id = g.run_id"
                           " JOIN run_metrics m ON m.run_id = g.run_id"
                           " WHERE r.experiment_id = ? AND r.rate_rps = ?"
                           " AND r.status = 'complete'"
                           " ORDER BY r.point, (SELECT min(run_index) FROM runs q"
                           "  WHERE q.experiment_id = r.experiment_id AND q.policy = r.policy),"
                           " r.seed, g.grp",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the group metrics");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_double(st, 2, rate_rps);
    exp_store_group_row *v = NULL;
    size_t k = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap)
            v = sim_xrealloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
        v[k++] = (exp_store_group_row){.point = sqlite3_column_int64(st, 0),
                                       .policy = exp__store_col_dup(st, 1),
                                       .seed = sqlite3_column_int64(st, 2),
                                       .grp = sqlite3_column_int64(st, 3),
                                       .name = exp__store_col_dup(st, 4),
                                       .destinations = sqlite3_column_int64(st, 5),
                                       .requests = sqlite3_column_int64(st, 6),
                                       .n_measured = sqlite3_column_int64(st, 7),
                                       .hit_rate = exp__store_col_real(st, 8),
                                       .ttft_p99 = exp__store_col_real(st, 9),
                                       .utilization = exp__store_col_real(st, 10)};
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        exp_store_groups_free(v, k);
        return exp__store_dberr(s, "cannot read the group metrics");
    }
    *out = v;
    *n = k;
    return SIM_OK;
}

int exp_store_read_stages(exp_store *s, int64_t exp_id, exp_store_stage_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    bool has_table;
    const int rc_table = exp__store_has_table(s, "stage_metrics", &has_table);
    if (rc_table != SIM_OK || !has_table)
        return rc_table;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT r.point, r.policy, r.seed, r.rate_rps, c.mode, g.stage, g.load,"
                           " g.load_kind, g.start_s, g.end_s, g.sent, g.measured, g.completed,"
                           " c.abandoned, c.unsent, g.throughput_rps, g.output_tps, g.hit_rate,"
                           " g.ttft_mean, g.ttft_p50, g.ttft_p90, g.ttft_p99, g.tpot_mean,"
                           " g.tpot_p50, g.tpot_p90, g.tpot_p99, g.e2e_mean, g.e2e_p50,"
                           " g.e2e_p90, g.e2e_p99, g.ttft_p99_intended, g.e2e_p99_intended,"
                           " g.itl_mean, g.itl_p50, g.itl_p90, g.itl_p99"
                           " FROM stage_metrics g JOIN runs r ON r.id = g.run_id"
                           " JOIN client_runs c ON c.run_id = g.run_id"
                           " WHERE r.experiment_id = ? AND r.status = 'complete'"
                           " ORDER BY r.point, r.rate_rps, (SELECT min(run_index) FROM runs q"
                           "  WHERE q.experiment_id = r.experiment_id AND q.policy = r.policy),"
                           " r.seed, g.stage",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the stage metrics");
    sqlite3_bind_int64(st, 1, exp_id);
    exp_store_stage_row *v = NULL;
    size_t k = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap)
            v = sim_xrealloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
        int c = 0;
        exp_store_stage_row *w = &v[k++];
        w->point = sqlite3_column_int64(st, c++);
        w->policy = exp__store_col_dup(st, c++);
        w->seed = sqlite3_column_int64(st, c++);
        w->rate_rps = exp__store_col_real(st, c++);
        w->mode = exp__store_col_dup(st, c++);
        w->stage = sqlite3_column_int64(st, c++);
        w->load = exp__store_col_real(st, c++);
        w->load_kind = exp__store_col_dup(st, c++);
        w->start_s = exp__store_col_real(st, c++);
        w->end_s = exp__store_col_real(st, c++);
        w->sent = sqlite3_column_int64(st, c++);
        w->measured = sqlite3_column_int64(st, c++);
        w->completed = sqlite3_column_int64(st, c++);
        w->abandoned = sqlite3_column_int64(st, c++);
        w->unsent = sqlite3_column_int64(st, c++);
        w->throughput_rps = exp__store_col_real(st, c++);
        w->output_tps = exp__store_col_real(st, c++);
        w->hit_rate = exp__store_col_real(st, c++);
        double *const lat[] = {&w->ttft_mean, &w->ttft_p50, &w->ttft_p90, &w->ttft_p99,
                               &w->tpot_mean, &w->tpot_p50, &w->tpot_p90, &w->tpot_p99,
                               &w->e2e_mean,  &w->e2e_p50,  &w->e2e_p90,  &w->e2e_p99,
                               &w->ttft_p99_intended, &w->e2e_p99_intended,
                               &w->itl_mean,  &w->itl_p50,  &w->itl_p90,  &w->itl_p99};
        for (size_t j = 0; j < sizeof lat / sizeof lat[0]; j++)
            *lat[j] = exp__store_col_real(st, c++);
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        exp_store_stages_free(v, k);
        return exp__store_dberr(s, "cannot read the stage metrics");
    }
    *out = v;
    *n = k;
    return SIM_OK;
}

void exp_store_stages_free(exp_store_stage_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].policy);
        free(rows[i].mode);
        free(rows[i].load_kind);
    }
    free(rows);
}
