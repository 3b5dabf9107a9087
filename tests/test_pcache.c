/*
 * Prefix-cache tests (models/pcache.c, the radix tree of block runs):
 * parent-checked matching, pinned blocks never evicted, LRU eviction order
 * (tail-first release, node splits), duplicate registration, randomised
 * invariants, and a randomised differential test against the per-block
 * cache it replaced (tests/pcache_ref.c): the two must agree on every
 * match, unpinned count and pool count after every operation whenever no
 * two sequences register the same block.
 */
#include "models/pcache.h"
#include "check.h"
#include "pcache_ref.h"

/* Register a chain as one request would (pin nothing, allocate, commit),
 * leaving it pinned by *s. */
static void put_chain(pcache *c, pcache_seq *s, const uint64_t *h, uint32_t n)
{
    *s = (pcache_seq){0};
    CHECK_INT_EQ(pcache_seq_alloc(c, s, n), n);
    CHECK_INT_EQ(pcache_seq_commit(c, s, h, n), n);
    CHECK_INT_EQ(s->n_tree, n);
    CHECK_INT_EQ(s->n_priv, 0);
}

static void test_parent_check(void)
{
    pcache *c = pcache_create(8);
    pcache_seq s;
    const uint64_t xb[2] = {11, 22}; /* X -> B */
    const uint64_t y[1] = {33};      /* Y */
    put_chain(c, &s, xb, 2);
    pcache_seq_release(c, &s);
    put_chain(c, &s, y, 1);
    pcache_seq_release(c, &s);
    CHECK_INT_EQ(pcache_match(c, xb, 2, NULL), 2);
    /* Y -> B: block B exists, but its parent is X, not Y: no match past Y. */
    const uint64_t yb[2] = {33, 22};
    CHECK_INT_EQ(pcache_match(c, yb, 2, NULL), 1);
    /* B alone as a first block: its parent is X, not "none". */
    const uint64_t bonly[1] = {22};
    CHECK_INT_EQ(pcache_match(c, bonly, 1, NULL), 0);
    const uint64_t miss[2] = {44, 22};
    CHECK_INT_EQ(pcache_match(c, miss, 2, NULL), 0);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_pinned_never_evicted(void)
{
    pcache *c = pcache_create(4);
    pcache_seq a, b, x = {0};
    const uint64_t ha[2] = {1, 2}, hb[2] = {3, 4};
    put_chain(c, &a, ha, 2); /* stays pinned */
    put_chain(c, &b, hb, 2);
    pcache_seq_release(c, &b);
    CHECK_INT_EQ(pcache_available(c), 2);
    CHECK_INT_EQ(pcache_pinned(c), 2);
    /* Two blocks evict hb's; a third finds nothing. */
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 3), 2);
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 1), 0);
    CHECK_INT_EQ(pcache_match(c, ha, 2, NULL), 2); /* pinned chain still there */
    CHECK_INT_EQ(pcache_match(c, hb, 2, NULL), 0);
    pcache_check(c);
    pcache_seq_release(c, &x);
    pcache_seq_release(c, &a);
    CHECK_INT_EQ(pcache_available(c), 4);
    CHECK_INT_EQ(pcache_pinned(c), 0);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_lru_order(void)
{
    /* 6 blocks.  Release chains P (hashes 1,2) then Q (3,4) then R (5,6),
     * so the LRU order cold->warm is: 2,1 (P tail first), 4,3, 6,5. */
    pcache *c = pcache_create(6);
    pcache_seq p, q, r, t = {0}, x = {0};
    const uint64_t hp[2] = {1, 2}, hq[2] = {3, 4}, hr[2] = {5, 6};
    put_chain(c, &p, hp, 2);
    put_chain(c, &q, hq, 2);
    put_chain(c, &r, hr, 2);
    pcache_seq_release(c, &p);
    pcache_seq_release(c, &q);
    pcache_seq_release(c, &r);
    /* Touch Q by a hit (pin + release): it becomes warmest. */
    uint32_t unp = 99;
    CHECK_INT_EQ(pcache_match(c, hq, 2, &unp), 2);
    CHECK_INT_EQ(unp, 2);
    pcache_seq_pin(c, &t, hq, 2);
    CHECK_INT_EQ(unp = 0, 0);
    CHECK_INT_EQ(pcache_match(c, hq, 2, &unp), 2);
    CHECK_INT_EQ(unp, 0); /* pinned now */
    pcache_seq_release(c, &t);
    /* Order now: P(2,1) R(6,5) Q(4,3).  The first eviction takes P's tail. */
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 1), 1);
    CHECK_INT_EQ(pcache_match(c, hp, 2, NULL), 1); /* head of P still there */
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 2), 2);   /* P's head, then R's tail */
    CHECK_INT_EQ(pcache_match(c, hp, 2, NULL), 0);
    CHECK_INT_EQ(pcache_match(c, hq, 2, NULL), 2); /* Q, most recent, survives */
    CHECK_INT_EQ(pcache_match(c, hr, 2, NULL), 1);
    pcache_check(c);
    pcache_seq_release(c, &x);
    pcache_destroy(c);
}

