/*
 * `crsim report`: reads one experiment of a result database, groups its
 * runs by sweep point and policy, and prints the paper-style table per
 * point (docs/design.md §11–§12) as aligned text, Markdown or CSV.  Capacities
 * come from the capacities table when it is present and up to date, and
 * are otherwise computed from the runs with sim/capacity.c; the report
 * never writes to the database.  Partial results (a running, incomplete or
 * sharded experiment) are flagged in the output and on stderr.
 */
#include "sim/exp/report_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_statistics_double.h>

#include "sim/core/error.h"
#include "sim/exp/setup.h"
#include "sim/exp/store.h"

/* ---- small helpers ------------------------------------------------------ */

/* Loads are compared with a relative tolerance: they come back from SQLite
 * as the doubles written, but a --rate typed by hand may differ in the
 * last digit. */
static bool same_load(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Mean and sample sd (gsl_stats_mean / gsl_stats_sd) of the non-NaN
 * values; +Inf if any is +Inf. */
static void mean_sd(const double *x, size_t n, double *mean, double *sd, size_t *n_inf)
{
    size_t k = 0, inf = 0;
    double *v = sim_xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]))
            continue;
        if (isinf(x[i]))
            inf++;
        else
            v[k++] = x[i];
    }
    if (n_inf)
        *n_inf = inf;
    if (inf) {
        *mean = INFINITY;
        if (sd)
            *sd = NAN;
    } else {
        *mean = k ? gsl_stats_mean(v, 1, k) : NAN;
        if (sd)
            *sd = k >= 2 ? gsl_stats_sd(v, 1, k) : NAN;
    }
    free(v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---- opening and loading ------------------------------------------------ */

/* One complete run as read. */
typedef struct run_rec {
    int64_t point, seed;
    const char *label, *policy;  /* point into the statement-independent copies */
    double rate, hit, p99, slo, imb;
    double too_long, f_worst, f_spread, f_jain; /* run_metrics n_too_long, fair_* */
    double failed, retries;                     /* n_failed, n_retries (faults) */
} run_rec;

void exp__report_free(exp__report *r)
{
    if (!r)
        return;
    for (size_t p = 0; p < r->n_points; p++) {
        exp__rep_point *pt = &r->points[p];
        for (size_t c = 0; c < pt->n_cells; c++) {
            free(pt->cells[c].policy);
            free(pt->cells[c].loads);
            free(pt->cells[c].caps);
        }
        free(pt->cells);
        free(pt->label);
    }
    free(r->points);
    free(r->name);
    free(r->status);
    free(r->shard);
    free(r->build);
    free(r->host);
    free(r->started_at);
    free(r->finished_at);
    free(r->slo_metric);
    free(r->p99_metric);
    free(r->slos);
    free(r->loads);
    free(r->seeds);
    exp_store_groups_free(r->groups, r->n_groups);
    exp_store_stages_free(r->stages, r->n_stages);
    exp_capacity_rows_free(r->cap_rows, r->n_cap_rows);
    free(r->calib);
    free(r->joint);
    free(r);
}

static int load_experiment(exp_store *db, int64_t id, exp__report *r)
{
    exp_store_experiment e;
    int rc = exp_store_read_experiment(db, id, &e);
    if (rc)
        return rc;
    /* The strings move into the report. */
    r->id = e.id;
    r->name = e.name;
    r->status = e.status;
    r->shard = e.shard;
    r->build = e.build;
    r->host = e.host;
    r->started_at = e.started_at;
    r->finished_at = e.finished_at;
    r->slo_metric = e.slo_metric;
    r->stored_rate_rps = e.report_rate_rps;
    r->n_runs_planned = e.n_runs_planned;
    r->n_points_planned = e.n_points;
    r->calib = exp_setup_calib_notes(e.config_text ? e.config_text : "");
    r->load_unit = exp_setup_load_unit(e.config_text ? e.config_text : "");
    free(e.config_text);
    rc = exp_capacity_parse_slos(e.slos, &r->slos, &r->n_slos);
    free(e.slos);
    if (rc == SIM_OK)
        rc = exp_capacity_check_metric(r->slo_metric);
    if (rc == SIM_OK) {
        /* The p99 column of the SLO metric's family (ttft_p90 -> ttft_p99). */
        const char *us = strchr(r->slo_metric, '_');
        size_t fam = us ? (size_t)(us - r->slo_metric) : strlen(r->slo_metric);
        r->p99_metric = sim_xmalloc(fam + 5);
        memcpy(r->p99_metric, r->slo_metric, fam);
        memcpy(r->p99_metric + fam, "_p99", 5);
    }
    return rc;
}

/* Add `x` to a sorted set of doubles / int64s (small: linear). */
static void add_load(double **v, size_t *n, double x)
{
    for (size_t i = 0; i < *n; i++)
        if (same_load((*v)[i], x))
            return;
    *v = sim_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = x;
}

static void add_seed(int64_t **v, size_t *n, int64_t x)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == x)
            return;
    *v = sim_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = x;
}

/* Intern a string in a growing pool (labels and policy names repeat). */
typedef struct strpool {
    char **s;
    size_t n;
} strpool;

static const char *intern(strpool *p, const char *s)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->s[i], s) == 0)
            return p->s[i];
    p->s = sim_xrealloc(p->s, (p->n + 1) * sizeof *p->s);
    return p->s[p->n++] = sim_xstrdup(s);
}

static void strpool_free(strpool *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->s[i]);
    free(p->s);
}

