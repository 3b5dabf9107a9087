/*
 * The regime diagnostic (see diag.h, docs/diagnostic.md).
 *
 * Stream form: one LRU block cache per virtual destination; virtual
 * destinations 0..R−1 are the affinity placement, R..2R−1 the spreading
 * placement, so both run in one pass over the stream.  Cached blocks are
 * nodes (block hash, virtual destination, last touch, LRU links) in one
 * array; the shared hash map (sim/core/u64map.h) maps (hash, destination)
 * to a node.  An
 * insertion into a full destination reuses its coldest node, so memory
 * stays bounded by the live cache contents.
 *
 * Rates form: Che's characteristic time by Brent root finding.
 */
#include "workloads/diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/prefetch.h"
#include "sim/core/u64map.h"

#define NIL 0u /* node index meaning "none"; node 0 is never used */

/* The tables of 2R destinations do not fit in any cache, so the loops
 * over a request's blocks prefetch (SIM_PREFETCH) this many units ahead. */
enum { PF_DIST = 16 };

/* A cached block of one virtual destination.  `k` is the block hash mixed
 * with the destination (see key_of); two different (hash, destination)
 * pairs share a k only on a 64-bit collision, the same risk as the
 * chained block hashes themselves. */
typedef struct node {
    uint64_t k;      /* table key */
    uint32_t v;      /* virtual destination */
    uint32_t prev;   /* towards the warm end (NIL at the head) */
    uint32_t next;   /* towards the cold end (NIL at the tail) */
    uint32_t size;   /* blocks of the unit (1 unless opts.group > 1) */
    double t;        /* last touch, s */
} node;

typedef struct vdest {
    uint32_t head, tail; /* warm end, cold end */
    uint64_t count;      /* cached blocks (including pinned ones) */
    double age_sum;      /* Σ age of evicted blocks, s */
    uint64_t evictions;
} vdest;

typedef struct lru {
    node *nd;
    uint32_t n_nodes, cap_nodes;   /* used (incl. node 0), allocated */
    uint32_t free_head;            /* chain (by .next) of reusable nodes */
    sim_u64map tab;                /* key -> node */
    vdest *vd;
    uint64_t cap_blocks;           /* per destination */
} lru;

#define mix sim_hash_mix64

static uint64_t key_of(uint64_t h, uint32_t v)
{
    return sim_hash_pair(h, v);
}

static uint32_t find(const lru *c, uint64_t k)
{
    const uint32_t i = sim_u64map_get(&c->tab, k);
    return i == SIM_U64MAP_NONE ? NIL : i;
}

static void list_unlink(lru *c, uint32_t i)
{
    node *n = &c->nd[i];
    vdest *d = &c->vd[n->v];
    if (n->prev != NIL)
        c->nd[n->prev].next = n->next;
    else
        d->head = n->next;
    if (n->next != NIL)
        c->nd[n->next].prev = n->prev;
    else
        d->tail = n->prev;
}

static void list_push_head(lru *c, uint32_t i)
{
    node *n = &c->nd[i];
    vdest *d = &c->vd[n->v];
    n->prev = NIL;
    n->next = d->head;
    if (d->head != NIL)
        c->nd[d->head].prev = i;
    else
        d->tail = i;
    d->head = i;
}

/* Insert the unit with key k (`size` blocks) touched at time t at the
 * warm end of v, evicting the coldest unpinned units of v until it fits
 * (if it cannot fit beside the pinned units — a request longer than the
 * cache — it is not cached). */
