/*
 * TEST REFERENCE, not built into crsim: models/routers/route_preble.c as it was
 * before the round-4 optimisations (crsim at 9c90368: a full pass over the
 * active nodes per rebalancing, the candidate scan over all of them, a
 * per-node walk of a migrated subtree, a sort of the TPOT ring per
 * completion, a map walk per completion).  Linked instead of
 * models/routers/route_preble.c into equiv_ref_sim (tests/meson.build), so that
 * tests/router_equiv.sh can check that the optimised router gives
 * bit-identical simulations.  Unchanged below this comment.
 */
/*
 * preble: exploit-or-explore placement on a router-side global prefix tree
 * (Preble, Srivatsa et al., arXiv 2407.00023, ICLR 2025), with
 * post-assignment rebalancing and hot-prefix replication.  Specification:
 * section `preble` of docs/policies.md (paper §3.2
 * and the released code, WukLab/preble @8e7906a).
 *
 * Tree: one node per full KV block hash.  Block hashes are chained, so a
 * map from hash to node (with parent, child and sibling links) is the
 * radix tree over token blocks; matching walks the request's blocks while
 * they are present.  Every node carries alloc(n), the set of destinations
 * (a bitset over R) whose requests ran through it.
 *
 * Rule, per arriving request r (L prompt tokens, m matched blocks):
 *  cached = min(m · block_size, L), new = L − cached.
 *  Exploit if cached > new: among alloc(deepest matched node), the
 *  destination with the lowest load cost (ties: lowest index) — the
 *  destination id, not its position in the set (the released code's bug).
 *  Explore otherwise: the lowest load cost over all destinations.
 *  Then r's missing blocks become nodes, the chosen destination joins
 *  alloc() of every node on r's path, and r enters the history window.
 *
 * Load cost of destination i (Preble's Algorithm 2, simplified):
 *  L_i = Σ over important nodes n in the window with i ∈ alloc(n) of
 *        W(n) / |alloc(n)|  +  out_mean · TPOT_i · in-flight_i,
 *  where W(n) = Σ over window requests whose important node is n of
 *  T_prefill(new tokens, cached context) — the missed prefill work of
 *  Preble's miss_rate(n) · count_H(n) · T_prefill(len(n)), counted per
 *  request — with T_prefill from crsim's cost model (route_env.cost;
 *  ceil(new / batch_tokens) chunk steps).  TPOT_i = the cost model's
 *  decode step time at i's in-flight count with the mean context;
 *  out_mean = mean output length of completed requests (45 until the
 *  first completion).
 *
 * Important node (Preble: nearest ancestor-or-self whose own segment is
 * longer than all tokens before it): segments are the chains of r's path
 * between branch points (nodes with two or more children); r's new tail
 * is the last segment.  Walking up from the tail, the first segment
 * longer than its context is r's important node, named by its first node.
 *
 * Rebalancing (at most once per simulated second, after 50 · R
 * placements): destinations sorted by load; the heaviest hi is paired with
 * the lightest lo while load_hi >= high_load · load_lo (default 1.5).
 * Candidates are important nodes allocated to hi with at least two window
 * requests, cheapest first (cost W(n)/|alloc(n)|).  One candidate (a
 * single hot prefix): autoscale — add lo to its allocation if lo is not
 * there and the prefix is overloaded on hi.  Several: migrate — set the
 * allocation of the cheapest ones to {lo} while that leaves hi at least as
 * heavy as lo, until load_hi < high_load · load_lo.  Then the next
 * heaviest is tried against the (new) lightest.  Overload detector: over
 * the window, the mean TTFT estimate of the prefix's requests on hi in the
 * newer half is >= 2 × that of the older half (both halves non-empty).
 *
 * Window and memory: window entries older than window_s (default 180 s)
 * are retired on every routing call (amortised O(1)); tree nodes not on
 * any request's path within the window are pruned incrementally, oldest
 * first, from an LRU list in which every node precedes its descendants
 * (a path is touched leaf to root), so the pruned node is always a leaf.
 * Memory is therefore O(distinct blocks routed in the last window).
 *
 * Inputs: from route_env n_dest, ttft_slo_s (> 0; only validated, for a
 * uniform interface with dualmap), block_size (> 0), cost (required),
 * batch_tokens; router.dualmap.tp_s (t_p for the TTFT estimate; 0 = from
 * the cost model as in dualmap); router.preble window_s (180), high_load
 * (1.5); the window is also pruned every router.cacheroute.interval_s.
 *
 * Options (router.preble; defaults follow WukLab/preble
 * multi_node/global_scheduler_with_time.py, the crsim <= 0.1 rules stay
 * reachable for the earlier tables): tpot observed | cost_model (TPOT_i =
 * median of the last 200 TPOTs of i's completions, from route_done, one
 * initial entry of 0.15 s; or the cost model's decode step); overload
 * completion | dispatch_estimate (the detector reads TTFTs reported at
 * completion per (important node recomputed at completion, destination),
 * cleared after a replication; or the router's dispatch-time estimate
 * (queued prefill tokens + new tokens) · t_p); migrate subtree | segment
 * (alloc = {lo} on the prefix and its whole subtree, as update_children;
 * or on its segment only); rebalance placement | per_second (after every
 * placement once 50 are placed; or at most once per simulated second
 * after 50 · R).
 *
 * Deviations and simplifications, each deliberate:
 *  - Window load counts the missed prefill work of each routed request
 *    (above), not the per-node formula re-evaluated per node; the node's
 *    share is still split evenly over alloc(n) as in Preble.  Decode load
 *    uses the destination's in-flight count and a global mean output
 *    length, not per-node active requests and medians.
 *  - Nodes are blocks, not compressed token segments; "segments" are
 *    derived from branch points, so a prompt that ended exactly where a
 *    later one continues is not a segment boundary.
 *  - Autoscaling adds lo to the important node's segment (its single-child
 *    chain down to the branch point, which exploit reads).
 *  - Eviction cost M_i (off by default in Preble) and the paper's P_i
 *    term (absent from the released code) are not modelled; neither is
 *    the local scheduler's priority queue (crsim's engines are FCFS).
 *  - The per-destination loads are recomputed exactly at each rebalancing,
 *    removing rounding drift of the incremental updates.
 *  - Preble resets a node's allocation when it leaves the window; here
 *    the node itself is pruned when no request has touched it within the
 *    window, which has the same effect.
 *
 * Cost per request: O(blocks of r) hash lookups and list moves, plus O(R)
 * for the arg-min and O(R) per window entry retired; a rebalancing pass is
 * O(R · window nodes) at most once per simulated second.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "models/cost.h"
#include "sim/core/prefetch.h"
#include "sim/core/lruq.h"
#include "sim/core/u64map.h"
#include "models/routers/route_int.h"

#define PB_NONE UINT32_MAX
#define PB_WINDOW_S 180.0
#define PB_HIGH_LOAD 1.5
#define PB_OUT_DEFAULT 45.0     /* Preble's default decode length */
#define PB_MIN_PER_DEST 50      /* placements per destination before rebalancing */
#define PB_REBALANCE_EVERY_S 1.0 /* minimum simulated time between passes */
#define PB_OVERLOAD_RATIO 2.0
#define PB_MIN_TOTAL 50          /* placements in all before rebalancing (reference) */
#define PB_TPOT_KEEP 200         /* observed TPOTs kept per destination */
#define PB_TPOT_INIT 0.15        /* the reference's initial TPOT entry, s */
#define PB_PF 16 /* how many blocks ahead the tree loops prefetch */


