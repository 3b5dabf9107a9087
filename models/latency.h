/*
 * Serving metrics of a set of requests, as the serving benchmarks report
 * them (vLLM vllm/benchmarks/serve.py calculate_metrics @009e6d4a;
 * docs/report.md, "Serving metrics"): TTFT, TPOT, ITL and E2E mean and
 * p50/p90/p99, achieved requests/s and output tokens/s, and goodput.
 * One function over request records (latency_requests) so that a run,
 * a stage or any other subset is summarised by the same code; ITL, which
 * per-request records do not hold, from the engines' steps
 * (latency_itl).
 *
 * Definitions (times in s):
 *  - TTFT, E2E: per request; percentiles over the requests given, an
 *    unfinished one (no first token / no last token) counting as +Inf;
 *    means over the finite values (those that have one).
 *  - TPOT: (E2E - TTFT) / (output_tokens - 1) over requests with more than
 *    one output token (unfinished: +Inf); mean over the finite ones.
 *  - ITL: the gap between two consecutive output tokens of a request,
 *    every gap of every request pooled (vLLM's `itls`); the mean is Σ gaps
 *    / number of gaps, percentiles over the pooled gaps.  In the engine a
 *    decoding request is in every step and steps run back to back while
 *    any request runs, so each decode token's gap is the duration of the
 *    step that produced it (engine_itl_steps): the pooled gaps are the
 *    step durations weighted by their decode tokens.  Exceptions, both
 *    rare: the gap across a preemption (the token after a recompute comes
 *    from a prefill step) is not counted, and steps are selected by their
 *    end time (a time window), not by the request they served.
 *  - Goodput (DistServe, Zhong et al., OSDI 2024: requests served
 *    within both a TTFT and a TPOT SLO; counted per request as vLLM's
 *    `--goodput`): completed requests with TTFT <= ttft_s and TPOT <=
 *    tpot_s (TPOT 0 for a request of one output token, as vLLM), per
 *    second of the span.  A bound of 0 is not checked.
 * Percentiles are type 7 (sim/core/metrics.h), as numpy's default.
 */
#ifndef CRSIM_MODELS_LATENCY_H
#define CRSIM_MODELS_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/engine.h"

struct cluster_rec; /* models/cluster.h */

/* Goodput bounds, s; 0 = that metric is not bounded.  Both 0: no goodput
 * (latency_stats.goodput_rps NaN). */
typedef struct latency_slo {
    double ttft_s;
    double tpot_s;
} latency_slo;

typedef struct latency_stats {
    uint64_t n;             /* requests summarised */
    uint64_t completed;     /* of those, completed */
    uint64_t output_tokens; /* Σ output tokens of the completed ones */
    uint64_t good;          /* completed within the goodput bounds */
    double ttft_mean, ttft_p50, ttft_p90, ttft_p99;
    double tpot_mean, tpot_p50, tpot_p90, tpot_p99;
    double e2e_mean, e2e_p50, e2e_p90, e2e_p99;
    double request_rps;     /* completed / span_s */
    double output_tps;      /* output_tokens / span_s, tokens/s */
    double goodput_rps;     /* good / span_s; NaN without bounds */
    /* From latency_itl (NaN until then, and when no gap is counted). */
    uint64_t itl_gaps;      /* decode tokens counted */
    double itl_mean, itl_p50, itl_p90, itl_p99;
} latency_stats;

/* Does record r belong to the set?  (ctx: the caller's.) */
typedef bool (*latency_keep)(const struct cluster_rec *r, void *ctx);

/*
 * Summarise the records rec[0..n) that `keep` accepts (keep NULL: all),
 * in index order, over a span of span_s seconds (rates NaN if span_s <=
 * 0), with goodput bounds `slo` (NULL: none).  Fills *out (the ITL fields
 * NaN).  O(n) time and 3n doubles of scratch; aborts if out of memory
 * (sim_xmalloc).
 */
void latency_requests(const struct cluster_rec *rec, size_t n, latency_keep keep, void *ctx,
                      double span_s, const latency_slo *slo, latency_stats *out);

/*
 * ITL fields of *out from the steps of several engines: steps[e][0..n[e])
 * for e < n_eng, those ending in [t0_s, t1_s).  O(S log S) for S steps
 * (a sort); aborts if out of memory.
 */
void latency_itl(const engine_itl_step *const *steps, const size_t *n, size_t n_eng,
                 double t0_s, double t1_s, latency_stats *out);

#endif
