/*
 * The per-block global prefix index: the sim/core/pfxidx.h interface
 * (as pfxidx_ref_*, see pfxidx_ref.h) as dualmap's global index was
 * before the run queue (models/routers/route_dualmap.c
 * gidx_*, crsim 0.2): one map entry per block hash, its destination bitset
 * and last touch, and a lazy LRU queue of blocks.  Kept unchanged as the
 * definition of the interface's semantics: tests/test_pfxidx.c drives it
 * and the run queue side by side, and equiv_dm_sim (tests/meson.build,
 * through tests/pfxidx_adapter.c) is the simulator built on it for
 * tests/pfxidx_equiv.sh.  One random
 * probe per block: slow, for tests only.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/lruq.h"
#include "sim/core/u64map.h"
#include "pfxidx_ref.h"

#define REF_NONE UINT32_MAX

typedef struct ref_ent {
    uint64_t hash;
    uint32_t pos;  /* position of its live LRU-queue entry (mod 2^32) */
    double last;   /* last touch, simulated s */
} ref_ent;

struct pfxidx_ref {
    uint32_t cap, words;
    sim_u64map idx; /* block hash -> entry */
    ref_ent *ent;
    uint64_t *bits;
    uint32_t used, ecap, free_e, live; /* free list threaded through .pos */
    sim_lruq lru;
};

pfxidx_ref *pfxidx_ref_create(uint32_t capacity, uint32_t n_dest)
{
    if (capacity == 0 || n_dest == 0)
        return NULL;
    pfxidx_ref *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = capacity;
    s->words = (n_dest + 63) / 64;
    s->free_e = REF_NONE;
    if (sim_u64map_init(&s->idx, 64) != SIM_OK) {
        free(s);
        return NULL;
    }
    return s;
}

void pfxidx_ref_destroy(pfxidx_ref *s)
{
    if (!s)
        return;
    sim_u64map_fini(&s->idx);
    sim_lruq_fini(&s->lru);
    free(s->ent);
    free(s->bits);
    free(s);
}

uint32_t pfxidx_ref_size(const pfxidx_ref *s)
{
    return s->live;
}

static uint64_t *bits_of(const pfxidx_ref *s, uint32_t e)
{
    return s->bits + (size_t)e * s->words;
}

static void drop_front(pfxidx_ref *s)
{
    const uint32_t e = sim_lruq_front(&s->lru, &s->ent[0].pos, sizeof *s->ent);
    sim_lruq_pop_front(&s->lru);
    sim_u64map_del(&s->idx, s->ent[e].hash);
    s->ent[e].pos = s->free_e;
    s->free_e = e;
    s->live--;
}

void pfxidx_ref_expire(pfxidx_ref *s, double before)
{
    if (!s->ent) /* nothing added yet (no entry array to name) */
        return;
    for (;;) {
        const uint32_t e = sim_lruq_front(&s->lru, &s->ent[0].pos, sizeof *s->ent);
        if (e == SIM_LRUQ_NONE || !(s->ent[e].last < before))
            return;
        drop_front(s);
    }
}

void pfxidx_ref_add(pfxidx_ref *s, const uint64_t *h, uint32_t n, uint32_t d, double now)
{
    for (uint32_t j = 0; j < n; j++) {
        uint32_t e = sim_u64map_get(&s->idx, h[j]);
        if (e == REF_NONE) {
            if (s->live >= s->cap)
                drop_front(s);
            if (s->free_e != REF_NONE) {
                e = s->free_e;
                s->free_e = s->ent[e].pos;
            } else {
                if (s->used == s->ecap) {
                    uint32_t cap = s->ecap ? 2 * s->ecap : 1024;
                    s->ent = sim_xrealloc(s->ent, cap * sizeof *s->ent);
                    s->bits = sim_xrealloc(s->bits, (size_t)cap * s->words * sizeof *s->bits);
                    s->ecap = cap;
                }
                e = s->used++;
            }
            s->ent[e].hash = h[j];
            memset(bits_of(s, e), 0, s->words * sizeof(uint64_t));
            sim_u64map_put(&s->idx, h[j], e);
            s->live++;
        }
        bits_of(s, e)[d / 64] |= (uint64_t)1 << (d % 64);
        s->ent[e].last = now;
        sim_lruq_touch(&s->lru, &s->ent[0].pos, sizeof *s->ent, e);
    }
}

uint32_t pfxidx_ref_match(const pfxidx_ref *s, const uint64_t *h, uint32_t n, uint32_t d)
{
    uint32_t m = 0;
    while (m < n) {
        uint32_t e = sim_u64map_get(&s->idx, h[m]);
        if (e == REF_NONE || !((bits_of(s, e)[d / 64] >> (d % 64)) & 1u))
            break;
        m++;
    }
    return m;
}
