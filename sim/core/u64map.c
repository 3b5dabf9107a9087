/*
 * Open-addressing u64 -> u32 map; see u64map.h.
 */
#include "sim/core/u64map.h"

#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"

#define mix64 sim_hash_mix64

static void empty_all(sim_u64map_slot *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s[i].val = SIM_U64MAP_NONE;
}

int sim_u64map_init(sim_u64map *m, size_t slots)
{
    m->slot = malloc(slots * sizeof *m->slot);
    m->mask = slots - 1;
    m->n = 0;
    if (!m->slot)
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating a router index");
    empty_all(m->slot, slots);
    return SIM_OK;
}

void sim_u64map_fini(sim_u64map *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}

void sim_u64map_clear(sim_u64map *m)
{
    empty_all(m->slot, m->mask + 1);
    m->n = 0;
}

/* Slot of `k`, or of the empty slot where it would go. */
static size_t slot_of(const sim_u64map *m, uint64_t k)
{
    size_t i = (size_t)mix64(k) & m->mask;
    while (m->slot[i].val != SIM_U64MAP_NONE && m->slot[i].key != k)
        i = (i + 1) & m->mask;
    return i;
}

uint32_t sim_u64map_get(const sim_u64map *m, uint64_t k)
{
    return m->slot[slot_of(m, k)].val;
}

static void grow(sim_u64map *m)
{
    sim_u64map g;
    if (sim_u64map_init(&g, 2 * (m->mask + 1)))
        sim_panic(__FILE__, __LINE__, "out of memory growing a router index");
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slot[i].val != SIM_U64MAP_NONE)
            g.slot[slot_of(&g, m->slot[i].key)] = m->slot[i];
    g.n = m->n;
    sim_u64map_fini(m);
    *m = g;
}

void sim_u64map_put(sim_u64map *m, uint64_t k, uint32_t v)
{
    if (2 * (m->n + 1) > m->mask + 1)
        grow(m);
    size_t i = slot_of(m, k);
    if (m->slot[i].val == SIM_U64MAP_NONE) {
        m->slot[i].key = k;
        m->n++;
    }
    m->slot[i].val = v;
}

void sim_u64map_del(sim_u64map *m, uint64_t k)
{
    size_t i = slot_of(m, k);
    if (m->slot[i].val == SIM_U64MAP_NONE)
        return;
    /* Backward shift: pull later members of the probe run into the hole. */
    for (size_t j = i;;) {
        j = (j + 1) & m->mask;
        if (m->slot[j].val == SIM_U64MAP_NONE)
            break;
        size_t h = (size_t)mix64(m->slot[j].key) & m->mask;
        /* Keep j if its home h lies cyclically in (i, j]. */
        int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            m->slot[i] = m->slot[j];
            i = j;
        }
    }
    m->slot[i].val = SIM_U64MAP_NONE;
    m->n--;
}

uint32_t sim_u64map_insert(sim_u64map *m, uint64_t k, uint32_t v)
{
    size_t i = slot_of(m, k);
    if (m->slot[i].val != SIM_U64MAP_NONE)
        return m->slot[i].val;
    if (2 * (m->n + 1) > m->mask + 1) {
        grow(m);
        i = slot_of(m, k);
    }
    m->slot[i].key = k;
    m->slot[i].val = v;
    m->n++;
    return SIM_U64MAP_NONE;
}

int sim_u64map_next(const sim_u64map *m, size_t *pos, uint64_t *k, uint32_t *v)
{
    for (size_t i = *pos; i <= m->mask; i++)
        if (m->slot[i].val != SIM_U64MAP_NONE) {
            *k = m->slot[i].key;
            *v = m->slot[i].val;
            *pos = i + 1;
            return 1;
        }
    *pos = m->mask + 1;
    return 0;
}
