/*
 * llmd: the Gateway API inference extension / llm-d endpoint picker
 * (EPP), re-implemented from kubernetes-sigs/gateway-api-inference-
 * extension pkg/epp/scheduling/framework/plugins/multi/prefix/plugin.go
 * @00913f92 and indexer.go @01925288 (approximate prefix scorer), the
 * queue and KV-cache-utilisation scorers of the same tree, and llm-d/
 * llm-d-inference-scheduler's precise-prefix-cache scorer (min-max
 * normalised longest-prefix scores over KV-event-fed indexes).
 * docs/policies.md lists every choice and deviation.
 *
 * Every destination is a candidate (the default profile has no filter
 * that crsim's healthy one-model pools would trip).  Each gets
 *
 *     score = w_queue * (max_q - q) / (max_q - min_q)   [1 if all equal]
 *           + w_kv    * (1 - kv_util)
 *           + w_prefix * prefix
 *
 * with q the scraped waiting queue and kv_util the scraped KV usage; the
 * highest score wins, ties uniformly at random (max-score picker).
 *
 * mode approximate (default, weights 2 : 2 : 3): prefix = the blocks of
 * the request's hash list that the router's index walk credits to the
 * destination / the list's length.  The list is a model-name hash
 * followed by the chained hashes of the prompt's first (at most
 * max_prefix_blocks) hash blocks of hash_block_tokens tokens (64
 * characters at ~4 characters per token in the reference); after the
 * decision every hash of the list is added to the chosen destination's
 * LRU of lru_capacity entries, first to last (indexer.Add).
 *
 * mode precise (weights prefix 2 : KV 1 : queue 1): the index is the
 * engines' caches as their KV events describe them (with their delay);
 * a destination's raw score is the longest prefix of the request's
 * engine blocks it holds; destinations with a raw score > 0 are min-max
 * normalised to [0, 1] (all equal: 1), the others score 0.
 *
 * Cost per request (docs/performance.md): approximate -- the add into the
 * chosen destination's LRU as a queue of block runs (route__kvlru: one
 * probe per run passed or hash absent) and, since round 13, a walk over
 * the queues' run heads (route__kvlru_walk: one probe of a 256-KiB filter
 * per hash walked, a small heads table behind it, and a compare per run
 * met; until then one probe per hash of a per-block set of 32 MiB on the
 * flagship, kept from the queues' change logs); precise -- up to 64
 * destinations the engines' caches as runs (route__kvidx_create_events,
 * round 13: per KV event O(1) map operations per run touched, per
 * request a probe per block where a run parts from the list and a
 * compare per run met), beyond that O(log n) bisection probes per
 * distinct answer among the holders of the first block over a per-block
 * index and per KV event O(blocks) set changes.  Until round 4 the approximate LRU
 * was one queue entry and pair-map probe per hash (tests/route_llmd_ref.c
 * with tests/route_kvidx_ref.c; tests/router_equiv.sh checks they agree).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/route_int.h"
#include "sim/core/error.h"

enum { LLMD_APPROX = 0, LLMD_PRECISE = 1 };
static const char *const mode_names[] = {"approximate", "precise", NULL};

/* The hash standing for the model name at the head of every hash list
 * (plugin.go hashPrompt: hash(0) = xxhash of the target model). */
#define LLMD_MODEL_HASH 0x6c6c6d2d64a11e5bULL

typedef struct llmd_params {
    int mode;
    double w_queue, w_kv, w_prefix; /* < 0 = the mode's default */
    int64_t hash_block_tokens;      /* tokens per prefix hash block */
    int64_t max_prefix_blocks;
    int64_t lru_capacity;           /* hash blocks per destination */
    double w_nohit;                 /* no-hit-lru-scorer weight, 0 = off */
    int64_t nohit_lru_size;         /* its LRU of destinations */
} llmd_params;

