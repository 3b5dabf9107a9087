/*
 * Serving metrics of a set of requests (models/latency.h).
 */
#include "models/latency.h"

#include "models/cluster.h"

#include <math.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "sim/core/metrics.h"

void latency_requests(const struct cluster_rec *rec, size_t n, latency_keep keep, void *ctx,
                      double span_s, const latency_slo *slo, latency_stats *out)
{
    *out = (latency_stats){0};
    double *ttft = sim_xmalloc((n ? n : 1) * sizeof *ttft);
    double *e2e = sim_xmalloc((n ? n : 1) * sizeof *e2e);
    double *tpot = sim_xmalloc((n ? n : 1) * sizeof *tpot);
    const bool bounded = slo && (slo->ttft_s > 0 || slo->tpot_s > 0);
    size_t k = 0, kt = 0;
    for (size_t i = 0; i < n; i++) {
        const cluster_rec *r = &rec[i];
        if (keep && !keep(r, ctx))
            continue;
        const bool done = r->e2e_s >= 0;
        ttft[k] = r->ttft_s >= 0 ? r->ttft_s : INFINITY;
        e2e[k] = done ? r->e2e_s : INFINITY;
        k++;
        double tp = 0; /* vLLM: 0 for one output token (goodput) */
        if (r->output_tokens > 1) {
            tp = done ? (r->e2e_s - r->ttft_s) / (r->output_tokens - 1) : INFINITY;
            tpot[kt++] = tp;
        }
        if (!done)
            continue;
        out->completed++;
        out->output_tokens += r->output_tokens;
        if (bounded && (slo->ttft_s <= 0 || r->ttft_s <= slo->ttft_s) &&
            (slo->tpot_s <= 0 || tp <= slo->tpot_s))
            out->good++;
    }
    out->n = k;
    static const double qs[3] = {0.5, 0.9, 0.99};
    double q[3];
    out->ttft_mean = sim_finite_mean(ttft, k);
    out->e2e_mean = sim_finite_mean(e2e, k);
    out->tpot_mean = sim_finite_mean(tpot, kt);
    sim_quantiles(ttft, k, qs, 3, q);
    out->ttft_p50 = q[0], out->ttft_p90 = q[1], out->ttft_p99 = q[2];
    sim_quantiles(e2e, k, qs, 3, q);
    out->e2e_p50 = q[0], out->e2e_p90 = q[1], out->e2e_p99 = q[2];
    sim_quantiles(tpot, kt, qs, 3, q);
    out->tpot_p50 = q[0], out->tpot_p90 = q[1], out->tpot_p99 = q[2];
    free(ttft);
    free(e2e);
    free(tpot);
    const bool span = span_s > 0;
    out->request_rps = span ? (double)out->completed / span_s : NAN;
    out->output_tps = span ? (double)out->output_tokens / span_s : NAN;
    out->goodput_rps = bounded && span ? (double)out->good / span_s : NAN;
    out->itl_mean = out->itl_p50 = out->itl_p90 = out->itl_p99 = NAN;
}

typedef struct gap {
    double dur;
    uint64_t tokens;
} gap;

/* Order statistics i and i + 1 (from 0) of the multiset in which g[k].dur
 * appears g[k].tokens times (i < Σ tokens): weighted quickselect with a
 * three-way partition around a pivot drawn at random (a fixed-seed
 * xorshift: the result is the order statistic whatever the draws), so
 * expected O(n) on any input -- the engines' step durations concatenated
 * in time order made a median-of-three pivot quadratic.  Into *v the
 * statistic i, into *v_next statistic i + 1 (*v when there is none), and
 * reorders g so that g[0..*cut) are <= *v and g[*cut..n) > *v, the former
 * of weight *w_cut: a higher rank is then searched in g + *cut only (not
 * sorting: a flagship run has millions of steps, and a comparison sort of
 * them cost more than the run's routing). */
