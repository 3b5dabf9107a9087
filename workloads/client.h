/*
 * Closed-loop and staged clients (workload.client.*, docs/clients.md): who
 * sends the requests and when, for the modes other than `open` (which is
 * the synthetic or replayed stream as it is).  A client is a wl_source
 * with feedback: the consumer (models/cluster.c) asks it when the next
 * send is due (peek), takes the request at that time (next) and reports
 * every request's end (done), from which the client schedules the next
 * turn of a conversation, frees a concurrency slot or lifts a stage's
 * drain barrier.
 *
 * The user population is fixed by (workload, run seed) alone: conversation
 * number c (0, 1, ... in order of their first sends) draws its key, turn
 * count, per-turn lengths and think times from PCG streams keyed by c
 * (SIM_STREAM_CLIENT substreams), never from a stream consumed in send
 * order.  So every router at one (seed, load) faces the same users with
 * the same lengths and think times; only the send times differ, by
 * design, because they follow that router's completions.
 */
#ifndef CRSIM_WORKLOADS_CLIENT_H
#define CRSIM_WORKLOADS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workloads/keyrates.h"
#include "workloads/request.h"
#include "workloads/wl_config.h"

/* workload.client.mode, in the order of wl_client_mode_names. */
enum wl_client_mode {
    WL_CLIENT_OPEN = 0,
    WL_CLIENT_SESSIONS = 1,
    WL_CLIENT_CONCURRENCY = 2,
    WL_CLIENT_STAGES = 3,
    WL_CLIENT_BURST = 4
};

/* The mode of `cfg` (WL_CLIENT_OPEN for an unknown name).  Cannot fail. */
enum wl_client_mode wl_client_mode_of(const wl_config *cfg);

/* Whether `cfg` runs a closed-loop or staged client (mode != open). */
bool wl_client_closed(const wl_config *cfg);

/* What the client knows about request `id` (wl_client_records). */
typedef struct wl_client_rec {
    double intended_s; /* when its schedule wanted it sent, s (the open-
                          loop arrival time of a conversation start, the
                          nominal time in a stage delayed by a barrier, a
                          turn's completion + think time); <= send_s */
    double send_s;     /* when it was sent (the request's arrival_s), s */
    uint32_t stage;    /* stage index (stages mode; burst: batch; else 0) */
    uint32_t turn;     /* turn within its conversation, from 0 */
    uint64_t conv;     /* conversation number */
} wl_client_rec;

/* One stage as it ran (wl_client_stage_info). */
typedef struct wl_client_stage {
    double load;          /* rate (requests/s) or concurrency (clients)
                             after the run's load multiplier */
    bool is_concurrency;  /* load is a concurrency */
    double nominal_start_s; /* when the ladder without barriers starts it */
    double start_s;       /* when it started (after the barrier), s; NaN
                             if it never started */
    double end_s;         /* when its sends stopped, s */
} wl_client_stage;

/* Counters of a client run. */
typedef struct wl_client_stats {
    uint64_t sent;          /* requests sent */
    uint64_t conversations; /* conversations started */
    uint64_t abandoned;     /* turns abandoned (TTFT above patience_s, or
                               no first token) */
    uint64_t unsent;        /* turns of started conversations never sent:
                               after an abandonment or a failure, or past
                               the end of their stage or of the run */
} wl_client_stats;

typedef struct wl_client wl_client;

/*
 * Prepare the client of `cfg` (type synthetic, mode != open; read only
 * during the call) for run seed `run_seed`, load `load` (> 0: the request
 * or conversation rate of sessions, the concurrency N of concurrency when
 * client.concurrency is 0, the batch size of burst when client.batch is
 * 0, the multiplier of every stage's rate and concurrency) and engine
 * block size `block_size` (tokens).  `keys` is the population
 * (wl_synth_keys of cfg; copied) for benchmark conversations, ignored for
 * shared_prefix.  The caller destroys *out.  Returns SIM_OK, SIM_EINVAL
 * (one line naming the key: a mode missing its parameters, a concurrency
 * or batch of 0, a load that is not a whole number where it counts
 * clients, drift or bootstrap arrivals with a closed-loop client) or
 * SIM_ENOMEM; on error *out is NULL.
 */
int wl_client_create(const wl_config *cfg, const wl_keyrates *keys, uint64_t run_seed,
                     double load, uint32_t block_size, wl_client **out);

/* Free the client (not requests already produced).  Accepts NULL. */
void wl_client_destroy(wl_client *c);

/* The client as a wl_source with peek and done (state = c; c must outlive
 * it).  Cannot fail. */
wl_source wl_client_source(wl_client *c);

/* The records of the n requests sent so far, by request id; owned by c,
 * valid until its next call or destroy.  Cannot fail. */
const wl_client_rec *wl_client_records(const wl_client *c, uint64_t *n);

/* The stages (n of them: the ladder of mode stages, else one: the run),
 * written into a buffer owned by c, valid until the next call or destroy.
 * Cannot fail. */
const wl_client_stage *wl_client_stages(wl_client *c, size_t *n);

/* The counters so far.  Cannot fail. */
wl_client_stats wl_client_get_stats(const wl_client *c);

/*
 * A rough count of the requests a run of `cfg` at load `load` sends, for
 * the harness's size estimate (docs/harness.md, "Size estimate"): rate x
 * duration for rate phases; for concurrency phases N x duration x 10
 * (clients of requests shorter than 0.1 s, a generous bound); burst:
 * max_requests, else the batch size per second of duration_s.
 * INFINITY when the run has no end.  Cannot fail.
 */
double wl_client_estimate_requests(const wl_config *cfg, double load);

/*
 * Cross-key checks of workload.client.* for `cfg` (called by
 * wl_config_check): a closed-loop mode needs type synthetic, no drift and
 * a poisson or gamma arrival process; stages need at least one stage,
 * each with exactly one of rate and concurrency > 0; stages are only
 * allowed in mode stages, max_concurrency only in sessions and stages.
 * `where` names the source.  Returns SIM_OK or SIM_EINVAL.
 */
int wl_client_check(const wl_config *cfg, const char *where);

#endif
