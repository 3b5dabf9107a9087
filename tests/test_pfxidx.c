/*
 * The global prefix index as a run queue (sim/core/pfxidx.c) against the
 * per-block table it replaced (tests/pfxidx_ref.c): random add / match /
 * expire sequences over prompts from a few families with shared prefixes
 * and branching tails (chained hashes, as the workloads make them), with
 * capacities from 6 to 400 blocks (eviction on almost every add in the
 * small ones, eviction of a prompt's own later blocks, holes), idle
 * expiry, and 5 or 70 destinations (one or two bitset words).  After
 * every operation the sizes agree and so does the match length of probe
 * prompts for every destination.  Also known answers on a hand-made case.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/hash.h"
#include "sim/core/pfxidx.h"
#include "sim/core/u64map.h"
#include "check.h"
#include "pfxidx_ref.h"

enum { MAXN = 48, FAMILIES = 6 };

static uint64_t rnd(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* A prompt of family f: its first `shared` tokens are the family's, the
 * rest from a 3-letter alphabet (so prompts share and branch often). */
static uint32_t prompt(uint64_t *x, uint64_t *h, uint32_t f)
{
    uint32_t n = 1 + (uint32_t)(rnd(x) % MAXN), shared = (f * 7u) % 20u;
    uint64_t prev = 0x9e3779b97f4a7c15ULL * (f + 1);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t tok = j < shared ? 1000 + j : (uint32_t)(rnd(x) % 3);
        prev = sim_hash_pair(prev, tok);
        h[j] = prev;
    }
    return n;
}

static void known_answers(void)
{
    /* Capacity 4, one destination set per block: the run of an add is
     * eaten from its head (its oldest block) by later inserts. */
    sim_pfxidx *x = sim_pfxidx_create(4, 3);
    CHECK(x);
    const uint64_t a[] = {11, 12, 13}, b[] = {11, 12, 21, 22};
    sim_pfxidx_add(x, a, 3, 0, 1.0);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 0), 3);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 1), 0);
    sim_pfxidx_add(x, b, 4, 1, 2.0); /* 11, 12 gain 1; 21 fills; 22 evicts 13 */
    CHECK_INT_EQ(sim_pfxidx_size(x), 4);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 0), 2);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 1), 2);
    CHECK_INT_EQ(sim_pfxidx_match(x, b, 4, 1), 4);
    CHECK_INT_EQ(sim_pfxidx_match(x, b, 4, 0), 2);
    sim_pfxidx_add(x, a, 3, 2, 3.0); /* 11, 12 gain 2; 13 evicts 21 (oldest: 11, 12 were touched) */
    CHECK_INT_EQ(sim_pfxidx_match(x, b, 4, 1), 2); /* 21 gone: a hole before 22 */
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 2), 3);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 0), 2); /* 13 came back with {2} only */
    sim_pfxidx_expire(x, 2.5);                      /* 22 (touched at 2) goes */
    CHECK_INT_EQ(sim_pfxidx_size(x), 3);
    sim_pfxidx_expire(x, 3.5);
    CHECK_INT_EQ(sim_pfxidx_size(x), 0);
    CHECK_INT_EQ(sim_pfxidx_match(x, a, 3, 2), 0);
    sim_pfxidx_destroy(x);
    CHECK(sim_pfxidx_create(0, 3) == NULL);
    CHECK(sim_pfxidx_create(3, 0) == NULL);
}

static void against_reference(uint32_t cap, uint32_t n_dest, uint64_t seed, int steps)
{
    sim_pfxidx *t = sim_pfxidx_create(cap, n_dest);
    pfxidx_ref *r = pfxidx_ref_create(cap, n_dest);
    CHECK(t && r);
    uint64_t x = seed, h[MAXN], probe[8][MAXN];
    uint32_t np[8];
    for (int i = 0; i < 8; i++)
        np[i] = prompt(&x, probe[i], (uint32_t)i % FAMILIES);
    double now = 0;
    for (int step = 0; step < steps; step++) {
        now += (double)(rnd(&x) % 100) / 100.0;
        uint32_t op = (uint32_t)(rnd(&x) % 10);
        if (op < 7) {
            uint32_t n = prompt(&x, h, (uint32_t)(rnd(&x) % FAMILIES));
            uint32_t d = (uint32_t)(rnd(&x) % n_dest);
            sim_pfxidx_add(t, h, n, d, now);
            pfxidx_ref_add(r, h, n, d, now);
            for (uint32_t e = 0; e < n_dest; e++)
                CHECK_INT_EQ(sim_pfxidx_match(t, h, n, e), pfxidx_ref_match(r, h, n, e));
            if (op == 0) { /* keep it as a probe */
                uint32_t i = (uint32_t)(rnd(&x) % 8);
                memcpy(probe[i], h, n * sizeof *h);
                np[i] = n;
            }
        } else if (op < 9) {
            double before = now - (double)(rnd(&x) % 3000) / 100.0;
            sim_pfxidx_expire(t, before);
            pfxidx_ref_expire(r, before);
        }
        CHECK_INT_EQ(sim_pfxidx_size(t), pfxidx_ref_size(r));
        CHECK(sim_pfxidx_size(t) <= cap);
        { /* match_set over a random set of destinations */
            uint64_t alive[2] = {0, 0};
            uint32_t len[70];
            const int i = (int)(rnd(&x) % 8);
            for (uint32_t e = 0; e < n_dest; e++)
                if (rnd(&x) % 3)
                    alive[e / 64] |= 1ULL << (e % 64);
            const uint64_t set[2] = {alive[0], alive[1]};
            for (uint32_t e = 0; e < n_dest; e++)
                len[e] = 999;
            sim_pfxidx_match_set(t, probe[i], np[i], alive, len);
            for (uint32_t e = 0; e < n_dest; e++)
                CHECK_INT_EQ(len[e], set[e / 64] >> (e % 64) & 1
                                         ? pfxidx_ref_match(r, probe[i], np[i], e)
                                         : 999);
        }
        for (int i = 0; i < 8; i++)
            for (uint32_t e = 0; e < n_dest; e += 1 + (n_dest > 8) * 13)
                CHECK_INT_EQ(sim_pfxidx_match(t, probe[i], np[i], e),
                             pfxidx_ref_match(r, probe[i], np[i], e));
    }
    sim_pfxidx_destroy(t);
    pfxidx_ref_destroy(r);
}

