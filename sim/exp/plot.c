/*
 * `crsim plot`: turns the report of one experiment (sim/report.c's loader)
 * into tab-separated data files and gnuplot figures.  All layout decisions
 * that need the data (bar positions, the ceiling where unfinished p99s are
 * drawn, log or linear y) are made here, so the gnuplot scripts stay
 * declarative and the data files are useful on their own.  gnuplot runs as
 * a child process without a shell; its absence is reported, not fatal to
 * the data files.
 */
#include "sim/exp/plot.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/core/datadir.h"
#include "models/routers/route.h"
#include "sim/core/error.h"
#include "sim/exp/report_int.h"

extern char **environ;

/* A growable string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        b->cap = 2 * (b->n + (size_t)k + 64);
        b->s = sim_xrealloc(b->s, b->cap);
    }
}

/* Append a gnuplot single-quoted string literal: the one way a string
 * from a database, a config or the command line reaches gnuplot.  Inside
 * single quotes gnuplot expands neither backquotes (shell commands) nor
 * `@` macros nor backslash escapes (gnuplot 5.4 documentation,
 * "Substitution"; issue 38 D2); a quote is doubled, and a control byte
 * (a newline would end the command) becomes '_'. */
static void sb_gpstr(sbuf *b, const char *s)
{
    sb_printf(b, "'");
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '\'')
            sb_printf(b, "''");
        else if (c < 0x20 || c == 0x7f)
            sb_printf(b, "_");
        else
            sb_printf(b, "%c", *s);
    }
    sb_printf(b, "'");
}

char *exp_plot_gpstr(const char *s)
{
    sbuf b = {0};
    sb_gpstr(&b, s);
    return b.s;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char *d = sim_xstrdup(path);
    int rc = SIM_OK;
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(d, 0777) != 0 && errno != EEXIST)
            rc = SIM_ERROR(SIM_EIO, "%s: cannot create folder: %s", d, strerror(errno));
        *p = c;
        if (rc || c == '\0')
            break;
    }
    free(d);
    return rc;
}

/* A file name part from an experiment name: [A-Za-z0-9._-], others '_'. */
static char *safe_name(const char *s)
{
    char *d = sim_xstrdup(s[0] ? s : "experiment");
    for (char *p = d; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            *p = '_';
    if (strcmp(d, ".") == 0 || strcmp(d, "..") == 0)
        d[0] = '_';
    return d;
}

/* Policy names go into a gnuplot word list inside a single-quoted
 * string (sb_gpstr): no blanks, quotes or control bytes. */
static void sb_word(sbuf *b, const char *s)
{
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        sb_printf(b, "%c", (c <= ' ' || c == 0x7f || c == '\'' || c == '"') ? '_' : *s);
    }
}

static void put_num(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, "\t%.10g", x);
    else
        fputs("\t?", f);
}

