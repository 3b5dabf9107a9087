/*
 * sglang_cache_aware: the `cache_aware` policy of the SGLang model gateway
 * (sgl-router), re-implemented on crsim's token blocks.  Specification:
 * section `sglang_cache_aware` of docs/policies.md.  Reference read:
 * sgl-project/sglang sgl-router/src/policies/cache_aware.rs @026f853 (the
 * rule), sgl-router/src/tree.rs @0e6ed14 (the approximate tree), defaults
 * from sgl-router/py_src/sglang_router/router_args.py @083d601.
 *
 * Rule, per request r (prompt of L tokens, its m full prompt blocks):
 *  1. load(d) = requests this router replica has in flight at d
 *     (route_view.outstanding; sgl-router's Worker::load(), incremented at
 *     dispatch and decremented at completion).  With max and min over all
 *     destinations, the cluster is imbalanced iff
 *        max - min > balance_abs_threshold  and  max > balance_rel_threshold · min
 *     (both strict; the relative test in single precision, as the Rust
 *     code's f32).  Imbalanced: the least-loaded destination (ties: the
 *     lowest index, Rust's min_by_key), and r is still inserted into the
 *     tree for it.
 *  2. Balanced: match r's blocks in the tree; rate = matched blocks ·
 *     block_size / L.  rate > cache_threshold: the matched tenant (below);
 *     else the tenant with the smallest tree (ties: the lowest index).  r
 *     is inserted into the tree for the chosen destination.
 *  3. Every eviction_interval_s of simulated time (checked at the next
 *     decision), every tenant whose tree exceeds max_tree_size drops its
 *     least recently used leaves until it fits.
 *
 * Tree: one radix tree for all destinations ("tenants"), as tree.rs: every
 * node holds a run of consecutive block hashes (tree.rs: a run of
 * characters) and the set of tenants that sent a request through it, each
 * with its last access time.  A tenant's size is the number of tokens of
 * the nodes it is on (tree.rs: characters).  Because crsim's block hashes
 * are chained, the first hash of a node names its whole path, so one map
 * from a node's first hash to the node is the child index of every node;
 * matching costs one map lookup per node on the path plus a sequential
 * compare of the request's blocks.
 *
 * prefix_match picks "the first tenant" of the deepest matched node
 * (tree.rs: the first key of the node's DashMap, an order fixed by the
 * process's hasher, unrelated to load); crsim takes the lowest destination
 * index, a fixed order as well.  prefix_match also refreshes that tenant's
 * time on the matched path, whether or not it is then chosen (as tree.rs).
 *
 * Characters -> tokens: tree.rs counts characters; crsim sizes in tokens
 * at chars_per_token characters per token (default 4, OpenAI's rule of
 * thumb "one token is about 4 characters of English text", the ratio
 * chwbl uses), so max_tree_size 2^26 characters is 2^24 tokens.  The match
 * rate is a ratio and needs no conversion.
 *
 * Deviations: the part of a prompt after its last full block has no
 * content id in crsim, so it never matches (it counts in L) and is not
 * inserted; the tree's granularity is one KV block, not one character;
 * eviction runs at the first decision at or after each interval boundary
 * (sgl-router: a background thread sleeping eviction_interval wall
 * seconds); equal LRU times are evicted in (tenant, node) order; the
 * root holds every tenant and is never evicted (it has no size).
 *
 * Cost per request: O(nodes on the path · tenants per node) plus a
 * sequential compare of the prompt's blocks; an eviction pass is
 * O(E log E) over the tree's (node, tenant) entries, only when a tenant is
 * over its bound.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/u64map.h"
#include "models/routers/route_int.h"

#define SG_NONE UINT32_MAX
#define SG_ROOT 0u

typedef struct sglang_params {
    double cache_threshold;      /* match rate above which affinity wins, [0, 1] */
    int64_t balance_abs;         /* requests */
    double balance_rel;          /* ratio */
    double eviction_interval_s;  /* s; 0 = never evict */
    int64_t max_tree_chars;      /* characters per tenant */
    double chars_per_token;      /* characters per token */
} sglang_params;

