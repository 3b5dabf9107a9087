/*
 * dualmap: two-choice prefix-affinity routing with an SLO switch and
 * hot-spot rebalancing of queued work (DualMap, Yuan et al., arXiv
 * 2602.06502, ICLR 2026), modelled on the AIBrix default "dualmap" variant
 * (vllm-project/aibrix pkg/plugins/gateway/algorithms/dualmap.go @9c8981e)
 * with the paper's TTFT-SLO switch made explicit.  Specification: the
 * section `dualmap` of docs/policies.md.
 *
 * Rule, per arriving request r of L prompt tokens:
 *  1. Adaptive key depth d (hot-prefix detector, below); key = hash of the
 *     first d blocks of r (blocks are chained, so that is r->blocks[d-1];
 *     a request without a full block uses r->key).
 *  2. Candidates c1 = ring1(key), c2 = ring2(key): two consistent-hash
 *     rings (route__ring, different salts, router.dualmap.vnodes positions per
 *     destination, default 100).  If c1 == c2, c2 = (c1 + 1) mod R.
 *  3. For each candidate c: hit_c = predicted cached prefix of r on c
 *     (router-side prefix index, below), unc_c = L - hit_c, pend_c =
 *     predicted uncached tokens waiting at c (below) and
 *     TTFT_c = (pend_c + unc_c) · t_p.
 *  4. A = the candidate with the larger hit_c (tie: fewer in-flight
 *     requests, then a coin from the router's PCG stream).
 *  5. If TTFT_A > ttft_slo_s, send r to argmin TTFT_c (tie: A), else to A.
 *  6. Hot-spot rebalancing: candidate c is overloaded if pend_c (plus unc_c
 *     for the chosen one) exceeds the backlog B = ttft_slo_s / t_p tokens,
 *     or its oldest waiting request has waited max_wait_s (default
 *     60 s).  Only when both are overloaded, for each c, in one
 *     non-recursive pass over c's waiting (never admitted) requests q:
 *     TTFT_s(q) = (running prefill at c + uncached tokens queued ahead of q
 *     + unc_q) · t_p and TTFT_t(q) = (pend_t + unc_q on t) · t_p on q's
 *     other candidate t (skipped if t is itself overloaded); move requests
 *     in order of most negative TTFT_t − TTFT_s, re-evaluating the target
 *     backlog after each move, while that difference is negative and until
 *     the moved uncached tokens reach the excess pend_c − B
 *     (route_ops.migrate; moved requests go to the back of t's queue).
 *
 * Per-token prefill time t_p: router.dualmap.tp_s if set, otherwise crsim's cost model
 * (route_env.cost) — the step time of one prefill chunk of batch_tokens
 * tokens with no earlier context, divided by batch_tokens.  Context
 * attention is not included, so t_p is a lower bound for long contexts.
 * t_p, the backlog B and the prefix-index bound are per destination: in a
 * mixed fleet each comes from the destination's own cost model,
 * max_num_batched_tokens and KV pool (route_env_cost, _batch_tokens,
 * _pool_blocks; docs/mixed-fleets.md), and TTFT_c uses t_p of c.
 *
 * Router-side prefix index: for each destination, an LRU set of the block
 * hashes this router sent there, bounded to pool_blocks entries per
 * destination (the destination's KV pool).  A dispatched (or migrated)
 * request touches its blocks last to first, so a prefix's leading blocks
 * are the most recent and evicted last, as in the engine's own LRU.
 * hit_c = (leading blocks of r present for c) · block_size, capped at L.
 * Entries are keyed by a 64-bit mix of (block hash, destination); two
 * pairs colliding on that mix (probability ~2^-64 per pair) would share an
 * entry.
 *
 * Pending backlog pend_c: Σ over requests waiting at c (route_ops.waiting,
 * at most 256 listed) of the uncached tokens predicted when they were
 * routed there, plus the part of the engine-scraped queued_tokens[c] not
 * accounted for by the listed requests (prefill still running, and any
 * unlisted waiting requests at full length).  Without route_ops it is
 * queued_tokens[c].
 *
 * Adaptive depth (AIBrix's lazy prefix table and hot-prefix detector): a
 * table maps the key at depth d to d + 1 for expanded keys; a request's
 * depth is found by following the table from d = 1.  A window of the last
 * 200 requests (at least 20 before any decision) counts, for every key
 * along each request's resolved path (depths 1..d), how many requests in
 * the window passed through it.  If the share of the resolved key is
 * >= 6.12 % (and d < blocks), the key is expanded to d + 1; if the share of
 * its parent key (depth d − 1) is < 2 %, the parent's expansion is removed.
 *
 * Inputs: from route_env n_dest, seed, ttft_slo_s (the run's SLO, unless
 * router.dualmap.ttft_slo_s > 0), block_size (> 0), pool_blocks (> 0),
 * cost and batch_tokens (when tp_s = 0); from router.dualmap vnodes (100),
 * tp_s, max_wait_s (60 s).
 *
 * Options (router.dualmap; defaults at AIBrix's, crsim <= 0.1 in
 * parentheses): switch_tokens 1e6 (0: TTFT_A > ttft_slo_s),
 * rebalance_tokens 1e6 (0: B = ttft_slo_s / t_p), router_queue false
 * (true: requests waiting in an engine stand for requests the router
 * holds, listed and moved through route_ops; with false route_ops is
 * never called and there is no rebalancing, as AIBrix pops its queue at
 * once), index_blocks 200000 with index_ttl_s 1200 (AIBrix's
 * PrefixHashTable: one global LRU of block hashes with their destination
 * sets, idle entries dropped after 20 min; kept as a queue of block runs,
 * sim/core/pfxidx.h, equal call for call to the per-block table
 * tests/pfxidx_ref.c; 0: per-destination LRU of pool_blocks entries).
 *
 * Deviations from AIBrix, each deliberate:
 *  - t_p comes from crsim's cost model (AIBrix: a constant 0.05); with
 *    token thresholds it scales both candidates alike and changes nothing.
 *  - With router_queue there is no router-side priority queue: crsim's
 *    engines queue FCFS, and pend_c is read from the engine queue through
 *    route_ops.  Queue order by cached length is therefore not modelled.
 *  - Rebalancing stays within each request's two candidates, as the paper
 *    says; AIBrix's fall-back to the neighbour instance (index + 1) when
 *    the other candidate is overloaded is omitted.  A queued request's
 *    candidate pair is the one computed from its key when it was routed
 *    (kept per in-flight request), so a later change of depth does not
 *    move it off its pair.
 *  - One sorted pass instead of AIBrix's repeated arg-min scan (which is
 *    quadratic in the queue length); TTFT_s of requests behind a moved one
 *    is not lowered during the pass (conservative).
 *  - The hit tie-break uses in-flight requests instead of KV-cache usage,
 *    which crsim's router view does not expose.
 *  - The detector counts every key on a request's resolved path, once per
 *    request (AIBrix observes the resolved key and, separately, its parent
 *    as a second window entry); this keeps the shrink test from removing
 *    an expansion whose traffic has merely moved one level deeper.
 *  - The expansion table is cleared if it ever holds 2^16 keys (memory
 *    bound; the hot keys are re-learned within a few hundred requests).
 *
 * Cost per request: O(blocks of r) hash lookups (depth, detector; the
 * per-destination prefix index) or, with the global index, one lookup per
 * run of r plus sequential compares and copies of r's hashes; plus O(256)
 * for the two queue reads (router_queue); a rebalancing pass adds
 * O(256 · blocks) and runs only when both candidates are overloaded.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "models/cost.h"
#include "sim/core/prefetch.h"
#include "sim/core/hash.h"
#include "sim/core/lruq.h"
#include "sim/core/pfxidx.h"
#include "sim/core/u64map.h"
#include "models/routers/route_int.h"

#define DM_SALT1 0xd1a1a9a1c0ffee01ULL
#define DM_SALT2 0x2b7e151628aed2a7ULL
#define DM_VNODES 100
#define DM_MAX_WAIT_S 60.0
#define DM_WINDOW 200       /* detector window, requests */
#define DM_MIN_SAMPLES 20   /* requests before the detector decides */
#define DM_HOT_SHARE 0.0612 /* expand at this share of the window */
#define DM_COLD_SHARE 0.02  /* shrink the parent below this share */
#define DM_EXPAND_MAX (1u << 16)
#define DM_LIST_MAX 256 /* waiting requests read per destination */
#define DM_NONE UINT32_MAX
#define DM_PF 16 /* how many blocks ahead the index loops prefetch */

