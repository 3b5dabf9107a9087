/*
 * The per-engine prefix cache as a radix tree of block runs (pcache.h).
 *
 * Nodes live in one growable array; node 0 is the root (no blocks, never
 * pinned, never in the LRU list).  A live node has len >= 1; a free node
 * has len 0 and is chained through `lnext` on the free list (its hash
 * buffer is kept for reuse).  The map sends each live node's first block
 * hash to the node: a child of node x whose first hash is h is found by
 * one probe and a check that its parent is x.  Block hashes are nonzero
 * (wl_block_hash remaps 0), but nothing here depends on it.
 *
 * Counts: every block is blank (n_free), held (n_pinned: private blocks
 * plus the blocks of nodes with ref > 0) or cached and unpinned (n_lru:
 * the blocks of nodes with ref == 0); n_free + n_pinned + n_lru = n.
 *
 * Pin counts never grow down a path (a sequence pinning a node pins all
 * its ancestors), so an unpinned node has no pinned descendant, and as a
 * sequence releases its deepest node first, a node always sits colder in
 * the LRU list than its parent: eviction, which takes blocks from the tail
 * of the coldest node, only ever shortens leaves.
 */
#include "models/pcache.h"

#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/hash.h"
#include "sim/core/u64map.h"

#define NONE UINT32_MAX
#define ROOT 0u

typedef struct node {
    uint64_t *h;         /* hashes of the run, h[0..len): buf (owned), or a
                            view into a sequence's stable hash list
                            (pcache_seq.stable), never written */
    uint64_t *buf;       /* owned buffer of cap hashes (kept for reuse) */
    uint32_t len, cap;
    uint32_t parent;     /* node holding the blocks just before h[0] */
    uint32_t ref;        /* sequences whose path includes this node */
    uint32_t nchild;
    uint32_t lprev, lnext; /* LRU list (ref == 0), cold to warm; free list */
} node;

struct pcache {
    uint32_t n;                 /* blocks in the pool */
    uint32_t n_free, n_pinned, n_lru, n_cached;
    uint32_t n_live;            /* live nodes, root excluded */
    uint64_t version;
    node *nd;
    uint32_t nd_cap, nd_used, free_head;
    uint32_t lru_head, lru_tail; /* coldest, warmest */
    sim_u64map map;             /* first hash of a live node -> node */
    bool chained;               /* pcache_assume_chained */
    pcache_observer obs;        /* KV-event observer, or NULL */
    void *obs_ctx;
};

pcache *pcache_create(uint32_t n_blocks)
{
    if (n_blocks == 0)
        return NULL;
    pcache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->nd_cap = 64;
    c->nd = calloc(c->nd_cap, sizeof *c->nd);
    if (!c->nd || sim_u64map_init(&c->map, 64)) {
        free(c->nd);
        free(c);
        return NULL;
    }
    c->n = n_blocks;
    c->n_free = n_blocks;
    c->nd[ROOT] = (node){.parent = NONE, .lprev = NONE, .lnext = NONE};
    c->nd_used = 1;
    c->free_head = NONE;
    c->lru_head = c->lru_tail = NONE;
    return c;
}

void pcache_destroy(pcache *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->nd_used; i++)
        free(c->nd[i].buf);
    free(c->nd);
    sim_u64map_fini(&c->map);
    free(c);
}

void pcache_set_observer(pcache *c, pcache_observer fn, void *ctx)
{
    c->obs = fn;
    c->obs_ctx = ctx;
}

void pcache_assume_chained(pcache *c, bool on) { c->chained = on; }

uint32_t pcache_capacity(const pcache *c) { return c->n; }
uint32_t pcache_available(const pcache *c) { return c->n_free + c->n_lru; }
uint32_t pcache_blank(const pcache *c) { return c->n_free; }
uint32_t pcache_pinned(const pcache *c) { return c->n_pinned; }
uint32_t pcache_cached(const pcache *c) { return c->n_cached; }
uint32_t pcache_nodes(const pcache *c) { return c->n_live; }
uint64_t pcache_hash_capacity(const pcache *c)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->nd_used; i++)
        n += c->nd[i].cap;
    return n;
}
uint64_t pcache_version(const pcache *c) { return c->version; }

/* ---- nodes ---- */

