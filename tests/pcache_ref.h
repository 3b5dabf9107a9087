/*
 * REFERENCE MODEL FOR TESTS ONLY: the per-block prefix cache crsim's
 * engine used before the radix-tree cache (models/pcache.c), kept so that
 * tests/test_pcache.c can check the tree against it operation by
 * operation (they must agree exactly whenever no two running sequences
 * commit the same block; docs/performance.md).  Original description:
 *
 * Per-engine prefix (KV) cache: a pool of fixed-size KV blocks shared by
 * running requests and cached prefixes, as in vLLM's automatic prefix
 * caching.
 *
 * A block is identified by the chained hash of its content (the hash of its
 * parent block's hash and its own tokens), so two requests share a block
 * only if their whole prefix up to and including it is identical.  The cache
 * also stores each block's parent hash and checks it on lookup, so a block
 * with the right id but a different parent never matches.  Blocks in use by
 * running requests are pinned (reference-counted) and never evicted; blocks
 * whose count drops to zero keep their content and go to the warm end of an
 * LRU list, and allocation takes never-used blocks first, then evicts from
 * the cold end of the LRU list.
 *
 * Costs: lookup, pin, commit and release are O(1) per block (open-addressing
 * hash table with linear probing and backward-shift deletion; the LRU list
 * is a FIFO queue of block indices with lazy deletion, amortised O(1), so
 * that eviction knows its next victims in advance).  Memory: 24 bytes per
 * block, 8 bytes per hash-table slot (2 slots per block), 4 bytes per
 * blank-stack entry and 4 bytes per LRU-queue entry (2 per block): 1.4 MB
 * for the 28,335 blocks of a 70B fp8 TP=2 engine, still too much for the
 * caches of a 30-engine cluster, so each block visited is a likely miss.
 * The *_run / *_blocks variants below take whole runs of blocks so that
 * they can prefetch later blocks while working on earlier ones
 * (docs/performance.md); they behave exactly as the per-block calls in a
 * loop.
 */
#ifndef CRSIM_TESTS_PCACHE_REF_H
#define CRSIM_TESTS_PCACHE_REF_H

#include <stdint.h>

/* Block index that means "no block". */
#define PCACHE_REF_NONE UINT32_MAX

typedef struct pcache_ref pcache_ref;

/* Create a pool of `n_blocks` blocks (>= 1).  Returns NULL if out of
 * memory.  Free with pcache_ref_destroy(). */
pcache_ref *pcache_ref_create(uint32_t n_blocks);

/* Free the pool.  Accepts NULL. */
void pcache_ref_destroy(pcache_ref *c);

/* Total blocks in the pool. */
uint32_t pcache_ref_capacity(const pcache_ref *c);

/* Blocks that an allocation can take now: never-used blocks plus unpinned
 * cached blocks (which allocation would evict). */
uint32_t pcache_ref_available(const pcache_ref *c);

/* Blank (never-used or released unregistered) blocks: what allocation
 * takes before it evicts. */
uint32_t pcache_ref_blank(const pcache_ref *c);

/* Blocks that are pinned by at least one request. */
uint32_t pcache_ref_pinned(const pcache_ref *c);

/* Number of blocks currently holding a registered hash (pinned or not). */
uint32_t pcache_ref_cached(const pcache_ref *c);

/*
 * Length of the longest cached prefix of a request: the largest m <= n such
 * that for every i < m a block with hash `hashes[i]` and parent hash
 * `hashes[i-1]` (0 for i = 0) is registered.  `hashes` holds the chained
 * hashes of the request's full blocks, in order.  Does not change the cache
 * (no LRU touch).  Returns m, in blocks.  If `n_unpinned` is not NULL it
 * receives how many of the m blocks are unpinned, i.e. how many blocks
 * pinning the prefix would take out of pcache_ref_available().
 */
uint32_t pcache_ref_match(const pcache_ref *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned);

/*
 * As pcache_ref_match(), and also write the index of matched block i to
 * `blocks[i]` for i < m (`blocks` must hold n entries; entries from m on
 * are left alone).  The indices are valid for pcache_ref_pin_blocks() and
 * pcache_ref_rematch() until pcache_ref_version() changes.  Cannot fail.
 */
uint32_t pcache_ref_match_blocks(const pcache_ref *c, const uint64_t *hashes, uint32_t n,
                             uint32_t *blocks, uint32_t *n_unpinned);

/*
 * A counter that changes whenever the result of any pcache_ref_match() (its
 * length or its unpinned count) might change: on every registration,
 * eviction and clear of a cached block, and whenever a registered block's
 * pin count goes from 0 to 1 or from 1 to 0.  Allocating never-used
 * blocks, duplicate commits and releasing unregistered blocks leave it
 * alone.  A caller that remembers a match and the version it saw may
 * reuse the match while the version is unchanged.  Cannot fail.
 */
