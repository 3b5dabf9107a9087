/*
 * One simulation run: a request stream, a router and R destinations on
 * the event kernel, and the metrics of docs/design.md §10 computed from it.
 *
 * Data flows one way: the stream produces a request at its arrival time,
 * the router picks a destination from the route_view, the engine serves it,
 * and the completion is recorded.  Requests that arrive at or after
 * `warmup_s` are measured; the run stops when every request has completed,
 * or `drain_s` seconds after the last arrival, whichever comes first, and
 * requests still inside an engine then are reported as unfinished (their
 * latencies count as +inf in percentiles, i.e. as SLO violations).
 */
#ifndef CRSIM_MODELS_CLUSTER_H
#define CRSIM_MODELS_CLUSTER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cost.h"
#include "models/engine.h"
#include "models/latency.h"
#include "models/routers/route.h"
#include "models/spec.h"

/* How requests are spread over gateway replicas. */
enum cluster_assign {
    CLUSTER_ASSIGN_ROUND_ROBIN = 0, /* request i goes to replica i mod N */
    CLUSTER_ASSIGN_RANDOM = 1       /* uniform, from PCG stream
                                       (seed, SIM_STREAM_GATEWAY) */
};

/*
 * The gateway in front of the destinations: what its routers know
 * (docs/information-model.md).  A zeroed struct is the idealised gateway
 * of earlier versions: one router that reads exact engine state at every
 * decision.
 *
 * Scraped engine metrics (route_view: queued_tokens, waiting, running,
 * kv_util, age_s): with scrape_interval_s = 0 ("exact") they are re-read
 * from the engines at each routing decision.  With scrape_interval_s > 0
 * the cluster records a snapshot of every engine at t = k * interval
 * (k = 1, 2, ...; a snapshot of the empty cluster stands for t = 0) and a
 * router deciding at time t sees the latest snapshot taken at or before
 * t - scrape_delay_s.  Snapshots waiting out their delay are kept in a
 * ring of floor(delay / interval) + 3 slots, so any delay, also one
 * longer than the interval, is exact.
 *
 * Replicas: `replicas` independent router states (each made by the
 * router's create(), then attach() for replicas >= 1, models/routers/route.h);
 * each request is routed by one replica, chosen by `assign`, which alone
 * counts it in its route_view.outstanding and receives its completion.
 * Replica 0 uses the run seed, so replicas = 1 reproduces a one-router
 * run bit for bit.
 *
 * KV events: when the router has route_type.on_kv_event, every change of
 * an engine's prefix cache (blocks stored after the step that computed
 * them, blocks evicted) becomes a route_kv_event delivered to every
 * replica kv_event_delay_s later, in order (one FIFO, one pending kernel
 * event); otherwise nothing is observed or queued.
 */
typedef struct cluster_gateway {
    double scrape_interval_s; /* snapshot period, s; 0 = exact view; finite,
                                 >= 0 */
    double scrape_delay_s;    /* extra delay before a snapshot is visible,
                                 s; finite, >= 0; must be 0 when
                                 scrape_interval_s is 0 */
    uint32_t replicas;        /* gateway replicas N, [1, CLUSTER_MAX_REPLICAS]
                                 (0 is read as 1) */
    int assign;               /* enum cluster_assign */
    double kv_event_delay_s;  /* engine KV events reach the routers this
                                 long after the cache changed, s; finite,
                                 >= 0 (only routers with on_kv_event get
                                 events; docs/information-model.md) */
} cluster_gateway;

/*
 * Destination faults (docs/faults.md).  A scheduled event happens at t_s
 * to destination `dest`:
 *  - CRASH: the destination's running and queued requests are lost (each
 *    is retried by its client, below) and, unless `warm`, its prefix cache
 *    is emptied; it refuses every request until it recovers;
 *  - DRAIN: it refuses new requests and finishes those it has;
 *  - SLOW: every engine step takes `factor` (>= 1) times as long (a
 *    straggler) until it recovers;
 *  - RECOVER: back in service at full speed (with the cache it kept: empty
 *    after a cold crash).
 * A random process (mtbf_s > 0) adds, per destination, crashes after
 * exponential up times of mean mtbf_s, each repaired (a cold recovery)
 * after an exponential time of mean mttr_s, from PCG stream (run seed,
 * sim_rng_substream(SIM_STREAM_FAULTS, dest)): identical for every
 * policy at one seed and load.
 *
 * A request lost in a crash, or dispatched to a destination that is
 * crashed or draining (connection refused), is retried by its client
 * retry_timeout_s later, through the gateway replica that routed it (a
 * new routing decision), at most max_retries times; one more loss and it
 * has failed for good (cluster_result.n_failed).  Its TTFT and E2E are
 * measured from its original arrival, over the attempt that completed.
 *
 * Routers see the gateway's health view (route_view.down): a health check
 * every health_check_interval_s (at k * interval, k >= 1) marks each
 * destination down if it is crashed or draining, up otherwise.  With no
 * event and mtbf_s = 0 nothing of this exists (route_view.down is NULL)
 * and a run is bit-identical to one without faults.
 */
