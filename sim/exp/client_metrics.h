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
} exp_client_summary;

/*
 * Summarise run `res` of client `cl` (workload `wl`) into *out: stage rows
 * and both latency variants over requests sent at or after res->warmup_s.
 * With wl->client.latency_from "intended", res's TTFT and E2E mean and
 * percentiles are then replaced by their intended-time variants, so the
 * SLO, the capacity search and every table read those (the send-time
 * ones stay in out).  Free with exp_client_summary_fini.  Cannot fail
 * (aborts on out of memory).
 */
void exp_client_summarise(const wl_config *wl, wl_client *cl, cluster_result *res,
                          exp_client_summary *out);

/* Free what *s owns.  Safe on a zeroed summary and twice. */
void exp_client_summary_fini(exp_client_summary *s);

#endif
