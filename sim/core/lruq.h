/*
 * A lazy LRU queue: the least- to most-recently-touched order of a set of
 * items (u32 indices into the caller's array), kept as a FIFO queue of
 * item indices with lazy deletion.  A touch appends the item and records
 * the queue position in the item (its "pos" field); its earlier queue
 * entries go stale.  An entry is live when its item records its position,
 * so the live entries in queue order are exactly a move-to-front list,
 * without that list's two random writes per touch, and the next victims
 * are known ahead (the queue prefetches their items).  Used by the
 * routers' indexes (dualmap's per-destination prefix index, preble's
 * prefix tree); the engine's prefix cache (models/pcache.c) uses the same
 * scheme inline.
 *
 * The items live in the caller's array, which may move (realloc): every
 * call takes `pos0`, the address of item 0's pos field, and `stride`, the
 * size of one item in bytes, so the queue reads item e's position at
 * pos0 + e * stride.  Positions are u64 in the queue and stored mod 2^32
 * in the items (a queue never holds 2^32 entries).
 *
 * Plain data: a zeroed sim_lruq is an empty queue (its array is allocated
 * on the first touch); sim_lruq_fini frees it.
 */
#ifndef CRSIM_SIM_LRUQ_H
#define CRSIM_SIM_LRUQ_H

#include <stddef.h>
#include <stdint.h>

#include "sim/core/prefetch.h"

/* Returned by sim_lruq_front when the queue holds no live entry. */
#define SIM_LRUQ_NONE UINT32_MAX
/* How many entries ahead of the head sim_lruq_front prefetches items. */
#define SIM_LRUQ_AHEAD 16

typedef struct sim_lruq {
    uint32_t *q;         /* NULL before the first touch */
    uint64_t mask;       /* capacity - 1 (a power of two) */
    uint64_t head, tail; /* positions (monotone); entries [head, tail) */
} sim_lruq;

/* Item e's recorded position (an lvalue). */
#define SIM__LRUQ_POS(pos0, stride, e) \
    (*(uint32_t *)(void *)((char *)(pos0) + (size_t)(e) * (stride)))

/* Free the queue's array.  Safe on a zeroed queue and twice.  Cannot fail. */
void sim_lruq_fini(sim_lruq *q);

/* Internal: make room for one more entry (allocate 1024 entries on first
 * use; else squeeze the stale entries out and double the array if it stays
 * more than a quarter full: amortised O(1) per touch, at most 4/3 item
 * reads).  Aborts if out of memory. */
void sim__lruq_make_room(sim_lruq *q, uint32_t *pos0, size_t stride);

/* Make item e (live or new) the most recently touched.  O(1) amortised;
 * aborts if out of memory while growing. */
static inline void sim_lruq_touch(sim_lruq *q, uint32_t *pos0, size_t stride, uint32_t e)
{
    /* Until it is queued, e's old position must not match a stale entry
     * that compaction would keep: point it past the queue's end. */
    SIM__LRUQ_POS(pos0, stride, e) = (uint32_t)q->tail;
    if (!q->q || q->tail - q->head > q->mask)
        sim__lruq_make_room(q, pos0, stride);
    const uint64_t p = q->tail++;
    q->q[p & q->mask] = e;
    SIM__LRUQ_POS(pos0, stride, e) = (uint32_t)p;
}

/* The item of the entry at position p (head <= p < tail).  Cannot fail. */
static inline uint32_t sim_lruq_at(const sim_lruq *q, uint64_t p)
{
    return q->q[p & q->mask];
}

/* The least recently touched item, after dropping the stale entries in
 * front of it, or SIM_LRUQ_NONE if no entry is live.  The item stays in
 * the queue: remove it with sim_lruq_pop_front (or touch it).  Prefetches
 * the items SIM_LRUQ_AHEAD entries on.  A caller that also wants, e.g.,
 * the map slot of a later victim in cache can prefetch it from
 * sim_lruq_at(q, q->head + k) when q->head + k < q->tail.  Cannot fail. */
static inline uint32_t sim_lruq_front(sim_lruq *q, uint32_t *pos0, size_t stride)
{
    for (; q->head != q->tail; q->head++) {
        const uint64_t p = q->head;
        if (p + SIM_LRUQ_AHEAD < q->tail)
            SIM_PREFETCH(&SIM__LRUQ_POS(pos0, stride, q->q[(p + SIM_LRUQ_AHEAD) & q->mask]));
        const uint32_t e = q->q[p & q->mask];
        if (SIM__LRUQ_POS(pos0, stride, e) == (uint32_t)p)
            return e;
    }
    return SIM_LRUQ_NONE;
}

/* Remove the live front entry that sim_lruq_front just returned (the item
 * is then in no queue position; the caller recycles or frees it).
 * Cannot fail. */
static inline void sim_lruq_pop_front(sim_lruq *q)
{
    q->head++;
}

#endif