static int insert(lru *c, uint64_t k, uint32_t size, uint32_t v, double t)
{
    vdest *d = &c->vd[v];
    uint32_t i = NIL;
    while (d->count + size > c->cap_blocks) {
        if (i != NIL) { /* evicted more than one: keep only the last node */
            c->nd[i].next = c->free_head;
            c->free_head = i;
        }
        i = d->tail;
        if (i == NIL)
            return SIM_OK;
        /* The next victims are i's predecessors: start loading them. */
        uint32_t p = c->nd[i].prev;
        if (p != NIL) {
            sim_u64map_prefetch(&c->tab, c->nd[p].k);
            if (c->nd[p].prev != NIL)
                SIM_PREFETCH(&c->nd[c->nd[p].prev]);
        }
        d->age_sum += t - c->nd[i].t;
        d->evictions++;
        list_unlink(c, i);
        sim_u64map_del(&c->tab, c->nd[i].k);
        d->count -= c->nd[i].size;
    }
    if (i == NIL && c->free_head != NIL) {
        i = c->free_head;
        c->free_head = c->nd[i].next;
    }
    if (i == NIL) {
        if (c->n_nodes == c->cap_nodes) {
            if (c->cap_nodes >= UINT32_MAX / 2)
                return SIM_ERROR(SIM_ENOMEM, "regime diagnostic: more than 2^31 cached blocks");
            uint32_t cap = 2 * c->cap_nodes;
            node *nd = realloc(c->nd, cap * sizeof *nd);
            if (!nd)
                return SIM_ERROR(SIM_ENOMEM, "out of memory in the regime diagnostic "
                                 "(%u cached blocks)", cap);
            c->nd = nd;
            c->cap_nodes = cap;
        }
        i = c->n_nodes++;
    }
    c->nd[i] = (node){.k = k, .v = v, .size = size, .t = t};
    sim_u64map_put(&c->tab, k, i);
    list_push_head(c, i);
    d->count += size;
    return SIM_OK;
}

/* Key of unit u (blocks [u·g, min((u+1)·g, n))) of request r on v: the
 * chained hash of the unit's last block identifies the whole prefix up to
 * its end. */
static uint64_t unit_key(const wl_request *r, uint32_t u, uint32_t g, uint32_t v)
{
    uint64_t end = (uint64_t)(u + 1) * g;
    return key_of(r->blocks[(end < r->n_blocks ? end : r->n_blocks) - 1], v);
}

/* Serve request r on virtual destination v with units of g blocks:
 * returns the hit in blocks (or -1 on error, with the error recorded).
 *
 * The longest cached prefix is found by probing until the first miss.
 * No later unit can be cached then: every request that touches a unit
 * touches its parent too and leaves the parent warmer (below), so a child
 * is always evicted before its parent.  The prefix units are pinned
 * (taken out of the LRU list, as the engine pins a matched prefix) while
 * the missing ones are inserted deepest first, evicting from the cold
 * end; then the prefix goes back to the warm end deepest first, so the
 * first unit ends warmest, like the engine's tail-first release. */
static int64_t serve(lru *c, const wl_request *r, uint32_t v, uint32_t block_size, uint32_t g,
                     uint32_t *found)
{
    const uint32_t n = r->n_blocks;
    const uint32_t nu = n / g + (n % g != 0);
    uint32_t m = 0;
    while (m < nu) {
        if (m + PF_DIST < nu)
            sim_u64map_prefetch(&c->tab, unit_key(r, m + PF_DIST, g, v));
        uint32_t k = find(c, unit_key(r, m, g, v));
        if (k == NIL)
            break;
        found[m++] = k;
        list_unlink(c, k);
    }
    for (uint32_t u = nu; u-- > m;) {
        if (u >= m + PF_DIST)
            sim_u64map_prefetch(&c->tab, unit_key(r, u - PF_DIST, g, v));
        uint32_t size = u + 1 < nu || n % g == 0 ? g : n % g;
        if (insert(c, unit_key(r, u, g, v), size, v, r->arrival_s))
            return -1;
    }
    uint32_t hit = 0;
    for (uint32_t u = m; u-- > 0;) {
        c->nd[found[u]].t = r->arrival_s;
        hit += c->nd[found[u]].size;
        list_push_head(c, found[u]);
    }
    /* Leave at least one prompt token to compute, as the engine does. */
    uint32_t lim = r->prompt_tokens ? (r->prompt_tokens - 1) / block_size : 0;
    return hit < lim ? hit : lim;
}

