/*
 * Internal to the routers in models/route*.c and the planner (as SQLite
 * pairs btree.h with btreeInt.h): the consistent-hash ring, power of two
 * choices and the ring key hash that several policies share.  Not part of
 * the router API (models/routers/route.h); the harness never includes it.
 */
#ifndef CRSIM_MODELS_ROUTE_INT_H
#define CRSIM_MODELS_ROUTE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "models/routers/route.h"
#include "sim/core/rng.h"

/* ---- consistent-hash ring shared by sticky (and later chwbl, dualmap) ---- */

typedef struct route__ring {
    uint64_t *point;  /* sorted ring positions */
    uint32_t *dest;   /* owner of each position */
    uint32_t n;       /* positions = n_dest × vnodes */
} route__ring;

/* Build a ring with `vnodes` positions per destination; position j of
 * destination d is XXH3-64 of the text "d<d>#<j>" with seed `salt` (two
 * rings with different salts are independent).  Returns SIM_OK or
 * SIM_ENOMEM. */
int route__ring_init(route__ring *ring, uint32_t n_dest, uint32_t vnodes, uint64_t salt);

/* Free the ring's arrays.  Safe on a zeroed ring. */
void route__ring_fini(route__ring *ring);

/* Index of the first position at or clockwise after `h` (wrapping). */
uint32_t route__ring_find(const route__ring *ring, uint64_t h);

/* Power of two choices: two distinct destinations drawn uniformly from
 * `rng`, the one with fewer requests in flight wins, ties to the first
 * drawn (as sgl-router power_of_two).  Shared by flat_lb and the fallback of the
 * planned routers.  With a health view (faults) both are drawn among the
 * destinations it does not mark down.  Cannot fail. */
uint32_t route__p2c(sim_pcg32 *rng, const route_view *v);

/* Faults: the first destination on `ring` at or after position i that
 * v's health view does not mark down (a hash ring skips to the next live
 * node), or ring->dest[i] when all are down.  Cannot fail. */
uint32_t route__ring_live(const route__ring *ring, uint32_t i, const route_view *v);

/* Ring position of a routing key (a second hash of the key, so that the
 * ring does not depend on how keys were derived). */
uint64_t route__key_hash(uint64_t key, uint64_t salt);

/* ---- config sections read by more than one router file ---- */

/* router.sticky (models/routers/route_sticky.c): the hash ring's size, read by
 * sticky, chwbl and the cacheroute family (hash placement). */
typedef struct route__sticky_params {
    int64_t vnodes; /* virtual nodes per destination, [1, 1e5] */
} route__sticky_params;
extern const route_section route__sec_sticky;

/* Check that a ring of n_dest x vnodes positions fits (route__ring_init);
 * `key` is the vnodes key named in the message. */
int route__check_ring(uint32_t n_dest, int64_t vnodes, const char *key,
                      const route_locate *loc);

/* router.dualmap (models/routers/route_dualmap.c), read by dualmap and preble
 * (ttft_slo_s and tp_s). */
typedef struct route__dualmap_params {
    double ttft_slo_s;   /* s; 0 = route_env.ttft_slo_s */
    int64_t vnodes;      /* per destination on each ring */
    double tp_s;         /* s/token; 0 = from the cost model */
    double max_wait_s;   /* s */
    double switch_tokens;    /* SLO-switch threshold, tokens; 0 = ttft_slo_s / t_p */
    double rebalance_tokens; /* rebalancing threshold, tokens; 0 = ttft_slo_s / t_p */
    bool router_queue;       /* the router holds requests: list and move them */
    int64_t index_blocks;    /* global prefix-index entries; 0 = per-destination pool LRU */
    double index_ttl_s;      /* idle expiry of an index entry, s; 0 = none */
} route__dualmap_params;
extern const route_section route__sec_dualmap;

/* A created dualmap router's estimates for destination d (< n_dest), from
 * that destination's own pool, cost model and max_num_batched_tokens
 * (route_env_pool_blocks, route_env_cost, route_env_batch_tokens; its
 * group's in a mixed fleet): t_p in s per token, the rebalancing backlog
 * B in tokens, and the bound of its per-destination prefix index in
 * blocks.  For tests (test `fleet`); `state` is a dualmap's. */
