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
 * entry itself, {hash, destination bits} in 16 bytes, an empty slot
 * having no bits; open addressing over chunks of four slots (one cache
 * line) with per-chunk overflow counts, no entry moving on a removal, and
 * growth at half load ("direct mode" below); a table of 2 MiB or more is
 * a huge-page mapping (t_alloc).  A
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
 *
 * The decision-fed indexes of the routers (llm-d approximate, dynamo_kv
 * without events) are route__kvlru (end of this file): per destination a
 * one-destination sim/core/pfxidx run queue in place of the ordered
 * index's queue entry and pair-map probe per block, plus, for dynamo_kv's
 * bisection, an unordered index kept from the queues' change logs, or,
 * for llm-d's walk (round 13), only an index of the queues' run heads
 * (route__kvlru_walk).  The ordered index stays for hash sets that are
 * not chained lists, and is what tests/test_route_kv.c checks
 * route__kvlru against.
 */
#include <stdlib.h>
#include <string.h>

#include "models/routers/route_int.h"
#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/hugemem.h"
#include "sim/core/lruq.h"
#include "sim/core/pfxidx.h"
#include "sim/core/prefetch.h"
#include "sim/core/u64map.h"

#define KX_NONE UINT32_MAX
#define KX_PF 16 /* blocks ahead the loops prefetch */
#define KX_PF_VICTIM 8 /* LRU victims ahead an eviction prefetches the map slots of */
#define KX_RESERVE_MAX (1u << 22) /* route__kvidx_reserve: at most 2^23 slots (128 MiB) */
#define KX_CHUNK 4 /* direct mode: slots a chunk (4 x 16 bytes, one cache line) */
#define KX_OVF_MAX 255u /* direct mode: a saturated overflow count */

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
    kx_slot *tab;      /* direct: (tmask + 1) x KX_CHUNK slots */
    uint8_t *ovf;      /* direct: per chunk, the entries stored past it (t_lookup) */
    size_t tmask, tn;  /* direct: chunks - 1, entries */
    unsigned tshift;   /* direct: 64 - log2(chunks) */
    sim_u64map gmap; /* hash -> entry */
    uint64_t *ent;   /* entry e at ent[e * stride]: hash, count, bits[words] */
    uint32_t n_ent, cap_ent, efree; /* free entries chained through count */
    kx_dest *dst;
    /* ordered only */
    sim_u64map pmap; /* mix(hash, dest) -> pair */
    kx_pair *pair;
    uint32_t n_pair, cap_pair;
    /* Direct unordered mode: KV-event changes queued by route__kvidx_queue
     * and not yet applied, in order: hash lh[i] added to (lk[i] < 0x80) or
     * removed from (lk[i] & 0x80) destination lk[i] & 0x3f. */
    uint64_t *lh;
    uint8_t *lk;
    size_t n_log, cap_log;
    /* route__kvidx_prefix scratch: the entry probed per block index */
    uint32_t *memo, *stamp;
    uint32_t cap_memo, pass;
    /* Event mode (route__kvidx_create_events, at most 64 destinations):
     * the engines' trees as runs, and no per-block table ("event mode"
     * below); every other field unused. */
    struct kx_tree *tree;
};

static void tree_destroy(struct kx_tree *t);
static void tree_event(struct kx_tree *t, uint32_t d, bool stored, uint64_t parent,
                       const uint64_t *h, uint32_t n);
static void tree_prefix(struct kx_tree *t, const uint64_t *h, uint32_t n, uint32_t *len);
static uint32_t tree_size(const struct kx_tree *t, uint32_t d);
static struct kx_tree *tree_create(uint32_t n_dest);

static void t_free(struct kx_slot *tab, size_t n);
static inline size_t t_slots(const route__kvidx *x);

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
        x->tmask = 255; /* 256 chunks, 1,024 slots */
        x->tshift = 64 - 8;
        x->tab = sim_xcalloc((x->tmask + 1) * KX_CHUNK, sizeof *x->tab);
        x->ovf = sim_xcalloc(x->tmask + 1, 1);
        if (ordered && sim_u64map_init(&x->pmap, 1024))
            sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
        return x;
    }
    if (sim_u64map_init(&x->gmap, 1024) || (ordered && sim_u64map_init(&x->pmap, 1024)))
        sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
    return x;
}

route__kvidx *route__kvidx_create_events(uint32_t n_dest, uint64_t pairs)
{
    if (n_dest > 64) {
        route__kvidx *x = route__kvidx_create(n_dest, false, 0);
        route__kvidx_reserve(x, pairs);
        return x;
    }
    route__kvidx *x = sim_xcalloc(1, sizeof *x);
    x->n_dest = n_dest;
    x->tree = tree_create(n_dest);
    return x;
}

void route__kvidx_event(route__kvidx *x, uint32_t d, bool stored, uint64_t parent,
                        const uint64_t *hashes, uint32_t n)
{
    if (x->tree)
        tree_event(x->tree, d, stored, parent, hashes, n);
    else
        route__kvidx_queue(x, d, stored, hashes, n);
}