/* ---- state ---- */

typedef struct pnode {
    uint64_t hash;
    uint32_t parent, child, next, prev; /* tree: first child, siblings */
    uint32_t lpos;                      /* position of its live LRU-queue entry */
    uint32_t nchild;
    uint32_t win_count;  /* window requests with this important node */
    uint32_t alloc_n;    /* |alloc(n)| */
    uint32_t active_pos; /* index in `active`, or PB_NONE */
    double last_seen;    /* last time a request's path touched it, s */
    double win_cost;     /* W(n): their missed prefill time, s */
} pnode;

/* A request in the history window. */
typedef struct pentry {
    double t;      /* arrival, s */
    double cost;   /* missed prefill time, s */
    double ttft;   /* TTFT estimate at dispatch, s */
    uint32_t node; /* important node, or PB_NONE (no full block) */
    uint32_t dest;
} pentry;

/* One (prefix, destination) series of the overload detector: completion
 * times and cumulative TTFT sums of the requests whose important node is
 * the prefix, entries [head, n). */
typedef struct pb_series {
    uint64_t key;        /* mix(prefix head hash, destination) */
    double *t, *cum;     /* completion time, s; Σ TTFT up to and including */
    uint32_t head, n, cap;
} pb_series;

/* Observed TPOTs of one destination: the last PB_TPOT_KEEP, ring. */
typedef struct pb_tpot {
    double v[PB_TPOT_KEEP];
    uint32_t n, pos;
    double median; /* of v[0..n) */
} pb_tpot;

typedef struct preble {
    uint32_t n_dest, words; /* words = 64-bit words per alloc bitset */
    int tpot_observed, overload_completion, migrate_subtree, rebalance_each;
    cost_model cost;
    uint32_t block_size, batch_tokens;
    double tp_s, window_s, high_load;
    /* Tree; node 0 is the root sentinel (not in the map or the LRU). */
    pnode *nd;
    uint64_t *alloc; /* words per node */
    uint32_t n_cap, n_used, n_free;
    /* LRU order of the tree's nodes (for pruning): a lazy LRU queue of
     * node indices (sim/core/lruq.h), whose next nodes to prune are
     * known ahead and prefetched. */
    sim_lruq lq;
    sim_u64map map;
    /* History window (FIFO ring). */
    pentry *win;
    size_t w_cap, w_head, w_n;
    uint32_t *active; /* important nodes with window requests */
    uint32_t n_active, active_cap;
    double *load_split; /* per destination: Σ W(n)/|alloc(n)| */
    double *load_loose; /* per destination: window cost without a node */
    double *load;       /* scratch: full load cost */
    uint8_t *dropped;   /* scratch */
    uint32_t *path;     /* scratch: nodes of the request's path */
    uint32_t path_cap;
    /* Statistics. */
    double out_sum, out_n;    /* completed output lengths */
    double prompt_sum, prompt_n;
    uint64_t assigned;
    double last_rebalance_s;
    /* Completion-time inputs (route_done). */
    pb_tpot *tpot;         /* per destination */
    sim_u64map smap;       /* series key -> index in ser */
    pb_series *ser;
    uint32_t n_ser, ser_cap, ser_free; /* free list threaded through .head */
    uint32_t *stack;       /* scratch: subtree walk */
    uint32_t stack_cap;
} preble;