static FILE *open_data(const char *path, int *rc)
{
    FILE *f = fopen(path, "w");
    if (!f)
        *rc = SIM_ERROR(SIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

static int close_data(FILE *f, const char *path)
{
    if (fclose(f) != 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    return SIM_OK;
}

/*
 * capacity.tsv: one block (separated by two blank lines, gnuplot `index`)
 * per SLO threshold, one row per policy: bar x, exact mean, sd, height of
 * a hatched bar for all-right-censored (the bound), label y, label text.
 * Bars of one policy are grouped around x = policy index.
 */
static int write_capacity(const exp__report *r, const exp__rep_point *pt, const char *path,
                          double *ymax)
{
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    double top = 0;
    for (size_t c = 0; c < pt->n_cells; c++)
        for (size_t s = 0; s < r->n_slos; s++) {
            const exp_capacity_agg *a = &pt->cells[c].caps[s];
            double sd = isnan(a->sd_rps) ? 0 : a->sd_rps;
            if (a->n_exact)
                top = fmax(top, a->mean_rps + sd);
            if (a->n_right)
                top = fmax(top, a->right_bound);
            if (a->n_left)
                top = fmax(top, a->left_bound);
        }
    if (!(top > 0))
        top = r->n_loads ? r->loads[r->n_loads - 1] : 1;
    *ymax = top * 1.45;
    double bw = 0.8 / (double)(r->n_slos ? r->n_slos : 1);
    fprintf(f, "# crsim plot: SLO capacity (requests/s) of experiment %lld point %lld, "
            "metric %s\n", (long long)r->id, (long long)pt->point, r->slo_metric);
    fprintf(f, "# x\tmean_exact\tsd\tright_censored_bound\tlabel_y\tlabel\tpolicy\t"
            "n_exact\tn_left\tn_right\tslo_s\n");
    for (size_t s = 0; s < r->n_slos; s++) {
        if (s)
            fputs("\n\n", f);
        for (size_t c = 0; c < pt->n_cells; c++) {
            const exp_capacity_agg *a = &pt->cells[c].caps[s];
            double x = (double)c + ((double)s - ((double)r->n_slos - 1) / 2) * bw;
            double sd = isnan(a->sd_rps) ? 0 : a->sd_rps;
            double hatch = (a->n_exact == 0 && a->n_right) ? a->right_bound : NAN;
            char label[160] = "";
            double ly = NAN;
            if (a->n_left || a->n_right) {
                exp_capacity_format(a, label, sizeof label);
                ly = a->n_exact ? a->mean_rps + sd : isfinite(hatch) ? hatch : 0;
                ly += 0.02 * top;
            }
            fprintf(f, "%.6g", x);
            put_num(f, a->n_exact ? a->mean_rps : NAN);
            put_num(f, sd);
            put_num(f, hatch);
            put_num(f, ly);
            fprintf(f, "\t%s\t%s\t%zu\t%zu\t%zu\t%g\n", label[0] ? label : "?",
                    pt->cells[c].policy, a->n_exact, a->n_left, a->n_right, r->slos[s]);
        }
    }
    return close_data(f, path);
}

/*
 * p99.tsv: one block per policy, one row per tested load: load, the SLO
 * metric's mean over seeds with +Inf replaced by the ceiling, the point
 * size and type to draw it with (a large open circle at the ceiling for
 * +Inf), and the seeds counted.
 */
static int write_p99(const exp__report *r, const exp__rep_point *pt, const char *path,
                     double *ceiling, double *ymin, bool *logy, bool *any_inf)
{
    int rc = SIM_OK;
    *any_inf = false;
    double lo = INFINITY, hi = 0;
    for (size_t s = 0; s < r->n_slos; s++) {
        lo = fmin(lo, r->slos[s]);
        hi = fmax(hi, r->slos[s]);
    }
    for (size_t c = 0; c < pt->n_cells; c++)
        for (size_t l = 0; l < pt->cells[c].n_loads; l++) {
            double v = pt->cells[c].loads[l].slo_mean;
            *any_inf = *any_inf || isinf(v);
            if (isfinite(v) && v > 0) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
    if (!isfinite(lo) || !(hi > 0)) {
        lo = 0.1;
        hi = 1;
    }
    /* Log scale when the finite values span more than a factor 30. */
    *logy = hi / lo > 30;
    *ceiling = *logy ? hi * 3 : hi * 1.2;
    *ymin = *logy ? lo / 1.5 : 0;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    fprintf(f, "# crsim plot: %s (s) against load (requests/s), mean over seeds, of "
            "experiment %lld point %lld; +Inf (unfinished requests) drawn at %.6g\n",
            r->slo_metric, (long long)r->id, (long long)pt->point, *ceiling);
    fprintf(f, "# load\tvalue\tpoint_size\tpoint_type\tn_seeds\tn_inf\tpolicy\n");
    for (size_t c = 0; c < pt->n_cells; c++) {
        if (c)
            fputs("\n\n", f);
        const exp__rep_cell *cell = &pt->cells[c];
        for (size_t l = 0; l < cell->n_loads; l++) {
            const exp__rep_load *e = &cell->loads[l];
            fprintf(f, "%.10g", e->load_rps);
            put_num(f, isinf(e->slo_mean) ? *ceiling : e->slo_mean);
            fprintf(f, "\t%s", isinf(e->slo_mean) ? "2.8\t6" : "1.2\t7");
            fprintf(f, "\t%zu\t%zu\t%s\n", e->n, e->slo_n_inf, cell->policy);
        }
        if (cell->n_loads == 0)
            fprintf(f, "?\t?\t1.2\t7\t0\t0\t%s\n", cell->policy);
    }
    return close_data(f, path);
}

/* hit.tsv: one row per policy: x, hit mean %, sd %, label. */
static int write_hit(const exp__report *r, const exp__rep_point *pt, const char *path)
{
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    fprintf(f, "# crsim plot: served token-weighted KV hit rate (%%) at %g requests/s, mean "
            "and sd over seeds, of experiment %lld point %lld\n", r->rate_rps,
            (long long)r->id, (long long)pt->point);
    fprintf(f, "# x\thit_mean_pct\thit_sd_pct\tlabel\tpolicy\n");
    for (size_t c = 0; c < pt->n_cells; c++) {
        const exp__rep_load *e = pt->cells[c].at_rate;
        double m = e ? 100 * e->hit_mean : NAN, sd = e ? 100 * e->hit_sd : NAN;
        fprintf(f, "%zu", c);
        put_num(f, m);
        put_num(f, isfinite(sd) ? sd : 0);
        if (isfinite(m) && isfinite(sd))
            fprintf(f, "\t%.1f \u00b1 %.1f %%", m, sd);
        else if (isfinite(m))
            fprintf(f, "\t%.1f %%", m);
        else
            fputs("\tn/a", f);
        fprintf(f, "\t%s\n", pt->cells[c].policy);
    }
    return close_data(f, path);
}

/* serving.tsv: one row per policy at the report rate: the serving
 * metrics of the report's second table (exp__serving_cols; means over
 * seeds; NaN as '?', +Inf as 'inf') and the joint SLO's capacity
 * string.  A data file only (no figure). */
static int write_serving(const exp__report *r, const exp__rep_point *pt, const char *path)
{
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    fprintf(f, "# crsim plot: serving metrics at %g requests/s, means over seeds, of "
            "experiment %lld point %lld (s; requests/s; tokens/s)\n# policy", r->rate_rps,
            (long long)r->id, (long long)pt->point);
    for (size_t k = 0; k < EXP_SERVING_COLS; k++)
        fprintf(f, "\t%s", exp__serving_cols[k]);
    fprintf(f, "\tjoint_capacity\n");
    for (size_t c = 0; c < pt->n_cells; c++) {
        const exp__rep_cell *cell = &pt->cells[c];
        fputs(cell->policy, f);
        for (size_t k = 0; k < EXP_SERVING_COLS; k++) {
            if (isinf(cell->serving[k]))
                fputs("\tinf", f);
            else
                put_num(f, cell->serving[k]);
        }
        char buf[160] = "-";
        if (r->joint)
            exp_capacity_format(&cell->joint, buf, sizeof buf);
        fprintf(f, "\t%s\n", buf);
    }
    return close_data(f, path);
}

/* ---- serving metrics against load, and per stage ---- */

/* Layout of the TTFT p99 panel of the serving figures, as write_p99: log y
 * when the finite values span more than a factor 30, +Inf drawn at a
 * ceiling above them. */
static void ttft_scale(const double *v, size_t n, double *ceiling, double *ymin, bool *logy,
                       bool *any_inf)
{
    double lo = INFINITY, hi = 0;
    *any_inf = false;
    for (size_t i = 0; i < n; i++) {
        *any_inf = *any_inf || isinf(v[i]);
        if (isfinite(v[i]) && v[i] > 0) {
            lo = fmin(lo, v[i]);
            hi = fmax(hi, v[i]);
        }
    }
    if (!isfinite(lo) || !(hi > 0)) {
        lo = 0.1;
        hi = 1;
    }
    *logy = hi / lo > 30;
    *ceiling = *logy ? hi * 3 : hi * 1.2;
    *ymin = *logy ? lo / 1.5 : 0;
}

/* One row of a serving figure's data: x, achieved requests/s, goodput,
 * TTFT p99 (+Inf drawn at the ceiling, as a large open circle). */
static void serving_row(FILE *f, double x, double tput, double good, double ttft,
                        double ceiling, size_t n)
{
    fprintf(f, "%.10g", x);
    put_num(f, tput);
    put_num(f, good);
    put_num(f, isinf(ttft) ? ceiling : ttft);
    fprintf(f, "\t%s\t%zu", isinf(ttft) ? "2.8\t6" : "1.2\t7", n);
}

static void put_val(FILE *f, double x)
{
    if (isinf(x))
        fputs(x > 0 ? "\tinf" : "\t-inf", f);
    else
        put_num(f, x);
}

/*
 * serving-load.tsv: one block per policy, one row per tested load: load,
 * achieved requests/s, goodput, TTFT p99 as drawn, point size and type,
 * seeds, policy, then every serving metric (exp__serving_cols, means over
 * seeds; '?' undefined, 'inf').  *tmax is the largest requests/s.
 */
static int write_serving_load(const exp__report *r, const exp__rep_point *pt,
                              const char *path, double *tmax, double *ceiling, double *ymin,
                              bool *logy, bool *any_inf)
{
    enum { TTFT_P99 = 3, TPUT = 16, GOOD = 18 };
    size_t n = 0;
    for (size_t c = 0; c < pt->n_cells; c++)
        n += pt->cells[c].n_loads;
    double *v = sim_xmalloc((n ? n : 1) * sizeof *v);
    size_t k = 0;
    *tmax = 0;
    for (size_t c = 0; c < pt->n_cells; c++)
        for (size_t l = 0; l < pt->cells[c].n_loads; l++) {
            const double *m = pt->cells[c].loads[l].serving;
            v[k++] = m[TTFT_P99];
            if (isfinite(m[TPUT]))
                *tmax = fmax(*tmax, m[TPUT]);
        }
    ttft_scale(v, k, ceiling, ymin, logy, any_inf);
    free(v);
    if (!(*tmax > 0))
        *tmax = 1;
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    fprintf(f, "# crsim plot: serving metrics against offered load, means over seeds, of "
            "experiment %lld point %lld (s; requests/s; tokens/s); ttft_p99 +Inf drawn at "
            "%.6g\n# load\tthroughput_rps\tgoodput_rps\tttft_p99_drawn\tpoint_size\t"
            "point_type\tn_seeds\tpolicy", (long long)r->id, (long long)pt->point, *ceiling);
    for (size_t j = 0; j < EXP_SERVING_COLS; j++)
        fprintf(f, "\t%s", exp__serving_cols[j]);
    fputc('\n', f);
    for (size_t c = 0; c < pt->n_cells; c++) {
        const exp__rep_cell *cell = &pt->cells[c];
        if (c)
            fputs("\n\n", f);
        for (size_t l = 0; l < cell->n_loads; l++) {
            const exp__rep_load *e = &cell->loads[l];
            serving_row(f, e->load_rps, e->serving[TPUT], e->serving[GOOD],
                        e->serving[TTFT_P99], *ceiling, e->n);
            fprintf(f, "\t%s", cell->policy);
            for (size_t j = 0; j < EXP_SERVING_COLS; j++)
                put_val(f, e->serving[j]);
            fputc('\n', f);
        }
        if (cell->n_loads == 0)
            fprintf(f, "?\t?\t?\t?\t1.2\t7\t0\t%s\n", cell->policy);
    }
    return close_data(f, path);
}

/* The stage rows of (point, policy) at the report rate, averaged over
 * seeds stage by stage: the mean of the finite values (+Inf if any seed
 * is +Inf, NaN if none). */
typedef struct stage_mean {
    int64_t stage;
    double load;
    double v[8]; /* throughput_rps, ttft_p99, tpot_p99, e2e_p99, ttft_p99_intended,
                    output_tps, hit_rate, itl_p99 */
    size_t n;
} stage_mean;

static size_t stage_means(const exp__report *r, int64_t point, const char *policy,
                          stage_mean **out)
{
    stage_mean *m = NULL;
    size_t n = 0;
    size_t (*cnt)[8] = NULL;
    for (size_t i = 0; i < r->n_stages; i++) {
        const exp_store_stage_row *g = &r->stages[i];
        if (g->point != point || strcmp(g->policy, policy) != 0 ||
            fabs(g->rate_rps - r->rate_rps) > 1e-9 * fmax(1.0, fabs(r->rate_rps)))
            continue;
        size_t j = 0;
        while (j < n && m[j].stage != g->stage)
            j++;
        if (j == n) {
            m = sim_xrealloc(m, (n + 1) * sizeof *m);
            cnt = sim_xrealloc(cnt, (n + 1) * sizeof *cnt);
            m[n] = (stage_mean){.stage = g->stage, .load = g->load};
            memset(cnt[n], 0, sizeof cnt[n]);
            n++;
        }
        const double x[8] = {g->throughput_rps, g->ttft_p99, g->tpot_p99, g->e2e_p99,
                             g->ttft_p99_intended, g->output_tps, g->hit_rate, g->itl_p99};
        for (size_t k = 0; k < 8; k++)
            if (!isnan(x[k])) {
                m[j].v[k] += x[k];
                cnt[j][k]++;
            }
        m[j].n++;
    }
    for (size_t j = 0; j < n; j++)
        for (size_t k = 0; k < 8; k++)
            m[j].v[k] = cnt[j][k] ? m[j].v[k] / (double)cnt[j][k] : NAN;
    free(cnt);
    *out = m;
    return n;
}

/*
 * stages.tsv (staged clients, workload.client.mode stages): one block per
 * policy, one row per stage of the runs at the report rate, means over
 * seeds: the stage's load, achieved requests/s, goodput ('?': not stored
 * per stage), TTFT p99 as drawn, point size and type, seeds, policy, then
 * stage, tpot_p99, e2e_p99, ttft_p99_intended, output_tps, hit_rate, itl_p99.
 */
static int write_stages(const exp__report *r, const exp__rep_point *pt, const char *path,
                        double *tmax, double *ceiling, double *ymin, bool *logy,
                        bool *any_inf)
{
    stage_mean **m = sim_xcalloc(pt->n_cells ? pt->n_cells : 1, sizeof *m);
    size_t *nm = sim_xcalloc(pt->n_cells ? pt->n_cells : 1, sizeof *nm), total = 0;
    for (size_t c = 0; c < pt->n_cells; c++)
        total += nm[c] = stage_means(r, pt->point, pt->cells[c].policy, &m[c]);
    double *v = sim_xmalloc((total ? total : 1) * sizeof *v);
    size_t k = 0;
    *tmax = 0;
    for (size_t c = 0; c < pt->n_cells; c++)
        for (size_t j = 0; j < nm[c]; j++) {
            v[k++] = m[c][j].v[1];
            if (isfinite(m[c][j].v[0]))
                *tmax = fmax(*tmax, m[c][j].v[0]);
        }
    ttft_scale(v, k, ceiling, ymin, logy, any_inf);
    free(v);
    if (!(*tmax > 0))
        *tmax = 1;
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (f) {
        fprintf(f, "# crsim plot: per-stage metrics at load %g, means over seeds, of experiment "
                "%lld point %lld (s; requests/s; tokens/s); ttft_p99 +Inf drawn at %.6g\n"
                "# stage_load\tthroughput_rps\tgoodput_rps\tttft_p99_drawn\tpoint_size\t"
                "point_type\tn_seeds\tpolicy\tstage\ttpot_p99\te2e_p99\tttft_p99_intended\t"
                "output_tps\thit_rate\titl_p99\n", r->rate_rps, (long long)r->id, (long long)pt->point,
                *ceiling);
        for (size_t c = 0; c < pt->n_cells; c++) {
            if (c)
                fputs("\n\n", f);
            for (size_t j = 0; j < nm[c]; j++) {
                const stage_mean *s = &m[c][j];
                serving_row(f, s->load, s->v[0], NAN, s->v[1], *ceiling, s->n);
                fprintf(f, "\t%s\t%lld", pt->cells[c].policy, (long long)s->stage);
                for (size_t q = 2; q < 8; q++)
                    put_val(f, s->v[q]);
                fputc('\n', f);
            }
            if (nm[c] == 0)
                fprintf(f, "?\t?\t?\t?\t1.2\t7\t0\t%s\n", pt->cells[c].policy);
        }
        rc = close_data(f, path);
    }
    for (size_t c = 0; c < pt->n_cells; c++)
        free(m[c]);
    free(m);
    free(nm);
    return rc;
}

/* ---- timeline (experiment.timeline_s) ---- */

/* One line of the timeline figure: a (point, policy) at the report rate,
 * averaged over seeds window by window. */
typedef struct tl_series {
    int64_t point;
    const char *policy, *label; /* point into the rows */
    double *hit, *p99;          /* sums, then means; n_win entries */
    size_t *n_hit, *n_p99, *n_inf;
    bool drop;                  /* equal to the same policy at an earlier point */
    char *title;
} tl_series;

/* A scheduled fault event of the stored faults.events ("T:KIND:DEST[:ARG]"). */
typedef struct tl_event {
    double t_s;
    char what[48];
} tl_event;

#define TL_MAX_EVENTS 64

/* Parse a stored faults.events flow list (["630:crash:7", ...]) into
 * evs, skipping items seen before; malformed items are ignored (the
 * config was checked when it ran). */
static void tl_parse_events(const char *list, tl_event *evs, size_t *n_ev)
{
    for (const char *q = strchr(list, '"'); q && *n_ev < TL_MAX_EVENTS; q = strchr(q, '"')) {
        const char *end = strchr(q + 1, '"');
        if (!end)
            break;
        char item[64];
        size_t len = (size_t)(end - q - 1) < sizeof item - 1 ? (size_t)(end - q - 1)
                                                            : sizeof item - 1;
        memcpy(item, q + 1, len);
        item[len] = '\0';
        q = end + 1;
        char *colon = strchr(item, ':'), *stop = NULL;
        if (!colon)
            continue;
        *colon = '\0';
        double t = strtod(item, &stop);
        if (stop == item || *stop || !isfinite(t))
            continue;
        tl_event e = {.t_s = t};
        snprintf(e.what, sizeof e.what, "%s", colon + 1);
        for (char *c = e.what; *c; c++) /* "crash:7:cold" -> "crash 7 cold" */
            if (*c == ':' || (unsigned char)*c <= ' ' || *c == 0x7f || *c == '\'' || *c == '"')
                *c = '_';
        bool seen = false;
        for (size_t i = 0; i < *n_ev && !seen; i++)
            seen = evs[i].t_s == e.t_s && strcmp(evs[i].what, e.what) == 0;
        if (!seen)
            evs[(*n_ev)++] = e;
    }
}

/* "router.cacheroute.fallback=none, x.y=1" -> "fallback=none,y=1". */
static void tl_short_label(sbuf *b, const char *label)
{
    while (*label) {
        size_t n = strcspn(label, ",");
        const char *eq = memchr(label, '=', n), *k = label;
        for (const char *c = label; c < (eq ? eq : label + n); c++)
            if (*c == '.' || *c == ' ')
                k = c + 1;
        sb_printf(b, "%.*s", (int)(label + n - k), k);
        label += n;
        if (*label == ',') {
            sb_printf(b, ",");
            label++;
            while (*label == ' ')
                label++;
        }
    }
}

typedef struct tl_plot {
    tl_series *ser;
    size_t n_ser, n_win;
    tl_event ev[TL_MAX_EVENTS];
    size_t n_ev;
    double *t0;               /* n_win window starts, s (NAN if no row) */
    double w_s, t_lo, t_hi;   /* window width and data span, s */
    double ceiling, ymin;     /* p99 axis, s */
    bool any_inf;
} tl_plot;

static void tl_plot_fini(tl_plot *t)
{
    for (size_t i = 0; i < t->n_ser; i++) {
        free(t->ser[i].hit);
        free(t->ser[i].p99);
        free(t->ser[i].n_hit);
        free(t->ser[i].n_p99);
        free(t->ser[i].n_inf);
        free(t->ser[i].title);
    }
    free(t->ser);
    free(t->t0);
    memset(t, 0, sizeof *t);
}

/* Series, means over seeds, duplicates, events and axes from the rows. */
static void tl_build(const exp_store_tl_row *rows, size_t n, tl_plot *t)
{
    memset(t, 0, sizeof *t);
    int64_t max_idx = 0;
    t->t_lo = INFINITY;
    t->t_hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        max_idx = rows[i].idx > max_idx ? rows[i].idx : max_idx;
        if (rows[i].idx == 1 && !(t->w_s > 0) && i > 0 && rows[i - 1].idx == 0)
            t->w_s = rows[i].t0_s - rows[i - 1].t0_s;
        t->t_lo = fmin(t->t_lo, rows[i].t0_s);
        t->t_hi = fmax(t->t_hi, rows[i].t0_s);
    }
    if (!(t->w_s > 0))
        t->w_s = 1;
    t->t_hi += t->w_s;
    t->n_win = (size_t)max_idx + 1;
    t->t0 = sim_xcalloc(t->n_win, sizeof *t->t0);
    for (size_t w = 0; w < t->n_win; w++)
        t->t0[w] = NAN;
    for (size_t i = 0; i < n; i++)
        t->t0[rows[i].idx] = rows[i].t0_s;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        const exp_store_tl_row *r = &rows[i];
        tl_series *g = NULL;
        for (size_t j = 0; j < t->n_ser && !g; j++)
            if (t->ser[j].point == r->point && strcmp(t->ser[j].policy, r->policy) == 0)
                g = &t->ser[j];
        if (!g) {
            if (t->n_ser == cap)
                t->ser = sim_xrealloc(t->ser, (cap = cap ? 2 * cap : 16) * sizeof *t->ser);
            g = &t->ser[t->n_ser++];
            *g = (tl_series){.point = r->point, .policy = r->policy, .label = r->point_label,
                             .hit = sim_xcalloc(t->n_win, sizeof(double)),
                             .p99 = sim_xcalloc(t->n_win, sizeof(double)),
                             .n_hit = sim_xcalloc(t->n_win, sizeof(size_t)),
                             .n_p99 = sim_xcalloc(t->n_win, sizeof(size_t)),
                             .n_inf = sim_xcalloc(t->n_win, sizeof(size_t))};
        }
        if (i == 0 || r->faults_events != rows[i - 1].faults_events)
            tl_parse_events(r->faults_events, t->ev, &t->n_ev);
        const size_t w = (size_t)r->idx;
        if (isfinite(r->hit_rate)) {
            g->hit[w] += r->hit_rate;
            g->n_hit[w]++;
        }
        if (isinf(r->ttft_p99)) {
            g->n_inf[w]++;
        } else if (isfinite(r->ttft_p99)) {
            g->p99[w] += r->ttft_p99;
            g->n_p99[w]++;
        }
    }
    double lo = INFINITY, hi = 0;
    for (size_t j = 0; j < t->n_ser; j++) {
        tl_series *g = &t->ser[j];
        for (size_t w = 0; w < t->n_win; w++) {
            g->hit[w] = g->n_hit[w] ? g->hit[w] / (double)g->n_hit[w] : NAN;
            /* As the report's means: +Inf if any seed is +Inf. */
            g->p99[w] = g->n_inf[w] ? INFINITY : g->n_p99[w] ? g->p99[w] / (double)g->n_p99[w]
                                                             : NAN;
        }
        /* The same policy unchanged by the sweep: one line, not one per point. */
        for (size_t k = 0; k < j && !g->drop; k++) {
            const tl_series *h = &t->ser[k];
            if (h->drop || strcmp(h->policy, g->policy) != 0)
                continue;
            bool same = true;
            for (size_t w = 0; w < t->n_win && same; w++)
                same = (h->hit[w] == g->hit[w] || (isnan(h->hit[w]) && isnan(g->hit[w]))) &&
                       (h->p99[w] == g->p99[w] || (isnan(h->p99[w]) && isnan(g->p99[w])));
            g->drop = same;
        }
    }
    for (size_t j = 0; j < t->n_ser; j++) {
        tl_series *g = &t->ser[j];
        if (g->drop)
            continue;
        bool twin = false;
        for (size_t k = 0; k < t->n_ser && !twin; k++)
            twin = k != j && !t->ser[k].drop && strcmp(t->ser[k].policy, g->policy) == 0;
        sbuf b = {0};
        sb_word(&b, g->policy);
        if (twin && g->label[0]) {
            sbuf l = {0};
            tl_short_label(&l, g->label);
            sb_printf(&b, "[");
            sb_word(&b, l.s ? l.s : "");
            sb_printf(&b, "]");
            free(l.s);
        }
        g->title = b.s;
        for (size_t w = 0; w < t->n_win; w++) {
            t->any_inf = t->any_inf || isinf(g->p99[w]);
            if (isfinite(g->p99[w]) && g->p99[w] > 0) {
                lo = fmin(lo, g->p99[w]);
                hi = fmax(hi, g->p99[w]);
            }
        }
    }
    if (!isfinite(lo) || !(hi > 0)) {
        lo = 0.1;
        hi = 1;
    }
    t->ceiling = hi * 3;
    t->ymin = lo / 1.5;
}

/*
 * timeline.tsv: one block per line of the figure (a policy, and a sweep
 * point where the sweep changed it), one row per window: window centre,
 * hit rate %, p99 TTFT with +Inf at the ceiling, point size and type
 * (large open circle for +Inf), p99 as measured, window start, series.
 */
static int write_timeline(const exp__report *r, const tl_plot *t, const char *path)
{
    int rc = SIM_OK;
    FILE *f = open_data(path, &rc);
    if (!f)
        return rc;
    fprintf(f, "# crsim plot: timeline (experiment.timeline_s = %g s windows of arrival time) "
            "of experiment %lld at %g requests/s, mean over seeds; p99 TTFT +Inf (a request "
            "unfinished or failed) drawn at %.6g\n", t->w_s, (long long)r->id, r->rate_rps,
            t->ceiling);
    fprintf(f, "# fault events:");
    for (size_t e = 0; e < t->n_ev; e++)
        fprintf(f, " %g s %s;", t->ev[e].t_s, t->ev[e].what);
    fprintf(f, "%s\n", t->n_ev ? "" : " none scheduled");
    fprintf(f, "# t_mid_s\thit_pct\tp99_plot_s\tpoint_size\tpoint_type\tttft_p99_s\t"
            "t0_s\tseries\n");
    bool first = true;
    for (size_t j = 0; j < t->n_ser; j++) {
        const tl_series *g = &t->ser[j];
        if (g->drop)
            continue;
        if (!first)
            fputs("\n\n", f);
        first = false;
        for (size_t w = 0; w < t->n_win; w++) {
            if (!g->n_hit[w] && !g->n_p99[w] && !g->n_inf[w])
                continue;
            const double t0 = t->t0[w];
            fprintf(f, "%.10g", t0 + t->w_s / 2);
            put_num(f, 100 * g->hit[w]);
            put_num(f, isinf(g->p99[w]) ? t->ceiling : g->p99[w]);
            fprintf(f, "\t%s", isinf(g->p99[w]) ? "2.2\t6" : "0.6\t7");
            if (isinf(g->p99[w]))
                fputs("\tinf", f);
            else
                put_num(f, g->p99[w]);
            fprintf(f, "\t%.10g\t%s\n", t0, g->title);
        }
    }
    return close_data(f, path);
}

/* The gnuplot variables of the timeline figure. */
/* One colour per router, the same in every figure and experiment (issue 39
 * item 9): the router's index in route_registry picks an entry of a fixed
 * palette (Tableau 10, then 10 darker tones: 20 distinct colours).  A name
 * not in the registry takes the palette after the registered ones. */
static const char *palette_color(size_t i)
{
    static const char *const palette[] = {
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
        "#7f7f7f", "#bcbd22", "#17becf", "#0b3d62", "#a84d00", "#145214", "#7a1414",
        "#4b2d6b", "#4a2b24", "#8e2f6f", "#333333", "#5f6011", "#0b6470"};
    return palette[i % (sizeof palette / sizeof *palette)];
}

static const char *router_color(const char *policy)
{
    size_t i = 0;
    for (; route_registry[i]; i++)
        if (strcmp(route_registry[i]->name, policy) == 0)
            break;
    return palette_color(i);
}

/* The gnuplot variable colors: one "#rrggbb" word per policy of `pt`, in
 * the order of its policies list. */
static void color_vars(sbuf *b, const exp__rep_point *pt)
{
    sb_printf(b, "; colors='");
    for (size_t c = 0; c < pt->n_cells; c++)
        sb_printf(b, "%s%s", c ? " " : "", router_color(pt->cells[c].policy));
    sb_printf(b, "'");
}

static void tl_vars(sbuf *b, const tl_plot *t)
{
    sb_printf(b, "; series='");
    size_t k = 0;
    for (size_t j = 0; j < t->n_ser; j++)
        if (!t->ser[j].drop)
            sb_printf(b, "%s%s", k++ ? " " : "", t->ser[j].title);
    /* Router colours when each series is one router (one point); with
     * several points a router has several series: colours by series. */
    bool distinct = true;
    for (size_t j = 0; j < t->n_ser; j++)
        for (size_t i = 0; i < j && distinct; i++)
            if (!t->ser[i].drop && !t->ser[j].drop &&
                strcmp(t->ser[i].policy, t->ser[j].policy) == 0)
                distinct = false;
    sb_printf(b, "'; colors='");
    k = 0;
    for (size_t j = 0; j < t->n_ser; j++)
        if (!t->ser[j].drop) {
            sb_printf(b, "%s%s", k ? " " : "",
                      distinct ? router_color(t->ser[j].policy) : palette_color(k));
            k++;
        }
    double hitmax = 0; /* the hit panel's top, % (0 when every hit is 0) */
    for (size_t j = 0; j < t->n_ser; j++)
        for (size_t w = 0; !t->ser[j].drop && w < t->n_win; w++)
            if (t->ser[j].n_hit[w] > 0 && isfinite(t->ser[j].hit[w]))
                hitmax = fmax(hitmax, 100 * t->ser[j].hit[w]);
    sb_printf(b, "'; hitmax=%.10g", hitmax);
    sb_printf(b, "; ceiling=%.10g; ymin=%.10g; anyinf=%d; window=%.10g", t->ceiling, t->ymin,
              t->any_inf ? 1 : 0, t->w_s);
    sb_printf(b, "; events='");
    for (size_t e = 0; e < t->n_ev; e++)
        sb_printf(b, "%s%.10g", e ? " " : "", t->ev[e].t_s);
    sb_printf(b, "'; evlabels='");
    for (size_t e = 0; e < t->n_ev; e++)
        sb_printf(b, "%s%s", e ? " " : "", t->ev[e].what);
    /* Around the scheduled events (2 minutes before the first, 3 after
     * the last), else the whole run. */
    double x0 = t->t_lo, x1 = t->t_hi;
    if (t->n_ev) {
        double e0 = INFINITY, e1 = -INFINITY;
        for (size_t e = 0; e < t->n_ev; e++) {
            e0 = fmin(e0, t->ev[e].t_s);
            e1 = fmax(e1, t->ev[e].t_s);
        }
        x0 = fmax(x0, e0 - 120);
        x1 = fmin(x1, e1 + 180);
        if (!(x1 > x0)) {
            x0 = t->t_lo;
            x1 = t->t_hi;
        }
    }
    sb_printf(b, "'; xmin=%.10g; xmax=%.10g", x0, x1);
}

char *exp_plot_find_gnuplot(void)
{
    const char *g = getenv("CRSIM_GNUPLOT");
    if (!g || !*g)
        g = "gnuplot";
    if (strchr(g, '/'))
        return access(g, X_OK) == 0 ? sim_xstrdup(g) : NULL;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        sbuf b = {0};
        sb_printf(&b, "%.*s/%s", (int)n, n ? path : ".", g);
        if (access(b.s, X_OK) == 0)
            return b.s;
        free(b.s);
        path += n + (path[n] == ':');
    }
    return NULL;
}

int exp_plot_run_gnuplot(const char *gnuplot, const char *vars, const char *script)
{
    char *argv[] = {(char *)"gnuplot", (char *)"-e", (char *)vars, (char *)script, NULL};
    pid_t pid;
    if (posix_spawn(&pid, gnuplot, NULL, NULL, argv, environ) != 0)
        return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Common gnuplot variables: file names, titles, the SLO and policy lists. */
static void common_vars(sbuf *b, const exp__report *r, const exp__rep_point *pt,
                        const char *data, const char *outbase)
{
    sb_printf(b, "datafile=");
    sb_gpstr(b, data);
    sb_printf(b, "; outbase=");
    sb_gpstr(b, outbase);
    sbuf t = {0};
    sb_printf(&t, "%s (experiment %lld%s%s)", r->name, (long long)r->id,
              strcmp(r->status, "complete") != 0 ? ", PARTIAL: " : "",
              strcmp(r->status, "complete") != 0 ? r->status : "");
    if (r->shard[0])
        sb_printf(&t, " shard %s, PARTIAL", r->shard);
    /* Names and labels go in single-quoted pieces only (sb_gpstr); the
     * newline between them is the one double-quoted string, a constant. */
    sb_printf(b, "; exptitle=");
    sb_gpstr(b, t.s);
    if (pt->label[0]) {
        sb_printf(b, ".\"\\n\".");
        sb_gpstr(b, pt->label);
    }
    free(t.s);
    sb_printf(b, "; metric=");
    sb_gpstr(b, r->slo_metric);
    sb_printf(b, "; unit=");
    sb_gpstr(b, r->load_unit ? r->load_unit : "requests/s");
    sb_printf(b, "; slos='");
    for (size_t s = 0; s < r->n_slos; s++)
        sb_printf(b, "%s%g", s ? " " : "", r->slos[s]);
    sb_printf(b, "'; policies='");
    for (size_t c = 0; c < pt->n_cells; c++) {
        if (c)
            sb_printf(b, " ");
        sb_word(b, pt->cells[c].policy);
    }
    sb_printf(b, "'; rate=%.10g; nseeds=%zu", r->rate_rps, r->n_seeds);
}

int exp_plot_script_dir(char **out)
{
    return sim_datadir_find("CRSIM_SCRIPT_DIR", "scripts", out);
}

int exp_plot_main(const exp_cli_args *a)
{
    const char *path = a->pos[0], *out_dir = exp_cli_str(a, "out", NULL);
    int64_t id = exp_cli_int(a, "experiment", 0);
    double rate = exp_cli_real(a, "rate", 0);
    int rc;

    exp__report *r = NULL;
    if ((rc = exp__report_read(path, id, rate, &r)))
        return exp_cli_fail(rc);
    exp__report_warn(r);

    /* The scripts' folder, found before anything is written; if it is
     * missing the data files are still written and the message printed
     * where gnuplot would run. */
    char *sdir = NULL, sdir_msg[1024] = "";
    if (exp_plot_script_dir(&sdir))
        snprintf(sdir_msg, sizeof sdir_msg, "%s", sim_errmsg());

    char *dir;
    if (out_dir) {
        dir = sim_xstrdup(out_dir);
    } else {
        /* Beside the database, named after it (results/x.db -> results/x/),
         * so two databases never share a folder (issue 39 item 9); an
         * experiment not named as its database adds its name. */
        char *nm = safe_name(r->name);
        sbuf b = {0};
        size_t pl = strlen(path);
        const char *slash = strrchr(path, '/'), *stem = slash ? slash + 1 : path;
        size_t sl = strlen(stem);
        if (sl > 3 && strcmp(stem + sl - 3, ".db") == 0) {
            sl -= 3;
            pl -= 3;
        }
        sb_printf(&b, "%.*s", (int)pl, path);
        if (sl != strlen(nm) || strncmp(stem, nm, sl) != 0)
            sb_printf(&b, "-%s", nm);
        free(nm);
        dir = b.s;
    }
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dir[--dl] = '\0';
    rc = make_dirs(dir);

    /* Write every data file first, so they exist even without gnuplot. */
    typedef struct job {
        char *script, *vars, *outbase;
    } job;
    job *jobs = sim_xcalloc(5 * r->n_points + 1, sizeof *jobs);
    const bool ladder = r->n_stages && strcmp(r->stages[0].mode, "stages") == 0;
    size_t n_jobs = 0;
    for (size_t p = 0; p < r->n_points && rc == SIM_OK; p++) {
        const exp__rep_point *pt = &r->points[p];
        char sfx[32] = "";
        if (r->n_points > 1)
            snprintf(sfx, sizeof sfx, "-p%lld", (long long)pt->point);
        static const char *const kinds[] = {"capacity", "p99", "hit"};
        for (size_t k = 0; k < 3 && rc == SIM_OK; k++) {
            sbuf data = {0}, base = {0}, vars = {0}, script = {0};
            sb_printf(&data, "%s/%s%s.tsv", dir, kinds[k], sfx);
            sb_printf(&base, "%s/%s%s", dir, kinds[k], sfx);
            sb_printf(&script, "%s/plot-%s.gp", sdir ? sdir : "scripts", kinds[k]);
            common_vars(&vars, r, pt, data.s, base.s);
            color_vars(&vars, pt);
            if (k == 0) {
                double ymax = 1;
                rc = write_capacity(r, pt, data.s, &ymax);
                sb_printf(&vars, "; ymax=%.10g", ymax);
            } else if (k == 1) {
                double ceiling = 1, ymin = 0;
                bool logy = false, any_inf = false;
                rc = write_p99(r, pt, data.s, &ceiling, &ymin, &logy, &any_inf);
                sb_printf(&vars, "; ceiling=%.10g; ymin=%.10g; logy=%d; anyinf=%d", ceiling,
                          ymin, logy ? 1 : 0, any_inf ? 1 : 0);
            } else {
                rc = write_hit(r, pt, data.s);
            }
            if (rc == SIM_OK)
                printf("wrote %s\n", data.s);
            free(data.s);
            jobs[n_jobs++] = (job){.script = script.s, .vars = vars.s, .outbase = base.s};
        }
        if (rc == SIM_OK) { /* the serving metrics at the report rate: data only */
            sbuf data = {0};
            sb_printf(&data, "%s/serving%s.tsv", dir, sfx);
            rc = write_serving(r, pt, data.s);
            if (rc == SIM_OK)
                printf("wrote %s\n", data.s);
            free(data.s);
        }
        /* Achieved requests/s, goodput and TTFT p99 against offered load;
         * per stage for a stage ladder. */
        static const char *const skinds[] = {"serving-load", "stages"};
        for (size_t k = 0; k < (ladder ? 2u : 1u) && rc == SIM_OK; k++) {
            sbuf data = {0}, base = {0}, vars = {0}, script = {0};
            sb_printf(&data, "%s/%s%s.tsv", dir, skinds[k], sfx);
            sb_printf(&base, "%s/%s%s", dir, skinds[k], sfx);
            sb_printf(&script, "%s/plot-serving.gp", sdir ? sdir : "scripts");
            common_vars(&vars, r, pt, data.s, base.s);
            color_vars(&vars, pt);
            double tmax = 1, ceiling = 1, ymin = 0;
            bool logy = false, any_inf = false;
            rc = k == 0 ? write_serving_load(r, pt, data.s, &tmax, &ceiling, &ymin, &logy,
                                             &any_inf)
                        : write_stages(r, pt, data.s, &tmax, &ceiling, &ymin, &logy, &any_inf);
            sb_printf(&vars, "; xlabel='%s'; goodput=%d; tmax=%.10g; ceiling=%.10g; "
                      "ymin=%.10g; logy=%d; anyinf=%d",
                      k == 0 ? (r->n_stages ? "load (experiment.rates: client rate, "
                                              "concurrency or batch)"
                                            : "offered load (requests/s)")
                             : "stage load (rate in requests/s, or concurrency)",
                      k == 0 && r->has_goodput ? 1 : 0, tmax, ceiling, ymin, logy ? 1 : 0,
                      any_inf ? 1 : 0);
            if (rc == SIM_OK)
                printf("wrote %s\n", data.s);
            free(data.s);
            jobs[n_jobs++] = (job){.script = script.s, .vars = vars.s, .outbase = base.s};
        }
    }

    /* The timeline figure, when the runs at the report rate stored one. */
    if (rc == SIM_OK && r->n_points > 0) {
        exp_store *db = NULL;
        exp_store_tl_row *rows = NULL;
        size_t n_rows = 0;
        rc = exp_store_open_read(path, &db);
        if (rc == SIM_OK)
            rc = exp_store_read_timeline(db, r->id, r->rate_rps, &rows, &n_rows);
        exp_store_close(db);
        if (rc == SIM_OK && n_rows) {
            tl_plot t;
            tl_build(rows, n_rows, &t);
            sbuf data = {0}, base = {0}, vars = {0}, script = {0};
            sb_printf(&data, "%s/timeline.tsv", dir);
            sb_printf(&base, "%s/timeline", dir);
            sb_printf(&script, "%s/plot-timeline.gp", sdir ? sdir : "scripts");
            common_vars(&vars, r, &(exp__rep_point){.label = (char *)""}, data.s, base.s);
            tl_vars(&vars, &t);
            rc = write_timeline(r, &t, data.s);
            if (rc == SIM_OK)
                printf("wrote %s\n", data.s);
            free(data.s);
            jobs[n_jobs++] = (job){.script = script.s, .vars = vars.s, .outbase = base.s};
            tl_plot_fini(&t);
        }
        exp_store_timeline_free(rows, n_rows);
    }

    int status = rc ? exp_cli_fail(rc) : 0;
    size_t n_jobs_run = n_jobs;
    char *gnuplot = NULL;
    if (rc == SIM_OK && r->n_points == 0) {
        fprintf(stderr, "crsim: experiment %lld has no complete runs: nothing to plot\n",
                (long long)r->id);
        status = 1;
    } else if (rc == SIM_OK && !(gnuplot = exp_plot_find_gnuplot())) {
        fprintf(stderr, "crsim: gnuplot not found (looked for %s in PATH); the data files are "
                "in %s/ (install gnuplot, e.g. apt-get install gnuplot-nox, and re-run)\n",
                getenv("CRSIM_GNUPLOT") && *getenv("CRSIM_GNUPLOT") ? getenv("CRSIM_GNUPLOT")
                                                                   : "gnuplot", dir);
        status = 1;
    }
    if (gnuplot && !sdir) {
        fprintf(stderr, "crsim: %s; the data files are in %s/\n", sdir_msg, dir);
        status = 1;
        n_jobs_run = 0;
    }
    for (size_t j = 0; gnuplot && j < n_jobs_run; j++) {
        if (access(jobs[j].script, R_OK) != 0) {
            fprintf(stderr, "crsim: %s: cannot read the gnuplot script: %s (set "
                    "CRSIM_SCRIPT_DIR to the folder of crsim's plot-*.gp scripts)\n",
                    jobs[j].script, strerror(errno));
            status = 1;
            break;
        }
        int st = exp_plot_run_gnuplot(gnuplot, jobs[j].vars, jobs[j].script);
        if (st != 0) {
            fprintf(stderr, "crsim: gnuplot failed on %s (exit %d)%s\n", jobs[j].script, st,
                    getenv("CRSIM_DEBUG") ? "" : "; CRSIM_DEBUG=1 prints its variables");
            if (getenv("CRSIM_DEBUG"))
                fprintf(stderr, "crsim: gnuplot -e \"%s\" %s\n", jobs[j].vars, jobs[j].script);
            status = 1;
            continue;
        }
        printf("wrote %s.png %s.svg\n", jobs[j].outbase, jobs[j].outbase);
    }
    for (size_t j = 0; j < n_jobs; j++) {
        free(jobs[j].script);
        free(jobs[j].vars);
        free(jobs[j].outbase);
    }
    free(jobs);
    free(gnuplot);
    free(sdir);
    free(dir);
    exp__report_free(r);
    return status;
}