static uint32_t default_map(uint64_t key, uint64_t salt, uint32_t n_dest)
{
    return (uint32_t)(mix(key ^ mix(salt ^ 0x6b657973ULL)) % n_dest);
}

int wl_diag_stream(wl_source src, uint64_t max, uint32_t block_size, uint32_t n_dest,
                   uint64_t pool_tokens, wl_diag *out)
{
    wl_diag_opts o = {.max = max, .block_size = block_size, .n_dest = n_dest,
                      .pool_tokens = pool_tokens};
    return wl_diag_stream_opts(src, &o, out);
}

int wl_diag_stream_opts(wl_source src, const wl_diag_opts *o, wl_diag *out)
{
    memset(out, 0, sizeof *out);
    if (o->block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: block size 0; expected at least 1 token");
    if (o->n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: 0 destinations; expected at least 1");
    if (o->pool_tokens < o->block_size)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: KV pool of %llu tokens per destination "
                         "is smaller than one %u-token block; expected a pool of at least one "
                         "block", (unsigned long long)o->pool_tokens, o->block_size);
    if (!(o->warmup_s >= 0) || !isfinite(o->warmup_s))
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: warm-up %g s; expected a finite "
                         "number >= 0", o->warmup_s);
    if (o->n_dest > UINT32_MAX / 2)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: %u destinations; expected at most %u",
                         o->n_dest, UINT32_MAX / 2);
    const uint32_t R = o->n_dest;
    const uint32_t g = o->group ? o->group : 1;
    lru c = {.cap_blocks = o->pool_tokens / o->block_size};
    c.vd = calloc(2 * (size_t)R, sizeof *c.vd);
    c.nd = malloc(4096 * sizeof *c.nd);
    c.n_nodes = 1; /* node 0 is NIL */
    c.cap_nodes = 4096;
    uint32_t *found = NULL;
    uint32_t found_cap = 0;
    int rc = SIM_OK;
    if (!c.vd || !c.nd || sim_u64map_init(&c.tab, 4096)) {
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory in the regime diagnostic");
        goto done;
    }
    double first = 0, prev = 0;
    uint64_t spread_salt = mix(o->salt ^ 0x737072656164ULL);
    wl_request r;
    wl_diag d = {.n_dest = R, .pool_tokens = o->pool_tokens};
    int got = 0;
    while ((!o->max || d.requests < o->max) && (got = src.next(src.state, &r)) > 0) {
        if (d.requests == 0)
            first = r.arrival_s;
        else if (r.arrival_s < prev) {
            rc = SIM_ERROR(SIM_EINVAL, "regime diagnostic: request %llu arrives at %.9g s, "
                           "before its predecessor (%.9g s); expected non-decreasing arrivals",
                           (unsigned long long)r.id, r.arrival_s, prev);
            wl_request_fini(&r);
            goto done;
        }
        prev = r.arrival_s;
        d.requests++;
        if (r.n_blocks > found_cap) {
            uint32_t cap = r.n_blocks > 2 * found_cap ? r.n_blocks : 2 * found_cap;
            uint32_t *f = realloc(found, cap * sizeof *f);
            if (!f) {
                wl_request_fini(&r);
                rc = SIM_ERROR(SIM_ENOMEM, "out of memory in the regime diagnostic");
                goto done;
            }
            found = f;
            found_cap = cap;
        }
        uint32_t va = o->affinity_map ? o->affinity_map(o->affinity_ctx, r.key, R)
                                      : default_map(r.key, o->salt, R);
        if (va >= R) {
            rc = SIM_ERROR(SIM_EINVAL, "regime diagnostic: the affinity map sent key %llu to "
                           "destination %u; expected one below %u",
                           (unsigned long long)r.key, va, R);
            wl_request_fini(&r);
            goto done;
        }
        uint32_t vs = R + (uint32_t)(mix(r.id ^ spread_salt) % R);
        int64_t ha = serve(&c, &r, va, o->block_size, g, found);
        int64_t hs = ha < 0 ? -1 : serve(&c, &r, vs, o->block_size, g, found);
        if (hs < 0) {
            wl_request_fini(&r);
            rc = SIM_ENOMEM;
            goto done;
        }
        if (r.arrival_s >= o->warmup_s) {
            d.counted++;
            d.prompt_tokens += r.prompt_tokens;
            d.affinity_hit_tokens += (uint64_t)ha * o->block_size;
            d.spread_hit_tokens += (uint64_t)hs * o->block_size;
        }
        wl_request_fini(&r);
    }
    /* A stream error (e.g. no memory for a request's blocks). */
    if (got < 0 && rc == SIM_OK)
        rc = -got;
    double age[2] = {0, 0};
    uint64_t ev[2] = {0, 0};
    for (uint32_t v = 0; v < 2 * R; v++) {
        age[v >= R] += c.vd[v].age_sum;
        ev[v >= R] += c.vd[v].evictions;
    }
    d.affinity_evictions = ev[0];
    d.spread_evictions = ev[1];
    d.affinity_window_s = ev[0] ? age[0] / (double)ev[0] : INFINITY;
    d.spread_window_s = ev[1] ? age[1] / (double)ev[1] : INFINITY;
    if (d.prompt_tokens) {
        d.affinity_hit = (double)d.affinity_hit_tokens / (double)d.prompt_tokens;
        d.spread_hit = (double)d.spread_hit_tokens / (double)d.prompt_tokens;
    }
    d.recoverable = d.affinity_hit - d.spread_hit;
    d.span_s = d.requests ? prev - first : 0;
    *out = d;
