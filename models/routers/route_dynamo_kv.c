/*
 * dynamo_kv: NVIDIA Dynamo's KV router (DefaultWorkerSelector), re-
 * implemented from ai-dynamo/dynamo lib/kv-router/src/scheduling/
 * selector.rs @ccd1706e (the cost and the sampling) and the router's
 * ActiveSequences / KvIndexer / ApproxKvIndexer (what it tracks); defaults
 * from Dynamo's router documentation (docs/architecture/kv_cache_routing.md).
 * docs/policies.md lists every choice and deviation.
 *
 * For each worker d the router computes a cost ("logit", lower is better)
 *
 *     logit_d = overlap_score_weight * prefill_d / block_size + decode_d
 *
 * where prefill_d = the prompt tokens the router believes are still being
 * prefilled at d (its own dispatched requests whose first token it has not
 * seen) + this request's tokens not cached at d, and decode_d = the KV
 * blocks of the router's in-flight requests at d + this request's new
 * blocks there.  "Cached at d" comes from the router's index of d's
 * blocks: fed by engine KV events (use_kv_events, the default), or, without
 * events, by its own decisions (the blocks of every request routed to d,
 * which expire ttl_s after their last use, as ApproxKvIndexer).  At
 * router_temperature 0 the lowest logit wins, ties to the worker whose
 * index holds fewer blocks, remaining ties uniformly at random; above 0 the
 * worker is drawn with probability proportional to
 * exp(-(logit - min) / ((max - min) * T)) (all equal: uniform).
 *
 * Cost per request: with events and up to 64 workers (round 13), the
 * index keeps each worker's cache as runs of chained blocks
 * (route__kvidx_create_events, "event mode" in models/routers/route_kvidx.c):
 * per KV event O(1) map operations per run started, extended or
 * shortened plus a sequential copy, and per request one probe per block
 * where some worker's run parts from the request's blocks plus a probe
 * and a compare per run met (the workers' caches are closed under
 * prefixes); beyond 64 workers a per-block index, O(log n) probes per
 * distinct overlap by bisection and O(blocks) updates per event; and
 * O(workers) for the logits.  Without events, the decision-fed
 * index is route__kvlru (per-worker queues of block runs; round 4), equal
 * to the per-block index of tests/route_dynamo_kv_ref.c and
 * tests/route_kvidx_ref.c (tests/router_equiv.sh).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "models/routers/route_int.h"
#include "sim/core/error.h"
#include "sim/core/u64map.h"

typedef struct dyn_params {
    double overlap_score_weight; /* >= 0 */
    double router_temperature;   /* >= 0; 0 = argmin */
    bool use_kv_events;
    double ttl_s;                /* block expiry without events, s (> 0) */
} dyn_params;

static const sim_cfg_key dyn_schema[] = {
    {.path = "overlap_score_weight", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(dyn_params, overlap_score_weight), .min = 0, .max = 1e6, .def = "1",
     .help = "weight of the prefill blocks in the cost (Dynamo --kv-overlap-score-weight, "
             "default 1); 0 = load only"},
    {.path = "router_temperature", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(dyn_params, router_temperature), .min = 0, .max = 1e6, .def = "0",
     .help = "softmax temperature over the range-normalised costs (Dynamo "
             "--router-temperature, default 0 = lowest cost wins)"},
    {.path = "use_kv_events", .type = SIM_CFG_BOOL,
     .offset = offsetof(dyn_params, use_kv_events), .def = "true",
     .help = "index fed by engine KV events (Dynamo default --kv-events); false = by its own "
             "decisions, blocks expiring after ttl_s (ApproxKvIndexer)"},
    {.path = "ttl_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(dyn_params, ttl_s), .min = 0,
     .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = "120", .unit = "s",
     .help = "without KV events: a routed block is forgotten this long after its last use "
             "(Dynamo ApproxKvIndexer, 120 s)"},
    {0},
};

const route_section route__sec_dynamo_kv = {.prefix = "router.dynamo_kv", .schema = dyn_schema,
                                            .params_size = sizeof(dyn_params)};

static const route_section *const dyn_sections[] = {&route__sec_dynamo_kv, NULL};

/* A request this router dispatched and has not seen complete. */
typedef struct dyn_req {
    uint32_t dest;
    uint32_t prefill;  /* its uncached tokens counted in pend[dest] (0 once done) */
    uint32_t blocks;   /* its new blocks counted in dblk[dest] */
    uint32_t next;     /* free list */
} dyn_req;