/* ---- router state ---- */

/* An in-flight request this router dispatched. */
typedef struct dm_req {
    uint32_t dest, c1, c2;
    uint32_t uncached; /* predicted uncached tokens at dest */
} dm_req;

/* An entry of the prefix index: a (block, destination) pair.  An entry
 * stays with one destination for its life (it is reused only by that
 * destination's evictions). */
typedef struct dm_entry {
    uint64_t key; /* mix(block, dest) */
    uint32_t pos; /* position of its live LRU-queue entry (mod 2^32) */
} dm_entry;

/* One destination's LRU order: a lazy LRU queue of entry indices
 * (sim/core/lruq.h, the same exact scheme as the engine's prefix cache,
 * models/pcache.c), whose next victims' entries and map slots are
 * prefetched. */
typedef struct dm_lru {
    sim_lruq q;
    uint32_t n;   /* live entries */
    uint32_t cap; /* bound: the destination's KV pool, blocks */
} dm_lru;

/* One window entry of the hot-prefix detector: the keys of depths 1..d. */
typedef struct dm_obs {
    uint64_t *keys;
    uint32_t n, cap;
} dm_obs;


typedef struct dualmap {
    uint32_t n_dest;
    /* Options (docs/policies.md, dualmap). */
    double switch_tokens, rebalance_tokens; /* 0 = legacy SLO-derived */
    bool router_queue;
    uint32_t gcap;     /* global index capacity, entries; 0 = per-destination index */
    double gttl_s;     /* idle expiry, s; 0 = none */
    sim_pfxidx *gx;    /* the global index (AIBrix's PrefixHashTable), if gcap */
    route__ring ring1, ring2;
    sim_pcg32 rng;
    double slo_s, max_wait_s;
    double *tp;      /* per destination: t_p, s per token (its own cost model in a
                        mixed fleet; all equal otherwise) */
    double *backlog; /* per destination: B = slo / t_p (or rebalance_tokens), tokens */
    uint32_t block_size;
    /* Prefix index: entries in per-destination LRU orders. */
    sim_u64map pidx;        /* mix(block, dest) -> entry */
    dm_entry *ent;
    uint32_t ecap, eused; /* entries are reused only by eviction */
    dm_lru *lru;          /* per destination */
    /* In-flight requests. */
    sim_u64map reqs; /* request id -> slot */
    dm_req *rq;
    uint32_t rq_cap, rq_free; /* free list threaded through rq[].dest */
    /* Adaptive depth. */
    sim_u64map expand; /* key at depth d -> d + 1 */
    sim_u64map count;  /* key -> requests in the window that passed through it */
    dm_obs win[DM_WINDOW];
    uint32_t win_pos, win_n;
    /* Scratch for queue reads. */
    const wl_request **list;
    uint32_t *stamp;    /* per destination: pass of the cached pend value */
    double *pend_cache; /* per destination: pend computed in this pass */
    double *run_cache;  /* per destination: prefill outside the listed queue */
    uint32_t pass;
} dualmap;

