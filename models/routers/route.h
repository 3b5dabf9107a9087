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

#include "sim/core/config.h"
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

/*
 * What a router can observe at a routing decision (docs/information-model.md).
 *
 * Two kinds of per-destination signal, each an array of n_dest entries
 * owned by the cluster and valid only during the call:
 *  - the router's own count, `outstanding`: exact, kept by this gateway
 *    replica (incremented when it dispatches, decremented when it sees the
 *    completion; other replicas' requests are not in it);
 *  - engine metrics "as scraped": the values of the cluster's last engine
 *    snapshot visible at now_s, i.e. taken at the latest scrape time
 *    t <= now_s - gateway.scrape_delay_s; with gateway.scrape_interval_s 0
 *    ("exact") they are re-read from the live engines at each decision and
 *    age_s is 0.  All destinations are scraped at the same instants.
 * Views built by hand (tests) may leave the scraped arrays other than
 * queued_tokens NULL; cluster_run always fills every field.
 */
typedef struct route_view {
    uint32_t n_dest;
    const uint32_t *outstanding;   /* per destination: requests this router
                                      (replica) dispatched that it has not
                                      seen complete */
    const uint64_t *queued_tokens; /* per destination: prompt tokens still to
                                      prefill over the requests inside the
                                      engine (waiting and running; chunked
                                      prefill), tokens, as scraped */
    double now_s;                  /* current simulated time, s */
    const route_ops *ops;          /* queued-request operations (see above) */
    const uint32_t *waiting;       /* per destination: requests in the
                                      engine's waiting queue, never admitted
                                      plus preempted (vLLM
                                      num_requests_waiting), as scraped */
    const uint32_t *running;       /* per destination: requests in the
                                      engine's running set (vLLM
                                      num_requests_running), as scraped */
    const double *kv_util;         /* per destination: KV blocks held by
                                      running requests / pool blocks, in
                                      [0, 1] (vLLM kv_cache_usage), as
                                      scraped */
    double age_s;                  /* now_s minus the time of the scrape
                                      the values above come from, s (>= 0;
                                      0 in the exact view), for a staleness
                                      limit (llm-d: 2 s).  One number: every
                                      destination is scraped at the same
                                      instants, so the ages are equal */
    const uint8_t *down;           /* per destination: 1 if the gateway's
                                      health checks mark it down (crashed or
                                      draining, as of the last check,
                                      gateway.health_check_interval_s;
                                      docs/faults.md), else 0.  NULL when no
                                      faults are configured: every
                                      destination is up.  Routers drop down
                                      destinations from their candidates
                                      (route_view_down) */
} route_view;

/* Whether the gateway's health view marks destination `d` down (false
 * when v->down is NULL).  Cannot fail. */
static inline int route_view_down(const route_view *v, uint32_t d)
{
    return v->down != NULL && v->down[d] != 0;
}

struct cost_model; /* models/cost.h */
struct plan_key;   /* models/routers/plan.h */

/*
 * What a gateway knows when a router is created: the deployment it fronts,
 * not the router's own settings (those are its parameters, below).
 */