typedef struct dynamo_kv {
    dyn_params p;
    uint32_t n_dest, block_size;
    sim_pcg32 rng;
    route__kvidx *idx; /* the index read (with events: its own; without: lru's) */
    route__kvlru *lru; /* without events: the decision-fed index */
    uint64_t *pend;  /* per worker: prefill tokens believed pending */
    uint64_t *dblk;  /* per worker: KV blocks of in-flight requests */
    uint32_t *len;   /* scratch: overlap blocks per worker */
    double *logit;   /* scratch */
    uint32_t *tied;  /* scratch */
    sim_u64map reqs; /* request id -> slot */
    dyn_req *rq;
    uint32_t n_rq, cap_rq, rq_free;
} dynamo_kv;

static unsigned dyn_needs(const void *const *params)
{
    const dyn_params *p = params[0];
    return p->use_kv_events ? ROUTE_NEEDS_KV_EVENTS : 0;
}

static void dyn_destroy(void *state)
{
    dynamo_kv *s = state;
    if (s->lru)
        route__kvlru_destroy(s->lru);
    else
        route__kvidx_destroy(s->idx);
    free(s->pend);
    free(s->dblk);
    free(s->len);
    free(s->logit);
    free(s->tied);
    free(s->rq);
    sim_u64map_fini(&s->reqs);
}

static int dyn_create(void *state, const route_env *env, const void *const *params)
{
    dynamo_kv *s = state;
    s->p = *(const dyn_params *)params[0];
    s->n_dest = env->n_dest;
    s->block_size = env->block_size ? env->block_size : 16;
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    if (s->p.use_kv_events) { /* at most the engines' pools */
        s->idx = route__kvidx_create_events(env->n_dest, (uint64_t)env->n_dest * env->pool_blocks);
    } else {
        s->lru = route__kvlru_create(env->n_dest, 0, true);
        s->idx = route__kvlru_index(s->lru);
    }
    s->pend = sim_xcalloc(env->n_dest, sizeof *s->pend);
    s->dblk = sim_xcalloc(env->n_dest, sizeof *s->dblk);
    s->len = sim_xcalloc(env->n_dest, sizeof *s->len);
    s->logit = sim_xcalloc(env->n_dest, sizeof *s->logit);
    s->tied = sim_xcalloc(env->n_dest, sizeof *s->tied);
    s->rq_free = UINT32_MAX;
    if (sim_u64map_init(&s->reqs, 256)) {
        dyn_destroy(s);
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating the dynamo_kv router");
    }
    return SIM_OK;
}

/* Full prompt blocks of r (the index and the events know full blocks). */
static inline uint32_t prompt_blocks(const dynamo_kv *s, const wl_request *r)
{
    const uint32_t full = r->prompt_tokens / s->block_size;
    return full < r->n_blocks ? full : r->n_blocks;
}

/* Draw from the softmax of -(logit - min) / ((max - min) T) (selector.rs
 * softmax_sample); equal logits: uniform. */
static uint32_t softmax_pick(dynamo_kv *s)
{
    const uint32_t n = s->n_dest;
    double lo = INFINITY, hi = -INFINITY;
    for (uint32_t d = 0; d < n; d++) {
        lo = fmin(lo, s->logit[d]);
        if (s->logit[d] < INFINITY) /* faults: a down worker's logit is +inf */
            hi = fmax(hi, s->logit[d]);
    }
    const double u = sim_pcg32_uniform(&s->rng);
    if (lo == INFINITY) /* faults: every worker down */
        return 0;
    if (lo == hi) { /* uniform over those at lo (all, without faults) */
        uint32_t m = 0;
        for (uint32_t d = 0; d < n; d++)
            m += s->logit[d] == lo;
        uint32_t k = (uint32_t)(u * m) < m ? (uint32_t)(u * m) : m - 1;
        for (uint32_t d = 0; d < n; d++)
            if (s->logit[d] == lo && k-- == 0)
                return d;
    }
    const double scale = 1.0 / ((hi - lo) * s->p.router_temperature);
    double sum = 0;
    for (uint32_t d = 0; d < n; d++)
        sum += exp(-(s->logit[d] - lo) * scale);
    double cum = 0;
    for (uint32_t d = 0; d < n; d++) {
        cum += exp(-(s->logit[d] - lo) * scale) / sum;
        if (u <= cum)
            return d;
    }
    return n - 1;
}