double route__dualmap_tp_s(const void *state, uint32_t d);
double route__dualmap_backlog(const void *state, uint32_t d);
uint32_t route__dualmap_index_cap(const void *state, uint32_t d);

/* A created preble router's per-destination values for destination d
 * (< n_dest), from its own cost model and max_num_batched_tokens (its
 * group's in a mixed fleet): t_p in s per token (the TTFT estimate), the
 * prefill time of new_tokens after ctx cached ones in s (the window's
 * missed prefill work), and the batch budget in tokens.  For tests (test
 * `route_fleet`); `state` is a preble's. */
double route__preble_tp_s(const void *state, uint32_t d);
double route__preble_prefill_s(const void *state, uint32_t d, uint32_t new_tokens, uint32_t ctx);
uint32_t route__preble_batch_tokens(const void *state, uint32_t d);

/* router.cacheroute (models/routers/route_cacheroute.c), read by the cacheroute
 * family and, for its control interval, by preble (which prunes its
 * window on the same tick). */
typedef struct route__cacheroute_params {
    double q_cap;      /* per-destination capacity, requests/s (0 = not set) */
    double slots;      /* warm-slot budget W per destination (0 = not set) */
    double interval_s; /* control interval, s (> 0) */
    bool replan;       /* rebuild the plan every interval (legacy; false = hold) */
    bool warm_start;   /* first plan from the workload's nominal key shares */
    int rate_estimate; /* ROUTE__CR_RATE_* (router.cacheroute.rate_estimate) */
    int64_t rate_window;   /* intervals of the `window` estimator, >= 1 */
    double rate_half_life; /* intervals, > 0 (`ewma`) */
    int plan_policy;   /* ROUTE__CR_PLAN_* */
    double churn_epsilon;  /* imbalance tolerance ε of churn_aware, >= 0 */
    double churn_budget;   /* moves per re-plan / admitted keys, [0, 1] */
    int plan_weight;   /* enum plan_weight (models/routers/plan.h) */
    int admission;     /* enum plan_admission */
    int fallback;      /* ROUTE__CR_FALLBACK_* (faults: a table entry's
                          destination marked down) */
    double *q_cap_by_group; /* mixed fleets: q_cap per destination group
                               (cluster.groups order), requests/s; empty =
                               q_cap everywhere (docs/mixed-fleets.md) */
    size_t n_q_cap_by_group;
} route__cacheroute_params;
enum { ROUTE__CR_FALLBACK_NONE = 0, ROUTE__CR_FALLBACK_FAST = 1 };
enum { ROUTE__CR_RATE_INTERVAL = 0, ROUTE__CR_RATE_WINDOW, ROUTE__CR_RATE_EWMA,
       ROUTE__CR_RATE_NOMINAL };
enum { ROUTE__CR_PLAN_FRESH = 0, ROUTE__CR_PLAN_HOLD, ROUTE__CR_PLAN_CHURN };
extern const route_section route__sec_cacheroute;

/* The TTFT SLO a dualmap/preble router uses: the section's, or the run's
 * when that is 0. */
double route__ttft_slo(const route__dualmap_params *p, const route_env *env);

/* ---- per-destination block index (models/routers/route_kvidx.c) ---- */

/*
 * Which destination holds which block, as a router believes: a map from a
 * block hash to the set of destinations holding it (a bitset), and, for an
 * "ordered" index, each destination's (hash, destination) pairs in LRU
 * order with their last-touch times.  Fed either by engine KV events
 * (dynamo_kv, llmd precise: add on STORED, remove on REMOVED; unordered)
 * or by the router's own decisions (llmd approximate: add at decision time
 * with a per-destination LRU capacity, as the inference extension's
 * indexer; dynamo_kv without events: add at decision time, expire after a
 * TTL, as Dynamo's ApproxKvIndexer; both ordered -- the routers use the
 * equal but run-level route__kvlru below for these).  Memory: ~(16 + 8 *
 * ceil(n_dest / 64)) bytes per distinct hash plus the map, and for an
 * ordered index ~24 bytes per pair plus its map and queues; up to 64
 * destinations ("direct mode", models/routers/route_kvidx.c) a 16-byte table slot
 * per hash at most half full (32-64 bytes per hash) and 24 bytes per
 * pair.  Results do not depend on the mode.
 */
