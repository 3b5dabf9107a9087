/*
 * SLO capacity and its censoring (DESIGN.md §8), per seed and across
 * seeds, and the capacities table of the result store.  The capacity is
 * read off the tested load grid only (no bisection): the highest load such
 * that the SLO holds at it and at every lower tested load, so a
 * non-monotone curve (pass, fail, pass) stops at the first failure.
 */
#include "sim/exp/capacity.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "sim/core/error.h"

typedef struct load_metric {
    double load;
    double metric;
} load_metric;

static int cmp_load(const void *a, const void *b)
{
    double x = ((const load_metric *)a)->load, y = ((const load_metric *)b)->load;
    return (x > y) - (x < y);
}

int exp_capacity_compute(const double *loads_rps, const double *metric_s, size_t n,
                         double slo_s, exp_capacity *out)
{
    if (n == 0)
        return SIM_ERROR(SIM_EINVAL, "SLO capacity: no tested loads");
    if (!(isfinite(slo_s) && slo_s > 0))
        return SIM_ERROR(SIM_EINVAL, "SLO capacity: threshold %g s; expected a finite number "
                         "of seconds > 0", slo_s);
    for (size_t i = 0; i < n; i++)
        if (!(isfinite(loads_rps[i]) && loads_rps[i] > 0))
            return SIM_ERROR(SIM_EINVAL, "SLO capacity: load %g requests/s; expected a finite "
                             "load > 0", loads_rps[i]);
    load_metric *lm = sim_xmalloc(n * sizeof *lm);
    for (size_t i = 0; i < n; i++)
        lm[i] = (load_metric){loads_rps[i], metric_s[i]};
    qsort(lm, n, sizeof *lm, cmp_load);
    for (size_t i = 1; i < n; i++) {
        if (lm[i].load == lm[i - 1].load) {
            double dup = lm[i].load;
            free(lm);
            return SIM_ERROR(SIM_EINVAL, "SLO capacity: load %g requests/s tested twice; "
                             "expected distinct loads", dup);
        }
    }
    /* Count the passing prefix.  `metric <= slo` is false for NaN and for
     * +Inf, so undefined and unfinished both fail. */
    size_t k = 0;
    while (k < n && lm[k].metric <= slo_s)
        k++;
    exp_capacity c = {.lowest_rps = lm[0].load, .highest_rps = lm[n - 1].load, .n_loads = n};
    if (k == 0) {
        c.censoring = EXP_CENS_LEFT;
        c.capacity_rps = NAN;
    } else if (k == n) {
        c.censoring = EXP_CENS_RIGHT;
        c.capacity_rps = lm[n - 1].load;
    } else {
        c.censoring = EXP_CENS_NONE;
        c.capacity_rps = lm[k - 1].load;
    }
    free(lm);
    *out = c;
    return SIM_OK;
}

void exp_capacity_aggregate(const exp_capacity *caps, size_t n, exp_capacity_agg *out)
{
    exp_capacity_agg a = {.n_seeds = n, .mean_rps = NAN, .sd_rps = NAN,
                          .left_bound = NAN, .right_bound = NAN};
    double *v = sim_xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        switch (caps[i].censoring) {
        case EXP_CENS_NONE:
            v[a.n_exact++] = caps[i].capacity_rps;
            break;
        case EXP_CENS_LEFT:
            a.n_left++;
            if (isnan(a.left_bound) || caps[i].lowest_rps > a.left_bound)
                a.left_bound = caps[i].lowest_rps;
            break;
        case EXP_CENS_RIGHT:
            a.n_right++;
            if (isnan(a.right_bound) || caps[i].highest_rps < a.right_bound)
                a.right_bound = caps[i].highest_rps;
            break;
        }
    }
    if (a.n_exact > 0)
        a.mean_rps = gsl_stats_mean(v, 1, a.n_exact);
    if (a.n_exact > 1)
        a.sd_rps = gsl_stats_sd_m(v, 1, a.n_exact, a.mean_rps);
    free(v);
    *out = a;
}

