/*
 * preble: exploit-or-explore placement on a router-side global prefix tree
 * (Preble, Srivatsa et al., arXiv 2407.00023, ICLR 2025), with
 * post-assignment rebalancing and hot-prefix replication.  Specification:
 * section `preble` of docs/policies.md (paper §3.2
 * and the released code, WukLab/preble @8e7906a).
 *
 * Tree: one node per full KV block hash.  Block hashes are chained, so
 * the nodes form a radix tree over token blocks; matching walks the
 * request's blocks while they are present.  Every node carries alloc(n),
 * the set of destinations (a bitset over R) whose requests ran through
 * it.  Stored as runs (struct prun): chains of nodes created and touched
 * together, which share one last-seen time, LRU place, allocation and
 * version, cut in two where a request's path leaves one; a map from each
 * run's head hash finds it.  Node ids and creation numbers, which break
 * ties and order migrations, are those the per-node tree gives.
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
 *  request — with T_prefill from crsim's cost model of the destination
 *  the request went to (route_env_cost; ceil(new / its batch_tokens)
 *  chunk steps).  TPOT_i = the cost model's (i's own, tpot: cost_model)
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
 * uniform interface with dualmap), block_size (> 0), each destination's
 * cost model (required) and batch budget (route_env_cost,
 * route_env_batch_tokens: its group's in a mixed fleet, docs/mixed-fleets.md);
 * router.dualmap.tp_s (t_p for the TTFT estimate; 0 = per destination
 * from its cost model as in dualmap); router.preble window_s (180), high_load
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
 * Cost per request: one map probe per run on r's path plus O(log run
 * length) hash compares (match, again at completion), one new run for the
 * new tail (its hashes and ids copied), per run on the path a touch and
 * an allocation check, plus O(R) for the arg-min and per window entry
 * retired.  A rebalancing pass is O(R) per round for the loads, plus the
 * changed destinations' load sums re-added from their first changed entry
 * (per-destination lists of active nodes with their terms and prefix
 * sums, bit for bit the full pass's left fold), O(hi's active nodes) for
 * the candidates (a heap, cheapest first), and per subtree migration
 * O(runs of the subtree) (lazy: a version tag on the prefix; the runs
 * below are brought up to date when a path reads them).  Internals only:
 * the rules and every result are those of the per-node implementation
 * (tests/route_preble_ref.c; docs/performance.md, round 4).
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


/* ---- state ---- */

/* The hashes and node ids of blocks created together (one request's new
 * tail), shared by the runs cut from them; freed with its last run. */
typedef struct pb_chunk {
    uint32_t refs, n; /* runs that point into it; blocks */
    uint64_t h[];     /* n block hashes, then n u32 node ids */
} pb_chunk;

/* A run: a chain of tree nodes (one per full KV block) that were created
 * together and have been touched together ever since, so they share one
 * last-seen time, one LRU place, one allocation and one version; only its
 * last node can have other than one child, and only its head can be an
 * important node (below).  The per-node tree of the pre-round-4 preble
 * (tests/route_preble_ref.c) is the runs' nodes: node k of run x has depth
 * x.depth + k, hash and id from the chunk, creation number x.seq + k; its
 * parent is node k - 1, or the last node of x.parent for k = 0.  A run is
 * cut in two (run_split) where a request's path leaves it; runs never
 * merge.  Record 0 is the root sentinel (not in the map or the LRU). */
typedef struct prun {
    uint64_t hash;                      /* its head's block hash (map key) */
    pb_chunk *ch;                       /* its blocks: ch's [off, off + len) */
    uint32_t off, len, depth;           /* depth = nodes above its head */
    uint32_t parent, child, next, prev; /* runs: first child, siblings */
    uint32_t lpos;                      /* position of its live LRU-queue entry */
    uint32_t nchild;                    /* children of its last node */
    uint32_t win_count;  /* window requests with its head as important node */
    uint32_t mslot;      /* 1 + its index in `multi` (win_count > 1), or 0 */
    uint32_t alloc_n;    /* |alloc(n)| */
    uint32_t active_pos; /* index in `active`, or PB_NONE */
    double last_seen;    /* last time a request's path touched it, s */
    double win_cost;     /* W(n) of its head: their missed prefill time, s */
    /* Lazy subtree migration (alloc_subtree_only): the allocation stored
     * here is current as of version `ver`; a migration of the subtree of
     * this run's head at version tag_v > 0 set the allocation of every
     * node below to {tag_d}.  A run's allocation is {d of the newest tag
     * among its ancestors-or-self} if that tag is newer than its ver, else
     * the stored one (resolve_path). */
    uint32_t ver, tag_v, tag_d;
    uint32_t adesc;      /* active runs in its subtree, itself included */
    /* The children with adesc > 0, newest first like the child list (a
     * sublist of it): alloc_subtree_only walks only these, so a wide node
     * whose children are mostly inactive (a platform-wide system prompt:
     * every key's prefix below it) costs its active children, not all. */
    uint32_t achild, anext, aprev;
    uint64_t seq;        /* creation number of its head: siblings' order (DFS order) */
} prun;

