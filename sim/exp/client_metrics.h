/*
 * Metrics of a run driven by a closed-loop or staged client
 * (workload.client.*, docs/clients.md): per stage, the vLLM-bench set
 * (TTFT, TPOT, E2E mean and percentiles, achieved requests/s and output
 * tokens/s, hit rate), and the coordinated-omission variants (latencies
 * from the intended send time).  Computed from the cluster's request
 * records and the client's (intended time, stage) per request; stored by
 * exp_store_add_run in the tables client_runs and stage_metrics
 * (docs/results-schema.md) and shown by `crsim report`.
 */
#ifndef CRSIM_SIM_EXP_CLIENT_METRICS_H
#define CRSIM_SIM_EXP_CLIENT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cluster.h"
#include "workloads/client.h"

/* One stage's metrics.  Requests are those of the stage sent at or after
 * the warm-up (measured); latencies in s, from the send; unfinished ones
 * count as +inf in percentiles, as in the run's metrics. */
typedef struct exp_stage_row {
    uint32_t stage;
    double load;            /* requests/s or clients (load_kind) */
    const char *load_kind;  /* "rate", "concurrency" or "batch" (static) */
    double start_s, end_s;  /* when it started and its sends stopped, s */
    uint64_t sent, measured, completed;
    double ttft_mean, ttft_p50, ttft_p90, ttft_p99;
    double tpot_mean, tpot_p50, tpot_p90, tpot_p99;
    double e2e_mean, e2e_p50, e2e_p90, e2e_p99;
    /* ITL (models/latency.h) over the stage's span [max(start_s, warm-up),
     * its last measured completion], the same span as throughput_rps:
     * every engine step ending in it, whichever stage the requests it
     * served belong to (steps are selected by end time).  With the
     * barrier no other stage's request runs in that span; without it the
     * next stage starts when this one's sends stop, so the spans overlap
     * and a step ending in both counts in both.  NaN when no decode step
     * ends in it or the run kept no steps (cluster_params.keep_itl_steps). */
    double itl_mean, itl_p50, itl_p90, itl_p99;
    uint64_t itl_gaps;      /* decode tokens counted (not stored) */
    double ttft_p99_intended, e2e_p99_intended; /* from the intended time */
    double throughput_rps;  /* completed / (last completion - start), 1/s */
    double output_tps;      /* their output tokens over the same span, 1/s */
    double hit_rate;        /* hit / prompt tokens of admitted measured ones */
} exp_stage_row;

typedef struct exp_client_summary {
    const char *mode;          /* workload.client.mode (borrowed) */
    const char *latency_from;  /* workload.client.latency_from (borrowed) */
    wl_client_stats st;
    /* Whole measured window, both variants: p99 TTFT and E2E from the
     * send and from the intended time, s. */
    double ttft_p99_send, ttft_p99_intended, e2e_p99_send, e2e_p99_intended;
    exp_stage_row *stages;     /* n_stages rows, owned */
    size_t n_stages;
    /* Per request of the run (exp_client_keep_requests; NULL otherwise):
     * its stage and who sent it, for the requests table; owned. */
    uint32_t *req_stage;
    uint32_t *req_client;      /* concurrency client, or WL_CLIENT_NONE */
    uint64_t *req_conv;        /* conversation number */
    uint64_t n_req;            /* = res->n_arrived */
} exp_client_summary;

/*
 * Summarise run `res` of client `cl` (workload `wl`) into *out: stage rows
 * and both latency variants over requests sent at or after res->warmup_s.
 * With wl->client.latency_from "intended", res's TTFT and E2E mean and
 * percentiles are then replaced by their intended-time variants, so the
 * SLO, the capacity search and every table read those (the send-time
 * ones stay in out).  Each stage's ITL from the steps res kept
 * (cluster_params.keep_itl_steps; NaN without), which it then frees
 * (cluster_result_free_itl_steps).  Free with exp_client_summary_fini.
 * Cannot fail (aborts on out of memory).
 */
void exp_client_summarise(const wl_config *wl, wl_client *cl, cluster_result *res,
                          exp_client_summary *out);

/* Copy into *out the stage, concurrency client and conversation of the
 * run's first `n_arrived` requests from the client `cl` (before it is
 * destroyed), for the per-request records (experiment.requests).  Cannot
 * fail (aborts on out of memory). */
void exp_client_keep_requests(const wl_client *cl, uint64_t n_arrived, exp_client_summary *out);

/* Free what *s owns.  Safe on a zeroed summary and twice. */
void exp_client_summary_fini(exp_client_summary *s);

#endif