void route__kvidx_destroy(route__kvidx *x)
{
    if (!x)
        return;
    if (x->tree) {
        tree_destroy(x->tree);
        free(x);
        return;
    }
    for (uint32_t d = 0; d < x->n_dest; d++)
        sim_lruq_fini(&x->dst[d].q);
    free(x->dst);
    free(x->ent);
    free(x->pair);
    sim_u64map_fini(&x->gmap);
    sim_u64map_fini(&x->pmap);
    free(x->memo);
    free(x->stamp);
    free(x->lh);
    free(x->lk);
    if (x->direct)
        t_free(x->tab, t_slots(x));
    free(x->ovf);
    free(x);
}

/* ---- direct mode ---- */

/*
 * The table is an array of chunks of KX_CHUNK slots, one 64-byte line
 * each (a slot is {hash, destination bits}, empty when it has no bits).
 * A hash lives in the first chunk, from its home chunk on, that had a free
 * slot when it was inserted, and stays there until removed: no entry ever
 * moves but when the table grows.  ovf[c] counts the entries whose home
 * chunk is at or before c (in probe order) and that live past c, so a
 * lookup scans the home chunk's slots and moves on only while that count
 * is non-zero, once round the table at most; a removal clears its slot and
 * takes one off the counts of
 * the chunks its insertion passed (saturated counts stay: a count of
 * KX_OVF_MAX only means "may have passed").  This is the chunk-overflow
 * scheme of open-addressing tables such as folly's F14 (its
 * outboundOverflowCount), in our own terms.
 *
 * It replaced (round 10) linear probing over single slots with
 * backward-shift deletion, whose probe and shift loops made most of a
 * change's cost data-dependent branches (a throwaway model of the
 * flagship's event log, 660,000 live hashes in 2^21 slots and one removal
 * per insertion, took 15.1 ns a change that way and 10.3 ns this way; the
 * same model with its table shrunk to fit the L2 cache took 12.5 ns and
 * 7.0: mostly branches, not memory).  On the flagship at 100 requests/s,
 * dynamo_kv 5.40 -> 4.79 us per request and llm-d precise 4.98 -> 4.52
 * (medians of 7 interleaved runs; docs/performance.md, round 10).  The
 * chunk's slots are compared all at once (a bit mask, no branch per
 * slot).  The index is a set of (hash, destination) pairs whatever the
 * layout, so results do not depend on it (scripts/fingerprints;
 * tests/test_route_kv.c against the entry map and a plain array).
 */

static inline size_t t_home(const route__kvidx *x, uint64_t hash)
{
    /* Fibonacci hashing (Knuth, TAOCP 3, 6.4): the top bits of hash times
     * 2^64 / phi; one multiply instead of a full mix per probe. */
    return (size_t)((hash * 0x9e3779b97f4a7c15ULL) >> x->tshift);
}

static inline size_t t_slots(const route__kvidx *x) { return (x->tmask + 1) * KX_CHUNK; }

/* Bit k set: slot k of chunk c holds `hash`. */
static inline unsigned t_match(const kx_slot *c, uint64_t hash)
{
    unsigned m = 0;
    for (unsigned k = 0; k < KX_CHUNK; k++)
        m |= (unsigned)((c[k].hash == hash) & (c[k].bits != 0)) << k;
    return m;
}

/* Bit k set: slot k of chunk c is empty. */
static inline unsigned t_empty(const kx_slot *c)
{
    unsigned m = 0;
    for (unsigned k = 0; k < KX_CHUNK; k++)
        m |= (unsigned)(c[k].bits == 0) << k;
    return m;
}

/* The slot holding `hash`, or NULL.  At most every chunk once: counts are
 * not bounded by the load (a chunk keeps its count after its own entries
 * leave, and a saturated count stays), so every chunk of a table may have
 * one while most slots are empty (tests/test_route_kv.c builds that). */
static inline kx_slot *t_lookup(const route__kvidx *x, uint64_t hash)
{
    size_t c = t_home(x, hash);
    for (size_t left = x->tmask + 1; left; left--, c = (c + 1) & x->tmask) {
        kx_slot *ch = &x->tab[c * KX_CHUNK];
        const unsigned m = t_match(ch, hash);
        if (m)
            return ch + __builtin_ctz(m);
        if (!x->ovf[c])
            return NULL;
    }
    return NULL;
}

static inline uint64_t t_bits(const route__kvidx *x, uint64_t hash)
{
    const kx_slot *s = t_lookup(x, hash);
    return s ? s->bits : 0;
}

static inline void t_prefetch(const route__kvidx *x, uint64_t hash)
{
    SIM_PREFETCH(&x->tab[t_home(x, hash) * KX_CHUNK]);
}

/* Before a change (t_add, t_remove) of `hash`: its home chunk, and the
 * chunk's overflow count (which an insertion into a full chunk and a
 * removal past one write), for writing. */
static inline void t_prefetch_w(const route__kvidx *x, uint64_t hash)
{
    const size_t c = t_home(x, hash);
    SIM_PREFETCH_W(&x->tab[c * KX_CHUNK]);
    SIM_PREFETCH_W(&x->ovf[c]);
}

