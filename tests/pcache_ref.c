/*
 * Block pool, hash table and LRU list of the per-engine prefix cache.
 *
 * The hash table maps a 64-bit block hash to a block index.  Block hashes
 * come from xxHash, so their low bits are already uniform and serve as the
 * table index directly.  Hash 0 is reserved as "unregistered block" and
 * as "no parent"; a content hash that happens to be 0 is remapped to 1 by
 * the workload layer's hashing (wl_block_hash), so it is never stored
 * here.  An empty table slot holds block index PCACHE_REF_NONE.
 */
#include "pcache_ref.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"

/* Software prefetch (GCC and Clang); a no-op elsewhere.  The pool and the
 * table of one engine are ~2 MB and 30 engines do not fit in any cache, so
 * every block visit is a likely miss: the loops over a request's blocks
 * below issue the loads of later blocks early, so that the misses overlap
 * instead of queueing one behind another. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* How many blocks ahead the loops prefetch (a few hundred ns of misses in
 * flight; measured flat between 8 and 32). */
enum { PF_DIST = 16 };

/* A block is in exactly one of three states: pinned (ref > 0), cached and
 * unpinned (ref == 0, hash != 0: on the LRU queue) or never-used / blank
 * (ref == 0, hash == 0: on the fresh stack). */
typedef struct block {
    uint64_t hash;    /* content hash, 0 if unregistered */
    uint64_t parent;  /* parent block's hash, 0 for a first block */
    uint32_t ref;     /* number of requests pinning the block */
    uint32_t lru_pos; /* position of its live LRU queue entry (mod 2^32) */
} block;

/* A table slot: the low 32 bits of the block's hash (its home slot is
 * tag & mask, mask < 2^32) and the block index, PCACHE_REF_NONE if empty.
 * 8 bytes instead of 16: eight slots per cache line, half the table's
 * footprint.  A tag match is confirmed against the full hash in the block,
 * which a match visits anyway (parent check); deletion knows the block and
 * compares indices. */
typedef struct slot {
    uint32_t tag;
    uint32_t block;
} slot;

#define EMPTY PCACHE_REF_NONE

struct pcache_ref {
    block *b;
    uint32_t n;
    slot *tab;
    uint64_t mask;
    uint32_t *fresh;     /* stack of blank blocks (top at n_fresh - 1) */
    uint32_t n_fresh;
    /* The LRU list as a FIFO queue of block indices with lazy deletion:
     * releasing a cached block appends it at position lru_tail (and
     * records the position in the block); pinning it again leaves its
     * entry in place, now stale; eviction takes the first live entry from
     * lru_head.  An entry at position p is live iff its block is unpinned,
     * registered and records p.  The live entries, in queue order, are
     * exactly the per-block LRU list cold to warm, so eviction order is
     * unchanged; but the next victims are known in advance (an array, not
     * a chain of links), so their blocks and table slots are prefetched
     * many victims ahead.  Stale entries are squeezed out when the queue
     * is full (capacity >= 2 n, so at least half of it is then stale:
     * amortised O(1) per release). */
    uint32_t *lru;
    uint64_t lru_mask;
    uint64_t lru_head, lru_tail;
    uint32_t n_lru;
    uint32_t n_pinned;
    uint32_t n_hashed;
    uint64_t version;    /* bumped by every change a match can observe */
};

pcache_ref *pcache_ref_create(uint32_t n_blocks)
{
    if (n_blocks == 0)
        return NULL;
    pcache_ref *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    uint64_t slots = 16;
    while (slots < 2ull * n_blocks)
        slots <<= 1;
    uint64_t qcap = 16;
    while (qcap < 2ull * n_blocks)
        qcap <<= 1;
    c->b = malloc(n_blocks * sizeof *c->b);
    c->tab = malloc(slots * sizeof *c->tab);
    c->fresh = malloc(n_blocks * sizeof *c->fresh);
    c->lru = malloc(qcap * sizeof *c->lru);
    if (!c->b || !c->tab || !c->fresh || !c->lru) {
        free(c->b);
        free(c->tab);
        free(c->fresh);
        free(c->lru);
        free(c);
        return NULL;
    }
    c->lru_mask = qcap - 1;
    memset(c->tab, 0xff, slots * sizeof *c->tab); /* every block = EMPTY */
    c->n = n_blocks;
    c->mask = slots - 1;
    /* Blank blocks are taken in index order 0, 1, 2, ... */
    for (uint32_t i = 0; i < n_blocks; i++) {
        c->b[i] = (block){0};
        c->fresh[i] = n_blocks - 1 - i;
    }
    c->n_fresh = n_blocks;
    return c;
}

