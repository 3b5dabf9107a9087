/*
 * TEST REFERENCE, not built into crsim: models/routers/route_kvidx.c as it was
 * before the round-4 optimisations (crsim at 6d8feb8: ordered indexes as
 * per-destination lazy LRU queues of (hash, destination) pairs behind a
 * pair map: one probe and one queue touch per block added). Linked instead
 * of it into equiv_ref_sim (tests/meson.build), so that
 * tests/router_equiv.sh can check that the optimised router gives bit-
 * identical simulations.  Unchanged below this comment.
 */
/*
 * The per-destination block index of the KV-aware production routers
 * (route_int.h, route__kvidx): dynamo_kv's radix tree and the llm-d /
 * inference-extension prefix indexes, in crsim's terms.
 *
 * The entry map sends a block hash to an entry: the hash, the number of
 * destinations holding it and their bitset, packed in one record of
 * 2 + words u64 (one cache line for up to 384 destinations), so that a
 * walk over a request's blocks costs one probe per block whatever the
 * number of destinations (the inference extension's hashToPods; Dynamo's
 * tree nodes carry the same worker sets).  Chained hashes identify a whole
 * prefix, so no tree links are needed.
 *
 * An ordered index also keeps, per destination, its pairs in a lazy LRU
 * queue (sim/core/lruq.h) with their last touch, behind a second map from
 * mix(hash, dest) to the pair.  A pair record is only ever reused by its
 * own destination (a free list per destination), which keeps the lazy
 * queue's stale entries stale.  The event-fed indexes need neither order
 * nor touch times and skip that map: one probe per event block.
 *
 * Direct mode (any index over at most 64 destinations: dynamo_kv, llm-d
 * approximate and precise on the flagship's 30 engines): the table's slot is the
 * entry itself, {hash, destination bits} in 16 bytes, open addressing by
 * sim_hash_mix64 with linear probing, backward-shift deletion and growth
 * at half load (as sim/core/u64map.c), an empty slot having no bits.  A
 * block change then costs one cache miss instead of two (map slot, then
 * entry record), and a walk step reads the bits from the slot it probed.
 * The index is a set of (hash, destination) pairs either way, so results
 * do not depend on the mode (tests/test_route_kv.c checks both).  An
 * ordered direct index keeps the hash in the pair record (24 bytes), and
 * an eviction prefetches the map slots of the victim KX_PF_VICTIM queue
 * entries on (LRU victims come in runs of ~250 a request in llm-d's
 * approximate indexer at the flagship's load).
 *
 * Rejected alternative: one hash set per destination, probed per
 * destination per block, costs n_dest probes per block: 30x the walk on
 * the flagship.
 */
#include <stdlib.h>
#include <string.h>

#include "models/routers/route_int.h"
#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/lruq.h"
#include "sim/core/prefetch.h"
#include "sim/core/u64map.h"

#define KX_NONE UINT32_MAX
#define KX_PF 16 /* blocks ahead the loops prefetch */
#define KX_PF_VICTIM 8 /* LRU victims ahead an eviction prefetches the map slots of */

typedef struct kx_pair {
    double last;   /* last touch, s */
    uint32_t pos;  /* live LRU-queue position (mod 2^32) */
    uint32_t g;    /* its entry (not in direct mode); free-list link when free */
    uint64_t hash; /* its block (direct mode) */
} kx_pair;

typedef struct kx_slot {
    uint64_t hash;
    uint64_t bits; /* destinations holding it; 0 = empty slot */
} kx_slot;

typedef struct kx_dest {
    sim_lruq q;
    uint32_t live; /* blocks held */
    uint32_t free; /* free pair records of this destination (ordered) */
} kx_dest;

struct route__kvidx {
    uint32_t n_dest, words, stride, cap;
    bool ordered;
    bool direct;       /* direct mode: tab holds the entries */
    kx_slot *tab;      /* direct: mask + 1 slots */
    size_t tmask, tn;  /* direct: slots - 1, entries */
    sim_u64map gmap; /* hash -> entry */
    uint64_t *ent;   /* entry e at ent[e * stride]: hash, count, bits[words] */
    uint32_t n_ent, cap_ent, efree; /* free entries chained through count */
    kx_dest *dst;
    /* ordered only */
    sim_u64map pmap; /* mix(hash, dest) -> pair */
    kx_pair *pair;
    uint32_t n_pair, cap_pair;
    /* route__kvidx_prefix scratch: the entry probed per block index */
    uint32_t *memo, *stamp;
    uint64_t *mbits; /* direct mode: the bits probed per block index */
    uint32_t cap_memo, pass;
};