static void dm_destroy(void *state);

static uint64_t pidx_key(uint64_t block, uint32_t dest)
{
    return sim_hash_pair(block, dest);
}

/* Make entry e the most recently touched of d (e is live or new). */
static inline void lru_touch(dualmap *s, dm_lru *l, uint32_t e)
{
    sim_lruq_touch(&l->q, &s->ent[0].pos, sizeof *s->ent, e);
}

/* Take d's least recently touched live entry off its queue (l->n > 0). */
static inline uint32_t lru_pop(dualmap *s, dm_lru *l)
{
    const uint32_t e = sim_lruq_front(&l->q, &s->ent[0].pos, sizeof *s->ent);
    sim_lruq_pop_front(&l->q);
    if (l->q.head + 8 < l->q.tail)
        sim_u64map_prefetch(&s->pidx, s->ent[sim_lruq_at(&l->q, l->q.head + 8)].key);
    return e;
}

/* Record that `block` was sent to `d` (most recent). */
static void pidx_touch(dualmap *s, uint64_t block, uint32_t d)
{
    uint64_t k = pidx_key(block, d);
    dm_lru *l = &s->lru[d];
    uint32_t e = sim_u64map_get(&s->pidx, k);
    if (e != DM_NONE) {
        lru_touch(s, l, e);
        return;
    }
    if (l->n >= l->cap) { /* evict d's least recent block */
        e = lru_pop(s, l);
        sim_u64map_del(&s->pidx, s->ent[e].key);
        l->n--;
    } else {
        if (s->eused == s->ecap) {
            uint32_t cap = s->ecap ? 2 * s->ecap : 1024;
            s->ent = sim_xrealloc(s->ent, cap * sizeof *s->ent);
            s->ecap = cap;
        }
        e = s->eused++;
    }
    s->ent[e].key = k;
    sim_u64map_put(&s->pidx, k, e);
    lru_touch(s, l, e);
    l->n++;
}

/* Send r's blocks to d in the index, last block first. */
static void pidx_dispatch(dualmap *s, const wl_request *r, uint32_t d)
{
    if (s->gcap)
        return; /* the global index is written by gidx_dispatch */
    for (uint32_t j = r->n_blocks; j-- > 0;) {
        if (j >= DM_PF)
            sim_u64map_prefetch(&s->pidx, pidx_key(r->blocks[j - DM_PF], d));
        pidx_touch(s, r->blocks[j], d);
    }
}

static uint32_t gidx_match(const dualmap *s, const wl_request *r, uint32_t d);

