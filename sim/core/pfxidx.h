/*
 * A global prefix index over chained block hashes: one LRU table of at
 * most `capacity` blocks, each with the set of destinations it was sent to
 * and the time of its last touch -- the router-side table of AIBrix's
 * PrefixHashTable (vllm-project/aibrix pkg/utils/prefixcacheindexer/hash.go), used
 * by dualmap (models/routers/route_dualmap.c, index_blocks > 0) and aibrix_prefix
 * (models/routers/route_aibrix_prefix.c); with one destination, a chained-list
 * LRU (models/routers/route_kvidx.c route__kvlru: llmd approximate, dynamo_kv
 * without events).
 *
 * Semantics (the per-block table it replaces, kept as the test reference
 * tests/pfxidx_ref.c; every call below is defined by it):
 *  - add(h[0..n), d, now): for j = 0 .. n-1 in order: if h[j] is absent,
 *    first drop the least recently touched block if `capacity` blocks are
 *    held, then insert h[j] with the empty set; then h[j] gains d, its last
 *    touch becomes `now` and it becomes the most recently touched;
 *  - match(h[0..n), d): the number of leading blocks of h that are present
 *    and hold d;
 *  - expire(before): drop the least recently touched blocks while their
 *    last touch is < before.
 *
 * Implementation: runs, not blocks.  The blocks one add() touches get
 * consecutive LRU places and the same last touch, so the table is a queue
 * of runs -- consecutive blocks of one prompt with one destination set --
 * in LRU order; an add() takes the leading part of each run its prompt
 * passes through (a prompt shares a prefix of any run it meets, because
 * hashes are chained) and appends new runs; eviction shortens the oldest
 * run from its head; expiry drops whole runs.  A map from each run's first
 * hash finds runs: a present block that follows a present block of the
 * same prompt in another run, or follows an absent one, is always a run's
 * head (chaining again), so one probe per run passed plus one per absent
 * block, and a compare of the run's hash array against the prompt's
 * (sequential memory) instead of one random probe per block.  A counting
 * filter over the map's keys (8,192 16-bit counters) spares most absent
 * blocks that probe.
 *
 * Assumption (as the per-block table, which keys on the hash alone):
 * block hashes are chained -- h[j] determines h[0..j] -- so equal hashes
 * are the same block at the same depth; a 64-bit collision (probability
 * ~2^-64 per pair) breaks the equivalence, never memory safety.
 *
 * Opaque handle; one owner; not thread-safe.  Out of memory aborts
 * (sim_xmalloc), except in create.
 */
#ifndef CRSIM_SIM_PFXIDX_H
#define CRSIM_SIM_PFXIDX_H

#include <stdint.h>

typedef struct sim_pfxidx sim_pfxidx;

/* An empty index of at most `capacity` (> 0) blocks over destinations
 * 0 .. n_dest-1 (n_dest > 0).  Returns NULL if out of memory or an
 * argument is 0; free with sim_pfxidx_destroy. */
sim_pfxidx *sim_pfxidx_create(uint32_t capacity, uint32_t n_dest);

/* Free the index (NULL is a no-op).  Cannot fail. */
void sim_pfxidx_destroy(sim_pfxidx *x);

/* Drop blocks last touched before `before` (simulated s), least recent
 * first.  O(runs dropped). */
void sim_pfxidx_expire(sim_pfxidx *x, double before);

/* Leading blocks of h[0..n) present with destination d (< n_dest).
 * O(runs passed + blocks compared).  Cannot fail. */
uint32_t sim_pfxidx_match(const sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d);

/* sim_pfxidx_match for a set of destinations in one walk (AIBrix's
 * matching loop, models/routers/route_aibrix_prefix.c): on entry `alive` (one bit
 * per destination, ceil(n_dest / 64) words) is the set; for every d in it
 * len[d] becomes sim_pfxidx_match(x, h, n, d); other entries of len are
 * untouched and `alive` is clobbered.  The walk stops where no destination
 * of the set still matches.  O(runs passed + blocks compared).  Cannot
 * fail. */
void sim_pfxidx_match_set(const sim_pfxidx *x, const uint64_t *h, uint32_t n, uint64_t *alive,
                          uint32_t *len);