/* Fill one cell's per-load statistics from the runs of its (point, policy). */
static void fill_cell(exp__rep_cell *c, const run_rec *runs, size_t n_runs, int64_t point,
                      const char *policy)
{
    double *loads = NULL, *hit = sim_xmalloc((n_runs + 1) * sizeof *hit);
    double *p99 = sim_xmalloc((n_runs + 1) * sizeof *p99);
    double *slo = sim_xmalloc((n_runs + 1) * sizeof *slo);
    double *imb = sim_xmalloc((n_runs + 1) * sizeof *imb);
    double *tl = sim_xmalloc((n_runs + 1) * sizeof *tl);
    double *fw = sim_xmalloc((n_runs + 1) * sizeof *fw);
    double *fs = sim_xmalloc((n_runs + 1) * sizeof *fs);
    double *fj = sim_xmalloc((n_runs + 1) * sizeof *fj);
    double *fl = sim_xmalloc((n_runs + 1) * sizeof *fl);
    double *rt = sim_xmalloc((n_runs + 1) * sizeof *rt);
    int64_t *seeds = NULL;
    size_t n_loads = 0, n_seeds = 0;
    for (size_t i = 0; i < n_runs; i++) {
        if (runs[i].point != point || runs[i].policy != policy)
            continue;
        add_load(&loads, &n_loads, runs[i].rate);
        add_seed(&seeds, &n_seeds, runs[i].seed);
    }
    if (n_loads)
        qsort(loads, n_loads, sizeof *loads, cmp_double);
    c->n_seeds = n_seeds;
    c->n_loads = n_loads;
    c->loads = sim_xcalloc(n_loads + 1, sizeof *c->loads);
    for (size_t l = 0; l < n_loads; l++) {
        size_t k = 0;
        for (size_t i = 0; i < n_runs; i++) {
            if (runs[i].point != point || runs[i].policy != policy ||
                !same_load(runs[i].rate, loads[l]))
                continue;
            hit[k] = runs[i].hit;
            p99[k] = runs[i].p99;
            slo[k] = runs[i].slo;
            imb[k] = runs[i].imb;
            tl[k] = runs[i].too_long;
            fw[k] = runs[i].f_worst;
            fs[k] = runs[i].f_spread;
            fj[k] = runs[i].f_jain;
            fl[k] = runs[i].failed;
            rt[k] = runs[i].retries;
            k++;
        }
        exp__rep_load *e = &c->loads[l];
        e->load_rps = loads[l];
        e->n = k;
        e->seeds_identical = k >= 2;
        for (size_t j = 1; j < k && e->seeds_identical; j++)
            e->seeds_identical = memcmp(&hit[j], &hit[0], sizeof *hit) == 0 &&
                                 memcmp(&p99[j], &p99[0], sizeof *p99) == 0 &&
                                 memcmp(&slo[j], &slo[0], sizeof *slo) == 0 &&
                                 memcmp(&imb[j], &imb[0], sizeof *imb) == 0;
        mean_sd(hit, k, &e->hit_mean, &e->hit_sd, NULL);
        mean_sd(p99, k, &e->p99_mean, NULL, NULL);
        mean_sd(slo, k, &e->slo_mean, NULL, &e->slo_n_inf);
        mean_sd(imb, k, &e->imb_mean, &e->imb_sd, NULL);
        mean_sd(tl, k, &e->too_long_mean, NULL, NULL);
        mean_sd(fw, k, &e->fair_worst_mean, NULL, NULL);
        mean_sd(fs, k, &e->fair_spread_mean, NULL, NULL);
        mean_sd(fj, k, &e->fair_jain_mean, NULL, NULL);
        mean_sd(fl, k, &e->failed_mean, NULL, NULL);
        mean_sd(rt, k, &e->retries_mean, NULL, NULL);
    }
    free(tl);
    free(fw);
    free(fs);
    free(fj);
    free(fl);
    free(rt);
    free(loads);
    free(seeds);
    free(hit);
    free(p99);
    free(slo);
    free(imb);
}

