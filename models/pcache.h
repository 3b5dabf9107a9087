/*
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
 * hash table with linear probing and backward-shift deletion, intrusive
 * doubly linked LRU list).  Memory: 32 bytes per block plus 16 bytes per
 * hash-table slot (2 slots per block).
 */
#ifndef CRSIM_MODELS_PCACHE_H
#define CRSIM_MODELS_PCACHE_H

#include <stdint.h>

/* Block index that means "no block". */
#define PCACHE_NONE UINT32_MAX

typedef struct pcache pcache;

/* Create a pool of `n_blocks` blocks (>= 1).  Returns NULL if out of
 * memory.  Free with pcache_destroy(). */
pcache *pcache_create(uint32_t n_blocks);

/* Free the pool.  Accepts NULL. */
void pcache_destroy(pcache *c);

/* Total blocks in the pool. */
uint32_t pcache_capacity(const pcache *c);

/* Blocks that an allocation can take now: never-used blocks plus unpinned
 * cached blocks (which allocation would evict). */
uint32_t pcache_available(const pcache *c);

/* Blocks that are pinned by at least one request. */
uint32_t pcache_pinned(const pcache *c);

/* Number of blocks currently holding a registered hash (pinned or not). */
uint32_t pcache_cached(const pcache *c);

/*
 * Length of the longest cached prefix of a request: the largest m <= n such
 * that for every i < m a block with hash `hashes[i]` and parent hash
 * `hashes[i-1]` (0 for i = 0) is registered.  `hashes` holds the chained
 * hashes of the request's full blocks, in order.  Does not change the cache
 * (no LRU touch).  Returns m, in blocks.  If `n_unpinned` is not NULL it
 * receives how many of the m blocks are unpinned, i.e. how many blocks
 * pinning the prefix would take out of pcache_available().
 */
uint32_t pcache_match(const pcache *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned);

/*
 * Pin the first `m` blocks of a request found by pcache_match() (m must not
 * exceed what pcache_match returned, and no allocation may happen in
 * between) and write their block indices to `out[0..m)`.  Unpinned blocks
 * leave the LRU list.  Cannot fail.
 */
void pcache_pin_prefix(pcache *c, const uint64_t *hashes, uint32_t m, uint32_t *out);

/*
 * Take one block for new KV content and pin it (count 1, no hash).  Takes a
 * never-used block if any, else evicts the least recently released cached
 * block (unregistering its hash).  Returns the block index, or PCACHE_NONE
 * if every block is pinned.
 */
uint32_t pcache_alloc(pcache *c);

/*
 * Register the content hash of a pinned, full block `b` whose parent block
 * has hash `parent` (0 for the first block), so later requests can match
 * it.  If another block already holds `hash`, `b` stays unregistered (the
 * two are duplicates; `b` returns to the never-used pool when released), as
 * vLLM does.  Returns 1 if registered, 0 if a duplicate.
 */
int pcache_commit(pcache *c, uint32_t b, uint64_t hash, uint64_t parent);

/*
 * Unpin `n` blocks `blocks[0..n)`, releasing them in reverse order so that
 * the deepest blocks of a prefix are evicted first (vLLM frees a request's
 * blocks tail first for the same reason).  A block whose count drops to 0
 * goes to the warm end of the LRU list if it holds a hash, else back to the
 * never-used pool.  Cannot fail.
 */
void pcache_release(pcache *c, const uint32_t *blocks, uint32_t n);

/* Drop every cached block that is not pinned (for tests and resets). */
void pcache_clear(pcache *c);

/* Check the internal invariants (counts, LRU links, table consistency);
 * aborts on violation.  O(n_blocks); for tests. */
void pcache_check(const pcache *c);

#endif
