/*
 * Router registry, the router configuration (every section's params
 * struct) and the consistent-hash ring that several routers share.
 */
#include "models/routers/route_int.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"

/* The registry: one line per router, in `crsim help policies` order.
 * X(NAME) names the route_type route_NAME (defined in its own file) whose
 * .name is "NAME". */
#define ROUTE_TYPES(X) \
    X(flat_lb)         \
    X(sticky)          \
    X(chwbl)           \
    X(dualmap)         \
    X(preble)          \
    X(cacheroute)      \
    X(cr_replicate)    \
    X(cr_affinity)     \
    X(sglang_cache_aware) \
    X(aibrix_prefix)      \
    X(dynamo_kv)          \
    X(llmd)               \
    X(round_robin)        \
    X(random)

/* The config sections, one line each, in canonical dump order (the order
 * of their keys in every stored config text: do not reorder).  X(NAME)
 * names the route_section route__sec_NAME (defined in the file of the
 * router that owns it).  A router that only reads existing sections adds
 * none. */
#define ROUTE_SECTIONS(X) \
    X(sticky)             \
    X(chwbl)              \
    X(cacheroute)         \
    X(dualmap)            \
    X(preble)             \
    X(flat_lb)            \
    X(sglang_cache_aware) \
    X(aibrix_prefix)      \
    X(dynamo_kv)          \
    X(llmd)

#define X_DECL_TYPE(n) extern const route_type route_##n;
#define X_REF_TYPE(n) &route_##n,
#define X_NAME(n) #n,
#define X_DECL_SEC(n) extern const route_section route__sec_##n;
#define X_REF_SEC(n) &route__sec_##n,
ROUTE_TYPES(X_DECL_TYPE)
ROUTE_SECTIONS(X_DECL_SEC)
const route_type *const route_registry[] = {ROUTE_TYPES(X_REF_TYPE) NULL};
const char *const route_names[] = {ROUTE_TYPES(X_NAME) NULL};
const route_section *const route_sections[] = {ROUTE_SECTIONS(X_REF_SEC) NULL};

void route_telemetry_fini(route_telemetry *t)
{
    free(t->iv);
    free(t->key);
    free(t->rate);
    free(t->kb);
    free(t->off);
    free(t->dest);
    memset(t, 0, sizeof *t);
}

const route_type *route_find(const char *name)
{
    for (size_t i = 0; route_registry[i]; i++)
        if (strcmp(route_registry[i]->name, name) == 0)
            return route_registry[i];
    return NULL;
}

void route_list(FILE *f)
{
    for (size_t i = 0; route_registry[i]; i++)
        fprintf(f, "  %-18s %s\n", route_registry[i]->name, route_registry[i]->help);
}

const char *route_where(const route_locate *loc, const char *key, char *buf, size_t n)
{
    if (loc && loc->fn)
        loc->fn(loc->ctx, key, buf, n);
    else
        snprintf(buf, n, "%s", key);
    return buf;
}

/* ---- the router configuration ---- */

struct route_config {
    void **block; /* per entry of route_sections */
    size_t n;
};

size_t route_config_n_sections(void)
{
    size_t n = 0;
    while (route_sections[n])
        n++;
    return n;
}

route_config *route_config_new(void)
{
    route_config *c = sim_xcalloc(1, sizeof *c);
    c->n = route_config_n_sections();
    c->block = sim_xcalloc(c->n ? c->n : 1, sizeof *c->block);
    for (size_t i = 0; i < c->n; i++)
        c->block[i] = sim_xcalloc(1, route_sections[i]->params_size ? route_sections[i]->params_size
                                                                    : 1);
    return c;
}

void route_config_free(route_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        sim_cfg_free(route_sections[i]->schema, c->block[i]);
        free(c->block[i]);
    }
    free(c->block);
    free(c);
}

size_t route_config_sections(const route_config *c, sim_cfg_section *out)
{
    size_t n = route_config_n_sections();
    for (size_t i = 0; i < n; i++)
        out[i] = (sim_cfg_section){route_sections[i]->prefix, route_sections[i]->schema,
                                   c ? c->block[i] : NULL};
    return n;
}

int route_config_bind(route_config *c, const sim_cfgdoc *d)
{
    sim_cfg_section *secs = sim_xcalloc(c->n ? c->n : 1, sizeof *secs);
    size_t n = route_config_sections(c, secs);
    int rc = sim_cfg_bind_sections(d, secs, n);
    free(secs);
    return rc;
}

int route_config_parse(const char *yaml, const char *name, route_config **out)
{
    *out = NULL;
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_parse_string(yaml, name, &d);
    route_config *c = route_config_new();
    if (rc == SIM_OK)
        rc = route_config_bind(c, d);
    sim_cfgdoc_destroy(d);
    if (rc) {
        route_config_free(c);
        return rc;
    }
    *out = c;
    return SIM_OK;
}

void route_config_args(const route_config *c, const route_type *rt,
                       const void *out[ROUTE_MAX_READS])
{
    memset(out, 0, ROUTE_MAX_READS * sizeof *out);
    for (size_t j = 0; rt->sections && rt->sections[j]; j++) {
        SIM_ALWAYS(j < ROUTE_MAX_READS);
        size_t i = 0;
        while (i < c->n && route_sections[i] != rt->sections[j])
            i++;
        SIM_ALWAYS(i < c->n); /* every section a router reads is registered */
        out[j] = c->block[i];
    }
}