void pcache_ref_destroy(pcache_ref *c)
{
    if (!c)
        return;
    free(c->b);
    free(c->tab);
    free(c->fresh);
    free(c->lru);
    free(c);
}

uint32_t pcache_ref_capacity(const pcache_ref *c) { return c->n; }
uint32_t pcache_ref_available(const pcache_ref *c) { return c->n_fresh + c->n_lru; }
uint32_t pcache_ref_blank(const pcache_ref *c) { return c->n_fresh; }
uint32_t pcache_ref_pinned(const pcache_ref *c) { return c->n_pinned; }
uint32_t pcache_ref_cached(const pcache_ref *c) { return c->n_hashed; }

/* ---- hash table ---- */

static uint32_t tab_find(const pcache_ref *c, uint64_t h)
{
    const uint32_t tag = (uint32_t)h;
    for (uint64_t i = h & c->mask;; i = (i + 1) & c->mask) {
        const slot sl = c->tab[i];
        if (sl.block == EMPTY)
            return PCACHE_REF_NONE;
        if (sl.tag == tag && c->b[sl.block].hash == h)
            return sl.block;
    }
}

static void tab_insert(pcache_ref *c, uint64_t h, uint32_t blk)
{
    uint64_t i = h & c->mask;
    while (c->tab[i].block != EMPTY)
        i = (i + 1) & c->mask;
    c->tab[i] = (slot){(uint32_t)h, blk};
}

/* Remove block `blk`, registered under hash `h`.  Backward-shift deletion
 * keeps probe chains intact without tombstones. */
static void tab_delete(pcache_ref *c, uint64_t h, uint32_t blk)
{
    uint64_t i = h & c->mask;
    while (c->tab[i].block != blk) {
        SIM_ALWAYS(c->tab[i].block != EMPTY);
        i = (i + 1) & c->mask;
    }
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & c->mask;
        if (c->tab[j].block == EMPTY)
            break;
        uint64_t home = c->tab[j].tag & c->mask;
        /* Move j back to the hole at i unless its home lies cyclically in
         * (i, j], in which case it must stay where it is. */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            c->tab[i] = c->tab[j];
            i = j;
        }
    }
    c->tab[i] = (slot){0, EMPTY};
}

/* ---- LRU list ---- */

static inline bool lru_live(const pcache_ref *c, uint64_t p, uint32_t i)
{
    const block *x = &c->b[i];
    return x->ref == 0 && x->hash != 0 && x->lru_pos == (uint32_t)p;
}

/* Squeeze the stale entries out of the full queue, keeping the order of
 * the live ones (and their blocks' positions up to date). */
static void lru_compact(pcache_ref *c)
{
    uint64_t w = c->lru_head;
    for (uint64_t p = c->lru_head; p != c->lru_tail; p++) {
        const uint32_t i = c->lru[p & c->lru_mask];
        if (lru_live(c, p, i)) {
            c->lru[w & c->lru_mask] = i;
            c->b[i].lru_pos = (uint32_t)w;
            w++;
        }
    }
    SIM_ALWAYS(w - c->lru_head == c->n_lru);
    c->lru_tail = w;
}

/* Registered block i, just unpinned, becomes the warmest cached block. */
static inline void lru_push_warm(pcache_ref *c, uint32_t i)
{
    /* Block i is unpinned already but not queued yet: an old, stale entry
     * of it must not pass for live while the queue is compacted, so its
     * position points past the queue's end meanwhile. */
    c->b[i].lru_pos = (uint32_t)c->lru_tail;
    if (c->lru_tail - c->lru_head > c->lru_mask)
        lru_compact(c);
    const uint64_t p = c->lru_tail++;
    c->lru[p & c->lru_mask] = i;
    c->b[i].lru_pos = (uint32_t)p;
    c->n_lru++;
}

/* Take the coldest cached unpinned block off the queue (n_lru > 0).  The
 * block of the entry PF_DIST ahead and the table slot of the one PF_DIST/2
 * ahead (whose block was prefetched earlier) are prefetched: hints only,
 * as entries may go stale before they are reached. */