static inline bool owned(const node *x) { return x->h == x->buf; }

/* Room for len hashes in x's own buffer, x->h owned (or the node empty). */
static void reserve(node *x, uint32_t len)
{
    if (len <= x->cap)
        return;
    uint32_t cap = x->cap ? x->cap : 16;
    while (cap < len)
        cap *= 2;
    x->h = x->buf = sim_xrealloc(x->buf, cap * sizeof *x->buf);
    x->cap = cap;
}

/* x, a view, takes its own copy of its run with room for len hashes. */
static void own(node *x, uint32_t len)
{
    const uint64_t *v = x->h;
    x->h = x->buf;
    if (len > x->cap) {
        free(x->buf);
        x->h = x->buf = NULL;
        x->cap = 0;
        reserve(x, len);
    }
    memcpy(x->buf, v, (size_t)x->len * sizeof *x->buf);
}

/* A fresh node (fields zeroed but its kept hash buffer) with room for
 * `len` hashes.  May move c->nd: re-read node pointers afterwards. */
static uint32_t node_new(pcache *c, uint32_t len)
{
    uint32_t i;
    if (c->free_head != NONE) {
        i = c->free_head;
        c->free_head = c->nd[i].lnext;
    } else {
        if (c->nd_used == c->nd_cap) {
            c->nd_cap *= 2;
            c->nd = sim_xrealloc(c->nd, c->nd_cap * sizeof *c->nd);
            memset(c->nd + c->nd_used, 0, (c->nd_cap - c->nd_used) * sizeof *c->nd);
        }
        i = c->nd_used++;
    }
    node *x = &c->nd[i];
    x->h = x->buf;
    if (len > x->cap) { /* nothing to keep: a new buffer, not a realloc's copy */
        free(x->buf);
        x->cap = (len + 7) & ~7u; /* the run's known length: its sequence's hint, or the
                                    blocks committed now */
        x->h = x->buf = sim_xmalloc(x->cap * sizeof *x->buf);
    }
    x->len = 0;
    x->parent = NONE;
    x->ref = 0;
    x->nchild = 0;
    x->lprev = x->lnext = NONE;
    c->n_live++;
    return i;
}

/* Give back most of x's buffer when it holds far fewer hashes than it
 * has room for (eviction shortened it): a buffer stays within 4x of its
 * run (and 64 hashes), not the size of the longest run it ever held.
 * Memory only; contents and results are unchanged. */
static void trim(node *x)
{
    const uint32_t len = owned(x) ? x->len : 0; /* a view uses none of it */
    if (x->cap <= 64 || x->cap < 4 * (uint64_t)len)
        return;
    uint32_t cap = 16;
    while (cap < 2 * len)
        cap *= 2;
    if (len == 0) {
        if (owned(x))
            x->h = NULL;
        free(x->buf);
        x->buf = NULL;
        x->cap = 0;
        return;
    }
    x->h = x->buf = sim_xrealloc(x->buf, cap * sizeof *x->buf);
    x->cap = cap;
}

static void node_free(pcache *c, uint32_t i)
{
    node *x = &c->nd[i];
    x->len = 0;
    x->parent = NONE;
    x->lnext = c->free_head;
    c->free_head = i;
    c->n_live--;
}

/* dst[0..k) = src[0..k): a plain loop for the few hashes of a decode
 * step's commit (most calls), where a library call costs more than the
 * copy. */
static inline void copy_hashes(uint64_t *restrict dst, const uint64_t *restrict src, uint32_t k)
{
    if (k <= 4) {
        for (uint32_t i = 0; i < k; i++)
            dst[i] = src[i];
        return;
    }
    memcpy(dst, src, (size_t)k * sizeof *dst);
}

/* Length of the common prefix of a[0..n) and b[0..n); with `chained`
 * (pcache_assume_chained) by sim_chain_common. */
static inline uint32_t common(const uint64_t *a, const uint64_t *b, uint32_t n, bool chained)
{
    if (chained)
        return sim_chain_common(a, b, n);
    if (memcmp(a, b, (size_t)n * sizeof *a) == 0)
        return n;
    uint32_t k = 0;
    while (a[k] == b[k])
        k++;
    return k;
}

/* ---- LRU list of unpinned nodes (head = coldest) ---- */

