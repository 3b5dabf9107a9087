/*
 * Global prefix index as a queue of block runs; see pfxidx.h.  The
 * per-block table it must equal, call for call, is tests/pfxidx_ref.c
 * (tests/test_pfxidx.c and tests/pfxidx_equiv.sh check it).
 *
 * Why runs are enough (hashes chained, so a block determines its prefix):
 *  - the blocks one add() appends are consecutive blocks of one prompt
 *    with consecutive LRU places and one last touch; a run is a stretch of
 *    them with one destination set;
 *  - a later prompt p that contains some block of run X contains every
 *    earlier block of X's prompt, so p meets X in a leading part of X's
 *    live blocks, which add(p) moves to the MRU end: X only ever loses its
 *    head (to a touch, or to eviction, which takes the head of the oldest
 *    run), so its live blocks stay consecutive in LRU order, and the LRU
 *    order of blocks is the queue order of runs, each head to tail;
 *  - a present block h[j] of a prompt whose block h[j-1] is absent, or is
 *    present in a run that does not continue with h[j], is a run's head
 *    (otherwise the block before it in its run would be h[j-1], in that
 *    run): so a map from each run's head hash finds every present block a
 *    walk over a prompt can reach, and nothing else is needed.
 */
#include "sim/core/pfxidx.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/lruq.h"
#include "sim/core/prefetch.h"
#include "sim/core/u64map.h"

#define PX_NONE UINT32_MAX
#define PX_FBITS 13 /* head filter: 2^13 counters */
#define PX_FSAT UINT16_MAX /* a saturated counter: "maybe", for good */

typedef struct px_run {
    uint64_t *h;   /* hashes; the live blocks are h[off..len) */
    uint32_t off, len, cap;
    uint32_t pos;  /* position of its live queue entry (sim_lruq) */
    uint32_t next; /* free list */
    double last;   /* last touch of every block, s */
} px_run;

/* A log of hashes entering or leaving something, in order. */
typedef struct px_log {
    bool on;
    uint64_t *h;
    uint8_t *in;
    uint32_t n, cap;
} px_log;

struct sim_pfxidx {
    uint32_t capacity, n_dest, words;
    uint32_t live;   /* blocks held */
    sim_u64map head; /* head hash of a run -> run */
    /* Counting filter over the map's keys: filt[f(k)] = how many keys k
     * with that slot the map holds (saturating at PX_FSAT, which then
     * stays), so 0 proves a hash is no key and spares the map probe for
     * the absent blocks of a prompt (most of them). */
    uint16_t *filt;
    px_run *run;
    uint64_t *bits;  /* `words` per run: its destinations */
    uint64_t *tmp;   /* scratch: `words` */
    uint32_t n_run, run_cap, run_free;
    sim_lruq q;      /* runs, least recently touched first */
    /* Eviction updates the map lazily: the run being eaten from its head
     * (st_run, or PX_NONE) may still be keyed by an evicted hash,
     * h[st_off] (st_off < off < len); every other run is keyed by its
     * head.  Flushed before anything else changes that run's key, and at
     * the end of every add (so match sees an exact map). */
    uint32_t st_run, st_off;
    /* Change log (sim_pfxidx_log_on): blocks entering / leaving. */
    px_log log;
    /* Run-head log (sim_pfxidx_head_log_on): keys entering / leaving the
     * head map. */
    px_log hlog;
};

/* Append h[0..k) entering (in = 1) or leaving (0) to log g, if it is on. */
static inline void log_put(px_log *g, const uint64_t *h, uint32_t k, uint8_t in)
{
    if (!g->on)
        return;
    if (g->n + k > g->cap) {
        g->cap = g->n + k > 2 * g->cap ? g->n + k : 2 * g->cap;
        g->h = sim_xrealloc(g->h, (size_t)g->cap * sizeof *g->h);
        g->in = sim_xrealloc(g->in, g->cap);
    }
    memcpy(g->h + g->n, h, (size_t)k * sizeof *h);
    memset(g->in + g->n, in, k);
    g->n += k;
}

static uint32_t log_get(const px_log *g, const uint64_t **h, const uint8_t **in)
{
    *h = g->h;
    *in = g->in;
    return g->n;
}

static uint64_t *run_bits(const sim_pfxidx *x, uint32_t r)
{
    return x->bits + (size_t)r * x->words;
}

