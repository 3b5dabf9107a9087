/*
 * Stream statistics (see describe.h).  Block hashes and keys go into
 * open-addressing sets of uint64 (linear probing, grown at half load); 0 is
 * the empty marker, which is safe because block hashes are never 0 and keys
 * are stored as key + 1 (a key of 2^64 − 1 would wrap to 0: it is counted
 * by a separate flag).
 */
#include "workloads/describe.h"

#include <math.h>
#include <stdlib.h>

#include "sim/core/error.h"

typedef struct u64set {
    uint64_t *a;
    size_t cap, n;
} u64set;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int set_grow(u64set *s)
{
    size_t cap = s->cap ? 2 * s->cap : 1024;
    uint64_t *a = calloc(cap, sizeof *a);
    if (!a)
        return SIM_ERROR(SIM_ENOMEM, "out of memory describing a request stream");
    for (size_t i = 0; i < s->cap; i++) {
        uint64_t v = s->a[i];
        if (!v)
            continue;
        size_t j = mix(v) & (cap - 1);
        while (a[j])
            j = (j + 1) & (cap - 1);
        a[j] = v;
    }
    free(s->a);
    s->a = a;
    s->cap = cap;
    return SIM_OK;
}

static int set_has(const u64set *s, uint64_t v)
{
    if (!s->cap)
        return 0;
    for (size_t j = mix(v) & (s->cap - 1); s->a[j]; j = (j + 1) & (s->cap - 1))
        if (s->a[j] == v)
            return 1;
    return 0;
}

/* Insert v (nonzero); returns 1 if new, 0 if present, -1 on OOM. */
static int set_add(u64set *s, uint64_t v)
{
    if (2 * (s->n + 1) > s->cap && set_grow(s))
        return -1;
    size_t j = mix(v) & (s->cap - 1);
    for (; s->a[j]; j = (j + 1) & (s->cap - 1))
        if (s->a[j] == v)
            return 0;
    s->a[j] = v;
    s->n++;
    return 1;
}

int wl_stream_describe(wl_source src, uint64_t max, uint32_t block_size, wl_stream_stats *out)
{
    *out = (wl_stream_stats){0};
    if (block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "block size 0; expected at least 1 token");
    u64set blocks = {0}, keys = {0};
    int rc = SIM_OK, key_max = 0;
    double first = 0, prev = 0, sg = 0, sg2 = 0, so = 0;
    wl_request r;
    while ((!max || out->requests < max) && src.next(src.state, &r)) {
        if (out->requests == 0)
            first = r.arrival_s;
        else {
            double g = r.arrival_s - prev;
            if (g < 0) {
                rc = SIM_ERROR(SIM_EINVAL, "request %llu arrives at %.9g s, before its "
                               "predecessor (%.9g s); expected non-decreasing arrivals",
                               (unsigned long long)r.id, r.arrival_s, prev);
                wl_request_fini(&r);
                break;
            }
            sg += g;
            sg2 += g * g;
        }
        prev = r.arrival_s;
        /* At most the prompt's full blocks less one token, as the engine
         * (the request's own output blocks can never be hits). */
        const uint32_t lim = r.prompt_tokens ? (r.prompt_tokens - 1) / block_size : 0;
        uint32_t hit = 0;
        while (hit < r.n_blocks && hit < lim && set_has(&blocks, r.blocks[hit]))
            hit++;
        for (uint32_t i = hit; i < r.n_blocks && rc == SIM_OK; i++)
            if (set_add(&blocks, r.blocks[i]) < 0)
                rc = SIM_ENOMEM;
        if (r.key == UINT64_MAX)
            key_max = 1;
        else if (rc == SIM_OK && set_add(&keys, r.key + 1) < 0)
            rc = SIM_ENOMEM;
        out->requests++;
        out->prompt_tokens += r.prompt_tokens;
        out->hit_tokens += (uint64_t)hit * block_size;
        so += r.output_tokens;
        wl_request_fini(&r);
        if (rc)
            break;
    }
    free(blocks.a);
    free(keys.a);
    if (rc)
        return rc;
    uint64_t n = out->requests;
    out->keys = keys.n + (uint64_t)key_max;
    out->span_s = n ? prev - first : 0;
    out->rate = out->span_s > 0 ? (double)(n - 1) / out->span_s : 0;
    out->mean_prompt = n ? (double)out->prompt_tokens / (double)n : 0;
    out->mean_output = n ? so / (double)n : 0;
    if (n > 2) {
        double m = sg / (double)(n - 1);
        double var = sg2 / (double)(n - 1) - m * m;
        out->iat_cv = m > 0 && var > 0 ? sqrt(var) / m : 0;
    }
    out->inf_hit_rate = out->prompt_tokens ? (double)out->hit_tokens / (double)out->prompt_tokens
                                           : 0;
    return SIM_OK;
}