/* Predicted uncached prompt tokens of r at d. */
static uint32_t predict_uncached(const dualmap *s, const wl_request *r, uint32_t d)
{
    if (s->gcap) {
        uint64_t gh = (uint64_t)gidx_match(s, r, d) * s->block_size;
        return gh >= r->prompt_tokens ? 0 : r->prompt_tokens - (uint32_t)gh;
    }
    uint32_t m = 0;
    for (uint32_t j = 0; j < DM_PF && j < r->n_blocks; j++)
        sim_u64map_prefetch(&s->pidx, pidx_key(r->blocks[j], d));
    while (m < r->n_blocks && sim_u64map_get(&s->pidx, pidx_key(r->blocks[m], d)) != DM_NONE) {
        if (m + DM_PF < r->n_blocks)
            sim_u64map_prefetch(&s->pidx, pidx_key(r->blocks[m + DM_PF], d));
        m++;
    }
    uint64_t hit = (uint64_t)m * s->block_size;
    return hit >= r->prompt_tokens ? 0 : r->prompt_tokens - (uint32_t)hit;
}

/* ---- global prefix index (index_blocks > 0) ---- */

/* Drop entries idle for longer than the expiry (AIBrix evicts blocks not
 * accessed for 20 minutes). */
static void gidx_expire(dualmap *s, double now)
{
    if (s->gttl_s <= 0)
        return;
    sim_pfxidx_expire(s->gx, now - s->gttl_s);
}

/* AIBrix AddPrefix: every block of r, first to last, gains destination d
 * and becomes the most recent; at capacity the least recent block goes. */
static void gidx_dispatch(dualmap *s, const wl_request *r, uint32_t d, double now)
{
    sim_pfxidx_add(s->gx, r->blocks, r->n_blocks, d, now);
}

/* Leading blocks of r recorded for d (AIBrix MatchPrefix for one pod). */
static uint32_t gidx_match(const dualmap *s, const wl_request *r, uint32_t d)
{
    return sim_pfxidx_match(s->gx, r->blocks, r->n_blocks, d);
}

/* ---- in-flight request records ---- */

static dm_req *req_find(dualmap *s, uint64_t id)
{
    uint32_t i = sim_u64map_get(&s->reqs, id);
    return i == DM_NONE ? NULL : &s->rq[i];
}

static void req_add(dualmap *s, uint64_t id, dm_req q)
{
    uint32_t i = sim_u64map_get(&s->reqs, id);
    if (i == DM_NONE) {
        if (s->rq_free == DM_NONE) {
            uint32_t cap = s->rq_cap ? 2 * s->rq_cap : 256;
            s->rq = sim_xrealloc(s->rq, cap * sizeof *s->rq);
            for (uint32_t j = cap; j-- > s->rq_cap;) {
                s->rq[j].dest = s->rq_free;
                s->rq_free = j;
            }
            s->rq_cap = cap;
        }
        i = s->rq_free;
        s->rq_free = s->rq[i].dest;
        sim_u64map_put(&s->reqs, id, i);
    }
    s->rq[i] = q;
}

static void req_del(dualmap *s, uint64_t id)
{
    uint32_t i = sim_u64map_get(&s->reqs, id);
    if (i == DM_NONE)
        return;
    sim_u64map_del(&s->reqs, id);
    s->rq[i].dest = s->rq_free;
    s->rq_free = i;
}

/* ---- adaptive prefix depth ---- */

static uint32_t depth_of(const dualmap *s, const wl_request *r)
{
    uint32_t d = 1;
    for (;;) {
        uint32_t nd = sim_u64map_get(&s->expand, r->blocks[d - 1]);
        if (nd == DM_NONE || nd <= d)
            return d;
        if (nd >= r->n_blocks)
            return r->n_blocks;
        d = nd;
    }
}

static double share(const dualmap *s, uint64_t key)
{
    uint32_t c = sim_u64map_get(&s->count, key);
    return c == DM_NONE ? 0.0 : (double)c / (double)s->win_n;
}

static void count_add(dualmap *s, uint64_t key, int delta)
{
    uint32_t c = sim_u64map_get(&s->count, key);
    if (c == DM_NONE)
        c = 0;
    if (delta < 0 && c <= 1)
        sim_u64map_del(&s->count, key);
    else
        sim_u64map_put(&s->count, key, delta < 0 ? c - 1 : c + 1);
}

/* Observe r resolved at depth d; expand or shrink the table. */
static void observe(dualmap *s, const wl_request *r, uint32_t d)
{
    dm_obs *o = &s->win[s->win_pos];
    if (s->win_n == DM_WINDOW)
        for (uint32_t j = 0; j < o->n; j++)
            count_add(s, o->keys[j], -1);
    else
        s->win_n++;
    if (o->cap < d) {
        o->keys = sim_xrealloc(o->keys, d * sizeof *o->keys);
        o->cap = d;
    }
    /* A key appears once per request: chained hashes of different depths
     * differ, so blocks[0..d-1] are distinct keys. */
    memcpy(o->keys, r->blocks, d * sizeof *o->keys);
    o->n = d;
    for (uint32_t j = 0; j < d; j++)
        count_add(s, o->keys[j], +1);
    s->win_pos = (s->win_pos + 1) % DM_WINDOW;
    if (s->win_n < DM_MIN_SAMPLES)
        return;
    if (d < r->n_blocks && share(s, r->blocks[d - 1]) >= DM_HOT_SHARE) {
        if (s->expand.n >= DM_EXPAND_MAX)
            sim_u64map_clear(&s->expand);
        sim_u64map_put(&s->expand, r->blocks[d - 1], d + 1);
    }
    if (d > 1 && share(s, r->blocks[d - 2]) < DM_COLD_SHARE)
        sim_u64map_del(&s->expand, r->blocks[d - 2]);
}