int exp__report_load(exp_store *db, int64_t id, double rate_rps, exp__report **out)
{
    *out = NULL;
    exp__report *r = sim_xcalloc(1, sizeof *r);
    run_rec *runs = NULL;
    size_t n_runs = 0, cap_runs = 0;
    strpool pool = {0};
    exp_store_run *stored = NULL;
    size_t n_stored = 0;
    exp_capacity_row *caps = NULL;
    size_t n_caps = 0;
    exp_capacity *tmp = NULL;

    int rc = load_experiment(db, id, r);
    if (rc)
        goto done;

    const char *cols[] = {"hit_rate", r->p99_metric, r->slo_metric, "imbalance_work",
                          "n_completed", "n_rejected", "n_too_long", "fair_worst_p99",
                          "fair_spread_p99", "fair_jain", "n_failed", "n_retries"};
    if ((rc = exp_store_read_runs(db, r->id, cols, 12, &stored, &n_stored)))
        goto done;
    for (size_t i = 0; i < n_stored; i++) {
        const exp_store_run *sr = &stored[i];
        if (sr->interrupted) {
            r->n_interrupted++;
            continue;
        }
        if (n_runs == cap_runs)
            runs = sim_xrealloc(runs, (cap_runs = cap_runs ? 2 * cap_runs : 64) * sizeof *runs);
        bool has_m = sr->has_metrics;
        /* A run that served nothing (every request rejected: prompts
         * longer than a destination's KV pool) has no latencies to
         * report: counted and named, not shown as a normal result. */
        if (has_m && sr->v[4] == 0 && sr->v[5] + sr->v[6] > 0)
            r->n_served_nothing++;
        runs[n_runs++] = (run_rec){
            .point = sr->point, .seed = sr->seed,
            .label = intern(&pool, sr->point_label), .policy = intern(&pool, sr->policy),
            .rate = sr->rate_rps,
            /* A run without a metrics row is counted as unfinished. */
            .hit = has_m ? sr->v[0] : NAN, .p99 = has_m ? sr->v[1] : INFINITY,
            .slo = has_m ? sr->v[2] : INFINITY, .imb = has_m ? sr->v[3] : NAN,
            .too_long = has_m ? sr->v[6] : NAN, .f_worst = has_m ? sr->v[7] : NAN,
            .f_spread = has_m ? sr->v[8] : NAN, .f_jain = has_m ? sr->v[9] : NAN,
            .failed = has_m ? sr->v[10] : NAN, .retries = has_m ? sr->v[11] : NAN};
        if (has_m && (sr->v[10] > 0 || sr->v[11] > 0))
            r->has_faults = true;
    }
    exp_store_runs_free(stored, n_stored);
    stored = NULL;
    n_stored = 0;
    r->n_runs = n_runs;

    for (size_t i = 0; i < n_runs; i++) {
        add_load(&r->loads, &r->n_loads, runs[i].rate);
        add_seed(&r->seeds, &r->n_seeds, runs[i].seed);
    }
    if (r->n_loads)
        qsort(r->loads, r->n_loads, sizeof *r->loads, cmp_double);
    if (r->n_seeds)
        qsort(r->seeds, r->n_seeds, sizeof *r->seeds, cmp_i64);

    /* The report rate. */
    if (rate_rps > 0) {
        size_t i = 0;
        while (i < r->n_loads && !same_load(r->loads[i], rate_rps))
            i++;
        if (i == r->n_loads) {
            char list[512] = "";
            size_t off = 0;
            for (size_t k = 0; k < r->n_loads && off < sizeof list - 32; k++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%g", k ? ", " : "",
                                        r->loads[k]);
            rc = SIM_ERROR(SIM_EINVAL, "--rate %g: not a tested load of experiment %lld; "
                           "expected one of: %s", rate_rps, (long long)r->id,
                           r->n_loads ? list : "(no runs)");
            goto done;
        }
        r->rate_rps = r->loads[i];
    } else {
        r->rate_rps = r->stored_rate_rps;
        bool tested = false;
        for (size_t i = 0; i < r->n_loads; i++)
            tested = tested || same_load(r->loads[i], r->stored_rate_rps);
        if (!tested && r->n_loads) {
            size_t best = 0;
            for (size_t i = 1; i < r->n_loads; i++)
                if (fabs(r->loads[i] - r->stored_rate_rps) <
                    fabs(r->loads[best] - r->stored_rate_rps))
                    best = i;
            r->rate_rps = r->loads[best];
            r->rate_fallback = true;
        }
    }

    /* Points in ascending order, cells (policies) in order of first run. */
    for (size_t i = 0; i < n_runs; i++) {
        exp__rep_point *pt = NULL;
        for (size_t p = 0; p < r->n_points && !pt; p++)
            if (r->points[p].point == runs[i].point)
                pt = &r->points[p];
        if (!pt) {
            r->points = sim_xrealloc(r->points, (r->n_points + 1) * sizeof *r->points);
            pt = &r->points[r->n_points++];
            *pt = (exp__rep_point){.point = runs[i].point, .label = sim_xstrdup(runs[i].label)};
        }
        bool seen = false;
        for (size_t c = 0; c < pt->n_cells && !seen; c++)
            seen = strcmp(pt->cells[c].policy, runs[i].policy) == 0;
        if (!seen) {
            pt->cells = sim_xrealloc(pt->cells, (pt->n_cells + 1) * sizeof *pt->cells);
            pt->cells[pt->n_cells++] = (exp__rep_cell){.policy = sim_xstrdup(runs[i].policy)};
        }
    }
    /* Insertion sort by point index: few points. */
    for (size_t p = 1; p < r->n_points; p++)
        for (size_t q = p; q > 0 && r->points[q - 1].point > r->points[q].point; q--) {
            exp__rep_point t = r->points[q - 1];
            r->points[q - 1] = r->points[q];
            r->points[q] = t;
        }

    size_t n_groups = 0;
    for (size_t p = 0; p < r->n_points; p++) {
        exp__rep_point *pt = &r->points[p];
        for (size_t c = 0; c < pt->n_cells; c++) {
            exp__rep_cell *cell = &pt->cells[c];
            fill_cell(cell, runs, n_runs, pt->point, intern(&pool, cell->policy));
            n_groups += cell->n_seeds;
            for (size_t l = 0; l < cell->n_loads; l++)
                if (same_load(cell->loads[l].load_rps, r->rate_rps))
                    cell->at_rate = &cell->loads[l];
        }
    }

    /* Capacities: the stored table when it matches the runs, else computed. */
    rc = exp_store_read_capacities(db, r->id, r->slo_metric, &caps, &n_caps);
    if (rc)
        goto done;
    r->caps_source = 1;
    if (n_caps != n_groups * r->n_slos) {
        r->caps_source = n_caps ? 2 : 0;
        exp_capacity_rows_free(caps, n_caps);
        caps = NULL;
        n_caps = 0;
        rc = exp_store_capacity_rows(db, r->id, &caps, &n_caps);
        if (rc)
            goto done;
    }
    tmp = sim_xmalloc((n_caps + 1) * sizeof *tmp);
    for (size_t p = 0; p < r->n_points; p++) {
        exp__rep_point *pt = &r->points[p];
        for (size_t c = 0; c < pt->n_cells; c++) {
            exp__rep_cell *cell = &pt->cells[c];
            cell->caps = sim_xcalloc(r->n_slos + 1, sizeof *cell->caps);
            for (size_t s = 0; s < r->n_slos; s++) {
                size_t k = 0;
                for (size_t i = 0; i < n_caps; i++)
                    if (caps[i].point == pt->point && strcmp(caps[i].policy, cell->policy) == 0 &&
                        same_load(caps[i].slo_s, r->slos[s]))
                        tmp[k++] = caps[i].cap;
                exp_capacity_aggregate(tmp, k, &cell->caps[s]);
            }
        }
    }
    /* Seeds that did not vary the stream (docs/report.md, "Identical
     * seeds"): counted, and when every multi-seed load is so, the
     * capacities show one value, not "± 0". */
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++) {
            const exp__rep_cell *cell = &r->points[p].cells[c];
            for (size_t l = 0; l < cell->n_loads; l++)
                if (cell->loads[l].n >= 2) {
                    r->n_seed_loads++;
                    r->n_seed_identical += cell->loads[l].seeds_identical;
                }
        }
    if (r->n_seed_loads && r->n_seed_identical == r->n_seed_loads)
        for (size_t p = 0; p < r->n_points; p++)
            for (size_t c = 0; c < r->points[p].n_cells; c++)
                for (size_t s = 0; s < r->n_slos; s++)
                    r->points[p].cells[c].caps[s].sd_rps = NAN;

    /* Serving metrics at the report rate and the joint SLO's capacity. */
    if ((rc = exp__report_serving_load(db, r)))
        goto done;
    /* Per destination group (mixed fleets) at the report rate. */
    rc = exp_store_read_groups(db, r->id, r->rate_rps, &r->groups, &r->n_groups);
    /* Closed-loop clients: stage rows, and the per-seed capacities. */
    if (rc == SIM_OK)
        rc = exp_store_read_stages(db, r->id, &r->stages, &r->n_stages);
    if (rc == SIM_OK && r->n_stages) {
        r->cap_rows = caps;
        r->n_cap_rows = n_caps;
        caps = NULL;
        n_caps = 0;
    }

done:
    exp_store_runs_free(stored, n_stored);
    free(tmp);
    exp_capacity_rows_free(caps, n_caps);
    free(runs);
    strpool_free(&pool);
    if (rc) {
        exp__report_free(r);
        return rc;
    }
    *out = r;
    return SIM_OK;
}