uint64_t pcache_ref_version(const pcache_ref *c);

/*
 * Redo a match that pcache_ref_match_blocks() (or an earlier rematch) found to
 * be `m_prev` blocks long with indices `blocks[0..m_prev)`, for the same
 * `hashes` and `n`: returns exactly what pcache_ref_match_blocks() would
 * return now, and updates `blocks` and *n_unpinned (if not NULL) likewise.
 * Cost: one visit per remembered block (no table probe) while the
 * remembered blocks still hold their hashes, then table lookups for the
 * rest, so it is cheaper than a fresh match when the cache changed
 * elsewhere (a request waiting for memory is re-matched every step).
 * Cannot fail.
 */
uint32_t pcache_ref_rematch(const pcache_ref *c, const uint64_t *hashes, uint32_t n, uint32_t *blocks,
                        uint32_t m_prev, uint32_t *n_unpinned);

/*
 * Pin the first `m` blocks of a request found by pcache_ref_match() (m must not
 * exceed what pcache_ref_match returned, and no allocation may happen in
 * between) and write their block indices to `out[0..m)`.  Unpinned blocks
 * leave the LRU list.  Cannot fail.
 */
void pcache_ref_pin_prefix(pcache_ref *c, const uint64_t *hashes, uint32_t m, uint32_t *out);

/*
 * Pin blocks `blocks[0..m)` found by pcache_ref_match_blocks() or
 * pcache_ref_rematch() while pcache_ref_version() has not changed since (the same
 * effect as pcache_ref_pin_prefix() without the m table lookups).  Cannot fail.
 */
void pcache_ref_pin_blocks(pcache_ref *c, const uint32_t *blocks, uint32_t m);

/*
 * Take one block for new KV content and pin it (count 1, no hash).  Takes a
 * never-used block if any, else evicts the least recently released cached
 * block (unregistering its hash).  Returns the block index, or PCACHE_REF_NONE
 * if every block is pinned.
 */
uint32_t pcache_ref_alloc(pcache_ref *c);

/*
 * Allocate up to `n` blocks into `out[0..n)` with the same effect on the
 * cache's contents as n calls of pcache_ref_alloc() (never-used blocks first,
 * then the same cached blocks evicted in the same order), stopping when
 * every block is pinned; out[k] = PCACHE_REF_NONE after the last one taken if
 * fewer than n.  The indices handed out may differ from those n single
 * calls would return: a run of blocks evicted together is handed out in
 * ascending index order, so a sequence's blocks tend to be adjacent in
 * memory (docs/performance.md).  Returns how many were allocated (< n only
 * if every block is pinned).  Cannot fail otherwise.
 */
uint32_t pcache_ref_alloc_run(pcache_ref *c, uint32_t *out, uint32_t n);

/*
 * Register the content hash of a pinned, full block `b` whose parent block
 * has hash `parent` (0 for the first block), so later requests can match
 * it.  If another block already holds `hash`, `b` stays unregistered (the
 * two are duplicates; `b` returns to the never-used pool when released), as
 * vLLM does.  Returns 1 if registered, 0 if a duplicate.
 */
int pcache_ref_commit(pcache_ref *c, uint32_t b, uint64_t hash, uint64_t parent);

/*
 * Commit a run of consecutive blocks of one sequence: block `blocks[k]`
 * gets hash `hashes[k]` with parent `hashes[k-1]` (`parent` for k = 0),
 * exactly as n calls of pcache_ref_commit() in order would.  Returns how many
 * were registered (the rest were duplicates).  Cannot fail.
 */
uint32_t pcache_ref_commit_run(pcache_ref *c, const uint32_t *blocks, const uint64_t *hashes,
                           uint32_t n, uint64_t parent);

/*
 * Unpin `n` blocks `blocks[0..n)`, releasing them in reverse order so that
 * the deepest blocks of a prefix are evicted first (vLLM frees a request's
 * blocks tail first for the same reason).  A block whose count drops to 0
 * goes to the warm end of the LRU list if it holds a hash, else back to the
 * never-used pool.  Cannot fail.
 */
void pcache_ref_release(pcache_ref *c, const uint32_t *blocks, uint32_t n);

/* Drop every cached block that is not pinned (for tests and resets). */
void pcache_ref_clear(pcache_ref *c);

/* Check the internal invariants (counts, LRU links, table consistency);
 * aborts on violation.  O(n_blocks); for tests. */
void pcache_ref_check(const pcache_ref *c);

#endif