static inline uint32_t lru_pop(pcache_ref *c)
{
    for (;;) {
        const uint64_t p = c->lru_head++;
        if (p + PF_DIST < c->lru_tail)
            PREFETCH(&c->b[c->lru[(p + PF_DIST) & c->lru_mask]]);
        if (p + PF_DIST / 2 < c->lru_tail)
            PREFETCH(&c->tab[c->b[c->lru[(p + PF_DIST / 2) & c->lru_mask]].hash & c->mask]);
        const uint32_t i = c->lru[p & c->lru_mask];
        if (lru_live(c, p, i)) {
            c->n_lru--;
            return i;
        }
    }
}

/* ---- public operations ---- */

uint64_t pcache_ref_version(const pcache_ref *c) { return c->version; }

/* Continue a match at block i (whose parent hash is `parent`, held by
 * block `prev`, PCACHE_REF_NONE if unknown), adding to *unpinned and writing
 * block indices to `out` if not NULL.  Block i is first looked for at
 * index prev + 1, where pcache_ref_alloc_run() tends to put the next block of
 * a sequence: a registered hash is held by exactly one block, so "block g
 * holds hashes[i]" is the same as "a lookup of hashes[i] returns g", and
 * the guess is exact when it holds; otherwise the table is probed.  While
 * guesses fail, the table slot of block i + PF_DIST is prefetched, and the
 * block of i + PF_DIST/2 once its slot (prefetched earlier) shows it: only
 * hints (a slot read early may be stale by the time it is used). */
static uint32_t match_from(const pcache_ref *c, const uint64_t *hashes, uint32_t i, uint32_t n,
                           uint64_t parent, uint32_t prev, uint32_t *out, uint32_t *unpinned)
{
    const uint64_t mask = c->mask;
    bool guessing = true; /* so that the first probe starts the pipeline */
    for (; i < n; i++) {
        uint32_t blk = prev + 1;
        if (blk < c->n && c->b[blk].hash == hashes[i]) {
            guessing = true;
        } else {
            if (guessing) {
                /* (Re)start the prefetch pipeline. */
                for (uint32_t k = i + 1; k < n && k <= i + PF_DIST; k++)
                    PREFETCH(&c->tab[hashes[k] & mask]);
                guessing = false;
            } else {
                if (i + PF_DIST < n)
                    PREFETCH(&c->tab[hashes[i + PF_DIST] & mask]);
                if (i + PF_DIST / 2 < n) {
                    const slot *s = &c->tab[hashes[i + PF_DIST / 2] & mask];
                    if (s->block != EMPTY && s->tag == (uint32_t)hashes[i + PF_DIST / 2])
                        PREFETCH(&c->b[s->block]);
                }
            }
            blk = tab_find(c, hashes[i]);
            if (blk == PCACHE_REF_NONE)
                break;
        }
        if (c->b[blk].parent != parent)
            break;
        *unpinned += c->b[blk].ref == 0;
        if (out)
            out[i] = blk;
        parent = hashes[i];
        prev = blk;
    }
    return i;
}

uint32_t pcache_ref_match(const pcache_ref *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned)
{
    uint32_t unpinned = 0;
    uint32_t m = match_from(c, hashes, 0, n, 0, PCACHE_REF_NONE, NULL, &unpinned);
    if (n_unpinned)
        *n_unpinned = unpinned;
    return m;
}

uint32_t pcache_ref_match_blocks(const pcache_ref *c, const uint64_t *hashes, uint32_t n,
                             uint32_t *blocks, uint32_t *n_unpinned)
{
    uint32_t unpinned = 0;
    uint32_t m = match_from(c, hashes, 0, n, 0, PCACHE_REF_NONE, blocks, &unpinned);
    if (n_unpinned)
        *n_unpinned = unpinned;
    return m;
}

