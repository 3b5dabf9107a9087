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
    uint64_t max_requests;  /* replay only the first N arrivals; 0 = all
                               (with loop_s: at most N arrivals in all) */
    double loop_s;          /* > 0: replay the trace repeatedly to this
                               duration, s of the replayed (scaled) time
                               (wl_replay_create); 0 = once */
    const struct wl_trace_hashes *hashes; /* the trace's shared block-hash
                               table at block_size (wl_ingest_hashes), or
                               NULL: each request's hashes are computed and
                               allocated as it is produced.  The same
                               hashes either way; with a table the
                               requests borrow them (WL_BLOCKS_SHARED). */
} wl_replay_params;

typedef struct wl_replay wl_replay;

/* Prepare a replay of `t` (which must outlive the replay).  Returns SIM_OK,
 * SIM_EINVAL (block size not dividing the trace block, key_ids = 0, rate
 * < 0, a trace with a zero span when a rate is requested or loop_s > 0,
 * loop_s negative or not finite) or SIM_ENOMEM.  O(n log n) for the
 * arrival order.
 *
 * Looping (loop_s > 0; issue 16: at high loads a time-scaled trace lasts
 * little more than the warm-up): pass k = 0, 1, ... replays the whole
 * trace (the same jittered, scaled arrival times) shifted by k·P, with the
 * period P = span · n / (n − 1) — the scaled span of the n arrivals plus
 * one mean gap, so the mean rate of the looped stream is the rate of one
 * pass and pass k + 1 starts one mean gap after pass k ends — and every
 * arrival before loop_s is produced (a loop_s shorter than a pass
 * truncates it), at most max_requests of them when that is > 0.  Request
 * ids stay dense and increasing (0, 1, ... over all passes); routing keys
 * and block hashes are those of the trace request, unchanged, so a repeat
 * is a prefix-cache hit wherever its first pass is still cached — as in a
 * real replay of the same requests (a looped stream has more reuse than a
 * longer recording of the service would; docs/trace-replay.md). */
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