static void pb_destroy(void *state);

static uint64_t *bits(preble *s, uint32_t n)
{
    return s->alloc + (size_t)n * s->words;
}

static int has_bit(preble *s, uint32_t n, uint32_t d)
{
    return (int)((bits(s, n)[d / 64] >> (d % 64)) & 1u);
}

/* ---- cost estimates ---- */

static double prefill_time(const preble *s, uint32_t new_tokens, uint32_t ctx)
{
    if (new_tokens == 0)
        return 0;
    uint32_t k = s->batch_tokens ? (new_tokens + s->batch_tokens - 1) / s->batch_tokens : 1;
    double nt = new_tokens, c = nt / k;
    cost_batch b = {.prefill_tokens = (uint64_t)ceil(c), .sampled = 1,
                    .prefill_attn = nt * (ctx + nt / 2) / k,
                    .prefill_ctx = ctx + new_tokens / 2};
    return k * cost_step_time(&s->cost, &b);
}

static double out_mean(const preble *s)
{
    return s->out_n > 0 ? s->out_sum / s->out_n : PB_OUT_DEFAULT;
}

/* Decode load of destination d with `inflight` requests, s: in-flight ×
 * mean output length × TPOT_d, with TPOT_d the median of the TPOTs
 * observed at d's completions (tpot: observed) or the cost model's decode
 * step at that batch (tpot: cost_model). */
static double decode_load(const preble *s, uint32_t d, uint32_t inflight)
{
    if (inflight == 0)
        return 0;
    double om = out_mean(s);
    if (s->tpot_observed)
        return inflight * om * s->tpot[d].median;
    double ctx = (s->prompt_n > 0 ? s->prompt_sum / s->prompt_n : 0) + om / 2;
    cost_batch b = {.decode_tokens = inflight, .sampled = inflight,
                    .decode_ctx = (uint64_t)(inflight * ctx)};
    return inflight * om * cost_step_time(&s->cost, &b);
}

static void fill_load(preble *s, const route_view *v)
{
    for (uint32_t d = 0; d < s->n_dest; d++)
        s->load[d] = s->load_split[d] + s->load_loose[d] + decode_load(s, d, v->outstanding[d]);
}

/* ---- allocation sets and their share of the load ---- */

/* Add (sign = +1) or remove (-1) node n's window cost from its members. */
static void spread(preble *s, uint32_t n, double sign)
{
    const pnode *x = &s->nd[n];
    if (x->win_cost == 0 || x->alloc_n == 0)
        return;
    double share = sign * x->win_cost / x->alloc_n;
    const uint64_t *b = bits(s, n);
    for (uint32_t w = 0; w < s->words; w++)
        for (uint64_t m = b[w]; m; m &= m - 1) {
            uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(m);
            s->load_split[d] += share;
        }
}

static void alloc_add(preble *s, uint32_t n, uint32_t d)
{
    if (has_bit(s, n, d))
        return;
    spread(s, n, -1);
    bits(s, n)[d / 64] |= (uint64_t)1 << (d % 64);
    s->nd[n].alloc_n++;
    spread(s, n, +1);
}

static void alloc_only(preble *s, uint32_t n, uint32_t d)
{
    spread(s, n, -1);
    memset(bits(s, n), 0, s->words * sizeof(uint64_t));
    bits(s, n)[d / 64] |= (uint64_t)1 << (d % 64);
    s->nd[n].alloc_n = 1;
    spread(s, n, +1);
}

/* Apply alloc_add (replace = 0) or alloc_only (replace = 1) to the
 * segment headed by n: n and its single-child chain down to the first
 * node with no or several children (a branch point), inclusive.  That
 * last node is the deepest matched node of the requests for which n is
 * the important node, so it is what exploit reads.  O(segment length). */
static void alloc_segment(preble *s, uint32_t n, uint32_t d, int replace)
{
    for (uint32_t x = n;; x = s->nd[x].child) {
        if (replace)
            alloc_only(s, x, d);
        else
            alloc_add(s, x, d);
        if (s->nd[x].nchild != 1)
            return;
    }
}

/* Migration of prefix n to d alone (migrate: subtree, as the reference's
 * update_children): alloc(x) = {d} for n and every node below it.
 * Iterative walk over the first-child / next-sibling links. */
static void alloc_subtree_only(preble *s, uint32_t n, uint32_t d)
{
    uint32_t top = 0;
    if (s->stack_cap == 0) {
        s->stack_cap = 256;
        s->stack = sim_xmalloc(s->stack_cap * sizeof *s->stack);
    }
    s->stack[top++] = n;
    while (top > 0) {
        uint32_t x = s->stack[--top];
        alloc_only(s, x, d);
        for (uint32_t c = s->nd[x].child; c != PB_NONE; c = s->nd[c].next) {
            if (top == s->stack_cap) {
                s->stack_cap *= 2;
                s->stack = sim_xrealloc(s->stack, s->stack_cap * sizeof *s->stack);
            }
            s->stack[top++] = c;
        }
    }
}

/* ---- tree maintenance ---- */

/* Node n becomes the most recently touched. */
static inline void lru_touch(preble *s, uint32_t n)
{
    sim_lruq_touch(&s->lq, &s->nd[0].lpos, sizeof *s->nd, n);
}