static void wselect(gap *g, size_t n, uint64_t i, double *v, double *v_next, size_t *cut,
                    uint64_t *w_cut)
{
    size_t lo = 0, hi = n, lt, gt;
    uint64_t base = 0, wl, we;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    double p;
    for (;;) {
        if (hi - lo == 1) {
            p = g[lo].dur, lt = lo, gt = hi, wl = 0, we = g[lo].tokens;
            break;
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 (Marsaglia 2003) */
        p = g[lo + (size_t)(x % (hi - lo))].dur;
        /* [lo, lt) < p, [lt, k) == p, [gt, hi) > p (Dijkstra). */
        size_t k = lo;
        lt = lo, gt = hi, wl = 0, we = 0;
        while (k < gt) {
            if (g[k].dur < p) {
                wl += g[k].tokens;
                const gap t = g[lt];
                g[lt++] = g[k];
                g[k++] = t;
            } else if (g[k].dur > p) {
                const gap t = g[--gt];
                g[gt] = g[k];
                g[k] = t;
            } else {
                we += g[k++].tokens;
            }
        }
        if (i < wl) {
            hi = lt;
        } else if (i < wl + we) {
            break;
        } else {
            i -= wl + we;
            base += wl + we;
            lo = gt;
        }
    }
    /* Everything before lo is below the window and everything from hi on
     * above it, so g[0..gt) <= p < g[gt..n). */
    *v = p;
    *cut = gt;
    *w_cut = base + wl + we;
    *v_next = p;
    if (i + 1 >= wl + we && gt < n) {
        double m = g[gt].dur;
        for (size_t k = gt + 1; k < n; k++)
            m = g[k].dur < m ? g[k].dur : m;
        *v_next = m;
    }
}

void latency_itl(const engine_itl_step *const *steps, const size_t *n, size_t n_eng,
                 double t0_s, double t1_s, latency_stats *out)
{
    out->itl_gaps = 0;
    out->itl_mean = out->itl_p50 = out->itl_p90 = out->itl_p99 = NAN;
    size_t total = 0;
    for (size_t e = 0; e < n_eng; e++)
        total += n[e];
    gap *g = sim_xmalloc((total ? total : 1) * sizeof *g);
    size_t m = 0;
    uint64_t tokens = 0;
    double sum = 0;
    for (size_t e = 0; e < n_eng; e++)
        for (size_t i = 0; i < n[e]; i++) {
            const engine_itl_step *s = &steps[e][i];
            if (s->t_end_s < t0_s || s->t_end_s >= t1_s)
                continue;
            g[m++] = (gap){s->dur_s, s->tokens};
            tokens += s->tokens;
            sum += s->dur_s * (double)s->tokens;
        }
    if (tokens == 0) {
        free(g);
        return;
    }
    out->itl_gaps = tokens;
    out->itl_mean = sum / (double)tokens;
    /* Type 7 over the pooled gaps: position h = q (N - 1), linear between
     * order statistics floor(h) and floor(h) + 1. */
    static const double qs[3] = {0.5, 0.9, 0.99};
    double *dst[3] = {&out->itl_p50, &out->itl_p90, &out->itl_p99};
    /* Ascending ranks: each search continues above the previous
     * statistic (g[off..m), which holds the gaps above it; woff is the
     * weight below). */
    size_t off = 0;
    uint64_t woff = 0;
    double prev = NAN;
    for (int k = 0; k < 3; k++) {
        const double h = qs[k] * (double)(tokens - 1);
        const uint64_t lo = (uint64_t)floor(h);
        double vlo, vhi;
        if (lo < woff) { /* within the previous statistic's ties */
            vlo = vhi = prev;
            if (lo + 1 >= woff && off < m) {
                vhi = g[off].dur;
                for (size_t j = off + 1; j < m; j++)
                    vhi = g[j].dur < vhi ? g[j].dur : vhi;
            }
        } else {
            size_t cut;
            uint64_t w_cut;
            wselect(g + off, m - off, lo - woff, &vlo, &vhi, &cut, &w_cut);
            prev = vlo;
            off += cut;
            woff += w_cut;
        }
        if (!(lo + 1 < tokens && h > (double)lo))
            vhi = vlo;
        *dst[k] = vlo + (h - (double)lo) * (vhi - vlo);
    }
    free(g);
}