/* Drop blocks idle for `ttl` or longer, least recent first: every block
 * whose last touch t has !(now - t < ttl), i.e. AIBrix's test
 * (prefixcacheindexer/hash.go: time.Since(lastAccess) >= ttl) spelt as
 * models/routers/route_aibrix_prefix.c did (the same floating-point expression,
 * not sim_pfxidx_expire(now - ttl), which may round differently).
 * O(runs dropped). */
void sim_pfxidx_expire_idle(sim_pfxidx *x, double now, double ttl);

/* Change log, off until sim_pfxidx_log_on: every block that enters the
 * table (inserted by add) or leaves it (evicted by add, dropped by an
 * expiry) is appended, in the order it happens, with in[i] = 1 for
 * entering and 0 for leaving.  Destination-set changes of present blocks
 * are not logged (so with one destination the log is exactly that
 * destination's membership changes).  sim_pfxidx_log returns the entries
 * since the last sim_pfxidx_log_clear, through *h and *in (owned by the
 * index, valid until its next change).  Cannot fail (aborts if out of
 * memory). */
void sim_pfxidx_log_on(sim_pfxidx *x);
uint32_t sim_pfxidx_log(const sim_pfxidx *x, const uint64_t **h, const uint8_t **in);
void sim_pfxidx_log_clear(sim_pfxidx *x);

/* Run-head log, off until sim_pfxidx_head_log_on: every hash that
 * becomes the key of a run in the head map (in[i] = 1) or stops being one
 * (0), in the order it happens.  Between calls (after add and expiry have
 * returned) the keys are exactly the runs' first live blocks, so a user
 * who applies the log in order to a set holds the set of run heads -- the
 * blocks of the table that a walk over a prompt cannot reach from the
 * block before (the argument at the top of pfxidx.c), which is where
 * sim_pfxidx_run_at measures from.  Used by route__kvlru's run-level
 * walk (models/routers/route_kvidx.c).  Returned through *h and *in, owned by the
 * index, valid until its next change.  Cannot fail (aborts if out of
 * memory). */
void sim_pfxidx_head_log_on(sim_pfxidx *x);
uint32_t sim_pfxidx_head_log(const sim_pfxidx *x, const uint64_t **h, const uint8_t **in);
void sim_pfxidx_head_log_clear(sim_pfxidx *x);

/* If h[0] is the first live block of a run (a run head), the number of
 * leading blocks of h[0..n) (n >= 1) that run holds, in order: >= 1;
 * else 0.  The blocks from h[0] to h[k-1] are then present, and h[k], if
 * present, heads another run (hashes chained).  O(1) probes plus a
 * bisection of the run's hash array on a mismatch.  Cannot fail. */
uint32_t sim_pfxidx_run_at(const sim_pfxidx *x, const uint64_t *h, uint32_t n);

/* sim_pfxidx_run_at in stages, for the queues of many destinations at
 * once (their loads are independent, so issuing each stage for all of
 * them before the next lets the misses overlap): _at_fetch asks for the
 * lines the lookup of h0 reads; _at_run returns the run keyed h0
 * (SIM_PFXIDX_NONE if none) and asks for its record; _at_tail asks for
 * the hash its compare with a prompt of n blocks tests first; _at_common
 * is sim_pfxidx_run_at's value for that run and prompt h[0..n), found
 * without a bisection when it is `hint` (a guess, e.g. another queue's
 * answer at the same block: 0 = none; any value gives the same result).
 * Cannot fail. */
#define SIM_PFXIDX_NONE UINT32_MAX
void sim_pfxidx_at_fetch(const sim_pfxidx *x, uint64_t h0);
uint32_t sim_pfxidx_at_run(const sim_pfxidx *x, uint64_t h0);
void sim_pfxidx_at_tail(const sim_pfxidx *x, uint32_t r, uint32_t n);
uint32_t sim_pfxidx_at_common(const sim_pfxidx *x, uint32_t r, const uint64_t *h, uint32_t n,
                              uint32_t hint);

/* Record that the prompt h[0..n) was sent to d at `now` (semantics
 * above).  O(n) sequential copies + O(runs passed + blocks inserted +
 * blocks evicted) map operations.  Aborts if out of memory. */
void sim_pfxidx_add(sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d, double now);

/* Blocks held.  Cannot fail. */
uint32_t sim_pfxidx_size(const sim_pfxidx *x);

#endif