/* A request in the history window. */
typedef struct pentry {
    double t;      /* arrival, s */
    double cost;   /* missed prefill time, s */
    double ttft;   /* TTFT estimate at dispatch, s */
    uint32_t node; /* run headed by its important node, or PB_NONE (no full block) */
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

/* Observed TPOTs of one destination: the last PB_TPOT_KEEP, ring, and
 * the same values sorted (kept by insertion and deletion, so the median
 * is read, not recomputed by a sort per completion). */
typedef struct pb_tpot {
    double v[PB_TPOT_KEEP];
    double sorted[PB_TPOT_KEEP]; /* v[0..n) in ascending order */
    uint32_t n, pos;
} pb_tpot;

/* One active node in a destination's list: its position in `active`,
 * its run and its term W(n)/|alloc(n)| (0 when W(n) or |alloc(n)| is 0,
 * as the full pass skips it; adding +0.0 to a sum that starts at +0.0
 * leaves it unchanged bit for bit). */
typedef struct pb_dent {
    uint32_t pos, node;
    double term;
} pb_dent;

/* One destination's share of the window load, kept for rebalancing: the
 * active nodes whose allocation holds the destination, in `active`
 * order, and their sum of W(n)/|alloc(n)| in that order -- the value a
 * full recomputation (a pass over `active`) gives the destination, bit
 * for bit, because it adds the same terms in the same order.  The sum is
 * kept as prefix sums pre[i] = the sum of the first i terms, valid for
 * i <= ok; a change of entry i (its term, or an entry inserted or
 * removed there) sets ok = min(ok, i), and recompute_split re-adds from
 * entry ok on. */
typedef struct pb_dlist {
    pb_dent *e;
    double *pre; /* cap + 1 */
    uint32_t n, cap, ok;
    int queued; /* in the preble's dq */
} pb_dlist;

/* What preble knows of one kind of destination: its step-time model,
 * max_num_batched_tokens (0 = unknown: one chunk) and t_p, s per token.
 * One class in a uniform cluster; one per group in a mixed fleet
 * (docs/mixed-fleets.md, "What routers know"). */
typedef struct pb_class {
    cost_model cost;
    uint32_t batch_tokens;
    double tp_s;
} pb_class;

typedef struct preble {
    uint32_t n_dest, words; /* words = 64-bit words per alloc bitset */
    int tpot_observed, overload_completion, migrate_subtree, rebalance_each;
    uint32_t block_size;
    pb_class *cls;      /* n_cls >= 1 classes */
    uint32_t n_cls;
    uint32_t *cls_of;   /* per destination: its class; NULL = all class 0 */
    double window_s, high_load;
    /* Tree of runs; record 0 is the root sentinel. */
    prun *nd;
    uint64_t *alloc; /* words per run */
    uint32_t n_cap, n_used, n_free;
    /* Node ids as the per-node tree numbers its nodes (they break cost
     * ties among migration candidates): a new node takes the most recently
     * freed id (a LIFO stack, pushed in prune order), else the next unused
     * one (ids start at 1; 0 is the root). */
    uint32_t *id_free; /* the stack is id_free[id_lo, id_free_cap), top first */
    uint32_t id_lo, id_free_cap, id_next;
    /* LRU order of the runs (for pruning): a lazy LRU queue of run
     * indices (sim/core/lruq.h).  The per-node order is the runs' order
     * with each run's nodes deepest first. */
    sim_lruq lq;
    sim_u64map map; /* head hash -> run */
    /* History window (FIFO ring). */
    pentry *win;
    size_t w_cap, w_head, w_n;
    uint32_t *active; /* runs headed by important nodes with window requests */
    uint32_t n_active, active_cap;
    /* The active runs with more than one window request (the only
     * migration candidates), in no particular order. */
    uint32_t *multi;
    uint32_t n_multi, multi_cap;
    uint32_t ver;       /* version of the newest subtree migration (starts at 1) */
    uint64_t seq;       /* nodes created */
    uint32_t *sub;      /* scratch: active nodes of a migrated subtree */
    uint32_t sub_cap;
    uint32_t *stk;      /* scratch: runs to visit */
    uint32_t stk_cap;
    double *load_split; /* per destination: Σ W(n)/|alloc(n)| */
    pb_dlist *dl;       /* per destination: its active nodes (above) */
    /* The lists are not kept (dl_lazy): a rebalance's migrations move
     * many active nodes between lists, each move a shift of the list's
     * tail, so from the first migration on the lists are left and
     * recompute_split rebuilds them all in one pass over `active` (the
     * lists the insertions and removals would have given: entries in
     * `active` order with their current terms). */
    int dl_lazy;
    uint32_t *dq, n_dq; /* destinations whose share changed since the last recomputation */
    double *load_loose; /* per destination: window cost without a node */
    uint8_t *dropped;   /* scratch */
    double *load;       /* scratch: load costs */
    struct cand *cand;  /* scratch: migration candidates */
    uint32_t cand_cap;
    /* Scratch: the request's path as runs pr[0..) with pk[i] of run i's
     * nodes on it (all of them but for the last run). */
    uint32_t *pr, *pk;
    uint32_t path_cap;
    /* Statistics. */
    double out_sum, out_n;    /* completed output lengths */
    double prompt_sum, prompt_n;
    uint64_t assigned;
    double last_rebalance_s;
    /* Completion-time inputs (route_done). */
    pb_tpot *tpot;         /* per destination */
    double *med;           /* per destination: median of tpot[d].v[0..n) */
    sim_u64map smap;       /* series key -> index in ser */
    pb_series *ser;
    uint32_t n_ser, ser_cap, ser_free; /* free list threaded through .head */
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

/* The class of destination d. */
static inline const pb_class *cls_of(const preble *s, uint32_t d)
{
    return s->cls_of ? &s->cls[s->cls_of[d]] : &s->cls[0];
}

/* Prefill time of `new_tokens` after `ctx` cached ones on a destination
 * of class c, s: ceil(new / batch_tokens) equal chunks on its cost model. */
static double prefill_time(const pb_class *c, uint32_t new_tokens, uint32_t ctx)
{
    if (new_tokens == 0)
        return 0;
    uint32_t k = c->batch_tokens ? (new_tokens + c->batch_tokens - 1) / c->batch_tokens : 1;
    double nt = new_tokens, ch = nt / k;
    cost_batch b = {.prefill_tokens = (uint64_t)ceil(ch), .sampled = 1,
                    .prefill_attn = nt * (ctx + nt / 2) / k,
                    .prefill_ctx = ctx + new_tokens / 2};
    return k * cost_step_time(&c->cost, &b);
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
        return inflight * om * s->med[d];
    double ctx = (s->prompt_n > 0 ? s->prompt_sum / s->prompt_n : 0) + om / 2;
    cost_batch b = {.decode_tokens = inflight, .sampled = inflight,
                    .decode_ctx = (uint64_t)(inflight * ctx)};
    return inflight * om * cost_step_time(&cls_of(s, d)->cost, &b);
}

/* Load cost of destination d, s: its window share, its window cost
 * without a node and its decode load; om = out_mean(s).  (With tpot:
 * observed, decode_load inline: the same operations.) */
static inline double load_of(const preble *s, const route_view *v, uint32_t d, double om)
{
    const uint32_t f = v->outstanding[d];
    const double dec = !s->tpot_observed ? decode_load(s, d, f)
                                         : f ? f * om * s->med[d] : 0;
    return s->load_split[d] + s->load_loose[d] + dec;
}

/* ---- allocation sets and their share of the load ---- */

/* Index of the first entry of l at position >= pos. */
static uint32_t dl_lower(const pb_dlist *l, uint32_t pos)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (l->e[m].pos < pos)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Active node n's term in the load sums: W(n)/|alloc(n)|, or 0 where the
 * full pass adds nothing. */
static double dl_term(const preble *s, uint32_t n)
{
    const prun *x = &s->nd[n];
    return x->win_cost != 0 && x->alloc_n != 0 ? x->win_cost / x->alloc_n : 0;
}

/* d's load share must be re-set at the next recomputation: its list or
 * its incremental sum changed. */
static inline void dq_add(preble *s, uint32_t d)
{
    if (!s->dl[d].queued) {
        s->dl[d].queued = 1;
        s->dq[s->n_dq++] = d;
    }
}

/* Entry i of d's list changed (or one was inserted or removed there). */
static void dl_stale(preble *s, uint32_t d, uint32_t i)
{
    pb_dlist *l = &s->dl[d];
    if (i < l->ok)
        l->ok = i;
    dq_add(s, d);
}

/* Insert active node n (at active position pos) into d's list. */
static void dl_ins(preble *s, uint32_t d, uint32_t pos, uint32_t n)
{
    if (s->dl_lazy)
        return;
    pb_dlist *l = &s->dl[d];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->e = sim_xrealloc(l->e, l->cap * sizeof *l->e);
        l->pre = sim_xrealloc(l->pre, (l->cap + 1) * sizeof *l->pre);
        if (l->n == 0)
            l->pre[0] = 0;
    }
    uint32_t i = l->n && l->e[l->n - 1].pos < pos ? l->n : dl_lower(l, pos);
    memmove(l->e + i + 1, l->e + i, (l->n - i) * sizeof *l->e);
    l->e[i] = (pb_dent){pos, n, dl_term(s, n)};
    l->n++;
    dl_stale(s, d, i);
}

/* Remove the entry at active position pos from d's list. */
static void dl_del(preble *s, uint32_t d, uint32_t pos)
{
    if (s->dl_lazy)
        return;
    pb_dlist *l = &s->dl[d];
    uint32_t i = l->n && l->e[l->n - 1].pos == pos ? l->n - 1 : dl_lower(l, pos);
    SIM_ALWAYS(i < l->n && l->e[i].pos == pos);
    memmove(l->e + i, l->e + i + 1, (l->n - i - 1) * sizeof *l->e);
    l->n--;
    dl_stale(s, d, i);
}

/* For each destination of n's allocation: f(s, d, n). */
#define PB_FOR_DEST(s, n, d)                                                           \
    for (uint32_t w_ = 0; w_ < (s)->words; w_++)                                       \
        for (uint64_t m_ = bits((s), (n))[w_]; m_; m_ &= m_ - 1)                       \
            for (uint32_t d = w_ * 64 + (uint32_t)__builtin_ctzll(m_), o_ = 1; o_; o_ = 0)

/* Active node n's share changed (W(n) or |alloc(n)|): its entries take
 * the new term, and its destinations' sums are stale from there. */
static void dl_dirty(preble *s, uint32_t n)
{
    if (s->dl_lazy)
        return;
    const uint32_t pos = s->nd[n].active_pos;
    const double term = dl_term(s, n);
    PB_FOR_DEST(s, n, d) {
        pb_dlist *l = &s->dl[d];
        uint32_t i = l->n && l->e[l->n - 1].pos == pos ? l->n - 1 : dl_lower(l, pos);
        SIM_ALWAYS(i < l->n && l->e[i].pos == pos);
        l->e[i].term = term;
        dl_stale(s, d, i);
    }
}

/* Active node n enters (join) or leaves the lists of its destinations. */
static void dl_join(preble *s, uint32_t n)
{
    if (s->dl_lazy)
        return;
    const uint32_t pos = s->nd[n].active_pos;
    PB_FOR_DEST(s, n, d)
        dl_ins(s, d, pos, n);
}

static void dl_leave(preble *s, uint32_t n)
{
    if (s->dl_lazy)
        return;
    const uint32_t pos = s->nd[n].active_pos;
    PB_FOR_DEST(s, n, d)
        dl_del(s, d, pos);
}

/* Add (sign = +1) or remove (-1) node n's window cost from its members. */
static void spread(preble *s, uint32_t n, double sign)
{
    const prun *x = &s->nd[n];
    if (x->win_cost == 0 || x->alloc_n == 0)
        return;
    double share = sign * x->win_cost / x->alloc_n;
    const uint64_t *b = bits(s, n);
    for (uint32_t w = 0; w < s->words; w++)
        for (uint64_t m = b[w]; m; m &= m - 1) {
            uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(m);
            s->load_split[d] += share;
            dq_add(s, d);
        }
}

static void alloc_add(preble *s, uint32_t n, uint32_t d)
{
    if (has_bit(s, n, d))
        return;
    spread(s, n, -1);
    bits(s, n)[d / 64] |= (uint64_t)1 << (d % 64);
    s->nd[n].alloc_n++;
    if (s->nd[n].active_pos != PB_NONE) {
        dl_ins(s, d, s->nd[n].active_pos, n);
        dl_dirty(s, n);
    }
    spread(s, n, +1);
}

/* alloc(n) = {d}.  An active node leaves the lists of its other
 * destinations and enters (or, already there, takes its new term in) d's:
 * the lists a leave-all-then-join would give. */
static void alloc_only(preble *s, uint32_t n, uint32_t d)
{
    const uint32_t pos = s->nd[n].active_pos;
    spread(s, n, -1);
    const int had = has_bit(s, n, d);
    if (pos != PB_NONE)
        PB_FOR_DEST(s, n, e)
            if (e != d)
                dl_del(s, e, pos);
    memset(bits(s, n), 0, s->words * sizeof(uint64_t));
    bits(s, n)[d / 64] |= (uint64_t)1 << (d % 64);
    s->nd[n].alloc_n = 1;
    if (pos != PB_NONE) {
        if (had)
            dl_dirty(s, n); /* d's entry only, now */
        else
            dl_ins(s, d, pos, n);
    }
    spread(s, n, +1);
}

/* The newest subtree tag among run n and its ancestors: its version and
 * destination (0, 0 if none).  Tags sit on run heads (important nodes),
 * so these are the tags of the nodes on n's head's root path. */
static void newest_tag(const preble *s, uint32_t n, uint32_t *v, uint32_t *d)
{
    *v = 0;
    *d = 0;
    for (uint32_t x = n; x != 0; x = s->nd[x].parent) {
        const prun *p = &s->nd[x];
        if (p->tag_v > *v)
            *v = p->tag_v, *d = p->tag_d;
    }
}

/* Bring run x's stored allocation up to date given the newest tag (cv,
 * cd) among its ancestors-or-self: if that migration is newer than x's
 * allocation, x's allocation is {cd}.  Only inactive runs can be behind
 * (a migration updates the active nodes of its subtree at once), so no
 * load share moves.  Every node of the run has the same tags above it
 * (only heads carry tags), so the run is brought up to date as a whole:
 * each of its nodes has, at every read, the allocation that applying
 * every add and migration in time order gives, which is what the
 * per-node tree stores. */
static void resolve(preble *s, uint32_t x, uint32_t cv, uint32_t cd)
{
    prun *p = &s->nd[x];
    if (cv <= p->ver)
        return;
    SIM_ALWAYS(p->active_pos == PB_NONE);
    memset(bits(s, x), 0, s->words * sizeof(uint64_t));
    bits(s, x)[cd / 64] |= (uint64_t)1 << (cd % 64);
    p->alloc_n = 1;
    p->ver = s->ver;
}

/* Resolve the runs of a root path pr[0..k) (each run's ancestors are the
 * ones before it). */
static void resolve_path(preble *s, const uint32_t *pr, uint32_t k)
{
    uint32_t cv = 0, cd = 0;
    for (uint32_t j = 0; j < k; j++) {
        const prun *x = &s->nd[pr[j]];
        if (x->tag_v > cv)
            cv = x->tag_v, cd = x->tag_d;
        resolve(s, pr[j], cv, cd);
    }
}

/* Apply alloc_add (replace = 0) or alloc_only (replace = 1) to the
 * segment headed by active node n: n and its single-child chain down to
 * the first node with no or several children (a branch point), inclusive:
 * whole runs, as only a run's last node can have other than one child.
 * That last node is the deepest matched node of the requests for which n
 * is the important node, so it is what exploit reads.  The chain's runs
 * are resolved first (their ancestors' tags: n's, then the chain's).
 * O(runs above n + runs of the segment). */
static void alloc_segment(preble *s, uint32_t n, uint32_t d, int replace)
{
    SIM_ALWAYS(s->nd[n].active_pos != PB_NONE);
    uint32_t cv = 0, cd = 0;
    if (s->ver > 1) /* some subtree was migrated */
        newest_tag(s, n, &cv, &cd);
    for (uint32_t x = n;; x = s->nd[x].child) {
        if (s->nd[x].tag_v > cv)
            cv = s->nd[x].tag_v, cd = s->nd[x].tag_d;
        resolve(s, x, cv, cd);
        if (replace)
            alloc_only(s, x, d);
        else
            alloc_add(s, x, d);
        if (s->nd[x].nchild != 1)
            return;
    }
}

/* Migration of active prefix n to d alone (migrate: subtree, as the
 * reference's update_children): alloc(x) = {d} for n and every node below
 * it.  Done lazily: a tag on n (a new version) stands for the runs below,
 * which are resolved when a request's path or a segment next reads them;
 * the active nodes of the subtree, whose allocations carry load shares,
 * are updated now (their runs, n's included), in the order the per-node
 * walk of the subtree reached them (so the shares move in the same
 * floating-point order): that walk (an explicit stack: pop a node, push
 * its children in child-list order, newest first) visits in preorder with
 * the oldest child first, and so does this walk over runs -- a run's
 * nodes are a chain, only its last node has other children, and a run's
 * child list is newest first too (a new run is linked first; a cut gives
 * the head part one child, older than any later one), which is checked
 * as it is read.  O(runs of the subtree). */
static void alloc_subtree_only(preble *s, uint32_t n, uint32_t d)
{
    SIM_ALWAYS(s->nd[n].active_pos != PB_NONE);
    uint32_t k = 0, top = 0;
    if (s->stk_cap == 0) {
        s->stk_cap = 256;
        s->stk = sim_xmalloc(s->stk_cap * sizeof *s->stk);
    }
    s->stk[top++] = n;
    while (top > 0) { /* preorder, oldest child first */
        const uint32_t x = s->stk[--top];
        const prun *p = &s->nd[x];
        if (p->active_pos != PB_NONE) {
            if (k == s->sub_cap) {
                s->sub_cap = s->sub_cap ? 2 * s->sub_cap : 64;
                s->sub = sim_xrealloc(s->sub, s->sub_cap * sizeof *s->sub);
            }
            s->sub[k++] = x;
        }
        uint64_t newer = UINT64_MAX;
        /* Only the children with an active run below (adesc > 0): the
         * others have nothing to collect.  The same order as the child
         * list, which is newest first. */
        for (uint32_t c = p->achild; c != PB_NONE; c = s->nd[c].anext) {
            SIM_ALWAYS(s->nd[c].seq < newer && s->nd[c].adesc > 0);
            newer = s->nd[c].seq;
            if (top == s->stk_cap) {
                s->stk_cap *= 2;
                s->stk = sim_xrealloc(s->stk, s->stk_cap * sizeof *s->stk);
            }
            s->stk[top++] = c;
        }
    }
    SIM_ALWAYS(k == s->nd[n].adesc); /* every active run of the subtree */
    const uint32_t ver = ++s->ver;
    s->nd[n].tag_v = ver;
    s->nd[n].tag_d = d;
    for (uint32_t i = 0; i < k; i++) {
        const uint32_t a = s->sub[i];
        alloc_only(s, a, d);
        s->nd[a].ver = ver;
    }
}

/* ---- tree maintenance ---- */

static uint64_t *chunk_hash(const pb_chunk *c)
{
    return (uint64_t *)c->h;
}

static uint32_t *chunk_ids(const pb_chunk *c)
{
    return (uint32_t *)(void *)((uint64_t *)c->h + c->n);
}

/* Run n becomes the most recently touched. */
static inline void lru_touch(preble *s, uint32_t n)
{
    sim_lruq_touch(&s->lq, &s->nd[0].lpos, sizeof *s->nd, n);
}

/* A fresh run record (its fields to be set by the caller). */
static uint32_t run_alloc(preble *s)
{
    if (s->n_free != PB_NONE) {
        const uint32_t n = s->n_free;
        s->n_free = s->nd[n].next;
        return n;
    }
    if (s->n_used == s->n_cap) {
        uint32_t cap = 2 * s->n_cap;
        s->nd = sim_xrealloc(s->nd, cap * sizeof *s->nd);
        s->alloc = sim_xrealloc(s->alloc, (size_t)cap * s->words * sizeof *s->alloc);
        s->n_cap = cap;
    }
    return s->n_used++;
}

/* Link run n as the newest child of `parent`. */
static void child_link(preble *s, uint32_t n, uint32_t parent)
{
    prun *x = &s->nd[n];
    x->parent = parent;
    x->prev = PB_NONE;
    x->next = s->nd[parent].child;
    if (x->next != PB_NONE)
        s->nd[x->next].prev = n;
    s->nd[parent].child = n;
    s->nd[parent].nchild++;
}

/* A new run of the k nodes with hashes h[0..k) below `parent`, numbered
 * as the per-node tree numbers k new nodes (ids from the free stack, then
 * fresh; creation numbers in order), allocation empty, in the LRU. */
static uint32_t run_new(preble *s, const uint64_t *h, uint32_t k, uint32_t parent,
                        uint32_t depth)
{
    pb_chunk *c = sim_xmalloc(sizeof *c + (size_t)k * (sizeof(uint64_t) + sizeof(uint32_t)));
    c->refs = 1;
    c->n = k;
    memcpy(chunk_hash(c), h, k * sizeof *h);
    uint32_t *id = chunk_ids(c);
    const uint32_t avail = s->id_free_cap - s->id_lo; /* pops, then fresh ids */
    const uint32_t take = avail < k ? avail : k;
    if (take)
        memcpy(id, s->id_free + s->id_lo, take * sizeof *id);
    s->id_lo += take;
    for (uint32_t j = take; j < k; j++)
        id[j] = s->id_next++;
    const uint32_t n = run_alloc(s);
    s->nd[n] = (prun){.hash = h[0], .ch = c, .off = 0, .len = k, .depth = depth,
                      .child = PB_NONE, .active_pos = PB_NONE, .ver = s->ver, .seq = s->seq,
                      .achild = PB_NONE, .anext = PB_NONE, .aprev = PB_NONE};
    s->seq += k;
    child_link(s, n, parent);
    memset(bits(s, n), 0, s->words * sizeof(uint64_t));
    sim_u64map_put(&s->map, h[0], n);
    lru_touch(s, n);
    return n;
}

/* Cut run x after its first k nodes (0 < k < len): x keeps its head and
 * everything on it (window requests, tag, active place); the new run t of
 * the rest takes x's children and its LRU place (so the per-node LRU
 * order is unchanged: x is about to be touched), with x's allocation and
 * version (an inactive run: no load share), as the same nodes of the
 * per-node tree have.  O(children of x).  Returns t. */
static uint32_t run_split(preble *s, uint32_t x, uint32_t k)
{
    const uint32_t t = run_alloc(s);
    prun *X = &s->nd[x], *T = &s->nd[t];
    SIM_ALWAYS(k > 0 && k < X->len);
    *T = (prun){.hash = chunk_hash(X->ch)[X->off + k], .ch = X->ch, .off = X->off + k,
                .len = X->len - k, .depth = X->depth + k, .parent = x, .child = X->child,
                .next = PB_NONE, .prev = PB_NONE, .lpos = X->lpos, .nchild = X->nchild,
                .alloc_n = X->alloc_n, .active_pos = PB_NONE, .last_seen = X->last_seen,
                .ver = X->ver, .seq = X->seq + k,
                .adesc = X->adesc - (X->active_pos != PB_NONE), .achild = X->achild,
                .anext = PB_NONE, .aprev = PB_NONE};
    X->ch->refs++;
    for (uint32_t c = T->child; c != PB_NONE; c = s->nd[c].next)
        s->nd[c].parent = t;
    X->child = t;
    X->achild = T->adesc ? t : PB_NONE;
    X->nchild = 1;
    X->len = k;
    memcpy(bits(s, t), bits(s, x), s->words * sizeof(uint64_t));
    /* t's LRU place is x's (x's live queue entry now names t). */
    s->lq.q[X->lpos & s->lq.mask] = t;
    sim_u64map_put(&s->map, T->hash, t);
    return t;
}

/* Remove leaf run n (no children, no window requests), whose live
 * LRU-queue entry has just been taken off the queue: its nodes' ids go
 * onto the free stack deepest first, as the per-node tree frees them. */
static void run_free(preble *s, uint32_t n)
{
    prun *x = &s->nd[n];
    SIM_ALWAYS(x->child == PB_NONE && x->win_count == 0 && x->adesc == 0);
    if (x->prev != PB_NONE)
        s->nd[x->prev].next = x->next;
    else
        s->nd[x->parent].child = x->next;
    if (x->next != PB_NONE)
        s->nd[x->next].prev = x->prev;
    s->nd[x->parent].nchild--;
    sim_u64map_del(&s->map, x->hash);
    if (s->id_lo < x->len) { /* grow at the bottom end: the stack moves up */
        const uint32_t used = s->id_free_cap - s->id_lo;
        uint32_t cap = s->id_free_cap ? 2 * s->id_free_cap : 4096;
        while (cap < used + x->len)
            cap *= 2;
        uint32_t *a = sim_xmalloc(cap * sizeof *a);
        if (used)
            memcpy(a + cap - used, s->id_free + s->id_lo, used * sizeof *a);
        free(s->id_free);
        s->id_free = a;
        s->id_lo = cap - used;
        s->id_free_cap = cap;
    }
    /* Pushed deepest first, so the run's ids lie in order from the top. */
    s->id_lo -= x->len;
    memcpy(s->id_free + s->id_lo, chunk_ids(x->ch) + x->off, x->len * sizeof *s->id_free);
    if (--x->ch->refs == 0)
        free(x->ch);
    x->ch = NULL;
    x->next = s->n_free;
    s->n_free = n;
}

/* Run c (adesc just became > 0) enters its parent's active-children list
 * at its place in the child list's order (newest first: seq decreasing).
 * O(active children passed). */
static void alink(preble *s, uint32_t c)
{
    prun *x = &s->nd[c];
    prun *p = &s->nd[x->parent];
    uint32_t prev = PB_NONE, cur = p->achild;
    while (cur != PB_NONE && s->nd[cur].seq > x->seq) {
        prev = cur;
        cur = s->nd[cur].anext;
    }
    x->aprev = prev;
    x->anext = cur;
    if (cur != PB_NONE)
        s->nd[cur].aprev = c;
    if (prev != PB_NONE)
        s->nd[prev].anext = c;
    else
        p->achild = c;
}

/* Run c (adesc just became 0) leaves its parent's active-children list. */
static void aunlink(preble *s, uint32_t c)
{
    prun *x = &s->nd[c];
    if (x->aprev != PB_NONE)
        s->nd[x->aprev].anext = x->anext;
    else
        s->nd[x->parent].achild = x->anext;
    if (x->anext != PB_NONE)
        s->nd[x->anext].aprev = x->aprev;
    x->anext = x->aprev = PB_NONE;
}

/* Run n, whose head is an important node, becomes active. */
static void active_add(preble *s, uint32_t n)
{
    if (s->n_active == s->active_cap) {
        s->active_cap = s->active_cap ? 2 * s->active_cap : 256;
        s->active = sim_xrealloc(s->active, s->active_cap * sizeof *s->active);
    }
    s->nd[n].active_pos = s->n_active;
    s->active[s->n_active++] = n;
    for (uint32_t a = n; a != PB_NONE; a = s->nd[a].parent)
        if (s->nd[a].adesc++ == 0 && s->nd[a].parent != PB_NONE)
            alink(s, a);
    dl_join(s, n);
}

static void active_del(preble *s, uint32_t n)
{
    uint32_t p = s->nd[n].active_pos;
    dl_leave(s, n);
    uint32_t last = s->active[--s->n_active];
    if (last != n && !s->dl_lazy) /* last moves to p: re-place it in its lists */
        PB_FOR_DEST(s, last, d) {
            dl_del(s, d, s->n_active);
            dl_ins(s, d, p, last);
        }
    s->active[p] = last;
    s->nd[last].active_pos = p;
    s->nd[n].active_pos = PB_NONE;
    for (uint32_t a = n; a != PB_NONE; a = s->nd[a].parent)
        if (--s->nd[a].adesc == 0 && s->nd[a].parent != PB_NONE)
            aunlink(s, a);
}

/* Run n enters (its second window request) or leaves (down to one) the
 * candidates' set. */
static void multi_add(preble *s, uint32_t n)
{
    if (s->n_multi == s->multi_cap) {
        s->multi_cap = s->multi_cap ? 2 * s->multi_cap : 256;
        s->multi = sim_xrealloc(s->multi, s->multi_cap * sizeof *s->multi);
    }
    s->multi[s->n_multi++] = n;
    s->nd[n].mslot = s->n_multi;
}

static void multi_del(preble *s, uint32_t n)
{
    const uint32_t i = s->nd[n].mslot - 1, last = s->multi[--s->n_multi];
    SIM_ALWAYS(s->nd[n].mslot != 0 && s->multi[i] == n);
    s->multi[i] = last;
    s->nd[last].mslot = i + 1;
    s->nd[n].mslot = 0;
}

/* Retire window entries and prune runs older than the window. */
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
            prun *x = &s->nd[e->node];
            spread(s, e->node, -1);
            x->win_cost -= e->cost;
            if (x->win_count-- == 2)
                multi_del(s, e->node);
            if (x->win_count == 0) {
                x->win_cost = 0;
                active_del(s, e->node);
            } else {
                dl_dirty(s, e->node);
            }
            spread(s, e->node, +1);
        }
        s->w_head = (s->w_head + 1) % s->w_cap;
        s->w_n--;
    }
    for (;;) { /* prune from the least recently touched run */
        const uint32_t n = sim_lruq_front(&s->lq, &s->nd[0].lpos, sizeof *s->nd);
        if (n == SIM_LRUQ_NONE || !(s->nd[n].last_seen < cutoff))
            break;
        sim_lruq_pop_front(&s->lq);
        if (s->lq.head + 8 < s->lq.tail)
            sim_u64map_prefetch(&s->map, s->nd[sim_lruq_at(&s->lq, s->lq.head + 8)].hash);
        run_free(s, n);
    }
}