void exp__report_warn(const exp__report *r)
{
    if (strcmp(r->status, "complete") != 0)
        fprintf(stderr, "crsim: warning: experiment %lld ('%s') has status '%s': PARTIAL "
                "results (%zu of %lld planned runs stored)\n", (long long)r->id, r->name,
                r->status, r->n_runs, (long long)r->n_runs_planned);
    if (r->shard[0])
        fprintf(stderr, "crsim: warning: experiment %lld is shard %s: PARTIAL results (only "
                "this shard's runs)\n", (long long)r->id, r->shard);
    if (r->n_interrupted)
        fprintf(stderr, "crsim: warning: %zu interrupted run(s) ignored\n", r->n_interrupted);
    if (r->n_served_nothing)
        fprintf(stderr, "crsim: warning: %zu run(s) served nothing: every request was rejected "
                "(over engine.max_model_len, or longer than a destination's KV pool)\n",
                r->n_served_nothing);
    if (r->rate_fallback)
        fprintf(stderr, "crsim: warning: report rate %g %s was not tested; using the "
                "nearest tested load %g\n", r->stored_rate_rps, r->load_unit, r->rate_rps);
}

/* ---- formatting --------------------------------------------------------- */

enum fmt { FMT_TEXT, FMT_MARKDOWN, FMT_CSV };

/* Display width of a UTF-8 string (code points; our symbols are 1 wide). */
static size_t utf8_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static void fmt_hit(const exp__rep_load *e, char *buf, size_t n)
{
    if (!e || isnan(e->hit_mean))
        snprintf(buf, n, "-");
    else if (isnan(e->hit_sd) || e->seeds_identical) /* identical seeds: no spread */
        snprintf(buf, n, "%.1f %%", 100 * e->hit_mean);
    else
        snprintf(buf, n, "%.1f \u00b1 %.1f %%", 100 * e->hit_mean, 100 * e->hit_sd);
}

static void fmt_seconds(double x, char *buf, size_t n)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else if (isinf(x))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%.*f s", x < 10 ? 2 : 1, x);
}

static void fmt_imb(const exp__rep_load *e, char *buf, size_t n)
{
    if (!e || isnan(e->imb_mean))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2f", e->imb_mean);
}

/* A table of strings: row 0 is the header. */
typedef struct table {
    size_t rows, cols;
    char **cell;
} table;

static void table_set(table *t, size_t r, size_t c, const char *s)
{
    free(t->cell[r * t->cols + c]);
    t->cell[r * t->cols + c] = sim_xstrdup(s);
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->rows * t->cols; i++)
        free(t->cell[i]);
    free(t->cell);
}

static void table_print(const table *t, enum fmt f, FILE *out)
{
    size_t *w = sim_xcalloc(t->cols, sizeof *w);
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->cols; c++) {
            size_t x = utf8_width(t->cell[r * t->cols + c]);
            if (x > w[c])
                w[c] = x;
        }
    for (size_t r = 0; r < t->rows; r++) {
        if (f == FMT_MARKDOWN)
            fputs("|", out);
        for (size_t c = 0; c < t->cols; c++) {
            const char *s = t->cell[r * t->cols + c];
            size_t pad = w[c] - utf8_width(s);
            /* Policy names left, numbers right (Markdown aligns by the rule). */
            bool right = c > 0 && r > 0 && f == FMT_TEXT;
            if (f == FMT_MARKDOWN)
                fputs(" ", out);
            else if (c > 0)
                fputs("  ", out);
            if (right)
                fprintf(out, "%*s", (int)pad, "");
            fputs(s, out);
            if (!right && (f == FMT_MARKDOWN || c + 1 < t->cols))
                fprintf(out, "%*s", (int)pad, "");
            if (f == FMT_MARKDOWN)
                fputs(" |", out);
        }
        fputs("\n", out);
        if (r == 0) {
            if (f == FMT_MARKDOWN) {
                fputs("|", out);
                for (size_t c = 0; c < t->cols; c++) {
                    fputs(c ? " " : " :", out);
                    for (size_t k = 0; k + 1 < w[c]; k++)
                        fputs("-", out);
                    fputs(c ? ": |" : " |", out);
                }
                fputs("\n", out);
            } else {
                size_t total = 0;
                for (size_t c = 0; c < t->cols; c++)
                    total += w[c] + (c ? 2 : 0);
                for (size_t k = 0; k < total; k++)
                    fputs("-", out);
                fputs("\n", out);
            }
        }
    }
    free(w);
}

static void list_loads(const double *v, size_t n, FILE *out)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%g", i ? ", " : "", v[i]);
}

