/*
 * Binary-heap future-event set with (time, seq) order, intrusive heap
 * indices for cancel-by-handle, and a slab pool of events.
 *
 * A binary heap is the simple choice that is good enough here: the queue
 * holds one pending arrival, at most one step completion per destination
 * and a few control events, so it has tens of entries, and a calendar queue
 * or ladder queue would not pay for its complexity.
 */
#include "sim/core/evq.h"

#include <math.h>
#include <stdlib.h>

#include "sim/core/error.h"

#define SLAB_EVENTS 256

typedef struct slab {
    struct slab *next;
    sim_event ev[SLAB_EVENTS];
} slab;

struct sim_evq {
    sim_event **heap;
    uint32_t n, cap;
    uint64_t next_seq;
    uint64_t popped;
    double now;
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

void sim_evq_release(sim_evq *q, sim_event *e)
{
    SIM_ALWAYS(e->heap_idx == SIM_EVQ_IDLE);
    e->data = q->free_list;
    e->kind = UINT32_MAX; /* poison: a released event must not be used */
    q->free_list = e;
}

static inline int before(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void place(sim_evq *q, uint32_t i, sim_event *e)
{
    q->heap[i] = e;
    e->heap_idx = i;
}

static void sift_up(sim_evq *q, uint32_t i)
{
    sim_event *e = q->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(e, q->heap[parent]))
            break;
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, e);
}

static void sift_down(sim_evq *q, uint32_t i)
{
    sim_event *e = q->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && before(q->heap[c + 1], q->heap[c]))
            c++;
        if (!before(q->heap[c], e))
            break;
        place(q, i, q->heap[c]);
        i = c;
    }
    place(q, i, e);
}

void sim_evq_schedule(sim_evq *q, sim_event *e, double time)
{
    SIM_ALWAYS(e->heap_idx == SIM_EVQ_IDLE);
    SIM_ALWAYS(isfinite(time));
    SIM_ALWAYS(time >= q->now); /* scheduling into the past */
    if (q->n == q->cap) {
        q->cap *= 2;
        q->heap = sim_xrealloc(q->heap, q->cap * sizeof *q->heap);
    }
    e->time = time;
    e->seq = q->next_seq++;
    place(q, q->n, e);
    q->n++;
    sift_up(q, q->n - 1);
}

void sim_evq_cancel(sim_evq *q, sim_event *e)
{
    uint32_t i = e->heap_idx;
    if (i == SIM_EVQ_IDLE)
        return;
    SIM_ALWAYS(i < q->n && q->heap[i] == e);
    q->n--;
    e->heap_idx = SIM_EVQ_IDLE;
    if (i == q->n)
        return;
    place(q, i, q->heap[q->n]);
    /* The moved event may belong above or below position i. */
    if (i > 0 && before(q->heap[i], q->heap[(i - 1) / 2]))
        sift_up(q, i);
    else
        sift_down(q, i);
}

sim_event *sim_evq_pop(sim_evq *q)
{
    if (q->n == 0)
        return NULL;
    sim_event *top = q->heap[0];
    q->n--;
    if (q->n > 0) {
        place(q, 0, q->heap[q->n]);
        sift_down(q, 0);
    }
    top->heap_idx = SIM_EVQ_IDLE;
    SIM_ALWAYS(top->time >= q->now); /* time is monotone */
    q->now = top->time;
    q->popped++;
    return top;
}

const sim_event *sim_evq_peek(const sim_evq *q)
{
    return q->n ? q->heap[0] : NULL;
}

double sim_evq_now(const sim_evq *q) { return q->now; }

size_t sim_evq_size(const sim_evq *q) { return q->n; }

uint64_t sim_evq_popped(const sim_evq *q) { return q->popped; }
