/*
 * Open-addressing u64 -> u32 map; see u64map.h.
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* splitmix64 finaliser: keys may be small integers or hashes. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

int sim_u64map_init(sim_u64map *m, size_t slots)
{
    m->key = malloc(slots * sizeof *m->key);
    m->val = malloc(slots * sizeof *m->val);
    m->mask = slots - 1;
    m->n = 0;
    if (!m->key || !m->val) {
        free(m->key);
        free(m->val);
        m->key = NULL;
        m->val = NULL;
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating a router index");
    }
    memset(m->val, 0xff, slots * sizeof *m->val);
    return SIM_OK;
}

void sim_u64map_fini(sim_u64map *m)
{
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

void sim_u64map_clear(sim_u64map *m)
{
    memset(m->val, 0xff, (m->mask + 1) * sizeof *m->val);
    m->n = 0;
}

/* Slot of `k`, or of the empty slot where it would go. */
static size_t slot_of(const sim_u64map *m, uint64_t k)
{
    size_t i = (size_t)mix64(k) & m->mask;
    while (m->val[i] != SIM_U64MAP_NONE && m->key[i] != k)
        i = (i + 1) & m->mask;
    return i;
}

uint32_t sim_u64map_get(const sim_u64map *m, uint64_t k)
{
    return m->val[slot_of(m, k)];
}

static void grow(sim_u64map *m)
{
    sim_u64map g;
    if (sim_u64map_init(&g, 2 * (m->mask + 1)))
        sim_panic(__FILE__, __LINE__, "out of memory growing a router index");
    for (size_t i = 0; i <= m->mask; i++)
        if (m->val[i] != SIM_U64MAP_NONE) {
            size_t j = slot_of(&g, m->key[i]);
            g.key[j] = m->key[i];
            g.val[j] = m->val[i];
        }
    g.n = m->n;
    sim_u64map_fini(m);
    *m = g;
}

void sim_u64map_put(sim_u64map *m, uint64_t k, uint32_t v)
{
    if (2 * (m->n + 1) > m->mask + 1)
        grow(m);
    size_t i = slot_of(m, k);
    if (m->val[i] == SIM_U64MAP_NONE) {
        m->key[i] = k;
        m->n++;
    }
    m->val[i] = v;
}

void sim_u64map_del(sim_u64map *m, uint64_t k)
{
    size_t i = slot_of(m, k);
    if (m->val[i] == SIM_U64MAP_NONE)
        return;
    /* Backward shift: pull later members of the probe run into the hole. */
    for (size_t j = i;;) {
        j = (j + 1) & m->mask;
        if (m->val[j] == SIM_U64MAP_NONE)
            break;
        size_t h = (size_t)mix64(m->key[j]) & m->mask;
        /* Keep j if its home h lies cyclically in (i, j]. */
        int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            m->key[i] = m->key[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->val[i] = SIM_U64MAP_NONE;
    m->n--;
}