static const sim_cfg_key llmd_schema[] = {
    {.path = "mode", .type = SIM_CFG_ENUM, .offset = offsetof(llmd_params, mode),
     .choices = mode_names, .def = "approximate",
     .help = "prefix index: approximate = the router's own decisions (inference-extension "
             "prefix-cache-scorer); precise = engine KV events (llm-d precise-prefix-cache-"
             "scorer)"},
    {.path = "queue_weight", .type = SIM_CFG_DOUBLE, .offset = offsetof(llmd_params, w_queue),
     .min = -1, .max = 1e6, .def = "-1",
     .help = "queue-scorer weight; -1 = the mode's default (approximate 2, precise 1)"},
    {.path = "kv_weight", .type = SIM_CFG_DOUBLE, .offset = offsetof(llmd_params, w_kv),
     .min = -1, .max = 1e6, .def = "-1",
     .help = "kv-cache-utilization-scorer weight; -1 = the mode's default (approximate 2, "
             "precise 1)"},
    {.path = "prefix_weight", .type = SIM_CFG_DOUBLE, .offset = offsetof(llmd_params, w_prefix),
     .min = -1, .max = 1e6, .def = "-1",
     .help = "prefix-cache-scorer weight; -1 = the mode's default (approximate 3, precise 2)"},
    {.path = "hash_block_tokens", .type = SIM_CFG_INT,
     .offset = offsetof(llmd_params, hash_block_tokens), .min = 1, .max = 1 << 20, .def = "16",
     .unit = "tokens",
     .help = "approximate mode: tokens per prefix hash block, a multiple of engine.block_size "
             "(reference: 64 characters = 16 tokens at 4 characters per token)"},
    {.path = "max_prefix_blocks", .type = SIM_CFG_INT,
     .offset = offsetof(llmd_params, max_prefix_blocks), .min = 1, .max = 1 << 24, .def = "256",
     .help = "approximate mode: hash blocks of a prompt matched and indexed at most "
             "(DefaultMaxPrefixBlocks)"},
    {.path = "lru_capacity", .type = SIM_CFG_INT, .offset = offsetof(llmd_params, lru_capacity),
     .min = 1, .max = 1 << 30, .def = "31250",
     .help = "approximate mode: index entries per destination, LRU "
             "(DefaultLRUCapacityPerServer)"},
    {.path = "nohit_lru_weight", .type = SIM_CFG_DOUBLE, .offset = offsetof(llmd_params, w_nohit),
     .min = 0, .max = 1e6, .def = "0",
     .help = "no-hit-lru-scorer weight (llm-d-inference-scheduler no_hit_lru.go): a request "
             "no destination has a prefix hit for prefers the destination least recently sent "
             "such a request; 0 = off (the inference extension's default profile); llm-d's "
             "optimized-baseline profile uses 2"},
    {.path = "nohit_lru_size", .type = SIM_CFG_INT, .offset = offsetof(llmd_params, nohit_lru_size),
     .min = 1, .max = 1 << 30, .def = "1024",
     .help = "no-hit-lru-scorer: destinations its LRU remembers (defaultLRUSize)"},
    {0},
};

const route_section route__sec_llmd = {.prefix = "router.llmd", .schema = llmd_schema,
                                       .params_size = sizeof(llmd_params)};

static const route_section *const llmd_sections[] = {&route__sec_llmd, NULL};

typedef struct llmd {
    llmd_params p;
    double wq, wk, wp;
    uint32_t n_dest, block_size, per_hash; /* engine blocks per hash block */
    sim_pcg32 rng;
    route__kvidx *idx; /* the index read (precise: its own; approximate: lru's) */
    route__kvlru *lru; /* approximate: the decision-fed index */
    uint64_t *hl;    /* scratch: the hash list */
    uint32_t cap_hl;
    uint32_t *cnt;   /* scratch: per-destination matches */
    double *score;   /* scratch */
    /* no-hit-lru-scorer (w_nohit > 0): destinations that received a cold
     * request, a doubly linked list oldest -> newest (NOHIT_NONE ends). */
    uint32_t *nh_prev, *nh_next;
    uint8_t *nh_in;
    uint32_t nh_head, nh_tail, nh_count;
} llmd;

#define NOHIT_NONE UINT32_MAX