static void lru_unlink(pcache *c, uint32_t i)
{
    node *x = &c->nd[i];
    if (x->lprev != NONE)
        c->nd[x->lprev].lnext = x->lnext;
    else
        c->lru_head = x->lnext;
    if (x->lnext != NONE)
        c->nd[x->lnext].lprev = x->lprev;
    else
        c->lru_tail = x->lprev;
    x->lprev = x->lnext = NONE;
}

static void lru_push_warm(pcache *c, uint32_t i)
{
    node *x = &c->nd[i];
    x->lnext = NONE;
    x->lprev = c->lru_tail;
    if (c->lru_tail != NONE)
        c->nd[c->lru_tail].lnext = i;
    else
        c->lru_head = i;
    c->lru_tail = i;
}

/* Put i just warmer than `after` (which is in the list). */
static void lru_insert_after(pcache *c, uint32_t after, uint32_t i)
{
    node *x = &c->nd[i];
    x->lprev = after;
    x->lnext = c->nd[after].lnext;
    if (x->lnext != NONE)
        c->nd[x->lnext].lprev = i;
    else
        c->lru_tail = i;
    c->nd[after].lnext = i;
}

/* ---- tree operations ---- */

/* Split live node i after its first j blocks (0 < j < len): a new node
 * takes the front run and becomes i's parent; i keeps the back run, its
 * children, its sequences (who pin both parts) and its place in the LRU
 * list, the front going just warmer than it (in the per-block order the
 * back blocks, released first, are colder).  Returns the front node. */
static uint32_t split(pcache *c, uint32_t i, uint32_t j)
{
    SIM_ALWAYS(j > 0 && j < c->nd[i].len);
    const bool view = !owned(&c->nd[i]);
    const uint32_t f = node_new(c, view ? 0 : j);
    node *x = &c->nd[i], *y = &c->nd[f];
    if (view) { /* both halves stay views of the same list */
        y->h = x->h;
        x->h += j;
    } else {
        memcpy(y->h, x->h, (size_t)j * sizeof *y->h);
        memmove(x->h, x->h + j, (size_t)(x->len - j) * sizeof *x->h);
    }
    y->len = j;
    y->parent = x->parent;
    y->ref = x->ref;
    y->nchild = 1;
    x->len -= j;
    x->parent = f;
    /* The back run's first hash was interior: it is in the map only if
     * it collides with another run's first hash (64-bit hashes). */
    SIM_ALWAYS(sim_u64map_get(&c->map, x->h[0]) == NONE);
    sim_u64map_put(&c->map, y->h[0], f);
    sim_u64map_put(&c->map, x->h[0], i);
    if (x->ref == 0)
        lru_insert_after(c, i, f);
    return f;
}

/* Child of x whose run starts with hash h, or NONE. */
static inline uint32_t child(const pcache *c, uint32_t x, uint64_t h)
{
    uint32_t ch = sim_u64map_get(&c->map, h);
    return ch != NONE && c->nd[ch].parent == x ? ch : NONE;
}

/* Pin node i (its ancestors are pinned separately). */
static inline void pin_node(pcache *c, uint32_t i)
{
    node *x = &c->nd[i];
    if (x->ref++ == 0) {
        lru_unlink(c, i);
        c->n_lru -= x->len;
        c->n_pinned += x->len;
        c->version++;
    }
}

uint32_t pcache_match(const pcache *c, const uint64_t *hashes, uint32_t n,
                      uint32_t *n_unpinned)
{
    uint32_t pos = 0, unp = 0, x = ROOT;
    while (pos < n) {
        const uint32_t ch = child(c, x, hashes[pos]);
        if (ch == NONE)
            break;
        const node *y = &c->nd[ch];
        const uint32_t lim = y->len < n - pos ? y->len : n - pos;
        /* The next level's map slot, asked for while this run's last
         * hash is fetched (with hundreds of destinations both are cold:
         * the two misses overlap when the run matches whole; a hint). */
        if (lim < n - pos)
            sim_u64map_prefetch(&c->map, hashes[pos + lim]);
        const uint32_t k = common(y->h, hashes + pos, lim, c->chained);
        if (y->ref == 0)
            unp += k;
        pos += k;
        if (k < y->len)
            break;
        x = ch;
    }
    if (n_unpinned)
        *n_unpinned = unp;
    return pos;
}