static const sim_cfg_key sglang_schema[] = {
    {.path = "cache_threshold", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(sglang_params, cache_threshold), .min = 0, .max = 1, .def = "0.3",
     .help = "match rate (matched / prompt tokens) above which the best-matching worker wins; "
             "sgl-router --cache-threshold 0.3 (router_args.py)"},
    {.path = "balance_abs_threshold", .type = SIM_CFG_INT,
     .offset = offsetof(sglang_params, balance_abs), .min = 0, .max = 1e9, .def = "64",
     .unit = "requests",
     .help = "imbalanced iff max - min in-flight > this and max > balance_rel_threshold x min; "
             "sgl-router --balance-abs-threshold 64"},
    {.path = "balance_rel_threshold", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(sglang_params, balance_rel), .min = 0, .max = 1e9, .def = "1.5",
     .help = "relative part of the imbalance test; sgl-router --balance-rel-threshold 1.5"},
    {.path = "eviction_interval_s", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(sglang_params, eviction_interval_s), .min = 0, .max = 1e9, .def = "120",
     .unit = "s",
     .help = "period of the LRU trim of every tenant's tree to max_tree_size; 0 = never; "
             "sgl-router --eviction-interval-secs 120"},
    {.path = "max_tree_size", .type = SIM_CFG_INT,
     .offset = offsetof(sglang_params, max_tree_chars), .min = 0, .max = 1e15, .def = "67108864",
     .unit = "characters",
     .help = "tree size per tenant kept by the trim, characters (2^26, sgl-router "
             "--max-tree-size), converted to tokens at chars_per_token"},
    {.path = "chars_per_token", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(sglang_params, chars_per_token), .min = 0.01, .max = 1000, .def = "4",
     .help = "characters per token converting max_tree_size (OpenAI: ~4 characters of "
             "English per token)"},
    {0},
};

const route_section route__sec_sglang_cache_aware = {
    .prefix = "router.sglang_cache_aware", .schema = sglang_schema,
    .params_size = sizeof(sglang_params)};

static const route_section *const sglang_sections[] = {&route__sec_sglang_cache_aware, NULL};

/* One tenant on a node: destination, children of the node it is also on,
 * last access time. */
typedef struct sg_tent {
    uint32_t d;
    uint32_t kids;
    double t;
} sg_tent;

typedef struct sg_node {
    uint64_t *h;      /* the run of block hashes, owned (NULL for the root) */
    uint32_t len;     /* blocks in the run */
    uint32_t parent;  /* SG_NONE for the root; next free node when free */
    uint32_t nchild;
    uint32_t nt, ct;  /* tenants, capacity of tv */
    sg_tent *tv;
} sg_node;

typedef struct sg_heap_e {
    double t;
    uint32_t d, node;
} sg_heap_e;

typedef struct sglang {
    uint32_t n_dest, block_size;
    float rel;
    uint64_t abs;
    double thr, interval_s, next_evict_s, max_tokens;
    sg_node *nd;
    uint32_t n_cap, n_used, n_free;
    sim_u64map map;    /* first hash of a node -> node */
    uint64_t *size;    /* per tenant: tokens of the nodes it is on */
    uint32_t *path;    /* scratch: nodes of the matched path */
    uint32_t path_cap;
    sg_heap_e *heap;   /* scratch of the eviction pass */
    size_t heap_cap;
    uint64_t evictions; /* (node, tenant) entries evicted, for tests */
} sglang;

/* ---- tree primitives ---- */

static int tent_find(const sg_node *n, uint32_t d)
{
    for (uint32_t i = 0; i < n->nt; i++)
        if (n->tv[i].d == d)
            return (int)i;
    return -1;
}

static void tent_push(sg_node *n, uint32_t d, uint32_t kids, double t)
{
    if (n->nt == n->ct) {
        n->ct = n->ct ? 2 * n->ct : 2;
        n->tv = sim_xrealloc(n->tv, n->ct * sizeof *n->tv);
    }
    n->tv[n->nt++] = (sg_tent){d, kids, t};
}