/* Enter e in the window. */
static void window_push(preble *s, pentry e)
{
    if (s->w_n == s->w_cap) {
        size_t cap = s->w_cap ? 2 * s->w_cap : 1024;
        pentry *w = sim_xmalloc(cap * sizeof *w);
        for (size_t j = 0; j < s->w_n; j++)
            w[j] = s->win[(s->w_head + j) % s->w_cap];
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
    prun *x = &s->nd[e.node];
    spread(s, e.node, -1);
    x->win_cost += e.cost;
    if (x->win_count == 1)
        multi_add(s, e.node);
    if (x->win_count++ == 0)
        active_add(s, e.node);
    else
        dl_dirty(s, e.node);
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

/* load_split exactly as a pass over `active` in order computes it
 * (spread(+1) of every active node into zeroed sums): per destination,
 * the same terms added in the same order, taken from its list, which is
 * re-added from its first changed entry.  O(changed destinations + the
 * re-added entries). */
static void dl_rebuild(preble *s);

/* One destination's sum being re-added in recompute_split. */
typedef struct pb_lane {
    const pb_dent *e;
    double *pre, sum;
    uint32_t i, end, d;
} pb_lane;

static void recompute_split(preble *s)
{
    if (s->dl_lazy)
        dl_rebuild(s);
    /* Only the queued destinations: any other one's list and share are
     * unchanged since they were last set from its sum.  Each sum is a
     * chain of dependent additions, so four destinations are re-added
     * side by side (lanes; a lane takes the next queued destination when
     * its own is done): each destination's terms are still added in its
     * list's order, so every sum is the same, bit for bit. */
    pb_lane ln[4];
    uint32_t nl = 0, q = 0;
    for (;;) {
        while (nl < 4 && q < s->n_dq) {
            const uint32_t d = s->dq[q++];
            pb_dlist *l = &s->dl[d];
            l->queued = 0;
            if (l->ok < l->n)
                ln[nl++] = (pb_lane){l->e, l->pre, l->pre[l->ok], l->ok, l->n, d};
            l->ok = l->n;
            s->load_split[d] = l->n ? l->pre[l->n] : 0; /* final unless in a lane */
        }
        if (nl == 0)
            break;
        if (nl == 4) {
            uint32_t m = ln[0].end - ln[0].i;
            for (uint32_t k = 1; k < 4; k++)
                if (ln[k].end - ln[k].i < m)
                    m = ln[k].end - ln[k].i;
            const pb_dent *e0 = ln[0].e + ln[0].i, *e1 = ln[1].e + ln[1].i,
                          *e2 = ln[2].e + ln[2].i, *e3 = ln[3].e + ln[3].i;
            double *p0 = ln[0].pre + ln[0].i + 1, *p1 = ln[1].pre + ln[1].i + 1,
                   *p2 = ln[2].pre + ln[2].i + 1, *p3 = ln[3].pre + ln[3].i + 1;
            double s0 = ln[0].sum, s1 = ln[1].sum, s2 = ln[2].sum, s3 = ln[3].sum;
            for (uint32_t k = 0; k < m; k++) {
                p0[k] = s0 += e0[k].term;
                p1[k] = s1 += e1[k].term;
                p2[k] = s2 += e2[k].term;
                p3[k] = s3 += e3[k].term;
            }
            ln[0].sum = s0, ln[1].sum = s1, ln[2].sum = s2, ln[3].sum = s3;
            for (uint32_t k = 0; k < 4; k++)
                ln[k].i += m;
        } else { /* the queue is empty: finish the lanes one by one */
            for (uint32_t k = 0; k < nl; k++) {
                const pb_dent *e = ln[k].e;
                double *pre = ln[k].pre, sum = ln[k].sum;
                for (uint32_t i = ln[k].i; i < ln[k].end; i++)
                    pre[i + 1] = sum += e[i].term;
                ln[k].sum = sum;
                ln[k].i = ln[k].end;
            }
        }
        for (uint32_t k = 0; k < nl;) { /* done lanes: their sums are final */
            if (ln[k].i == ln[k].end) {
                s->load_split[ln[k].d] = ln[k].sum;
                ln[k] = ln[--nl];
            } else {
                k++;
            }
        }
    }
    s->n_dq = 0;
}

/* Rebuild every destination's list from `active` (dl_lazy): the entries
 * in `active` order with their current terms, every sum stale from entry
 * 0 and every destination queued.  O(n_dest + the entries). */
static void dl_rebuild(preble *s)
{
    for (uint32_t d = 0; d < s->n_dest; d++)
        s->dl[d].n = 0;
    for (uint32_t p = 0; p < s->n_active; p++) {
        const uint32_t n = s->active[p];
        const double term = dl_term(s, n);
        PB_FOR_DEST(s, n, d) {
            pb_dlist *l = &s->dl[d];
            if (l->n == l->cap) {
                l->cap = l->cap ? 2 * l->cap : 16;
                l->e = sim_xrealloc(l->e, l->cap * sizeof *l->e);
                l->pre = sim_xrealloc(l->pre, (l->cap + 1) * sizeof *l->pre);
            }
            l->e[l->n++] = (pb_dent){p, n, term};
        }
    }
    for (uint32_t d = 0; d < s->n_dest; d++) {
        if (s->dl[d].pre)
            s->dl[d].pre[0] = 0;
        s->dl[d].ok = 0;
        dq_add(s, d);
    }
    s->dl_lazy = 0;
}

/* A migration candidate: cost share, run, and the node id of its head
 * (ties in cost are broken by node id, as in the per-node tree). */
typedef struct cand {
    double cost;
    uint32_t node, id;
} cand;


static int cand_before(const cand *x, const cand *y)
{
    return x->cost != y->cost ? x->cost < y->cost : x->id < y->id;
}

/* Sift c[i] down the min-heap c[0..n). */
static void cand_down(cand *c, uint32_t n, uint32_t i)
{
    const cand v = c[i];
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= n)
            break;
        if (k + 1 < n && cand_before(&c[k + 1], &c[k]))
            k++;
        if (!cand_before(&c[k], &v))
            break;
        c[i] = c[k];
        i = k;
    }
    c[i] = v;
}