static void print_header(const exp__report *r, enum fmt f, FILE *out)
{
    const char *b = f == FMT_MARKDOWN ? "- " : "  ";
    if (f == FMT_MARKDOWN)
        fprintf(out, "# crsim report: %s (experiment %lld)\n\n", r->name, (long long)r->id);
    else
        fprintf(out, "crsim report: experiment '%s' (id %lld), status %s\n", r->name,
                (long long)r->id, r->status);
    if (f == FMT_MARKDOWN)
        fprintf(out, "%sstatus: %s%s%s\n", b, r->status, r->shard[0] ? ", shard " : "",
                r->shard);
    else if (r->shard[0])
        fprintf(out, "%sshard %s\n", b, r->shard);
    fprintf(out, "%sbuild %s, host %s, started %s, finished %s\n", b, r->build,
            r->host[0] ? r->host : "?", r->started_at, r->finished_at[0] ? r->finished_at : "-");
    fprintf(out, "%sruns: %zu stored of %lld planned", b, r->n_runs,
            (long long)r->n_runs_planned);
    if (r->n_interrupted)
        fprintf(out, " (%zu interrupted, ignored)", r->n_interrupted);
    fprintf(out, "; %zu point(s)\n", r->n_points);
    if (r->n_served_nothing)
        fprintf(out, "%sWARNING: %zu run(s) served nothing: every request was rejected "
                "(over engine.max_model_len, or longer than a destination's KV pool); their "
                "latencies are undefined and they fail every SLO\n", b, r->n_served_nothing);
    if (r->n_seed_loads && r->n_seed_identical == r->n_seed_loads)
        fprintf(out, "%sNOTE: the seeds gave identical streams: every (policy, load) has the "
                "same results bit for bit under each seed (the request stream does not depend "
                "on the seed, e.g. a trace replayed without arrival jitter); the figures are "
                "one run each, with no spread over seeds\n", b);
    else if (r->n_seed_identical)
        fprintf(out, "%snote: at %zu of %zu (policy, load)s the seeds gave identical results; "
                "no spread is shown there\n", b, r->n_seed_identical, r->n_seed_loads);
    fprintf(out, "%sseeds: ", b);
    for (size_t i = 0; i < r->n_seeds; i++)
        fprintf(out, "%s%lld", i ? ", " : "", (long long)r->seeds[i]);
    fprintf(out, " (%zu)\n%sloads: ", r->n_seeds, b);
    list_loads(r->loads, r->n_loads, out);
    fprintf(out, " %s\n%sSLO: %s <= ", r->load_unit, b, r->slo_metric);
    for (size_t i = 0; i < r->n_slos; i++)
        fprintf(out, "%s%g", i ? " / " : "", r->slos[i]);
    fprintf(out, " s; report rate %g %s", r->rate_rps, r->load_unit);
    if (r->rate_fallback)
        fprintf(out, " (stored rate %g was not tested: nearest tested load)", r->stored_rate_rps);
    fprintf(out, "\n%scapacities: %s\n", b,
            r->caps_source == 1 ? "from the capacities table"
            : r->caps_source == 2 ? "recomputed from the runs (capacities table out of date)"
                                  : "computed from the runs (no capacities rows)");
    if (r->n_stages && strcmp(r->stages[0].mode, "stages") == 0)
        fprintf(out, "%sNOTE: a stage ladder: the loads above multiply every stage's rate and "
                "concurrency, so the main table's capacity is over those multipliers; the "
                "ladder's own capacity (the highest stage holding the SLO) is in the stage "
                "capacity table below\n", b);
    for (const char *l = r->calib ? r->calib : ""; *l;) { /* transferred cost factors */
        const char *nl = strchr(l, '\n');
        size_t k = nl ? (size_t)(nl - l) : strlen(l);
        fprintf(out, "%s%.*s\n", b, (int)k, l);
        l += k + (nl != NULL);
    }
    bool partial = strcmp(r->status, "complete") != 0 || r->shard[0];
    if (partial) {
        if (f == FMT_MARKDOWN)
            fprintf(out, "\n> **WARNING: PARTIAL RESULTS** — ");
        else
            fprintf(out, "\n!! WARNING: PARTIAL RESULTS — ");
        if (strcmp(r->status, "complete") != 0)
            fprintf(out, "experiment status is '%s' (%zu of %lld planned runs stored)%s",
                    r->status, r->n_runs, (long long)r->n_runs_planned, r->shard[0] ? "; " : "");
        if (r->shard[0])
            fprintf(out, "this is shard %s only", r->shard);
        fprintf(out, "\n");
    }
    fprintf(out, "\n");
}

static void print_legend(const exp__report *r, enum fmt f, FILE *out)
{
    fprintf(out, "%sKV hit: served token-weighted hit rate at %g %s, mean \u00b1 sd "
            "over seeds.\n", f == FMT_MARKDOWN ? "\n" : "", r->rate_rps, r->load_unit);
    fprintf(out, "cap \u2264T: SLO capacity in %s (highest tested load up to which "
            "%s \u2264 T s at every tested load), mean \u00b1 sd over exact seeds; "
            "\u2265 X (R k/n): k of n seeds pass at every tested load (right-censored); "
            "< X (L k/n): k seeds fail at the lowest load (left-censored).\n", r->load_unit,
            r->slo_metric);
    fprintf(out, "%s: mean over seeds at %g %s (inf: a seed had unfinished requests). "
            "imbalance: max/mean served work over destinations.\n", r->p99_metric, r->rate_rps,
            r->load_unit);
    fprintf(out, "tenants: routing keys with at least experiment.fair_min_requests measured "
            "requests; worst p99 = the largest per-key p99 TTFT, spread = p99 of the per-key "
            "p99s, Jain = Jain's index of per-key mean TTFT (1 = equal), means over seeds. "
            "too long: requests over engine.max_model_len, rejected at the gateway (not in "
            "any percentile), mean over seeds.\n");
    fprintf(out, "serving metrics (second table) at %g %s, means over seeds, s: TTFT, "
            "TPOT = (E2E - TTFT)/(output - 1), ITL = gap between consecutive output tokens "
            "(every gap pooled, as vLLM bench serve), E2E; req/s and out tok/s: completed "
            "measured requests and their output tokens per second after warm-up", r->rate_rps,
            r->load_unit);
    if (r->has_goodput)
        fprintf(out, "; goodput: those within both experiment.goodput_ttft_s and "
                "goodput_tpot_s per second (DistServe)");
    if (r->joint)
        fprintf(out, "; cap joint SLO: SLO capacity with every term of '%s' holding at once",
                r->joint);
    fprintf(out, ".\n");
    if (r->n_groups)
        fprintf(out, "destination groups (mixed fleet): served = share of the run's measured "
                "requests the group's destinations served; KV hit and ttft_p99 over those "
                "requests; utilisation = busy fraction of its destinations after warm-up; "
                "means over seeds.\n");
}

/* A count (mean over seeds): integral when it is, "-" when undefined. */
static void fmt_count(double x, char *buf, size_t n)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else if (x == floor(x))
        snprintf(buf, n, "%.0f", x);
    else
        snprintf(buf, n, "%.1f", x);
}

/* Mean over seeds of the group rows of (point, policy, grp): share of
 * measured requests, hit rate, p99 TTFT, utilisation. */
static void group_means(const exp__report *r, int64_t point, const char *policy, int64_t grp,
                        double m[4], const exp_store_group_row **first)
{
    double *x[4];
    for (int j = 0; j < 4; j++)
        x[j] = sim_xmalloc((r->n_groups ? r->n_groups : 1) * sizeof *x[j]);
    size_t k = 0;
    *first = NULL;
    for (size_t i = 0; i < r->n_groups; i++) {
        const exp_store_group_row *g = &r->groups[i];
        if (g->point != point || g->grp != grp || strcmp(g->policy, policy) != 0)
            continue;
        if (!*first)
            *first = g;
        x[0][k] = g->n_measured > 0 ? (double)g->requests / (double)g->n_measured : NAN;
        x[1][k] = g->hit_rate;
        x[2][k] = g->ttft_p99;
        x[3][k] = g->utilization;
        k++;
    }
    for (int j = 0; j < 4; j++) {
        mean_sd(x[j], k, &m[j], NULL, NULL);
        free(x[j]);
    }
}

static void fmt_pct(double x, char *buf, size_t n)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f %%", 100 * x);
}

