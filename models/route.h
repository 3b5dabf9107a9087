/*
 * The router plug-in interface (docs/design.md §7).
 *
 * A router is one const route_type descriptor (name, state size, function
 * pointers), in the style of gsl_rng_type.  The harness allocates
 * `state_size` bytes, calls create(), then route() once per arriving
 * request, on_complete() when a request finishes, and destroy() at the end.
 * What a router may read is the route_view: per-destination counts that a
 * real gateway can know (its own in-flight requests, queued tokens scraped
 * from the engines); engine cache contents are not visible.
 */
#ifndef CRSIM_MODELS_ROUTE_H
#define CRSIM_MODELS_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/core/rng.h"
#include "workloads/request.h"

/*
 * Operations the cluster offers a router on requests it has dispatched
 * but that no engine has started yet (DualMap-style rebalancing of
 * queued work).  A real gateway that holds per-instance queues can do
 * this; nothing else about engine state is exposed.
 */
typedef struct route_ops {
    void *ctx;
    /* Write up to `max` requests waiting (never admitted) at `dest`, in
     * queue order, to out[]; return how many were written. */
    uint32_t (*waiting)(void *ctx, uint32_t dest, const wl_request **out, uint32_t max);
    /* Move waiting request `r` from its destination to the back of `to`'s
     * queue.  Returns 1 if moved, 0 if `r` has started (or is unknown). */
    int (*migrate)(void *ctx, const wl_request *r, uint32_t to);
} route_ops;

/* What a router can observe at a routing decision. */
typedef struct route_view {
    uint32_t n_dest;
    const uint32_t *outstanding;   /* per destination: requests this router
                                      dispatched that have not completed */
    const uint64_t *queued_tokens; /* per destination: prompt tokens waiting
                                      for prefill, as scraped from the engine */
    double now_s;                  /* current simulated time, s */
    const route_ops *ops;          /* queued-request operations (see above) */
} route_view;

struct cost_model; /* models/cost.h */

/* Parameters of every router; each reads the fields it needs.  Filled from
 * the `router.*` keys of the config (docs/config.md). */
typedef struct route_params {
    uint32_t n_dest;         /* number of destinations, >= 1 */
    uint64_t seed;           /* run seed; randomised routers draw from PCG
                                stream (seed, SIM_STREAM_ROUTER) */
    uint32_t sticky_vnodes;  /* virtual nodes per destination on the ring
                                (sticky and chwbl share the ring) */
    double chwbl_c;          /* chwbl bound factor c = 1 + ε, >= 1 */
    double cr_q_cap;         /* cacheroute: per-destination capacity q_cap,
                                requests/s (0 = not set: an error) */
    double cr_slots;         /* cacheroute: warm-slot budget W per
                                destination (0 = not set: an error) */
    double interval_s;       /* control interval for on_interval, s (> 0) */
    const struct plan_key *cr_nominal; /* cacheroute warm start: the workload's
                                nominal key shares (rates summing to 1), or
                                NULL (default: the first plan waits for one
                                interval of measured rates) */
    size_t cr_n_nominal;
    double cr_nominal_rate;  /* requests/s the shares are scaled to */
    int cr_replan;           /* cacheroute: 1 = rebuild the plan every
                                interval (default); 0 = keep the first plan
                                (a stale plan, for drift studies) */
    /* ---- shared by dualmap and preble (docs/policies.md) ---- */
    double ttft_slo_s;       /* TTFT SLO, s (> 0; required by dualmap and
                                preble).  Config default: the run's SLO
                                threshold (experiment.slo_ttft_s) */
    uint32_t block_size;     /* tokens per KV block, the unit of
                                wl_request.blocks (= engine.block_size;
                                > 0, required by dualmap and preble) */
    uint32_t batch_tokens;   /* the engines' max_num_batched_tokens: chunk
                                size for prefill-time estimates from `cost`
                                (0 = whole prompt in one step) */
    uint32_t pool_blocks;    /* KV pool per destination, blocks (from
                                spec_kv_pool); sizes dualmap's router-side
                                prefix index (> 0, required by dualmap) */
    const struct cost_model *cost; /* the destinations' step-time model;
                                read (copied) at create only, may then be
                                freed.  Required by preble, and by dualmap
                                when dm_tp_s is 0.  NULL = not set */
    /* ---- dualmap ---- */
    uint32_t dm_vnodes;      /* virtual nodes per destination on each of
                                the two rings (0 = default 100, AIBrix) */
    double dm_tp_s;          /* per-token prefill time t_p, s/token
                                (0 = derive from `cost`: step time of a
                                batch_tokens prefill chunk / batch_tokens) */
    double dm_max_wait_s;    /* a candidate whose oldest waiting request is
                                this old counts as overloaded, s (0 =
                                default 60, AIBrix) */
    /* ---- preble ---- */
    double pb_window_s;      /* history window H of loads, prefix-tree
                                pruning and the overload detector, s
                                (0 = default 180) */
    double pb_high_load;     /* rebalance a heaviest/lightest pair when
                                load_hi >= this × load_lo (0 = default 1.5;
                                else > 1) */
} route_params;