typedef struct route_env {
    uint32_t n_dest;         /* number of destinations, >= 1 */
    uint64_t seed;           /* run seed; randomised routers draw from PCG
                                stream (seed, SIM_STREAM_ROUTER).  Replica
                                0 gets the run seed; replica i >= 1 a seed
                                derived from (run seed, SIM_STREAM_GATEWAY,
                                i) (models/cluster.h) */
    uint32_t block_size;     /* tokens per KV block, the unit of
                                wl_request.blocks (= engine.block_size) */
    uint32_t batch_tokens;   /* the engines' max_num_batched_tokens, the
                                step budget in tokens (0 = unknown) */
    uint32_t pool_blocks;    /* KV pool per destination, blocks (from
                                spec_kv_pool; 0 = unknown) */
    const struct cost_model *cost; /* the destinations' step-time model;
                                read (copied) at create only, may then be
                                freed.  NULL = unknown */
    double ttft_slo_s;       /* the run's TTFT SLO, s: the median of
                                experiment.slos (> 0) */
    const struct plan_key *nominal; /* the workload's nominal key shares
                                (rates summing to 1, descending), computed
                                only for a router whose needs() asks for
                                ROUTE_NEEDS_KEY_SHARES; else NULL */
    size_t n_nominal;
    double nominal_rate;     /* the run's offered load the shares are scaled
                                to, requests/s */
    uint32_t n_groups;       /* mixed fleet (cluster.groups,
                                docs/mixed-fleets.md): number of destination
                                groups; 0 = one uniform group.  Known at
                                check time */
    const uint32_t *group_of; /* n_dest entries: destination -> group index
                                (< n_groups), or NULL (uniform, and at check
                                time); pool_blocks, batch_tokens and cost
                                above are then those of group 0 */
    /* Mixed fleet, per destination (docs/mixed-fleets.md, "What routers
     * know"): n_dest entries each, filled by cluster_run when the cluster
     * has groups (owned by it, valid for the duration of create(): copy
     * what you keep); NULL without groups, and then every destination has
     * pool_blocks, batch_tokens and cost above.  Read them through
     * route_env_pool_blocks, route_env_batch_tokens and route_env_cost. */
    const uint32_t *dest_pool_blocks;  /* KV pool of destination d, blocks */
    const uint32_t *dest_batch_tokens; /* its max_num_batched_tokens */
    const struct cost_model *const *dest_cost; /* its step-time model */
} route_env;

/* KV pool of destination d (< n_dest), blocks: its group's in a mixed
 * fleet, else env->pool_blocks (0 = unknown). */
static inline uint32_t route_env_pool_blocks(const route_env *env, uint32_t d)
{
    return env->dest_pool_blocks ? env->dest_pool_blocks[d] : env->pool_blocks;
}

/* max_num_batched_tokens of destination d, tokens (0 = unknown). */
static inline uint32_t route_env_batch_tokens(const route_env *env, uint32_t d)
{
    return env->dest_batch_tokens ? env->dest_batch_tokens[d] : env->batch_tokens;
}

/* Step-time model of destination d (NULL = unknown); valid as env->cost. */
static inline const struct cost_model *route_env_cost(const route_env *env, uint32_t d)
{
    return env->dest_cost ? env->dest_cost[d] : env->cost;
}

/*
 * A router's configuration section: the keys below `prefix` in the config
 * (docs/config.md), bound into a params struct of `params_size` bytes that
 * the harness allocates (zeroed), binds, dumps and frees.  Several router
 * types may read one section (cr_replicate and cr_affinity read
 * router.cacheroute; chwbl and the cacheroute family read sticky's ring
 * size at router.sticky); each section is bound and dumped exactly once,
 * in the order of route_sections.  Every key must have a default.
 */
typedef struct route_section {
    const char *prefix;        /* dotted path, e.g. "router.cacheroute" */
    const sim_cfg_key *schema; /* paths relative to `prefix`; offsets into
                                  the params struct; NULL-path terminated */
    size_t params_size;        /* bytes of the params struct, >= 1 */
} route_section;

/* Most sections one router type reads. */
#define ROUTE_MAX_READS 4

/*
 * Where a config key was written, for check() messages.  fn writes to
 * buf (n bytes, NUL-terminated) "FILE:LINE" of full key `key` (or
 * "--set KEY"); for an absent key the location of its section, else of the
 * experiment.policies entry that selected the router, else the file name.
 */
typedef struct route_locate {
    void *ctx;
    void (*fn)(void *ctx, const char *key, char *buf, size_t n);
} route_locate;

/*
 * What a gateway measures when a request completes (it sees the response
 * stream: the first token, the last one and their count).  Passed to
 * route_type.on_complete; valid for the duration of the call only.
 */
