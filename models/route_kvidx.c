/*
 * The per-destination block index of the KV-aware production routers
 * (route_int.h, route__kvidx): dynamo_kv's radix tree and the llm-d /
 * inference-extension prefix indexes, in crsim's terms.
 *
 * Two maps.  The pair map sends mix(hash, dest) to a pair record (its
 * destination's LRU position and last touch); each destination's pairs
 * form a lazy LRU queue (sim/core/lruq.h), and a pair record is only ever
 * reused by its own destination (its free list), which keeps the lazy
 * queue's stale entries stale.  The hash map sends a block hash to an
 * entry holding the bitset of destinations that hold it, so that a walk
 * over a request's blocks costs one probe per block whatever the number
 * of destinations (the inference extension's hashToPods; Dynamo's tree
 * nodes carry the same worker sets).
 *
 * Rejected alternative: one hash set per destination, probed per
 * destination per block, costs n_dest probes per block: 30x the walk on
 * the flagship.
 */
#include <stdlib.h>
#include <string.h>

#include "models/route_int.h"
#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/lruq.h"
#include "sim/core/u64map.h"

#define KX_NONE UINT32_MAX
#define KX_PF 16 /* blocks ahead the walks prefetch */

typedef struct kx_pair {
    uint64_t hash;
    double last;   /* last touch, s */
    uint32_t pos;  /* live LRU-queue position (mod 2^32); free-list link when free */
    uint32_t g;    /* its hash entry */
} kx_pair;

typedef struct kx_dest {
    sim_lruq q;
    uint32_t live;
    uint32_t free; /* free pair records of this destination */
} kx_dest;

struct route__kvidx {
    uint32_t n_dest, words, cap;
    sim_u64map pmap; /* mix(hash, dest) -> pair */
    kx_pair *pair;
    uint32_t n_pair, cap_pair;
    kx_dest *dst;
    sim_u64map gmap; /* hash -> entry */
    uint64_t *gbits; /* words per entry */
    uint32_t *gcount; /* destinations holding the entry's hash */
    uint64_t *ghash;
    uint32_t n_g, cap_g, gfree; /* free entries chained through gcount */
    /* route__kvidx_prefix scratch: probed entry per block index */
    uint32_t *memo, *stamp;
    uint32_t cap_memo, pass;
};

static inline uint64_t pkey(uint64_t hash, uint32_t d) { return sim_hash_pair(hash, d); }

route__kvidx *route__kvidx_create(uint32_t n_dest, uint32_t cap)
{
    route__kvidx *x = sim_xcalloc(1, sizeof *x);
    x->n_dest = n_dest;
    x->words = (n_dest + 63) / 64;
    x->cap = cap;
    x->dst = sim_xcalloc(n_dest, sizeof *x->dst);
    for (uint32_t d = 0; d < n_dest; d++)
        x->dst[d].free = KX_NONE;
    x->gfree = KX_NONE;
    if (sim_u64map_init(&x->pmap, 1024) || sim_u64map_init(&x->gmap, 1024))
        sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
    return x;
}

void route__kvidx_destroy(route__kvidx *x)
{
    if (!x)
        return;
    for (uint32_t d = 0; d < x->n_dest; d++)
        sim_lruq_fini(&x->dst[d].q);
    free(x->dst);
    free(x->pair);
    sim_u64map_fini(&x->pmap);
    sim_u64map_fini(&x->gmap);
    free(x->gbits);
    free(x->gcount);
    free(x->ghash);
    free(x->memo);
    free(x->stamp);
    free(x);
}

/* The hash entry of `hash`, created empty if absent. */
static uint32_t g_get_or_add(route__kvidx *x, uint64_t hash)
{
    uint32_t g = sim_u64map_get(&x->gmap, hash);
    if (g != KX_NONE)
        return g;
    if (x->gfree != KX_NONE) {
        g = x->gfree;
        x->gfree = x->gcount[g];
    } else {
        if (x->n_g == x->cap_g) {
            x->cap_g = x->cap_g ? 2 * x->cap_g : 1024;
            x->gbits = sim_xrealloc(x->gbits, (size_t)x->cap_g * x->words * sizeof *x->gbits);
            x->gcount = sim_xrealloc(x->gcount, x->cap_g * sizeof *x->gcount);
            x->ghash = sim_xrealloc(x->ghash, x->cap_g * sizeof *x->ghash);
        }
        g = x->n_g++;
    }
    memset(x->gbits + (size_t)g * x->words, 0, x->words * sizeof *x->gbits);
    x->gcount[g] = 0;
    x->ghash[g] = hash;
    sim_u64map_put(&x->gmap, hash, g);
    return g;
}

/* Take destination d out of entry g (freeing g when nobody holds it). */
static void g_clear(route__kvidx *x, uint32_t g, uint32_t d)
{
    x->gbits[(size_t)g * x->words + d / 64] &= ~(1ull << (d % 64));
    if (--x->gcount[g] == 0) {
        sim_u64map_del(&x->gmap, x->ghash[g]);
        x->gcount[g] = x->gfree;
        x->gfree = g;
    }
}

/* Forget pair p of destination d: its map entries go, its record joins d's
 * free list (its stale queue entries no longer match its position). */
static void drop_pair(route__kvidx *x, uint32_t d, uint32_t p)
{
    kx_dest *k = &x->dst[d];
    sim_u64map_del(&x->pmap, pkey(x->pair[p].hash, d));
    g_clear(x, x->pair[p].g, d);
    /* A position no queue entry holding p has: the queue's end. */
    x->pair[p].pos = (uint32_t)k->q.tail;
    x->pair[p].hash = 0;
    x->pair[p].g = k->free;
    k->free = p;
    k->live--;
}