void pcache_seq_pin(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t m)
{
    SIM_ALWAYS(s->node == ROOT && s->n_tree == 0 && s->n_priv == 0);
    uint32_t pos = 0, x = ROOT;
    while (pos < m) {
        /* m <= what pcache_match returns, so the path exists: only the
         * node at each step is looked up; its hashes are not compared
         * again (the match just did). */
        uint32_t ch = child(c, x, hashes[pos]);
        SIM_ALWAYS(ch != NONE);
        const uint32_t len = c->nd[ch].len;
        const uint32_t k = len < m - pos ? len : m - pos;
        if (k < len)
            ch = split(c, ch, k);
        pos += k;
        x = ch;
    }
    for (uint32_t y = x; y != ROOT; y = c->nd[y].parent)
        pin_node(c, y);
    s->node = x;
    s->n_tree = m;
    s->stuck = false;
}

/* Evict up to k blocks from the tail of the coldest node (n_lru > 0). */
static uint32_t evict_some(pcache *c, uint32_t k)
{
    const uint32_t i = c->lru_head;
    node *x = &c->nd[i];
    SIM_ALWAYS(x->ref == 0 && x->nchild == 0); /* coldest is always a leaf */
    const uint32_t e = k < x->len ? k : x->len;
    x->len -= e;
    c->n_lru -= e;
    c->n_cached -= e;
    c->n_free += e;
    c->version++;
    if (c->obs) /* the evicted tail, still in the buffer */
        c->obs(c->obs_ctx, PCACHE_REMOVED, 0, x->h + x->len, e);
    if (x->len == 0) {
        lru_unlink(c, i);
        sim_u64map_del(&c->map, x->h[0]); /* h[0] is still the run's first hash */
        c->nd[x->parent].nchild--;
        node_free(c, i);
    }
    trim(x);
    return e;
}

uint32_t pcache_take(pcache *c, uint32_t n)
{
    const uint32_t avail = c->n_free + c->n_lru;
    const uint32_t take = n < avail ? n : avail;
    while (c->n_free < take)
        evict_some(c, take - c->n_free);
    c->n_free -= take;
    c->n_pinned += take;
    return take;
}

void pcache_seq_grant(pcache *c, pcache_seq *s, uint32_t n)
{
    (void)c; /* blocks are counted, not named: nothing to hand over */
    s->n_priv += n;
}

uint32_t pcache_seq_alloc(pcache *c, pcache_seq *s, uint32_t n)
{
    const uint32_t take = pcache_take(c, n);
    s->n_priv += take;
    return take;
}

/* s's next k private blocks have just joined the tree. */
static inline uint32_t registered(pcache *c, pcache_seq *s, uint32_t k)
{
    s->n_tree += k;
    s->n_priv -= k;
    c->n_cached += k;
    c->version++;
    return k;
}