typedef struct route_done {
    double now_s;           /* completion time, simulated s */
    double ttft_s;          /* arrival to first token, s; < 0 if the request
                               never produced one (rejected by the engine) */
    double e2e_s;           /* arrival to last token, s; < 0 if rejected */
    uint32_t output_tokens; /* tokens generated (0 if rejected) */
} route_done;

/* Time per output token of a completed request, s: (e2e - ttft) /
 * (output_tokens - 1), the usual serving-benchmark definition (e.g. vLLM's
 * benchmark_serving); NAN when it has fewer than 2 tokens or was rejected. */
static inline double route_done_tpot(const route_done *d)
{
    if (d->ttft_s < 0 || d->e2e_s < 0 || d->output_tokens < 2)
        return __builtin_nan("");
    return (d->e2e_s - d->ttft_s) / (double)(d->output_tokens - 1);
}

/*
 * An engine KV event (docs/information-model.md, "Engine KV events"): the
 * prefix cache of destination `dest` stored or evicted a run of blocks.
 * Engines report these as they happen (vLLM publishes BlockStored /
 * BlockRemoved after each step, over ZMQ; Dynamo and llm-d forward them to
 * their routers); a router sees each one gateway.kv_event_delay_s after the
 * engine's change, in the order the engines made them.  Passed to
 * route_type.on_kv_event; valid for the duration of the call only.
 *
 * Invariants the cluster guarantees: per destination, events arrive in the
 * order of the cache's changes; a block is stored before it is removed;
 * after all events of a destination up to time t are applied, the set of
 * blocks a router holds for it is exactly the set registered in the
 * engine's cache at time t, and it is closed under prefixes (every stored
 * run's parent is held, removals take descendants first).
 */
enum route_kv_kind {
    ROUTE_KV_STORED = 0,  /* hashes[0..n) were registered (computed) */
    ROUTE_KV_REMOVED = 1  /* hashes[0..n) were evicted */
};
typedef struct route_kv_event {
    uint32_t dest;          /* the engine */
    int kind;               /* enum route_kv_kind */
    uint64_t parent;        /* STORED: hash of the block before hashes[0]
                               (0 = hashes[0] is a first block); REMOVED: 0 */
    const uint64_t *hashes; /* chained block hashes (wl_request.blocks):
                               STORED, one chain in order (the changes of
                               one engine at one instant that continue a
                               chain are coalesced); REMOVED, the blocks
                               one engine evicted at one instant, each
                               evicted run in chain order */
    uint32_t n;             /* >= 1 */
    double t_s;             /* when the engine's cache changed, simulated s */
    double now_s;           /* delivery time: t_s + gateway.kv_event_delay_s */
} route_kv_event;

/* route_type.needs() bits: inputs the harness computes only on request. */
#define ROUTE_NEEDS_KEY_SHARES 1u /* route_env.nominal (warm start) */
#define ROUTE_NEEDS_KV_EVENTS 2u  /* engine KV events (route_type.on_kv_event):
                                     the engines' caches are observed only for
                                     a router whose parameters ask for them */
#define ROUTE_READS_NO_METRICS 4u /* with these parameters route() reads none
                                     of route_view's scraped metrics: treated
                                     as route_type.metrics_blind (no scrape
                                     snapshot, the arrays NULL, age_s 0) */

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
    uint64_t keys_moved;    /* keys admitted in both plans whose destination set
                               changed (the numerator of churn_dest; 0 for the first) */
    double warm_tokens_moved; /* Σ over those keys of (destinations new to the key)
                               × the key's shared-prefix footprint, tokens, from the
                               router's own view of the requests it routed */
    double held_imbalance;  /* predicted max/mean load of the previous table under
                               the new rates (hold, churn_aware; NaN otherwise) */
    uint64_t moves;         /* churn_aware rebalancing moves (<= its budget) */
    uint32_t skipped;       /* 1: the previous table was kept (hold; churn_aware
                               within 1 + epsilon) */
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

/*
 * A router (the plug-in contract, docs/router-contract.md).  `params` below is
 * always the array of the bound params structs of `sections`, in that
 * order (params[j] belongs to sections[j]).
 */