/* Put tenant d on node x at time t (or refresh its time).  The parent must
 * already hold d (paths are filled top-down). */
static void tent_add(sglang *s, uint32_t x, uint32_t d, double t)
{
    sg_node *n = &s->nd[x];
    int i = tent_find(n, d);
    if (i >= 0) {
        n->tv[i].t = t;
        return;
    }
    tent_push(n, d, 0, t);
    s->size[d] += (uint64_t)n->len * s->block_size;
    if (n->parent != SG_NONE) {
        int j = tent_find(&s->nd[n->parent], d);
        if (j >= 0)
            s->nd[n->parent].tv[j].kids++;
    }
}

static uint32_t node_new(sglang *s)
{
    uint32_t x;
    if (s->n_free != SG_NONE) {
        x = s->n_free;
        s->n_free = s->nd[x].parent;
    } else {
        if (s->n_used == s->n_cap) {
            s->n_cap = s->n_cap ? 2 * s->n_cap : 1024;
            s->nd = sim_xrealloc(s->nd, s->n_cap * sizeof *s->nd);
        }
        x = s->n_used++;
    }
    memset(&s->nd[x], 0, sizeof s->nd[x]);
    s->nd[x].parent = SG_NONE;
    return x;
}

static void node_free(sglang *s, uint32_t x)
{
    sg_node *n = &s->nd[x];
    free(n->h);
    free(n->tv);
    memset(n, 0, sizeof *n);
    n->parent = s->n_free;
    s->n_free = x;
}

/* Split node c after its first k blocks (0 < k < len): a new node q with
 * the first k takes c's place under c's parent and holds c's tenants; c
 * keeps the rest below q.  Tenant sizes do not change.  Returns q. */
static uint32_t node_split(sglang *s, uint32_t c, uint32_t k)
{
    uint32_t q = node_new(s); /* may move s->nd */
    sg_node *cn = &s->nd[c], *qn = &s->nd[q];
    qn->h = sim_xcalloc(k, sizeof *qn->h);
    memcpy(qn->h, cn->h, k * sizeof *qn->h);
    qn->len = k;
    qn->parent = cn->parent;
    qn->nchild = 1;
    for (uint32_t i = 0; i < cn->nt; i++)
        tent_push(qn, cn->tv[i].d, 1, cn->tv[i].t);
    memmove(cn->h, cn->h + k, (cn->len - k) * sizeof *cn->h);
    cn->len -= k;
    cn->parent = q;
    sim_u64map_put(&s->map, qn->h[0], q);
    sim_u64map_put(&s->map, cn->h[0], c);
    return q;
}

/* ---- create / destroy ---- */

static int sglang_create(void *state, const route_env *env, const void *const *params)
{
    sglang *s = state;
    const sglang_params *p = params[0];
    if (env->n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "router: 0 destinations; sglang_cache_aware expects >= 1");
    if (env->block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "router.sglang_cache_aware: block size is 0; expected "
                         "the engine block size in tokens (> 0)");
    memset(s, 0, sizeof *s);
    s->n_dest = env->n_dest;
    s->block_size = env->block_size;
    s->thr = p->cache_threshold;
    s->abs = (uint64_t)p->balance_abs;
    s->rel = (float)p->balance_rel;
    s->interval_s = p->eviction_interval_s;
    s->next_evict_s = p->eviction_interval_s;
    s->max_tokens = (double)p->max_tree_chars / p->chars_per_token;
    s->n_free = SG_NONE;
    int rc = sim_u64map_init(&s->map, 1024);
    if (rc)
        return rc;
    s->size = sim_xcalloc(env->n_dest, sizeof *s->size);
    /* The root holds every tenant (sgl-router inserts "" for each worker). */
    uint32_t root = node_new(s);
    for (uint32_t d = 0; d < env->n_dest; d++)
        tent_push(&s->nd[root], d, 0, 0.0);
    return SIM_OK;
}