/* Mixed fleets: one row per (policy, destination group) of point pt,
 * means over seeds at the report rate (docs/report.md, "Groups"). */
static void print_groups(const exp__report *r, const exp__rep_point *pt, enum fmt f, FILE *out)
{
    int64_t max_grp = -1;
    for (size_t i = 0; i < r->n_groups; i++)
        if (r->groups[i].point == pt->point && r->groups[i].grp > max_grp)
            max_grp = r->groups[i].grp;
    if (max_grp < 0)
        return;
    if (f == FMT_MARKDOWN)
        fprintf(out, "### destination groups @%g\n\n", r->rate_rps);
    else
        fprintf(out, "destination groups @%g\n", r->rate_rps);
    table t = {.rows = 1 + pt->n_cells * (size_t)(max_grp + 1), .cols = 7};
    t.cell = sim_xcalloc(t.rows * t.cols, sizeof *t.cell);
    static const char *const head[7] = {"policy", "group", "destinations", "served",
                                        "KV hit", "ttft_p99", "utilisation"};
    for (size_t c = 0; c < 7; c++)
        table_set(&t, 0, c, head[c]);
    char buf[160];
    size_t row = 1;
    for (size_t c = 0; c < pt->n_cells; c++)
        for (int64_t g = 0; g <= max_grp; g++) {
            double m[4];
            const exp_store_group_row *first;
            group_means(r, pt->point, pt->cells[c].policy, g, m, &first);
            if (!first)
                continue;
            table_set(&t, row, 0, pt->cells[c].policy);
            table_set(&t, row, 1, first->name);
            snprintf(buf, sizeof buf, "%lld", (long long)first->destinations);
            table_set(&t, row, 2, buf);
            fmt_pct(m[0], buf, sizeof buf);
            table_set(&t, row, 3, buf);
            fmt_pct(m[1], buf, sizeof buf);
            table_set(&t, row, 4, buf);
            fmt_seconds(m[2], buf, sizeof buf);
            table_set(&t, row, 5, buf);
            fmt_pct(m[3], buf, sizeof buf);
            table_set(&t, row, 6, buf);
            row++;
        }
    t.rows = row;
    table_print(&t, f, out);
    table_free(&t);
    fprintf(out, "\n");
}

/* Seconds with 3 significant digits, "-" when undefined, "inf". */
static void fmt_sig(double x, char *buf, size_t n)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else if (isinf(x))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%.3g", x);
}

/* The serving-metrics table of one point at the report rate
 * (docs/report.md, "Serving metrics"). */
static void print_serving(const exp__report *r, const exp__rep_point *pt, enum fmt f, FILE *out)
{
    static const char *const head[] = {"TTFT mean/p50/p90/p99", "TPOT mean/p50/p90/p99",
                                       "ITL mean/p50/p90/p99", "E2E mean/p50/p90/p99"};
    const bool joint = r->joint != NULL;
    const size_t cols = 1 + 4 + 2 + (r->has_goodput ? 1 : 0) + (joint ? 1 : 0);
    table t = {.rows = pt->n_cells + 1, .cols = cols};
    t.cell = sim_xcalloc(t.rows * t.cols, sizeof *t.cell);
    char buf[200];
    snprintf(buf, sizeof buf, "policy @%g", r->rate_rps);
    table_set(&t, 0, 0, buf);
    for (size_t k = 0; k < 4; k++)
        table_set(&t, 0, 1 + k, head[k]);
    table_set(&t, 0, 5, "req/s");
    table_set(&t, 0, 6, "out tok/s");
    if (r->has_goodput)
        table_set(&t, 0, 7, "goodput req/s");
    if (joint)
        table_set(&t, 0, cols - 1, "cap joint SLO");
    for (size_t c = 0; c < pt->n_cells; c++) {
        const exp__rep_cell *cell = &pt->cells[c];
        table_set(&t, c + 1, 0, cell->policy);
        for (size_t k = 0; k < 4; k++) {
            char v[4][32];
            for (size_t q = 0; q < 4; q++)
                fmt_sig(cell->serving[4 * k + q], v[q], sizeof v[q]);
            snprintf(buf, sizeof buf, "%s / %s / %s / %s", v[0], v[1], v[2], v[3]);
            table_set(&t, c + 1, 1 + k, buf);
        }
        fmt_sig(cell->serving[16], buf, sizeof buf);
        table_set(&t, c + 1, 5, buf);
        fmt_sig(cell->serving[17], buf, sizeof buf);
        table_set(&t, c + 1, 6, buf);
        if (r->has_goodput) {
            fmt_sig(cell->serving[18], buf, sizeof buf);
            table_set(&t, c + 1, 7, buf);
        }
        if (joint) {
            exp_capacity_agg a = cell->joint;
            if (r->n_seed_loads && r->n_seed_identical == r->n_seed_loads)
                a.sd_rps = NAN; /* identical seeds: one value */
            exp_capacity_format(&a, buf, sizeof buf);
            table_set(&t, c + 1, cols - 1, buf);
        }
    }
    table_print(&t, f, out);
    table_free(&t);
    fprintf(out, "\n");
}