/* ---- load estimates ---- */

/* Predicted uncached tokens waiting at d (see the file comment); also the
 * part outside the listed queue (*running) and the oldest listed wait.
 * Cached per rebalancing pass in pend_cache. */
static double pending(dualmap *s, const route_view *v, uint32_t d, double *running,
                      double *oldest_wait, uint32_t *n_listed)
{
    double q = (double)v->queued_tokens[d];
    *oldest_wait = 0;
    *n_listed = 0;
    if (!s->router_queue || !v->ops || v->queued_tokens[d] == 0) {
        *running = q;
        return q;
    }
    uint32_t n = v->ops->waiting(v->ops->ctx, d, s->list, DM_LIST_MAX);
    double unc = 0, prompt = 0, first = v->now_s;
    for (uint32_t i = 0; i < n; i++) {
        const wl_request *w = s->list[i];
        const dm_req *rec = req_find(s, w->id);
        unc += rec && rec->dest == d ? rec->uncached : w->prompt_tokens;
        prompt += w->prompt_tokens;
        if (w->arrival_s < first)
            first = w->arrival_s;
    }
    *running = q > prompt ? q - prompt : 0;
    *oldest_wait = v->now_s - first;
    *n_listed = n;
    return unc + *running;
}

/* pend at d for the current rebalancing pass (memoised). */
static double pending_cached(dualmap *s, const route_view *v, uint32_t d)
{
    if (s->stamp[d] != s->pass) {
        double run, wait;
        uint32_t n;
        s->pend_cache[d] = pending(s, v, d, &run, &wait, &n);
        s->run_cache[d] = run;
        s->stamp[d] = s->pass;
    }
    return s->pend_cache[d];
}

typedef struct mig {
    const wl_request *q;
    double delta;  /* TTFT_t - TTFT_s at scan time, s */
    double ttft_s; /* TTFT at the source, s */
    uint32_t to, unc_src;
} mig;

static int cmp_mig(const void *a, const void *b)
{
    const mig *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    return (x->q->id > y->q->id) - (x->q->id < y->q->id);
}

/* Move queued requests off `src`, at most about `excess` uncached tokens
 * (one pass, see the file comment).  Requires v->ops. */
static void rebalance(dualmap *s, const route_view *v, uint32_t src, double excess)
{
    double run = 0, wait;
    uint32_t n;
    (void)pending(s, v, src, &run, &wait, &n);
    if (n == 0)
        return;
    mig *cand = sim_xmalloc(n * sizeof *cand);
    const wl_request **listed = sim_xmalloc(n * sizeof *listed);
    memcpy(listed, s->list, n * sizeof *listed); /* s->list is reused below */
    uint32_t nc = 0;
    double ahead = 0;
    for (uint32_t i = 0; i < n; i++) {
        const wl_request *q = listed[i];
        const dm_req *rec = req_find(s, q->id);
        uint32_t unc = rec && rec->dest == src ? rec->uncached : q->prompt_tokens;
        double ttft_s = (run + ahead + unc) * s->tp[src];
        ahead += unc;
        if (!rec || rec->dest != src)
            continue;
        uint32_t to = rec->c1 == src ? rec->c2 : rec->c1;
        if (to == src)
            continue;
        double pt = pending_cached(s, v, to);
        if (pt > s->backlog[to])
            continue; /* the other candidate is overloaded too */
        double ttft_t = (pt + predict_uncached(s, q, to)) * s->tp[to];
        if (ttft_t < ttft_s)
            cand[nc++] = (mig){q, ttft_t - ttft_s, ttft_s, to, unc};
    }
    qsort(cand, nc, sizeof *cand, cmp_mig);
    double moved = 0;
    for (uint32_t i = 0; i < nc && moved < excess; i++) {
        const mig *m = &cand[i];
        /* Re-evaluate the target: earlier moves may have filled it. */
        double pt = s->pend_cache[m->to];
        uint32_t unc_t = predict_uncached(s, m->q, m->to);
        if (pt > s->backlog[m->to] || (pt + unc_t) * s->tp[m->to] >= m->ttft_s)
            continue;
        if (!v->ops->migrate(v->ops->ctx, m->q, m->to))
            continue;
        dm_req *rec = req_find(s, m->q->id);
        rec->dest = m->to;
        rec->uncached = unc_t;
        pidx_dispatch(s, m->q, m->to);
        if (s->gcap)
            gidx_dispatch(s, m->q, m->to, v->now_s);
        s->pend_cache[m->to] += unc_t;
        moved += m->unc_src;
    }
    free(cand);
    free(listed);
}