static void test_split_keeps_order(void)
{
    /* A 4-block run, released; pinning its first 2 blocks splits it.  The
     * back half stays coldest; after the release the front is warmer than
     * a run released in between. */
    pcache *c = pcache_create(6);
    pcache_seq a, b, t = {0}, x = {0};
    const uint64_t ha[4] = {1, 2, 3, 4}, hb[2] = {5, 6};
    put_chain(c, &a, ha, 4);
    pcache_seq_release(c, &a);
    CHECK_INT_EQ(pcache_nodes(c), 1);
    pcache_seq_pin(c, &t, ha, 2);
    CHECK_INT_EQ(pcache_nodes(c), 2);
    CHECK_INT_EQ(pcache_available(c), 4);
    uint32_t unp = 9;
    CHECK_INT_EQ(pcache_match(c, ha, 4, &unp), 4);
    CHECK_INT_EQ(unp, 2); /* blocks 3, 4 */
    put_chain(c, &b, hb, 2);
    pcache_seq_release(c, &b);
    pcache_seq_release(c, &t);
    pcache_check(c);
    /* Cold -> warm: 4, 3 (back half), 6, 5, 2, 1. */
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 3), 3);
    CHECK_INT_EQ(pcache_match(c, ha, 4, NULL), 2);
    CHECK_INT_EQ(pcache_match(c, hb, 2, NULL), 1);
    CHECK_INT_EQ(pcache_seq_alloc(c, &x, 1), 1);
    CHECK_INT_EQ(pcache_match(c, hb, 2, NULL), 0);
    CHECK_INT_EQ(pcache_match(c, ha, 4, NULL), 2);
    pcache_check(c);
    pcache_seq_release(c, &x);
    pcache_destroy(c);
}

static void test_duplicate_commit(void)
{
    /* Two sequences compute the same block: the second to register pins
     * the first one's block and its own copy is freed at once. */
    pcache *c = pcache_create(4);
    pcache_seq a = {0}, b = {0};
    const uint64_t h[2] = {7, 8};
    CHECK_INT_EQ(pcache_seq_alloc(c, &a, 1), 1);
    CHECK_INT_EQ(pcache_seq_alloc(c, &b, 2), 2);
    CHECK_INT_EQ(pcache_seq_commit(c, &a, h, 1), 1);
    CHECK_INT_EQ(pcache_available(c), 1);
    CHECK_INT_EQ(pcache_seq_commit(c, &b, h, 2), 1); /* block 7 is a duplicate */
    CHECK_INT_EQ(b.n_tree, 2);
    CHECK_INT_EQ(b.n_priv, 0);
    CHECK_INT_EQ(pcache_available(c), 2); /* b's copy of 7 is blank again */
    CHECK_INT_EQ(pcache_cached(c), 2);
    CHECK_INT_EQ(pcache_pinned(c), 2);
    pcache_check(c);
    pcache_seq_release(c, &a);
    CHECK_INT_EQ(pcache_pinned(c), 2); /* b still pins 7 and 8 */
    pcache_seq_release(c, &b);
    CHECK_INT_EQ(pcache_available(c), 4);
    CHECK_INT_EQ(pcache_match(c, h, 2, NULL), 2);
    /* Partial duplicate: a registers 7, 8 while c2 holds private copies of
     * 7 and 9 (a different continuation). */
    pcache_clear(c);
    pcache_seq c2 = {0};
    const uint64_t h2[2] = {7, 9};
    CHECK_INT_EQ(pcache_seq_alloc(c, &c2, 2), 2);
    put_chain(c, &a, h, 2);
    CHECK_INT_EQ(pcache_seq_commit(c, &c2, h2, 2), 1); /* 7 shared, 9 new */
    CHECK_INT_EQ(pcache_nodes(c), 3); /* 7 | 8, 9 */
    CHECK_INT_EQ(pcache_match(c, h2, 2, NULL), 2);
    CHECK_INT_EQ(pcache_match(c, h, 2, NULL), 2);
    pcache_check(c);
    pcache_seq_release(c, &a);
    pcache_seq_release(c, &c2);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_collision_stops_registration(void)
{
    /* Hash 22 heads a run under 11 (after a split); a sequence whose next
     * block after 44 also hashes to 22 (a 64-bit collision) cannot register
     * it there and keeps its block private. */
    pcache *c = pcache_create(8);
    pcache_seq a, d, b = {0}, e = {0}, f = {0};
    const uint64_t h[2] = {11, 22}, hd[1] = {44}, g[2] = {44, 22};
    put_chain(c, &a, h, 2);
    pcache_seq_release(c, &a);
    put_chain(c, &d, hd, 1);
    pcache_seq_release(c, &d);
    pcache_seq_pin(c, &b, h, 1); /* splits 11 | 22 */
    pcache_seq_pin(c, &e, g, 1);
    pcache_seq_pin(c, &f, g, 1); /* 44 is shared: e cannot extend it in place */
    CHECK_INT_EQ(pcache_seq_alloc(c, &e, 1), 1);
    CHECK_INT_EQ(pcache_seq_commit(c, &e, g, 2), 0);
    CHECK(e.stuck);
    CHECK_INT_EQ(e.n_priv, 1);
    CHECK_INT_EQ(pcache_match(c, g, 2, NULL), 1);
    CHECK_INT_EQ(pcache_match(c, h, 2, NULL), 2);
    pcache_check(c);
    pcache_seq_release(c, &b);
    pcache_seq_release(c, &e);
    pcache_seq_release(c, &f);
    CHECK_INT_EQ(pcache_available(c), 8);
    CHECK_INT_EQ(pcache_pinned(c), 0);
    pcache_check(c);
    pcache_destroy(c);
}

/* ---- randomised comparison with the per-block reference ---- */

enum { N_CHAIN = 12, MAX_LEN = 24, N_SLOT = 8 };

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 17;
}