uint32_t pcache_ref_rematch(const pcache_ref *c, const uint64_t *hashes, uint32_t n, uint32_t *blocks,
                        uint32_t m_prev, uint32_t *n_unpinned)
{
    /* A registered block is in the table under its hash, and a hash is
     * registered at most once, so "block blocks[i] holds hashes[i]" is
     * exactly "a lookup of hashes[i] returns blocks[i]".  Checking the
     * remembered blocks costs one block visit each instead of a table probe
     * plus a block visit, and the addresses are known in advance. */
    uint32_t unpinned = 0, i = 0;
    uint64_t parent = 0;
    if (m_prev > n)
        m_prev = n;
    for (uint32_t k = 0; k < m_prev && k < PF_DIST; k++)
        PREFETCH(&c->b[blocks[k]]);
    for (; i < m_prev; i++) {
        if (i + PF_DIST < m_prev)
            PREFETCH(&c->b[blocks[i + PF_DIST]]);
        const block *x = &c->b[blocks[i]];
        if (x->hash != hashes[i])
            break; /* evicted (maybe re-registered elsewhere): look it up */
        if (x->parent != parent) {
            /* The one block holding this hash has another parent: a fresh
             * match stops here too. */
            if (n_unpinned)
                *n_unpinned = unpinned;
            return i;
        }
        unpinned += x->ref == 0;
        parent = hashes[i];
    }
    uint32_t m = match_from(c, hashes, i, n, parent, i ? blocks[i - 1] : PCACHE_REF_NONE, blocks,
                            &unpinned);
    if (n_unpinned)
        *n_unpinned = unpinned;
    return m;
}

static inline void pin_one(pcache_ref *c, uint32_t blk)
{
    block *x = &c->b[blk];
    if (x->ref == 0) {
        SIM_ALWAYS(x->hash != 0); /* on the LRU queue: its entry goes stale */
        c->n_lru--;
        c->n_pinned++;
        c->version++;
    }
    x->ref++;
}

void pcache_ref_pin_prefix(pcache_ref *c, const uint64_t *hashes, uint32_t m, uint32_t *out)
{
    for (uint32_t i = 0; i < m; i++) {
        uint32_t blk = tab_find(c, hashes[i]);
        SIM_ALWAYS(blk != PCACHE_REF_NONE);
        pin_one(c, blk);
        out[i] = blk;
    }
}

void pcache_ref_pin_blocks(pcache_ref *c, const uint32_t *blocks, uint32_t m)
{
    for (uint32_t k = 0; k < m && k < PF_DIST; k++)
        PREFETCH(&c->b[blocks[k]]);
    for (uint32_t i = 0; i < m; i++) {
        if (i + PF_DIST < m)
            PREFETCH(&c->b[blocks[i + PF_DIST]]);
        SIM_ALWAYS(c->b[blocks[i]].hash != 0);
        pin_one(c, blocks[i]);
    }
}

/* Take one block: never-used first, else evict the coldest cached block. */
static inline uint32_t alloc_one(pcache_ref *c)
{
    uint32_t i;
    if (c->n_fresh) {
        i = c->fresh[--c->n_fresh];
    } else if (c->n_lru) {
        i = lru_pop(c);
        tab_delete(c, c->b[i].hash, i);
        c->n_hashed--;
        c->version++;
    } else {
        return PCACHE_REF_NONE;
    }
    c->b[i] = (block){.ref = 1};
    c->n_pinned++;
    return i;
}

uint32_t pcache_ref_alloc(pcache_ref *c) { return alloc_one(c); }

/* Evict the coldest cached block to the blank stack. */
static inline void evict_one(pcache_ref *c)
{
    const uint32_t i = lru_pop(c);
    tab_delete(c, c->b[i].hash, i);
    c->n_hashed--;
    c->version++;
    c->b[i] = (block){0};
    c->fresh[c->n_fresh++] = i;
}

uint32_t pcache_ref_alloc_run(pcache_ref *c, uint32_t *out, uint32_t n)
{
    /* Which blocks a run takes is semantic only through which cached
     * hashes it evicts: the blank ones first, then the coldest.  Which
     * block *indices* hold the new content is free, so the victims go to
     * the blank stack first and the run is popped from it: a run of
     * blocks released together (tail first) and evicted together comes
     * back in ascending index order, so the blocks of one sequence tend to
     * sit at consecutive indices, and walking a sequence's blocks
     * (match, pin, release) reads memory in order instead of at random.
     * pcache_ref_match() guesses the next block of a chain at the next index
     * for the same reason. */
    const uint32_t avail = c->n_fresh + c->n_lru;
    const uint32_t take = n < avail ? n : avail;
    while (c->n_fresh < take)
        evict_one(c);
    for (uint32_t k = 0; k < take; k++) {
        const uint32_t i = c->fresh[--c->n_fresh];
        c->b[i] = (block){.ref = 1};
        out[k] = i;
    }
    c->n_pinned += take;
    if (take < n)
        out[take] = PCACHE_REF_NONE;
    return take;
}

