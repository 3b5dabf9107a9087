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
 * The table is sim/core/pfxidx (the queue of block runs dualmap uses for
 * the same AIBrix table): its add, expiry and capacity rules are the
 * table's above, block for block; the match is one walk for all
 * candidates (sim_pfxidx_match_set).  Before round 4 it was a per-block
 * LRU map, kept as tests/route_aibrix_ref.c, against which
 * tests/router_equiv.sh checks whole simulations bit for bit.
 *
 * Cost per request: one map probe per run passed or block absent (a few
 * plus the request's new blocks), sequential compares and copies of the
 * prompt's hashes, O(R) for the gate and the choice.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/pfxidx.h"
#include "models/routers/route_int.h"

#define AB_NONE UINT32_MAX

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

typedef struct aibrix {
    sim_pcg32 rng;
    uint32_t n_dest, words, block_size, signal;
    double factor, ttl_s;
    uint64_t gap, k_std;
    uint32_t cap;   /* table capacity, KV blocks */
    sim_pfxidx *px; /* the table */
    uint32_t *cnt;     /* scratch: request counts */
    uint32_t *match;   /* scratch: matched blocks per destination */
    uint64_t *alive, *cand; /* scratch bitsets */
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
    s->px = sim_pfxidx_create(s->cap, env->n_dest);
    if (!s->px)
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating the aibrix_prefix table");
    s->cnt = sim_xcalloc(env->n_dest, sizeof *s->cnt);
    s->match = sim_xcalloc(env->n_dest, sizeof *s->match);
    s->alive = sim_xcalloc(2 * (size_t)s->words, sizeof *s->alive);
    s->cand = s->alive + s->words;
    return SIM_OK;
}

static void aibrix_destroy(void *state)
{
    aibrix *s = state;
    sim_pfxidx_destroy(s->px);
    free(s->cnt);
    free(s->match);
    free(s->alive);
}

/* Least requests over every destination (faults: every live one), ties
 * uniformly at random. */
static uint32_t least(aibrix *s, const route_view *v)
{
    uint32_t best = 0, ties = 1;
    for (uint32_t d = 1; d < s->n_dest; d++) {
        if (route_view_down(v, d))
            continue;
        if (s->cnt[d] < s->cnt[best] || route_view_down(v, best)) {
            best = d;
            ties = 1;
        } else if (s->cnt[d] == s->cnt[best] && sim_pcg32_bounded(&s->rng, ++ties) == 0) {
            best = d;
        }
    }
    return best;
}

/* The default signal (inflight, the router's own counts) reads no scraped
 * metric: no scrape snapshot is taken for it (route.h,
 * ROUTE_READS_NO_METRICS). */
static unsigned aibrix_needs(const void *const *params)
{
    const aibrix_params *p = params[0];
    return p->signal == AB_SIGNAL_INFLIGHT ? ROUTE_READS_NO_METRICS : 0;
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
        if ((!gate || s->cnt[d] == mn) && !route_view_down(v, d)) /* faults: ready pods */
            s->cand[d / 64] |= 1ULL << (d % 64);

    /* Expire idle entries (least recently used first). */
    if (s->ttl_s > 0)
        sim_pfxidx_expire_idle(s->px, now, s->ttl_s);

    /* 2. Match: each candidate's leading blocks held. */
    uint32_t nb = r->prompt_tokens / s->block_size;
    if (nb > r->n_blocks)
        nb = r->n_blocks;
    memcpy(s->alive, s->cand, W * sizeof *s->alive);
    sim_pfxidx_match_set(s->px, r->blocks, nb, s->alive, s->match);

    /* 3. Choose. */
    uint32_t dest = AB_NONE;
    const double bound = mean + (double)s->k_std * sd;
    uint32_t best_pct = 0, best_cnt = 0, ties = 0;
    for (uint32_t w = 0; w < W; w++)
        for (uint64_t g = s->cand[w]; g; g &= g - 1) {
            const uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(g);
            const uint32_t m = s->match[d];
            if (m == 0)
                continue;
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
    if (dest == AB_NONE)
        dest = least(s, v);

    /* 4. Add every block for dest, in order. */
    sim_pfxidx_add(s->px, r->blocks, nb, dest, now);
    return dest;
}

const route_type route_aibrix_prefix = {
    .name = "aibrix_prefix",
    .help = "AIBrix prefix-cache: load gate, prefix-hash table match, mean + k std bound "
            "(router.aibrix_prefix)",
    .state_size = sizeof(aibrix),
    .sections = aibrix_sections,
    .needs = aibrix_needs,
    .create = aibrix_create,
    .route = aibrix_route,
    .destroy = aibrix_destroy,
};
