/*
 * LSD radix sort of u64 (key, value) pairs; see sort.h.
 */
#include "sim/core/sort.h"

#include <string.h>

void sim_sort_pairs_u64(uint64_t *pair, size_t n, uint64_t *tmp)
{
    /* All eight digit histograms in one read of the keys. */
    size_t cnt[8][256];
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++) {
        const uint64_t k = pair[2 * i];
        for (unsigned d = 0; d < 8; d++)
            cnt[d][(k >> (8 * d)) & 255]++;
    }
    uint64_t *src = pair, *dst = tmp;
    for (unsigned d = 0; d < 8; d++) {
        size_t *c = cnt[d];
        const unsigned shift = 8 * d;
        if (n == 0 || c[(src[0] >> shift) & 255] == n)
            continue; /* every key has this digit: nothing moves */
        size_t sum = 0;
        for (unsigned v = 0; v < 256; v++) {
            const size_t x = c[v];
            c[v] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++) {
            const size_t j = c[(src[2 * i] >> shift) & 255]++;
            dst[2 * j] = src[2 * i];
            dst[2 * j + 1] = src[2 * i + 1];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != pair)
        memcpy(pair, src, 2 * n * sizeof *pair);
}
