/*
 * Lazy LRU queue; see lruq.h.  Only the slow path lives here: the touch
 * and the front read are inline in the header (the routers' hot loops).
 */
#include "sim/core/lruq.h"

#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"

void sim_lruq_fini(sim_lruq *q)
{
    free(q->q);
    memset(q, 0, sizeof *q);
}

void sim__lruq_make_room(sim_lruq *q, uint32_t *pos0, size_t stride)
{
    if (!q->q) {
        q->q = sim_xmalloc(1024 * sizeof *q->q);
        q->mask = 1023;
        q->head = q->tail = 0;
        return;
    }
    /* Compact: keep the live entries, in order, and renumber them. */
    uint64_t w = q->head;
    for (uint64_t p = q->head; p != q->tail; p++) {
        const uint32_t e = q->q[p & q->mask];
        if (SIM__LRUQ_POS(pos0, stride, e) == (uint32_t)p) {
            q->q[w & q->mask] = e;
            SIM__LRUQ_POS(pos0, stride, e) = (uint32_t)w;
            w++;
        }
    }
    q->tail = w;
    const uint64_t cap = q->mask + 1;
    /* Grow unless at least 3/4 of the array is free again: a compaction
     * reads every entry's item (a likely cache miss each), so it should
     * come at most once per 3/4 cap touches: at most 4/3 item reads per
     * touch, amortised (2 when growing only above half).  The order of the
     * live entries, and so every result, does not depend on this. */
    if (4 * (w - q->head) > cap) {
        uint32_t *g = sim_xmalloc(2 * cap * sizeof *g);
        for (uint64_t p = q->head; p != q->tail; p++)
            g[p & (2 * cap - 1)] = q->q[p & q->mask];
        free(q->q);
        q->q = g;
        q->mask = 2 * cap - 1;
    }
}
