/*
 * Per-engine prefix (KV) cache: a pool of fixed-size KV blocks shared by
 * running requests and cached prefixes, as in vLLM's automatic prefix
 * caching, kept as a radix tree of block runs (as SGLang's RadixAttention
 * cache) so that its cost is per run of blocks, not per block.
 *
 * Blocks.  A block is identified by the chained hash of its content (the
 * hash of its parent block's hash and its own tokens), so two requests
 * share a block only if their whole prefix up to and including it is
 * identical.  A block is blank (free), private to one running sequence
 * (allocated, content not registered yet), or registered: in the tree under
 * its parent block, matchable by later requests.  Registered blocks in use
 * by running sequences are pinned (reference-counted) and never evicted;
 * when a block's count drops to zero it keeps its content and becomes the
 * warmest cached block of the LRU order; allocation takes blank blocks
 * first, then evicts the coldest cached blocks.  A sequence releases its
 * blocks tail first (the deepest blocks of a prefix are evicted first, as
 * vLLM frees a request's blocks), so a block is always evicted before its
 * parent.
 *
 * Tree.  Each node holds a run of consecutive registered blocks (their
 * hashes in one array) with one pin count for the run; a node's parent
 * holds the blocks just before it.  A sequence pins a path from the root:
 * every node on it, whole (a node is split where a pin ends inside it).
 * The LRU order is a list of unpinned nodes (a node's blocks are evicted
 * from its tail), which is exactly the per-block LRU order because a
 * node's blocks are always released together, tail first.  Matching walks
 * the nodes and compares hash runs in memory order; pinning and releasing
 * cost one update per node on the path, allocation is a count, eviction
 * one update per node it empties or shortens.  Memory: 8 bytes per
 * registered block plus ~40 bytes per node and a map from each node's
 * first hash to the node.
 *
 * Duplicates.  If a sequence registers a block whose hash is already in
 * the tree at the same place (another sequence computed and registered the
 * same content since this one was admitted), the sequence pins the
 * existing blocks instead and its private copies return to the blank pool
 * at once (SGLang's behaviour; the per-block cache this replaced kept the
 * copies until release, see docs/performance.md).  This also happens to
 * every request whose whole prompt is cached: the engine leaves its last
 * block to compute, and registering it finds the cached copy.
 *
 * Collisions.  Hashes are 64-bit and chained, so one hash at two places in
 * the tree (a collision) has probability ~ n^2 / 2^65 for n distinct
 * blocks.  A sequence whose next block's hash heads a run elsewhere stops
 * registering (its remaining blocks stay private, s->stuck); a collision
 * with an interior block goes unnoticed until a split would make it a
 * run's first hash, which aborts (SIM_ALWAYS) rather than corrupt the map.
 *
 * Sequences.  A running request's blocks are described by a pcache_seq
 * (embedded in the caller's record, zero-initialised = holds nothing): its
 * first n_tree blocks are registered (a path ending at node `node`), the
 * next n_priv are private.
 */
#ifndef CRSIM_MODELS_PCACHE_H
#define CRSIM_MODELS_PCACHE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct pcache pcache;

/* A running sequence's blocks.  Zero-initialise before first use; only
 * the pcache_seq_* functions change it. */
typedef struct pcache_seq {
    uint32_t node;   /* deepest pinned tree node (0 = none) */
    uint32_t n_tree; /* leading blocks that are registered and pinned */
    uint32_t n_priv; /* following blocks that are private (unregistered) */
    bool stuck;      /* a collision stopped its registrations */
    uint32_t hint;   /* optional, set by the owner before pcache_seq_pin:
                        the blocks it will commit hashes for in all (its
                        request's hash list); a run the sequence starts is
                        then sized for the rest of them at once instead of
                        grown by doubling as commits extend it.  0 = unknown.
                        Never changes what the cache holds. */
    bool stable;     /* optional, set by the owner before pcache_seq_pin:
                        every commit of s passes the same hash list, which
                        stays allocated and unchanged for the cache's
                        lifetime (a trace's shared block-hash table,
                        WL_BLOCKS_SHARED); the runs s registers are then
                        views of it instead of copies.  Never changes what
                        the cache holds or any result. */
} pcache_seq;