typedef struct route_type {
    const char *name;  /* registry name, e.g. "flat_lb" */
    const char *help;  /* one line for `crsim help policies` */
    size_t state_size; /* bytes the harness allocates (zeroed) for the state */
    /* True when route() reads none of route_view's scraped engine metrics
     * (queued_tokens, waiting, running, kv_util, age_s): the harness then
     * materialises no scrape for it (the engine state a snapshot would
     * copy is never read; results are the same bit for bit) and passes
     * those four arrays as NULL and age_s as 0, so a router that reads one
     * anyway fails at once rather than silently.  Default false (the
     * router may read them).  A router that reads them only under some
     * parameters leaves this false and returns ROUTE_READS_NO_METRICS
     * from needs() under the others (flat_lb, aibrix_prefix, preble). */
    bool metrics_blind;
    /* The config sections this router reads, NULL-terminated (at most
     * ROUTE_MAX_READS); NULL = none.  Each must be listed in
     * route_sections. */
    const route_section *const *sections;
    /* Optional: validate cross-key constraints of `params` against `env`,
     * at config load, before any run starts.  At that point env holds
     * n_dest, block_size, batch_tokens and ttft_slo_s; seed is 0,
     * pool_blocks 0 and cost and nominal NULL (not known yet).  Returns
     * SIM_OK or SIM_EINVAL with one line "LOCATION: key 'FULL.KEY' is ...;
     * expected ..." (LOCATION from route_where). */
    int (*check)(const void *const *params, const route_env *env, const route_locate *loc);
    /* Optional: ROUTE_NEEDS_* bits of the inputs these parameters need. */
    unsigned (*needs)(const void *const *params);
    /* Optional, with on_interval: the control interval, s (> 0), or 0 for
     * none.  The harness calls on_interval every interval_s seconds. */
    double (*interval_s)(const void *const *params);
    /* Initialise `state` from `env` and params that passed check().
     * Returns SIM_OK or an error code with a message (sim_errmsg), e.g.
     * SIM_EINVAL for an env input the router requires but lacks; on error
     * nothing needs freeing. */
    int (*create)(void *state, const route_env *env, const void *const *params);
    /* Destination in [0, v->n_dest) for request `r`.  Must not fail. */
    uint32_t (*route)(void *state, const wl_request *r, const route_view *v);
    /* Optional: request `r`, sent to `dest`, completed; `done` holds what
     * the gateway measured on the response stream (route_done). */
    void (*on_complete)(void *state, const wl_request *r, uint32_t dest,
                        const route_done *done);
    /* Optional: a control-interval boundary at `now_s` seconds (every
     * interval_s() seconds while requests arrive). */
    void (*on_interval)(void *state, double now_s);
    /* Optional: fill *out (zeroed by the caller) with the router's
     * telemetry; the caller owns the arrays.  Called once, before
     * destroy(). */
    void (*telemetry)(void *state, route_telemetry *out);
    /* Optional: free what create() allocated (not `state` itself).
     * Called on every replica, replicas N-1 .. 1 first, the primary last. */
    void (*destroy)(void *state);
    /* Optional: router replicas (gateway.replicas = N > 1).  Every replica
     * is a separate state made by create(); then, for replicas 1 .. N-1
     * in order, attach(state, primary) is called with replica 0's state.
     * A router whose state is partly global (a planned router's table,
     * built from the telemetry aggregated over all replicas) makes `state`
     * use the primary's global part here, keeping its own in-flight view
     * (route_view.outstanding is always the routing replica's) and its own
     * RNG.  When attach is set, on_interval and telemetry are called on
     * the primary only; without it replicas share nothing and every
     * replica gets on_interval (telemetry still comes from the primary).
     * Cannot fail. */
    void (*attach)(void *state, void *primary);
    /* Optional: an engine KV event reached the gateway (route_kv_event).
     * Delivered to every replica (each gateway subscribes to the engines'
     * event stream), replicas 0 .. N-1 in order.  Only a router that sets
     * this hook and whose needs() has ROUTE_NEEDS_KV_EVENTS makes the
     * engines report events: for the others the caches are not observed
     * and no event is queued.  Events arrive in delivery order, each with
     * its now_s, and every event due at or before the time of another
     * callback of the router (route, on_complete, on_first_token,
     * on_interval) is delivered before that callback; the harness may
     * call this later than now_s otherwise (models/cluster.c kv_catch_up:
     * just before the next such callback), so a router reads the state
     * it keeps from events in those callbacks only.  Cannot fail. */
    void (*on_kv_event)(void *state, const route_kv_event *ev);
    /* Optional: request `r`, sent to `dest`, emitted its first token at
     * `now_s` (the gateway sees the response stream start: e.g. Dynamo
     * marks the request's prefill done then).  Goes to the replica that
     * routed it.  Cannot fail. */
    void (*on_first_token)(void *state, const wl_request *r, uint32_t dest, double now_s);
} route_type;