static void sglang_destroy(void *state)
{
    sglang *s = state;
    for (uint32_t x = 0; x < s->n_used; x++) {
        free(s->nd[x].h);
        free(s->nd[x].tv);
    }
    free(s->nd);
    free(s->size);
    free(s->path);
    free(s->heap);
    sim_u64map_fini(&s->map);
}

/* ---- eviction (tree.rs evict_tenant_by_size) ---- */

static int heap_less(const sg_heap_e *a, const sg_heap_e *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->d != b->d)
        return a->d < b->d;
    return a->node < b->node;
}

static void heap_push(sglang *s, size_t *n, sg_heap_e e)
{
    if (*n == s->heap_cap) {
        s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 1024;
        s->heap = sim_xrealloc(s->heap, s->heap_cap * sizeof *s->heap);
    }
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!heap_less(&e, &s->heap[up]))
            break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = e;
}

static sg_heap_e heap_pop(sglang *s, size_t *n)
{
    sg_heap_e top = s->heap[0], last = s->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= *n)
            break;
        if (l + 1 < *n && heap_less(&s->heap[l + 1], &s->heap[l]))
            l++;
        if (!heap_less(&s->heap[l], &last))
            break;
        s->heap[i] = s->heap[l];
        i = l;
    }
    if (*n)
        s->heap[i] = last;
    return top;
}

static void sglang_evict(sglang *s)
{
    int over = 0;
    for (uint32_t d = 0; d < s->n_dest; d++)
        over |= (double)s->size[d] > s->max_tokens;
    if (!over)
        return;
    size_t n = 0;
    for (uint32_t x = 1; x < s->n_used; x++) {
        const sg_node *nd = &s->nd[x];
        if (nd->len == 0)
            continue; /* free */
        for (uint32_t i = 0; i < nd->nt; i++)
            if (nd->tv[i].kids == 0 && (double)s->size[nd->tv[i].d] > s->max_tokens)
                heap_push(s, &n, (sg_heap_e){nd->tv[i].t, nd->tv[i].d, x});
    }
    while (n > 0) {
        sg_heap_e e = heap_pop(s, &n);
        if ((double)s->size[e.d] <= s->max_tokens)
            continue;
        sg_node *nd = &s->nd[e.node];
        int i = tent_find(nd, e.d);
        if (i < 0)
            continue;
        s->size[e.d] -= (uint64_t)nd->len * s->block_size;
        nd->tv[i] = nd->tv[--nd->nt];
        s->evictions++;
        const uint32_t par = nd->parent;
        int j = tent_find(&s->nd[par], e.d);
        if (j >= 0)
            s->nd[par].tv[j].kids--;
        if (nd->nt == 0 && nd->nchild == 0) {
            sim_u64map_del(&s->map, nd->h[0]);
            s->nd[par].nchild--;
            node_free(s, e.node);
        }
        if (par != SG_ROOT && j >= 0 && s->nd[par].tv[j].kids == 0)
            heap_push(s, &n, (sg_heap_e){s->nd[par].tv[j].t, e.d, par});
    }
}

/* ---- routing ---- */