/* Chains that share prefixes: chain k copies chain par[k]'s first br[k]
 * hashes, then continues on its own (chained values, never 0). */
typedef struct chains {
    uint64_t h[N_CHAIN][MAX_LEN];
    uint32_t len[N_CHAIN];
} chains;

static void make_chains(chains *ch, uint64_t *rs)
{
    for (uint32_t k = 0; k < N_CHAIN; k++) {
        ch->len[k] = 1 + (uint32_t)(lcg(rs) % MAX_LEN);
        uint32_t br = 0;
        if (k > 0) {
            uint32_t par = (uint32_t)(lcg(rs) % k);
            br = (uint32_t)(lcg(rs) % (ch->len[par] + 1));
            if (br > ch->len[k])
                br = ch->len[k];
            for (uint32_t i = 0; i < br; i++)
                ch->h[k][i] = ch->h[par][i];
        }
        for (uint32_t i = br; i < ch->len[k]; i++)
            ch->h[k][i] = ((i ? ch->h[k][i - 1] : 0x9e37) * 1000003u + 7919u * (k + 1) + i) | 1u;
    }
}

typedef struct slotst {
    int active;
    uint32_t chain, held, reg;
    pcache_seq s;
    uint32_t blk[MAX_LEN]; /* reference block indices */
} slotst;

static void compare(const pcache *c, const pcache_ref *r, const chains *ch)
{
    CHECK_INT_EQ(pcache_available(c), pcache_ref_available(r));
    CHECK_INT_EQ(pcache_cached(c), pcache_ref_cached(r));
    CHECK_INT_EQ(pcache_pinned(c), pcache_ref_pinned(r));
    for (uint32_t k = 0; k < N_CHAIN; k++)
        for (uint32_t n = 1; n <= ch->len[k]; n += 3) {
            uint32_t u1 = 0, u2 = 0;
            CHECK_INT_EQ(pcache_match(c, ch->h[k], n, &u1), pcache_ref_match(r, ch->h[k], n, &u2));
            CHECK_INT_EQ(u1, u2);
        }
}