/* Registry of routers: NULL-terminated, in `crsim help policies` order. */
extern const route_type *const route_registry[];

/* Their names, NULL-terminated, in the same order (the choices of
 * experiment.policies). */
extern const char *const route_names[];

/* Every router config section, NULL-terminated, in canonical dump order. */
extern const route_section *const route_sections[];

/* The router named `name`, or NULL. */
const route_type *route_find(const char *name);

/* Print "name  help" for every registered router to `f`. */
void route_list(FILE *f);

/* "LOCATION" of `key` for a check() message into buf (n bytes): from `loc`
 * or, when loc is NULL, the key itself.  Returns buf.  Cannot fail. */
const char *route_where(const route_locate *loc, const char *key, char *buf, size_t n);

/* ---- the bound parameters of every section ---- */

/* One params struct per entry of route_sections, owned. */
typedef struct route_config route_config;

/* A config with every section's struct allocated and zeroed (not yet
 * bound).  Free with route_config_free.  Cannot fail (aborts on OOM). */
route_config *route_config_new(void);

/* Free the structs and what binding put in them.  Accepts NULL. */
void route_config_free(route_config *c);

/* Write one sim_cfg_section per entry of route_sections to out[] (room
 * for route_config_n_sections() entries), with `out` pointing into `c`
 * (NULL when c is NULL: for help).  For binding together with other
 * schemas (sim_cfg_bind_sections) and for the canonical dump.  Returns
 * the number written.  Cannot fail. */
size_t route_config_sections(const route_config *c, sim_cfg_section *out);

/* Number of entries of route_sections. */
size_t route_config_n_sections(void);

/* Bind every section from `d`, which must hold router keys only (the
 * harness binds the sections with its own schema instead).  Returns
 * SIM_OK or SIM_EINVAL as sim_cfg_bind_sections. */
int route_config_bind(route_config *c, const sim_cfgdoc *d);

/* A new config bound from YAML text such as "router: {chwbl: {c: 2}}"
 * (named `name` in messages); "router: {}" binds every default.  *out is
 * NULL on error.  Returns SIM_OK or SIM_EINVAL. */
int route_config_parse(const char *yaml, const char *name, route_config **out);

/* The params array of `rt` (its sections' structs in `c`, in
 * rt->sections order) into out[0 .. ROUTE_MAX_READS).  Cannot fail. */
void route_config_args(const route_config *c, const route_type *rt,
                       const void *out[ROUTE_MAX_READS]);

/* rt->check on the params of `rt` in `c` (SIM_OK when rt has no check). */
int route_check(const route_type *rt, const route_config *c, const route_env *env,
                const route_locate *loc);

/* rt->needs on its params in `c` (0 when rt has none). */
unsigned route_needs(const route_type *rt, const route_config *c);

/* rt->interval_s on its params in `c` (0 when rt has none). */
double route_interval_s(const route_type *rt, const route_config *c);

#endif