static void rebalance(preble *s, const route_view *v)
{
    recompute_split(s);
    memset(s->dropped, 0, s->n_dest);
    if (s->cand_cap < s->n_active) {
        s->cand_cap = 2 * s->n_active;
        free(s->cand);
        s->cand = sim_xmalloc(s->cand_cap * sizeof *s->cand);
    }
    cand *c = s->cand;
    for (uint32_t round = 0; round + 1 < s->n_dest; round++) {
        /* The loads of the destinations not yet tried (the only ones read)
         * and the heaviest and lightest of them. */
        const double om = out_mean(s);
        uint32_t hi = PB_NONE, lo = PB_NONE;
        double lhi = 0, llo = 0;
        if (s->tpot_observed) {
            /* load_of inline, on locals, in two passes (the first one a
             * vector loop).  f · om · med is +0.0 for f = 0 (om and the
             * medians are finite), so the branch of load_of can go. */
            const double *restrict split = s->load_split, *restrict loose = s->load_loose,
                                   *restrict med = s->med;
            const uint32_t *restrict out = v->outstanding;
            const uint8_t *dropped = s->dropped;
            double *restrict load = s->load;
            const uint32_t nd = s->n_dest;
            for (uint32_t d = 0; d < nd; d++)
                load[d] = split[d] + loose[d] + (double)out[d] * om * med[d];
            uint32_t d = 0;
            while (d < nd && dropped[d])
                d++;
            if (d < nd) {
                hi = lo = d;
                lhi = llo = load[d];
            }
            for (d++; d < nd; d++) {
                if (dropped[d])
                    continue;
                const double l = load[d];
                if (l > lhi)
                    hi = d, lhi = l;
                if (l < llo)
                    lo = d, llo = l;
            }
        } else {
            for (uint32_t d = 0; d < s->n_dest; d++) {
                if (s->dropped[d])
                    continue;
                const double l = load_of(s, v, d, om);
                if (hi == PB_NONE || l > lhi)
                    hi = d, lhi = l;
                if (lo == PB_NONE || l < llo)
                    lo = d, llo = l;
            }
        }
        if (hi == PB_NONE || hi == lo || lhi < s->high_load * llo)
            break;
        /* The candidates: the active nodes allocated to hi with more than
         * one window request, from hi's list or the set of all nodes with
         * more than one, whichever is shorter (and always the set while
         * the lists are not kept).  Their order does not matter: the heap
         * below takes them in the total order of cand_before (node ids are
         * unique). */
        uint32_t nc = 0;
        if (!s->dl_lazy && s->dl[hi].n <= s->n_multi) {
            for (uint32_t i = 0; i < s->dl[hi].n; i++) {
                uint32_t n = s->dl[hi].e[i].node;
                const prun *x = &s->nd[n];
                if (x->win_count > 1)
                    c[nc++] = (cand){x->win_cost / x->alloc_n, n, chunk_ids(x->ch)[x->off]};
            }
        } else {
            for (uint32_t i = 0; i < s->n_multi; i++) {
                uint32_t n = s->multi[i];
                const prun *x = &s->nd[n];
                if (has_bit(s, n, hi))
                    c[nc++] = (cand){x->win_cost / x->alloc_n, n, chunk_ids(x->ch)[x->off]};
            }
        }
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
            /* Cheapest first: a heap (the order is total, so the same
             * sequence as a sort; the loop usually stops after a few). */
            for (uint32_t i = nc / 2; i-- > 0;)
                cand_down(c, nc, i);
            for (uint32_t h = nc; h > 0;) {
                const cand ci = c[0];
                c[0] = c[--h];
                cand_down(c, h, 0);
                const double om2 = out_mean(s);
                lhi = load_of(s, v, hi, om2);
                llo = load_of(s, v, lo, om2);
                if (lhi < s->high_load * llo)
                    break;
                if (lhi - ci.cost < llo + ci.cost)
                    break;
                s->dl_lazy = 1; /* moves many entries: rebuilt when next read */
                if (s->migrate_subtree)
                    alloc_subtree_only(s, ci.node, lo);
                else
                    alloc_segment(s, ci.node, lo, 1);
            }
        }
        s->dropped[hi] = 1;
    }
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

