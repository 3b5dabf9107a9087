/*
 * Per-stage and coordinated-omission metrics of closed-loop client runs
 * (see client_metrics.h).  One pass per stage over the run's records:
 * O(requests × stages), with stages a handful.
 */
#include "sim/exp/client_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/metrics.h"

static const double qs[3] = {0.5, 0.9, 0.99};

/* Whether record i is measured: sent at or after the warm-up and not
 * refused at the gateway (as the run's own metrics, models/cluster.c). */
static bool measured(const cluster_result *res, uint64_t i)
{
    return res->rec[i].arrival_s >= res->warmup_s && !res->rec[i].too_long;
}

/* Latency arrays of the measured records with stage == stage (any stage
 * when stage < 0): TTFT and E2E from the send and from the intended
 * time, TPOT; +inf where unfinished.  Returns the count (kt: TPOTs). */
static size_t collect(const cluster_result *res, const wl_client_rec *cr, long stage,
                      double *ttft, double *e2e, double *ttft_i, double *e2e_i, double *tpot,
                      size_t *kt)
{
    size_t k = 0;
    *kt = 0;
    for (uint64_t i = 0; i < res->n_arrived; i++) {
        if (!measured(res, i) || (stage >= 0 && cr[i].stage != (uint32_t)stage))
            continue;
        const cluster_rec *r = &res->rec[i];
        const double lag = cr[i].send_s - cr[i].intended_s;
        const bool done = r->e2e_s >= 0;
        ttft[k] = r->ttft_s >= 0 ? r->ttft_s : INFINITY;
        e2e[k] = done ? r->e2e_s : INFINITY;
        ttft_i[k] = ttft[k] + lag;
        e2e_i[k] = e2e[k] + lag;
        k++;
        if (r->output_tokens > 1)
            tpot[(*kt)++] = done ? (r->e2e_s - r->ttft_s) / (r->output_tokens - 1) : INFINITY;
    }
    return k;
}

static void stage_row(const cluster_result *res, const wl_client_rec *cr,
                      const wl_client_stage *st, uint32_t k, double *buf, exp_stage_row *row)
{
    const uint64_t n = res->n_arrived;
    double *ttft = buf, *e2e = buf + n, *ti = buf + 2 * n, *ei = buf + 3 * n, *tp = buf + 4 * n;
    *row = (exp_stage_row){.stage = k, .load = st->load,
                           .load_kind = st->is_concurrency ? "concurrency" : "rate",
                           .start_s = st->start_s, .end_s = st->end_s};
    uint64_t prompt = 0, hit = 0, out_tok = 0;
    double last = st->start_s;
    for (uint64_t i = 0; i < n; i++) {
        if (cr[i].stage != k)
            continue;
        row->sent++;
        if (!measured(res, i))
            continue;
        row->measured++;
        const cluster_rec *r = &res->rec[i];
        if (r->admitted && !r->rejected) {
            prompt += r->prompt_tokens;
            hit += r->hit_tokens;
        }
        if (r->e2e_s >= 0) {
            row->completed++;
            out_tok += r->output_tokens;
            if (r->arrival_s + r->e2e_s > last)
                last = r->arrival_s + r->e2e_s;
        }
    }
    size_t kt;
    const size_t m = collect(res, cr, k, ttft, e2e, ti, ei, tp, &kt);
    double o[3];
    row->ttft_mean = sim_finite_mean(ttft, m);
    row->e2e_mean = sim_finite_mean(e2e, m);
    row->tpot_mean = sim_finite_mean(tp, kt);
    sim_quantiles(ttft, m, qs, 3, o);
    row->ttft_p50 = o[0], row->ttft_p90 = o[1], row->ttft_p99 = o[2];
    sim_quantiles(e2e, m, qs, 3, o);
    row->e2e_p50 = o[0], row->e2e_p90 = o[1], row->e2e_p99 = o[2];
    sim_quantiles(tp, kt, qs, 3, o);
    row->tpot_p50 = o[0], row->tpot_p90 = o[1], row->tpot_p99 = o[2];
    sim_quantiles(ti, m, qs + 2, 1, &row->ttft_p99_intended);
    sim_quantiles(ei, m, qs + 2, 1, &row->e2e_p99_intended);
    const double span = last - (st->start_s > res->warmup_s ? st->start_s : res->warmup_s);
    row->throughput_rps = span > 0 ? (double)row->completed / span : NAN;
    row->output_tps = span > 0 ? (double)out_tok / span : NAN;
    row->hit_rate = prompt ? (double)hit / (double)prompt : NAN;
}

void exp_client_summarise(const wl_config *wl, wl_client *cl, cluster_result *res,
                          exp_client_summary *out)
{
    *out = (exp_client_summary){.mode = wl->client.mode,
                                .latency_from = wl->client.latency_from,
                                .st = wl_client_get_stats(cl)};
    uint64_t n_rec;
    const wl_client_rec *cr = wl_client_records(cl, &n_rec);
    SIM_ALWAYS(n_rec >= res->n_arrived);
    const uint64_t n = res->n_arrived;
    double *buf = sim_xmalloc((5 * n + 1) * sizeof *buf);
    double *ttft = buf, *e2e = buf + n, *ti = buf + 2 * n, *ei = buf + 3 * n, *tp = buf + 4 * n;
    size_t kt;
    const size_t m = collect(res, cr, -1, ttft, e2e, ti, ei, tp, &kt);
    sim_quantiles(ttft, m, qs + 2, 1, &out->ttft_p99_send);
    sim_quantiles(e2e, m, qs + 2, 1, &out->e2e_p99_send);
    if (strcmp(wl->client.latency_from, "intended") == 0) {
        /* The run's latencies become the intended-time ones. */
        double o[3];
        res->ttft_mean = sim_finite_mean(ti, m);
        sim_quantiles(ti, m, qs, 3, o);
        res->ttft_p50 = o[0], res->ttft_p90 = o[1], res->ttft_p99 = o[2];
        out->ttft_p99_intended = o[2];
        sim_quantiles(ei, m, qs, 3, o);
        res->e2e_p50 = o[0], res->e2e_p90 = o[1], res->e2e_p99 = o[2];
        out->e2e_p99_intended = o[2];
    } else {
        sim_quantiles(ti, m, qs + 2, 1, &out->ttft_p99_intended);
        sim_quantiles(ei, m, qs + 2, 1, &out->e2e_p99_intended);
    }
    size_t ns;
    const wl_client_stage *st = wl_client_stages(cl, &ns);
    if (wl_client_mode_of(wl) != WL_CLIENT_STAGES) {
        /* One row for the whole run: sessions, concurrency, burst. */
        ns = ns ? 1 : 0;
    }
    out->stages = sim_xcalloc(ns ? ns : 1, sizeof *out->stages);
    out->n_stages = ns;
    for (size_t k = 0; k < ns; k++) {
        wl_client_stage s = st[k];
        if (wl_client_mode_of(wl) == WL_CLIENT_BURST)
            s.end_s = res->last_arrival_s;
        stage_row(res, cr, &s, (uint32_t)k, buf, &out->stages[k]);
        if (wl_client_mode_of(wl) == WL_CLIENT_BURST)
            out->stages[k].load_kind = "batch";
    }
    free(buf);
}

void exp_client_summary_fini(exp_client_summary *s)
{
    if (!s)
        return;
    free(s->stages);
    s->stages = NULL;
    s->n_stages = 0;
}