/* ---- the route_type functions ---- */

static const sim_cfg_key dm_schema[] = {
    {.path = "ttft_slo_s", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(route__dualmap_params, ttft_slo_s), .min = 0, .max = 1e6, .def = "0",
     .unit = "s",
     .help = "TTFT SLO of the SLO-aware switch and rebalancing; 0 = median of experiment.slos"},
    {.path = "vnodes", .type = SIM_CFG_INT, .offset = offsetof(route__dualmap_params, vnodes),
     .min = 1, .max = 1e5, .def = "100",
     .help = "virtual nodes per destination on each ring (AIBrix)"},
    {.path = "tp_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(route__dualmap_params, tp_s),
     .min = 0, .max = 1, .def = "0", .unit = "s/token",
     .help = "per-token prefill time t_p; 0 = from the cost model"},
    {.path = "max_wait_s", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(route__dualmap_params, max_wait_s), .min = 0, .max = 1e6,
     .flags = SIM_CFG_EXCL_MIN, .def = "60", .unit = "s",
     .help = "a candidate whose oldest queued request waited this long is overloaded"},
    {.path = "switch_tokens", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(route__dualmap_params, switch_tokens), .min = 0, .max = 1e12,
     .def = "1e6", .unit = "tokens",
     .help = "SLO switch when the affinity candidate's predicted pending tokens exceed this "
             "(AIBrix default 1e6); 0 = ttft_slo_s / t_p (crsim <= 0.1)"},
    {.path = "rebalance_tokens", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(route__dualmap_params, rebalance_tokens), .min = 0, .max = 1e12,
     .def = "1e6", .unit = "tokens",
     .help = "a candidate is overloaded above this backlog (AIBrix default 1e6); "
             "0 = ttft_slo_s / t_p (crsim <= 0.1)"},
    {.path = "router_queue", .type = SIM_CFG_BOOL,
     .offset = offsetof(route__dualmap_params, router_queue), .def = "false",
     .help = "the router holds requests in its own queue before forwarding them; only those "
             "can be listed and moved (modelled by the engines' waiting queues)"},
    {.path = "index_blocks", .type = SIM_CFG_INT,
     .offset = offsetof(route__dualmap_params, index_blocks), .min = 0, .max = 1e9,
     .def = "200000", .unit = "blocks",
     .help = "router-side prefix index: entries of one global LRU table (AIBrix 200000); "
             "0 = one LRU per destination of its KV pool size (crsim <= 0.1)"},
    {.path = "index_ttl_s", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(route__dualmap_params, index_ttl_s), .min = 0, .max = 1e9,
     .def = "1200", .unit = "s",
     .help = "index entries idle this long are dropped (AIBrix 20 min); 0 = never"},
    {0},
};

/* Read by dualmap and preble (route_int.h). */
const route_section route__sec_dualmap = {.prefix = "router.dualmap", .schema = dm_schema,
                                          .params_size = sizeof(route__dualmap_params)};

static const route_section *const dm_sections[] = {&route__sec_dualmap, NULL};

static int dm_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const route__dualmap_params *p = params[0];
    return route__check_ring(env->n_dest, p->vnodes, "router.dualmap.vnodes", loc);
}

/* Destination d's prefix-index bound (its KV pool), t_p and backlog B
 * from its own pool, cost model and max_num_batched_tokens
 * (route_env_*; docs/mixed-fleets.md, "What routers know"). */
static int dm_dest_init(dualmap *s, const route__dualmap_params *p, const route_env *env,
                        uint32_t d, double slo)
{
    const uint32_t pool = route_env_pool_blocks(env, d);
    if (pool == 0)
        return SIM_ERROR(SIM_EINVAL, "router.dualmap: KV pool of destination %u is 0 blocks; "
                         "expected the destination pool size in blocks (> 0) to bound the "
                         "prefix index", d);
    double tp = p->tp_s;
    if (tp == 0) {
        const cost_model *cm = route_env_cost(env, d);
        const uint32_t bt = route_env_batch_tokens(env, d);
        if (!cm || bt == 0)
            return SIM_ERROR(SIM_EINVAL, "router.dualmap: no per-token prefill time: set "
                             "tp_s > 0 or give the cost model and "
                             "max_num_batched_tokens");
        double c = bt;
        cost_batch b = {.prefill_tokens = bt, .sampled = 1, .prefill_attn = c * c / 2};
        tp = cost_step_time(cm, &b) / c;
        if (!(tp > 0) || !isfinite(tp))
            return SIM_ERROR(SIM_EINVAL, "router.dualmap: the cost model gives a prefill "
                             "time of %g s/token for destination %u; expected > 0", tp, d);
    }
    s->lru[d].cap = pool;
    s->tp[d] = tp;
    s->backlog[d] = p->rebalance_tokens > 0 ? p->rebalance_tokens : slo / tp;
    return SIM_OK;
}