/* expire_idle and the change log, one destination: times on a 1/64 s
 * grid (exact in binary), so dropping blocks with !(now - t < ttl) is the
 * reference's expire(before) with before = now - ttl + 1/128; a set kept
 * from the log alone has the table's size and holds every block the
 * reference matches.  And the run-head log with sim_pfxidx_run_at (what
 * models/routers/route_kvidx.c's walk reads): a set of heads kept from that log
 * holds exactly the blocks of the prompt where run_at finds a run, and
 * the stretches run_at gives from them cover exactly the prompt's blocks
 * the reference holds (holes included). */
static void idle_and_log(uint32_t cap, uint64_t seed)
{
    sim_pfxidx *t = sim_pfxidx_create(cap, 1);
    pfxidx_ref *r = pfxidx_ref_create(cap, 1);
    CHECK(t && r);
    sim_pfxidx_log_on(t);
    sim_pfxidx_head_log_on(t);
    sim_u64map shadow, heads;
    CHECK_INT_EQ(sim_u64map_init(&shadow, 64), 0);
    CHECK_INT_EQ(sim_u64map_init(&heads, 64), 0);
    uint64_t x = seed, h[MAXN];
    uint32_t held = 0, logged = 0, expired = 0, holes = 0;
    double now = 0;
    for (int step = 0; step < 20000; step++) {
        now += (double)(rnd(&x) % 64) / 64.0;
        const uint32_t n = prompt(&x, h, (uint32_t)(rnd(&x) % FAMILIES));
        if (rnd(&x) % 4) {
            sim_pfxidx_add(t, h, n, 0, now);
            pfxidx_ref_add(r, h, n, 0, now);
        } else {
            const double ttl = (double)(rnd(&x) % 640) / 64.0;
            const uint32_t before = pfxidx_ref_size(r);
            sim_pfxidx_expire_idle(t, now, ttl);
            pfxidx_ref_expire(r, now - ttl + 1.0 / 128);
            expired += pfxidx_ref_size(r) < before;
        }
        const uint64_t *lh;
        const uint8_t *in;
        const uint32_t k = sim_pfxidx_log(t, &lh, &in);
        for (uint32_t j = 0; j < k; j++) {
            if (in[j]) {
                CHECK(sim_u64map_get(&shadow, lh[j]) == SIM_U64MAP_NONE);
                sim_u64map_put(&shadow, lh[j], 1);
                held++;
            } else {
                CHECK(sim_u64map_get(&shadow, lh[j]) != SIM_U64MAP_NONE);
                sim_u64map_del(&shadow, lh[j]);
                held--;
            }
        }
        logged += k;
        sim_pfxidx_log_clear(t);
        const uint32_t kh = sim_pfxidx_head_log(t, &lh, &in);
        for (uint32_t j = 0; j < kh; j++) {
            CHECK((sim_u64map_get(&heads, lh[j]) == SIM_U64MAP_NONE) == (in[j] != 0));
            if (in[j])
                sim_u64map_put(&heads, lh[j], 1);
            else
                sim_u64map_del(&heads, lh[j]);
        }
        sim_pfxidx_head_log_clear(t);
        uint8_t cover[MAXN] = {0};
        for (uint32_t j = 0; j < n; j++) {
            const uint32_t run = sim_pfxidx_run_at(t, h + j, n - j);
            CHECK((run > 0) == (sim_u64map_get(&heads, h[j]) != SIM_U64MAP_NONE));
            CHECK(run <= n - j);
            for (uint32_t q = j; q < j + run; q++)
                cover[q] = 1;
        }
        for (uint32_t j = 0; j < n; j++) {
            const uint32_t has = pfxidx_ref_match(r, h + j, 1, 0);
            CHECK_INT_EQ(cover[j], has);
            holes += j > 0 && has && !pfxidx_ref_match(r, h + j - 1, 1, 0);
        }
        CHECK_INT_EQ(sim_pfxidx_size(t), pfxidx_ref_size(r));
        CHECK_INT_EQ(held, pfxidx_ref_size(r));
        const uint32_t m = pfxidx_ref_match(r, h, n, 0);
        CHECK_INT_EQ(sim_pfxidx_match(t, h, n, 0), m);
        for (uint32_t j = 0; j < m; j++)
            CHECK(sim_u64map_get(&shadow, h[j]) != SIM_U64MAP_NONE);
    }
    CHECK(expired > 100 && logged > 10000); /* both paths exercised */
    CHECK(cap > 1000 || holes > 100);       /* held blocks after absent ones */
    sim_u64map_fini(&shadow);
    sim_u64map_fini(&heads);
    sim_pfxidx_destroy(t);
    pfxidx_ref_destroy(r);
}

int main(void)
{
    idle_and_log(6, 11);
    idle_and_log(60, 12);
    idle_and_log(100000, 13);
    known_answers();
    static const uint32_t caps[] = {6, 17, 40, 100, 400};
    for (int i = 0; i < 5; i++) {
        against_reference(caps[i], 5, 1000 + (uint64_t)i, 40000);
        against_reference(caps[i], 70, 2000 + (uint64_t)i, 10000);
    }
    return 0;
}