static inline int commit_one(pcache_ref *c, uint32_t b, uint64_t hash, uint64_t parent)
{
    block *x = &c->b[b];
    SIM_ALWAYS(x->ref > 0 && x->hash == 0 && hash != 0);
    if (tab_find(c, hash) != PCACHE_REF_NONE)
        return 0;
    x->hash = hash;
    x->parent = parent;
    tab_insert(c, hash, b);
    c->n_hashed++;
    c->version++;
    return 1;
}

int pcache_ref_commit(pcache_ref *c, uint32_t b, uint64_t hash, uint64_t parent)
{
    return commit_one(c, b, hash, parent);
}

uint32_t pcache_ref_commit_run(pcache_ref *c, const uint32_t *blocks, const uint64_t *hashes,
                           uint32_t n, uint64_t parent)
{
    uint32_t reg = 0;
    for (uint32_t k = 0; k < n && k < PF_DIST; k++) {
        PREFETCH(&c->tab[hashes[k] & c->mask]);
        PREFETCH(&c->b[blocks[k]]);
    }
    for (uint32_t k = 0; k < n; k++) {
        if (k + PF_DIST < n) {
            PREFETCH(&c->tab[hashes[k + PF_DIST] & c->mask]);
            PREFETCH(&c->b[blocks[k + PF_DIST]]);
        }
        reg += (uint32_t)commit_one(c, blocks[k], hashes[k], k ? hashes[k - 1] : parent);
    }
    return reg;
}

void pcache_ref_release(pcache_ref *c, const uint32_t *blocks, uint32_t n)
{
    for (uint32_t k = n; k-- > 0 && k + PF_DIST >= n;)
        PREFETCH(&c->b[blocks[k]]);
    for (uint32_t k = n; k-- > 0;) {
        if (k >= PF_DIST)
            PREFETCH(&c->b[blocks[k - PF_DIST]]);
        uint32_t i = blocks[k];
        block *x = &c->b[i];
        SIM_ALWAYS(x->ref > 0);
        if (--x->ref > 0)
            continue;
        c->n_pinned--;
        if (x->hash != 0) {
            lru_push_warm(c, i);
            c->version++;
        } else {
            c->fresh[c->n_fresh++] = i;
        }
    }
}

void pcache_ref_clear(pcache_ref *c)
{
    while (c->n_lru) {
        uint32_t i = lru_pop(c);
        tab_delete(c, c->b[i].hash, i);
        c->n_hashed--;
        c->version++;
        c->b[i] = (block){0};
        c->fresh[c->n_fresh++] = i;
    }
    c->lru_head = c->lru_tail; /* only stale entries were left */
}

void pcache_ref_check(const pcache_ref *c)
{
    uint32_t pinned = 0, hashed = 0, lru = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        const block *x = &c->b[i];
        if (x->ref)
            pinned++;
        if (x->hash) {
            hashed++;
            SIM_ALWAYS(tab_find(c, x->hash) == i);
        }
        if (x->ref == 0 && x->hash != 0) {
            /* Cached and unpinned: its recorded position is in the queue
             * and holds it. */
            const uint64_t p = c->lru_head + (uint32_t)(x->lru_pos - (uint32_t)c->lru_head);
            SIM_ALWAYS(p < c->lru_tail && c->lru[p & c->lru_mask] == i);
            lru++;
        }
    }
    SIM_ALWAYS(c->lru_tail - c->lru_head <= c->lru_mask + 1);
    uint32_t live = 0;
    for (uint64_t p = c->lru_head; p != c->lru_tail; p++)
        live += lru_live(c, p, c->lru[p & c->lru_mask]);
    for (uint32_t k = 0; k < c->n_fresh; k++) {
        const block *x = &c->b[c->fresh[k]];
        SIM_ALWAYS(x->ref == 0 && x->hash == 0);
    }
    SIM_ALWAYS(pinned == c->n_pinned && hashed == c->n_hashed);
    SIM_ALWAYS(lru == c->n_lru && live == lru);
    SIM_ALWAYS(pinned + lru + c->n_fresh == c->n);
    uint32_t in_tab = 0;
    for (uint64_t s = 0; s <= c->mask; s++)
        in_tab += c->tab[s].block != EMPTY;
    SIM_ALWAYS(in_tab == hashed);
}
