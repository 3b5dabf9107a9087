/*
 * Trace replay: arrival order and times computed once at creation (the
 * trace is small: 12k requests), block hashes computed lazily per request
 * so memory stays O(requests in flight × blocks).
 */
#include "workloads/replay.h"

#include <math.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "workloads/blockhash.h"
#include "workloads/ingest.h"
#include "workloads/internal.h"

typedef struct arrival {
    double t;
    uint32_t idx;
} arrival;

struct wl_replay {
    const wl_trace *t;
    wl_replay_params p;
    arrival *order;
    uint64_t n, next;
    uint64_t n_pass;  /* arrivals per pass (the loop's period in requests) */
    double period;    /* loop period P, s (0: no loop) */
    double scale;
    /* Routing key of every trace request, computed at create in trace
     * order (sequential reads of the ids, where per request in arrival
     * order each read of a request's leading ids was a cache miss: 5 % of
     * the Mooncake main job); NULL when the trace carries its keys or if
     * out of memory (then computed per request: the same keys). */
    uint64_t *keys;
};

static int cmp_arrival(const void *a, const void *b)
{
    const arrival *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static inline int before(const arrival *x, const arrival *y)
{
    return x->t < y->t || (x->t == y->t && x->idx < y->idx);
}

/* Sort by (t, idx), the order of cmp_arrival.  A trace's timestamps are
 * non-decreasing and the jitter stays inside each tick, so the array is
 * sorted but within ticks: an insertion sort does O(n + inversions)
 * moves, where qsort's merge sort moved every 16-byte element log n times
 * through memcpy (7 % of a Mooncake experiment's instructions).  If the
 * moves pass 32·n (a trace with many requests per tick) the rest is
 * left to qsort.  The order is total, so the result is the same either
 * way. */
static void sort_arrivals(arrival *a, size_t n)
{
    uint64_t moves = 0;
    const uint64_t budget = 32 * (uint64_t)n;
    for (size_t i = 1; i < n; i++) {
        const arrival x = a[i];
        size_t j = i;
        while (j > 0 && before(&x, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
        moves += i - j;
        if (moves > budget) {
            qsort(a, n, sizeof *a, cmp_arrival);
            return;
        }
    }
}

int wl_replay_create(const wl_trace *t, const wl_replay_params *p, wl_replay **out)
{
    if (p->block_size == 0 || t->block_tokens % p->block_size != 0)
        return SIM_ERROR(SIM_EINVAL, "engine.block_size %u does not divide the trace's %u-token "
                         "blocks; expected a divisor of %u (e.g. 16)",
                         p->block_size, t->block_tokens, t->block_tokens);
    if (p->hashes && p->hashes->block_size != p->block_size)
        return SIM_ERROR(SIM_EINVAL, "block-hash table of %u-token blocks for a replay of "
                         "engine.block_size %u; expected the table of the replay's block size",
                         p->hashes->block_size, p->block_size);
    if (p->key_ids == 0)
        return SIM_ERROR(SIM_EINVAL, "workload.key_ids is 0; expected at least 1 leading id");
    if (!(p->rate >= 0) || !isfinite(p->rate))
        return SIM_ERROR(SIM_EINVAL, "request rate %g; expected a finite rate >= 0 (requests/s)",
                         p->rate);
    if (!(p->loop_s >= 0) || !isfinite(p->loop_s))
        return SIM_ERROR(SIM_EINVAL, "workload.loop_s %g; expected a finite duration >= 0 s "
                         "(0 = replay once)", p->loop_s);
    wl_replay *rp = calloc(1, sizeof *rp);
    if (!rp)
        return SIM_ERROR(SIM_ENOMEM, "out of memory preparing the trace replay");
    rp->order = malloc(t->n * sizeof *rp->order);
    if (!rp->order) {
        free(rp);
        return SIM_ERROR(SIM_ENOMEM, "out of memory preparing the trace replay");
    }
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, p->seed, SIM_STREAM_ARRIVALS);
    for (size_t i = 0; i < t->n; i++) {
        double ts = t->reqs[i].t_s;
        if (p->tick_s > 0) {
            double tick = floor(ts / p->tick_s + 0.5);
            ts = (tick + sim_pcg32_uniform(&rng)) * p->tick_s;
        }
        rp->order[i] = (arrival){ts, (uint32_t)i};
    }
    sort_arrivals(rp->order, t->n);
    rp->scale = 1.0;
    if (p->rate > 0) {
        double native = wl_trace_mean_rate(t);
        if (!(native > 0)) {
            wl_replay_destroy(rp);
            return SIM_ERROR(SIM_EINVAL, "%s: all requests share one timestamp, so the trace has "
                             "no rate to rescale; expected a trace spanning some time",
                             t->path);
        }
        rp->scale = native / p->rate;
    }
    double t0 = rp->order[0].t;
    for (size_t i = 0; i < t->n; i++)
        rp->order[i].t = (rp->order[i].t - t0) * rp->scale;
    rp->t = t;
    rp->p = *p;
    if (!t->keys && (rp->keys = malloc(t->n * sizeof *rp->keys)) != NULL)
        for (size_t i = 0; i < t->n; i++)
            rp->keys[i] = wl_trace_routing_key(t, i, p->key_ids);
    rp->n = (p->max_requests && p->max_requests < t->n) ? p->max_requests : t->n;
    rp->n_pass = t->n;
    if (p->loop_s > 0) {
        const double span = rp->order[t->n - 1].t; /* order[0].t is 0 */
        if (t->n < 2 || !(span > 0)) {
            wl_replay_destroy(rp);
            return SIM_ERROR(SIM_EINVAL, "%s: workload.loop_s %g with a trace whose requests "
                             "share one timestamp: a pass has no length to repeat; expected "
                             "a trace spanning some time", t->path, p->loop_s);
        }
        rp->period = span * (double)t->n / (double)(t->n - 1);
        /* Every arrival order[i].t + k·P < loop_s, computed as next() does. */
        const uint64_t k = (uint64_t)floor(p->loop_s / rp->period);
        uint64_t tot = k * t->n;
        for (size_t i = 0; i < t->n && rp->order[i].t + (double)k * rp->period < p->loop_s; i++)
            tot++;
        rp->n = p->max_requests && p->max_requests < tot ? p->max_requests : tot;
    }
    *out = rp;
    return SIM_OK;
}

void wl_replay_destroy(wl_replay *rp)
{
    if (!rp)
        return;
    free(rp->order);
    free(rp->keys);
    free(rp);
}

uint32_t wl__trace_req_blocks(const wl_trace *t, size_t i, uint32_t bs)
{
    const wl_trace_req *tr = &t->reqs[i];
    const uint32_t per = t->block_tokens / bs;
    uint32_t nb = tr->input_tokens / bs;
    /* Never more blocks than the trace ids cover. */
    if ((uint64_t)nb > (uint64_t)tr->n_ids * per)
        nb = tr->n_ids * per;
    return nb;
}

uint32_t wl__trace_req_hashes(const wl_trace *t, size_t i, uint32_t bs, uint64_t *h)
{
    return wl__trace_req_hashes_from(t, i, bs, h, 0);
}

uint32_t wl__trace_req_hashes_from(const wl_trace *t, size_t i, uint32_t bs, uint64_t *h,
                                   uint32_t from)
{
    const wl_trace_req *tr = &t->reqs[i];
    const uint64_t *ids = t->ids + tr->ids_off;
    const uint32_t per = t->block_tokens / bs;
    const uint32_t nb = wl__trace_req_blocks(t, i, bs);
    SIM_ALWAYS(from <= nb);
    uint64_t parent = from ? h[from - 1] : 0;
    for (uint32_t j = from; j < nb; j++) {
        uint64_t content = (ids[j / per] << 16) | (uint64_t)(j % per);
        parent = h[j] = wl__block_hash(parent, content);
    }
    return nb;
}

int wl_replay_next(wl_replay *rp, wl_request *out)
{
    if (rp->next >= rp->n)
        return 0;
    const uint64_t pass = rp->period > 0 ? rp->next / rp->n_pass : 0;
    const arrival *a = &rp->order[rp->period > 0 ? rp->next % rp->n_pass : rp->next];
    const wl_trace_req *tr = &rp->t->reqs[a->idx];
    const wl_trace_hashes *tab = rp->p.hashes;
    uint64_t *h;
    uint32_t nb;
    if (tab) {
        /* The shared table: no hashing, no allocation (workloads/ingest.h). */
        h = (uint64_t *)(uintptr_t)(tab->h + tab->off[a->idx]);
        nb = (uint32_t)(tab->off[a->idx + 1] - tab->off[a->idx]);
    } else {
        nb = wl__trace_req_blocks(rp->t, a->idx, rp->p.block_size);
        /* The one allocation per request: a run too large for memory ends
         * with SIM_ENOMEM (the experiment marked incomplete), not an abort. */
        h = malloc((nb ? nb : 1) * sizeof *h);
        if (!h)
            return -SIM_ERROR(SIM_ENOMEM, "out of memory for the %u blocks of a request; "
                              "expected a smaller run (docs/harness.md, \"Size estimate\")", nb);
        wl__trace_req_hashes(rp->t, a->idx, rp->p.block_size, h);
    }
    *out = (wl_request){
        .id = rp->next,
        .arrival_s = pass ? a->t + (double)pass * rp->period : a->t,
        .key = rp->keys ? rp->keys[a->idx] : wl_trace_routing_key(rp->t, a->idx, rp->p.key_ids),
        .prompt_tokens = tr->input_tokens,
        .output_tokens = tr->output_tokens,
        .n_blocks = nb,
        .blocks = h,
        .blocks_mode = tab ? WL_BLOCKS_SHARED : WL_BLOCKS_OWNED,
    };
    rp->next++;
    return 1;
}

uint64_t wl_replay_count(const wl_replay *rp) { return rp->n; }

double wl_replay_time_scale(const wl_replay *rp) { return rp->scale; }