static uint32_t sglang_route(void *state, const wl_request *r, const route_view *v)
{
    sglang *s = state;
    const double now = v->now_s;
    if (s->interval_s > 0 && now >= s->next_evict_s) {
        sglang_evict(s);
        while (s->next_evict_s <= now)
            s->next_evict_s += s->interval_s;
    }

    /* 1. Load gate on this replica's in-flight counts. */
    uint32_t mx = 0, mn = UINT32_MAX, amin = 0;
    for (uint32_t d = 0; d < v->n_dest; d++) {
        if (route_view_down(v, d)) /* faults: unhealthy workers leave the pool */
            continue;
        const uint32_t x = v->outstanding[d];
        if (x > mx)
            mx = x;
        if (x < mn) {
            mn = x;
            amin = d;
        }
    }
    const int imbalanced = (uint64_t)(mx - mn) > s->abs && (float)mx > (float)mn * s->rel;

    /* 2. Match the prompt's full blocks. */
    uint32_t nb = r->prompt_tokens / s->block_size;
    if (nb > r->n_blocks)
        nb = r->n_blocks;
    if (nb > s->path_cap) {
        s->path_cap = nb > 2 * s->path_cap ? nb : 2 * s->path_cap;
        s->path = sim_xrealloc(s->path, s->path_cap * sizeof *s->path);
    }
    uint32_t i = 0, np = 0, partial = 0, cur = SG_ROOT;
    while (i < nb) {
        const uint32_t c = sim_u64map_get(&s->map, r->blocks[i]);
        if (c == SIM_U64MAP_NONE || s->nd[c].parent != cur)
            break;
        const sg_node *cn = &s->nd[c];
        const uint32_t lim = cn->len < nb - i ? cn->len : nb - i;
        const uint32_t k = sim_chain_common(cn->h, r->blocks + i, lim); /* >= 1 */
        s->path[np++] = c;
        i += k;
        cur = c;
        if (k < cn->len) {
            partial = k;
            break;
        }
    }
    const uint32_t matched = i;

    uint32_t dest;
    if (imbalanced) {
        dest = amin;
    } else {
        /* The deepest matched node's first tenant; refresh its path. */
        const sg_node *deep = &s->nd[cur];
        uint32_t ten = SG_NONE;
        for (uint32_t t = 0; t < deep->nt; t++)
            if (deep->tv[t].d < ten && !route_view_down(v, deep->tv[t].d)) /* faults */
                ten = deep->tv[t].d;
        if (ten != SG_NONE)
            for (uint32_t x = cur; x != SG_NONE; x = s->nd[x].parent) {
                int j = tent_find(&s->nd[x], ten);
                if (j >= 0)
                    s->nd[x].tv[j].t = now;
            }
        const double rate = (double)matched * s->block_size / (double)r->prompt_tokens;
        if (rate > s->thr && ten != SG_NONE) {
            dest = ten;
        } else {
            dest = 0;
            for (uint32_t d = 1; d < s->n_dest; d++) /* faults: live ones only */
                if (!route_view_down(v, d) &&
                    (s->size[d] < s->size[dest] || route_view_down(v, dest)))
                    dest = d;
        }
    }

    /* 3. Insert the prompt for dest (tree.rs insert). */
    tent_add(s, SG_ROOT, dest, now);
    uint32_t last = SG_ROOT;
    for (uint32_t j = 0; j < np; j++) {
        uint32_t x = s->path[j];
        if (j + 1 == np && partial)
            x = node_split(s, x, partial);
        tent_add(s, x, dest, now);
        last = x;
    }
    if (matched < nb) {
        const uint32_t x = node_new(s);
        sg_node *n = &s->nd[x];
        n->len = nb - matched;
        n->h = sim_xcalloc(n->len, sizeof *n->h);
        memcpy(n->h, r->blocks + matched, n->len * sizeof *n->h);
        n->parent = last;
        s->nd[last].nchild++;
        sim_u64map_put(&s->map, n->h[0], x);
        tent_add(s, x, dest, now);
    }
    return dest;
}

const route_type route_sglang_cache_aware = {
    .name = "sglang_cache_aware",
    .help = "SGLang gateway cache_aware: balance gate on own in-flight, else approximate "
            "prefix tree (router.sglang_cache_aware)",
    .state_size = sizeof(sglang),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = sglang_sections,
    .create = sglang_create,
    .route = sglang_route,
    .destroy = sglang_destroy,
};

/* For tests (tests/test_route_production.c): tokens of tenant d's tree and
 * the (node, tenant) entries evicted so far. */
uint64_t route__sglang_tree_tokens(const void *state, uint32_t d);
uint64_t route__sglang_tree_tokens(const void *state, uint32_t d)
{
    return ((const sglang *)state)->size[d];
}
uint64_t route__sglang_evictions(const void *state);
uint64_t route__sglang_evictions(const void *state)
{
    return ((const sglang *)state)->evictions;
}
