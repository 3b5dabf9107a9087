/*
 * Prefix-cache tests: parent-checked matching, pinned blocks never evicted,
 * LRU eviction order (and tail-first release order), duplicate commits,
 * a randomised invariant check, and a randomised comparison of what is
 * cached against a plain per-block LRU model (the cache keeps its LRU as
 * a queue with lazy deletion and compaction; this pins its order).
 */
#include "../models/pcache.h"
#include "check.h"

/* Insert a chain of blocks with the given hashes, as one request would:
 * allocate, commit with parent, then release. */
static void put_chain(pcache *c, const uint64_t *h, uint32_t n, uint32_t *blocks)
{
    for (uint32_t i = 0; i < n; i++) {
        blocks[i] = pcache_alloc(c);
        CHECK(blocks[i] != PCACHE_NONE);
        CHECK_INT_EQ(pcache_commit(c, blocks[i], h[i], i ? h[i - 1] : 0), 1);
    }
}

static void test_parent_check(void)
{
    pcache *c = pcache_create(8);
    uint32_t b[4];
    const uint64_t xb[2] = {11, 22}; /* X -> B */
    const uint64_t y[1] = {33};      /* Y */
    put_chain(c, xb, 2, b);
    pcache_release(c, b, 2);
    put_chain(c, y, 1, b);
    pcache_release(c, b, 1);
    CHECK_INT_EQ(pcache_match(c, xb, 2, NULL), 2);
    /* Y -> B: block B exists, but its parent is X, not Y: no match past Y. */
    const uint64_t yb[2] = {33, 22};
    CHECK_INT_EQ(pcache_match(c, yb, 2, NULL), 1);
    /* B alone as a first block: its stored parent is X, not "none". */
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
    uint32_t a[2], b[2];
    const uint64_t ha[2] = {1, 2}, hb[2] = {3, 4};
    put_chain(c, ha, 2, a); /* stays pinned */
    put_chain(c, hb, 2, b);
    pcache_release(c, b, 2);
    CHECK_INT_EQ(pcache_available(c), 2);
    CHECK_INT_EQ(pcache_pinned(c), 2);
    /* Two allocations evict hb's blocks; the third finds nothing. */
    uint32_t x = pcache_alloc(c), y = pcache_alloc(c);
    CHECK(x != PCACHE_NONE && y != PCACHE_NONE);
    CHECK(x != a[0] && x != a[1] && y != a[0] && y != a[1]);
    CHECK_INT_EQ(pcache_alloc(c), PCACHE_NONE);
    CHECK_INT_EQ(pcache_match(c, ha, 2, NULL), 2); /* pinned chain still there */
    CHECK_INT_EQ(pcache_match(c, hb, 2, NULL), 0);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_lru_order(void)
{
    /* 6 blocks.  Release chains P (hashes 1,2) then Q (3,4) then R (5,6),
     * so the LRU order cold->warm is: 2,1 (P tail first), 4,3, 6,5. */
    pcache *c = pcache_create(6);
    uint32_t p[2], q[2], r[2];
    const uint64_t hp[2] = {1, 2}, hq[2] = {3, 4}, hr[2] = {5, 6};
    put_chain(c, hp, 2, p);
    put_chain(c, hq, 2, q);
    put_chain(c, hr, 2, r);
    pcache_release(c, p, 2);
    pcache_release(c, q, 2);
    pcache_release(c, r, 2);
    /* Touch Q by a hit (pin + release): it becomes warmest. */
    uint32_t hit[2];
    uint32_t unp = 99;
    CHECK_INT_EQ(pcache_match(c, hq, 2, &unp), 2);
    CHECK_INT_EQ(unp, 2);
    pcache_pin_prefix(c, hq, 2, hit);
    CHECK_INT_EQ(hit[0], q[0]);
    pcache_release(c, hit, 2);
    /* Order now: P(2,1) R(6,5) Q(4,3).  First eviction takes P's tail. */
    uint32_t e1 = pcache_alloc(c);
    CHECK_INT_EQ(e1, p[1]);
    CHECK_INT_EQ(pcache_match(c, hp, 2, NULL), 1); /* head of P still there */
    uint32_t e2 = pcache_alloc(c);
    CHECK_INT_EQ(e2, p[0]);
    uint32_t e3 = pcache_alloc(c);
    CHECK_INT_EQ(e3, r[1]);
    CHECK_INT_EQ(pcache_match(c, hq, 2, NULL), 2); /* Q, most recent, survives */
    CHECK_INT_EQ(pcache_match(c, hr, 2, NULL), 1);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_duplicate_commit(void)
{
    pcache *c = pcache_create(4);
    uint32_t a = pcache_alloc(c), b = pcache_alloc(c);
    CHECK_INT_EQ(pcache_commit(c, a, 7, 0), 1);
    CHECK_INT_EQ(pcache_commit(c, b, 7, 0), 0); /* duplicate stays unregistered */
    pcache_release(c, &b, 1);
    CHECK_INT_EQ(pcache_cached(c), 1);
    pcache_release(c, &a, 1);
    CHECK_INT_EQ(pcache_available(c), 4);
    pcache_check(c);
    pcache_destroy(c);
}

static void test_random_invariants(void)
{
    /* Random chains over a small hash space, checking invariants and that
     * every match returned is a true prefix of what was committed. */
    pcache *c = pcache_create(64);
    uint64_t s = 99;
    uint32_t held[8][16];
    uint32_t nheld[8] = {0};
    for (int it = 0; it < 20000; it++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t slotno = (uint32_t)(s >> 60) & 7;
        if (nheld[slotno]) {
            pcache_release(c, held[slotno], nheld[slotno]);
            nheld[slotno] = 0;
            continue;
        }
        uint32_t len = 1 + (uint32_t)((s >> 20) % 16);
        uint64_t root = 1 + ((s >> 8) % 5);
        uint64_t h[16];
        for (uint32_t i = 0; i < len; i++)
            h[i] = (i ? h[i - 1] * 31 : 1000) + root * 7 + i; /* chained ids */
        uint32_t m = pcache_match(c, h, len, NULL);
        pcache_pin_prefix(c, h, m, held[slotno]);
        uint32_t n = m;
        for (uint32_t i = m; i < len; i++) {
            uint32_t blk = pcache_alloc(c);
            if (blk == PCACHE_NONE)
                break;
            held[slotno][n++] = blk;
            pcache_commit(c, blk, h[i], i ? h[i - 1] : 0);
        }
        nheld[slotno] = n;
        if (it % 97 == 0)
            pcache_check(c);
    }
    pcache_check(c);
    pcache_destroy(c);
}

/* Reference model: a per-block LRU list of hashes, cold first. */
enum { REF_U = 48, REF_POOL = 16 };
typedef struct refmodel {
    uint32_t ref[REF_U + 1];   /* pins per hash */
    int cached[REF_U + 1];     /* registered */
    uint64_t lru[REF_POOL];    /* unpinned cached hashes, cold first */
    uint32_t n_lru, n_fresh;
} refmodel;

static void ref_lru_remove(refmodel *m, uint64_t h)
{
    uint32_t k = 0;
    while (m->lru[k] != h)
        k++;
    for (; k + 1 < m->n_lru; k++)
        m->lru[k] = m->lru[k + 1];
    m->n_lru--;
}

static void test_lru_against_model(void)
{
    pcache *c = pcache_create(REF_POOL);
    refmodel m = {.n_fresh = REF_POOL};
    uint32_t held[6][6], nheld[6] = {0};
    uint64_t hheld[6][6];
    uint64_t s = 12345;
    for (int it = 0; it < 200000; it++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t slotno = (uint32_t)(s >> 59) % 6;
        if ((s >> 40) % 997 == 0) {
            pcache_clear(c);
            for (uint32_t k = 0; k < m.n_lru; k++)
                m.cached[m.lru[k]] = 0;
            m.n_fresh += m.n_lru;
            m.n_lru = 0;
        } else if (nheld[slotno]) {
            /* Release: blocks go to the warm end tail first. */
            pcache_release(c, held[slotno], nheld[slotno]);
            for (uint32_t k = nheld[slotno]; k-- > 0;) {
                uint64_t h = hheld[slotno][k];
                if (--m.ref[h] == 0)
                    m.lru[m.n_lru++] = h;
            }
            nheld[slotno] = 0;
        } else {
            /* Acquire up to 6 distinct one-block "prefixes". */
            uint32_t want = 1 + (uint32_t)((s >> 20) % 6), n = 0;
            for (uint32_t k = 0; k < want; k++) {
                uint64_t h = 1 + ((s >> (3 * k + 5)) ^ (uint64_t)(k * 7919u)) % REF_U;
                int dup = 0;
                for (uint32_t j = 0; j < n; j++)
                    dup |= hheld[slotno][j] == h;
                if (dup)
                    continue;
                uint32_t blk, unp = 0;
                CHECK_INT_EQ(pcache_match_blocks(c, &h, 1, &blk, &unp), (uint32_t)m.cached[h]);
                if (m.cached[h]) {
                    CHECK_INT_EQ(unp, m.ref[h] == 0);
                    pcache_pin_blocks(c, &blk, 1);
                    if (m.ref[h]++ == 0)
                        ref_lru_remove(&m, h);
                } else {
                    blk = pcache_alloc(c);
                    if (m.n_fresh == 0 && m.n_lru == 0) {
                        CHECK_INT_EQ(blk, PCACHE_NONE);
                        break;
                    }
                    CHECK(blk != PCACHE_NONE);
                    if (m.n_fresh) {
                        m.n_fresh--;
                    } else { /* evict the coldest */
                        m.cached[m.lru[0]] = 0;
                        ref_lru_remove(&m, m.lru[0]);
                    }
                    CHECK_INT_EQ(pcache_commit(c, blk, h, 0), 1);
                    m.cached[h] = 1;
                    m.ref[h] = 1;
                }
                held[slotno][n] = blk;
                hheld[slotno][n++] = h;
            }
            nheld[slotno] = n;
        }
        CHECK_INT_EQ(pcache_available(c), m.n_fresh + m.n_lru);
        for (uint64_t h = 1; h <= REF_U; h++)
            CHECK_INT_EQ(pcache_match(c, &h, 1, NULL), (uint32_t)m.cached[h]);
        if (it % 101 == 0)
            pcache_check(c);
    }
    pcache_check(c);
    pcache_destroy(c);
}

int main(void)
{
    test_parent_check();
    test_pinned_never_evicted();
    test_lru_order();
    test_duplicate_commit();
    test_random_invariants();
    test_lru_against_model();
    puts("pcache: ok");
    return 0;
}