static int llmd_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const llmd_params *p = params[0];
    if (p->mode == LLMD_APPROX && env->block_size &&
        p->hash_block_tokens % env->block_size != 0) {
        char at[512];
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.llmd.hash_block_tokens' is %lld with "
                         "engine.block_size %u; expected a multiple of the block size",
                         route_where(loc, "router.llmd.hash_block_tokens", at, sizeof at),
                         (long long)p->hash_block_tokens, env->block_size);
    }
    return SIM_OK;
}

static unsigned llmd_needs(const void *const *params)
{
    const llmd_params *p = params[0];
    return p->mode == LLMD_PRECISE ? ROUTE_NEEDS_KV_EVENTS : 0;
}

static void llmd_destroy(void *state)
{
    llmd *s = state;
    if (s->lru)
        route__kvlru_destroy(s->lru);
    else
        route__kvidx_destroy(s->idx);
    free(s->hl);
    free(s->cnt);
    free(s->score);
    free(s->nh_prev);
    free(s->nh_next);
    free(s->nh_in);
}

static int llmd_create(void *state, const route_env *env, const void *const *params)
{
    llmd *s = state;
    s->p = *(const llmd_params *)params[0];
    const bool precise = s->p.mode == LLMD_PRECISE;
    s->wq = s->p.w_queue >= 0 ? s->p.w_queue : precise ? 1 : 2;
    s->wk = s->p.w_kv >= 0 ? s->p.w_kv : precise ? 1 : 2;
    s->wp = s->p.w_prefix >= 0 ? s->p.w_prefix : precise ? 2 : 3;
    s->n_dest = env->n_dest;
    s->block_size = env->block_size ? env->block_size : 16;
    s->per_hash = (uint32_t)(s->p.hash_block_tokens / s->block_size);
    if (s->per_hash == 0)
        s->per_hash = 1;
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    if (precise) { /* at most the engines' pools */
        s->idx = route__kvidx_create_events(env->n_dest, (uint64_t)env->n_dest * env->pool_blocks);
    } else { /* at most lru_capacity per destination */
        s->lru = route__kvlru_create(env->n_dest, (uint32_t)s->p.lru_capacity, false);
        s->idx = route__kvlru_index(s->lru); /* NULL up to 64 destinations */
        if (s->idx)
            route__kvidx_reserve(s->idx, (uint64_t)env->n_dest * (uint64_t)s->p.lru_capacity);
    }
    s->cnt = sim_xcalloc(env->n_dest, sizeof *s->cnt);
    s->score = sim_xcalloc(env->n_dest, sizeof *s->score);
    if (s->p.w_nohit > 0) {
        s->nh_prev = sim_xcalloc(env->n_dest, sizeof *s->nh_prev);
        s->nh_next = sim_xcalloc(env->n_dest, sizeof *s->nh_next);
        s->nh_in = sim_xcalloc(env->n_dest, sizeof *s->nh_in);
        s->nh_head = s->nh_tail = NOHIT_NONE;
    }
    return SIM_OK;
}

/* The approximate scorer's hash list of r into s->hl: the model hash, then
 * for hash block k the chained engine-block hash ending it (it identifies
 * the whole prefix up to there, as the reference's chained block hash
 * does).  A prompt shorter than one hash block has no list (0). */
static uint32_t hash_list(llmd *s, const wl_request *r)
{
    uint32_t full = r->prompt_tokens / s->block_size;
    if (full > r->n_blocks)
        full = r->n_blocks;
    uint64_t nh = full / s->per_hash;
    if (nh > (uint64_t)s->p.max_prefix_blocks)
        nh = (uint64_t)s->p.max_prefix_blocks;
    if (nh == 0)
        return 0;
    if (nh + 1 > s->cap_hl) {
        s->cap_hl = (uint32_t)nh + 1;
        s->hl = sim_xrealloc(s->hl, s->cap_hl * sizeof *s->hl);
    }
    s->hl[0] = LLMD_MODEL_HASH;
    if (s->per_hash == 1) /* the default: hash block = engine block */
        memcpy(s->hl + 1, r->blocks, (size_t)nh * sizeof *s->hl);
    else
        for (uint32_t k = 0; k < nh; k++)
            s->hl[k + 1] = r->blocks[(k + 1) * s->per_hash - 1];
    return (uint32_t)nh + 1;
}

