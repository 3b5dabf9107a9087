/*
 * Replay of a Mooncake-format trace as a request stream for the cluster.
 *
 * Arrival times: the Mooncake conversation trace records arrivals in 3 s
 * ticks (timestamps are multiples of 3,000 ms up to a few ms of jitter).
 * With tick_s > 0 each request is put in the tick nearest its timestamp and
 * spread uniformly at random inside it, with draws from PCG stream
 * (seed, SIM_STREAM_ARRIVALS) taken in file order, so the stream depends on
 * the seed but never on the router.  Times are then scaled by
 * (trace mean rate / target rate) to reach the target request rate.
 *
 * Content: every trace hash id covers `trace block` tokens (512); engine
 * block j of a prompt lies in trace block k = j·B/512 at sub-block
 * s = (j·B mod 512)/B, and its chained hash is
 *   h_j = wl_block_hash(h_{j−1}, id_k · 2^16 + s),
 * so two prompts share engine block j exactly when they share trace ids up
 * to k (the trace's ids form a prefix tree) — and engine blocks split trace
 * blocks without changing what matches.  Only full engine blocks of the
 * prompt get hashes (floor(prompt/B) of them).
 */
#ifndef CRSIM_WORKLOADS_REPLAY_H
#define CRSIM_WORKLOADS_REPLAY_H

#include <stdint.h>

#include "workloads/mooncake.h"
#include "workloads/request.h"

typedef struct wl_replay_params {
    uint32_t block_size;    /* engine KV block, tokens; must divide the trace block */
    uint32_t key_ids;       /* leading trace ids forming the routing key (>= 1) */
    double rate;            /* target mean request rate, requests/s; 0 = as recorded */
    double tick_s;          /* spread requests uniformly in ticks of this many
                               seconds; 0 = use timestamps as recorded */
    uint64_t seed;          /* run seed */
    uint64_t max_requests;  /* replay only the first N arrivals; 0 = all */
} wl_replay_params;

typedef struct wl_replay wl_replay;

/* Prepare a replay of `t` (which must outlive the replay).  Returns SIM_OK,
 * SIM_EINVAL (block size not dividing the trace block, key_ids = 0, rate
 * < 0, a trace with a zero span when a rate is requested) or SIM_ENOMEM.
 * O(n log n) for the arrival order. */
int wl_replay_create(const wl_trace *t, const wl_replay_params *p, wl_replay **out);

/* Free the replay.  Accepts NULL. */
void wl_replay_destroy(wl_replay *rp);

/* Produce the next request in arrival order into *out (its block list is
 * freshly allocated; free with wl_request_fini).  Returns 1, or 0 when the
 * stream is exhausted.  Cannot fail otherwise (aborts on out of memory). */
int wl_replay_next(wl_replay *rp, wl_request *out);

/* Number of requests the replay will produce. */
uint64_t wl_replay_count(const wl_replay *rp);

/* Time scale factor applied to the recorded times (1 = as recorded). */
double wl_replay_time_scale(const wl_replay *rp);

#endif