/* Filter slot of a hash (Fibonacci hashing: the top bits of h * 2^64/phi). */
static inline size_t fslot(uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ULL) >> (64 - PX_FBITS));
}

/* Map k -> r in the head map, counting a new key in the filter. */
static void head_put(sim_pfxidx *x, uint64_t k, uint32_t r)
{
    if (sim_u64map_insert(&x->head, k, r) != SIM_U64MAP_NONE) {
        sim_u64map_put(&x->head, k, r); /* taken over: the count stands */
        return;
    }
    uint16_t *c = &x->filt[fslot(k)];
    if (*c != PX_FSAT)
        ++*c;
    log_put(&x->hlog, &k, 1, 1);
}

/* Remove key k (present) from the head map and the filter. */
static void head_del(sim_pfxidx *x, uint64_t k)
{
    sim_u64map_del(&x->head, k);
    uint16_t *c = &x->filt[fslot(k)];
    if (*c != PX_FSAT)
        --*c;
    log_put(&x->hlog, &k, 1, 0);
}

sim_pfxidx *sim_pfxidx_create(uint32_t capacity, uint32_t n_dest)
{
    if (capacity == 0 || n_dest == 0)
        return NULL;
    sim_pfxidx *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->capacity = capacity;
    x->n_dest = n_dest;
    x->words = (n_dest + 63) / 64;
    x->run_free = PX_NONE;
    x->st_run = PX_NONE;
    x->tmp = calloc(x->words, sizeof *x->tmp);
    x->filt = calloc((size_t)1 << PX_FBITS, sizeof *x->filt);
    if (!x->tmp || !x->filt || sim_u64map_init(&x->head, 64) != SIM_OK) {
        free(x->tmp);
        free(x->filt);
        free(x);
        return NULL;
    }
    return x;
}

void sim_pfxidx_destroy(sim_pfxidx *x)
{
    if (!x)
        return;
    for (uint32_t r = 0; r < x->n_run; r++)
        free(x->run[r].h);
    free(x->run);
    free(x->bits);
    free(x->tmp);
    free(x->filt);
    sim_u64map_fini(&x->head);
    sim_lruq_fini(&x->q);
    free(x->log.h);
    free(x->log.in);
    free(x->hlog.h);
    free(x->hlog.in);
    free(x);
}

void sim_pfxidx_log_on(sim_pfxidx *x)
{
    x->log.on = true;
}

uint32_t sim_pfxidx_log(const sim_pfxidx *x, const uint64_t **h, const uint8_t **in)
{
    return log_get(&x->log, h, in);
}

void sim_pfxidx_log_clear(sim_pfxidx *x)
{
    x->log.n = 0;
}

void sim_pfxidx_head_log_on(sim_pfxidx *x)
{
    x->hlog.on = true;
}

uint32_t sim_pfxidx_head_log(const sim_pfxidx *x, const uint64_t **h, const uint8_t **in)
{
    return log_get(&x->hlog, h, in);
}

void sim_pfxidx_head_log_clear(sim_pfxidx *x)
{
    x->hlog.n = 0;
}

uint32_t sim_pfxidx_size(const sim_pfxidx *x)
{
    return x->live;
}

/* A new run at the MRU end, with room for `need` hashes, destination set
 * b, last touch `now`, no blocks yet (the caller appends at least one and
 * enters its head in the map). */
static uint32_t run_new(sim_pfxidx *x, uint32_t need, const uint64_t *b, double now)
{
    uint32_t r;
    if (x->run_free != PX_NONE) {
        r = x->run_free;
        x->run_free = x->run[r].next;
    } else {
        if (x->n_run == x->run_cap) {
            x->run_cap = x->run_cap ? 2 * x->run_cap : 256;
            x->run = sim_xrealloc(x->run, x->run_cap * sizeof *x->run);
            x->bits = sim_xrealloc(x->bits, (size_t)x->run_cap * x->words * sizeof *x->bits);
        }
        r = x->n_run++;
        x->run[r] = (px_run){0};
    }
    px_run *R = &x->run[r];
    if (R->cap < need || R->cap > 4 * need + 64) { /* a recycled run's array may be huge */
        free(R->h);
        R->cap = need;
        R->h = sim_xmalloc((size_t)need * sizeof *R->h);
    }
    R->off = R->len = 0;
    R->last = now;
    memcpy(run_bits(x, r), b, x->words * sizeof *b);
    sim_lruq_touch(&x->q, &x->run[0].pos, sizeof *x->run, r);
    return r;
}