enum cluster_fault_kind {
    CLUSTER_FAULT_CRASH = 0,
    CLUSTER_FAULT_DRAIN = 1,
    CLUSTER_FAULT_SLOW = 2,
    CLUSTER_FAULT_RECOVER = 3
};

typedef struct cluster_fault {
    double t_s;     /* when, simulated s; finite, >= 0 */
    uint32_t dest;  /* destination, < n_dest */
    int kind;       /* enum cluster_fault_kind */
    double factor;  /* SLOW: step-time factor, finite, >= 1; else 1 */
    bool warm;      /* CRASH: the prefix cache survives (default false: cold) */
} cluster_fault;

typedef struct cluster_faults {
    const cluster_fault *events; /* n_events scheduled events (borrowed) */
    size_t n_events;
    double mtbf_s;           /* random crashes: mean up time per destination,
                                s; 0 = none */
    double mttr_s;           /* their mean repair time, s (> 0 with mtbf_s) */
    double retry_timeout_s;  /* client retry delay after a loss, s; >= 0 */
    uint32_t max_retries;    /* retries per request at most */
    double health_check_interval_s; /* gateway health checks, s; > 0 */
} cluster_faults;

/* Whether `f` configures any fault (then health checks and retries run). */
static inline bool cluster_faults_on(const cluster_faults *f)
{
    return f->n_events > 0 || f->mtbf_s > 0;
}

/* The names of enum cluster_fault_kind, NULL-terminated. */
extern const char *const cluster_fault_kind_names[];

/*
 * Parse one scheduled event "TIME_S:KIND:DEST[:ARG]" (faults.events):
 * KIND crash (ARG optional: cold, the default, or warm), drain, slow (ARG
 * required: the factor, a number >= 1) or recover; TIME_S a finite number
 * >= 0; DEST a decimal destination index.  Fills *out; on error writes
 * the reason ("expected ...") to why[0..n) and returns SIM_EINVAL (no
 * message is set).  DEST is not range-checked here.
 */
int cluster_fault_parse(const char *text, cluster_fault *out, char *why, size_t n);

/*
 * Check scheduled events against a cluster of n_dest destinations, in
 * time order per destination (a stable sort by t_s): DEST < n_dest;
 * crash only when not crashed, drain only when up, slow only when not
 * crashed, recover only when crashed, draining or slow.  Returns -1 when
 * they are consistent, else the index of the first bad event with the
 * reason in why[0..n).  Cannot fail.
 */
long cluster_faults_check(const cluster_fault *ev, size_t n_ev, uint32_t n_dest, char *why,
                          size_t n);

/* Most gateway replicas a run accepts. */
#define CLUSTER_MAX_REPLICAS 4096

/* One destination group of a mixed fleet (docs/mixed-fleets.md): its
 * destinations run `deploy` (own KV pool, from spec_kv_pool), time steps
 * with `cost` and schedule with `engine` (whose block_size and
 * prefix_caching must equal cluster_params.engine's: routers hash blocks
 * of one size). */
typedef struct cluster_group {
    uint32_t n_dest;        /* destinations in the group, >= 1 */
    spec_deploy deploy;
    cost_model cost;
    engine_params engine;
} cluster_group;