static void print_tables(const exp__report *r, enum fmt f, FILE *out)
{
    print_header(r, f, out);
    size_t cols = 8 + r->n_slos + (r->has_faults ? 2 : 0);
    char buf[160];
    for (size_t p = 0; p < r->n_points; p++) {
        const exp__rep_point *pt = &r->points[p];
        const char *title = pt->label[0] ? pt->label : r->name;
        if (f == FMT_MARKDOWN)
            fprintf(out, "## %s (point %lld)\n\n", title, (long long)pt->point);
        else
            fprintf(out, "%s (point %lld)\n", title, (long long)pt->point);
        table t = {.rows = pt->n_cells + 1, .cols = cols};
        t.cell = sim_xcalloc(t.rows * t.cols, sizeof *t.cell);
        table_set(&t, 0, 0, "policy");
        snprintf(buf, sizeof buf, "KV hit @%g", r->rate_rps);
        table_set(&t, 0, 1, buf);
        for (size_t s = 0; s < r->n_slos; s++) {
            snprintf(buf, sizeof buf, "cap \u2264%g s", r->slos[s]);
            table_set(&t, 0, 2 + s, buf);
        }
        snprintf(buf, sizeof buf, "%s @%g", r->p99_metric, r->rate_rps);
        table_set(&t, 0, 2 + r->n_slos, buf);
        snprintf(buf, sizeof buf, "imbalance @%g", r->rate_rps);
        table_set(&t, 0, 3 + r->n_slos, buf);
        table_set(&t, 0, 4 + r->n_slos, "tenant worst p99");
        table_set(&t, 0, 5 + r->n_slos, "tenant p99 spread");
        table_set(&t, 0, 6 + r->n_slos, "Jain");
        table_set(&t, 0, 7 + r->n_slos, "too long");
        if (r->has_faults) {
            table_set(&t, 0, 8 + r->n_slos, "failed");
            table_set(&t, 0, 9 + r->n_slos, "retries");
        }
        for (size_t c = 0; c < pt->n_cells; c++) {
            const exp__rep_cell *cell = &pt->cells[c];
            table_set(&t, c + 1, 0, cell->policy);
            fmt_hit(cell->at_rate, buf, sizeof buf);
            table_set(&t, c + 1, 1, buf);
            for (size_t s = 0; s < r->n_slos; s++) {
                exp_capacity_format(&cell->caps[s], buf, sizeof buf);
                table_set(&t, c + 1, 2 + s, buf);
            }
            fmt_seconds(cell->at_rate ? cell->at_rate->p99_mean : NAN, buf, sizeof buf);
            table_set(&t, c + 1, 2 + r->n_slos, buf);
            fmt_imb(cell->at_rate, buf, sizeof buf);
            table_set(&t, c + 1, 3 + r->n_slos, buf);
            const exp__rep_load *e = cell->at_rate;
            fmt_seconds(e ? e->fair_worst_mean : NAN, buf, sizeof buf);
            table_set(&t, c + 1, 4 + r->n_slos, buf);
            fmt_seconds(e ? e->fair_spread_mean : NAN, buf, sizeof buf);
            table_set(&t, c + 1, 5 + r->n_slos, buf);
            if (e && !isnan(e->fair_jain_mean))
                snprintf(buf, sizeof buf, "%.3f", e->fair_jain_mean);
            else
                snprintf(buf, sizeof buf, "-");
            table_set(&t, c + 1, 6 + r->n_slos, buf);
            fmt_count(e ? e->too_long_mean : NAN, buf, sizeof buf);
            table_set(&t, c + 1, 7 + r->n_slos, buf);
            if (r->has_faults) { /* faults: failed for good, client retries */
                fmt_count(e ? e->failed_mean : NAN, buf, sizeof buf);
                table_set(&t, c + 1, 8 + r->n_slos, buf);
                fmt_count(e ? e->retries_mean : NAN, buf, sizeof buf);
                table_set(&t, c + 1, 9 + r->n_slos, buf);
            }
        }
        table_print(&t, f, out);
        table_free(&t);
        fprintf(out, "\n");
        print_serving(r, pt, f, out);
        print_groups(r, pt, f, out);
    }
    exp__report_print_clients(r, f == FMT_MARKDOWN, out);
    if (r->n_points == 0)
        fprintf(out, "(no complete runs stored)\n\n");
    print_legend(r, f, out);
}

/* CSV field: quoted when needed (RFC 4180). */
static void csv_str(const char *s, FILE *out)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* CSV number: empty when undefined, "inf" for +Inf, %.17g otherwise
 * (round-trips). */
static void csv_num(double x, FILE *out)
{
    fputc(',', out);
    if (isnan(x))
        return;
    if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", out);
    else
        fprintf(out, "%.10g", x);
}

static void print_csv(const exp__report *r, FILE *out)
{
    fputs("experiment_id,status,point,point_label,policy,n_seeds,rate_rps,lowest_rps,"
          "highest_rps,slo_metric,hit_mean,hit_sd,p99_metric,p99_mean,imbalance_mean,"
          "imbalance_sd", out);
    for (size_t s = 0; s < r->n_slos; s++)
        fprintf(out, ",cap_mean_%g,cap_sd_%g,n_exact_%g,n_left_%g,n_right_%g,cap_left_bound_%g,"
                "cap_right_bound_%g", r->slos[s], r->slos[s], r->slos[s], r->slos[s],
                r->slos[s], r->slos[s], r->slos[s]);
    fputs(",fair_worst_p99_mean,fair_spread_p99_mean,fair_jain_mean,too_long_mean,"
          "failed_mean,retries_mean", out);
    /* The serving metrics at the report rate and the joint SLO's capacity
     * (docs/report.md, "Serving metrics"), appended so the columns above
     * keep their places. */
    for (size_t k = 0; k < EXP_SERVING_COLS; k++)
        fprintf(out, ",%s", exp__serving_cols[k]);
    fputs(",joint_slo,joint_cap_mean,joint_cap_sd,joint_n_exact,joint_n_left,joint_n_right,"
          "joint_cap_left_bound,joint_cap_right_bound\n", out);
    for (size_t p = 0; p < r->n_points; p++) {
        const exp__rep_point *pt = &r->points[p];
        for (size_t c = 0; c < pt->n_cells; c++) {
            const exp__rep_cell *cell = &pt->cells[c];
            const exp__rep_load *e = cell->at_rate;
            fprintf(out, "%lld,", (long long)r->id);
            csv_str(r->status, out);
            fprintf(out, ",%lld,", (long long)pt->point);
            csv_str(pt->label, out);
            fputc(',', out);
            csv_str(cell->policy, out);
            fprintf(out, ",%zu", cell->n_seeds);
            csv_num(r->rate_rps, out);
            csv_num(cell->n_loads ? cell->loads[0].load_rps : NAN, out);
            csv_num(cell->n_loads ? cell->loads[cell->n_loads - 1].load_rps : NAN, out);
            fputc(',', out);
            csv_str(r->slo_metric, out);
            csv_num(e ? e->hit_mean : NAN, out);
            csv_num(e ? e->hit_sd : NAN, out);
            fputc(',', out);
            csv_str(r->p99_metric, out);
            csv_num(e ? e->p99_mean : NAN, out);
            csv_num(e ? e->imb_mean : NAN, out);
            csv_num(e ? e->imb_sd : NAN, out);
            for (size_t s = 0; s < r->n_slos; s++) {
                const exp_capacity_agg *a = &cell->caps[s];
                csv_num(a->mean_rps, out);
                csv_num(a->sd_rps, out);
                fprintf(out, ",%zu,%zu,%zu", a->n_exact, a->n_left, a->n_right);
                csv_num(a->left_bound, out);
                csv_num(a->right_bound, out);
            }
            csv_num(e ? e->fair_worst_mean : NAN, out);
            csv_num(e ? e->fair_spread_mean : NAN, out);
            csv_num(e ? e->fair_jain_mean : NAN, out);
            csv_num(e ? e->too_long_mean : NAN, out);
            csv_num(e ? e->failed_mean : NAN, out);  /* faults (docs/faults.md): 0 without */
            csv_num(e ? e->retries_mean : NAN, out);
            for (size_t k = 0; k < EXP_SERVING_COLS; k++)
                csv_num(cell->serving[k], out);
            fputc(',', out);
            if (r->joint) {
                const exp_capacity_agg *a = &cell->joint;
                csv_str(r->joint, out);
                csv_num(a->mean_rps, out);
                csv_num(a->sd_rps, out);
                fprintf(out, ",%zu,%zu,%zu", a->n_exact, a->n_left, a->n_right);
                csv_num(a->left_bound, out);
                csv_num(a->right_bound, out);
            } else {
                fputs(",,,,,,,", out);
            }
            fputs("\n", out);
        }
    }
}