/* Create a pool of `n_blocks` blocks (>= 1).  Returns NULL if out of
 * memory.  Free with pcache_destroy(). */
pcache *pcache_create(uint32_t n_blocks);

/* Free the pool and the tree.  Accepts NULL.  Sequences still holding
 * blocks are simply forgotten. */
void pcache_destroy(pcache *c);

/* Total blocks in the pool. */
uint32_t pcache_capacity(const pcache *c);

/* Blocks that an allocation can take now: blank blocks plus unpinned
 * cached blocks (which allocation would evict). */
uint32_t pcache_available(const pcache *c);

/* Blank blocks: what an allocation takes before it evicts anything (an
 * allocation of at most this many changes no cached block and reports no
 * KV event). */
uint32_t pcache_blank(const pcache *c);

/* Blocks held by running sequences: private ones plus pinned registered
 * ones (a block pinned by several sequences counts once). */
uint32_t pcache_pinned(const pcache *c);

/* Registered blocks (pinned or not). */
uint32_t pcache_cached(const pcache *c);

/* Tree nodes in use (excluding the root): a measure of fragmentation,
 * for telemetry and tests. */
uint32_t pcache_nodes(const pcache *c);

/* Hashes the tree nodes' buffers have room for, live and free nodes
 * together: the cache's memory beyond its fixed arrays is about 8 bytes
 * times this.  A buffer whose run eviction has shortened to under a
 * quarter of it is cut to twice the run (at most 64 hashes are kept for
 * an emptied one), so this stays near the cached blocks instead of the
 * longest runs ever held.  For benchmarks and tests. */
uint64_t pcache_hash_capacity(const pcache *c);

/*
 * Length of the longest cached prefix of a request: the largest m <= n
 * such that blocks with hashes `hashes[0..m)` are registered along one path
 * from the root (block i under block i - 1).  `hashes` holds the chained
 * hashes of the request's full blocks, in order.  Does not change the
 * cache.  Returns m, in blocks.  If `n_unpinned` is not NULL it receives
 * how many of the m blocks are unpinned, i.e. how many blocks pinning the
 * prefix would take out of pcache_available().  Cost: one map probe per
 * tree node on the path plus a sequential comparison of the hashes (with
 * pcache_assume_chained: of each run's last hash, and a scan only where
 * the request parts from the run).
 */
uint32_t pcache_match(const pcache *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned);

/*
 * A counter that changes whenever the result of any pcache_match() (its
 * length or its unpinned count) might change: on every registration,
 * eviction and clear, and whenever a registered block's pin count goes
 * from 0 to 1 or from 1 to 0.  Allocating blank blocks, splitting nodes
 * and releasing private blocks leave it alone.  A caller that remembers a
 * match and the version it saw may reuse the match while the version is
 * unchanged.  Cannot fail.
 */
uint64_t pcache_version(const pcache *c);

/*
 * Pin the first `m` blocks of a request for sequence `s`, which must hold
 * nothing: m must not exceed what pcache_match(c, hashes, n, ...) returns
 * now.  Afterwards s->n_tree = m.  Splits the node where the prefix ends
 * if it ends inside one.  Cost: O(nodes on the path) plus the split's
 * copy.  Cannot fail (aborts if out of memory).
 */
void pcache_seq_pin(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t m);

/*
 * Give sequence `s` up to `n` more private blocks (s->n_priv grows): blank
 * blocks first, then evicting the coldest cached blocks, stopping when
 * every block is held.  Returns how many were given (< n only if
 * pcache_available() was < n).  Cost: O(1) plus one update per node that
 * eviction empties or shortens.  Cannot fail otherwise.
 */
uint32_t pcache_seq_alloc(pcache *c, pcache_seq *s, uint32_t n);

/*
 * pcache_seq_alloc without naming the sequence yet: up to `n` blocks leave
 * the pool as private blocks (blank first, then evicting the coldest, the
 * same way and in the same order as pcache_seq_alloc) and are held until
 * pcache_seq_grant() gives them to their sequence.  For many sequences
 * that each take one block at the same tick, in any order when all of them
 * succeed (an engine's steady decoders, models/engine.c): the cache ends
 * in the same state as with one pcache_seq_alloc(…, 1) per sequence.
 * Returns how many were taken.  Cost and failure as pcache_seq_alloc.
 */