double route__dualmap_tp_s(const void *state, uint32_t d)
{
    return ((const dualmap *)state)->tp[d];
}

double route__dualmap_backlog(const void *state, uint32_t d)
{
    return ((const dualmap *)state)->backlog[d];
}

uint32_t route__dualmap_index_cap(const void *state, uint32_t d)
{
    return ((const dualmap *)state)->lru[d].cap;
}

static int dm_create(void *state, const route_env *env, const void *const *params)
{
    dualmap *s = state;
    const route__dualmap_params *p = params[0];
    const double slo = route__ttft_slo(p, env);
    if (env->n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "router: 0 destinations; dualmap expects at least 1");
    if (!(slo > 0) || !isfinite(slo))
        return SIM_ERROR(SIM_EINVAL, "router.dualmap: TTFT SLO is %g s; expected a finite "
                         "value > 0 (default: the run's SLO)", slo);
    if (env->block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "router.dualmap: block size is 0; expected the engine "
                         "block size in tokens (> 0)");
    if (p->tp_s < 0 || !isfinite(p->tp_s))
        return SIM_ERROR(SIM_EINVAL, "router.dualmap.tp_s is %g; expected "
                         "a time per token >= 0 s (0 = from the cost model)", p->tp_s);
    if (p->max_wait_s < 0)
        return SIM_ERROR(SIM_EINVAL, "router.dualmap.max_wait_s is %g; expected >= 0 s "
                         "(0 = default 60)", p->max_wait_s);
    memset(s, 0, sizeof *s);
    s->n_dest = env->n_dest;
    s->tp = calloc(env->n_dest, sizeof *s->tp);
    s->backlog = calloc(env->n_dest, sizeof *s->backlog);
    s->lru = calloc(env->n_dest, sizeof *s->lru);
    if (!s->tp || !s->backlog || !s->lru) {
        dm_destroy(s);
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating dualmap");
    }
    /* Per destination (route_env_*: its group's in a mixed fleet): the
     * index bound and t_p.  Without groups every destination gets the same
     * values, computed as before. */
    for (uint32_t d = 0; d < env->n_dest; d++) {
        int rc = dm_dest_init(s, p, env, d, slo);
        if (rc) {
            dm_destroy(s);
            return rc;
        }
    }
    s->slo_s = slo;
    s->max_wait_s = p->max_wait_s > 0 ? p->max_wait_s : DM_MAX_WAIT_S;
    s->block_size = env->block_size;
    s->switch_tokens = p->switch_tokens;
    s->rebalance_tokens = p->rebalance_tokens;
    s->router_queue = p->router_queue;
    s->gcap = (uint32_t)p->index_blocks;
    s->gttl_s = p->index_ttl_s;
    s->rq_free = DM_NONE;
    s->pass = 0;
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    uint32_t vn = p->vnodes > 0 ? (uint32_t)p->vnodes : DM_VNODES;
    int rc = route__ring_init(&s->ring1, env->n_dest, vn, DM_SALT1);
    if (!rc)
        rc = route__ring_init(&s->ring2, env->n_dest, vn, DM_SALT2);
    if (!rc)
        rc = sim_u64map_init(&s->pidx, 64);
    if (!rc)
        rc = sim_u64map_init(&s->reqs, 64);
    if (!rc)
        rc = sim_u64map_init(&s->expand, 64);
    if (!rc)
        rc = sim_u64map_init(&s->count, 64);
    if (!rc && s->gcap && !(s->gx = sim_pfxidx_create(s->gcap, env->n_dest)))
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating dualmap's prefix index");
    if (!rc) {
        s->stamp = calloc(env->n_dest, sizeof *s->stamp);
        s->pend_cache = calloc(env->n_dest, sizeof *s->pend_cache);
        s->run_cache = calloc(env->n_dest, sizeof *s->run_cache);
        s->list = malloc(DM_LIST_MAX * sizeof *s->list);
        if (!s->stamp || !s->pend_cache ||
            !s->run_cache || !s->list)
            rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating dualmap");
    }
    if (rc) {
        dm_destroy(s);
        return rc;
    }
    return SIM_OK;
}

/* The two candidates of `key`. */
static void candidates(const dualmap *s, uint64_t key, uint32_t *c1, uint32_t *c2)
{
    *c1 = s->ring1.dest[route__ring_find(&s->ring1, route__key_hash(key, DM_SALT1))];
    *c2 = s->ring2.dest[route__ring_find(&s->ring2, route__key_hash(key, DM_SALT2))];
    if (*c1 == *c2)
        *c2 = (*c1 + 1) % s->n_dest;
}