typedef struct cluster_params {
    uint32_t n_dest;        /* destinations R, >= 1 */
    spec_deploy deploy;     /* what each destination runs on */
    cost_model cost;        /* step-time model of every destination */
    engine_params engine;   /* scheduler settings */
    double warmup_s;        /* measure requests arriving at or after, s */
    double drain_s;         /* simulate at most this long after the last
                               arrival, s */
    double timeline_s;      /* window of the per-window timeline, s (0 = none) */
    cluster_gateway gateway; /* information model (zeroed = exact, one router) */
    uint32_t max_model_len; /* context limit, tokens (vLLM max_model_len);
                               0 = none.  A request with prompt_tokens +
                               output_tokens > max_model_len is rejected at
                               the gateway on arrival (never routed; counted
                               in n_too_long), as vLLM's OpenAI server
                               answers HTTP 400 before scheduling when the
                               prompt plus the requested max_tokens exceed
                               it (docs/report.md, "Context limit") */
    cluster_faults faults;  /* destination faults (zeroed = none) */
    uint32_t fair_min_requests; /* per-key fairness counts keys with at
                               least this many measured requests (0 is read
                               as 1; docs/report.md, "Fairness") */
    const volatile sig_atomic_t *stop; /* optional: non-zero interrupts the run */
    /* Mixed fleet: groups[0..n_groups) cover the n_dest destinations in
     * order (group 0 has destinations 0 .. groups[0].n_dest - 1, ...);
     * each replaces deploy, cost and engine above for its destinations.
     * NULL / 0 = one group: every destination runs deploy, cost, engine. */
    const cluster_group *groups;
    uint32_t n_groups;
    /* Goodput bounds (models/latency.h; experiment.goodput_ttft_s and
     * goodput_tpot_s): zeroed = no goodput. */
    latency_slo goodput;
} cluster_params;

/* Per-destination results. */
typedef struct cluster_dest {
    engine_stats st;          /* engine counters (whole run + window) */
    uint64_t routed;          /* requests routed here (whole run) */
    uint64_t routed_measured; /* measured requests routed here */
    uint32_t pool_blocks;     /* its KV pool, blocks (its group's) */
    uint64_t pool_tokens;     /* its KV pool, tokens */
    uint32_t group;           /* its group (0 without groups) */
} cluster_dest;

/* Per-request record (exportable). */
typedef struct cluster_rec {
    double arrival_s;
    double ttft_s;     /* < 0 if no first token */
    double e2e_s;      /* < 0 if unfinished */
    double queue_s;    /* first scheduled (the step that admitted it) −
                          arrival, s; < 0 if never admitted */
    uint64_t key;      /* routing key (wl_request.key) */
    uint32_t dest;     /* CLUSTER_NO_DEST if too long (never routed) */
    uint32_t replica;  /* gateway replica that routed it */
    uint32_t prompt_tokens;
    uint32_t hit_tokens;
    uint32_t output_tokens;
    uint32_t preemptions; /* times preempted (recomputed) */
    uint8_t admitted;  /* reached an engine's running set at least once */
    uint8_t rejected;  /* could never fit in the destination's KV pool */
    uint8_t too_long;  /* over max_model_len: rejected at the gateway */
    uint8_t failed;    /* lost with no retry left (faults): failed for good */
    uint32_t retries;  /* client retries after losses (faults) */
} cluster_rec;

/* cluster_rec.dest of a request never routed (too long). */
#define CLUSTER_NO_DEST UINT32_MAX

/* Per-key (tenant) metrics of keys with at least fair_min_requests
 * measured requests (too-long ones excluded; docs/report.md, "Fairness"). */
typedef struct cluster_key {
    uint64_t key;
    uint64_t requests;  /* measured requests */
    double hit_rate;    /* hit / prompt tokens of its admitted requests */
    double ttft_p99;    /* s; +Inf if over 1 % of them had no first token */
    double ttft_mean;   /* s; mean over those with a first token */
} cluster_key;

