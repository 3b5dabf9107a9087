/*
 * Router registry and the consistent-hash ring that several routers share.
 */
#include "models/route_int.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"

const route_type *const route_registry[] = {&route_flat_lb,      &route_sticky,
                                            &route_chwbl,        &route_dualmap,
                                            &route_preble,       &route_cacheroute,
                                            &route_cr_replicate, &route_cr_affinity,
                                            NULL};

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
        fprintf(f, "  %-12s %s\n", route_registry[i]->name, route_registry[i]->help);
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

uint32_t route__p2c(sim_pcg32 *rng, const route_view *v)
{
    if (v->n_dest == 1)
        return 0;
    uint32_t a = sim_pcg32_bounded(rng, v->n_dest);
    uint32_t b = sim_pcg32_bounded(rng, v->n_dest - 1);
    if (b >= a)
        b++; /* distinct from a, uniform over the rest */
    return v->outstanding[b] < v->outstanding[a] ? b : a;
}

uint64_t route__key_hash(uint64_t key, uint64_t salt)
{
    return XXH3_64bits_withSeed(&key, sizeof key, salt);
}