/* A zeroed table of n slots, freed by t_free with the same n: from 2 MiB
 * on, on transparent huge pages (sim/core/hugemem.h), so that a random
 * probe of the flagship's 32-MiB table hits the TLB (16 huge pages)
 * instead of walking the page tables for one of 8,192 small pages.
 * Contents and results do not depend on it. */
static kx_slot *t_alloc(size_t n)
{
    kx_slot *t = sim_huge_alloc(n * sizeof(kx_slot));
    if (!t)
        sim_panic(__FILE__, __LINE__, "out of memory growing a block index");
    return t;
}

static void t_free(kx_slot *tab, size_t n) { sim_huge_free(tab, n * sizeof(kx_slot)); }

/* Put `s` (a hash not in the table) into the first chunk from its home
 * with a free slot, counting it in the overflow of the full chunks it
 * passes. */
static inline void t_place(route__kvidx *x, kx_slot s)
{
    for (size_t c = t_home(x, s.hash);; c = (c + 1) & x->tmask) {
        kx_slot *ch = &x->tab[c * KX_CHUNK];
        const unsigned e = t_empty(ch);
        if (e) {
            ch[__builtin_ctz(e)] = s;
            return;
        }
        if (x->ovf[c] < KX_OVF_MAX)
            x->ovf[c]++;
    }
}

/* Re-make the table with `chunks` chunks (a power of two) and every entry
 * of the old one placed anew. */
static void t_resize(route__kvidx *x, size_t chunks)
{
    kx_slot *old = x->tab;
    const size_t n_old = t_slots(x);
    x->tab = t_alloc(chunks * KX_CHUNK);
    free(x->ovf);
    x->ovf = sim_xcalloc(chunks, 1);
    x->tmask = chunks - 1;
    x->tshift = 64 - (unsigned)__builtin_ctzll((unsigned long long)chunks);
    for (size_t i = 0; i < n_old; i++)
        if (old[i].bits)
            t_place(x, old[i]);
    t_free(old, n_old);
}

static inline void t_add(route__kvidx *x, uint32_t d, uint64_t hash)
{
    const uint64_t m = 1ull << d;
    kx_slot *s = t_lookup(x, hash);
    if (s) {
        if (s->bits & m)
            return;
        s->bits |= m;
    } else {
        if (2 * (x->tn + 1) > t_slots(x)) /* growth at half load */
            t_resize(x, 2 * (x->tmask + 1));
        t_place(x, (kx_slot){hash, m});
        x->tn++;
    }
    x->dst[d].live++;
}

/* 1 if d held `hash` (now no longer). */
static inline int t_remove(route__kvidx *x, uint32_t d, uint64_t hash)
{
    const uint64_t m = 1ull << d;
    kx_slot *s = t_lookup(x, hash);
    if (!s || !(s->bits & m))
        return 0;
    x->dst[d].live--;
    if ((s->bits &= ~m))
        return 1;
    x->tn--;
    /* Out of the overflow counts of the chunks its insertion passed. */
    const size_t at = (size_t)(s - x->tab) / KX_CHUNK;
    for (size_t c = t_home(x, hash); c != at; c = (c + 1) & x->tmask)
        if (x->ovf[c] < KX_OVF_MAX)
            x->ovf[c]--;
    return 1;
}