/* With overload: completion (the default) route() reads no scraped metric
 * (the queued tokens feed only the dispatch estimate): no scrape snapshot
 * is taken (route.h, ROUTE_READS_NO_METRICS). */
static unsigned pb_needs(const void *const *params)
{
    const pb_params *p = params[1];
    return p->overload == 0 ? ROUTE_READS_NO_METRICS : 0;
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
    s->block_size = env->block_size;
    s->window_s = p->window_s > 0 ? p->window_s : PB_WINDOW_S;
    s->high_load = p->high_load > 0 ? p->high_load : PB_HIGH_LOAD;
    s->tpot_observed = p->tpot == 0;
    s->overload_completion = p->overload == 0;
    s->migrate_subtree = p->migrate == 0;
    s->rebalance_each = p->rebalance == 0;
    s->ser_free = PB_NONE;
    /* Classes: one (env->cost, env->batch_tokens) without groups; in a
     * mixed fleet one per group, from its first destination's values. */
    const int mixed = env->dest_cost || env->dest_batch_tokens;
    const uint32_t n_cls = !mixed ? 1 : env->group_of && env->n_groups ? env->n_groups : env->n_dest;
    s->cls = calloc(n_cls, sizeof *s->cls);
    if (mixed)
        s->cls_of = malloc((size_t)env->n_dest * sizeof *s->cls_of);
    if (!s->cls || (mixed && !s->cls_of)) {
        pb_destroy(s);
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating preble");
    }
    s->n_cls = n_cls;
    uint8_t *filled = mixed ? calloc(n_cls, 1) : NULL;
    if (mixed && !filled) {
        pb_destroy(s);
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating preble");
    }
    for (uint32_t d = 0; d < (mixed ? env->n_dest : 1); d++) {
        const uint32_t c = !mixed ? 0 : env->group_of && env->n_groups ? env->group_of[d] : d;
        if (mixed)
            s->cls_of[d] = c;
        if (mixed && filled[c])
            continue;
        if (mixed)
            filled[c] = 1;
        const cost_model *m = route_env_cost(env, d);
        if (!m) {
            free(filled);
            pb_destroy(s);
            return SIM_ERROR(SIM_EINVAL, "router.preble: no cost model for destination %u; "
                             "preble needs every destination's step-time model", d);
        }
        pb_class *k = &s->cls[c];
        k->cost = *m;
        k->batch_tokens = route_env_batch_tokens(env, d);
        if (dp->tp_s > 0) {
            k->tp_s = dp->tp_s;
        } else {
            uint32_t ct = k->batch_tokens ? k->batch_tokens : 2048;
            k->tp_s = prefill_time(k, ct, 0) / ct;
        }
    }
    free(filled);
    s->n_free = PB_NONE;
    s->id_next = 1;
    s->ver = 1;
    s->last_rebalance_s = -INFINITY;
    s->n_cap = 1024;
    s->nd = malloc(s->n_cap * sizeof *s->nd);
    s->alloc = calloc((size_t)s->n_cap * s->words, sizeof *s->alloc);
    s->load_split = calloc(env->n_dest, sizeof *s->load_split);
    s->dl = calloc(env->n_dest, sizeof *s->dl);
    s->dq = calloc(env->n_dest, sizeof *s->dq);
    s->load_loose = calloc(env->n_dest, sizeof *s->load_loose);
    s->dropped = calloc(env->n_dest, 1);
    s->load = calloc(env->n_dest, sizeof *s->load);
    s->tpot = calloc(env->n_dest, sizeof *s->tpot);
    s->med = calloc(env->n_dest, sizeof *s->med);
    int rc = SIM_OK;
    if (!s->nd || !s->alloc || !s->load_split || !s->dl || !s->dq || !s->load_loose || !s->dropped || !s->load ||
        !s->tpot || !s->med)
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
        s->tpot[d] = (pb_tpot){.v = {PB_TPOT_INIT}, .sorted = {PB_TPOT_INIT}, .n = 1,
                               .pos = 1};
    for (uint32_t d = 0; d < env->n_dest; d++)
        s->med[d] = PB_TPOT_INIT;
    /* Root sentinel. */
    s->nd[0] = (prun){.parent = PB_NONE, .child = PB_NONE, .next = PB_NONE,
                       .prev = PB_NONE, .lpos = UINT32_MAX, .active_pos = PB_NONE,
                       .ver = 1, .seq = s->seq++, .achild = PB_NONE, .anext = PB_NONE,
                       .aprev = PB_NONE};
    s->n_used = 1;
    return SIM_OK;
}

