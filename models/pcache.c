/*
 * Block pool, hash table and LRU list of the per-engine prefix cache.
 *
 * The hash table maps a 64-bit block hash to a block index.  Block hashes
 * come from xxHash, so their low bits are already uniform and serve as the
 * table index directly.  Hash 0 is reserved as "empty slot" and as "no
 * parent"; a content hash that happens to be 0 is remapped to 1 by the
 * workload layer's hashing (wl_block_hash), so it is never stored here.
 */
#include "pcache.h"

#include <stdlib.h>
#include <string.h>

#include "../sim/error.h"

typedef struct block {
    uint64_t hash;   /* content hash, 0 if unregistered */
    uint64_t parent; /* parent block's hash, 0 for a first block */
    uint32_t prev, next; /* LRU links (cached, unpinned) or never-used chain */
    uint32_t ref;    /* number of requests pinning the block */
    uint32_t in_lru; /* 1 if on the LRU list */
} block;

typedef struct slot {
    uint64_t hash;
    uint32_t block;
} slot;

struct pcache {
    block *b;
    uint32_t n;
    slot *tab;
    uint64_t mask;
    uint32_t fresh;      /* head of the never-used chain (linked via next) */
    uint32_t n_fresh;
    uint32_t lru_head;   /* coldest unpinned cached block */
    uint32_t lru_tail;   /* warmest */
    uint32_t n_lru;
    uint32_t n_pinned;
    uint32_t n_hashed;
};

pcache *pcache_create(uint32_t n_blocks)
{
    if (n_blocks == 0)
        return NULL;
    pcache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    uint64_t slots = 16;
    while (slots < 2ull * n_blocks)
        slots <<= 1;
    c->b = malloc(n_blocks * sizeof *c->b);
    c->tab = calloc(slots, sizeof *c->tab);
    if (!c->b || !c->tab) {
        free(c->b);
        free(c->tab);
        free(c);
        return NULL;
    }
    c->n = n_blocks;
    c->mask = slots - 1;
    c->lru_head = c->lru_tail = PCACHE_NONE;
    for (uint32_t i = 0; i < n_blocks; i++)
        c->b[i] = (block){.prev = PCACHE_NONE,
                          .next = i + 1 < n_blocks ? i + 1 : PCACHE_NONE};
    c->fresh = 0;
    c->n_fresh = n_blocks;
    return c;
}

void pcache_destroy(pcache *c)
{
    if (!c)
        return;
    free(c->b);
    free(c->tab);
    free(c);
}

uint32_t pcache_capacity(const pcache *c) { return c->n; }
uint32_t pcache_available(const pcache *c) { return c->n_fresh + c->n_lru; }
uint32_t pcache_pinned(const pcache *c) { return c->n_pinned; }
uint32_t pcache_cached(const pcache *c) { return c->n_hashed; }

/* ---- hash table ---- */

static uint32_t tab_find(const pcache *c, uint64_t h)
{
    for (uint64_t i = h & c->mask;; i = (i + 1) & c->mask) {
        if (c->tab[i].hash == h)
            return c->tab[i].block;
        if (c->tab[i].hash == 0)
            return PCACHE_NONE;
    }
}

static void tab_insert(pcache *c, uint64_t h, uint32_t blk)
{
    uint64_t i = h & c->mask;
    while (c->tab[i].hash != 0)
        i = (i + 1) & c->mask;
    c->tab[i] = (slot){h, blk};
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void tab_delete(pcache *c, uint64_t h)
{
    uint64_t i = h & c->mask;
    while (c->tab[i].hash != h) {
        SIM_ALWAYS(c->tab[i].hash != 0);
        i = (i + 1) & c->mask;
    }
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & c->mask;
        if (c->tab[j].hash == 0)
            break;
        uint64_t home = c->tab[j].hash & c->mask;
        /* Move j back to the hole at i unless its home lies cyclically in
         * (i, j], in which case it must stay where it is. */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            c->tab[i] = c->tab[j];
            i = j;
        }
    }
    c->tab[i] = (slot){0, 0};
}

/* ---- LRU list ---- */

static void lru_unlink(pcache *c, uint32_t i)
{
    block *x = &c->b[i];
    if (x->prev != PCACHE_NONE)
        c->b[x->prev].next = x->next;
    else
        c->lru_head = x->next;
    if (x->next != PCACHE_NONE)
        c->b[x->next].prev = x->prev;
    else
        c->lru_tail = x->prev;
    x->prev = x->next = PCACHE_NONE;
    x->in_lru = 0;
    c->n_lru--;
}

static void lru_push_warm(pcache *c, uint32_t i)
{
    block *x = &c->b[i];
    x->prev = c->lru_tail;
    x->next = PCACHE_NONE;
    if (c->lru_tail != PCACHE_NONE)
        c->b[c->lru_tail].next = i;
    else
        c->lru_head = i;
    c->lru_tail = i;
    x->in_lru = 1;
    c->n_lru++;
}

