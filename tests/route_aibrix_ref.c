/*
 * TEST REFERENCE, not built into crsim: models/routers/route_aibrix_prefix.c as it
 * was before the round-4 optimisations (crsim at 6d8feb8: a per-block LRU
 * map of the prefix table: one map probe, insertion or eviction per prompt
 * block). Linked instead of it into equiv_ref_sim (tests/meson.build), so
 * that tests/router_equiv.sh can check that the optimised router gives
 * bit-identical simulations.  Unchanged below this comment.
 */
/*
 * aibrix_prefix: the `prefix-cache` routing algorithm of the AIBrix
 * gateway, re-implemented on crsim's token blocks.  Specification: section
 * `aibrix_prefix` of docs/policies.md.  Reference read: vllm-project/aibrix
 * pkg/plugins/gateway/algorithms/prefix_cache.go @01de8a5 (routeOriginal,
 * getTargetPodListOnLoadImbalance, getTargetPodFromMatchedPodsFromCounts),
 * pkg/plugins/gateway/algorithms/util.go (mean, sample standard deviation),
 * pkg/utils/prefixcacheindexer/hash.go @49e51f5 (the prefix hash table).
 *
 * Rule, per request r with m full prompt blocks, over R destinations with
 * request counts c(d) (default: this gateway's own in-flight count, which
 * is what AIBrix's RealtimeNumRequestsRunning is — the gateway cache
 * increments it when it routes and decrements it when the request is done,
 * per gateway instance):
 *  1. Load gate: with mean c̄, max and min of c, the candidates are
 *     restricted to {d : c(d) = min} iff
 *        max > imbalance_factor · (c̄ + 1)  and  max - min >= imbalance_min_gap
 *     (defaults 2 and 8); else all destinations are candidates.
 *  2. Match: walk r's blocks in the table while some still-matching
 *     candidate holds the block; a candidate's match is the number j >= 1
 *     of leading blocks it holds, its share floor(100 j / m) percent (the
 *     reference's integer percentage).
 *  3. If some candidate matched: among the matched candidates with
 *     c(d) <= c̄ + k · s (s the sample standard deviation of c over all
 *     destinations, k = std_factor, default 1), the highest share, then
 *     the fewest requests, ties uniformly at random (the reference
 *     shuffles, then stable-sorts, then takes the first within the bound).
 *     If none is within the bound, or nothing matched: the destination with
 *     the fewest requests over all destinations, ties uniformly at random.
 *  4. Every block of r is added to the table for the chosen destination
 *     (AddPrefix: the destination joins the block's pod set; the block
 *     becomes the most recently used).
 *
 * Table (hash.go): one LRU store of block hashes, each with the set of
 * destinations it was routed to; capacity AIBRIX_PREFIX_CACHE_BLOCK_NUMBER
 * = 200,000 blocks of AIBRIX_PREFIX_CACHE_BLOCK_SIZE = 4 "tokens" (with the
 * default character tokenizer: 4 characters); entries idle for 20 minutes
 * (AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS) expire.  crsim's blocks are
 * KV blocks of block_size tokens, so the capacity becomes
 *     ceil(table_blocks · block_chars / (chars_per_token · block_size))
 * crsim blocks (12,500 at 4 characters per token and 16-token blocks): the
 * same amount of prompt text.
 *
 * Deviations: matching is at KV-block granularity (16 tokens), not 4
 * characters; the part of a prompt after its last full block never
 * matches; expiry is checked at each decision (the reference sweeps every
 * second); a matched candidate's share uses crsim's m full blocks.
 *
 * Cost per request: one map lookup per prompt block (the match and the
 * add share it), O(R) for the gate and the choice.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/lruq.h"
#include "sim/core/u64map.h"
#include "models/routers/route_int.h"

#define AB_NONE UINT32_MAX
#define AB_PF 16 /* blocks ahead the add pass prefetches */

enum { AB_SIGNAL_INFLIGHT = 0, AB_SIGNAL_RUNNING = 1 };

typedef struct aibrix_params {
    double imbalance_factor;
    int64_t imbalance_min_gap;
    int64_t std_factor;
    int64_t table_blocks; /* reference blocks */
    int64_t block_chars;  /* characters per reference block */
    double chars_per_token;
    double ttl_s;
    int signal;
} aibrix_params;

static const char *const ab_signal_names[] = {"inflight", "running", NULL};