static inline uint64_t pkey(uint64_t hash, uint32_t d) { return sim_hash_pair(hash, d); }
static inline uint64_t *ent(const route__kvidx *x, uint32_t e)
{
    return x->ent + (size_t)e * x->stride;
}
static inline int bit(const uint64_t *en, uint32_t d) { return (int)(en[2 + d / 64] >> (d % 64) & 1); }

route__kvidx *route__kvidx_create(uint32_t n_dest, bool ordered, uint32_t cap)
{
    route__kvidx *x = sim_xcalloc(1, sizeof *x);
    x->n_dest = n_dest;
    x->words = (n_dest + 63) / 64;
    x->stride = 2 + x->words;
    x->ordered = ordered;
    x->cap = ordered ? cap : 0;
    x->dst = sim_xcalloc(n_dest, sizeof *x->dst);
    for (uint32_t d = 0; d < n_dest; d++)
        x->dst[d].free = KX_NONE;
    x->efree = KX_NONE;
    if (n_dest <= 64) {
        x->direct = true;
        x->tmask = 1023;
        x->tab = sim_xcalloc(x->tmask + 1, sizeof *x->tab);
        if (ordered && sim_u64map_init(&x->pmap, 1024))
            sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
        return x;
    }
    if (sim_u64map_init(&x->gmap, 1024) || (ordered && sim_u64map_init(&x->pmap, 1024)))
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
    free(x->ent);
    free(x->pair);
    sim_u64map_fini(&x->gmap);
    sim_u64map_fini(&x->pmap);
    free(x->memo);
    free(x->stamp);
    free(x->tab);
    free(x->mbits);
    free(x);
}

/* ---- direct mode ---- */

static inline size_t t_home(const route__kvidx *x, uint64_t hash)
{
    return (size_t)sim_hash_mix64(hash) & x->tmask;
}

/* Slot of `hash`, or the empty slot where it would go. */
static inline size_t t_find(const route__kvidx *x, uint64_t hash)
{
    size_t i = t_home(x, hash);
    while (x->tab[i].bits && x->tab[i].hash != hash)
        i = (i + 1) & x->tmask;
    return i;
}

static inline uint64_t t_bits(const route__kvidx *x, uint64_t hash)
{
    return x->tab[t_find(x, hash)].bits;
}

static inline void t_prefetch(const route__kvidx *x, uint64_t hash)
{
    SIM_PREFETCH(&x->tab[t_home(x, hash)]);
}

static void t_grow(route__kvidx *x)
{
    kx_slot *old = x->tab;
    const size_t n = x->tmask + 1;
    x->tmask = 2 * n - 1;
    x->tab = sim_xcalloc(2 * n, sizeof *x->tab);
    for (size_t i = 0; i < n; i++)
        if (old[i].bits)
            x->tab[t_find(x, old[i].hash)] = old[i];
    free(old);
}

static void t_add(route__kvidx *x, uint32_t d, uint64_t hash)
{
    const uint64_t m = 1ull << d;
    size_t i = t_find(x, hash);
    if (!x->tab[i].bits) {
        if (2 * (x->tn + 1) > x->tmask + 1) {
            t_grow(x);
            i = t_find(x, hash);
        }
        x->tab[i].hash = hash;
        x->tn++;
    } else if (x->tab[i].bits & m) {
        return;
    }
    x->tab[i].bits |= m;
    x->dst[d].live++;
}

/* 1 if d held `hash` (now no longer). */
static int t_remove(route__kvidx *x, uint32_t d, uint64_t hash)
{
    const uint64_t m = 1ull << d;
    size_t i = t_find(x, hash);
    if (!(x->tab[i].bits & m))
        return 0;
    x->dst[d].live--;
    if ((x->tab[i].bits &= ~m))
        return 1;
    /* Backward shift: pull later members of the probe run into the hole. */
    for (size_t j = i;;) {
        j = (j + 1) & x->tmask;
        if (!x->tab[j].bits)
            break;
        const size_t h = t_home(x, x->tab[j].hash);
        const int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            x->tab[i] = x->tab[j];
            i = j;
        }
    }
    x->tab[i].bits = 0;
    x->tn--;
    return 1;
}

/* The entry of `hash`, created empty if absent. */
static uint32_t entry_of(route__kvidx *x, uint64_t hash)
{
    uint32_t e = x->efree;
    if (e == KX_NONE) {
        if (x->n_ent == x->cap_ent) {
            x->cap_ent = x->cap_ent ? 2 * x->cap_ent : 1024;
            x->ent = sim_xrealloc(x->ent, (size_t)x->cap_ent * x->stride * sizeof *x->ent);
        }
        e = x->n_ent;
    }
    const uint32_t old = sim_u64map_insert(&x->gmap, hash, e);
    if (old != SIM_U64MAP_NONE)
        return old;
    if (e == x->efree)
        x->efree = (uint32_t)ent(x, e)[1];
    else
        x->n_ent++;
    uint64_t *en = ent(x, e);
    memset(en, 0, x->stride * sizeof *en);
    en[0] = hash;
    return e;
}

