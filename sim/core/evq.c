/*
 * Binary-heap future-event set with (time, seq) order, intrusive heap
 * indices for cancel-by-handle, and a slab pool of events.
 *
 * A binary heap is the simple choice that is good enough here: the queue
 * holds one pending arrival, at most one step completion per destination
 * and a few control events, so it has tens of entries on the paper's
 * fleets and ~R at fleet size R, and a calendar queue or ladder queue
 * would not pay for its complexity.  Its entries carry the (time, seq)
 * key beside the event's handle (`hent`): at R = 1000 (a 10-level heap)
 * a sift loading every compared event from its slab was 7 % of a run;
 * with the keys in the array, cacheroute at R = 1000 3.76 -> 3.65 us of
 * user time a request (round 12).
 *
 * Lazy pop (round 4, docs/performance.md): most popped events are
 * scheduled again at once by their handler (an engine's next step, the
 * next arrival, the next scrape).  So sim_evq_pop() leaves the event it
 * returns at the root, logically removed (`top_out`); scheduling that same
 * event again replaces the root and sifts it down once, instead of a
 * removal (last leaf to the root, sift down) plus an insertion (sift up).
 * Any other operation first takes the stale root out.  While it stays,
 * the heap is still valid: every event scheduled after a pop has a time
 * >= the popped time and a larger sequence number, so nothing sifts above
 * the root.  The order of events is a property of the (time, seq) keys
 * alone, which are unique, so the heap's shape never changes which event
 * fires next: results are bit-identical to the eager queue.
 *
 * Sifting down uses Floyd's variant (the hole goes down the path of
 * smaller children to a leaf, then the event climbs back up): one
 * comparison per level instead of two, and the events sifted down here
 * (a new step end, the next arrival) mostly belong near the bottom.
 */
#include "sim/core/evq.h"

#include <math.h>
#include <stdlib.h>

#include "sim/core/error.h"

#define SLAB_EVENTS 256

/* A heap entry: the event's key copied beside its handle, so that sifting
 * compares entries that lie side by side in the heap array instead of
 * loading each event from its slab (round 12, docs/performance.md). */
typedef struct hent {
    double time;
    uint64_t seq;
    sim_event *e;
} hent;

typedef struct slab {
    struct slab *next;
    sim_event ev[SLAB_EVENTS];
} slab;

struct sim_evq {
    hent *heap;
    uint32_t n, cap;
    uint64_t next_seq;
    uint64_t popped;
    double now;
    /* heap[0] is the last popped event, logically removed (n counts it). */
    int top_out;
    slab *slabs;
    /* Free events are chained through their `data` field. */
    sim_event *free_list;
};

sim_evq *sim_evq_create(void)
{
    sim_evq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cap = 64;
    q->heap = malloc(q->cap * sizeof *q->heap);
    if (!q->heap) {
        free(q);
        return NULL;
    }
    return q;
}

void sim_evq_destroy(sim_evq *q)
{
    if (!q)
        return;
    slab *s = q->slabs;
    while (s) {
        slab *next = s->next;
        free(s);
        s = next;
    }
    free(q->heap);
    free(q);
}

sim_event *sim_evq_alloc(sim_evq *q)
{
    if (!q->free_list) {
        slab *s = sim_xmalloc(sizeof *s);
        s->next = q->slabs;
        q->slabs = s;
        for (int i = SLAB_EVENTS - 1; i >= 0; i--) {
            s->ev[i].data = q->free_list;
            q->free_list = &s->ev[i];
        }
    }
    sim_event *e = q->free_list;
    q->free_list = e->data;
    *e = (sim_event){.heap_idx = SIM_EVQ_IDLE};
    return e;
}

static void drop_top(sim_evq *q);

void sim_evq_release(sim_evq *q, sim_event *e)
{
    SIM_ALWAYS(e->heap_idx == SIM_EVQ_IDLE);
    if (q->top_out && q->heap[0].e == e)
        drop_top(q); /* the popped event, still at the root */
    e->data = q->free_list;
    e->kind = UINT32_MAX; /* poison: a released event must not be used */
    q->free_list = e;
}

