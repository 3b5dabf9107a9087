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

#endif