typedef struct route__kvidx route__kvidx;

/* A new index over n_dest destinations.  `ordered` keeps LRU order and
 * touch times (needed by `cap` and route__kvidx_expire); `cap` > 0 (ordered
 * only) bounds each destination's pairs, adding beyond evicting its least
 * recently touched; 0 = unbounded.  Free with route__kvidx_destroy.
 * Aborts if out of memory. */
route__kvidx *route__kvidx_create(uint32_t n_dest, bool ordered, uint32_t cap);

/* An index fed by engine KV events (dynamo_kv, llm-d precise), in *event
 * mode* for up to 64 destinations: each engine's cache kept as runs of
 * chained blocks as the events describe them (models/routers/route_kvidx.c,
 * "event mode"), read only through route__kvidx_prefix and
 * route__kvidx_size and fed only through route__kvidx_event; the other
 * calls abort on it.  Its events must be an engine cache's
 * (models/pcache.h, "Observing the cache": a STORED run extends a block
 * the destination holds, or starts at the root; a REMOVED block is
 * removed after the blocks that descend from it; every set closed under
 * prefixes), else it aborts.  Beyond 64 destinations an unordered index
 * sized for `pairs` (route__kvidx_reserve) fed through the same calls.
 * Answers equal the unordered index's.  Aborts if out of memory. */
route__kvidx *route__kvidx_create_events(uint32_t n_dest, uint64_t pairs);

/* A KV event for an index made by route__kvidx_create_events: destination
 * d's engine stored (`stored`, below the block `parent`, 0 = the root) or
 * removed hashes[0..n), chain order (route_kv_event).  hashes are copied.
 * O(n) sequential plus O(1) map operations per run started, extended or
 * shortened (event mode).  Aborts on an event no engine cache makes. */
void route__kvidx_event(route__kvidx *x, uint32_t d, bool stored, uint64_t parent,
                        const uint64_t *hashes, uint32_t n);

/* Free it.  Accepts NULL. */
void route__kvidx_destroy(route__kvidx *x);

/* Size the table for up to `pairs` (hash, destination) pairs at once (the
 * size its growth would reach: a power of two at most half full; direct
 * mode only, at most 2^22 pairs; 0 = no bound known, nothing done), so
 * that a run does not rehash it ~20 times on the way.  Results do not
 * depend on it.  Aborts if out of memory. */
void route__kvidx_reserve(route__kvidx *x, uint64_t pairs);

/* Destination d holds hashes[0..n), touched at `now_s` in that order (the
 * last one most recent).  O(n) amortised, prefetched.  Cannot fail (aborts
 * if out of memory). */
void route__kvidx_add(route__kvidx *x, uint32_t d, const uint64_t *hashes, uint32_t n,
                      double now_s);

/* Destination d no longer holds hashes[0..n) (those it did not hold are
 * skipped).  Returns how many it held.  O(n) expected, prefetched. */
uint32_t route__kvidx_remove(route__kvidx *x, uint32_t d, const uint64_t *hashes, uint32_t n);

/* A KV event's change, queued: destination d now holds (`stored`) or no
 * longer holds hashes[0..n).  Queued changes are applied in order before
 * the index is next read (size, has, walk, prefix, or route__kvidx_sync),
 * so every read sees exactly the set route__kvidx_add / _remove at queue
 * time would have given; applied together, the blocks of all the events
 * since the last read share one prefetch pipeline (the events are short:
 * applied one by one, most of their probes are cache misses).  hashes are
 * copied.  Direct unordered mode queues; otherwise applied at once.
 * Aborts if out of memory. */
void route__kvidx_queue(route__kvidx *x, uint32_t d, bool stored, const uint64_t *hashes,
                        uint32_t n);

/* Apply the queued changes now.  The readers do it themselves: they take
 * a const index, as they change no answer (the index is always created
 * non-const, by route__kvidx_create). */
void route__kvidx_sync(route__kvidx *x);

