/*
 * The future-event set of the discrete-event kernel.
 *
 * Events are ordered by (time, insertion sequence): two events at the same
 * simulated time fire in the order they were scheduled, which makes every
 * run bit-for-bit deterministic for a given seed and build.  The set is a
 * binary min-heap of event pointers with an intrusive heap index in each
 * event, so an event can be cancelled by its handle in O(log n).  Events
 * live in a pool owned by the queue (allocated in slabs, recycled through a
 * free list), so the event loop does not call malloc.
 *
 * Time is simulated seconds (double), starting at 0.  Scheduling an event
 * before the current time is an invariant violation and aborts.
 */
#ifndef CRSIM_SIM_EVQ_H
#define CRSIM_SIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

/* Heap index of an event that is not scheduled. */
#define SIM_EVQ_IDLE UINT32_MAX

/* One event.  `kind`, `target` and `data` are the caller's; the queue only
 * reads `time`, `seq` and `heap_idx`, which callers must not write. */
typedef struct sim_event {
    double time;       /* firing time, simulated seconds */
    uint64_t seq;      /* insertion sequence number, set by the queue */
    uint32_t heap_idx; /* position in the heap, SIM_EVQ_IDLE if not scheduled */
    uint32_t kind;     /* caller-defined event kind */
    uint32_t target;   /* caller-defined target (e.g. destination index) */
    void *data;        /* caller-defined payload, not owned by the queue */
} sim_event;

typedef struct sim_evq sim_evq;

/* Create an empty queue at time 0.  Returns NULL if out of memory.  Free it
 * with sim_evq_destroy(), which also frees every event of its pool. */
sim_evq *sim_evq_create(void);

/* Free the queue and all its events.  Accepts NULL. */
void sim_evq_destroy(sim_evq *q);

/* Take an unscheduled event from the pool (heap_idx = SIM_EVQ_IDLE, other
 * fields zero).  The event belongs to the queue; give it back with
 * sim_evq_release() when it will not be scheduled again.  Aborts if out of
 * memory. */
sim_event *sim_evq_alloc(sim_evq *q);

/* Return an unscheduled event to the pool.  Releasing a scheduled event is
 * an invariant violation (cancel it first). */
void sim_evq_release(sim_evq *q, sim_event *e);

/* Schedule `e` (which must not be scheduled) to fire at `time` seconds.
 * `time` must be >= sim_evq_now(q) and finite; otherwise the program aborts
 * (an event in the past is a kernel bug, not bad input).  O(log n). */
void sim_evq_schedule(sim_evq *q, sim_event *e, double time);

/* Remove a scheduled event without firing it; it stays allocated and may be
 * scheduled again.  Cancelling an unscheduled event is a no-op.  O(log n). */
void sim_evq_cancel(sim_evq *q, sim_event *e);

/* Remove and return the earliest event (ties: the one scheduled first), and
 * advance the clock to its time.  Returns NULL if the queue is empty (the
 * clock does not move).  The event is unscheduled but still allocated. */
sim_event *sim_evq_pop(sim_evq *q);

/* The earliest scheduled event without removing it, or NULL. */
const sim_event *sim_evq_peek(const sim_evq *q);

/* Current simulated time, seconds: the time of the last popped event. */
double sim_evq_now(const sim_evq *q);

/* Number of scheduled events. */
size_t sim_evq_size(const sim_evq *q);

/* Number of events popped so far (for benchmarks). */
uint64_t sim_evq_popped(const sim_evq *q);

#endif