/* Take destination d out of entry e (freeing e when nobody holds it). */
static void entry_clear(route__kvidx *x, uint32_t e, uint32_t d)
{
    uint64_t *en = ent(x, e);
    en[2 + d / 64] &= ~(1ull << (d % 64));
    x->dst[d].live--;
    if (--en[1] == 0) {
        sim_u64map_del(&x->gmap, en[0]);
        en[1] = x->efree;
        x->efree = e;
    }
}

/* Ordered: forget pair p of destination d (already off its queue, or
 * stale in it): its record joins d's free list. */
static void drop_pair(route__kvidx *x, uint32_t d, uint32_t p)
{
    kx_dest *k = &x->dst[d];
    if (x->direct) {
        sim_u64map_del(&x->pmap, pkey(x->pair[p].hash, d));
        t_remove(x, d, x->pair[p].hash);
    } else {
        const uint32_t e = x->pair[p].g;
        sim_u64map_del(&x->pmap, pkey(ent(x, e)[0], d));
        entry_clear(x, e, d);
    }
    /* A position no queue entry holding p has: the queue's end. */
    x->pair[p].pos = (uint32_t)k->q.tail;
    x->pair[p].g = k->free;
    k->free = p;
}

static void add_one(route__kvidx *x, uint32_t d, uint64_t hash, double now_s)
{
    kx_dest *k = &x->dst[d];
    if (!x->ordered) { /* (direct mode: t_add) */
        const uint32_t e = entry_of(x, hash);
        uint64_t *en = ent(x, e);
        if (!bit(en, d)) {
            en[2 + d / 64] |= 1ull << (d % 64);
            en[1]++;
            k->live++;
        }
        return;
    }
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
        /* Evictions come in runs: fetch the map slots of the victim
         * KX_PF_VICTIM entries on (its record is in cache: the queue
         * prefetches items SIM_LRUQ_AHEAD on; a stale entry is only a
         * useless hint). */
        if (x->direct && k->q.head + KX_PF_VICTIM < k->q.tail) {
            const uint64_t vh = x->pair[sim_lruq_at(&k->q, k->q.head + KX_PF_VICTIM)].hash;
            sim_u64map_prefetch(&x->pmap, pkey(vh, d));
            t_prefetch(x, vh);
        }
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
    if (x->direct) {
        t_add(x, d, hash);
        x->pair[p].hash = hash;
    } else {
        const uint32_t e = entry_of(x, hash);
        uint64_t *en = ent(x, e);
        en[2 + d / 64] |= 1ull << (d % 64);
        en[1]++;
        k->live++;
        x->pair[p].g = e;
    }
    x->pair[p].last = now_s;
    sim_u64map_put(&x->pmap, key, p);
    sim_lruq_touch(&k->q, &x->pair[0].pos, sizeof *x->pair, p);
}

/* Software pipeline of the loops over many blocks (cache misses dominate
 * on large indexes): the map slot of block j + KX_PF is prefetched, and
 * at j + KX_PF / 2, its slot now in cache, the entry record it names. */
static inline void pipeline(const route__kvidx *x, const uint64_t *hashes, uint32_t n,
                            uint32_t j)
{
    if (j + KX_PF < n)
        sim_u64map_prefetch(&x->gmap, hashes[j + KX_PF]);
    if (j + KX_PF / 2 < n) {
        const uint32_t e = sim_u64map_get(&x->gmap, hashes[j + KX_PF / 2]);
        if (e != KX_NONE)
            SIM_PREFETCH(ent(x, e));
    }
}

void route__kvidx_add(route__kvidx *x, uint32_t d, const uint64_t *hashes, uint32_t n,
                      double now_s)
{
    if (x->direct) {
        for (uint32_t j = 0; j < n; j++) {
            if (j + KX_PF < n) {
                t_prefetch(x, hashes[j + KX_PF]);
                if (x->ordered)
                    sim_u64map_prefetch(&x->pmap, pkey(hashes[j + KX_PF], d));
            }
            if (x->ordered)
                add_one(x, d, hashes[j], now_s);
            else
                t_add(x, d, hashes[j]);
        }
        return;
    }
    for (uint32_t j = 0; j < n; j++) {
        pipeline(x, hashes, n, j);
        if (x->ordered && j + KX_PF < n)
            sim_u64map_prefetch(&x->pmap, pkey(hashes[j + KX_PF], d));
        add_one(x, d, hashes[j], now_s);
    }
}

