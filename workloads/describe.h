/*
 * Self-description of a request stream: what a router would face if it
 * replayed it.  The headline number is the infinite-cache hit rate — the
 * share of prompt tokens found in one unbounded prefix cache that has seen
 * every earlier request — which bounds what any cache-affinity router can
 * recover (perfect affinity with unlimited memory).  Works on any
 * wl_source (synthetic or Mooncake replay) and consumes it.
 */
#ifndef CRSIM_WORKLOADS_DESCRIBE_H
#define CRSIM_WORKLOADS_DESCRIBE_H

#include <stdint.h>

#include "workloads/request.h"

typedef struct wl_stream_stats {
    uint64_t requests;        /* requests consumed */
    uint64_t keys;            /* distinct routing keys seen */
    double span_s;            /* last − first arrival, s */
    double rate;              /* (requests − 1) / span, requests/s (0 if span 0) */
    double mean_prompt;       /* tokens */
    double mean_output;       /* tokens */
    double iat_cv;            /* CV of inter-arrival gaps */
    uint64_t prompt_tokens;   /* Σ prompt tokens */
    uint64_t hit_tokens;      /* Σ tokens of the longest cached block prefix */
    double inf_hit_rate;      /* hit_tokens / prompt_tokens */
    /* The measured window: the requests arriving at or after from_s (the
     * run's warm-up end, exp_setup_window), their hits counted against a
     * cache that has seen every earlier request, warm-up included — what a
     * run measures after warm-up, so this is the bound its measured hit
     * rate must respect (the whole-stream rate above counts the cold
     * start and is lower on a stream whose keys recur). */
    double from_s;            /* window start, s (-INFINITY: the whole stream) */
    uint64_t win_requests;    /* requests arriving at or after from_s */
    uint64_t win_prompt_tokens; /* their Σ prompt tokens */
    uint64_t win_hit_tokens;  /* their Σ hit tokens */
    double win_inf_hit_rate;  /* win_hit_tokens / win_prompt_tokens (0 if none) */
} wl_stream_stats;

/*
 * Consume up to `max` requests of `src` (0 = until it ends) and compute
 * the statistics above.  A request's hit is the longest run of its leading
 * blocks already seen, times `block_size` tokens (the block size the
 * stream was generated with); its blocks are then inserted.  With chained
 * hashes a seen block implies all its ancestors were seen, so this is
 * exactly an unbounded LRU-free prefix cache.  Frees each request.
 * Memory: O(distinct blocks).  Returns SIM_OK; SIM_EINVAL if block_size
 * is 0 or a request has arrival time earlier than the previous one;
 * SIM_ENOMEM.
 */
int wl_stream_describe(wl_source src, uint64_t max, uint32_t block_size, wl_stream_stats *out);

/*
 * As wl_stream_describe, and also the statistics of the measured window
 * (the win_* fields): the requests arriving at or after `from_s` seconds
 * (-INFINITY or any time <= the first arrival: every request; +INFINITY:
 * none).  wl_stream_describe is this with from_s = -INFINITY.  Same
 * errors; from_s NaN is SIM_EINVAL.
 */
int wl_stream_describe_from(wl_source src, uint64_t max, uint32_t block_size, double from_s,
                            wl_stream_stats *out);

#endif
