/*
 * CacheRoute plan construction: sort, admit, place (LPT over a binary
 * min-heap of destinations, or hash placement for the ablation), then an
 * open-addressing index from key to admitted entry for O(1) dispatch.
 */
#include "models/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "models/route_int.h"

static int cmp_rate_desc(const void *a, const void *b)
{
    const plan_key *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate > y->rate ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* Strict order of plan_key by (rate descending, key ascending). */
static inline int before(const plan_key *x, const plan_key *y)
{
    return x->rate > y->rate || (x->rate == y->rate && x->key < y->key);
}

/*
 * Rearrange a[0..n) so that its first m entries are the m first in the
 * (rate desc, key asc) order, in any order: quickselect with a Lomuto
 * partition and a median-of-three pivot (deterministic, O(n) expected).
 * Keys are distinct, so the order is strict.  Admission only ever looks at
 * a prefix of the sorted keys, so only that prefix gets sorted.
 */
static void swap_keys(plan_key *a, size_t i, size_t j)
{
    plan_key t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void select_top(plan_key *a, size_t n, size_t m)
{
    size_t lo = 0, hi = n; /* invariant: a[0..lo) are in the top m, a[hi..n) are not */
    while (hi - lo > 1 && lo < m && m < hi) {
        size_t mid = lo + (hi - lo) / 2, last = hi - 1;
        /* Median of a[lo], a[mid], a[last] moved to a[last]. */
        if (before(&a[mid], &a[lo]))
            swap_keys(a, mid, lo);
        if (before(&a[last], &a[lo]))
            swap_keys(a, last, lo);
        if (before(&a[mid], &a[last]))
            swap_keys(a, mid, last);
        const plan_key piv = a[last];
        size_t store = lo;
        for (size_t i = lo; i < last; i++)
            if (before(&a[i], &piv))
                swap_keys(a, i, store++);
        swap_keys(a, store, last); /* pivot at `store`: all before precede it */
        if (store + 1 == m || store == m)
            return;
        if (m < store)
            hi = store;
        else
            lo = store + 1;
    }
}

/* ---- min-heap of (load, dest) over R destinations ---- */

typedef struct heap_ent {
    double load;
    uint32_t dest;
} heap_ent;

static inline int less(const heap_ent *a, const heap_ent *b)
{
    return a->load < b->load || (a->load == b->load && a->dest < b->dest);
}

static void heap_down(heap_ent *h, uint32_t n, uint32_t i)
{
    heap_ent e = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && less(&h[c + 1], &h[c]))
            c++;
        if (!less(&h[c], &e))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static void heap_up(heap_ent *h, uint32_t i)
{
    heap_ent e = h[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!less(&e, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

void plan_fini(plan *pl)
{
    free(pl->key);
    free(pl->rate);
    free(pl->k);
    free(pl->off);
    free(pl->dest);
    free(pl->load);
    sim_u64map_fini(&pl->idx);
    memset(pl, 0, sizeof *pl);
}

int plan_build(const plan_key *keys, size_t n, const plan_params *p, plan *out)
{
    memset(out, 0, sizeof *out);
    if (p->n_dest == 0 || !(p->q_cap > 0) || !(p->slots > 0) || !isfinite(p->q_cap) ||
        !isfinite(p->slots))
        return SIM_ERROR(SIM_EINVAL, "plan with R = %u, q_cap = %g, W = %g; expected R >= 1 "
                         "and finite q_cap > 0 (requests/s) and W > 0 (slots)",
                         p->n_dest, p->q_cap, p->slots);
    const uint32_t R = p->n_dest;
    plan_key *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(keys[i].rate >= 0) || !isfinite(keys[i].rate)) {
            free(sorted);
            return SIM_ERROR(SIM_EINVAL, "key %zu has rate %g; expected a finite rate >= 0 "
                             "(requests/s)", i, keys[i].rate);
        }
        sorted[i] = keys[i];
        total += keys[i].rate;
    }
    out->n_dest = R;
    out->n_keys = n;
    out->capacity = (uint64_t)floor((double)R * p->slots);

    /* Admission walks keys in descending rate until Σk_b reaches C.  Keys
     * with k_b = 1 always fit until then, so it never looks past the keys
     * with k_b >= 2 plus C more: sort only that prefix. */
    size_t big = 0;
    if (p->replicate)
        for (size_t i = 0; i < n; i++)
            big += sorted[i].rate > p->q_cap;
    size_t m = big + (size_t)(out->capacity < n ? out->capacity : n);
    if (m > n)
        m = n;
    if (m < n)
        select_top(sorted, n, m);
    qsort(sorted, m, sizeof *sorted, cmp_rate_desc);

    /* 1-2. Sizing and top-rate admission. */
    uint32_t *kb = malloc((n ? n : 1) * sizeof *kb);
    size_t *adm = malloc((n ? n : 1) * sizeof *adm);
    if (!kb || !adm) {
        free(sorted), free(kb), free(adm);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    }
    size_t na = 0;
    uint64_t sum_k = 0;
    double adm_rate = 0;
    for (size_t i = 0; i < m && sum_k < out->capacity; i++) {
        if (sorted[i].rate <= 0)
            break; /* no traffic measured: nothing to plan for */
        double kd = p->replicate ? ceil(sorted[i].rate / p->q_cap) : 1.0;
        uint32_t k = kd < 1 ? 1 : kd > R ? R : (uint32_t)kd; /* at most R distinct */
        if (sum_k + k > out->capacity)
            continue; /* skipped: goes to the fallback; smaller keys may fit */
        kb[na] = k;
        adm[na] = i;
        sum_k += k;
        adm_rate += sorted[i].rate;
        na++;
    }
    out->n_admitted = na;
    out->sum_k = sum_k;
    out->admitted_rate = adm_rate;
    out->cold_rate = total - adm_rate > 0 ? total - adm_rate : 0;

    out->key = malloc((na ? na : 1) * sizeof *out->key);
    out->rate = malloc((na ? na : 1) * sizeof *out->rate);
    out->k = malloc((na ? na : 1) * sizeof *out->k);
    out->off = malloc((na + 1) * sizeof *out->off);
    out->dest = malloc((sum_k ? sum_k : 1) * sizeof *out->dest);
    out->load = malloc(R * sizeof *out->load);
    size_t slots_tab = 16;
    while (slots_tab < 2 * (size_t)na + 2)
        slots_tab <<= 1;
    heap_ent *h = malloc(R * sizeof *h);
    if (!out->key || !out->rate || !out->k || !out->off || !out->dest || !out->load || !h ||
        sim_u64map_init(&out->idx, slots_tab)) {
        free(sorted), free(kb), free(adm), free(h);
        plan_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    }

    /* 3. Placement, starting from the cold-tail share. */
    const double cold_share = out->cold_rate / R;
    for (uint32_t d = 0; d < R; d++) {
        h[d] = (heap_ent){cold_share, d};
        out->load[d] = cold_share;
    }
    route__ring ring = {0};
    if (p->placement == PLAN_HASH &&
        route__ring_init(&ring, R, p->vnodes ? p->vnodes : 256, 0x9a5e0b1a5e5ULL) != SIM_OK) {
        free(sorted), free(kb), free(adm), free(h);
        plan_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan ring");
    }
    uint8_t *taken = calloc(R, 1);
    uint32_t pos = 0;
    for (size_t a = 0; a < na; a++) {
        const plan_key *pk = &sorted[adm[a]];
        const uint32_t k = kb[a];
        const double share = pk->rate / k;
        out->key[a] = pk->key;
        out->rate[a] = pk->rate;
        out->k[a] = k;
        out->off[a] = pos;
        if (p->placement == PLAN_LPT) {
            /* Pop the k least loaded (distinct by construction), then
             * push them back with their new load. */
            for (uint32_t j = 0; j < k; j++) {
                out->dest[pos + j] = h[0].dest;
                h[0].load += share;
                heap_ent e = h[0];
                h[0] = h[R - 1 - j];
                h[R - 1 - j] = e; /* park it beyond the live heap */
                heap_down(h, R - 1 - j, 0);
            }
            for (uint32_t j = 0; j < k; j++)
                heap_up(h, R - k + j);
        } else {
            uint32_t i = route__ring_find(&ring, route__key_hash(pk->key, 0x9a5e0b1a5e5ULL));
            for (uint32_t j = 0, step = 0; j < k; step++) {
                uint32_t d = ring.dest[(i + step) % ring.n];
                if (taken[d])
                    continue;
                taken[d] = 1;
                out->dest[pos + j++] = d;
            }
            for (uint32_t j = 0; j < k; j++)
                taken[out->dest[pos + j]] = 0;
        }
        for (uint32_t j = 0; j < k; j++)
            out->load[out->dest[pos + j]] += share;
        pos += k;
    }
    out->off[na] = pos;
    free(taken);
    route__ring_fini(&ring);

    /* Key index. */
    for (size_t a = 0; a < na; a++) /* sized above: never grows */
        sim_u64map_put(&out->idx, out->key[a], (uint32_t)a);
    free(sorted);
    free(kb);
    free(adm);
    free(h);
    return SIM_OK;
}

int64_t plan_lookup(const plan *pl, uint64_t key)
{
    if (!pl->idx.slot)
        return -1;
    const uint32_t i = sim_u64map_get(&pl->idx, key);
    return i == SIM_U64MAP_NONE ? -1 : (int64_t)i;
}

double plan_imbalance(const plan *pl)
{
    double mx = 0, sum = 0;
    for (uint32_t d = 0; d < pl->n_dest; d++) {
        sum += pl->load[d];
        if (pl->load[d] > mx)
            mx = pl->load[d];
    }
    return sum > 0 ? mx / (sum / pl->n_dest) : NAN;
}