/* ---- public operations ---- */

uint32_t pcache_match(const pcache *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned)
{
    uint64_t parent = 0;
    uint32_t unpinned = 0, i;
    for (i = 0; i < n; i++) {
        uint32_t blk = tab_find(c, hashes[i]);
        if (blk == PCACHE_NONE || c->b[blk].parent != parent)
            break;
        unpinned += c->b[blk].ref == 0;
        parent = hashes[i];
    }
    if (n_unpinned)
        *n_unpinned = unpinned;
    return i;
}

void pcache_pin_prefix(pcache *c, const uint64_t *hashes, uint32_t m, uint32_t *out)
{
    for (uint32_t i = 0; i < m; i++) {
        uint32_t blk = tab_find(c, hashes[i]);
        SIM_ALWAYS(blk != PCACHE_NONE);
        block *x = &c->b[blk];
        if (x->ref == 0) {
            SIM_ALWAYS(x->in_lru);
            lru_unlink(c, blk);
            c->n_pinned++;
        }
        x->ref++;
        out[i] = blk;
    }
}

uint32_t pcache_alloc(pcache *c)
{
    uint32_t i;
    if (c->fresh != PCACHE_NONE) {
        i = c->fresh;
        c->fresh = c->b[i].next;
        c->n_fresh--;
    } else if (c->lru_head != PCACHE_NONE) {
        i = c->lru_head;
        lru_unlink(c, i);
        tab_delete(c, c->b[i].hash);
        c->n_hashed--;
    } else {
        return PCACHE_NONE;
    }
    c->b[i] = (block){.prev = PCACHE_NONE, .next = PCACHE_NONE, .ref = 1};
    c->n_pinned++;
    return i;
}

int pcache_commit(pcache *c, uint32_t b, uint64_t hash, uint64_t parent)
{
    block *x = &c->b[b];
    SIM_ALWAYS(x->ref > 0 && x->hash == 0 && hash != 0);
    if (tab_find(c, hash) != PCACHE_NONE)
        return 0;
    x->hash = hash;
    x->parent = parent;
    tab_insert(c, hash, b);
    c->n_hashed++;
    return 1;
}

void pcache_release(pcache *c, const uint32_t *blocks, uint32_t n)
{
    for (uint32_t k = n; k-- > 0;) {
        uint32_t i = blocks[k];
        block *x = &c->b[i];
        SIM_ALWAYS(x->ref > 0);
        if (--x->ref > 0)
            continue;
        c->n_pinned--;
        if (x->hash != 0) {
            lru_push_warm(c, i);
        } else {
            x->next = c->fresh;
            x->prev = PCACHE_NONE;
            c->fresh = i;
            c->n_fresh++;
        }
    }
}

void pcache_clear(pcache *c)
{
    while (c->lru_head != PCACHE_NONE) {
        uint32_t i = c->lru_head;
        lru_unlink(c, i);
        tab_delete(c, c->b[i].hash);
        c->n_hashed--;
        c->b[i] = (block){.prev = PCACHE_NONE, .next = c->fresh};
        c->fresh = i;
        c->n_fresh++;
    }
}

void pcache_check(const pcache *c)
{
    uint32_t pinned = 0, hashed = 0, lru = 0, fresh = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        const block *x = &c->b[i];
        if (x->ref)
            pinned++;
        if (x->hash) {
            hashed++;
            SIM_ALWAYS(tab_find(c, x->hash) == i);
        }
        if (x->in_lru) {
            SIM_ALWAYS(x->ref == 0 && x->hash != 0);
            lru++;
        }
    }
    for (uint32_t i = c->fresh; i != PCACHE_NONE; i = c->b[i].next) {
        SIM_ALWAYS(c->b[i].ref == 0 && c->b[i].hash == 0 && !c->b[i].in_lru);
        fresh++;
    }
    uint32_t walked = 0, prev = PCACHE_NONE;
    for (uint32_t i = c->lru_head; i != PCACHE_NONE; i = c->b[i].next) {
        SIM_ALWAYS(c->b[i].prev == prev);
        prev = i;
        walked++;
    }
    SIM_ALWAYS(prev == c->lru_tail);
    SIM_ALWAYS(pinned == c->n_pinned && hashed == c->n_hashed);
    SIM_ALWAYS(lru == c->n_lru && walked == lru && fresh == c->n_fresh);
    SIM_ALWAYS(pinned + lru + fresh == c->n);
    uint32_t in_tab = 0;
    for (uint64_t s = 0; s <= c->mask; s++)
        in_tab += c->tab[s].hash != 0;
    SIM_ALWAYS(in_tab == hashed);
}