/* no-hit-lru-scorer (llm-d-inference-scheduler pkg/plugins/scorer/
 * no_hit_lru.go, v0.4.0 to v0.8.0; docs/policies.md).  A request is cold
 * when the prefix scorer found no destination with a hit.  Hot: every
 * candidate scores 0.5.  Cold: with N candidates (N = 1: 1.0), the i-th
 * (from 0, in destination order) never sent a cold request scores
 * 1 - i/(N-1); one at position p of the LRU (0 = least recently sent a
 * cold request) scores max(0, 1 - (never + p)/(N-1)), never = how many
 * candidates were never sent one.  Adds w_nohit x that to score[]. */
static void nohit_scores(llmd *s, const route_view *v, bool cold)
{
    const uint32_t n = s->n_dest;
    if (!cold) {
        for (uint32_t d = 0; d < n; d++)
            s->score[d] += s->p.w_nohit * 0.5;
        return;
    }
    uint32_t total = 0, never = 0;
    for (uint32_t d = 0; d < n; d++)
        if (!route_view_down(v, d)) {
            total++;
            never += !s->nh_in[d];
        }
    if (total <= 1) {
        for (uint32_t d = 0; d < n; d++)
            s->score[d] += s->p.w_nohit * (total == 1 ? 1.0 : 0.0);
        return;
    }
    const double den = (double)(total - 1);
    uint32_t i = 0;
    for (uint32_t d = 0; d < n; d++)
        if (!s->nh_in[d] && !route_view_down(v, d))
            s->score[d] += s->p.w_nohit * (1.0 - (double)i++ / den);
    uint32_t pos = 0; /* over the whole LRU, down destinations too */
    for (uint32_t d = s->nh_head; d != NOHIT_NONE; d = s->nh_next[d], pos++) {
        const double x = 1.0 - (double)(never + pos) / den;
        s->score[d] += s->p.w_nohit * (x < 0 ? 0 : x);
    }
}

/* PreRequest of a cold request: `d` becomes the most recently used (the
 * LRU's Add), the oldest dropped when it holds nohit_lru_size. */
static void nohit_touch(llmd *s, uint32_t d)
{
    if (s->nh_in[d]) { /* unlink */
        if (s->nh_prev[d] != NOHIT_NONE)
            s->nh_next[s->nh_prev[d]] = s->nh_next[d];
        else
            s->nh_head = s->nh_next[d];
        if (s->nh_next[d] != NOHIT_NONE)
            s->nh_prev[s->nh_next[d]] = s->nh_prev[d];
        else
            s->nh_tail = s->nh_prev[d];
        s->nh_count--;
    } else if ((int64_t)s->nh_count >= s->p.nohit_lru_size) { /* evict the oldest */
        const uint32_t o = s->nh_head;
        s->nh_head = s->nh_next[o];
        if (s->nh_head != NOHIT_NONE)
            s->nh_prev[s->nh_head] = NOHIT_NONE;
        else
            s->nh_tail = NOHIT_NONE;
        s->nh_in[o] = 0;
        s->nh_count--;
    }
    s->nh_in[d] = 1;
    s->nh_prev[d] = s->nh_tail;
    s->nh_next[d] = NOHIT_NONE;
    if (s->nh_tail != NOHIT_NONE)
        s->nh_next[s->nh_tail] = d;
    else
        s->nh_head = d;
    s->nh_tail = d;
    s->nh_count++;
}