void route__kvidx_reserve(route__kvidx *x, uint64_t pairs)
{
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    if (!x->direct || pairs == 0)
        return;
    if (pairs > KX_RESERVE_MAX)
        pairs = KX_RESERVE_MAX;
    size_t n = t_slots(x);
    while (n < 2 * pairs) /* the size growth would reach */
        n *= 2;
    if (n == t_slots(x))
        return;
    t_resize(x, n / KX_CHUNK);
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
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    if (x->direct && !x->ordered) { /* the event-fed indexes: STORED */
        for (uint32_t j = 0; j < KX_PF && j < n; j++) /* events are short: fetch them all */
            t_prefetch_w(x, hashes[j]);
        for (uint32_t j = 0; j < n; j++) {
            if (j + KX_PF < n)
                t_prefetch_w(x, hashes[j + KX_PF]);
            t_add(x, d, hashes[j]);
        }
        return;
    }
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
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    uint32_t held = 0;
    if (x->direct && !x->ordered) { /* REMOVED */
        for (uint32_t j = 0; j < KX_PF && j < n; j++)
            t_prefetch_w(x, hashes[j]);
        for (uint32_t j = 0; j < n; j++) {
            if (j + KX_PF < n)
                t_prefetch_w(x, hashes[j + KX_PF]);
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

#define KX_LOG_DEL 0x80u /* lk[]: a removal */
#define KX_PF_LOG 24      /* blocks ahead route__kvidx_sync prefetches */

void route__kvidx_queue(route__kvidx *x, uint32_t d, bool stored, const uint64_t *hashes,
                        uint32_t n)
{
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    if (!x->direct || x->ordered) { /* no queue: apply now */
        if (stored)
            route__kvidx_add(x, d, hashes, n, 0);
        else
            (void)route__kvidx_remove(x, d, hashes, n);
        return;
    }
    if (x->n_log + n > x->cap_log) {
        while (x->n_log + n > x->cap_log)
            x->cap_log = x->cap_log ? 2 * x->cap_log : 4096;
        x->lh = sim_xrealloc(x->lh, x->cap_log * sizeof *x->lh);
        x->lk = sim_xrealloc(x->lk, x->cap_log * sizeof *x->lk);
    }
    memcpy(x->lh + x->n_log, hashes, (size_t)n * sizeof *hashes);
    memset(x->lk + x->n_log, (int)(d | (stored ? 0u : KX_LOG_DEL)), n);
    x->n_log += n;
}

/* Apply the queued changes in order.  One loop over every queued block
 * of every event since the last read, prefetching KX_PF_LOG blocks ahead
 * across event boundaries: the events are short (~8 blocks a REMOVED, ~24
 * a STORED on the flagship), so applied one by one most of their probes
 * are cache misses nothing was fetched ahead for. */
static void kx_sync_log(route__kvidx *x)
{
    const size_t n = x->n_log;
    const uint64_t *h = x->lh;
    const uint8_t *k = x->lk;
    for (size_t j = 0; j < KX_PF_LOG && j < n; j++)
        t_prefetch_w(x, h[j]);
    for (size_t j = 0; j < n; j++) {
        if (j + KX_PF_LOG < n)
            t_prefetch_w(x, h[j + KX_PF_LOG]);
        if (k[j] & KX_LOG_DEL)
            (void)t_remove(x, k[j] & 0x3fu, h[j]);
        else
            t_add(x, k[j], h[j]);
    }
    x->n_log = 0;
}

/* Readers take a const index (they change no answer); it was created
 * non-const (route__kvidx_create), so applying the queue through it is
 * well defined. */
static inline void kx_sync(const route__kvidx *x)
{
    if (x->n_log)
        kx_sync_log((route__kvidx *)(uintptr_t)x);
}

void route__kvidx_sync(route__kvidx *x) { kx_sync(x); }

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

uint32_t route__kvidx_size(const route__kvidx *x, uint32_t d)
{
    if (x->tree)
        return tree_size(x->tree, d);
    kx_sync(x);
    return x->dst[d].live;
}

int route__kvidx_has(const route__kvidx *x, uint32_t d, uint64_t hash)
{
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    kx_sync(x);
    if (x->direct)
        return (int)(t_bits(x, hash) >> d & 1);
    const uint32_t e = sim_u64map_get(&x->gmap, hash);
    return e != KX_NONE && bit(ent(x, e), d);
}

uint32_t route__kvidx_walk(const route__kvidx *x, const uint64_t *hashes, uint32_t n,
                           uint32_t *count)
{
    SIM_ALWAYS(!x->tree); /* event mode: event, prefix and size only */
    kx_sync(x);
    memset(count, 0, x->n_dest * sizeof *count);
    uint32_t i = 0;
    if (x->direct) {
        for (uint32_t j = 0; j < KX_PF && j < n; j++)
            t_prefetch(x, hashes[j]);
        /* Consecutive hashes mostly have the same holders (~2 changes
         * of set a request on the flagship): count stretches of one set
         * and credit each stretch once. */
        uint64_t run_m = 0;
        uint32_t run_from = 0;
        for (; i < n; i++) {
            if (i + KX_PF < n)
                t_prefetch(x, hashes[i + KX_PF]);
            const uint64_t m = t_bits(x, hashes[i]);
            if (!m)
                break;
            if (m != run_m) {
                for (uint64_t b = run_m; b; b &= b - 1)
                    count[__builtin_ctzll(b)] += i - run_from;
                run_m = m;
                run_from = i;
            }
        }
        for (uint64_t b = run_m; b; b &= b - 1)
            count[__builtin_ctzll(b)] += i - run_from;
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

/* Direct mode: the bisection of route__kvidx_prefix for every destination
 * of `mask` at once.  Each destination's own bisection probes block mid-1
 * of its interval [lo, hi] and moves to [mid, hi] or [lo, mid-1]; the
 * destinations sharing an interval share that probe, so they travel as
 * one set and split on the probed bits -- the same steps, each block
 * probed at most once (the two halves' probe ranges [mid, hi-1] and
 * [lo, mid-2] are disjoint and exclude mid-1), ~log2 n probes per
 * distinct answer instead of per destination. */
static void bisect_set(const route__kvidx *x, const uint64_t *hashes, uint32_t lo, uint32_t hi,
                       uint64_t mask, uint32_t *len)
{
    while (mask) {
        if (lo >= hi) {
            for (; mask; mask &= mask - 1)
                len[__builtin_ctzll(mask)] = lo;
            return;
        }
        const uint32_t mid = lo + (hi - lo + 1) / 2; /* test block mid-1 */
        /* Each probe depends on the one before: fetch both blocks the
         * next step may test while this one is awaited. */
        if (mid < hi)
            t_prefetch(x, hashes[mid + (hi - mid + 1) / 2 - 1]);
        if (lo + 1 < mid)
            t_prefetch(x, hashes[lo + (mid - lo) / 2 - 1]);
        const uint64_t b = t_bits(x, hashes[mid - 1]);
        if (mask & ~b)
            bisect_set(x, hashes, lo, mid - 1, mask & ~b, len); /* depth <= log2 n */
        mask &= b;
        lo = mid;
    }
}

void route__kvidx_prefix(route__kvidx *x, const uint64_t *hashes, uint32_t n, uint32_t *len)
{
    if (x->tree) {
        tree_prefix(x->tree, hashes, n, len);
        return;
    }
    kx_sync(x);
    memset(len, 0, x->n_dest * sizeof *len);
    if (n == 0)
        return;
    if (x->direct) {
        bisect_set(x, hashes, 1, n, t_bits(x, hashes[0]), len);
        return;
    }
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

/* ---- event mode: the engines' trees as runs (route__kvidx_create_events) ---- */

/*
 * Per destination, its engine's cache as KV events describe it, kept as
 * runs of chained blocks: a STORED event whose parent is the last block of
 * one of the destination's runs extends that run, any other starts a run
 * of its own; a REMOVED block is always the last live block of its run
 * once the blocks removed with it that descend from it are gone (the
 * engines evict from the tails of leaf runs, a block before its parent:
 * models/pcache.h, "Observing the cache"), so runs only shrink from their
 * tails.  Per destination a map from each run's first hash and one from
 * its last hash; across destinations, a (first hash, destination) index
 * (a route__kvidx in direct mode) tells at one probe which destinations
 * have a run starting at a block.
 *
 * The longest prefix of a list a destination holds: its engine's blocks
 * are closed under prefixes, so from block 0 the prefix runs through one
 * run of the destination after another, each starting exactly where the
 * last one parted from the list (a held block that does not continue the
 * run holding the block before it starts a run of its own, as in
 * sim/core/pfxidx.c).  The query follows every destination at once:
 * one probe of the index at each position where some destination's run
 * parted from the list (a few a request), and per run met one probe of
 * its destination's map and a compare (the run's last overlapping hash
 * first, else a bisection; hashes chained).  It replaced, for up to 64
 * destinations, the per-block table of every engine's blocks (32 MiB on
 * the flagship, one change per block stored or removed, ~82 a request):
 * the same sets, so the same answers (tests/test_route_kv.c against the
 * per-block table; tests/router_equiv.sh against the routers before
 * round 4).
 */

typedef struct kt_run {
    uint64_t *h;   /* the run's blocks, h[0..len) */
    uint32_t len, cap;
    uint32_t next; /* free list */
} kt_run;

typedef struct kt_dest {
    sim_u64map head; /* first hash -> run */
    sim_u64map tail; /* last hash -> run */
    uint32_t live;   /* blocks held */
} kt_dest;

struct kx_tree {
    uint32_t n_dest;
    kt_dest *dst;
    kt_run *run;
    uint32_t n_run, cap_run, free_run;
    route__kvidx *heads; /* (first hash of a run, destination) pairs */
    uint64_t *rm;        /* scratch: REMOVED blocks still to take */
    uint32_t cap_rm;
    uint32_t pos[64];    /* tree_prefix: where each followed destination's run parted */
    uint32_t ds[64], rs[64]; /* tree_prefix: the destinations met at one block, their runs */
};

static struct kx_tree *tree_create(uint32_t n_dest)
{
    struct kx_tree *t = sim_xcalloc(1, sizeof *t);
    t->n_dest = n_dest;
    t->dst = sim_xcalloc(n_dest, sizeof *t->dst);
    for (uint32_t d = 0; d < n_dest; d++)
        if (sim_u64map_init(&t->dst[d].head, 64) || sim_u64map_init(&t->dst[d].tail, 64))
            sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
    t->free_run = KX_NONE;
    t->heads = route__kvidx_create(n_dest, false, 0);
    return t;
}

static void tree_destroy(struct kx_tree *t)
{
    for (uint32_t d = 0; d < t->n_dest; d++) {
        sim_u64map_fini(&t->dst[d].head);
        sim_u64map_fini(&t->dst[d].tail);
    }
    for (uint32_t r = 0; r < t->n_run; r++)
        free(t->run[r].h);
    free(t->run);
    free(t->dst);
    free(t->rm);
    route__kvidx_destroy(t->heads);
    free(t);
}

static uint32_t tree_size(const struct kx_tree *t, uint32_t d) { return t->dst[d].live; }

/* Append h[0..n) to run r. */
static void run_push(kt_run *R, const uint64_t *h, uint32_t n)
{
    if (R->len + n > R->cap) {
        R->cap = R->len + n > 2 * R->cap ? R->len + n : 2 * R->cap;
        R->h = sim_xrealloc(R->h, (size_t)R->cap * sizeof *R->h);
    }
    memcpy(R->h + R->len, h, (size_t)n * sizeof *h);
    R->len += n;
}

static void tree_store(struct kx_tree *t, uint32_t d, uint64_t parent, const uint64_t *h,
                       uint32_t n)
{
    kt_dest *D = &t->dst[d];
    uint32_t r = parent ? sim_u64map_get(&D->tail, parent) : KX_NONE;
    if (r != KX_NONE) { /* continues a run */
        sim_u64map_del(&D->tail, parent);
    } else {
        if (t->free_run != KX_NONE) {
            r = t->free_run;
            t->free_run = t->run[r].next;
        } else {
            if (t->n_run == t->cap_run) {
                t->cap_run = t->cap_run ? 2 * t->cap_run : 256;
                t->run = sim_xrealloc(t->run, t->cap_run * sizeof *t->run);
            }
            r = t->n_run++;
            t->run[r] = (kt_run){0};
        }
        t->run[r].len = 0;
        sim_u64map_put(&D->head, h[0], r);
        t_add(t->heads, d, h[0]);
    }
    run_push(&t->run[r], h, n);
    sim_u64map_put(&D->tail, h[n - 1], r);
    D->live += n;
}

/* Take the blocks of a REMOVED event: in reverse order (a run's blocks are
 * listed root to leaf), each block the last one of its run when its turn
 * comes -- or, if a block descending from it in the same event is still
 * held (listed earlier: evicted by an earlier call of the same instant),
 * deferred to another pass. */
static void tree_remove(struct kx_tree *t, uint32_t d, const uint64_t *h, uint32_t n)
{
    kt_dest *D = &t->dst[d];
    if (n > t->cap_rm) {
        t->cap_rm = n > 2 * t->cap_rm ? n : 2 * t->cap_rm;
        t->rm = sim_xrealloc(t->rm, (size_t)t->cap_rm * sizeof *t->rm);
    }
    for (uint32_t i = 0; i < n; i++)
        t->rm[i] = h[n - 1 - i];
    uint32_t left = n;
    while (left) {
        uint32_t kept = 0;
        for (uint32_t i = 0; i < left; i++) {
            const uint64_t z = t->rm[i];
            const uint32_t r = sim_u64map_get(&D->tail, z);
            if (r == KX_NONE) {
                t->rm[kept++] = z;
                continue;
            }
            kt_run *R = &t->run[r];
            sim_u64map_del(&D->tail, z);
            R->len--;
            D->live--;
            /* The blocks listed next that are this run's next tails. */
            while (i + 1 < left && R->len && t->rm[i + 1] == R->h[R->len - 1]) {
                i++;
                R->len--;
                D->live--;
            }
            if (R->len) {
                sim_u64map_put(&D->tail, R->h[R->len - 1], r);
            } else {
                sim_u64map_del(&D->head, R->h[0]);
                t_remove(t->heads, d, R->h[0]);
                if (R->cap > 256) { /* a long run's array is not kept idle */
                    free(R->h);
                    R->h = NULL;
                    R->cap = 0;
                }
                R->next = t->free_run;
                t->free_run = r;
            }
        }
        /* Each pass takes at least the deepest block left. */
        SIM_ALWAYS(kept < left); /* a REMOVED block the destination does not hold */
        left = kept;
    }
}

static void tree_event(struct kx_tree *t, uint32_t d, bool stored, uint64_t parent,
                       const uint64_t *h, uint32_t n)
{
    if (n == 0)
        return;
    if (stored)
        tree_store(t, d, parent, h, n);
    else
        tree_remove(t, d, h, n);
}

static void tree_prefix(struct kx_tree *t, const uint64_t *h, uint32_t n, uint32_t *len)
{
    memset(len, 0, t->n_dest * sizeof *len);
    if (n == 0)
        return;
    /* follow: the destinations whose prefix reached pos[d] so far, where
     * their run parted from the list (or ended). */
    uint64_t follow = t_bits(t->heads, h[0]);
    for (uint64_t b = follow; b; b &= b - 1)
        t->pos[__builtin_ctzll(b)] = 0;
    while (follow) {
        uint32_t at = UINT32_MAX;
        for (uint64_t b = follow; b; b &= b - 1)
            at = t->pos[__builtin_ctzll(b)] < at ? t->pos[__builtin_ctzll(b)] : at;
        const uint64_t here = at ? t_bits(t->heads, h[at]) : follow;
        /* The runs starting at `at` of the destinations followed to it (at
         * block 0 all of them): each stage for all before the next, so
         * that their misses overlap -- map slot, run record, the run's
         * last overlapping hash. */
        uint32_t nd = 0;
        for (uint64_t b = follow; b; b &= b - 1) {
            const uint32_t d = (uint32_t)__builtin_ctzll(b);
            if (t->pos[d] != at)
                continue;
            if (!(here >> d & 1)) { /* no run of d starts here: its prefix ends */
                follow &= ~(1ull << d);
                continue;
            }
            t->ds[nd++] = d;
            sim_u64map_prefetch(&t->dst[d].head, h[at]);
        }
        for (uint32_t i = 0; i < nd; i++) {
            t->rs[i] = sim_u64map_get(&t->dst[t->ds[i]].head, h[at]);
            SIM_ALWAYS(t->rs[i] != KX_NONE);
            SIM_PREFETCH(&t->run[t->rs[i]]);
        }
        for (uint32_t i = 0; i < nd; i++) {
            const kt_run *R = &t->run[t->rs[i]];
            SIM_PREFETCH(&R->h[(R->len < n - at ? R->len : n - at) - 1]);
        }
        uint32_t hint = 0;
        for (uint32_t i = 0; i < nd; i++) {
            const uint32_t d = t->ds[i];
            const kt_run *R = &t->run[t->rs[i]];
            const uint32_t k = sim_chain_common_bisect(R->h, R->len, h + at, n - at, hint);
            hint = k;
            len[d] = at + k;
            t->pos[d] = at + k;
            if (at + k >= n)
                follow &= ~(1ull << d);
        }
    }
}

/* ---- decision-fed index over chained hash lists (route__kvlru) ---- */

/*
 * Per destination, its LRU as a one-destination sim/core/pfxidx (a queue
 * of block runs: the hashes one add touches get consecutive LRU places and
 * one time, and chained hashes make a later list meet a run in a leading
 * part of it, so the run loses only its head; pfxidx.c gives the
 * argument), and either
 *  - (`set`) the union of all destinations' sets in an unordered
 *    route__kvidx for the walk and the bisection, kept from the queues'
 *    change logs (blocks entering and leaving each queue, in order), so
 *    it is exactly the set the per-pair LRU (an ordered route__kvidx)
 *    would hold after the same adds and expiries; or
 *  - (no `set`, at most 64 destinations) the (run head, destination)
 *    pairs of the queues in an unordered route__kvidx, kept from their
 *    run-head logs, with a counting filter in front, which is all
 *    route__kvlru_walk needs (below).  On the flagship (30 destinations,
 *    31,250 blocks each) ~30,000 heads against ~840,000 blocks: a 1-MiB
 *    table and a 256-KiB filter in place of a 32-MiB table, and a few
 *    head changes per add in place of one set change per block entering
 *    or leaving a queue (~19).
 * tests/test_route_kv.c checks both against the ordered index.
 */
struct route__kvlru {
    uint32_t n_dest;
    route__kvidx *set;   /* the per-block set (kept: `set` at creation, or > 64 destinations) */
    route__kvidx *heads; /* else: the (run head, destination) pairs of the queues */
    sim_pfxidx **q;      /* per destination */
    uint32_t ds[64], rs[64]; /* the queues with a run keyed at one position, their runs */
    /* Counting filter over the heads index's hashes: filt[lru_fslot(h)]
     * counts them (saturating at UINT8_MAX, which then stays), so 0
     * proves a block heads no run and spares the walk that probe (most
     * blocks of a list). */
    uint8_t *filt;
};

#define KX_LRU_FBITS 18 /* heads filter: 2^18 one-byte counters (256 KiB) */

static inline size_t lru_fslot(uint64_t h)
{
    /* Not the heads table's bits (t_home: the top bits of h * 2^64/phi). */
    return (size_t)((h * 0xd6e8feb86659fd93ULL) >> (64 - KX_LRU_FBITS));
}

route__kvlru *route__kvlru_create(uint32_t n_dest, uint32_t cap, bool set)
{
    route__kvlru *l = sim_xcalloc(1, sizeof *l);
    l->n_dest = n_dest;
    if (n_dest > 64) /* the heads index needs direct mode */
        set = true;
    if (set)
        l->set = route__kvidx_create(n_dest, false, 0);
    else {
        l->heads = route__kvidx_create(n_dest, false, 0);
        l->filt = sim_xcalloc((size_t)1 << KX_LRU_FBITS, 1);
    }
    l->q = sim_xcalloc(n_dest, sizeof *l->q);
    for (uint32_t d = 0; d < n_dest; d++) {
        l->q[d] = sim_pfxidx_create(cap ? cap : UINT32_MAX, 1);
        if (!l->q[d])
            sim_panic(__FILE__, __LINE__, "out of memory creating a block index");
        if (set)
            sim_pfxidx_log_on(l->q[d]);
        else
            sim_pfxidx_head_log_on(l->q[d]);
    }
    return l;
}

void route__kvlru_destroy(route__kvlru *l)
{
    if (!l)
        return;
    for (uint32_t d = 0; d < l->n_dest; d++)
        sim_pfxidx_destroy(l->q[d]);
    free(l->q);
    route__kvidx_destroy(l->set);
    route__kvidx_destroy(l->heads);
    free(l->filt);
    free(l);
}

/* Bring the set (or the heads index) up to date with destination d's
 * queue log, in order. */
static void lru_apply(route__kvlru *l, uint32_t d)
{
    const uint64_t *h;
    const uint8_t *in;
    if (l->heads) {
        const uint32_t n = sim_pfxidx_head_log(l->q[d], &h, &in);
        route__kvidx *hx = l->heads;
        for (uint32_t j = 0; j < n; j++) {
            const size_t tn = hx->tn;
            uint8_t *c = &l->filt[lru_fslot(h[j])];
            if (in[j]) {
                t_add(hx, d, h[j]);
                if (hx->tn > tn && *c != UINT8_MAX) /* a hash new to the table */
                    ++*c;
            } else {
                t_remove(hx, d, h[j]);
                if (hx->tn < tn && *c != UINT8_MAX) /* its last destination gone */
                    --*c;
            }
        }
        sim_pfxidx_head_log_clear(l->q[d]);
        return;
    }
    const uint32_t n = sim_pfxidx_log(l->q[d], &h, &in);
    route__kvidx *x = l->set;
    if (x->direct) {
        for (uint32_t j = 0; j < KX_PF && j < n; j++)
            t_prefetch_w(x, h[j]);
        for (uint32_t j = 0; j < n; j++) {
            if (j + KX_PF < n)
                t_prefetch_w(x, h[j + KX_PF]);
            if (in[j])
                t_add(x, d, h[j]);
            else
                t_remove(x, d, h[j]);
        }
    } else {
        for (uint32_t j = 0; j < n;) { /* stretches of one kind */
            uint32_t k = j + 1;
            while (k < n && in[k] == in[j])
                k++;
            if (in[j])
                route__kvidx_add(x, d, h + j, k - j, 0);
            else
                route__kvidx_remove(x, d, h + j, k - j);
            j = k;
        }
    }
    sim_pfxidx_log_clear(l->q[d]);
}

void route__kvlru_add(route__kvlru *l, uint32_t d, const uint64_t *hashes, uint32_t n,
                      double now_s)
{
    sim_pfxidx_add(l->q[d], hashes, n, 0, now_s);
    lru_apply(l, d);
}

void route__kvlru_expire(route__kvlru *l, double before_s)
{
    for (uint32_t d = 0; d < l->n_dest; d++) {
        sim_pfxidx_expire(l->q[d], before_s);
        lru_apply(l, d);
    }
}

route__kvidx *route__kvlru_index(const route__kvlru *l) { return l->set; }

/*
 * The walk over the run heads.  Destination d holds hashes[j] exactly when
 * j lies in a stretch [a, a + k) where hashes[a] heads one of d's runs and
 * k = sim_pfxidx_run_at(d's queue, hashes + a, n - a): a held block either
 * continues the run that holds the block before it or heads a run (the
 * argument at the top of sim/core/pfxidx.c, per destination).  So one
 * probe of the heads index per position (a table of ~1/30 the blocks on
 * the flagship: in the L2 cache, where the per-block set is 32 MiB)
 * finds every stretch; the walk stops at the first position no stretch
 * covers, and each destination is credited its stretches' positions
 * before it.  route__kvidx_walk's result on the set, exactly
 * (tests/test_route_kv.c, tests/router_equiv.sh).
 */
uint32_t route__kvlru_walk(route__kvlru *l, const uint64_t *hashes, uint32_t n, uint32_t *count)
{
    if (l->set)
        return route__kvidx_walk(l->set, hashes, n, count);
    const route__kvidx *hx = l->heads;
    memset(count, 0, l->n_dest * sizeof *count);
    /* Positions [0, cov) are held by some destination.  The walk stops at
     * the first position >= cov, so every stretch found ends at or before
     * it: each is credited whole as it is found. */
    uint32_t cov = 0;
    uint32_t i = 0;
    const uint8_t *filt = l->filt;
    for (uint32_t j = 0; j < KX_PF && j < n; j++)
        SIM_PREFETCH(&filt[lru_fslot(hashes[j])]);
    for (; i < n; i++) {
        if (i + KX_PF < n)
            SIM_PREFETCH(&filt[lru_fslot(hashes[i + KX_PF])]);
        const uint64_t bits = filt[lru_fslot(hashes[i])] ? t_bits(hx, hashes[i]) : 0;
        if (bits) {
            /* The runs keyed hashes[i] in every queue that has one (all
             * of them at the list's first block, the model hash): each
             * stage for all of them before the next, so that their misses
             * overlap. */
            uint32_t nd = 0;
            for (uint64_t b = bits; b; b &= b - 1) {
                const uint32_t d = (uint32_t)__builtin_ctzll(b);
                l->ds[nd++] = d;
                sim_pfxidx_at_fetch(l->q[d], hashes[i]);
            }
            for (uint32_t t = 0; t < nd; t++) {
                l->rs[t] = sim_pfxidx_at_run(l->q[l->ds[t]], hashes[i]);
                SIM_ALWAYS(l->rs[t] != SIM_PFXIDX_NONE); /* the heads index says so */
            }
            for (uint32_t t = 0; t < nd; t++)
                sim_pfxidx_at_tail(l->q[l->ds[t]], l->rs[t], n - i);
            uint32_t hint = 0; /* the last answer: most runs part from the list together */
            for (uint32_t t = 0; t < nd; t++) {
                const uint32_t k =
                    sim_pfxidx_at_common(l->q[l->ds[t]], l->rs[t], hashes + i, n - i, hint);
                SIM_ALWAYS(k >= 1); /* the run's first live block is hashes[i] */
                hint = k;
                count[l->ds[t]] += k;
                if (i + k > cov)
                    cov = i + k;
            }
        }
        if (i >= cov)
            break;
    }
    return i;
}