/* One control interval of a planned router, reported at the end of a run. */
typedef struct route_interval {
    double t_s;             /* interval boundary (plan installed), simulated s */
    uint64_t keys;          /* keys seen in the interval just ended */
    uint64_t admitted;      /* keys admitted by the new plan */
    uint64_t sum_k;         /* Σ k_b of the new plan */
    double admitted_share;  /* admitted rate / measured rate, [0, 1] */
    double plan_imbalance;  /* expected max/mean load of the new plan */
    double build_wall_s;    /* wall-clock time to build it, s (not simulated) */
    double churn_dest;      /* keys admitted in both plans whose destination set
                               changed / keys admitted in both (NaN for the first) */
    double churn_k;         /* ... whose k_b changed / keys admitted in both */
} route_interval;

/* What a router reports at the end of a run (all arrays owned by the
 * receiver, freed with route_telemetry_fini). */
typedef struct route_telemetry {
    route_interval *iv;     /* per control interval, in time order */
    size_t n_iv;
    size_t n_keys;          /* admitted keys of the last plan */
    uint64_t *key;          /* routing keys */
    double *rate;           /* their measured rates, requests/s */
    uint32_t *kb;           /* k_b */
    uint32_t *off;          /* n_keys + 1 offsets into dest */
    uint32_t *dest;         /* destinations of key i: dest[off[i] .. off[i+1]) */
} route_telemetry;

/* Free a telemetry record's arrays.  Safe on a zeroed record and twice. */
void route_telemetry_fini(route_telemetry *t);

typedef struct route_type {
    const char *name;  /* registry name, e.g. "flat_lb" */
    const char *help;  /* one line for `crsim help policies` */
    size_t state_size; /* bytes the harness allocates (zeroed) for the state */
    /* Initialise `state`.  Returns SIM_OK or an error code with a message
     * (sim_errmsg); on error nothing needs freeing. */
    int (*create)(void *state, const route_params *p);
    /* Destination in [0, v->n_dest) for request `r`.  Must not fail. */
    uint32_t (*route)(void *state, const wl_request *r, const route_view *v);
    /* Optional: request `r`, sent to `dest`, completed. */
    void (*on_complete)(void *state, const wl_request *r, uint32_t dest);
    /* Optional: a control-interval boundary at `now_s` seconds (every
     * route_params.interval_s while requests arrive). */
    void (*on_interval)(void *state, double now_s);
    /* Optional: fill *out (zeroed by the caller) with the router's
     * telemetry; the caller owns the arrays.  Called once, before
     * destroy(). */
    void (*telemetry)(void *state, route_telemetry *out);
    /* Optional: free what create() allocated (not `state` itself). */
    void (*destroy)(void *state);
} route_type;

/* Registry of routers: NULL-terminated, searched by name. */
extern const route_type *const route_registry[];

/* The router named `name`, or NULL. */
const route_type *route_find(const char *name);

/* Print "name  help" for every registered router to `f`. */
void route_list(FILE *f);

/* The registered routers (defined in their own files). */
extern const route_type route_flat_lb;
extern const route_type route_sticky;
extern const route_type route_chwbl;
extern const route_type route_cacheroute;
extern const route_type route_cr_replicate;
extern const route_type route_cr_affinity;
extern const route_type route_dualmap;
extern const route_type route_preble;

#endif