/* Decimals for a table value: integers from 10 up, else 1 or 2. */
static int decimals_for(double x)
{
    double ax = fabs(x);
    return ax >= 10 ? 0 : ax >= 1 ? 1 : 2;
}

size_t exp_capacity_format(const exp_capacity_agg *a, char *buf, size_t n)
{
    char val[96] = "", cens[64] = "";
    if (a->n_left && a->n_right)
        snprintf(cens, sizeof cens, " (L %zu/%zu, R %zu/%zu)", a->n_left, a->n_seeds,
                 a->n_right, a->n_seeds);
    else if (a->n_left)
        snprintf(cens, sizeof cens, " (L %zu/%zu)", a->n_left, a->n_seeds);
    else if (a->n_right)
        snprintf(cens, sizeof cens, " (R %zu/%zu)", a->n_right, a->n_seeds);

    if (a->n_seeds == 0) {
        snprintf(val, sizeof val, "-");
    } else if (a->n_exact == 1) {
        /* A single exact value is a tested load: print it as given. */
        snprintf(val, sizeof val, "%g", a->mean_rps);
    } else if (a->n_exact > 1) {
        int d = decimals_for(a->mean_rps);
        snprintf(val, sizeof val, "%.*f \u00b1 %.*f", d, a->mean_rps, d, a->sd_rps);
    } else if (a->n_left && a->n_right) {
        snprintf(val, sizeof val, "< %g / \u2265 %g", a->left_bound, a->right_bound);
    } else if (a->n_left) {
        snprintf(val, sizeof val, "< %g", a->left_bound);
    } else {
        snprintf(val, sizeof val, "\u2265 %g", a->right_bound);
    }
    int len = snprintf(buf, n, "%s%s", val, cens);
    return len < 0 ? 0 : (size_t)len;
}

const char *exp_censoring_name(exp_censoring c)
{
    switch (c) {
    case EXP_CENS_LEFT: return "left";
    case EXP_CENS_RIGHT: return "right";
    default: return "none";
    }
}

int exp_censoring_parse(const char *name, exp_censoring *out)
{
    if (strcmp(name, "none") == 0)
        *out = EXP_CENS_NONE;
    else if (strcmp(name, "left") == 0)
        *out = EXP_CENS_LEFT;
    else if (strcmp(name, "right") == 0)
        *out = EXP_CENS_RIGHT;
    else
        return SIM_ERROR(SIM_EINVAL, "censoring '%s'; expected none, left or right", name);
    return SIM_OK;
}

int exp_capacity_parse_slos(const char *text, double **slos, size_t *n)
{
    *slos = NULL;
    *n = 0;
    size_t cap = 4, k = 0;
    double *v = sim_xmalloc(cap * sizeof *v);
    const char *p = text ? text : "";
    for (;;) {
        char *end = NULL;
        double x = strtod(p, &end);
        if (end == p || !(isfinite(x) && x > 0))
            goto bad;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ',' && *p != '\0')
            goto bad;
        for (size_t i = 0; i < k; i++)
            if (v[i] == x)
                goto bad;
        if (k == cap)
            v = sim_xrealloc(v, (cap *= 2) * sizeof *v);
        v[k++] = x;
        if (*p == '\0')
            break;
        p++;
    }
    *slos = v;
    *n = k;
    return SIM_OK;
bad:
    free(v);
    return SIM_ERROR(SIM_EINVAL, "SLO thresholds '%s'; expected distinct comma-separated "
                     "seconds > 0, e.g. '2,3.5,5'", text ? text : "");
}

static const char *const slo_columns[] = {
    "ttft_p50", "ttft_p90", "ttft_p99", "ttft_mean", "tpot_p50", "tpot_p90",
    "tpot_p99", "e2e_p50", "e2e_p90", "e2e_p99", NULL,
};

