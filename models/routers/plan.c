/*
 * CacheRoute plan construction: weigh, sort, admit, place (LPT over a
 * binary min-heap of destinations, or hash placement for the ablation),
 * then an open-addressing index from key to admitted entry for O(1)
 * dispatch; and the churn-aware re-plan that starts from the previous
 * table (plan_rebalance, models/routers/plan.h).
 */
#include "models/routers/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/hugemem.h"
#include "models/routers/route_int.h"

/*
 * A candidate key: its sort value v (the weight w, or the weight per warm
 * token for byte admission), rate, weight, footprint and, once admitted,
 * its k_b.  With rate weight and slot admission v = w = rate, so the order
 * (v desc, key asc) is the planner's original (rate desc, key asc).
 */
typedef struct cand {
    double v;
    uint64_t key;
    double rate, w, tok;
    uint32_t k;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* Placement order of admitted keys: weight descending, key ascending. */
static int cmp_weight(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* Strict order of cand by (v descending, key ascending). */
static inline int before(const cand *x, const cand *y)
{
    return x->v > y->v || (x->v == y->v && x->key < y->key);
}

/*
 * Rearrange a[0..n) so that its first m entries are the m first in the
 * (v desc, key asc) order, in any order: quickselect with a Lomuto
 * partition and a median-of-three pivot (deterministic, O(n) expected).
 * Keys are distinct, so the order is strict.  Admission only ever looks at
 * a prefix of the sorted keys, so only that prefix gets sorted.
 */
static void swap_keys(cand *a, size_t i, size_t j)
{
    cand t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void select_top(cand *a, size_t n, size_t m)
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
        const cand piv = a[last];
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
    free(pl->w);
    free(pl->k);
    free(pl->off);
    free(pl->dest);
    free(pl->load);
    free(pl->cap);
    sim_u64map_fini(&pl->idx);
    memset(pl, 0, sizeof *pl);
}

/*
 * The candidate array of n keys (48 bytes each): from the heap, or on huge
 * pages (sim/core/hugemem.h) when larger than CANDS_HUGE_BYTES, glibc's
 * largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB on 64-bit,
 * glibc malloc/malloc.c).  Above it malloc maps fresh 4-KiB pages for
 * every build and unmaps them on free: 10^6 candidates (48 MB) first-touch
 * ~12,000 pages a build, which on a VM whose host backs fresh memory
 * lazily cost 400-800 ms against ~40 ms of computation (docs/performance.md,
 * "Plan build"); huge pages take 24 faults.  Below it the heap reuses the
 * memory from one build to the next.  Contents and results do not depend
 * on where the array lives.
 */
#define CANDS_HUGE_BYTES ((size_t)32 << 20)

static cand *cands_alloc(size_t n)
{
    const size_t bytes = (n ? n : 1) * sizeof(cand);
    return bytes > CANDS_HUGE_BYTES ? sim_huge_alloc(bytes) : malloc(bytes);
}

static void cands_free(cand *c, size_t n)
{
    const size_t bytes = (n ? n : 1) * sizeof(cand);
    if (bytes > CANDS_HUGE_BYTES)
        sim_huge_free(c, bytes);
    else
        free(c);
}

/*
 * Steps 1-2 shared by plan_build_ex and plan_rebalance: validate, weigh,
 * sort the reachable prefix, size and admit.  On success *all holds the n
 * candidates (the first `m` sorted), *adm the admitted ones (with k) in
 * placement order (weight desc, key asc), *na their number; out's scalar
 * fields are set and its arrays NULL.  On error nothing is left allocated.
 */
static int admit(const plan_key *keys, const double *work, const double *tokens, size_t n,
                 const plan_params *p, plan *out, cand **all, cand **adm, size_t *na_out)
{
    memset(out, 0, sizeof *out);
    *all = *adm = NULL;
    double q = p->q_cap;
    if (p->cap && p->n_dest) { /* heterogeneous: size by the mean capacity */
        double sum = 0;
        for (uint32_t d = 0; d < p->n_dest; d++) {
            if (!(p->cap[d] > 0) || !isfinite(p->cap[d]))
                return SIM_ERROR(SIM_EINVAL, "plan with capacity %g at destination %u; expected "
                                 "finite capacities > 0 (requests/s)", p->cap[d], d);
            sum += p->cap[d];
        }
        q = sum / p->n_dest;
    }
    if (p->n_dest == 0 || !(q > 0) || !(p->slots > 0) || !isfinite(q) ||
        !isfinite(p->slots))
        return SIM_ERROR(SIM_EINVAL, "plan with R = %u, q_cap = %g, W = %g; expected R >= 1 "
                         "and finite q_cap > 0 (requests/s) and W > 0 (slots)",
                         p->n_dest, q, p->slots);
    const uint32_t R = p->n_dest;
    const int by_work = p->weight == PLAN_WEIGHT_WORK;
    const int by_bytes = p->admission == PLAN_ADMIT_BYTES;
    cand *c = cands_alloc(n);
    if (!c)
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    double total = 0, known_rw = 0, known_r = 0, known_f = 0;
    size_t n_f = 0;
    for (size_t i = 0; i < n; i++) {
        const double u = by_work && work ? work[i] : 0, f = by_bytes && tokens ? tokens[i] : 0;
        if (!(keys[i].rate >= 0) || !isfinite(keys[i].rate) || !isfinite(u) || !isfinite(f)) {
            cands_free(c, n);
            return SIM_ERROR(SIM_EINVAL, "key %zu has rate %g (work %g, footprint %g); expected "
                             "a finite rate >= 0 (requests/s) and finite work and footprint "
                             "(tokens)", i, keys[i].rate, u, f);
        }
        c[i] = (cand){.v = keys[i].rate, .key = keys[i].key, .rate = keys[i].rate,
                      .w = keys[i].rate, .tok = 1};
        total += keys[i].rate;
        if (u > 0)
            known_rw += keys[i].rate * u, known_r += keys[i].rate;
        if (f > 0)
            known_f += f, n_f++;
    }
    double total_w = total;
    if (by_work) {
        /* A key without a work estimate gets the mean of those with one. */
        const double ubar = known_r > 0 ? known_rw / known_r : 1;
        total_w = 0;
        for (size_t i = 0; i < n; i++) {
            const double u = work && work[i] > 0 ? work[i] : ubar;
            c[i].w = c[i].v = c[i].rate * u;
            total_w += c[i].w;
        }
    }
    double fsum = 0;
    if (by_bytes) {
        const double fbar = n_f ? known_f / (double)n_f : 1;
        for (size_t i = 0; i < n; i++) {
            c[i].tok = tokens && tokens[i] > 0 ? tokens[i] : fbar;
            c[i].v = c[i].w / c[i].tok;
            fsum += c[i].tok;
        }
    }
    out->n_dest = R;
    out->n_keys = n;
    out->capacity = (uint64_t)floor((double)R * p->slots);
    out->q_cap_w = by_work && total > 0 ? q * (total_w / total) : q;
    if (by_bytes) {
        double per = p->slots * (n ? fsum / (double)n : 1);
        if (p->pool_tokens > 0 && per > p->pool_tokens)
            per = p->pool_tokens;
        out->warm_budget = per * R;
    }
    const double qw = out->q_cap_w;

    /* Slot admission walks keys in descending weight until Σk_b reaches C.
     * Keys with k_b = 1 always fit until then, so it never looks past the
     * keys with k_b >= 2 plus C more: sort only that prefix.  Byte
     * admission has no such bound: sort all. */
    size_t m = n;
    if (!by_bytes) {
        size_t big = 0;
        if (p->replicate)
            for (size_t i = 0; i < n; i++)
                big += c[i].w > qw;
        m = big + (size_t)(out->capacity < n ? out->capacity : n);
        if (m > n)
            m = n;
        if (m < n)
            select_top(c, n, m);
    }
    qsort(c, m, sizeof *c, cmp_cand);

    /* 1-2. Sizing and admission: at most the m sorted keys are admitted. */
    cand *a = malloc((m ? m : 1) * sizeof *a);
    if (!a) {
        cands_free(c, n);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    }
    size_t na = 0;
    uint64_t sum_k = 0;
    double adm_rate = 0, adm_w = 0, used = 0;
    for (size_t i = 0; i < m && (by_bytes || sum_k < out->capacity); i++) {
        if (c[i].w <= 0)
            break; /* no traffic measured: nothing to plan for */
        double kd = p->replicate ? ceil(c[i].w / qw) : 1.0;
        uint32_t k = kd < 1 ? 1 : kd > R ? R : (uint32_t)kd; /* at most R distinct */
        if (by_bytes) {
            const double cost = k * c[i].tok;
            if (used + cost > out->warm_budget)
                continue; /* skipped: smaller footprints may still fit */
            used += cost;
        } else if (sum_k + k > out->capacity) {
            continue; /* skipped: goes to the fallback; smaller keys may fit */
        }
        a[na] = c[i];
        a[na].k = k;
        sum_k += k;
        adm_rate += c[i].rate;
        adm_w += c[i].w;
        na++;
    }
    if (by_bytes)
        qsort(a, na, sizeof *a, cmp_weight); /* LPT goes by weight */
    out->n_admitted = na;
    out->sum_k = sum_k;
    out->admitted_rate = adm_rate;
    out->cold_rate = total - adm_rate > 0 ? total - adm_rate : 0;
    out->admitted_w = adm_w;
    out->cold_w = total_w - adm_w > 0 ? total_w - adm_w : 0;
    out->warm_used = used;
    *all = c;
    *adm = a;
    *na_out = na;
    return SIM_OK;
}

/* Allocate out's arrays for na admitted keys with Σk = sum_k and fill key,
 * rate, w, k, off from adm, the capacities `cap` (n_dest, or NULL) and the
 * cold-tail loads.  SIM_OK or SIM_ENOMEM (out freed). */
static int alloc_out(plan *out, const cand *adm, size_t na, const double *cap)
{
    const uint32_t R = out->n_dest;
    const uint64_t sum_k = out->sum_k;
    out->key = malloc((na ? na : 1) * sizeof *out->key);
    out->rate = malloc((na ? na : 1) * sizeof *out->rate);
    out->w = malloc((na ? na : 1) * sizeof *out->w);
    out->k = malloc((na ? na : 1) * sizeof *out->k);
    out->off = malloc((na + 1) * sizeof *out->off);
    out->dest = malloc((sum_k ? sum_k : 1) * sizeof *out->dest);
    out->load = malloc(R * sizeof *out->load);
    size_t slots_tab = 16;
    while (slots_tab < 2 * (size_t)na + 2)
        slots_tab <<= 1;
    if (!out->key || !out->rate || !out->w || !out->k || !out->off || !out->dest || !out->load ||
        sim_u64map_init(&out->idx, slots_tab)) {
        plan_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", na);
    }
    uint32_t pos = 0;
    for (size_t i = 0; i < na; i++) {
        out->key[i] = adm[i].key;
        out->rate[i] = adm[i].rate;
        out->w[i] = adm[i].w;
        out->k[i] = adm[i].k;
        out->off[i] = pos;
        pos += adm[i].k;
    }
    out->off[na] = pos;
    if (cap) { /* the cold tail in proportion to capacity */
        out->cap = malloc(R * sizeof *out->cap);
        if (!out->cap) {
            plan_fini(out);
            return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", na);
        }
        double sum = 0;
        for (uint32_t d = 0; d < R; d++)
            sum += out->cap[d] = cap[d];
        for (uint32_t d = 0; d < R; d++)
            out->load[d] = out->cold_w * (cap[d] / sum);
        return SIM_OK;
    }
    const double cold_share = out->cold_w / R;
    for (uint32_t d = 0; d < R; d++)
        out->load[d] = cold_share;
    return SIM_OK;
}

/* Capacity LPT for one key (see "Heterogeneous capacity" in plan.h): the
 * k distinct destinations with the smallest (load + share) / cap, in that
 * order (ties: lower index), into dest[0..k).  O(R k). */
static void place_by_capacity(const plan *pl, double share, uint32_t k, uint32_t *dest)
{
    const uint32_t R = pl->n_dest;
    for (uint32_t j = 0; j < k; j++) {
        uint32_t best = UINT32_MAX;
        double bv = 0;
        for (uint32_t d = 0; d < R; d++) {
            int in = 0;
            for (uint32_t i = 0; i < j && !in; i++)
                in = dest[i] == d;
            if (in)
                continue;
            const double v = (pl->load[d] + share) / pl->cap[d];
            if (best == UINT32_MAX || v < bv)
                best = d, bv = v;
        }
        dest[j] = best;
    }
}

static void index_keys(plan *out)
{
    for (size_t a = 0; a < out->n_admitted; a++) /* sized by alloc_out: never grows */
        sim_u64map_put(&out->idx, out->key[a], (uint32_t)a);
}

int plan_build_ex(const plan_key *keys, const double *work, const double *tokens, size_t n,
                  const plan_params *p, plan *out)
{
    cand *all, *adm;
    size_t na;
    int rc = admit(keys, work, tokens, n, p, out, &all, &adm, &na);
    if (rc)
        return rc;
    cands_free(all, n);
    const uint32_t R = p->n_dest;
    heap_ent *h = malloc(R * sizeof *h);
    if (!h || (rc = alloc_out(out, adm, na, p->cap)) != SIM_OK) {
        free(adm), free(h);
        plan_fini(out);
        return rc ? rc : SIM_ERROR(SIM_ENOMEM, "out of memory building a plan of %zu keys", n);
    }

    /* 3. Placement, starting from the cold-tail share. */
    for (uint32_t d = 0; d < R; d++)
        h[d] = (heap_ent){out->load[d], d};
    route__ring ring = {0};
    if (p->placement == PLAN_HASH &&
        route__ring_init(&ring, R, p->vnodes ? p->vnodes : 256, 0x9a5e0b1a5e5ULL) != SIM_OK) {
        free(adm), free(h);
        plan_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory building a plan ring");
    }
    uint8_t *taken = calloc(R, 1);
    for (size_t a = 0; a < na; a++) {
        const uint32_t k = adm[a].k, pos = out->off[a];
        const double share = adm[a].w / k;
        if (p->placement == PLAN_LPT && p->cap) {
            place_by_capacity(out, share, k, out->dest + pos);
        } else if (p->placement == PLAN_LPT) {
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
            uint32_t i = route__ring_find(&ring, route__key_hash(adm[a].key, 0x9a5e0b1a5e5ULL));
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
    }
    free(taken);
    route__ring_fini(&ring);
    index_keys(out);
    free(adm);
    free(h);
    return SIM_OK;
}

int plan_build(const plan_key *keys, size_t n, const plan_params *p, plan *out)
{
    return plan_build_ex(keys, NULL, NULL, n, p, out);
}

/* The least-loaded destination (ties: lower index) not in set[0..k). */
static uint32_t least_outside(const double *load, uint32_t R, const uint32_t *set, uint32_t k)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t d = 0; d < R; d++) {
        int in = 0;
        for (uint32_t j = 0; j < k && !in; j++)
            in = set[j] == d;
        if (!in && (best == UINT32_MAX || load[d] < load[best]))
            best = d;
    }
    return best;
}

static double imbalance_of(const double *load, uint32_t R)
{
    double mx = 0, sum = 0;
    for (uint32_t d = 0; d < R; d++) {
        sum += load[d];
        if (load[d] > mx)
            mx = load[d];
    }
    return sum > 0 ? mx / (sum / R) : NAN;
}

/* max_d (load_d / cap_d) / (Σ load / Σ cap); imbalance_of when cap is
 * NULL. */
static double imbalance_cap(const double *load, const double *cap, uint32_t R)
{
    if (!cap)
        return imbalance_of(load, R);
    double mx = 0, sum = 0, sc = 0;
    for (uint32_t d = 0; d < R; d++) {
        sum += load[d];
        sc += cap[d];
        if (load[d] / cap[d] > mx)
            mx = load[d] / cap[d];
    }
    return sum > 0 ? mx / (sum / sc) : NAN;
}

int plan_rebalance(const plan *prev, const plan_key *keys, const double *work,
                   const double *tokens, size_t n, const plan_params *p, double epsilon,
                   uint64_t budget, plan *out, plan_churn_stats *st)
{
    plan_churn_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    st->held_imbalance = NAN;
    if (!(epsilon >= 0) || !isfinite(epsilon)) {
        memset(out, 0, sizeof *out);
        return SIM_ERROR(SIM_EINVAL, "churn epsilon %g; expected a finite value >= 0", epsilon);
    }
    if (p->placement != PLAN_LPT || !prev || !prev->key || prev->n_admitted == 0 ||
        prev->n_dest != p->n_dest)
        return plan_build_ex(keys, work, tokens, n, p, out);
    cand *all, *adm;
    size_t na;
    int rc = admit(keys, work, tokens, n, p, out, &all, &adm, &na);
    if (rc)
        return rc;
    const uint32_t R = p->n_dest;
    double total_w = out->admitted_w + out->cold_w;

    /* 0. The held table under the new weights.  pos[i] = the position in
     * all[] of prev's admitted key i (SIM_U64MAP_NONE if not offered now),
     * found by one pass over all[] against a map of prev's keys: memory
     * O(prev's admitted keys), not O(n). */
    sim_u64map prev_of;
    size_t tab = 16;
    while (tab < 2 * prev->n_admitted + 2)
        tab <<= 1;
    double *hl = calloc(R, sizeof *hl);
    uint32_t *pos = malloc(prev->n_admitted * sizeof *pos);
    if (!hl || !pos || sim_u64map_init(&prev_of, tab)) {
        cands_free(all, n), free(adm), free(hl), free(pos);
        memset(out, 0, sizeof *out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory re-planning %zu keys", n);
    }
    for (size_t i = 0; i < prev->n_admitted; i++) {
        sim_u64map_put(&prev_of, prev->key[i], (uint32_t)i);
        pos[i] = SIM_U64MAP_NONE;
    }
    for (size_t j = 0; j < n; j++) {
        const uint32_t i = sim_u64map_get(&prev_of, all[j].key);
        if (i != SIM_U64MAP_NONE)
            pos[i] = (uint32_t)j;
    }
    sim_u64map_fini(&prev_of);
    double held_w = 0, held_rate = 0;
    for (size_t i = 0; i < prev->n_admitted; i++) {
        const uint32_t j = pos[i];
        const double w = j == SIM_U64MAP_NONE ? 0 : all[j].w;
        held_w += w;
        held_rate += j == SIM_U64MAP_NONE ? 0 : all[j].rate;
        for (uint32_t r = prev->off[i]; r < prev->off[i + 1]; r++)
            hl[prev->dest[r]] += w / prev->k[i];
    }
    const double held_cold = total_w - held_w > 0 ? total_w - held_w : 0;
    if (p->cap) {
        double sc = 0;
        for (uint32_t d = 0; d < R; d++)
            sc += p->cap[d];
        for (uint32_t d = 0; d < R; d++)
            hl[d] += held_cold * (p->cap[d] / sc);
    } else {
        for (uint32_t d = 0; d < R; d++)
            hl[d] += held_cold / R;
    }
    st->held_imbalance = imbalance_cap(hl, p->cap, R);
    /* Skip when within 1+ε, or no worse than the held table was planned to
     * be (so unchanged rates never move a key; 1e-12 absorbs the order of
     * the sums). */
    const double prev_imb = plan_imbalance(prev);
    const double skip_at = fmax(1 + epsilon, isnan(prev_imb) ? 0 : prev_imb) * (1 + 1e-12);
    if (!(total_w > 0) || st->held_imbalance <= skip_at) {
        st->skipped = 1;
        plan held = {.n_dest = R, .n_keys = n, .n_admitted = prev->n_admitted,
                     .sum_k = prev->sum_k, .capacity = out->capacity, .q_cap_w = out->q_cap_w,
                     .warm_budget = out->warm_budget, .admitted_rate = held_rate,
                     .admitted_w = held_w, .cold_w = held_cold,
                     .cold_rate = fmax(0, out->admitted_rate + out->cold_rate - held_rate)};
        cand *h = malloc((prev->n_admitted ? prev->n_admitted : 1) * sizeof *h);
        if (!h) {
            cands_free(all, n), free(adm), free(hl), free(pos);
            memset(out, 0, sizeof *out);
            return SIM_ERROR(SIM_ENOMEM, "out of memory re-planning %zu keys", n);
        }
        for (size_t i = 0; i < prev->n_admitted; i++) {
            const uint32_t j = pos[i];
            h[i] = (cand){.key = prev->key[i], .k = prev->k[i],
                          .rate = j == SIM_U64MAP_NONE ? 0 : all[j].rate,
                          .w = j == SIM_U64MAP_NONE ? 0 : all[j].w};
        }
        cands_free(all, n), free(adm), free(pos);
        *out = held;
        rc = alloc_out(out, h, prev->n_admitted, p->cap);
        free(h);
        if (rc) {
            free(hl);
            return rc;
        }
        memcpy(out->dest, prev->dest, prev->sum_k * sizeof *out->dest);
        memcpy(out->load, hl, R * sizeof *hl);
        free(hl);
        index_keys(out);
        return SIM_OK;
    }
    free(hl);
    free(pos);
    cands_free(all, n);
    if (p->cap) { /* no capacity-aware rebalancing: a fresh plan (plan.h) */
        free(adm);
        plan_fini(out);
        return plan_build_ex(keys, work, tokens, n, p, out);
    }
    if ((rc = alloc_out(out, adm, na, NULL)) != SIM_OK) {
        free(adm);
        return rc;
    }

    /* 2. Start from the held table: unchanged k_b, shrunk, grown, new. */
    uint8_t *done = calloc(na ? na : 1, 1);
    uint32_t *tmp = malloc((R ? R : 1) * sizeof *tmp);
    if (!done || !tmp) {
        free(adm), free(done), free(tmp);
        plan_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory re-planning %zu keys", n);
    }
    for (int phase = 0; phase < 4; phase++) {
        for (size_t a = 0; a < na; a++) {
            if (done[a])
                continue;
            const int64_t pi = plan_lookup(prev, adm[a].key);
            const uint32_t k = adm[a].k, kp = pi >= 0 ? prev->k[pi] : 0;
            uint32_t *d = out->dest + out->off[a];
            const uint32_t *old = pi >= 0 ? prev->dest + prev->off[pi] : NULL;
            if (phase == 0 && pi >= 0 && k == kp) {
                memcpy(d, old, k * sizeof *d);
            } else if (phase == 1 && pi >= 0 && k < kp) {
                /* Keep the k least-loaded old members (ties: lower index). */
                memcpy(tmp, old, kp * sizeof *tmp);
                for (uint32_t j = 0; j < k; j++) {
                    uint32_t b = j;
                    for (uint32_t l = j + 1; l < kp; l++)
                        if (out->load[tmp[l]] < out->load[tmp[b]] ||
                            (out->load[tmp[l]] == out->load[tmp[b]] && tmp[l] < tmp[b]))
                            b = l;
                    uint32_t t = tmp[j];
                    tmp[j] = tmp[b];
                    tmp[b] = t;
                    d[j] = tmp[j];
                }
                st->resized++;
            } else if ((phase == 2 && pi >= 0 && k > kp) || (phase == 3 && pi < 0)) {
                /* Keep the old members, add the least-loaded distinct others
                 * (LPT for a new key: kp = 0). */
                if (kp)
                    memcpy(d, old, kp * sizeof *d);
                for (uint32_t j = kp; j < k; j++)
                    d[j] = least_outside(out->load, R, d, j);
                if (pi >= 0)
                    st->resized++;
                else
                    st->placed++;
            } else {
                continue;
            }
            done[a] = 1;
            for (uint32_t j = 0; j < k; j++)
                out->load[d[j]] += adm[a].w / k;
        }
    }
    free(done);
    free(tmp);

    /* 3. Bounded moves, heaviest replica first, hot to cold. */
    const double limit = (1 + epsilon) * (total_w / R);
    while (st->moves < budget) {
        uint32_t h = 0;
        for (uint32_t d = 1; d < R; d++)
            if (out->load[d] > out->load[h])
                h = d;
        if (out->load[h] <= limit)
            break;
        size_t best = SIZE_MAX;
        uint32_t best_j = 0, best_l = 0;
        double best_s = -1;
        for (size_t a = 0; a < na; a++) {
            const double s = adm[a].w / adm[a].k;
            if (s <= best_s)
                continue;
            uint32_t *d = out->dest + out->off[a];
            uint32_t j = 0;
            while (j < adm[a].k && d[j] != h)
                j++;
            if (j == adm[a].k)
                continue;
            const uint32_t l = least_outside(out->load, R, d, adm[a].k);
            if (l == UINT32_MAX || !(out->load[l] + s < out->load[h]))
                continue;
            best = a, best_j = j, best_l = l, best_s = s;
        }
        if (best == SIZE_MAX)
            break;
        out->dest[out->off[best] + best_j] = best_l;
        out->load[h] -= best_s;
        out->load[best_l] += best_s;
        st->moves++;
    }
    st->budget_hit = st->moves == budget && imbalance_of(out->load, R) > 1 + epsilon;
    free(adm);
    index_keys(out);
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
    if (pl->cap)
        return imbalance_cap(pl->load, pl->cap, pl->n_dest);
    double mx = 0, sum = 0;
    for (uint32_t d = 0; d < pl->n_dest; d++) {
        sum += pl->load[d];
        if (pl->load[d] > mx)
            mx = pl->load[d];
    }
    return sum > 0 ? mx / (sum / pl->n_dest) : NAN;
}