/* Run r holds no block any more: recycle it (keeping its array).  Its
 * queue entries go stale: its position is set past the queue's end, where
 * no entry of r can be. */
static void run_release(sim_pfxidx *x, uint32_t r)
{
    px_run *R = &x->run[r];
    R->pos = (uint32_t)x->q.tail;
    R->next = x->run_free;
    x->run_free = r;
}

/* Run r, whose map key is the hash at offset `key_off` (<= off), is
 * keyed by its head again, or, if it holds no block, leaves the map and
 * is released. */
static void run_rekey(sim_pfxidx *x, uint32_t r, uint32_t key_off)
{
    px_run *R = &x->run[r];
    /* The key may have been taken over by a re-inserted block. */
    if (sim_u64map_get(&x->head, R->h[key_off]) == r)
        head_del(x, R->h[key_off]);
    if (R->off == R->len) {
        run_release(x, r);
        return;
    }
    if (R->off >= 32 && 2 * R->off >= R->len) { /* give the dead prefix back */
        memmove(R->h, R->h + R->off, (size_t)(R->len - R->off) * sizeof *R->h);
        R->len -= R->off;
        R->off = 0;
        if (R->cap > 2 * R->len + 64) {
            R->cap = R->len;
            R->h = sim_xrealloc(R->h, (size_t)R->cap * sizeof *R->h);
        }
    }
    head_put(x, R->h[R->off], r);
}

/* Apply the pending key change of the run being evicted, if any. */
static void flush(sim_pfxidx *x)
{
    if (x->st_run != PX_NONE) {
        const uint32_t r = x->st_run;
        x->st_run = PX_NONE;
        run_rekey(x, r, x->st_off);
    }
}

/* The run whose head is h (the lazy key of st_run included), or PX_NONE. */
static uint32_t lookup(const sim_pfxidx *x, uint64_t h)
{
    const uint32_t r = x->filt[fslot(h)] ? sim_u64map_get(&x->head, h) : SIM_U64MAP_NONE;
    if (x->st_run == PX_NONE)
        return r;
    if (r == x->st_run) /* its stale key: an evicted block */
        return PX_NONE;
    const px_run *S = &x->run[x->st_run];
    return r == SIM_U64MAP_NONE && S->h[S->off] == h ? x->st_run : r;
}

/* Run r loses its first k live blocks (k <= live blocks; the head's map
 * entry is updated or, if r empties, removed and r released). */
static void run_behead(sim_pfxidx *x, uint32_t r, uint32_t k)
{
    if (r == x->st_run)
        flush(x);
    const uint32_t key = x->run[r].off;
    x->run[r].off += k;
    run_rekey(x, r, key);
}

/* Drop the least recently touched block (x->live > 0).  Returns the run
 * released, or PX_NONE.  The map learns of it lazily (st_run). */
static uint32_t drop_front(sim_pfxidx *x)
{
    if (x->st_run != PX_NONE) { /* still eating it: it is the queue's front */
        px_run *S = &x->run[x->st_run];
        if (S->off + 1 < S->len) {
            log_put(&x->log, &S->h[S->off], 1, 0);
            x->live--;
            S->off++;
            return PX_NONE;
        }
    }
    const uint32_t r = sim_lruq_front(&x->q, &x->run[0].pos, sizeof *x->run);
    SIM_ALWAYS(r != SIM_LRUQ_NONE);
    if (r != x->st_run) {
        flush(x);
        x->st_run = r;
        x->st_off = x->run[r].off;
    }
    log_put(&x->log, &x->run[r].h[x->run[r].off], 1, 0);
    x->live--;
    if (++x->run[r].off < x->run[r].len)
        return PX_NONE;
    sim_lruq_pop_front(&x->q);
    flush(x);
    return r;
}

/* Drop the least recently touched run whole (the queue's front, r). */
static void drop_run(sim_pfxidx *x, uint32_t r)
{
    sim_lruq_pop_front(&x->q);
    log_put(&x->log, x->run[r].h + x->run[r].off, x->run[r].len - x->run[r].off, 0);
    x->live -= x->run[r].len - x->run[r].off;
    run_behead(x, r, x->run[r].len - x->run[r].off);
}

