/*
 * Test fixture shared by the tests that simulate the real Mooncake trace
 * (data/mooncake) on a small cluster of Llama-3.3-70B fp8, TP = 2, H100-SXM
 * (tests/test_faults.c, tests/test_cruise.c): the loaded trace and specs,
 * the cluster parameters and one replayed run.  Header-only, for tests:
 * each test executable includes it once.
 */
#ifndef CRSIM_TESTS_MOONCAKE_FIXTURE_H
#define CRSIM_TESTS_MOONCAKE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "models/cluster.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "workloads/mooncake.h"
#include "workloads/replay.h"
#include "check.h"

static wl_trace *trace;
static spec_hw hw;
static spec_model model;

/* Load the trace (512-token hash ids) and the specs of SPEC_DIR; aborts
 * the test on failure. */
static void fx_load(const char *trace_path, const char *spec_dir)
{
    setenv("CRSIM_SPEC_DIR", spec_dir, 1);
    CHECK_INT_EQ(wl_mooncake_load(trace_path, 512, &trace), SIM_OK);
    CHECK_INT_EQ(spec_hw_load("h100-sxm", &hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load("llama-3.3-70b", &model), SIM_OK);
}

static void fx_fini(void)
{
    wl_trace_destroy(trace);
    spec_hw_fini(&hw);
    spec_model_fini(&model);
}

/* n_dest engines of 16-token blocks, 8,192-token batches, prefix caching;
 * warm-up 10 s, no drain limit to speak of; the exact view, one gateway
 * replica; retries as the faults defaults (0.5 s, 2, health check 10 s);
 * the roofline cost model.  Callers change what their test needs. */
static cluster_params fx_params(uint32_t n_dest)
{
    cluster_params p = {
        .n_dest = n_dest,
        .deploy = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                   .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16},
        .engine = {.block_size = 16, .max_num_batched_tokens = 8192, .max_num_seqs = 256,
                   .prefix_caching = true},
        .warmup_s = 10,
        .drain_s = 1e6,
        .gateway = {.scrape_interval_s = 0, .replicas = 1},
        .faults = {.retry_timeout_s = 0.5, .max_retries = 2, .health_check_interval_s = 10},
    };
    const cost_params cp = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 0.0044,
                            .allreduce_latency_s = 10e-6};
    cost_roofline_init(&p.cost, &p.deploy, &cp);
    return p;
}

static int fx_next_req(void *s, wl_request *out) { return wl_replay_next(s, out); }

/* Replay the trace at `rate` requests/s (at most max_req requests, seed
 * `seed` for the replay and the router) through router `rt` configured by
 * the YAML text `rcfg` (NULL: defaults) into *res; the run must succeed. */
static void fx_run(const cluster_params *p, const route_type *rt, const char *rcfg, double rate,
                   uint64_t max_req, uint64_t seed, cluster_result *res)
{
    wl_replay_params wp = {.block_size = 16, .key_ids = 2, .rate = rate, .tick_s = 3,
                           .seed = seed, .max_requests = max_req};
    wl_replay *rp = NULL;
    CHECK_INT_EQ(wl_replay_create(trace, &wp, &rp), SIM_OK);
    const route_env env = {.n_dest = p->n_dest, .seed = seed, .block_size = 16,
                           .batch_tokens = 8192, .pool_blocks = 28335, .ttft_slo_s = 3.5,
                           .cost = &p->cost};
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse(rcfg ? rcfg : "router: {}\n", "test", &rc), SIM_OK);
    CHECK(rt != NULL);
    const int crc = cluster_run(p, rt, &env, rc, (wl_source){.state = rp, .next = fx_next_req}, res);
    if (crc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(crc, SIM_OK);
    route_config_free(rc);
    wl_replay_destroy(rp);
}

#endif