static uint32_t node_new(preble *s, uint64_t hash, uint32_t parent)
{
    uint32_t n;
    if (s->n_free != PB_NONE) {
        n = s->n_free;
        s->n_free = s->nd[n].next;
    } else {
        if (s->n_used == s->n_cap) {
            uint32_t cap = 2 * s->n_cap;
            s->nd = sim_xrealloc(s->nd, cap * sizeof *s->nd);
            s->alloc = sim_xrealloc(s->alloc, (size_t)cap * s->words * sizeof *s->alloc);
            s->n_cap = cap;
        }
        n = s->n_used++;
    }
    pnode *x = &s->nd[n];
    *x = (pnode){.hash = hash, .parent = parent, .child = PB_NONE,
                 .next = s->nd[parent].child, .prev = PB_NONE, .active_pos = PB_NONE};
    if (x->next != PB_NONE)
        s->nd[x->next].prev = n;
    s->nd[parent].child = n;
    s->nd[parent].nchild++;
    memset(bits(s, n), 0, s->words * sizeof(uint64_t));
    sim_u64map_put(&s->map, hash, n);
    lru_touch(s, n);
    return n;
}

/* Remove leaf n (no children, no window requests), whose live LRU-queue
 * entry has just been taken off the queue. */
static void node_free(preble *s, uint32_t n)
{
    pnode *x = &s->nd[n];
    SIM_ALWAYS(x->child == PB_NONE && x->win_count == 0);
    if (x->prev != PB_NONE)
        s->nd[x->prev].next = x->next;
    else
        s->nd[x->parent].child = x->next;
    if (x->next != PB_NONE)
        s->nd[x->next].prev = x->prev;
    s->nd[x->parent].nchild--;
    sim_u64map_del(&s->map, x->hash);
    x->next = s->n_free;
    s->n_free = n;
}

static void active_add(preble *s, uint32_t n)
{
    if (s->n_active == s->active_cap) {
        s->active_cap = s->active_cap ? 2 * s->active_cap : 256;
        s->active = sim_xrealloc(s->active, s->active_cap * sizeof *s->active);
    }
    s->nd[n].active_pos = s->n_active;
    s->active[s->n_active++] = n;
}

static void active_del(preble *s, uint32_t n)
{
    uint32_t p = s->nd[n].active_pos;
    uint32_t last = s->active[--s->n_active];
    s->active[p] = last;
    s->nd[last].active_pos = p;
    s->nd[n].active_pos = PB_NONE;
}

/* Retire window entries and prune nodes older than the window. */
static void expire(preble *s, double now)
{
    const double cutoff = now - s->window_s;
    while (s->w_n > 0 && s->win[s->w_head].t < cutoff) {
        const pentry *e = &s->win[s->w_head];
        if (e->node == PB_NONE) {
            s->load_loose[e->dest] -= e->cost;
            if (s->load_loose[e->dest] < 0)
                s->load_loose[e->dest] = 0;
        } else {
            pnode *x = &s->nd[e->node];
            spread(s, e->node, -1);
            x->win_cost -= e->cost;
            if (--x->win_count == 0) {
                x->win_cost = 0;
                active_del(s, e->node);
            }
            spread(s, e->node, +1);
        }
        s->w_head = (s->w_head + 1) % s->w_cap;
        s->w_n--;
    }
    for (;;) { /* prune from the least recently touched node */
        const uint32_t n = sim_lruq_front(&s->lq, &s->nd[0].lpos, sizeof *s->nd);
        if (n == SIM_LRUQ_NONE || !(s->nd[n].last_seen < cutoff))
            break;
        sim_lruq_pop_front(&s->lq);
        if (s->lq.head + 8 < s->lq.tail)
            sim_u64map_prefetch(&s->map, s->nd[sim_lruq_at(&s->lq, s->lq.head + 8)].hash);
        node_free(s, n);
    }
}

static void window_push(preble *s, pentry e)
{
    if (s->w_n == s->w_cap) {
        size_t cap = s->w_cap ? 2 * s->w_cap : 1024;
        pentry *w = sim_xmalloc(cap * sizeof *w);
        for (size_t i = 0; i < s->w_n; i++)
            w[i] = s->win[(s->w_head + i) % s->w_cap];
        free(s->win);
        s->win = w;
        s->w_cap = cap;
        s->w_head = 0;
    }
    s->win[(s->w_head + s->w_n) % s->w_cap] = e;
    s->w_n++;
    if (e.node == PB_NONE) {
        s->load_loose[e.dest] += e.cost;
        return;
    }
    pnode *x = &s->nd[e.node];
    spread(s, e.node, -1);
    x->win_cost += e.cost;
    if (x->win_count++ == 0)
        active_add(s, e.node);
    spread(s, e.node, +1);
}

/* ---- rebalancing ---- */

/* ---- overload detector on TTFTs reported at completion ---- */

static uint64_t series_key(const preble *s, uint32_t n, uint32_t d)
{
    return sim_hash_pair(s->nd[n].hash, d);
}

/* Drop entries of series x older than the window. */
static void series_purge(const preble *s, pb_series *x, double now)
{
    const double cutoff = now - s->window_s;
    while (x->head < x->n && x->t[x->head] < cutoff)
        x->head++;
}

static void series_free(preble *s, uint32_t i)
{
    pb_series *x = &s->ser[i];
    sim_u64map_del(&s->smap, x->key);
    free(x->t);
    free(x->cum);
    *x = (pb_series){.head = s->ser_free};
    s->ser_free = i;
}

