/*
 * The shared u64 -> u32 map against a brute-force reference over random
 * put/insert/get/delete sequences (growth, backward-shift deletion,
 * iteration, clear).
 */
#include <stdlib.h>

#include "sim/core/error.h"
#include "sim/core/u64map.h"
#include "check.h"

enum { NK = 300 };

int main(void)
{
    sim_u64map m;
    CHECK_INT_EQ(sim_u64map_init(&m, 4), SIM_OK);
    uint32_t ref[NK];
    for (int i = 0; i < NK; i++)
        ref[i] = SIM_U64MAP_NONE;
    uint64_t x = 77;
    size_t n = 0;
    for (int it = 0; it < 200000; it++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t k = (uint32_t)(x >> 33) % NK, op = (uint32_t)(x >> 20) % 4;
        uint64_t key = (uint64_t)k * 0x100000001ULL; /* collide in low bits */
        if (op == 0) {
            uint32_t v = (uint32_t)(x >> 40) % 1000;
            n += ref[k] == SIM_U64MAP_NONE;
            sim_u64map_put(&m, key, v);
            ref[k] = v;
        } else if (op == 1) {
            n -= ref[k] != SIM_U64MAP_NONE;
            sim_u64map_del(&m, key);
            ref[k] = SIM_U64MAP_NONE;
        } else if (op == 2) {
            uint32_t v = (uint32_t)(x >> 40) % 1000;
            CHECK_INT_EQ(sim_u64map_insert(&m, key, v), ref[k]);
            if (ref[k] == SIM_U64MAP_NONE) {
                ref[k] = v;
                n++;
            }
        }
        CHECK_INT_EQ(sim_u64map_get(&m, key), ref[k]);
        CHECK_INT_EQ(m.n, n);
        if (it % 5000 == 0)
            for (int j = 0; j < NK; j++)
                CHECK_INT_EQ(sim_u64map_get(&m, (uint64_t)j * 0x100000001ULL), ref[j]);
        if (it % 20000 == 0) { /* iteration visits every entry once */
            size_t pos = 0, seen = 0;
            uint64_t key2;
            uint32_t v2;
            while (sim_u64map_next(&m, &pos, &key2, &v2)) {
                CHECK_INT_EQ(key2 % 0x100000001ULL, 0);
                CHECK_INT_EQ(v2, ref[key2 / 0x100000001ULL]);
                seen++;
            }
            CHECK_INT_EQ(seen, n);
        }
    }
    sim_u64map_clear(&m);
    CHECK_INT_EQ(m.n, 0);
    CHECK_INT_EQ(sim_u64map_get(&m, 0), SIM_U64MAP_NONE);
    sim_u64map_fini(&m);
    sim_u64map_fini(&m);
    puts("u64map: ok");
    return 0;
}
