/*
 * Benchmark driver: one engine, a fixed batch at t = 0, the event loop
 * reduced to "start a step, advance the clock by its duration, finish it".
 */
#include "models/cost_bench.h"

#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"

typedef struct bench_ctx {
    double ttft_sum, tpot_sum;
    uint32_t finished, rejected;
} bench_ctx;

static void on_first(void *ctx, uint32_t dest, engine_req *er, double t)
{
    (void)dest;
    ((bench_ctx *)ctx)->ttft_sum += t - er->r->arrival_s;
}

static void on_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    bench_ctx *c = ctx;
    (void)dest;
    if (er->rejected) {
        c->rejected++;
        return;
    }
    c->finished++;
    if (er->r->output_tokens > 1)
        c->tpot_sum += (t - er->first_token_s) / (double)(er->r->output_tokens - 1);
}

int cost_bench_run(const cost_model *m, uint32_t n_blocks, const engine_params *p, uint32_t n,
                   uint32_t isl, uint32_t osl, cost_bench_result *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || isl == 0 || osl == 0)
        return SIM_ERROR(SIM_EINVAL, "benchmark of %u requests of %u prompt and %u output "
                         "tokens; expected all three >= 1", n, isl, osl);
    if (((uint64_t)isl + osl - 1 + p->block_size - 1) / p->block_size > n_blocks)
        return SIM_ERROR(SIM_EINVAL, "benchmark request of %u + %u tokens does not fit in a "
                         "pool of %u blocks of %u tokens; expected a shorter request or a "
                         "larger pool", isl, osl, n_blocks, p->block_size);
    bench_ctx c = {0};
    engine_hooks hooks = {.ctx = &c, .first_token = on_first, .finish = on_finish};
    engine *e = engine_create(0, n_blocks, p, m, &hooks);
    if (!e)
        sim_panic(__FILE__, __LINE__, "out of memory creating the benchmark engine");
    wl_request *rq = sim_xcalloc(n, sizeof *rq);
    engine_req *er = sim_xcalloc(n, sizeof *er);
    /* Distinct contents: the block hashes of request i are chained from a
     * salt of i, so no two prompts share a block. */
    const uint32_t nb = isl / p->block_size;
    for (uint32_t i = 0; i < n; i++) {
        rq[i] = (wl_request){.id = i, .key = i, .prompt_tokens = isl, .output_tokens = osl,
                             .n_blocks = nb};
        rq[i].blocks = sim_xmalloc((nb ? nb : 1) * sizeof *rq[i].blocks);
        uint64_t parent = 0;
        for (uint32_t j = 0; j < nb; j++)
            parent = rq[i].blocks[j] = wl_block_hash(parent, ((uint64_t)i << 32) | j);
        er[i] = (engine_req){.r = &rq[i], .first_token_s = -1.0, .finish_s = -1.0};
        engine_submit(e, &er[i], 0.0);
    }
    double t = 0.0, d;
    while ((d = engine_try_start(e, t)) > 0) {
        t += d;
        engine_step_done(e, t);
    }
    const engine_stats *st = engine_get_stats(e);
    out->makespan_s = t;
    out->ttft_mean_s = c.ttft_sum / (double)n;
    out->tpot_mean_s = c.tpot_sum / (double)n;
    out->steps = st->steps;
    out->preemptions = st->preemptions;
    SIM_ALWAYS(c.finished + c.rejected == n);
    int rc = c.rejected ? SIM_ERROR(SIM_EINVAL, "benchmark: %u of %u requests rejected by the "
                                    "engine", c.rejected, n)
                        : SIM_OK;
    engine_destroy(e);
    for (uint32_t i = 0; i < n; i++) {
        wl_request_fini(&rq[i]);
    }
    free(rq);
    free(er);
    return rc;
}