/* Record a TTFT of `ttft_s` completed at `now` for prefix n on d. */
static void series_add(preble *s, uint32_t n, uint32_t d, double now, double ttft_s)
{
    uint64_t k = series_key(s, n, d);
    uint32_t i = sim_u64map_get(&s->smap, k);
    if (i == PB_NONE) {
        if (s->ser_free != PB_NONE) {
            i = s->ser_free;
            s->ser_free = s->ser[i].head;
        } else {
            if (s->n_ser == s->ser_cap) {
                s->ser_cap = s->ser_cap ? 2 * s->ser_cap : 64;
                s->ser = sim_xrealloc(s->ser, s->ser_cap * sizeof *s->ser);
            }
            i = s->n_ser++;
        }
        s->ser[i] = (pb_series){.key = k};
        sim_u64map_put(&s->smap, k, i);
    }
    pb_series *x = &s->ser[i];
    series_purge(s, x, now);
    if (x->head > 0 && x->head * 2 >= x->n) { /* compact */
        uint32_t m = x->n - x->head;
        memmove(x->t, x->t + x->head, m * sizeof *x->t);
        memmove(x->cum, x->cum + x->head, m * sizeof *x->cum);
        x->n = m;
        x->head = 0;
    }
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 16;
        x->t = sim_xrealloc(x->t, x->cap * sizeof *x->t);
        x->cum = sim_xrealloc(x->cum, x->cap * sizeof *x->cum);
    }
    x->t[x->n] = now;
    x->cum[x->n] = (x->n ? x->cum[x->n - 1] : 0) + ttft_s;
    x->n++;
}

/* The reference's is_node_overloaded: over the window, the mean TTFT of
 * completions in the newer half is >= 2 × the mean of the older half,
 * both halves non-empty. */
static int overloaded_completion(preble *s, uint32_t n, uint32_t d, double now)
{
    uint32_t i = sim_u64map_get(&s->smap, series_key(s, n, d));
    if (i == PB_NONE)
        return 0;
    pb_series *x = &s->ser[i];
    series_purge(s, x, now);
    const double mid = now - s->window_s / 2;
    uint32_t lo = x->head, hi = x->n; /* first entry at or after mid */
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (x->t[m] < mid)
            lo = m + 1;
        else
            hi = m;
    }
    uint32_t k1 = lo - x->head, k2 = x->n - lo;
    if (k1 == 0 || k2 == 0)
        return 0;
    double base = x->head ? x->cum[x->head - 1] : 0;
    double s1 = x->cum[lo - 1] - base, s2 = x->cum[x->n - 1] - x->cum[lo - 1];
    return s2 / k2 >= PB_OVERLOAD_RATIO * (s1 / k1);
}

/* The reference's delete_after_allocation: forget (n, d)'s series. */
static void series_forget(preble *s, uint32_t n, uint32_t d)
{
    uint32_t i = sim_u64map_get(&s->smap, series_key(s, n, d));
    if (i != PB_NONE)
        series_free(s, i);
}

/* Free every series with no entry left in the window. */
static void series_sweep(preble *s, double now)
{
    for (uint32_t i = 0; i < s->n_ser; i++) {
        pb_series *x = &s->ser[i];
        if (!x->t)
            continue;
        series_purge(s, x, now);
        if (x->head == x->n)
            series_free(s, i);
    }
}

/* Legacy (overload: dispatch_estimate): is prefix n overloaded on d, from
 * the router's TTFT estimates at dispatch (newer half-window mean >= 2 ×
 * older)? */
static int overloaded(const preble *s, uint32_t n, uint32_t d, double now)
{
    const double mid = now - s->window_s / 2;
    double so = 0, sn = 0;
    uint32_t ko = 0, kn = 0;
    for (size_t i = 0; i < s->w_n; i++) {
        const pentry *e = &s->win[(s->w_head + i) % s->w_cap];
        if (e->node != n || e->dest != d)
            continue;
        if (e->t < mid)
            so += e->ttft, ko++;
        else
            sn += e->ttft, kn++;
    }
    return ko > 0 && kn > 0 && sn / kn >= PB_OVERLOAD_RATIO * (so / ko);
}

static void recompute_split(preble *s)
{
    memset(s->load_split, 0, s->n_dest * sizeof *s->load_split);
    for (uint32_t i = 0; i < s->n_active; i++)
        spread(s, s->active[i], +1);
}

