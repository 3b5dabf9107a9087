/*
 * `crsim report`'s regime statement (docs/report.md, "Which regime limits
 * capacity"): per (point, policy), at the first tested load where the SLO
 * metric breaks the headline SLO, whether the p99 that breaks it comes
 * from queueing (throughput-bound) or from the request-size tail, with
 * the figures that show it, read from the run's per-request records
 * (experiment.requests / --requests; the requests table).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/metrics.h"
#include "sim/exp/report_int.h"
#include "sim/exp/store.h"

/* Share of the measured requests, largest prompts first, that form the
 * "long" tail (1 %: the p99's own share of the requests). */
#define REGIME_TAIL_SHARE 0.01

typedef struct req_row {
    double prompt, uncached, ttft; /* tokens, tokens, s (+Inf: no first token) */
} req_row;

/* Largest prompt first; equal prompts slower first, so the split is a
 * function of the set of requests, not of qsort's order. */
static int cmp_prompt_desc(const void *a, const void *b)
{
    const req_row *x = a, *y = b;
    if (x->prompt != y->prompt)
        return (x->prompt < y->prompt) - (x->prompt > y->prompt);
    return (x->ttft < y->ttft) - (x->ttft > y->ttft);
}

static double p99_of(double *v, size_t n)
{
    static const double q = 0.99;
    double out = NAN;
    sim_quantiles(v, n, &q, 1, &out);
    return n ? out : NAN;
}

int exp__regime_split(const double *prompt, const double *uncached, const double *ttft,
                      size_t n, exp__regime *out)
{
    memset(out, 0, sizeof *out);
    out->p99_long = out->p99_rest = out->uncached_mean = NAN;
    out->prompt_long = out->prompt_rest = NAN;
    if (n < 2)
        return SIM_ERROR(SIM_EINVAL, "regime: %zu measured requests; expected at least 2", n);
    req_row *r = sim_xmalloc(n * sizeof *r);
    double su = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = (req_row){prompt[i], uncached[i], ttft[i]};
        su += uncached[i];
    }
    qsort(r, n, sizeof *r, cmp_prompt_desc);
    size_t nl = (size_t)ceil(REGIME_TAIL_SHARE * (double)n);
    if (nl >= n)
        nl = n - 1;
    double *v = sim_xmalloc(n * sizeof *v);
    double pl = 0, pr = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = r[i].ttft;
        if (i < nl)
            pl += r[i].prompt;
        else
            pr += r[i].prompt;
    }
    out->n_long = nl;
    out->n_rest = n - nl;
    out->p99_long = p99_of(v, nl);
    out->p99_rest = p99_of(v + nl, n - nl);
    out->prompt_long = pl / (double)nl;
    out->prompt_rest = pr / (double)(n - nl);
    out->uncached_mean = su / (double)n;
    free(v);
    free(r);
    return SIM_OK;
}

static void fmt_s(double x, char *buf, size_t n)
{
    if (isinf(x))
        snprintf(buf, n, "inf");
    else if (isnan(x))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2f s", x);
}

int exp__report_regime(const char *path, const exp__report *r, bool markdown, FILE *out)
{
    if (r->n_slos == 0 || r->n_points == 0)
        return SIM_OK;
    const double slo = r->slos[(r->n_slos - 1) / 2];
    exp_store *store = NULL;
    int rc = exp_store_open_read(path, &store);
    if (rc)
        return rc;
    /* Only experiments with per-request records get the statement. */
    bool any = false;
    if (exp_store_has_requests(store, r->id, &any) != SIM_OK || !any) {
        exp_store_close(store);
        return SIM_OK;
    }
    fprintf(out, "%sregime at capacity (%s <= %g s; longest 1 %% of prompts vs the rest, "
            "docs/report.md \"Which regime limits capacity\"):%s\n",
            markdown ? "**" : "", r->slo_metric, slo, markdown ? "**\n" : "");
    for (size_t p = 0; rc == SIM_OK && p < r->n_points; p++) {
        const exp__rep_point *pt = &r->points[p];
        for (size_t c = 0; rc == SIM_OK && c < pt->n_cells; c++) {
            const exp__rep_cell *cell = &pt->cells[c];
            const char *pfx = markdown ? "* " : "  ";
            char where[200] = "";
            if (r->n_points > 1)
                snprintf(where, sizeof where, " (point %lld)", (long long)pt->point);
            size_t j = 0;
            while (j < cell->n_loads && !(cell->loads[j].slo_mean > slo))
                j++;
            if (j == cell->n_loads) {
                fprintf(out, "%s%s%s: holds at every tested load (right-censored): no limiting "
                        "regime\n", pfx, cell->policy, where);
                continue;
            }
            const double load = cell->loads[j].load_rps;
            int64_t *ids = NULL;
            double *imb = NULL;
            size_t n_runs = 0;
            double sl = 0, sr = 0, su = 0, spl = 0, spr = 0, simb = 0;
            size_t ns = 0, nimb = 0;
            rc = exp_store_request_runs(store, r->id, pt->point, cell->policy, load, &ids, &imb,
                                        &n_runs);
            for (size_t k = 0; rc == SIM_OK && k < n_runs; k++) {
                if (!isnan(imb[k])) {
                    simb += imb[k];
                    nimb++;
                }
                double *pr = NULL, *un = NULL, *tt = NULL;
                size_t n = 0;
                exp__regime g;
                rc = exp_store_request_sizes(store, ids[k], &pr, &un, &tt, &n);
                if (rc == SIM_OK && exp__regime_split(pr, un, tt, n, &g) == SIM_OK) {
                    sl += g.p99_long;
                    sr += g.p99_rest;
                    su += g.uncached_mean;
                    spl += g.prompt_long;
                    spr += g.prompt_rest;
                    ns++;
                }
                free(pr);
                free(un);
                free(tt);
            }
            free(ids);
            free(imb);
            if (rc)
                break;
            if (ns == 0) {
                fprintf(out, "%s%s%s: first failing load %g requests/s; no per-request records "
                        "(run with --requests)\n", pfx, cell->policy, where, load);
                continue;
            }
            const double pl = sl / (double)ns, prr = sr / (double)ns;
            char a[32], b[32];
            fmt_s(pl, a, sizeof a);
            fmt_s(prr, b, sizeof b);
            fprintf(out, "%s%s%s: %s at %g requests/s%s: p99 TTFT of the longest 1 %% %s "
                    "(mean prompt %.0f tokens) vs the rest %s (%.0f tokens); %.0f uncached "
                    "tokens/request; imbalance %.2f\n",
                    pfx, cell->policy, where,
                    prr > slo ? "throughput-bound (queueing)" : "tail-bound (request size)",
                    load, j == 0 ? " (the lowest tested load: left-censored)" : "", a,
                    spl / (double)ns, b, spr / (double)ns, su / (double)ns,
                    nimb ? simb / (double)nimb : NAN);
        }
    }
    fprintf(out, "\n");
    exp_store_close(store);
    return rc;
}