static inline int before(const hent *a, const hent *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void place(sim_evq *q, uint32_t i, hent h)
{
    q->heap[i] = h;
    h.e->heap_idx = i;
}

static inline hent entry(sim_event *e) { return (hent){e->time, e->seq, e}; }

static void sift_up(sim_evq *q, uint32_t i)
{
    const hent h = q->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(&h, &q->heap[parent]))
            break;
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, h);
}

/* Sift heap[i] down (Floyd): move the hole at i down the path of smaller
 * children to a leaf, then let the event climb back up while it is before
 * its parent.  The final position is the one the textbook sift down
 * finds (the keys on the path are increasing). */
static void sift_down(sim_evq *q, uint32_t i)
{
    const hent h = q->heap[i];
    const uint32_t top = i, n = q->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n) {
            /* Branch-free choice of the smaller child: the keys are
             * random, so a branch here mispredicts half the time. */
            const hent *a = &q->heap[c + 1], *b = &q->heap[c];
            c += (uint32_t)((a->time < b->time) | ((a->time == b->time) & (a->seq < b->seq)));
        }
        place(q, i, q->heap[c]);
        i = c;
    }
    while (i > top) {
        uint32_t parent = (i - 1) / 2;
        if (!before(&h, &q->heap[parent]))
            break;
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, h);
}

/* Take the stale root (the last popped event, not scheduled again) out. */
static void drop_top(sim_evq *q)
{
    q->top_out = 0;
    q->n--;
    if (q->n > 0) {
        place(q, 0, q->heap[q->n]);
        sift_down(q, 0);
    }
}

void sim_evq_schedule(sim_evq *q, sim_event *e, double time)
{
    SIM_ALWAYS(e->heap_idx == SIM_EVQ_IDLE);
    SIM_ALWAYS(isfinite(time));
    SIM_ALWAYS(time >= q->now); /* scheduling into the past */
    e->time = time;
    e->seq = q->next_seq++;
    if (q->top_out && q->heap[0].e == e) { /* the popped event again */
        q->top_out = 0;
        q->heap[0].time = time;
        q->heap[0].seq = e->seq;
        e->heap_idx = 0;
        sift_down(q, 0);
        return;
    }
    /* With a stale root kept: the new key is after it, so it stays. */
    if (q->n == q->cap) {
        q->cap *= 2;
        q->heap = sim_xrealloc(q->heap, q->cap * sizeof *q->heap);
    }
    place(q, q->n, entry(e));
    q->n++;
    sift_up(q, q->n - 1);
}

void sim_evq_cancel(sim_evq *q, sim_event *e)
{
    uint32_t i = e->heap_idx;
    if (i == SIM_EVQ_IDLE)
        return;
    SIM_ALWAYS(i < q->n && q->heap[i].e == e && !(q->top_out && i == 0));
    q->n--;
    e->heap_idx = SIM_EVQ_IDLE;
    if (i == q->n)
        return;
    place(q, i, q->heap[q->n]);
    /* The moved event may belong above or below position i (never above
     * a stale root: its key is after the root's). */
    if (i > 0 && before(&q->heap[i], &q->heap[(i - 1) / 2]))
        sift_up(q, i);
    else
        sift_down(q, i);
}

sim_event *sim_evq_pop(sim_evq *q)
{
    if (q->top_out)
        drop_top(q);
    if (q->n == 0)
        return NULL;
    sim_event *top = q->heap[0].e;
    q->top_out = 1; /* left at the root until the next operation */
    top->heap_idx = SIM_EVQ_IDLE;
    SIM_ALWAYS(top->time >= q->now); /* time is monotone */
    q->now = top->time;
    q->popped++;
    return top;
}

const sim_event *sim_evq_peek(const sim_evq *q)
{
    if (!q->top_out)
        return q->n ? q->heap[0].e : NULL;
    /* The stale root's successor is the smaller of its children. */
    if (q->n < 2)
        return NULL;
    if (q->n > 2 && before(&q->heap[2], &q->heap[1]))
        return q->heap[2].e;
    return q->heap[1].e;
}

double sim_evq_now(const sim_evq *q) { return q->now; }

size_t sim_evq_size(const sim_evq *q) { return q->n - (q->top_out ? 1u : 0u); }

uint64_t sim_evq_popped(const sim_evq *q) { return q->popped; }