static uint32_t dyn_route(void *state, const wl_request *r, const route_view *v)
{
    dynamo_kv *s = state;
    const uint32_t bs = s->block_size, np = prompt_blocks(s, r);
    const uint32_t req_blocks = (r->prompt_tokens + bs - 1) / bs; /* isl.div_ceil(bs) */
    if (!s->p.use_kv_events)
        route__kvlru_expire(s->lru, v->now_s - s->p.ttl_s);
    route__kvidx_prefix(s->idx, r->blocks, np, s->len);
    for (uint32_t d = 0; d < s->n_dest; d++) {
        const uint64_t cached = (uint64_t)s->len[d] * bs;
        const uint64_t fresh = cached >= r->prompt_tokens ? 0 : r->prompt_tokens - cached;
        const double prefill = (double)(s->pend[d] + fresh);
        const double decode = (double)(s->dblk[d] + (req_blocks - s->len[d]));
        s->logit[d] = s->p.overlap_score_weight * prefill / (double)bs + decode;
        if (route_view_down(v, d)) /* faults: removed workers are no candidates */
            s->logit[d] = INFINITY;
    }
    uint32_t best;
    if (s->p.router_temperature > 0) {
        best = softmax_pick(s);
    } else {
        /* Lowest logit; ties to the smallest index ("tree size"), then
         * uniform among those still tied. */
        double lo = INFINITY;
        uint32_t nt = 0, tsz = UINT32_MAX;
        for (uint32_t d = 0; d < s->n_dest; d++) {
            const uint32_t z = route__kvidx_size(s->idx, d);
            if (s->logit[d] < lo || (s->logit[d] == lo && z < tsz)) {
                lo = s->logit[d];
                tsz = z;
                nt = 0;
            }
            if (s->logit[d] == lo && z == tsz)
                s->tied[nt++] = d;
        }
        best = nt == 1 ? s->tied[0] : s->tied[sim_pcg32_bounded(&s->rng, nt)];
    }
    /* Track the request (ActiveSequences.add_request). */
    const uint64_t cached = (uint64_t)s->len[best] * bs;
    const uint32_t fresh = cached >= r->prompt_tokens ? 0 : r->prompt_tokens - (uint32_t)cached;
    uint32_t slot;
    if (s->rq_free != UINT32_MAX) {
        slot = s->rq_free;
        s->rq_free = s->rq[slot].next;
    } else {
        if (s->n_rq == s->cap_rq) {
            s->cap_rq = s->cap_rq ? 2 * s->cap_rq : 256;
            s->rq = sim_xrealloc(s->rq, s->cap_rq * sizeof *s->rq);
        }
        slot = s->n_rq++;
    }
    s->rq[slot] = (dyn_req){.dest = best, .prefill = fresh, .blocks = req_blocks - s->len[best]};
    sim_u64map_put(&s->reqs, r->id, slot);
    s->pend[best] += fresh;
    s->dblk[best] += s->rq[slot].blocks;
    if (!s->p.use_kv_events) /* ApproxKvIndexer: the routed blocks, fresh TTL */
        route__kvlru_add(s->lru, best, r->blocks, np, v->now_s);
    return best;
}

static void dyn_first_token(void *state, const wl_request *r, uint32_t dest, double now_s)
{
    dynamo_kv *s = state;
    (void)dest;
    (void)now_s;
    const uint32_t slot = sim_u64map_get(&s->reqs, r->id);
    if (slot == SIM_U64MAP_NONE)
        return;
    dyn_req *q = &s->rq[slot];
    s->pend[q->dest] -= q->prefill; /* mark_prefill_completed */
    q->prefill = 0;
}

static void dyn_complete(void *state, const wl_request *r, uint32_t dest, const route_done *done)
{
    dynamo_kv *s = state;
    (void)dest;
    (void)done;
    const uint32_t slot = sim_u64map_get(&s->reqs, r->id);
    if (slot == SIM_U64MAP_NONE)
        return;
    dyn_req *q = &s->rq[slot];
    s->pend[q->dest] -= q->prefill;
    s->dblk[q->dest] -= q->blocks;
    sim_u64map_del(&s->reqs, r->id);
    q->next = s->rq_free;
    s->rq_free = slot;
}

static void dyn_kv_event(void *state, const route_kv_event *ev)
{
    dynamo_kv *s = state;
    if (!s->p.use_kv_events)
        return;
    route__kvidx_event(s->idx, ev->dest, ev->kind == ROUTE_KV_STORED, ev->parent, ev->hashes,
                       ev->n);
}

const route_type route_dynamo_kv = {
    .name = "dynamo_kv",
    .help = "NVIDIA Dynamo KV router: lowest overlap_weight x prefill blocks + decode blocks "
            "(router.dynamo_kv); index from engine KV events",
    .state_size = sizeof(dynamo_kv),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = dyn_sections,
    .needs = dyn_needs,
    .create = dyn_create,
    .route = dyn_route,
    .on_complete = dyn_complete,
    .destroy = dyn_destroy,
    .on_kv_event = dyn_kv_event,
    .on_first_token = dyn_first_token,
};