typedef struct cand {
    double cost;
    uint32_t node;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static void rebalance(preble *s, const route_view *v)
{
    recompute_split(s);
    memset(s->dropped, 0, s->n_dest);
    cand *c = sim_xmalloc((s->n_active ? s->n_active : 1) * sizeof *c);
    for (uint32_t round = 0; round + 1 < s->n_dest; round++) {
        fill_load(s, v);
        uint32_t hi = PB_NONE, lo = PB_NONE;
        for (uint32_t d = 0; d < s->n_dest; d++) {
            if (s->dropped[d])
                continue;
            if (hi == PB_NONE || s->load[d] > s->load[hi])
                hi = d;
            if (lo == PB_NONE || s->load[d] < s->load[lo])
                lo = d;
        }
        if (hi == PB_NONE || hi == lo || s->load[hi] < s->high_load * s->load[lo])
            break;
        uint32_t nc = 0;
        for (uint32_t i = 0; i < s->n_active; i++) {
            uint32_t n = s->active[i];
            const pnode *x = &s->nd[n];
            if (x->win_count > 1 && has_bit(s, n, hi))
                c[nc++] = (cand){x->win_cost / x->alloc_n, n};
        }
        qsort(c, nc, sizeof *c, cmp_cand);
        if (nc == 1) { /* a single hot prefix: replicate it */
            if (s->overload_completion) {
                if (!has_bit(s, c[0].node, lo) &&
                    overloaded_completion(s, c[0].node, hi, v->now_s)) {
                    alloc_segment(s, c[0].node, lo, 0);
                    series_forget(s, c[0].node, hi);
                }
            } else if (!has_bit(s, c[0].node, lo) && overloaded(s, c[0].node, hi, v->now_s)) {
                alloc_segment(s, c[0].node, lo, 0);
            }
        } else {
            for (uint32_t i = 0; i < nc; i++) {
                fill_load(s, v);
                if (s->load[hi] < s->high_load * s->load[lo])
                    break;
                if (s->load[hi] - c[i].cost < s->load[lo] + c[i].cost)
                    break;
                if (s->migrate_subtree)
                    alloc_subtree_only(s, c[i].node, lo);
                else
                    alloc_segment(s, c[i].node, lo, 1);
            }
        }
        s->dropped[hi] = 1;
    }
    free(c);
}

/* ---- the route_type functions ---- */

/* router.preble: preble's own keys. */
typedef struct pb_params {
    double window_s;  /* history window H, s (> 0) */
    double high_load; /* rebalance ratio (> 1) */
    int tpot;         /* index in pb_tpot_names */
    int overload;     /* index in pb_overload_names */
    int migrate;      /* index in pb_migrate_names */
    int rebalance;    /* index in pb_rebalance_names */
} pb_params;

static const char *const pb_tpot_names[] = {"observed", "cost_model", NULL};
static const char *const pb_overload_names[] = {"completion", "dispatch_estimate", NULL};
static const char *const pb_migrate_names[] = {"subtree", "segment", NULL};
static const char *const pb_rebalance_names[] = {"placement", "per_second", NULL};

static const sim_cfg_key pb_schema[] = {
    {.path = "window_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(pb_params, window_s),
     .min = 0, .max = 1e6, .flags = SIM_CFG_EXCL_MIN, .def = "180", .unit = "s",
     .help = "history window H of loads and prefix tree"},
    {.path = "high_load", .type = SIM_CFG_DOUBLE, .offset = offsetof(pb_params, high_load),
     .min = 1, .max = 1e6, .flags = SIM_CFG_EXCL_MIN, .def = "1.5",
     .help = "rebalance a heaviest/lightest pair when load_hi > high_load x load_lo"},
    {.path = "tpot", .type = SIM_CFG_ENUM, .offset = offsetof(pb_params, tpot),
     .choices = pb_tpot_names, .def = "observed",
     .help = "decode-cost TPOT: observed = median of the last 200 TPOTs seen at completion "
             "(WukLab/preble); cost_model = crsim's decode step (crsim <= 0.1)"},
    {.path = "overload", .type = SIM_CFG_ENUM, .offset = offsetof(pb_params, overload),
     .choices = pb_overload_names, .def = "completion",
     .help = "autoscale detector input: completion = TTFTs reported at completion "
             "(WukLab/preble); dispatch_estimate = router's estimate at dispatch (crsim <= 0.1)"},
    {.path = "migrate", .type = SIM_CFG_ENUM, .offset = offsetof(pb_params, migrate),
     .choices = pb_migrate_names, .def = "subtree",
     .help = "rebalancing moves a prefix's whole subtree (WukLab/preble) or only its "
             "segment (crsim <= 0.1)"},
    {.path = "rebalance", .type = SIM_CFG_ENUM, .offset = offsetof(pb_params, rebalance),
     .choices = pb_rebalance_names, .def = "placement",
     .help = "placement = after every placement once 50 are placed (WukLab/preble); "
             "per_second = at most once per simulated second after 50 x R (crsim <= 0.1)"},
    {0},
};

const route_section route__sec_preble = {.prefix = "router.preble", .schema = pb_schema,
                                         .params_size = sizeof(pb_params)};

/* Preble reads its own keys, dualmap's TTFT SLO and t_p (one definition
 * for both baselines) and the control interval of router.cacheroute, on
 * whose tick it prunes its window (on_interval). */
static const route_section *const pb_sections[] = {&route__sec_dualmap, &route__sec_preble,
                                                   &route__sec_cacheroute, NULL};

static double pb_interval_s(const void *const *params)
{
    const route__cacheroute_params *cp = params[2];
    return cp->interval_s;
}

static int pb_create(void *state, const route_env *env, const void *const *params)
{
    preble *s = state;
    const route__dualmap_params *dp = params[0];
    const pb_params *p = params[1];
    const double slo = route__ttft_slo(dp, env);
    if (env->n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "router: 0 destinations; preble expects at least 1");
    if (!(slo > 0) || !isfinite(slo))
        return SIM_ERROR(SIM_EINVAL, "router.preble: TTFT SLO is %g s; expected a finite "
                         "value > 0 (default: the run's SLO)", slo);
    if (env->block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "router.preble: block size is 0; expected the engine "
                         "block size in tokens (> 0)");
    if (!env->cost)
        return SIM_ERROR(SIM_EINVAL, "router.preble: no cost model given; preble needs the "
                         "destinations' step-time model for its load costs");
    if (p->window_s < 0 || !isfinite(p->window_s))
        return SIM_ERROR(SIM_EINVAL, "router.preble.window_s is %g; expected a window > 0 s "
                         "(0 = default 180)", p->window_s);
    if (p->high_load != 0 && !(p->high_load > 1))
        return SIM_ERROR(SIM_EINVAL, "router.preble.high_load is %g; expected a ratio > 1 "
                         "(0 = default 1.5)", p->high_load);
    if (dp->tp_s < 0 || !isfinite(dp->tp_s))
        return SIM_ERROR(SIM_EINVAL, "router.dualmap.tp_s is %g s; expected >= 0 "
                         "(0 = from the cost model)", dp->tp_s);
    memset(s, 0, sizeof *s);
    s->n_dest = env->n_dest;
    s->words = (env->n_dest + 63) / 64;
    s->cost = *env->cost;
    s->block_size = env->block_size;
    s->batch_tokens = env->batch_tokens;
    s->window_s = p->window_s > 0 ? p->window_s : PB_WINDOW_S;
    s->high_load = p->high_load > 0 ? p->high_load : PB_HIGH_LOAD;
    s->tpot_observed = p->tpot == 0;
    s->overload_completion = p->overload == 0;
    s->migrate_subtree = p->migrate == 0;
    s->rebalance_each = p->rebalance == 0;
    s->ser_free = PB_NONE;
    if (dp->tp_s > 0) {
        s->tp_s = dp->tp_s;
    } else {
        uint32_t ct = env->batch_tokens ? env->batch_tokens : 2048;
        s->tp_s = prefill_time(s, ct, 0) / ct;
    }
    s->n_free = PB_NONE;
    s->last_rebalance_s = -INFINITY;
    s->n_cap = 1024;
    s->nd = malloc(s->n_cap * sizeof *s->nd);
    s->alloc = calloc((size_t)s->n_cap * s->words, sizeof *s->alloc);
    s->load_split = calloc(env->n_dest, sizeof *s->load_split);
    s->load_loose = calloc(env->n_dest, sizeof *s->load_loose);
    s->load = calloc(env->n_dest, sizeof *s->load);
    s->dropped = calloc(env->n_dest, 1);
    s->tpot = calloc(env->n_dest, sizeof *s->tpot);
    int rc = SIM_OK;
    if (!s->nd || !s->alloc || !s->load_split || !s->load_loose || !s->load || !s->dropped ||
        !s->tpot)
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating preble");
    if (!rc)
        rc = sim_u64map_init(&s->map, 64);
    if (!rc)
        rc = sim_u64map_init(&s->smap, 64);
    if (rc) {
        pb_destroy(s);
        return rc;
    }
    for (uint32_t d = 0; d < env->n_dest; d++) /* the reference's initial entry */
        s->tpot[d] = (pb_tpot){.v = {PB_TPOT_INIT}, .n = 1, .pos = 1, .median = PB_TPOT_INIT};
    /* Root sentinel. */
    s->nd[0] = (pnode){.parent = PB_NONE, .child = PB_NONE, .next = PB_NONE,
                       .prev = PB_NONE, .lpos = UINT32_MAX, .active_pos = PB_NONE};
    s->n_used = 1;
    return SIM_OK;
}

/* Index (into the path) of the head of r's important segment; `m`
 * matched path nodes, `n` path nodes in all (the tail m..n-1 is new). */
static uint32_t important(const preble *s, uint32_t m, uint32_t n)
{
    uint32_t end = n, start = m;
    /* The new tail [m, n) first; then matched segments upward. */
    for (;;) {
        if (start < end && end - start > start)
            return start;
        if (start == 0)
            return 0;
        end = start;
        /* Segment start: just after the nearest branch point above `end`. */
        uint32_t j = end - 1;
        while (j > 0 && s->nd[s->path[j - 1]].nchild < 2)
            j--;
        start = j;
    }
}

static uint32_t pb_route(void *state, const wl_request *r, const route_view *v)
{
    preble *s = state;
    const double now = v->now_s;
    expire(s, now);
    /* Match. */
    if (s->path_cap < r->n_blocks) {
        s->path = sim_xrealloc(s->path, r->n_blocks * sizeof *s->path);
        s->path_cap = r->n_blocks;
    }
    uint32_t m = 0;
    for (uint32_t j = 0; j < PB_PF && j < r->n_blocks; j++)
        sim_u64map_prefetch(&s->map, r->blocks[j]);
    while (m < r->n_blocks) {
        if (m + PB_PF < r->n_blocks) /* the tree is large: hide the probe's miss */
            sim_u64map_prefetch(&s->map, r->blocks[m + PB_PF]);
        uint32_t x = sim_u64map_get(&s->map, r->blocks[m]);
        if (x == PB_NONE)
            break;
        s->path[m++] = x;
    }
    uint64_t hit = (uint64_t)m * s->block_size;
    const uint32_t cached = hit >= r->prompt_tokens ? r->prompt_tokens : (uint32_t)hit;
    const uint32_t fresh = r->prompt_tokens - cached;
    /* Place. */
    fill_load(s, v);
    uint32_t g = 0;
    if (cached > fresh && m > 0) { /* exploit */
        uint32_t deep = s->path[m - 1], best = PB_NONE;
        for (uint32_t d = 0; d < s->n_dest; d++)
            if (has_bit(s, deep, d) && (best == PB_NONE || s->load[d] < s->load[best]))
                best = d;
        if (best == PB_NONE) /* empty set: any destination */
            for (uint32_t d = 0; d < s->n_dest; d++)
                if (best == PB_NONE || s->load[d] < s->load[best])
                    best = d;
        g = best;
    } else { /* explore */
        for (uint32_t d = 1; d < s->n_dest; d++)
            if (s->load[d] < s->load[g])
                g = d;
    }
    /* Insert the new tail, touch the path leaf to root, join alloc. */
    for (uint32_t j = m; j < r->n_blocks; j++) {
        if (j + PB_PF < r->n_blocks) /* hide the insertion's miss */
            sim_u64map_prefetch(&s->map, r->blocks[j + PB_PF]);
        s->path[j] = node_new(s, r->blocks[j], j ? s->path[j - 1] : 0);
    }
    for (uint32_t j = r->n_blocks; j-- > 0;) {
        if (j >= 16) { /* the path's nodes are scattered: hide their misses */
            SIM_PREFETCH(&s->nd[s->path[j - 16]]);
            SIM_PREFETCH(bits(s, s->path[j - 16]));
        }
        uint32_t x = s->path[j];
        s->nd[x].last_seen = now;
        lru_touch(s, x);
        alloc_add(s, x, g);
    }
    uint32_t imp = r->n_blocks ? s->path[important(s, m, r->n_blocks)] : PB_NONE;
    double ttft = ((double)v->queued_tokens[g] + fresh) * s->tp_s;
    window_push(s, (pentry){.t = now, .cost = prefill_time(s, fresh, cached), .ttft = ttft,
                            .node = imp, .dest = g});
    s->prompt_sum += r->prompt_tokens;
    s->prompt_n++;
    s->assigned++;
    if (s->n_dest > 1 && s->rebalance_each) {
        if (s->assigned >= PB_MIN_TOTAL)
            rebalance(s, v);
    } else if (s->n_dest > 1 && s->assigned >= (uint64_t)PB_MIN_PER_DEST * s->n_dest &&
               now - s->last_rebalance_s >= PB_REBALANCE_EVERY_S) {
        s->last_rebalance_s = now;
        rebalance(s, v);
    }
    return g;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Add an observed TPOT to d's ring and refresh its median (numpy.median:
 * the mean of the two middle values for an even count). */
static void tpot_add(preble *s, uint32_t d, double tpot)
{
    pb_tpot *t = &s->tpot[d];
    t->v[t->pos] = tpot;
    t->pos = (t->pos + 1) % PB_TPOT_KEEP;
    if (t->n < PB_TPOT_KEEP)
        t->n++;
    double tmp[PB_TPOT_KEEP];
    memcpy(tmp, t->v, t->n * sizeof *tmp);
    qsort(tmp, t->n, sizeof *tmp, cmp_double);
    t->median = t->n % 2 ? tmp[t->n / 2] : (tmp[t->n / 2 - 1] + tmp[t->n / 2]) / 2;
}

/* r's important node now (the reference recomputes it at completion from
 * the tree: find_node + get_important_node), or PB_NONE when none of r's
 * blocks is in the tree any more. */
static uint32_t important_now(preble *s, const wl_request *r)
{
    if (s->path_cap < r->n_blocks) {
        s->path = sim_xrealloc(s->path, r->n_blocks * sizeof *s->path);
        s->path_cap = r->n_blocks;
    }
    uint32_t m = 0;
    while (m < r->n_blocks) {
        uint32_t x = sim_u64map_get(&s->map, r->blocks[m]);
        if (x == PB_NONE)
            break;
        s->path[m++] = x;
    }
    return m ? s->path[important(s, m, m)] : PB_NONE;
}

static void pb_complete(void *state, const wl_request *r, uint32_t dest, const route_done *done)
{
    preble *s = state;
    s->out_sum += r->output_tokens;
    s->out_n++;
    if (done->ttft_s < 0 || dest >= s->n_dest)
        return; /* rejected: nothing measured */
    double tpot = route_done_tpot(done);
    if (s->tpot_observed && isfinite(tpot) && tpot > 0)
        tpot_add(s, dest, tpot);
    if (s->overload_completion) {
        uint32_t imp = important_now(s, r);
        if (imp != PB_NONE)
            series_add(s, imp, dest, done->now_s, done->ttft_s);
    }
}

static void pb_interval(void *state, double now_s)
{
    expire(state, now_s);
    series_sweep(state, now_s);
}

static void pb_destroy(void *state)
{
    preble *s = state;
    sim_u64map_fini(&s->map);
    free(s->nd);
    sim_lruq_fini(&s->lq);
    free(s->alloc);
    free(s->win);
    free(s->active);
    free(s->load_split);
    free(s->load_loose);
    free(s->load);
    free(s->dropped);
    free(s->path);
    free(s->tpot);
    for (uint32_t i = 0; i < s->n_ser; i++) {
        free(s->ser[i].t);
        free(s->ser[i].cum);
    }
    free(s->ser);
    sim_u64map_fini(&s->smap);
    free(s->stack);
    memset(s, 0, sizeof *s);
}

const route_type route_preble = {
    .name = "preble",
    .help = "global prefix tree: exploit the holder of a long match, else explore by windowed load",
    .state_size = sizeof(preble),
    .sections = pb_sections,
    .interval_s = pb_interval_s,
    .create = pb_create,
    .route = pb_route,
    .on_complete = pb_complete,
    .on_interval = pb_interval,
    .destroy = pb_destroy,
};