int exp_capacity_check_metric(const char *column)
{
    for (size_t i = 0; slo_columns[i]; i++)
        if (column && strcmp(column, slo_columns[i]) == 0)
            return SIM_OK;
    return SIM_ERROR(SIM_EINVAL, "SLO metric '%s'; expected one of ttft_p50, ttft_p90, "
                     "ttft_p99, ttft_mean, tpot_p50, tpot_p90, tpot_p99, e2e_p50, e2e_p90, "
                     "e2e_p99", column ? column : "(null)");
}

/* The runs of one (point, policy, seed), in run order. */
typedef struct group {
    int64_t point, seed;
    char *label, *policy;
    double *loads, *metric;
    size_t n, cap;
} group;

static double column_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static const char *column_str(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? (const char *)s : "";
}

static int db_fail(sqlite3 *db, const char *what)
{
    return SIM_ERROR(SIM_EDB, "%s: %s: %s", sqlite3_db_filename(db, "main"), what,
                     sqlite3_errmsg(db));
}

void exp_capacity_rows_free(exp_capacity_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++) {
        free(rows[i].point_label);
        free(rows[i].policy);
    }
    free(rows);
}

int exp_capacity_collect(sqlite3 *db, int64_t experiment_id, exp_capacity_row **rows,
                         size_t *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    char *metric = NULL;
    double *slos = NULL;
    size_t n_slos = 0;
    group *g = NULL;
    size_t n_g = 0, cap_g = 0;
    exp_capacity_row *out = NULL;
    size_t n_out = 0;
    int rc = SIM_OK;

    if (sqlite3_prepare_v2(db, "SELECT slo_metric, slos FROM experiments WHERE id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return db_fail(db, "cannot read the experiment");
    sqlite3_bind_int64(st, 1, experiment_id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        metric = sim_xstrdup(column_str(st, 0));
        rc = exp_capacity_parse_slos(column_str(st, 1), &slos, &n_slos);
    } else if (step == SQLITE_DONE) {
        rc = SIM_ERROR(SIM_EINVAL, "experiment %lld does not exist", (long long)experiment_id);
    } else {
        rc = db_fail(db, "cannot read the experiment");
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SIM_OK)
        rc = exp_capacity_check_metric(metric);
    if (rc)
        goto done;

    /* The column name is pasted into the SQL, hence the whitelist above. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.point, r.point_label, r.policy, r.seed, r.rate_rps, m.%s"
             " FROM runs r LEFT JOIN run_metrics m ON m.run_id = r.id"
             " WHERE r.experiment_id = ? AND r.status <> 'interrupted'"
             " ORDER BY r.run_index, r.id", metric);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = db_fail(db, "cannot read the runs");
        goto done;
    }
    sqlite3_bind_int64(st, 1, experiment_id);
    /* Grouping by linear search is O(runs × groups); a sweep has at most a
     * few thousand runs, so a hash table is not worth its code. */
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t point = sqlite3_column_int64(st, 0), seed = sqlite3_column_int64(st, 3);
        const char *policy = column_str(st, 2);
        group *gr = NULL;
        for (size_t i = 0; i < n_g && !gr; i++)
            if (g[i].point == point && g[i].seed == seed && strcmp(g[i].policy, policy) == 0)
                gr = &g[i];
        if (!gr) {
            if (n_g == cap_g)
                g = sim_xrealloc(g, (cap_g = cap_g ? 2 * cap_g : 16) * sizeof *g);
            gr = &g[n_g++];
            *gr = (group){.point = point, .seed = seed, .policy = sim_xstrdup(policy),
                          .label = sim_xstrdup(column_str(st, 1))};
        }
        if (gr->n == gr->cap) {
            gr->cap = gr->cap ? 2 * gr->cap : 8;
            gr->loads = sim_xrealloc(gr->loads, gr->cap * sizeof *gr->loads);
            gr->metric = sim_xrealloc(gr->metric, gr->cap * sizeof *gr->metric);
        }
        gr->loads[gr->n] = sqlite3_column_double(st, 4);
        gr->metric[gr->n] = column_real(st, 5);
        gr->n++;
    }
    if (step != SQLITE_DONE) {
        rc = db_fail(db, "cannot read the runs");
        goto done;
    }

    out = sim_xcalloc(n_g * n_slos + 1, sizeof *out);
    for (size_t i = 0; i < n_g && rc == SIM_OK; i++) {
        for (size_t s = 0; s < n_slos; s++) {
            exp_capacity c;
            rc = exp_capacity_compute(g[i].loads, g[i].metric, g[i].n, slos[s], &c);
            if (rc) {
                /* Copy first: sim_errmsg() is the buffer SIM_ERROR writes to. */
                char *why = sim_xstrdup(sim_errmsg());
                rc = SIM_ERROR(SIM_EINVAL, "experiment %lld, point %lld, policy %s, seed %lld: "
                               "%s", (long long)experiment_id, (long long)g[i].point,
                               g[i].policy, (long long)g[i].seed, why);
                free(why);
                break;
            }
            out[n_out++] = (exp_capacity_row){
                .point = g[i].point, .point_label = sim_xstrdup(g[i].label),
                .policy = sim_xstrdup(g[i].policy), .seed = g[i].seed, .slo_s = slos[s],
                .cap = c};
        }
    }

done:
    sqlite3_finalize(st);
    for (size_t i = 0; i < n_g; i++) {
        free(g[i].label);
        free(g[i].policy);
        free(g[i].loads);
        free(g[i].metric);
    }
    free(g);
    free(slos);
    free(metric);
    if (rc) {
        exp_capacity_rows_free(out, n_out);
        return rc;
    }
    *rows = out;
    *n = n_out;
    return SIM_OK;
}

int exp_capacity_store(sqlite3 *db, int64_t experiment_id)
{
    exp_capacity_row *rows = NULL;
    size_t n = 0;
    char *metric = NULL;
    sqlite3_stmt *st = NULL;
    /* Read the runs inside the write transaction, so the rows written match
     * the runs committed at that moment even with a concurrent writer. */
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(db, "cannot begin a transaction");
    int rc = exp_capacity_collect(db, experiment_id, &rows, &n);
    if (rc)
        goto fail;
    if (sqlite3_prepare_v2(db, "SELECT slo_metric FROM experiments WHERE id = ?", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = db_fail(db, "cannot read the experiment");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, experiment_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = db_fail(db, "cannot read the experiment");
        goto fail;
    }
    metric = sim_xstrdup(column_str(st, 0));
    sqlite3_finalize(st);
    st = NULL;

    if (sqlite3_prepare_v2(db, "DELETE FROM capacities WHERE experiment_id = ?", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = db_fail(db, "cannot prepare the capacities update");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, experiment_id);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = db_fail(db, "cannot delete old capacities");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;

    if (sqlite3_prepare_v2(db,
                           "INSERT INTO capacities(experiment_id, point, point_label, policy,"
                           " seed, slo_metric, slo_s, capacity_rps, censoring, lowest_rps,"
                           " highest_rps, n_loads) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = db_fail(db, "cannot prepare a capacities row");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const exp_capacity_row *r = &rows[i];
        sqlite3_bind_int64(st, 1, experiment_id);
        sqlite3_bind_int64(st, 2, r->point);
        sqlite3_bind_text(st, 3, r->point_label, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->policy, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->seed);
        sqlite3_bind_text(st, 6, metric, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 7, r->slo_s);
        if (r->cap.censoring == EXP_CENS_LEFT)
            sqlite3_bind_null(st, 8);
        else
            sqlite3_bind_double(st, 8, r->cap.capacity_rps);
        sqlite3_bind_text(st, 9, exp_censoring_name(r->cap.censoring), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 10, r->cap.lowest_rps);
        sqlite3_bind_double(st, 11, r->cap.highest_rps);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)r->cap.n_loads);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = db_fail(db, "cannot add a capacities row");
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_fail(db, "cannot commit the capacities");
        goto fail;
    }
    free(metric);
    exp_capacity_rows_free(rows, n);
    return SIM_OK;
fail:
    sqlite3_finalize(st);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    free(metric);
    exp_capacity_rows_free(rows, n);
    return rc;
}