static const sim_cfg_key aibrix_schema[] = {
    {.path = "imbalance_factor", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(aibrix_params, imbalance_factor), .min = 0, .max = 1e9, .def = "2",
     .help = "load gate: restrict to the least loaded iff max > this x (mean + 1) and the gap "
             "holds; AIBRIX_PREFIX_CACHE_LOAD_IMBALANCE_FACTOR 2.0 (0 = gap test only)"},
    {.path = "imbalance_min_gap", .type = SIM_CFG_INT,
     .offset = offsetof(aibrix_params, imbalance_min_gap), .min = 0, .max = 1e9, .def = "8",
     .unit = "requests",
     .help = "load gate: max - min >= this; AIBRIX_PREFIX_CACHE_LOAD_IMBALANCE_MIN_GAP 8"},
    {.path = "std_factor", .type = SIM_CFG_INT, .offset = offsetof(aibrix_params, std_factor),
     .min = 0, .max = 1000, .def = "1",
     .help = "k of the mean + k x std bound on a matched pod's requests; "
             "AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR 1"},
    {.path = "table_blocks", .type = SIM_CFG_INT, .offset = offsetof(aibrix_params, table_blocks),
     .min = 1, .max = 1e9, .def = "200000",
     .help = "prefix table capacity in reference blocks (AIBRIX_PREFIX_CACHE_BLOCK_NUMBER "
             "200000), converted to KV blocks via block_chars and chars_per_token"},
    {.path = "block_chars", .type = SIM_CFG_INT, .offset = offsetof(aibrix_params, block_chars),
     .min = 1, .max = 1e6, .def = "4", .unit = "characters",
     .help = "characters per reference block (AIBRIX_PREFIX_CACHE_BLOCK_SIZE 4 with the "
             "default character tokenizer)"},
    {.path = "chars_per_token", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(aibrix_params, chars_per_token), .min = 0.01, .max = 1000, .def = "4",
     .help = "characters per token for the capacity conversion (OpenAI: ~4 characters of "
             "English per token)"},
    {.path = "ttl_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(aibrix_params, ttl_s), .min = 0,
     .max = 1e9, .def = "1200", .unit = "s",
     .help = "idle expiry of a table block (AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS 20); "
             "0 = none"},
    {.path = "signal", .type = SIM_CFG_ENUM, .offset = offsetof(aibrix_params, signal),
     .choices = ab_signal_names, .def = "inflight",
     .help = "request count: inflight = this gateway's own (AIBrix RealtimeNumRequestsRunning); "
             "running = the engines' running requests as scraped (gateway.*)"},
    {0},
};

const route_section route__sec_aibrix_prefix = {.prefix = "router.aibrix_prefix",
                                                .schema = aibrix_schema,
                                                .params_size = sizeof(aibrix_params)};

static const route_section *const aibrix_sections[] = {&route__sec_aibrix_prefix, NULL};

typedef struct ab_entry {
    uint64_t hash;
    double t;     /* last access, s */
    uint32_t pos; /* lruq position */
    uint32_t next_free;
    uint64_t pod0; /* the pod set when it fits one word (<= 64 destinations) */
} ab_entry;

typedef struct aibrix {
    sim_pcg32 rng;
    uint32_t n_dest, words, block_size, signal;
    double factor, ttl_s;
    uint64_t gap, k_std;
    uint32_t cap; /* table capacity, KV blocks */
    ab_entry *e;
    uint64_t *pods; /* words per entry, when more than one (else ab_entry.pod0) */
    uint32_t e_cap, e_used, e_free, e_live;
    sim_u64map map;
    sim_lruq lq;
    uint32_t *idx;     /* scratch: entry of block i (matched part) */
    uint32_t idx_cap;
    uint32_t *cnt;     /* scratch: request counts */
    uint32_t *match;   /* scratch: matched blocks per destination */
    uint64_t *alive, *cand, *gone; /* scratch bitsets */
} aibrix;

static int aibrix_create(void *state, const route_env *env, const void *const *params)
{
    aibrix *s = state;
    const aibrix_params *p = params[0];
    if (env->n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "router: 0 destinations; aibrix_prefix expects >= 1");
    if (env->block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "router.aibrix_prefix: block size is 0; expected the "
                         "engine block size in tokens (> 0)");
    memset(s, 0, sizeof *s);
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    s->n_dest = env->n_dest;
    s->words = (env->n_dest + 63) / 64;
    s->block_size = env->block_size;
    s->signal = (uint32_t)p->signal;
    s->factor = p->imbalance_factor;
    s->gap = (uint64_t)p->imbalance_min_gap;
    s->k_std = (uint64_t)p->std_factor;
    s->ttl_s = p->ttl_s;
    double cap = ceil((double)p->table_blocks * (double)p->block_chars /
                      (p->chars_per_token * (double)env->block_size));
    s->cap = cap < 1 ? 1 : cap > 1e9 ? 1000000000u : (uint32_t)cap;
    s->e_free = AB_NONE;
    int rc = sim_u64map_init(&s->map, 1024);
    if (rc)
        return rc;
    s->cnt = sim_xcalloc(env->n_dest, sizeof *s->cnt);
    s->match = sim_xcalloc(env->n_dest, sizeof *s->match);
    s->alive = sim_xcalloc(3 * (size_t)s->words, sizeof *s->alive);
    s->cand = s->alive + s->words;
    s->gone = s->cand + s->words;
    return SIM_OK;
}

