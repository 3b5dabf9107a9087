/*
 * Stream statistics (see describe.h).  Block hashes and keys go into sets
 * (the shared hash map, sim/core/u64map.h, with a dummy value); the
 * inter-arrival gaps into GSL's running statistics (gsl_rstat), which
 * computes the variance stably in one pass.
 */
#include "workloads/describe.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_rstat.h>

#include "sim/core/error.h"
#include "sim/core/u64map.h"

/* Add v to the set (aborts if out of memory while growing). */
static void set_add(sim_u64map *s, uint64_t v)
{
    (void)sim_u64map_insert(s, v, 0);
}

int wl_stream_describe(wl_source src, uint64_t max, uint32_t block_size, wl_stream_stats *out)
{
    return wl_stream_describe_from(src, max, block_size, -INFINITY, out);
}

int wl_stream_describe_from(wl_source src, uint64_t max, uint32_t block_size, double from_s,
                            wl_stream_stats *out)
{
    *out = (wl_stream_stats){.from_s = from_s};
    if (block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "block size 0; expected at least 1 token");
    if (isnan(from_s))
        return SIM_ERROR(SIM_EINVAL, "measured window start NaN; expected a time in s");
    sim_u64map blocks = {0}, keys = {0};
    gsl_rstat_workspace *gaps = gsl_rstat_alloc();
    int rc = SIM_OK;
    if (!gaps || sim_u64map_init(&blocks, 1024) || sim_u64map_init(&keys, 1024)) {
        if (gaps)
            gsl_rstat_free(gaps);
        sim_u64map_fini(&blocks);
        return SIM_ERROR(SIM_ENOMEM, "out of memory describing a request stream");
    }
    double first = 0, prev = 0, so = 0;
    wl_request r;
    int got = 0;
    while ((!max || out->requests < max) && (got = src.next(src.state, &r)) > 0) {
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
            gsl_rstat_add(g, gaps);
        }
        prev = r.arrival_s;
        /* At most the prompt's full blocks less one token, as the engine
         * (the request's own output blocks can never be hits). */
        const uint32_t lim = r.prompt_tokens ? (r.prompt_tokens - 1) / block_size : 0;
        uint32_t hit = 0;
        while (hit < r.n_blocks && hit < lim && sim_u64map_get(&blocks, r.blocks[hit]) != SIM_U64MAP_NONE)
            hit++;
        for (uint32_t i = hit; i < r.n_blocks; i++)
            set_add(&blocks, r.blocks[i]);
        set_add(&keys, r.key);
        out->requests++;
        out->prompt_tokens += r.prompt_tokens;
        out->hit_tokens += (uint64_t)hit * block_size;
        if (r.arrival_s >= from_s) {
            out->win_requests++;
            out->win_prompt_tokens += r.prompt_tokens;
            out->win_hit_tokens += (uint64_t)hit * block_size;
        }
        so += r.output_tokens;
        wl_request_fini(&r);
        if (rc)
            break;
    }
    /* A stream error (e.g. no memory for a request's blocks). */
    if (got < 0 && rc == SIM_OK)
        rc = -got;
    out->keys = keys.n;
    sim_u64map_fini(&blocks);
    sim_u64map_fini(&keys);
    if (rc) {
        gsl_rstat_free(gaps);
        return rc;
    }
    uint64_t n = out->requests;
    out->span_s = n ? prev - first : 0;
    out->rate = out->span_s > 0 ? (double)(n - 1) / out->span_s : 0;
    out->mean_prompt = n ? (double)out->prompt_tokens / (double)n : 0;
    out->mean_output = n ? so / (double)n : 0;
    if (n > 2) {
        /* The CV of the n - 1 gaps as a population (divisor n - 1 gaps),
         * from GSL's sample variance (divisor n - 2). */
        const double k = (double)gsl_rstat_n(gaps);
        double m = gsl_rstat_mean(gaps);
        double var = gsl_rstat_variance(gaps) * (k - 1) / k;
        out->iat_cv = m > 0 && var > 0 ? sqrt(var) / m : 0;
    }
    gsl_rstat_free(gaps);
    out->inf_hit_rate = out->prompt_tokens ? (double)out->hit_tokens / (double)out->prompt_tokens
                                           : 0;
    out->win_inf_hit_rate = out->win_prompt_tokens ? (double)out->win_hit_tokens /
                                                         (double)out->win_prompt_tokens
                                                   : 0;
    return SIM_OK;
}