int route_check(const route_type *rt, const route_config *c, const route_env *env,
                const route_locate *loc)
{
    if (!rt->check)
        return SIM_OK;
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    return rt->check(args, env, loc);
}

unsigned route_needs(const route_type *rt, const route_config *c)
{
    if (!rt->needs)
        return 0;
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    return rt->needs(args);
}

double route_interval_s(const route_type *rt, const route_config *c)
{
    if (!rt->interval_s)
        return 0;
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    return rt->interval_s(args);
}

/* ---- helpers shared by router files (route_int.h) ---- */

int route__check_ring(uint32_t n_dest, int64_t vnodes, const char *key,
                      const route_locate *loc)
{
    if (vnodes >= 1 && (double)n_dest * (double)vnodes <= (double)UINT32_MAX)
        return SIM_OK;
    char at[512];
    return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is %lld with %u destinations; expected at most "
                     "2^32-1 ring positions (destinations x vnodes)",
                     route_where(loc, key, at, sizeof at), key, (long long)vnodes, n_dest);
}

double route__ttft_slo(const route__dualmap_params *p, const route_env *env)
{
    return p->ttft_slo_s > 0 ? p->ttft_slo_s : env->ttft_slo_s;
}

typedef struct ring_entry {
    uint64_t point;
    uint32_t dest;
} ring_entry;

static int cmp_entry(const void *a, const void *b)
{
    const ring_entry *x = a, *y = b;
    if (x->point != y->point)
        return x->point < y->point ? -1 : 1;
    return (x->dest > y->dest) - (x->dest < y->dest); /* deterministic ties */
}

int route__ring_init(route__ring *ring, uint32_t n_dest, uint32_t vnodes, uint64_t salt)
{
    memset(ring, 0, sizeof *ring);
    uint64_t n = (uint64_t)n_dest * vnodes;
    if (n == 0 || n > UINT32_MAX)
        return SIM_ERROR(SIM_EINVAL, "ring of %u destinations x %u virtual nodes; expected "
                         "between 1 and 2^32-1 positions", n_dest, vnodes);
    ring_entry *tmp = malloc(n * sizeof *tmp);
    ring->point = malloc(n * sizeof *ring->point);
    ring->dest = malloc(n * sizeof *ring->dest);
    if (!tmp || !ring->point || !ring->dest) {
        free(tmp);
        route__ring_fini(ring);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a hash ring");
    }
    uint64_t k = 0;
    for (uint32_t d = 0; d < n_dest; d++)
        for (uint32_t j = 0; j < vnodes; j++) {
            char name[32];
            int len = snprintf(name, sizeof name, "d%u#%u", d, j);
            tmp[k].point = XXH3_64bits_withSeed(name, (size_t)len, salt);
            tmp[k].dest = d;
            k++;
        }
    qsort(tmp, n, sizeof *tmp, cmp_entry);
    for (uint64_t i = 0; i < n; i++) {
        ring->point[i] = tmp[i].point;
        ring->dest[i] = tmp[i].dest;
    }
    ring->n = (uint32_t)n;
    free(tmp);
    return SIM_OK;
}

void route__ring_fini(route__ring *ring)
{
    free(ring->point);
    free(ring->dest);
    ring->point = NULL;
    ring->dest = NULL;
    ring->n = 0;
}

uint32_t route__ring_find(const route__ring *ring, uint64_t h)
{
    uint32_t lo = 0, hi = ring->n; /* first index with point >= h */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ring->point[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == ring->n ? 0 : lo;
}

/* The k-th destination (from 0) that the health view does not mark down. */
static uint32_t kth_up(const route_view *v, uint32_t k)
{
    for (uint32_t d = 0;; d++)
        if (!v->down[d] && k-- == 0)
            return d;
}

uint32_t route__p2c(sim_pcg32 *rng, const route_view *v)
{
    if (v->down) { /* faults: two distinct choices among the live ones */
        uint32_t n_up = 0;
        for (uint32_t d = 0; d < v->n_dest; d++)
            n_up += !v->down[d];
        if (n_up > 0 && n_up < v->n_dest) {
            if (n_up == 1)
                return kth_up(v, 0);
            uint32_t a = sim_pcg32_bounded(rng, n_up), b = sim_pcg32_bounded(rng, n_up - 1);
            if (b >= a)
                b++;
            a = kth_up(v, a);
            b = kth_up(v, b);
            return v->outstanding[b] < v->outstanding[a] ? b : a;
        }
    }
    if (v->n_dest == 1)
        return 0;
    uint32_t a = sim_pcg32_bounded(rng, v->n_dest);
    uint32_t b = sim_pcg32_bounded(rng, v->n_dest - 1);
    if (b >= a)
        b++; /* distinct from a, uniform over the rest */
    return v->outstanding[b] < v->outstanding[a] ? b : a;
}

uint32_t route__ring_live(const route__ring *ring, uint32_t i, const route_view *v)
{
    for (uint32_t step = 0; step < ring->n; step++) {
        const uint32_t d = ring->dest[(i + step) % ring->n];
        if (!route_view_down(v, d))
            return d;
    }
    return ring->dest[i];
}

uint64_t route__key_hash(uint64_t key, uint64_t salt)
{
    return XXH3_64bits_withSeed(&key, sizeof key, salt);
}
