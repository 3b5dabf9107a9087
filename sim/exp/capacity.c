/*
 * SLO capacity and its censoring (docs/design.md §10), per seed and across
 * seeds.  Pure arithmetic: reading runs and writing the capacities table
 * is the result store's (exp_store_capacity_rows, exp_store_capacities).  The capacity is
 * read off the tested load grid only (no bisection): the highest load such
 * that the SLO holds at it and at every lower tested load, so a
 * non-monotone curve (pass, fail, pass) stops at the first failure.
 */
#include "sim/exp/capacity.h"

#include <ctype.h>
#include <errno.h>
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

const char *const exp_joint_metric_names[] = {
    "ttft_p50", "ttft_p90", "ttft_p99", "ttft_mean", "tpot_p50", "tpot_p90", "tpot_p99",
    "tpot_mean", "itl_p50", "itl_p90", "itl_p99", "itl_mean", "e2e_p50", "e2e_p90", "e2e_p99",
    "e2e_mean", NULL,
};

int exp_joint_parse(const char *term, char metric[EXP_JOINT_METRIC_MAX], double *bound_s)
{
    const char *le = term ? strstr(term, "<=") : NULL;
    size_t a = 0, b = le ? (size_t)(le - term) : 0;
    while (le && a < b && isspace((unsigned char)term[a]))
        a++;
    while (le && b > a && isspace((unsigned char)term[b - 1]))
        b--;
    if (!le || b == a || b - a >= EXP_JOINT_METRIC_MAX)
        return SIM_ERROR(SIM_EINVAL, "'%s'; expected METRIC<=SECONDS, e.g. 'ttft_p99<=2'",
                         term ? term : "");
    memcpy(metric, term + a, b - a);
    metric[b - a] = '\0';
    size_t i = 0;
    while (exp_joint_metric_names[i] && strcmp(exp_joint_metric_names[i], metric) != 0)
        i++;
    if (!exp_joint_metric_names[i])
        return SIM_ERROR(SIM_EINVAL, "unknown metric '%s' in '%s'; expected one of ttft_p50, "
                         "ttft_p90, ttft_p99, ttft_mean, tpot_p50, tpot_p90, tpot_p99, "
                         "tpot_mean, itl_p50, itl_p90, itl_p99, itl_mean, e2e_p50, e2e_p90, "
                         "e2e_p99, e2e_mean", metric, term);
    char *end = NULL;
    errno = 0;
    const double v = strtod(le + 2, &end);
    while (end && isspace((unsigned char)*end))
        end++;
    if (end == le + 2 || !end || *end || errno || !isfinite(v) || !(v > 0))
        return SIM_ERROR(SIM_EINVAL, "bound of '%s'; expected METRIC<=SECONDS with seconds "
                         "> 0, e.g. 'ttft_p99<=2'", term);
    *bound_s = v;
    return SIM_OK;
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
