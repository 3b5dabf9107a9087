/*
 * The lazy LRU queue (sim/core/lruq.h) against a brute-force
 * move-to-front list over random touch/evict sequences: the live front is
 * always the least recently touched item, through compaction and growth,
 * with items in an array that moves (realloc) between calls.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "sim/core/lruq.h"
#include "check.h"

enum { NI = 3000 };

typedef struct item {
    double pad; /* the pos field need not come first */
    uint32_t pos;
    uint64_t last; /* reference: time of the last touch, 0 = not queued */
} item;

int main(void)
{
    sim_lruq q = {0};
    CHECK_INT_EQ(sim_lruq_front(&q, NULL, sizeof(item)), SIM_LRUQ_NONE);
    item *it = calloc(NI, sizeof *it);
    uint64_t x = 12345, now = 0;
    size_t live = 0;
    for (int step = 0; step < 400000; step++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t e = (uint32_t)(x >> 33) % NI;
        if ((x >> 20) % 5 != 0) { /* touch */
            live += it[e].last == 0;
            it[e].last = ++now;
            sim_lruq_touch(&q, &it[0].pos, sizeof *it, e);
        } else if (live > 0) { /* evict the least recently touched */
            uint32_t f = sim_lruq_front(&q, &it[0].pos, sizeof *it);
            uint32_t want = 0;
            uint64_t best = UINT64_MAX;
            for (uint32_t i = 0; i < NI; i++)
                if (it[i].last && it[i].last < best)
                    best = it[i].last, want = i;
            CHECK_INT_EQ(f, want);
            sim_lruq_pop_front(&q);
            it[f].last = 0;
            live--;
        }
        if (step % 50000 == 0) { /* move the items */
            item *m = malloc(NI * sizeof *m);
            for (uint32_t i = 0; i < NI; i++)
                m[i] = it[i];
            free(it);
            it = m;
        }
    }
    while (live > 0) { /* drain in order */
        uint32_t f = sim_lruq_front(&q, &it[0].pos, sizeof *it);
        CHECK(f != SIM_LRUQ_NONE);
        sim_lruq_pop_front(&q);
        it[f].last = 0;
        live--;
    }
    CHECK_INT_EQ(sim_lruq_front(&q, &it[0].pos, sizeof *it), SIM_LRUQ_NONE);
    sim_lruq_fini(&q);
    sim_lruq_fini(&q);
    free(it);
    puts("lruq: ok");
    return 0;
}