void sim_pfxidx_expire(sim_pfxidx *x, double before)
{
    flush(x);
    if (!x->run) /* nothing added yet */
        return;
    for (;;) {
        const uint32_t r = sim_lruq_front(&x->q, &x->run[0].pos, sizeof *x->run);
        if (r == SIM_LRUQ_NONE || !(x->run[r].last < before))
            return;
        drop_run(x, r);
    }
}

void sim_pfxidx_expire_idle(sim_pfxidx *x, double now, double ttl)
{
    flush(x);
    if (!x->run)
        return;
    for (;;) {
        const uint32_t r = sim_lruq_front(&x->q, &x->run[0].pos, sizeof *x->run);
        if (r == SIM_LRUQ_NONE || now - x->run[r].last < ttl)
            return;
        drop_run(x, r);
    }
}

/* Length of the common prefix of a[0..na) and b[0..nb), where a and b are
 * stretches of chained lists (every caller's a[0] == b[0]; in any case
 * chaining makes "a[k] == b[k]" true for k below the common length and
 * false from it on: equal hashes are the same block with the same
 * prefix).  So the last position is tested first (a prompt usually
 * passes a run whole, or ends inside it), then a bisection -- two or
 * ~log2 n compares instead of a scan of the whole stretch. */
static uint32_t common(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
    if (na == 0 || nb == 0 || a[0] != b[0])
        return 0;
    return sim_chain_common_bisect(a, na, b, nb, 0);
}

void sim_pfxidx_at_fetch(const sim_pfxidx *x, uint64_t h0)
{
    SIM_PREFETCH(&x->filt[fslot(h0)]);
    sim_u64map_prefetch(&x->head, h0);
}

uint32_t sim_pfxidx_at_run(const sim_pfxidx *x, uint64_t h0)
{
    const uint32_t r = lookup(x, h0);
    if (r != PX_NONE)
        SIM_PREFETCH(&x->run[r]);
    return r;
}

void sim_pfxidx_at_tail(const sim_pfxidx *x, uint32_t r, uint32_t n)
{
    const px_run *R = &x->run[r];
    const uint32_t live = R->len - R->off;
    SIM_PREFETCH(R->h + R->off + (live < n ? live : n) - 1);
}

uint32_t sim_pfxidx_at_common(const sim_pfxidx *x, uint32_t r, const uint64_t *h, uint32_t n,
                              uint32_t hint)
{
    const px_run *R = &x->run[r];
    /* The run is keyed h[0]: its first live block is h[0]. */
    return sim_chain_common_bisect(R->h + R->off, R->len - R->off, h, n, hint);
}

uint32_t sim_pfxidx_run_at(const sim_pfxidx *x, const uint64_t *h, uint32_t n)
{
    const uint32_t r = sim_pfxidx_at_run(x, h[0]);
    return r == PX_NONE ? 0 : sim_pfxidx_at_common(x, r, h, n, 0);
}

uint32_t sim_pfxidx_match(const sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d)
{
    uint32_t m = 0;
    while (m < n) {
        const uint32_t r = lookup(x, h[m]);
        if (r == PX_NONE || !((run_bits(x, r)[d / 64] >> (d % 64)) & 1u))
            break;
        const px_run *R = &x->run[r];
        m += common(R->h + R->off, R->len - R->off, h + m, n - m);
    }
    return m;
}

void sim_pfxidx_match_set(const sim_pfxidx *x, const uint64_t *h, uint32_t n, uint64_t *alive,
                          uint32_t *len)
{
    const uint32_t W = x->words;
    uint32_t m = 0;
    for (;;) {
        const uint32_t r = m < n ? lookup(x, h[m]) : PX_NONE;
        if (r == PX_NONE)
            break;
        /* Every destination of the set not in r's stops here, at m. */
        const uint64_t *b = run_bits(x, r);
        uint64_t keep = 0;
        for (uint32_t w = 0; w < W; w++) {
            for (uint64_t g = alive[w] & ~b[w]; g; g &= g - 1)
                len[w * 64 + (uint32_t)__builtin_ctzll(g)] = m;
            alive[w] &= b[w];
            keep |= alive[w];
        }
        if (!keep)
            return;
        const px_run *R = &x->run[r];
        m += common(R->h + R->off, R->len - R->off, h + m, n - m);
    }
    for (uint32_t w = 0; w < W; w++)
        for (uint64_t g = alive[w]; g; g &= g - 1)
            len[w * 64 + (uint32_t)__builtin_ctzll(g)] = m;
}

