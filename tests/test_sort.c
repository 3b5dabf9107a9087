/*
 * The pair radix sort (sim/core/sort.h) against qsort by (key, value):
 * random keys over a few values (many ties), full 64-bit keys, keys
 * differing only in the top byte or only in one middle byte (the skipped
 * passes), n = 0, 1 and 2; values in increasing order (so the stable
 * sort must equal (key, value) order), and a stability check with values
 * in decreasing order (equal keys keep their input order).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/sort.h"
#include "check.h"

static int cmp_kv(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Keys of kind `kind` for n pairs, sorted both ways, compared. */
static void check(size_t n, int kind, uint64_t seed)
{
    uint64_t *a = malloc((2 * n + 2) * sizeof *a), *b = malloc((2 * n + 2) * sizeof *b);
    uint64_t *tmp = malloc((2 * n + 2) * sizeof *tmp);
    CHECK(a && b && tmp);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = rnd(&s);
        uint64_t k = kind == 0   ? r % 7                      /* many ties */
                     : kind == 1 ? r                          /* full width */
                     : kind == 2 ? (r % 5) << 56              /* top byte only */
                                 : 0x1111111111111111ULL ^ ((r % 3) << 24); /* one middle byte */
        a[2 * i] = k;
        a[2 * i + 1] = i;
    }
    memcpy(b, a, 2 * n * sizeof *a);
    sim_sort_pairs_u64(a, n, tmp);
    qsort(b, n, 2 * sizeof *b, cmp_kv);
    CHECK(n == 0 || memcmp(a, b, 2 * n * sizeof *a) == 0);
    free(a);
    free(b);
    free(tmp);
}

int main(void)
{
    for (int kind = 0; kind < 4; kind++) {
        check(0, kind, 1);
        check(1, kind, 2);
        check(2, kind, 3);
        check(1000, kind, 4);
        check(120000, kind, 5);
    }
    /* Stability: values decreasing; equal keys must keep that order. */
    enum { N = 5000 };
    static uint64_t p[2 * N], t[2 * N];
    uint64_t s = 9;
    for (size_t i = 0; i < N; i++) {
        p[2 * i] = rnd(&s) % 13;
        p[2 * i + 1] = N - i;
    }
    sim_sort_pairs_u64(p, N, t);
    size_t bad = 0;
    for (size_t i = 1; i < N; i++)
        bad += p[2 * i] < p[2 * i - 2] || (p[2 * i] == p[2 * i - 2] && p[2 * i + 1] > p[2 * i - 1]);
    CHECK_INT_EQ(bad, 0);
    printf("sort: all checks passed\n");
    return 0;
}