/* The label of sweep point `point`, or "". */
static const char *point_label(const exp__report *r, int64_t point)
{
    for (size_t p = 0; p < r->n_points; p++)
        if (r->points[p].point == point)
            return r->points[p].label;
    return "";
}

/* --table stages: one row per stored stage of every complete run of a
 * closed-loop client (docs/report.md, "Clients"); the values as stored,
 * nothing averaged. */
static void print_stages_csv(const exp__report *r, FILE *out)
{
    fputs("experiment_id,point,point_label,policy,rate_rps,seed,mode,stage,load_kind,load,"
          "start_s,end_s,sent,measured,completed,throughput_rps,output_tps,hit_rate,"
          "ttft_mean,ttft_p50,ttft_p90,ttft_p99,tpot_mean,tpot_p50,tpot_p90,tpot_p99,"
          "e2e_mean,e2e_p50,e2e_p90,e2e_p99,itl_mean,itl_p50,itl_p90,itl_p99,"
          "ttft_p99_intended,e2e_p99_intended,"
          "run_abandoned,run_unsent\n", out);
    for (size_t i = 0; i < r->n_stages; i++) {
        const exp_store_stage_row *g = &r->stages[i];
        fprintf(out, "%lld,%lld,", (long long)r->id, (long long)g->point);
        csv_str(point_label(r, g->point), out);
        fputc(',', out);
        csv_str(g->policy, out);
        csv_num(g->rate_rps, out);
        fprintf(out, ",%lld,", (long long)g->seed);
        csv_str(g->mode, out);
        fprintf(out, ",%lld,", (long long)g->stage);
        csv_str(g->load_kind, out);
        csv_num(g->load, out);
        csv_num(g->start_s, out);
        csv_num(g->end_s, out);
        fprintf(out, ",%lld,%lld,%lld", (long long)g->sent, (long long)g->measured,
                (long long)g->completed);
        const double v[] = {g->throughput_rps, g->output_tps, g->hit_rate,
                            g->ttft_mean, g->ttft_p50, g->ttft_p90, g->ttft_p99,
                            g->tpot_mean, g->tpot_p50, g->tpot_p90, g->tpot_p99,
                            g->e2e_mean, g->e2e_p50, g->e2e_p90, g->e2e_p99,
                            g->itl_mean, g->itl_p50, g->itl_p90, g->itl_p99,
                            g->ttft_p99_intended, g->e2e_p99_intended};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            csv_num(v[k], out);
        fprintf(out, ",%lld,%lld\n", (long long)g->abandoned, (long long)g->unsent);
    }
}

/* ---- command line ------------------------------------------------------- */

int exp_report_main(const exp_cli_args *a)
{
    const char *path = a->pos[0], *out_path = exp_cli_str(a, "out", NULL);
    const char *fs = exp_cli_str(a, "format", "text");
    enum fmt f = strcmp(fs, "csv") == 0    ? FMT_CSV
                 : strcmp(fs, "text") == 0 ? FMT_TEXT
                                           : FMT_MARKDOWN; /* "markdown" or "md" */
    /* --table stages or capacities (indices 1, 2 of
     * "policies|stages|capacities"): CSV only, closed-loop clients. */
    const int64_t tbl = exp_cli_int(a, "table", 0);
    const bool stages = tbl > 0;
    const char *tname = tbl == 1 ? "stages" : "capacities";
    int rc;
    if (stages && f != FMT_CSV)
        return exp_cli_fail(SIM_ERROR(SIM_EINVAL, "--table %s needs --format csv (the "
                                      "text and markdown reports show the table under "
                                      "\"Clients\")", tname));
    exp__report *r = NULL;
    if ((rc = exp__report_read(path, exp_cli_int(a, "experiment", 0),
                               exp_cli_real(a, "rate", 0), &r)))
        return exp_cli_fail(rc);
    if (stages && r->n_stages == 0) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: --table %s: experiment %lld has no stage rows (no "
                       "complete run of a closed-loop client, workload.client.mode other than "
                       "open; docs/clients.md)", path, tname, (long long)r->id);
        exp__report_free(r);
        return exp_cli_fail(rc);
    }

    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "w"))) {
        rc = SIM_ERROR(SIM_EIO, "%s: cannot write: %s", out_path, strerror(errno));
        exp__report_free(r);
        return exp_cli_fail(rc);
    }
    exp__report_warn(r);
    if (tbl == 1)
        print_stages_csv(r, out);
    else if (tbl == 2)
        exp__report_print_client_caps_csv(r, out);
    else if (f == FMT_CSV)
        print_csv(r, out);
    else {
        print_tables(r, f, out);
        rc = exp__report_regime(path, r, f == FMT_MARKDOWN, out);
    }
    if (out != stdout) {
        if (fclose(out) != 0)
            rc = SIM_ERROR(SIM_EIO, "%s: cannot write: %s", out_path, strerror(errno));
    } else if (fflush(out) != 0) {
        rc = SIM_ERROR(SIM_EIO, "cannot write the report: %s", strerror(errno));
    }
    exp__report_free(r);
    return exp_cli_fail(rc);
}

int exp__report_read(const char *path, int64_t id, double rate_rps, exp__report **out)
{
    exp_store *db = NULL;
    int rc = exp_store_open_read(path, &db);
    if (rc == SIM_OK)
        rc = exp__report_load(db, id, rate_rps, out);
    exp_store_close(db);
    return rc;
}