static uint32_t llmd_route(void *state, const wl_request *r, const route_view *v)
{
    llmd *s = state;
    const uint32_t n = s->n_dest;
    /* Prefix scores. */
    uint32_t nh = 0;
    if (s->p.mode == LLMD_APPROX) {
        nh = hash_list(s, r);
        route__kvlru_walk(s->lru, s->hl, nh, s->cnt);
        for (uint32_t d = 0; d < n; d++)
            s->score[d] = nh ? s->wp * (double)s->cnt[d] / (double)nh : 0;
    } else {
        uint32_t full = r->prompt_tokens / s->block_size;
        if (full > r->n_blocks)
            full = r->n_blocks;
        route__kvidx_prefix(s->idx, r->blocks, full, s->cnt);
        uint32_t lo = UINT32_MAX, hi = 0;
        for (uint32_t d = 0; d < n; d++)
            if (s->cnt[d] > 0) {
                lo = s->cnt[d] < lo ? s->cnt[d] : lo;
                hi = s->cnt[d] > hi ? s->cnt[d] : hi;
            }
        for (uint32_t d = 0; d < n; d++)
            s->score[d] = s->cnt[d] == 0 ? 0
                          : lo == hi     ? s->wp
                                         : s->wp * (double)(s->cnt[d] - lo) / (double)(hi - lo);
    }
    /* Cold: no destination has a hit.  Approximate: none is credited
     * past the model hash (the list is empty or nobody holds its first
     * prompt block); precise: no raw score > 0. */
    bool cold = false;
    if (s->p.w_nohit > 0) {
        const uint32_t floor = s->p.mode == LLMD_APPROX ? 1 : 0;
        cold = true;
        if (s->p.mode == LLMD_PRECISE || nh > 0)
            for (uint32_t d = 0; d < n && cold; d++)
                cold = s->cnt[d] <= floor;
        nohit_scores(s, v, cold);
    }
    /* Queue and KV-utilisation scores from the scraped snapshot. */
    uint32_t qlo = UINT32_MAX, qhi = 0;
    for (uint32_t d = 0; d < n; d++) {
        const uint32_t q = v->waiting ? v->waiting[d] : 0;
        qlo = q < qlo ? q : qlo;
        qhi = q > qhi ? q : qhi;
    }
    uint32_t best = 0, ties = 0;
    double top = -INFINITY;
    for (uint32_t d = 0; d < n; d++) {
        if (route_view_down(v, d) && !(top == -INFINITY && d + 1 == n)) /* faults: */
            continue; /* the datastore drops unready pods (all down: the last one) */
        const uint32_t q = v->waiting ? v->waiting[d] : 0;
        const double sq = qhi == qlo ? 1.0 : (double)(qhi - q) / (double)(qhi - qlo);
        const double sk = 1.0 - (v->kv_util ? v->kv_util[d] : 0.0);
        const double x = s->score[d] + s->wq * sq + s->wk * sk;
        if (x > top) {
            top = x;
            best = d;
            ties = 1;
        } else if (x == top && sim_pcg32_bounded(&s->rng, ++ties) == 0) {
            best = d; /* the j-th tie replaces with probability 1/j: uniform */
        }
    }
    if (s->p.mode == LLMD_APPROX) /* PreRequest: indexer.Add(hashes, target) */
        route__kvlru_add(s->lru, best, s->hl, nh, v->now_s);
    if (cold) /* PreRequest of the no-hit-lru-scorer */
        nohit_touch(s, best);
    return best;
}

static void llmd_kv_event(void *state, const route_kv_event *ev)
{
    llmd *s = state;
    if (s->p.mode != LLMD_PRECISE)
        return;
    route__kvidx_event(s->idx, ev->dest, ev->kind == ROUTE_KV_STORED, ev->parent, ev->hashes,
                       ev->n);
}

const route_type route_llmd = {
    .name = "llmd",
    .help = "llm-d / inference-extension endpoint picker: queue 2 + KV 2 + prefix 3 scorers, "
            "max wins (router.llmd; mode precise: KV-event index, 1 : 1 : 2)",
    .state_size = sizeof(llmd),
    .sections = llmd_sections,
    .check = llmd_check,
    .needs = llmd_needs,
    .create = llmd_create,
    .route = llmd_route,
    .destroy = llmd_destroy,
    .on_kv_event = llmd_kv_event,
};