uint32_t route__kvidx_remove(route__kvidx *x, uint32_t d, const uint64_t *hashes, uint32_t n)
{
    uint32_t held = 0;
    if (x->direct && !x->ordered) {
        for (uint32_t j = 0; j < n; j++) {
            if (j + KX_PF < n)
                t_prefetch(x, hashes[j + KX_PF]);
            held += (uint32_t)t_remove(x, d, hashes[j]);
        }
        return held;
    }
    for (uint32_t j = 0; j < n; j++) {
        if (x->ordered) {
            if (j + KX_PF < n)
                sim_u64map_prefetch(&x->pmap, pkey(hashes[j + KX_PF], d));
            const uint32_t p = sim_u64map_get(&x->pmap, pkey(hashes[j], d));
            if (p == KX_NONE)
                continue;
            drop_pair(x, d, p);
        } else {
            pipeline(x, hashes, n, j);
            const uint32_t e = sim_u64map_get(&x->gmap, hashes[j]);
            if (e == KX_NONE || !bit(ent(x, e), d))
                continue;
            entry_clear(x, e, d);
        }
        held++;
    }
    return held;
}

void route__kvidx_expire(route__kvidx *x, double before_s)
{
    if (!x->ordered)
        return;
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
    if (x->direct)
        return (int)(t_bits(x, hash) >> d & 1);
    const uint32_t e = sim_u64map_get(&x->gmap, hash);
    return e != KX_NONE && bit(ent(x, e), d);
}

uint32_t route__kvidx_walk(const route__kvidx *x, const uint64_t *hashes, uint32_t n,
                           uint32_t *count)
{
    memset(count, 0, x->n_dest * sizeof *count);
    uint32_t i = 0;
    if (x->direct) {
        for (uint32_t j = 0; j < KX_PF && j < n; j++)
            t_prefetch(x, hashes[j]);
        for (; i < n; i++) {
            if (i + KX_PF < n)
                t_prefetch(x, hashes[i + KX_PF]);
            uint64_t m = t_bits(x, hashes[i]);
            if (!m)
                break;
            for (; m; m &= m - 1)
                count[__builtin_ctzll(m)]++;
        }
        return i;
    }
    for (uint32_t j = 0; j < KX_PF && j < n; j++)
        sim_u64map_prefetch(&x->gmap, hashes[j]);
    for (; i < n; i++) {
        if (i + KX_PF < n)
            sim_u64map_prefetch(&x->gmap, hashes[i + KX_PF]);
        const uint32_t e = sim_u64map_get(&x->gmap, hashes[i]);
        if (e == KX_NONE)
            break;
        const uint64_t *b = ent(x, e) + 2;
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

/* Direct mode: bits of hashes[i], memoised likewise. */
static inline uint64_t probe_bits(route__kvidx *x, const uint64_t *hashes, uint32_t i)
{
    if (x->stamp[i] != x->pass) {
        x->stamp[i] = x->pass;
        x->mbits[i] = t_bits(x, hashes[i]);
    }
    return x->mbits[i];
}

void route__kvidx_prefix(route__kvidx *x, const uint64_t *hashes, uint32_t n, uint32_t *len)
{
    memset(len, 0, x->n_dest * sizeof *len);
    if (n == 0)
        return;
    if (n > x->cap_memo) {
        free(x->memo);
        free(x->stamp);
        free(x->mbits);
        x->cap_memo = n;
        x->memo = sim_xmalloc(n * sizeof *x->memo);
        x->mbits = sim_xmalloc(n * sizeof *x->mbits);
        x->stamp = sim_xcalloc(n, sizeof *x->stamp);
        x->pass = 0;
    }
    if (++x->pass == 0) { /* stamps wrapped: start them over */
        memset(x->stamp, 0, x->cap_memo * sizeof *x->stamp);
        x->pass = 1;
    }
    if (x->direct) { /* the same bisection on the slot bits */
        const uint64_t b0 = probe_bits(x, hashes, 0);
        for (uint64_t m = b0; m; m &= m - 1) {
            const uint32_t d = (uint32_t)__builtin_ctzll(m);
            uint32_t lo = 1, hi = n;
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo + 1) / 2;
                if (probe_bits(x, hashes, mid - 1) >> d & 1)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            len[d] = lo;
        }
        return;
    }
    const uint32_t e0 = probe(x, hashes, 0);
    if (e0 == KX_NONE)
        return;
    for (uint32_t w = 0; w < x->words; w++)
        for (uint64_t m = ent(x, e0)[2 + w]; m; m &= m - 1) {
            const uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(m);
            /* Largest L in [1, n] with hashes[L-1] held by d: d holds
             * block lo-1; no block at or past hi (hi = n: the end). */
            uint32_t lo = 1, hi = n;
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo + 1) / 2; /* test block mid-1 */
                const uint32_t e = probe(x, hashes, mid - 1);
                if (e != KX_NONE && bit(ent(x, e), d))
                    lo = mid;
                else
                    hi = mid - 1;
            }
            len[d] = lo;
        }
}