static uint32_t dm_route(void *state, const wl_request *r, const route_view *v)
{
    dualmap *s = state;
    uint64_t key = r->key;
    if (s->gcap)
        gidx_expire(s, v->now_s);
    if (r->n_blocks > 0) {
        uint32_t d = depth_of(s, r);
        observe(s, r, d);
        key = r->blocks[d - 1];
    }
    uint32_t c[2];
    candidates(s, key, &c[0], &c[1]);
    if (v->down) { /* faults: each ring skips to its next live node */
        c[0] = route__ring_live(&s->ring1, route__ring_find(&s->ring1,
                                                            route__key_hash(key, DM_SALT1)), v);
        c[1] = route__ring_live(&s->ring2, route__ring_find(&s->ring2,
                                                            route__key_hash(key, DM_SALT2)), v);
    }
    uint32_t unc[2], nl[2];
    double pend[2], run[2], wait[2], ttft[2];
    for (int i = 0; i < 2; i++) {
        unc[i] = predict_uncached(s, r, c[i]);
        pend[i] = pending(s, v, c[i], &run[i], &wait[i], &nl[i]);
        ttft[i] = (pend[i] + unc[i]) * s->tp[c[i]];
    }
    /* Cache affinity: larger predicted hit, i.e. fewer uncached tokens. */
    int a;
    if (unc[0] != unc[1])
        a = unc[0] < unc[1] ? 0 : 1;
    else if (v->outstanding[c[0]] != v->outstanding[c[1]])
        a = v->outstanding[c[0]] < v->outstanding[c[1]] ? 0 : 1;
    else
        a = (int)sim_pcg32_bounded(&s->rng, 2);
    int t = a;
    /* SLO-aware switch: AIBrix compares the affinity candidate's virtual
     * pending tokens (pending + own uncached) with a token threshold;
     * switch_tokens = 0 is the legacy test of its TTFT against the SLO. */
    const int over_a = s->switch_tokens > 0 ? pend[a] + unc[a] > s->switch_tokens
                                            : ttft[a] > s->slo_s;
    if (over_a && ttft[1 - a] < ttft[a])
        t = 1 - a;
    const uint32_t dest = c[t];
    pidx_dispatch(s, r, dest);
    if (s->gcap)
        gidx_dispatch(s, r, dest, v->now_s);
    req_add(s, r->id, (dm_req){.dest = dest, .c1 = c[0], .c2 = c[1], .uncached = unc[t]});

    /* Hot-spot rebalancing of queued work: only requests the router holds
     * can be listed and moved (router_queue). */
    if (s->router_queue && v->ops && c[0] != c[1]) {
        double p[2];
        int over[2];
        for (int i = 0; i < 2; i++) {
            p[i] = pend[i] + (i == t ? unc[i] : 0);
            over[i] = p[i] > s->backlog[c[i]] || (nl[i] > 0 && wait[i] >= s->max_wait_s);
        }
        if (over[0] && over[1]) {
            for (int i = 0; i < 2; i++) {
                double excess = pend[i] - s->backlog[c[i]];
                if (excess <= 0) /* overloaded by waiting time only */
                    excess = pend[i];
                s->pass++;
                rebalance(s, v, c[i], excess);
            }
        }
    }
    return dest;
}

static void dm_complete(void *state, const wl_request *r, uint32_t dest, const route_done *done)
{
    dualmap *s = state;
    (void)dest;
    (void)done;
    req_del(s, r->id);
}

static void dm_destroy(void *state)
{
    dualmap *s = state;
    route__ring_fini(&s->ring1);
    route__ring_fini(&s->ring2);
    sim_u64map_fini(&s->pidx);
    sim_u64map_fini(&s->reqs);
    sim_u64map_fini(&s->expand);
    sim_u64map_fini(&s->count);
    sim_pfxidx_destroy(s->gx);
    free(s->ent);
    if (s->lru)
        for (uint32_t d = 0; d < s->n_dest; d++)
            sim_lruq_fini(&s->lru[d].q);
    free(s->lru);
    free(s->rq);
    for (uint32_t i = 0; i < DM_WINDOW; i++)
        free(s->win[i].keys);
    free(s->list);
    free(s->stamp);
    free(s->pend_cache);
    free(s->run_cache);
    free(s->tp);
    free(s->backlog);
    memset(s, 0, sizeof *s);
}

const route_type route_dualmap = {
    .name = "dualmap",
    .help = "two hashed candidates per prefix; cache affinity, TTFT-SLO switch, queue rebalancing",
    .state_size = sizeof(dualmap),
    .sections = dm_sections,
    .check = dm_check,
    .create = dm_create,
    .route = dm_route,
    .on_complete = dm_complete,
    .destroy = dm_destroy,
};