/* Append h[0..k) (k >= 1) at the MRU end with destination set b: to run
 * *cur (this add's last run) if it has the same set, else to a new run
 * sized for `rest` >= k blocks. */
static void append(sim_pfxidx *x, uint32_t *cur, const uint64_t *h, uint32_t k,
                   const uint64_t *b, uint32_t rest, double now)
{
    uint32_t c = *cur;
    int same = c != PX_NONE;
    for (uint32_t w = 0; same && w < x->words; w++)
        same = run_bits(x, c)[w] == b[w];
    if (!same) {
        c = run_new(x, rest, b, now);
        head_put(x, h[0], c);
        *cur = c;
    }
    px_run *C = &x->run[c];
    if (C->len + k > C->cap) {
        C->cap = C->len + k > 2 * C->cap ? C->len + k : 2 * C->cap;
        C->h = sim_xrealloc(C->h, (size_t)C->cap * sizeof *C->h);
    }
    if (k == 1) /* an inserted block: no library call */
        C->h[C->len] = h[0];
    else
        memcpy(C->h + C->len, h, (size_t)k * sizeof *h);
    C->len += k;
}

/* The rest of a stretch of absent blocks h[j..), appended to this add's
 * run C (whose set is {d}), while the filter proves them no run's head
 * and, if the table is full, the front run being eaten (st_run) keeps a
 * block after the one it loses: the steps of the general loop below, with
 * the state in registers.  Returns where the general loop resumes (a
 * block that may be present, or a case it must handle). */
static uint32_t absent_stretch(sim_pfxidx *x, px_run *C, const uint64_t *h, uint32_t j,
                               uint32_t n)
{
    px_run *S = x->st_run != PX_NONE ? &x->run[x->st_run] : NULL;
    uint32_t live = x->live;
    for (; j < n; j++) {
        const uint64_t hj = h[j];
        if (x->filt[fslot(hj)] || (S && S->h[S->off] == hj) || C->len == C->cap)
            break;
        if (live >= x->capacity) {
            if (!S || S->off + 1 >= S->len)
                break;
            log_put(&x->log, &S->h[S->off], 1, 0);
            S->off++;
            live--;
        }
        C->h[C->len++] = hj;
        log_put(&x->log, h + j, 1, 1);
        live++;
    }
    x->live = live;
    return j;
}

void sim_pfxidx_add(sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d, double now)
{
    SIM_ALWAYS(d < x->n_dest);
    uint64_t *b = x->tmp;
    uint32_t cur = PX_NONE;
    int b_is_d = 0; /* b holds {d} */
    int cur_d = 0;  /* run cur has the set {d} */
    for (uint32_t j = 0; j < n;) {
        const uint32_t r = lookup(x, h[j]);
        if (r != PX_NONE) { /* present: a leading part of run r */
            const px_run *R = &x->run[r];
            const uint32_t k = common(R->h + R->off, R->len - R->off, h + j, n - j);
            memcpy(b, run_bits(x, r), x->words * sizeof *b);
            b[d / 64] |= (uint64_t)1 << (d % 64);
            b_is_d = 0;
            /* r loses them first (its head leaves the map; emptied, it is
             * released and its queue entry goes stale), then they join the
             * MRU end from the prompt's own hashes. */
            run_behead(x, r, k);
            append(x, &cur, h + j, k, b, n - j, now);
            cur_d = 0;
            j += k;
        } else { /* absent: insert, evicting the least recent block if full */
            if (x->live >= x->capacity && drop_front(x) == cur)
                cur = PX_NONE; /* this add's own run was evicted whole */
            if (cur != PX_NONE && cur_d) { /* append() inline: same set */
                px_run *C = &x->run[cur];
                if (C->len == C->cap) {
                    C->cap = 2 * C->cap;
                    C->h = sim_xrealloc(C->h, (size_t)C->cap * sizeof *C->h);
                }
                C->h[C->len++] = h[j];
            } else {
                if (!b_is_d) {
                    memset(b, 0, x->words * sizeof *b);
                    b[d / 64] |= (uint64_t)1 << (d % 64);
                    b_is_d = 1;
                }
                append(x, &cur, h + j, 1, b, n - j, now);
                cur_d = 1;
            }
            log_put(&x->log, h + j, 1, 1);
            x->live++;
            j++;
            if (cur != PX_NONE && cur_d)
                j = absent_stretch(x, &x->run[cur], h, j, n);
        }
    }
    flush(x);
}
