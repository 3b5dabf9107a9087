/*
 * The pcache.h interface implemented on the per-block reference cache
 * (pcache_ref.c), with the tree's duplicate rule (a sequence registering a
 * block that is already registered pins the cached copy and frees its own).
 * Linked instead of models/pcache.c into a second build of the simulator
 * (tests/meson.build: equiv_sim), so that tests/pcache_equiv.sh can check
 * that the radix tree and the per-block cache give bit-identical
 * simulations.  Slow (one table lookup per block) and for tests only.
 */
#include <stdlib.h>
#include <string.h>

#include "models/pcache.h"
#include "sim/core/error.h"
#include "pcache_ref.h"

typedef struct blist {
    uint32_t *b;
    uint32_t n, cap;
} blist;

struct pcache {
    pcache_ref *r;
    blist *l;        /* l[h - 1]: blocks of the sequence with handle h */
    uint32_t n_l, cap_l;
    uint32_t *free_h; /* free handles */
    uint32_t n_free_h;
    uint32_t *tmp;
    uint32_t cap_tmp;
    blist anon;         /* blocks taken by pcache_take, not granted yet: */
    uint32_t anon_head; /* anon.b[anon_head .. anon.n) */
};

pcache *pcache_create(uint32_t n_blocks)
{
    pcache *c = calloc(1, sizeof *c);
    if (!c || !(c->r = pcache_ref_create(n_blocks))) {
        free(c);
        return NULL;
    }
    return c;
}

void pcache_destroy(pcache *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_l; i++)
        free(c->l[i].b);
    free(c->l);
    free(c->free_h);
    free(c->tmp);
    free(c->anon.b);
    pcache_ref_destroy(c->r);
    free(c);
}

uint32_t pcache_capacity(const pcache *c) { return pcache_ref_capacity(c->r); }
uint32_t pcache_available(const pcache *c) { return pcache_ref_available(c->r); }
uint32_t pcache_blank(const pcache *c) { return pcache_ref_blank(c->r); }
uint32_t pcache_pinned(const pcache *c) { return pcache_ref_pinned(c->r); }
uint32_t pcache_cached(const pcache *c) { return pcache_ref_cached(c->r); }
uint32_t pcache_nodes(const pcache *c) { return pcache_ref_cached(c->r); }
uint64_t pcache_version(const pcache *c) { return pcache_ref_version(c->r); }
void pcache_clear(pcache *c) { pcache_ref_clear(c->r); }
void pcache_check(const pcache *c) { pcache_ref_check(c->r); }

uint32_t pcache_match(const pcache *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned)
{
    return pcache_ref_match(c->r, hashes, n, n_unpinned);
}

static blist *list_of(pcache *c, pcache_seq *s)
{
    if (s->node == 0) {
        uint32_t h;
        if (c->n_free_h) {
            h = c->free_h[--c->n_free_h];
        } else {
            if (c->n_l == c->cap_l) {
                c->cap_l = c->cap_l ? 2 * c->cap_l : 64;
                c->l = sim_xrealloc(c->l, c->cap_l * sizeof *c->l);
                c->free_h = sim_xrealloc(c->free_h, c->cap_l * sizeof *c->free_h);
            }
            c->l[c->n_l] = (blist){0};
            h = ++c->n_l;
        }
        s->node = h;
        c->l[h - 1].n = 0;
    }
    return &c->l[s->node - 1];
}

static void reserve(blist *l, uint32_t n)
{
    if (n <= l->cap)
        return;
    l->cap = l->cap ? l->cap : 16;
    while (l->cap < n)
        l->cap *= 2;
    l->b = sim_xrealloc(l->b, l->cap * sizeof *l->b);
}