void route__kvidx_add(route__kvidx *x, uint32_t d, uint64_t hash, double now_s)
{
    kx_dest *k = &x->dst[d];
    const uint64_t key = pkey(hash, d);
    uint32_t p = sim_u64map_get(&x->pmap, key);
    if (p != KX_NONE) {
        x->pair[p].last = now_s;
        sim_lruq_touch(&k->q, &x->pair[0].pos, sizeof *x->pair, p);
        return;
    }
    if (x->cap && k->live >= x->cap) { /* evict d's least recently touched */
        const uint32_t v = sim_lruq_front(&k->q, &x->pair[0].pos, sizeof *x->pair);
        SIM_ALWAYS(v != SIM_LRUQ_NONE);
        sim_lruq_pop_front(&k->q);
        drop_pair(x, d, v);
    }
    if (k->free != KX_NONE) {
        p = k->free;
        k->free = x->pair[p].g;
    } else {
        if (x->n_pair == x->cap_pair) {
            x->cap_pair = x->cap_pair ? 2 * x->cap_pair : 1024;
            x->pair = sim_xrealloc(x->pair, x->cap_pair * sizeof *x->pair);
        }
        p = x->n_pair++;
    }
    const uint32_t g = g_get_or_add(x, hash);
    x->gbits[(size_t)g * x->words + d / 64] |= 1ull << (d % 64);
    x->gcount[g]++;
    x->pair[p] = (kx_pair){.hash = hash, .last = now_s, .g = g};
    sim_u64map_put(&x->pmap, key, p);
    sim_lruq_touch(&k->q, &x->pair[0].pos, sizeof *x->pair, p);
    k->live++;
}

int route__kvidx_remove(route__kvidx *x, uint32_t d, uint64_t hash)
{
    const uint32_t p = sim_u64map_get(&x->pmap, pkey(hash, d));
    if (p == KX_NONE)
        return 0;
    drop_pair(x, d, p);
    return 1;
}

void route__kvidx_expire(route__kvidx *x, double before_s)
{
    for (uint32_t d = 0; d < x->n_dest; d++) {
        kx_dest *k = &x->dst[d];
        while (k->live) {
            const uint32_t p = sim_lruq_front(&k->q, &x->pair[0].pos, sizeof *x->pair);
            if (p == SIM_LRUQ_NONE || !(x->pair[p].last < before_s))
                break;
            sim_lruq_pop_front(&k->q);
            drop_pair(x, d, p);
        }
    }
}

uint32_t route__kvidx_size(const route__kvidx *x, uint32_t d) { return x->dst[d].live; }

int route__kvidx_has(const route__kvidx *x, uint32_t d, uint64_t hash)
{
    return sim_u64map_get(&x->pmap, pkey(hash, d)) != KX_NONE;
}

uint32_t route__kvidx_walk(const route__kvidx *x, const uint64_t *hashes, uint32_t n,
                           uint32_t *count)
{
    memset(count, 0, x->n_dest * sizeof *count);
    for (uint32_t j = 0; j < KX_PF && j < n; j++)
        sim_u64map_prefetch(&x->gmap, hashes[j]);
    uint32_t i = 0;
    for (; i < n; i++) {
        if (i + KX_PF < n)
            sim_u64map_prefetch(&x->gmap, hashes[i + KX_PF]);
        const uint32_t g = sim_u64map_get(&x->gmap, hashes[i]);
        if (g == KX_NONE)
            break;
        const uint64_t *b = x->gbits + (size_t)g * x->words;
        for (uint32_t w = 0; w < x->words; w++)
            for (uint64_t m = b[w]; m; m &= m - 1)
                count[w * 64 + (uint32_t)__builtin_ctzll(m)]++;
    }
    return i;
}

/* Entry of hashes[i] (memoised within one route__kvidx_prefix call). */
static inline uint32_t probe(route__kvidx *x, const uint64_t *hashes, uint32_t i)
{
    if (x->stamp[i] != x->pass) {
        x->stamp[i] = x->pass;
        x->memo[i] = sim_u64map_get(&x->gmap, hashes[i]);
    }
    return x->memo[i];
}

static inline int holds(const route__kvidx *x, uint32_t g, uint32_t d)
{
    return g != KX_NONE && (x->gbits[(size_t)g * x->words + d / 64] >> (d % 64) & 1);
}

void route__kvidx_prefix(route__kvidx *x, const uint64_t *hashes, uint32_t n, uint32_t *len)
{
    memset(len, 0, x->n_dest * sizeof *len);
    if (n == 0)
        return;
    if (n > x->cap_memo) {
        free(x->memo);
        free(x->stamp);
        x->cap_memo = n;
        x->memo = sim_xmalloc(n * sizeof *x->memo);
        x->stamp = sim_xcalloc(n, sizeof *x->stamp);
        x->pass = 0;
    }
    if (++x->pass == 0) { /* stamps wrapped: start them over */
        memset(x->stamp, 0, x->cap_memo * sizeof *x->stamp);
        x->pass = 1;
    }
    const uint32_t g0 = probe(x, hashes, 0);
    if (g0 == KX_NONE)
        return;
    const uint64_t *b = x->gbits + (size_t)g0 * x->words;
    for (uint32_t w = 0; w < x->words; w++)
        for (uint64_t m = b[w]; m; m &= m - 1) {
            const uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(m);
            /* Largest L in [1, n] with hashes[L-1] held by d: d holds
             * block lo-1, and not block hi (hi = n: past the end). */
            uint32_t lo = 1, hi = n;
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo + 1) / 2; /* test block mid-1 */
                if (holds(x, probe(x, hashes, mid - 1), d))
                    lo = mid;
                else
                    hi = mid - 1;
            }
            len[d] = lo;
        }
}