static void differential(uint32_t pool, uint64_t seed, int iters, bool stable, bool chained)
{
    uint64_t rs = seed;
    chains ch;
    make_chains(&ch, &rs);
    pcache *c = pcache_create(pool);
    pcache_ref *r = pcache_ref_create(pool);
    CHECK(c && r);
    pcache_assume_chained(c, chained); /* make_chains' lists are chained */
    slotst sl[N_SLOT] = {0};
    int commits = 0, evicting = 0;
    for (int it = 0; it < iters; it++) {
        slotst *x = &sl[lcg(&rs) % N_SLOT];
        const uint64_t op = lcg(&rs) % 100;
        if (op == 0) {
            pcache_clear(c);
            pcache_ref_clear(r);
        } else if (!x->active) {
            /* Admit: match, pin, allocate the rest (as the engine does). */
            x->chain = (uint32_t)(lcg(&rs) % N_CHAIN);
            const uint64_t *h = ch.h[x->chain];
            const uint32_t n = 1 + (uint32_t)(lcg(&rs) % ch.len[x->chain]);
            uint32_t u1, u2;
            const uint32_t m = pcache_match(c, h, n, &u1);
            CHECK_INT_EQ(pcache_ref_match_blocks(r, h, n, x->blk, &u2), m);
            CHECK_INT_EQ(u1, u2);
            x->s.stable = stable; /* the chains outlive the cache: runs may be views */
            pcache_seq_pin(c, &x->s, h, m);
            pcache_ref_pin_blocks(r, x->blk, m);
            evicting += pcache_available(c) - u1 < n - m;
            const uint32_t got = pcache_seq_alloc(c, &x->s, n - m);
            CHECK_INT_EQ(pcache_ref_alloc_run(r, x->blk + m, n - m), got);
            x->held = m + got;
            x->reg = m;
            x->active = 1;
        } else if (op < 60 && x->reg < x->held) {
            /* Register some of the private blocks, unless another sequence
             * registered one of them meanwhile (the two caches treat such
             * duplicates differently, by design). */
            const uint64_t *h = ch.h[x->chain];
            const uint32_t full = x->reg + 1 + (uint32_t)(lcg(&rs) % (x->held - x->reg));
            if (pcache_ref_match(r, h, full, NULL) != x->reg)
                continue;
            CHECK_INT_EQ(pcache_seq_commit(c, &x->s, h, full), full - x->reg);
            CHECK_INT_EQ(pcache_ref_commit_run(r, x->blk + x->reg, h + x->reg, full - x->reg,
                                         x->reg ? h[x->reg - 1] : 0),
                         full - x->reg);
            x->reg = full;
            commits++;
        } else {
            pcache_seq_release(c, &x->s);
            pcache_ref_release(r, x->blk, x->held);
            x->active = 0;
        }
        compare(c, r, &ch);
        if (it % 53 == 0) {
            pcache_check(c);
            pcache_ref_check(r);
        }
    }
    CHECK(commits > iters / 20);
    if (pool <= 40)
        CHECK(evicting > 0); /* eviction order was exercised */
    pcache_check(c);
    pcache_destroy(c);
    pcache_ref_destroy(r);
}

static void test_against_per_block_cache(void)
{
    /* Runs copied (synthetic requests) and runs that are views of stable
     * hash lists (a trace's shared table), split, extended and evicted:
     * the same per-block behaviour either way. */
    for (int mode = 0; mode < 4; mode++) {
        const bool stable = mode & 1, chained = mode & 2; /* also the engine's compare */
        differential(16, 1, 40000, stable, chained);  /* memory very short */
        differential(40, 2, 40000, stable, chained);
        differential(120, 3, 20000, stable, chained); /* roomy: long-lived shared prefixes */
        for (uint64_t s = 10; s < 30; s++)
            differential(8 + (uint32_t)(s % 5) * 8, s, 4000, stable, chained);
    }
}

/* pcache_assume_chained: a run's last hash stands for the run.  Lists that
 * break the contract (equal last hashes after different middles) show the
 * shortcut is taken -- and why it is off by default; chained lists that
 * part inside a run are still scanned to the first difference. */
static void test_assume_chained(void)
{
    const uint64_t a[4] = {1, 2, 3, 4};
    const uint64_t b[4] = {1, 2, 9, 4}; /* not chained: 4 after 9 and after 3 */
    const uint64_t d[4] = {1, 2, 9, 8}; /* parts from a at block 2 */
    for (int chained = 0; chained < 2; chained++) {
        pcache *c = pcache_create(8);
        pcache_assume_chained(c, chained);
        pcache_seq s;
        put_chain(c, &s, a, 4);
        pcache_seq_release(c, &s);
        uint32_t unp = 0;
        CHECK_INT_EQ(pcache_match(c, a, 4, &unp), 4);
        CHECK_INT_EQ(unp, 4);
        CHECK_INT_EQ(pcache_match(c, d, 4, NULL), 2);
        CHECK_INT_EQ(pcache_match(c, a, 3, NULL), 3); /* a run's middle: its own last */
        CHECK_INT_EQ(pcache_match(c, b, 4, NULL), chained ? 4 : 2);
        pcache_destroy(c);
    }
}