done:
    free(found);
    free(c.nd);
    sim_u64map_fini(&c.tab);
    free(c.vd);
    return rc;
}

/* ---- rates form ---------------------------------------------------- */

typedef struct che {
    const double *rate, *prefix, *prompt;
    size_t n;
    double scale;   /* λ' = λ · scale (1 affinity, 1/R spreading) */
    double cap;     /* C_eff, tokens */
    double unique;  /* Σ λ'_b (L_b − P_b), tokens/s */
} che;

/* Che's occupancy at window T minus the capacity. */
static double che_fn(double T, void *p)
{
    const che *c = p;
    double s = 0;
    for (size_t b = 0; b < c->n; b++)
        if (c->rate[b] > 0)
            s += c->prefix[b] * -expm1(-c->rate[b] * c->scale * T);
    return s + T * c->unique - c->cap;
}

/* Solve for T (INFINITY when the cache never fills); returns SIM_OK or
 * SIM_ENOMEM. */
static int che_window(che *c, double *T)
{
    double full = 0, lmin = INFINITY;
    c->unique = 0;
    for (size_t b = 0; b < c->n; b++)
        if (c->rate[b] > 0) {
            full += c->prefix[b];
            c->unique += c->rate[b] * c->scale * (c->prompt[b] - c->prefix[b]);
            if (c->rate[b] * c->scale < lmin)
                lmin = c->rate[b] * c->scale;
        }
    if (c->unique <= 0 && full <= c->cap) {
        *T = INFINITY;
        return SIM_OK;
    }
    /* Bracket: f(0) = −cap < 0; grow hi until f(hi) > 0.  With unique
     * traffic f grows linearly; without it, f(T) → full − cap > 0 and
     * T ~ 50/λ_min gets within e^−50 of the limit. */
    double hi = 1.0 / (lmin * 1024.0);
    int k = 0;
    while (che_fn(hi, c) <= 0) {
        hi *= 2;
        if (++k > 2000 || !isfinite(hi)) {
            /* The limit is reached only at T = ∞ to double precision. */
            *T = INFINITY;
            return SIM_OK;
        }
    }
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!s)
        return SIM_ERROR(SIM_ENOMEM, "out of memory solving Che's fixed point");
    gsl_function F = {.function = che_fn, .params = c};
    /* f(0) < 0 < f(hi) and f is finite: set and iterate cannot fail. */
    gsl_root_fsolver_set(s, &F, 0.0, hi);
    double root = hi;
    for (int it = 0; it < 300; it++) {
        if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS)
            break;
        root = gsl_root_fsolver_root(s);
        if (gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s), 0,
                                   1e-12) == GSL_SUCCESS)
            break;
    }
    gsl_root_fsolver_free(s);
    *T = root;
    return SIM_OK;
}