uint32_t pcache_seq_commit(pcache *c, pcache_seq *s, const uint64_t *hashes, uint32_t full)
{
    SIM_ALWAYS(full <= s->n_tree + s->n_priv);
    uint32_t reg = 0;
    while (!s->stuck && s->n_tree < full) {
        const uint32_t pos = s->n_tree, x = s->node;
        node *xn = &c->nd[x];
        const bool view = !owned(xn);
        if (x != ROOT && xn->ref == 1 && xn->nchild == 0 &&
            (!view || !s->stable || xn->h + xn->len == hashes + pos)) {
            /* s's own leaf: extend it in place (a view of s's own list
             * that ends where the new blocks start: by its length; any
             * other view of a sequence with a list that is not stable:
             * after taking its own copy). */
            const uint32_t k = full - pos;
            if (view && xn->h + xn->len != hashes + pos)
                own(xn, xn->len + k);
            if (owned(xn)) {
                reserve(xn, xn->len + k);
                copy_hashes(xn->h + xn->len, hashes + pos, k);
            }
            xn->len += k;
            reg += registered(c, s, k);
            if (c->obs)
                c->obs(c->obs_ctx, PCACHE_STORED, pos ? hashes[pos - 1] : 0, hashes + pos, k);
            break;
        }
        const uint32_t at = sim_u64map_get(&c->map, hashes[pos]);
        if (at == NONE) {
            /* A new run under x, pinned by s alone. */
            const uint32_t k = full - pos;
            const uint32_t y = node_new(c, s->stable ? 0 : s->hint > full ? s->hint - pos : k);
            node *yn = &c->nd[y];
            if (s->stable) /* a view of s's list: no copy */
                yn->h = (uint64_t *)(uintptr_t)(hashes + pos);
            else
                copy_hashes(yn->h, hashes + pos, k);
            yn->len = k;
            yn->parent = x;
            yn->ref = 1;
            c->nd[x].nchild++;
            sim_u64map_put(&c->map, yn->h[0], y);
            s->node = y;
            reg += registered(c, s, k);
            if (c->obs)
                c->obs(c->obs_ctx, PCACHE_STORED, pos ? hashes[pos - 1] : 0, hashes + pos, k);
            break;
        }
        if (c->nd[at].parent != x) { /* registered elsewhere: a hash collision */
            s->stuck = true;
            break;
        }
        /* Another sequence registered the same blocks here: pin them and
         * free s's private copies. */
        const uint32_t len = c->nd[at].len;
        const uint32_t lim = len < full - pos ? len : full - pos;
        const uint32_t k = common(c->nd[at].h, hashes + pos, lim, c->chained);
        const uint32_t y = k < len ? split(c, at, k) : at;
        pin_node(c, y);
        s->node = y;
        s->n_tree += k;
        s->n_priv -= k;
        c->n_pinned -= k;
        c->n_free += k;
    }
    return reg;
}

void pcache_seq_release(pcache *c, pcache_seq *s)
{
    for (uint32_t y = s->node; y != ROOT;) {
        node *x = &c->nd[y];
        const uint32_t up = x->parent;
        SIM_ALWAYS(x->ref > 0);
        if (--x->ref == 0) {
            lru_push_warm(c, y);
            c->n_lru += x->len;
            c->n_pinned -= x->len;
            c->version++;
        }
        y = up;
    }
    c->n_free += s->n_priv;
    c->n_pinned -= s->n_priv;
    *s = (pcache_seq){0};
}

void pcache_clear(pcache *c)
{
    while (c->n_lru)
        evict_some(c, c->n_lru);
}

void pcache_check(const pcache *c)
{
    uint32_t live = 0, cached = 0, lru = 0, pinned_reg = 0;
    uint32_t *kids = calloc(c->nd_used, sizeof *kids);
    SIM_ALWAYS(kids != NULL);
    SIM_ALWAYS(c->nd[ROOT].len == 0 && c->nd[ROOT].ref == 0);
    for (uint32_t i = 1; i < c->nd_used; i++) {
        const node *x = &c->nd[i];
        if (x->len == 0)
            continue;
        live++;
        cached += x->len;
        if (x->ref == 0)
            lru += x->len;
        else
            pinned_reg += x->len;
        SIM_ALWAYS(x->parent < c->nd_used && (x->parent == ROOT || c->nd[x->parent].len > 0));
        SIM_ALWAYS(sim_u64map_get(&c->map, x->h[0]) == i);
        if (x->parent != ROOT)
            SIM_ALWAYS(c->nd[x->parent].ref >= x->ref);
        kids[x->parent]++;
    }
    for (uint32_t i = 0; i < c->nd_used; i++)
        if (i == ROOT || c->nd[i].len > 0)
            SIM_ALWAYS(kids[i] == c->nd[i].nchild);
    free(kids);
    uint32_t in_list = 0, prev = NONE;
    for (uint32_t i = c->lru_head; i != NONE; i = c->nd[i].lnext) {
        SIM_ALWAYS(c->nd[i].len > 0 && c->nd[i].ref == 0 && c->nd[i].lprev == prev);
        prev = i;
        in_list += c->nd[i].len;
    }
    SIM_ALWAYS(prev == c->lru_tail);
    SIM_ALWAYS(live == c->n_live && live == c->map.n);
    SIM_ALWAYS(cached == c->n_cached && lru == c->n_lru && in_list == lru);
    SIM_ALWAYS(pinned_reg <= c->n_pinned);
    SIM_ALWAYS((uint64_t)c->n_free + c->n_pinned + c->n_lru == c->n);
}