static void aibrix_destroy(void *state)
{
    aibrix *s = state;
    free(s->e);
    free(s->pods);
    free(s->idx);
    free(s->cnt);
    free(s->match);
    free(s->alive);
    sim_u64map_fini(&s->map);
    sim_lruq_fini(&s->lq);
}

static inline uint32_t *lq_pos0(aibrix *s)
{
    return s->e ? &s->e[0].pos : NULL;
}

/* Drop the least recently used entry.  (Prefetching later victims' map
 * slots was tried: +8.6 % instructions, no fewer simulated cache misses —
 * the default table, 12,500 blocks, stays cache-resident.) */
static void drop_front(aibrix *s, uint32_t x)
{
    sim_u64map_del(&s->map, s->e[x].hash);
    s->e[x].pos = UINT32_MAX - 1; /* stale: matches no queue entry */
    s->e[x].next_free = s->e_free;
    s->e_free = x;
    s->e_live--;
}

/* The pod set of entry x (words words): inline in the entry for up to 64
 * destinations, so a probe's entry and its pods share a cache line. */
static inline uint64_t *podw(aibrix *s, uint32_t x)
{
    return s->words == 1 ? &s->e[x].pod0 : &s->pods[(size_t)x * s->words];
}

/* A new entry for `hash` (the table is not full: the caller evicted). */
static uint32_t entry_new(aibrix *s, uint64_t hash)
{
    uint32_t x;
    if (s->e_free != AB_NONE) {
        x = s->e_free;
        s->e_free = s->e[x].next_free;
    } else {
        if (s->e_used == s->e_cap) {
            s->e_cap = s->e_cap ? 2 * s->e_cap : 1024;
            s->e = sim_xrealloc(s->e, s->e_cap * sizeof *s->e);
            if (s->words > 1)
                s->pods = sim_xrealloc(s->pods, (size_t)s->e_cap * s->words * sizeof *s->pods);
        }
        x = s->e_used++;
    }
    s->e[x].hash = hash;
    s->e[x].pos = UINT32_MAX - 1;
    memset(podw(s, x), 0, s->words * sizeof *s->pods);
    sim_u64map_put(&s->map, hash, x);
    s->e_live++;
    return x;
}

static inline void touch(aibrix *s, uint32_t x, double now)
{
    s->e[x].t = now;
    sim_lruq_touch(&s->lq, &s->e[0].pos, sizeof *s->e, x);
}

/* Least requests over every destination, ties uniformly at random. */
static uint32_t least(aibrix *s)
{
    uint32_t best = 0, ties = 1;
    for (uint32_t d = 1; d < s->n_dest; d++) {
        if (s->cnt[d] < s->cnt[best]) {
            best = d;
            ties = 1;
        } else if (s->cnt[d] == s->cnt[best] && sim_pcg32_bounded(&s->rng, ++ties) == 0) {
            best = d;
        }
    }
    return best;
}