static void test_buffers_follow_runs(void)
{
    /* One 1,000-block run, then eviction of all but its first 10 blocks:
     * its buffer is cut (memory follows what is cached, not the longest
     * run held), and what stays cached still matches. */
    enum { LONG = 1000 };
    static uint64_t h[LONG];
    for (uint32_t i = 0; i < LONG; i++)
        h[i] = 0x1000 + 3 * (uint64_t)i;
    pcache *c = pcache_create(LONG + 10);
    pcache_seq a = {0}, b = {0};
    CHECK_INT_EQ(pcache_seq_alloc(c, &a, LONG), LONG);
    CHECK_INT_EQ(pcache_seq_commit(c, &a, h, LONG), LONG);
    pcache_seq_release(c, &a);
    /* A new run's buffer is its known length (rounded up to 8 hashes),
     * not the next power of two (1,024): round 12's memory at R = 1000. */
    CHECK(pcache_hash_capacity(c) >= LONG && pcache_hash_capacity(c) <= LONG + 7);
    CHECK_INT_EQ(pcache_seq_alloc(c, &b, LONG), LONG); /* evicts the run's last 990 */
    CHECK_INT_EQ(pcache_cached(c), 10);
    CHECK(pcache_hash_capacity(c) <= 64);
    CHECK_INT_EQ(pcache_match(c, h, LONG, NULL), 10);
    pcache_check(c);
    pcache_seq_release(c, &b);
    CHECK_INT_EQ(pcache_seq_alloc(c, &b, LONG + 10), LONG + 10); /* evicts the rest */
    CHECK_INT_EQ(pcache_cached(c), 0);
    CHECK(pcache_hash_capacity(c) <= 64); /* an emptied node keeps a small buffer for reuse */
    pcache_seq_release(c, &b);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_random_invariants(void)
{
    /* Random sequences with duplicates allowed (concurrent sequences on the
     * same chains): invariants hold and every match is a true prefix. */
    uint64_t rs = 77;
    chains ch;
    make_chains(&ch, &rs);
    pcache *c = pcache_create(48);
    slotst sl[N_SLOT] = {0};
    for (int it = 0; it < 60000; it++) {
        slotst *x = &sl[lcg(&rs) % N_SLOT];
        if (!x->active) {
            x->chain = (uint32_t)(lcg(&rs) % N_CHAIN);
            const uint64_t *h = ch.h[x->chain];
            const uint32_t n = 1 + (uint32_t)(lcg(&rs) % ch.len[x->chain]);
            const uint32_t m = pcache_match(c, h, n, NULL);
            pcache_seq_pin(c, &x->s, h, m);
            x->held = m + pcache_seq_alloc(c, &x->s, n - m);
            x->active = 1;
        } else if (lcg(&rs) % 3 && x->s.n_tree < x->held) {
            const uint32_t full = x->s.n_tree + 1 +
                                  (uint32_t)(lcg(&rs) % (x->held - x->s.n_tree));
            pcache_seq_commit(c, &x->s, ch.h[x->chain], full);
            CHECK_INT_EQ(x->s.n_tree, full);
            CHECK_INT_EQ(x->s.n_tree + x->s.n_priv, x->held);
            CHECK_INT_EQ(pcache_match(c, ch.h[x->chain], full, NULL), full);
        } else {
            pcache_seq_release(c, &x->s);
            x->active = 0;
        }
        if (it % 61 == 0)
            pcache_check(c);
    }
    for (uint32_t i = 0; i < N_SLOT; i++)
        pcache_seq_release(c, &sl[i].s);
    CHECK_INT_EQ(pcache_pinned(c), 0);
    CHECK_INT_EQ(pcache_available(c), 48);
    pcache_check(c);
    pcache_destroy(c);
}

int main(void)
{
    test_buffers_follow_runs();
    test_parent_check();
    test_pinned_never_evicted();
    test_lru_order();
    test_split_keeps_order();
    test_duplicate_commit();
    test_collision_stops_registration();
    test_against_per_block_cache();
    test_assume_chained();
    test_random_invariants();
    puts("pcache: ok");
    return 0;
}