/* Walk r's blocks down the tree: s->pr[0..*k) are the runs on r's path
 * from the root and s->pk[i] how many of run i's nodes (all but, maybe,
 * for the last run).  One map probe per run (block hashes are chained, so
 * a present block's node is where the walk expects it, as for the
 * per-node tree's probe per block), then O(log run length) compares.  Returns
 * the matched blocks m. */
static uint32_t match(preble *s, const wl_request *r, uint32_t *k)
{
    const uint32_t n = r->n_blocks;
    const uint64_t *b = r->blocks;
    if (s->path_cap < n + 1) {
        s->path_cap = n + 1;
        s->pr = sim_xrealloc(s->pr, s->path_cap * sizeof *s->pr);
        s->pk = sim_xrealloc(s->pk, s->path_cap * sizeof *s->pk);
    }
    uint32_t m = 0, kr = 0;
    while (m < n) {
        const uint32_t x = sim_u64map_get(&s->map, b[m]);
        if (x == PB_NONE)
            break;
        const prun *p = &s->nd[x];
        const uint64_t *h = chunk_hash(p->ch) + p->off;
        const uint32_t lim = p->len < n - m ? p->len : n - m;
        /* The first node of the run that r does not share: hashes are
         * chained, so node j matches iff every node before it does (the
         * assumption of the per-node tree's probe per block): a check of
         * the last node, else a binary search. */
        uint32_t j = lim;
        if (h[lim - 1] != b[m + lim - 1]) {
            uint32_t lo = 1, hi = lim - 1; /* [0, lo) match, hi does not */
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo) / 2;
                if (h[mid] == b[m + mid])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            j = lo;
        }
        s->pr[kr] = x;
        s->pk[kr++] = j;
        m += j;
        if (j < p->len)
            break;
    }
    *k = kr;
    return m;
}