static uint32_t aibrix_route(void *state, const wl_request *r, const route_view *v)
{
    aibrix *s = state;
    const double now = v->now_s;
    const uint32_t R = s->n_dest, W = s->words;

    /* Request counts, mean, sample standard deviation, max, min. */
    const uint32_t *src = s->signal == AB_SIGNAL_RUNNING ? v->running : v->outstanding;
    uint64_t sum = 0;
    uint32_t mx = 0, mn = UINT32_MAX;
    for (uint32_t d = 0; d < R; d++) {
        const uint32_t c = src ? src[d] : 0;
        s->cnt[d] = c;
        sum += c;
        mx = c > mx ? c : mx;
        mn = c < mn ? c : mn;
    }
    const double mean = (double)sum / R;
    double ss = 0;
    for (uint32_t d = 0; d < R; d++)
        ss += ((double)s->cnt[d] - mean) * ((double)s->cnt[d] - mean);
    const double sd = R > 1 ? sqrt(ss / (double)(R - 1)) : 0;

    /* 1. Load gate. */
    memset(s->cand, 0, W * sizeof *s->cand);
    const int gate = (double)mx > s->factor * (mean + 1) && (uint64_t)(mx - mn) >= s->gap;
    for (uint32_t d = 0; d < R; d++)
        if (!gate || s->cnt[d] == mn)
            s->cand[d / 64] |= 1ULL << (d % 64);

    /* Expire idle entries (least recently used first). */
    if (s->ttl_s > 0 && s->e)
        for (;;) {
            uint32_t x = sim_lruq_front(&s->lq, lq_pos0(s), sizeof *s->e);
            if (x == SIM_LRUQ_NONE || now - s->e[x].t < s->ttl_s)
                break;
            drop_front(s, x);
        }

    /* 2. Match. */
    uint32_t nb = r->prompt_tokens / s->block_size;
    if (nb > r->n_blocks)
        nb = r->n_blocks;
    if (nb > s->idx_cap) {
        s->idx_cap = nb > 2 * s->idx_cap ? nb : 2 * s->idx_cap;
        s->idx = sim_xrealloc(s->idx, s->idx_cap * sizeof *s->idx);
    }
    memcpy(s->alive, s->cand, W * sizeof *s->alive);
    uint32_t i = 0, any = 0;
    for (; i < nb; i++) {
        if (i + AB_PF < nb)
            sim_u64map_prefetch(&s->map, r->blocks[i + AB_PF]);
        const uint32_t x = sim_u64map_get(&s->map, r->blocks[i]);
        if (x == SIM_U64MAP_NONE)
            break;
        const uint64_t *pw = podw(s, x);
        uint64_t keep = 0;
        for (uint32_t w = 0; w < W; w++) {
            s->gone[w] = s->alive[w] & ~pw[w];
            s->alive[w] &= pw[w];
            keep |= s->alive[w];
        }
        /* Candidates that drop out here matched i blocks. */
        for (uint32_t w = 0; w < W; w++)
            for (uint64_t g = s->gone[w]; g; g &= g - 1)
                s->match[w * 64 + (uint32_t)__builtin_ctzll(g)] = i;
        if (!keep)
            break;
        s->idx[i] = x;
    }
    const uint32_t walked = i; /* blocks present for some candidate */
    for (uint32_t w = 0; w < W; w++)
        for (uint64_t g = s->alive[w]; g; g &= g - 1)
            s->match[w * 64 + (uint32_t)__builtin_ctzll(g)] = walked;

    /* 3. Choose. */
    uint32_t dest = AB_NONE;
    const double bound = mean + (double)s->k_std * sd;
    uint32_t best_pct = 0, best_cnt = 0, ties = 0;
    for (uint32_t w = 0; w < W; w++)
        for (uint64_t g = s->cand[w]; g; g &= g - 1) {
            const uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(g);
            const uint32_t m = walked ? s->match[d] : 0;
            if (m == 0)
                continue;
            any = 1;
            if (!((double)s->cnt[d] <= bound))
                continue;
            const uint32_t pct = (uint32_t)((uint64_t)m * 100 / nb);
            if (dest == AB_NONE || pct > best_pct ||
                (pct == best_pct && s->cnt[d] < best_cnt)) {
                dest = d;
                best_pct = pct;
                best_cnt = s->cnt[d];
                ties = 1;
            } else if (pct == best_pct && s->cnt[d] == best_cnt &&
                       sim_pcg32_bounded(&s->rng, ++ties) == 0) {
                dest = d;
            }
        }
    (void)any;
    if (dest == AB_NONE)
        dest = least(s);

    /* 4. Add every block for dest, in order (the matched ones first, so
     * making room never evicts an entry recorded in idx). */
    for (uint32_t j = 0; j < nb; j++) {
        uint32_t x;
        if (j < walked) {
            x = s->idx[j];
        } else {
            if (j + AB_PF < nb)
                sim_u64map_prefetch(&s->map, r->blocks[j + AB_PF]);
            x = sim_u64map_get(&s->map, r->blocks[j]);
            if (x == SIM_U64MAP_NONE) {
                if (s->e_live >= s->cap) {
                    uint32_t y = sim_lruq_front(&s->lq, lq_pos0(s), sizeof *s->e);
                    if (y != SIM_LRUQ_NONE)
                        drop_front(s, y);
                }
                x = entry_new(s, r->blocks[j]);
            }
        }
        podw(s, x)[dest / 64] |= 1ULL << (dest % 64);
        touch(s, x, now);
    }
    return dest;
}

const route_type route_aibrix_prefix = {
    .name = "aibrix_prefix",
    .help = "AIBrix prefix-cache: load gate, prefix-hash table match, mean + k std bound "
            "(router.aibrix_prefix)",
    .state_size = sizeof(aibrix),
    .sections = aibrix_sections,
    .create = aibrix_create,
    .route = aibrix_route,
    .destroy = aibrix_destroy,
};