void pcache_seq_pin(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t m)
{
    blist *l = list_of(c, s);
    SIM_ALWAYS(l->n == 0);
    reserve(l, m);
    SIM_ALWAYS(pcache_ref_match_blocks(c->r, hashes, m, l->b, NULL) == m);
    pcache_ref_pin_blocks(c->r, l->b, m);
    l->n = m;
    s->n_tree = m;
    s->n_priv = 0;
    s->stuck = false;
}

uint32_t pcache_seq_alloc(pcache *c, pcache_seq *s, uint32_t n)
{
    blist *l = list_of(c, s);
    reserve(l, l->n + n + 1);
    const uint32_t got = pcache_ref_alloc_run(c->r, l->b + l->n, n);
    l->n += got;
    s->n_priv += got;
    return got;
}

uint32_t pcache_take(pcache *c, uint32_t n)
{
    if (c->anon_head > 0 && 2 * c->anon_head >= c->anon.n) { /* compact */
        memmove(c->anon.b, c->anon.b + c->anon_head,
                (c->anon.n - c->anon_head) * sizeof *c->anon.b);
        c->anon.n -= c->anon_head;
        c->anon_head = 0;
    }
    reserve(&c->anon, c->anon.n + n + 1);
    const uint32_t got = pcache_ref_alloc_run(c->r, c->anon.b + c->anon.n, n);
    c->anon.n += got;
    return got;
}

/* Which taken block goes to which sequence does not matter (block indices
 * are free, pcache_ref_alloc_run): first taken, first granted. */
void pcache_seq_grant(pcache *c, pcache_seq *s, uint32_t n)
{
    SIM_ALWAYS(c->anon.n - c->anon_head >= n);
    blist *l = list_of(c, s);
    reserve(l, l->n + n + 1);
    memcpy(l->b + l->n, c->anon.b + c->anon_head, (size_t)n * sizeof *l->b);
    l->n += n;
    s->n_priv += n;
    c->anon_head += n;
}

uint32_t pcache_seq_commit(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t full)
{
    SIM_ALWAYS(full <= s->n_tree + s->n_priv);
    if (s->stuck || full <= s->n_tree)
        return 0;
    blist *l = list_of(c, s);
    uint32_t reg = 0;
    for (uint32_t i = s->n_tree; i < full; i++) {
        if (pcache_ref_commit(c->r, l->b[i], hashes[i], i ? hashes[i - 1] : 0)) {
            reg++;
            continue;
        }
        /* A duplicate: pin the registered copy, free this one. */
        if (c->cap_tmp < i + 1) {
            c->cap_tmp = 2 * (i + 1);
            c->tmp = sim_xrealloc(c->tmp, c->cap_tmp * sizeof *c->tmp);
        }
        SIM_ALWAYS(pcache_ref_match_blocks(c->r, hashes, i + 1, c->tmp, NULL) == i + 1);
        pcache_ref_pin_blocks(c->r, &c->tmp[i], 1);
        pcache_ref_release(c->r, &l->b[i], 1);
        l->b[i] = c->tmp[i];
    }
    s->n_priv -= full - s->n_tree;
    s->n_tree = full;
    return reg;
}

void pcache_seq_release(pcache *c, pcache_seq *s)
{
    if (s->node) {
        blist *l = &c->l[s->node - 1];
        pcache_ref_release(c->r, l->b, l->n);
        l->n = 0;
        c->free_h[c->n_free_h++] = s->node;
    }
    *s = (pcache_seq){0};
}

/* KV events are not modelled on the reference cache: the equivalence build
 * runs no router that consumes them. */
void pcache_set_observer(pcache *c, pcache_observer fn, void *ctx)
{
    (void)c;
    (void)ctx;
    SIM_ALWAYS(fn == NULL);
}

/* The per-block reference looks every block up, whatever the lists are:
 * tests/pcache_equiv.sh thereby checks that the tree's chained shortcut
 * (a run's last hash standing for the run) changes no simulation. */
void pcache_assume_chained(pcache *c, bool on)
{
    (void)c;
    (void)on;
}