uint32_t pcache_take(pcache *c, uint32_t n);

/* Give `s` `n` private blocks taken earlier from `c` with pcache_take()
 * (s->n_priv grows; the pool's counts do not change).  At most as many as
 * were taken and not granted yet. */
void pcache_seq_grant(pcache *c, pcache_seq *s, uint32_t n);

/*
 * Register the content of sequence `s`'s blocks up to `full` (exclusive):
 * blocks s->n_tree .. full-1, whose chained hashes are `hashes[i]`, must be
 * private (full <= s->n_tree + s->n_priv) and full.  They join the tree
 * after s's path (extending s's own last node when nothing else uses it);
 * blocks already registered at that place are pinned instead and s's
 * private copies freed (see Duplicates above).  Afterwards s->n_tree ==
 * full unless a collision stopped it (s->stuck).  Returns how many blocks
 * were newly registered.  Cost: O(full - n_tree) sequential hash copy plus
 * O(1) map updates.  Cannot fail (aborts if out of memory).
 */
uint32_t pcache_seq_commit(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t full);

/*
 * Release everything sequence `s` holds: its private blocks return to the
 * blank pool, and its path's pin counts drop; a node whose count reaches
 * 0 becomes the warmest cached run, the deepest first (tail-first release).
 * Leaves *s zeroed.  Cost: O(nodes on the path).  Cannot fail.
 */
void pcache_seq_release(pcache *c, pcache_seq *s);

/*
 * Observing the cache (engine KV events, docs/information-model.md).
 *
 * With an observer set, the cache reports every change of its set of
 * registered blocks, at the moment it happens:
 *  - PCACHE_STORED: blocks hashes[0..n) have just been registered (by
 *    pcache_seq_commit, newly: a block that was already registered at that
 *    place is pinned, not stored again), in chain order; `parent` is the
 *    hash of the block just before hashes[0], or 0 when hashes[0] is a
 *    first block.  One call per run of consecutive blocks.
 *  - PCACHE_REMOVED: blocks hashes[0..n) have just been evicted (by
 *    allocation or pcache_clear), in chain order (each a descendant of the
 *    one before); `parent` is 0.  Eviction takes blocks from the tail of a
 *    leaf run, so a block is always removed before its parent and the
 *    registered set stays closed under prefixes after every call.
 * A block is reported stored before it can be reported removed.  The
 * `hashes` array is valid during the call only; the observer must not
 * call back into the cache.  Without an observer (the default) the cache
 * pays one predictable branch per registration and eviction.
 */
enum pcache_change { PCACHE_STORED = 0, PCACHE_REMOVED = 1 };
typedef void (*pcache_observer)(void *ctx, int kind, uint64_t parent, const uint64_t *hashes,
                                uint32_t n);

/* Set (fn != NULL) or clear (fn == NULL) the observer.  Cannot fail. */
void pcache_set_observer(pcache *c, pcache_observer fn, void *ctx);

/*
 * Declare (on = true) that every hash list passed to this cache is chained
 * the way wl_request.blocks is (workloads/request.h: hash i is the 64-bit
 * XXH3 of hash i - 1 and block i's content, wl_block_hash), so that equal
 * hashes at one position stand for equal prefixes up to it.  A run
 * compare (pcache_match, and pcache_seq_commit meeting a run another
 * sequence registered) then tests the run's last hash first and returns
 * the whole run when it is equal, instead of reading every hash of the
 * run: one cache line for a long cold run (round 12 of
 * docs/performance.md).  When the last hashes differ it scans as before.
 * The answers differ from the full compare only if two different chains
 * meet in one 64-bit value inside one run of one cache (a collision of
 * XXH3-64; the same assumption vLLM's block-hash prefix cache makes on
 * every lookup).  Off by default, so that lists that are not chained
 * (hand-made ones in tests/test_pcache.c) are compared in full.  Set
 * before the first sequence; cannot fail.
 */
void pcache_assume_chained(pcache *c, bool on);

/* Drop every cached block that is not pinned (for tests and resets). */
void pcache_clear(pcache *c);

/* Check the internal invariants (counts, tree links, map, LRU list, pin
 * counts never growing down a path); aborts on violation.  O(nodes +
 * registered blocks); for tests. */
void pcache_check(const pcache *c);

#endif