typedef struct cluster_result {
    /* Conservation: n_arrived == n_completed + n_unfinished + n_rejected
     * + n_too_long + n_failed.  Too-long requests (max_model_len) are
     * counted in no other field: not measured, not in any percentile.
     * Failed ones (faults) are measured with TTFT and E2E +inf. */
    uint64_t n_arrived, n_completed, n_unfinished, n_rejected, n_too_long;
    /* Faults (docs/faults.md): every loss (n_lost + n_refused) either
     * schedules a retry or fails the request for good, so n_lost +
     * n_refused == n_retries + n_failed, and n_retries == Σ rec.retries. */
    uint64_t n_failed;   /* requests failed for good (no retry left) */
    uint64_t n_lost;     /* request losses in crashes (running + queued) */
    uint64_t n_refused;  /* dispatches to a crashed or draining destination */
    uint64_t n_retries;  /* client retries scheduled */
    uint64_t n_crashes;  /* crashes that happened (scheduled + random) */
    uint64_t health_checks; /* gateway health checks done */
    uint64_t n_measured, measured_completed;
    uint64_t prompt_tokens, hit_tokens; /* measured, admitted requests */
    double hit_rate;            /* hit_tokens / prompt_tokens */
    double ttft_p50, ttft_p90, ttft_p99, ttft_mean; /* s; mean over finished */
    double tpot_p50, tpot_p90, tpot_p99;            /* s per output token */
    double e2e_p50, e2e_p90, e2e_p99;               /* s */
    /* Serving metrics of the measured requests (models/latency.h): means
     * over finished ones, ITL from steps ending after the warm-up,
     * output tokens/s and goodput (NaN without cluster_params.goodput
     * bounds) over sim_end_s - warmup_s. */
    double tpot_mean, e2e_mean;                     /* s */
    double itl_mean, itl_p50, itl_p90, itl_p99;     /* s; NaN without gaps */
    uint64_t itl_gaps;                              /* decode tokens counted */
    double output_tps;                              /* tokens/s */
    double goodput_rps;                             /* requests/s */
    uint64_t n_good;                                /* completed within both bounds */
    double imbalance_work;      /* max/mean served tokens in the window */
    double imbalance_requests;  /* max/mean measured requests routed */
    double first_arrival_s, last_arrival_s, sim_end_s;
    double warmup_s;            /* cluster_params.warmup_s: records arriving
                                   at or after it are measured */
    double throughput_rps;      /* measured completions / (end − warm-up) */
    uint64_t steps, events, preemptions;
    uint64_t cruise_steps;      /* of `steps`, those run without a kernel
                                   event of their own (engine_cruise; not
                                   stored: a property of the simulator,
                                   not of the system simulated) */
    uint32_t pool_blocks;       /* KV pool per destination, blocks (group
                                   0's in a mixed fleet: see dest[]) */
    uint64_t pool_tokens;       /* KV pool per destination, tokens (ditto) */
    uint32_t n_dest;
    cluster_dest *dest;         /* n_dest entries, owned */
    cluster_rec *rec;           /* n_arrived entries by request id, owned */
    int interrupted;            /* 1 if stopped by *stop */
    route_telemetry tel;        /* the router's report (planned routers;
                                   replica 0's with several replicas) */
    uint64_t scrapes;           /* engine scrapes (0 when exact) */
    uint64_t scrapes_unread;    /* of those, not materialised because no
                                   dispatch could see them (models/cluster.c
                                   on_scrape); results do not depend on it */
    uint64_t kv_events;         /* engine KV events queued (0 unless the
                                   router consumes them) */
    /* Fairness over routing keys (docs/report.md, "Fairness"): keys[0..n_keys)
     * in ascending key order, owned; worst = max of their p99 TTFTs, spread
     * = p99 of their p99s (Hyndman-Fan type 7), jain = Jain's index of
     * their mean TTFTs, (Σx)² / (n Σx²); all NaN when no key qualifies. */
    size_t n_keys;
    cluster_key *keys;
    double fair_worst_p99, fair_spread_p99, fair_jain; /* s, s, in [1/n, 1] */
    /* Timeline: per window of cluster_params.timeline_s of arrival time. */
    size_t n_win;
    double *win_t0;             /* window start, s */
    uint64_t *win_arrivals;     /* requests arriving in the window */
    double *win_hit_rate;       /* served token-weighted hit rate of those */
    double *win_ttft_p99;       /* p99 TTFT of those (+Inf if any unfinished) */
} cluster_result;

/*
 * Run one simulation.  `src` yields requests (the run takes ownership of
 * each produced request's blocks); `rt` is the router, created from the
 * gateway's `env` and its sections' parameters in `rcfg` (which passed
 * route_check), once per gateway replica (p->gateway), and ticked every
 * route_interval_s(rt, rcfg) seconds.  Fills *out (free with
 * cluster_result_fini, also after an error).  Returns SIM_OK, SIM_EINVAL
 * (a deployment with no KV pool, groups that do not add up to n_dest or
 * change the block size, a bad router or gateway parameter),
 * SIM_ENOMEM, or SIM_EINTR when *stop was set (out->interrupted = 1,
 * partial results).
 */
int cluster_run(const cluster_params *p, const route_type *rt, const route_env *env,
                const route_config *rcfg, wl_source src, cluster_result *out);

/* Jain's fairness index of x[0..n): (Σx)² / (n Σx²) (R. Jain, D. Chiu,
 * W. Hawe, DEC-TR-301, 1984), in [1/n, 1]: 1 when all are equal, 1/n when
 * one is nonzero.  NaN when n = 0 or all are 0.  Cannot fail. */
double cluster_jain_index(const double *x, size_t n);

/* The same from the sums Σx, Σx² of n values.  Cannot fail. */
double cluster_jain_index_sums(double sx, double sxx, size_t n);

/* Free what a result owns.  Safe on a zeroed result and twice. */
void cluster_result_fini(cluster_result *r);

#endif