/* Ordered index: drop every pair last touched before `before_s`, on every
 * destination (O(destinations + pairs dropped)).  Cannot fail. */
void route__kvidx_expire(route__kvidx *x, double before_s);

/* Blocks destination d holds. */
uint32_t route__kvidx_size(const route__kvidx *x, uint32_t d);

/* 1 if destination d holds `hash`. */
int route__kvidx_has(const route__kvidx *x, uint32_t d, uint64_t hash);

/* The walk of the inference extension's matchLongestPrefix and of
 * Dynamo's RadixTree::find_matches: for i = 0, 1, ... while some
 * destination holds hashes[i], every destination holding it gets
 * count[d] += 1.  count (n_dest entries) is overwritten.  Returns the
 * blocks walked.  O(walked blocks + matches), prefetched. */
uint32_t route__kvidx_walk(const route__kvidx *x, const uint64_t *hashes, uint32_t n,
                           uint32_t *count);

/* Per destination, the longest prefix of hashes[0..n) it holds, into
 * len[d], found by bisection: exact when each destination's set is
 * closed under prefixes (an engine's cache as its KV events describe it;
 * a decision-fed index whose blocks are touched root to leaf at once and
 * expire by age), where it equals route__kvidx_walk's count.  Each
 * destination's result is that of its own bisection; in direct mode the
 * destinations that agree so far share it, so O(log n) probes per
 * distinct answer among the k destinations holding hashes[0] (each block
 * probed at most once), else O(k log n). */
void route__kvidx_prefix(route__kvidx *x, const uint64_t *hashes, uint32_t n, uint32_t *len);

/*
 * A decision-fed index (llmd approximate, dynamo_kv without events): the
 * same set as an ordered route__kvidx with the same `cap` after the same
 * adds and expiries, for hash lists that are chained (a hash determines
 * every hash before it in its list: the engines' chained block hashes,
 * llm-d's hash lists), but kept per destination as a queue of block runs
 * (sim/core/pfxidx.h) instead of one queue entry and one map probe per
 * block: an add costs one probe per run passed or block absent plus the
 * set changes.  The set is read through route__kvlru_index (walk, prefix,
 * size, has).  Memory: the unordered index plus ~8 bytes per held block
 * and ~40 per run.  Aborts if out of memory.
 */
typedef struct route__kvlru route__kvlru;

/* `cap` > 0 bounds each destination's blocks (LRU eviction); 0 =
 * unbounded.  `set`: keep the per-block set for route__kvlru_index's
 * queries (dynamo_kv without events: prefix); without it (llmd
 * approximate) only route__kvlru_walk reads the index, from the queues'
 * run heads -- no per-block table (on the flagship 32 MiB less, and no
 * set change per block entering or leaving a queue) -- unless n_dest >
 * 64, where the set is kept anyway.  Free with route__kvlru_destroy
 * (accepts NULL). */
route__kvlru *route__kvlru_create(uint32_t n_dest, uint32_t cap, bool set);
void route__kvlru_destroy(route__kvlru *l);

/* Destination d touched the chained list hashes[0..n) at now_s, first to
 * last (route__kvidx_add's order and eviction rule).  O(n) sequential +
 * O(runs passed + blocks inserted + blocks evicted) probes. */
void route__kvlru_add(route__kvlru *l, uint32_t d, const uint64_t *hashes, uint32_t n,
                      double now_s);

/* Drop every block last touched before before_s (route__kvidx_expire's
 * rule).  O(destinations + runs dropped + blocks dropped). */
void route__kvlru_expire(route__kvlru *l, double before_s);

/* The set, for the queries (owned by l: do not add to or free it), or
 * NULL if it is not kept (route__kvlru_create). */
route__kvidx *route__kvlru_index(const route__kvlru *l);

/* route__kvidx_walk over the set (the same count and return value),
 * whether or not the set is kept.  Without it: one probe of the index of
 * run heads per block walked (a small table) plus, per run met, a probe
 * of its queue's map and a compare of its hash array; O(walked blocks +
 * runs met).  Aborts if out of memory (its scratch). */
uint32_t route__kvlru_walk(route__kvlru *l, const uint64_t *hashes, uint32_t n, uint32_t *count);

#endif