static double che_hit(const che *c, double T)
{
    double num = 0, den = 0;
    for (size_t b = 0; b < c->n; b++) {
        if (!(c->rate[b] > 0))
            continue;
        double p = isinf(T) ? 1.0 : -expm1(-c->rate[b] * c->scale * T);
        num += c->rate[b] * c->prefix[b] * p;
        den += c->rate[b] * c->prompt[b];
    }
    return den > 0 ? num / den : 0;
}

static int bad_value(const char *what, size_t b, double x, const char *expect)
{
    return SIM_ERROR(SIM_EINVAL, "regime diagnostic: %s of key %zu is %g; expected %s", what, b,
                     x, expect);
}

int wl_diag_rates(const double *rate, const double *prefix_tokens, const double *prompt_tokens,
                  size_t n, uint32_t n_dest, uint64_t pool_tokens, wl_diag *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || !rate || !prefix_tokens || !prompt_tokens)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: no keys; expected at least one key "
                         "with a rate, a prefix and a prompt length");
    if (n_dest == 0)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: 0 destinations; expected at least 1");
    if (pool_tokens == 0)
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: KV pool of 0 tokens per destination; "
                         "expected at least 1");
    double total = 0;
    uint64_t active = 0;
    for (size_t b = 0; b < n; b++) {
        if (!(rate[b] >= 0) || !isfinite(rate[b]))
            return bad_value("rate", b, rate[b], "a finite number >= 0 (requests/s)");
        if (!(prefix_tokens[b] >= 0) || !isfinite(prefix_tokens[b]))
            return bad_value("prefix length", b, prefix_tokens[b],
                             "a finite number >= 0 (tokens)");
        if (!(prompt_tokens[b] >= 0) || !isfinite(prompt_tokens[b]))
            return bad_value("prompt length", b, prompt_tokens[b],
                             "a finite number >= 0 (tokens)");
        if (prefix_tokens[b] > prompt_tokens[b])
            return SIM_ERROR(SIM_EINVAL, "regime diagnostic: prefix of key %zu (%g tokens) is "
                             "longer than its mean prompt (%g tokens); expected prefix <= "
                             "prompt", b, prefix_tokens[b], prompt_tokens[b]);
        if (rate[b] > 0 && !(prompt_tokens[b] > 0))
            return bad_value("prompt length", b, prompt_tokens[b],
                             "a positive number of tokens for a key with a positive rate");
        total += rate[b];
        active += rate[b] > 0;
    }
    if (!(total > 0))
        return SIM_ERROR(SIM_EINVAL, "regime diagnostic: the %zu key rates sum to 0; expected "
                         "at least one positive rate (requests/s)", n);
    che aff = {.rate = rate, .prefix = prefix_tokens, .prompt = prompt_tokens, .n = n,
               .scale = 1.0, .cap = (double)n_dest * (double)pool_tokens};
    che spr = aff;
    spr.scale = 1.0 / n_dest;
    spr.cap = (double)pool_tokens;
    wl_diag d = {.n_dest = n_dest, .pool_tokens = pool_tokens, .requests = active,
                 .counted = n};
    int rc;
    if ((rc = che_window(&aff, &d.affinity_window_s)) ||
        (rc = che_window(&spr, &d.spread_window_s)))
        return rc;
    d.affinity_hit = che_hit(&aff, d.affinity_window_s);
    d.spread_hit = che_hit(&spr, d.spread_window_s);
    d.recoverable = d.affinity_hit - d.spread_hit;
    *out = d;
    return SIM_OK;
}