/* Index (into s->pr[0..k), a request's path of runs from the root; n
 * nodes in all, of which the first m were matched and the rest, if any,
 * are the last run) of the run headed by the head of its important
 * segment.  As the per-node scan: a segment starts just after a branch
 * point (a node with two or more children: the last node of a run) or at
 * the root, and the new tail [m, n) is the last segment. */
static uint32_t important(const preble *s, uint32_t k, uint32_t m, uint32_t n)
{
    uint32_t end = n, start = m;
    uint32_t i = m < n ? k - 1 : k; /* the run headed at `start` (when start < end) */
    for (;;) {
        if (start < end && end - start > start)
            return i;
        if (start == 0)
            return 0;
        end = start;
        /* Segment start: just after the nearest branch point above `end`. */
        uint32_t j = i - 1;
        while (j > 0 && s->nd[s->pr[j - 1]].nchild < 2)
            j--;
        i = j;
        start = s->nd[s->pr[j]].depth;
    }
}

static uint32_t pb_route(void *state, const wl_request *r, const route_view *v)
{
    preble *s = state;
    const double now = v->now_s;
    expire(s, now);
    /* Match. */
    uint32_t k;
    const uint32_t m = match(s, r, &k);
    if (s->ver > 1) /* subtree migrations happened: bring the path up to date */
        resolve_path(s, s->pr, k);
    uint64_t hit = (uint64_t)m * s->block_size;
    const uint32_t cached = hit >= r->prompt_tokens ? r->prompt_tokens : (uint32_t)hit;
    const uint32_t fresh = r->prompt_tokens - cached;
    /* Place: the lowest load cost (ties: lowest index) over alloc(deepest
     * matched node) (exploit), or over all when exploring or when that set
     * is empty. */
    const double om = out_mean(s);
    uint32_t g = PB_NONE;
    double lg = 0;
    /* faults: destinations the health view marks down are skipped
     * (route_view_down); all down: destination 0 */
    if (cached > fresh && m > 0) { /* exploit */
        const uint32_t deep = s->pr[k - 1];
        PB_FOR_DEST(s, deep, d) {
            if (!route_view_down(v, d)) {
                const double l = load_of(s, v, d, om);
                if (g == PB_NONE || l < lg)
                    g = d, lg = l;
            }
        }
    }
    if (g == PB_NONE) /* explore, or an empty set: any destination */
        for (uint32_t d = 0; d < s->n_dest; d++) {
            if (route_view_down(v, d))
                continue;
            const double l = load_of(s, v, d, om);
            if (g == PB_NONE || l < lg)
                g = d, lg = l;
        }
    if (g == PB_NONE)
        g = 0;
    /* Cut the last run where the path leaves it, insert the new tail as
     * one run, touch the path leaf to root, join alloc. */
    if (k > 0 && s->pk[k - 1] < s->nd[s->pr[k - 1]].len)
        run_split(s, s->pr[k - 1], s->pk[k - 1]);
    if (m < r->n_blocks) {
        s->pr[k] = run_new(s, r->blocks + m, r->n_blocks - m, k ? s->pr[k - 1] : 0, m);
        s->pk[k++] = r->n_blocks - m;
    }
    for (uint32_t j = k; j-- > 0;) {
        const uint32_t x = s->pr[j];
        s->nd[x].last_seen = now;
        lru_touch(s, x);
        alloc_add(s, x, g);
    }
    const uint32_t imp_i = r->n_blocks ? important(s, k, m, r->n_blocks) : 0;
    uint32_t imp = r->n_blocks ? s->pr[imp_i] : PB_NONE;
    const pb_class *cg = cls_of(s, g);
    /* The router's TTFT estimate at dispatch, read only by the legacy
     * overload detector (overloaded(); overload: dispatch_estimate), the
     * one use of a scraped metric (pb_needs). */
    const double ttft =
        s->overload_completion ? 0 : ((double)v->queued_tokens[g] + fresh) * cg->tp_s;
    window_push(s, (pentry){.t = now, .cost = prefill_time(cg, fresh, cached), .ttft = ttft,
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

/* Index of the first of sorted[0..n) >= x. */
static uint32_t tpot_lower(const double *sorted, uint32_t n, double x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (sorted[m] < x)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Add an observed TPOT (finite, > 0) to d's ring and refresh its median
 * (numpy.median: the mean of the two middle values for an even count).
 * The sorted copy drops the value the ring overwrites and takes the new
 * one (O(PB_TPOT_KEEP) moves, no sort): the same multiset as sorting
 * the ring, so the same median. */
static void tpot_add(preble *s, uint32_t d, double tpot)
{
    pb_tpot *t = &s->tpot[d];
    uint32_t n = t->n;
    if (n == PB_TPOT_KEEP) { /* the ring is full: v[pos] leaves */
        uint32_t i = tpot_lower(t->sorted, n, t->v[t->pos]);
        SIM_ALWAYS(i < n && t->sorted[i] == t->v[t->pos]);
        memmove(t->sorted + i, t->sorted + i + 1, (n - i - 1) * sizeof *t->sorted);
        n--;
    }
    uint32_t i = tpot_lower(t->sorted, n, tpot);
    memmove(t->sorted + i + 1, t->sorted + i, (n - i) * sizeof *t->sorted);
    t->sorted[i] = tpot;
    t->n = n + 1;
    t->v[t->pos] = tpot;
    t->pos = (t->pos + 1) % PB_TPOT_KEEP;
    const double *srt = t->sorted;
    s->med[d] = t->n % 2 ? srt[t->n / 2] : (srt[t->n / 2 - 1] + srt[t->n / 2]) / 2;
}

/* r's important node now (the reference recomputes it at completion from
 * the tree: find_node + get_important_node): the run it heads, or PB_NONE
 * when none of r's blocks is in the tree any more. */
static uint32_t important_now(preble *s, const wl_request *r)
{
    uint32_t k;
    const uint32_t m = match(s, r, &k);
    return m ? s->pr[important(s, k, m, m)] : PB_NONE;
}

static void pb_complete(void *state, const wl_request *r, uint32_t dest, const route_done *done)
{
    preble *s = state;
    s->out_sum += r->output_tokens;
    s->out_n++;
    if (done->ttft_s < 0 || dest >= s->n_dest) /* rejected: nothing measured */
        return;
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

double route__preble_tp_s(const void *state, uint32_t d)
{
    return cls_of(state, d)->tp_s;
}

double route__preble_prefill_s(const void *state, uint32_t d, uint32_t new_tokens, uint32_t ctx)
{
    return prefill_time(cls_of(state, d), new_tokens, ctx);
}

uint32_t route__preble_batch_tokens(const void *state, uint32_t d)
{
    return cls_of(state, d)->batch_tokens;
}

static void pb_destroy(void *state)
{
    preble *s = state;
    sim_u64map_fini(&s->map);
    if (s->nd) /* the runs' chunks */
        for (uint32_t i = 1; i < s->n_used; i++)
            if (s->nd[i].ch && --s->nd[i].ch->refs == 0)
                free(s->nd[i].ch);
    free(s->nd);
    free(s->id_free);
    sim_lruq_fini(&s->lq);
    free(s->alloc);
    free(s->win);
    free(s->active);
    free(s->multi);
    free(s->load_split);
    if (s->dl)
        for (uint32_t d = 0; d < s->n_dest; d++)
            free(s->dl[d].e), free(s->dl[d].pre);
    free(s->dl);
    free(s->dq);
    free(s->load_loose);
    free(s->dropped);
    free(s->load);
    free(s->cand);
    free(s->pr);
    free(s->pk);
    free(s->tpot);
    free(s->med);
    free(s->cls);
    free(s->cls_of);
    for (uint32_t i = 0; i < s->n_ser; i++) {
        free(s->ser[i].t);
        free(s->ser[i].cum);
    }
    free(s->ser);
    sim_u64map_fini(&s->smap);
    free(s->sub);
    free(s->stk);
    memset(s, 0, sizeof *s);
}

const route_type route_preble = {
    .name = "preble",
    .help = "global prefix tree: exploit the holder of a long match, else explore by windowed load",
    .state_size = sizeof(preble),
    .sections = pb_sections,
    .needs = pb_needs,
    .interval_s = pb_interval_s,
    .create = pb_create,
    .route = pb_route,
    .on_complete = pb_complete,
    .on_interval = pb_interval,
    .destroy = pb_destroy,
};

