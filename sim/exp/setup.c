/*
 * Building a run's inputs from a config: specs → deployment → KV pool,
 * calibration profile → cost model, workload → shared trace and per-run
 * streams.
 */
#include "sim/exp/setup.h"

#include <gsl/gsl_sort.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost_profile.h"
#include "models/plan.h"
#include "models/spec_load.h"
#include "workloads/keyrates.h"
#include "workloads/replay.h"
#include "workloads/synth.h"
#include "sim/core/error.h"

int exp_setup_init(const exp_config *cfg, exp_setup *s)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    int rc;
    if ((rc = spec_hw_load(cfg->hardware, &s->hw)) || (rc = spec_model_load(cfg->model, &s->model)))
        goto fail;
    s->dep = (spec_deploy){.hw = &s->hw, .model = &s->model, .tp = cfg->tp,
                           .mem_util = cfg->mem_util, .block_size = cfg->block_size};
    spec_dtype_parse(cfg->weight_dtype, &s->dep.weight_dtype);
    spec_dtype_parse(cfg->kv_dtype, &s->dep.kv_dtype);
    if ((rc = spec_kv_pool(&s->dep, &s->pool_tokens, &s->pool_blocks)))
        goto fail;
    char *pname = cfg->cost_profile[0] ? sim_xstrdup(cfg->cost_profile)
                                       : cost_profile_default_name(&s->dep);
    snprintf(s->cost_profile, sizeof s->cost_profile, "%s", pname);
    cost_profile prof;
    rc = cost_profile_load(pname, &prof);
    free(pname);
    if (rc)
        goto fail;
    rc = cost_model_from_profile(&s->cost, (enum cost_kind)cfg->cost_model, &s->dep, &prof);
    cost_profile_fini(&prof);
    if (rc)
        goto fail;
    s->is_trace = strcmp(cfg->wl.type, "mooncake") == 0;
    if (s->is_trace &&
        (rc = wl_mooncake_load(cfg->wl.trace, (uint32_t)cfg->wl.trace_block_tokens, &s->trace)))
        goto fail;
    /* The key population depends on the workload seed only: build it once
     * for every run of this config.  A config it cannot be built from is
     * left to exp_stream_open(), which reports the error as before. */
    if (!s->is_trace && strcmp(cfg->wl.type, "synthetic") == 0 &&
        wl_config_check(&cfg->wl, cfg->wl.name && *cfg->wl.name ? cfg->wl.name : "workload") ==
            SIM_OK &&
        wl_synth_keys(&cfg->wl, &s->keys, &s->keys_theta) == SIM_OK)
        s->has_keys = true;
    bool shares = false;
    for (size_t i = 0; i < cfg->n_policies; i++) {
        const route_type *rt = route_find(cfg->policies[i]);
        if (rt && (route_needs(rt, cfg->router) & ROUTE_NEEDS_KEY_SHARES)) {
            size_t used = strlen(s->nominal_for);
            snprintf(s->nominal_for + used, sizeof s->nominal_for - used, "%s%s",
                     shares ? ", " : "", cfg->policies[i]);
            shares = true;
        }
    }
    if (shares && (rc = exp_setup_key_shares(s, &s->nominal, &s->n_nominal)))
        goto fail;
    s->cp = (cluster_params){
        .n_dest = (uint32_t)cfg->destinations,
        .deploy = s->dep,
        .cost = s->cost,
        .engine = {.block_size = (uint32_t)cfg->block_size,
                   .max_num_batched_tokens = (uint32_t)cfg->max_num_batched_tokens,
                   .max_num_seqs = (uint32_t)cfg->max_num_seqs,
                   .prefix_caching = cfg->prefix_caching},
        .warmup_s = cfg->warmup_s,
        .drain_s = cfg->drain_s,
        .timeline_s = cfg->timeline_s,
        .gateway = {.scrape_interval_s = cfg->scrape_interval_s,
                    .scrape_delay_s = cfg->scrape_delay_s,
                    .replicas = (uint32_t)cfg->replicas,
                    .assign = cfg->replica_assign,
                    .kv_event_delay_s = cfg->kv_event_delay_s},
    };
    return SIM_OK;
fail:
    exp_setup_fini(s);
    return rc;
}

static int cmp_share_desc(const void *a, const void *b)
{
    const plan_key *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate > y->rate ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

int exp_setup_key_shares(const exp_setup *s, plan_key **out, size_t *n)
{
    const exp_config *cfg = s->cfg;
    if (s->is_trace) {
        size_t m = s->trace->n;
        unsigned long *k = sim_xmalloc((m ? m : 1) * sizeof *k); /* 64-bit on LP64 */
        for (size_t i = 0; i < m; i++)
            k[i] = wl_trace_routing_key(s->trace, i, (uint32_t)cfg->wl.key_ids);
        gsl_sort_ulong(k, 1, m);
        plan_key *c = sim_xmalloc((m ? m : 1) * sizeof *c);
        size_t nk = 0;
        for (size_t i = 0; i < m; i++) {
            if (i == 0 || k[i] != k[i - 1])
                c[nk++] = (plan_key){k[i], 0};
            c[nk - 1].rate += 1.0 / (double)m;
        }
        free(k);
        qsort(c, nk, sizeof *c, cmp_share_desc);
        *out = c;
        *n = nk;
        return SIM_OK;
    }
    wl_keyrates kr = {0};
    int rc = s->has_keys ? wl_keyrates_copy(&s->keys, &kr) : wl_synth_keys(&cfg->wl, &kr, NULL);
    if (rc)
        return rc;
    double tot = wl_keyrates_total(&kr);
    plan_key *c = sim_xmalloc((kr.n ? kr.n : 1) * sizeof *c);
    for (size_t i = 0; i < kr.n; i++)
        c[i] = (plan_key){kr.id[i], kr.rate[i] / tot}; /* already descending */
    *out = c;
    *n = kr.n;
    wl_keyrates_fini(&kr);
    return SIM_OK;
}

void exp_setup_fini(exp_setup *s)
{
    if (s->has_keys)
        wl_keyrates_fini(&s->keys);
    s->has_keys = false;
    free(s->nominal);
    s->nominal = NULL;
    s->n_nominal = 0;
    wl_trace_destroy(s->trace);
    s->trace = NULL;
    spec_hw_fini(&s->hw);
    spec_model_fini(&s->model);
}

route_env exp_setup_route_env(const exp_setup *s, uint64_t seed, double rate)
{
    route_env env = exp_config_route_env(s->cfg);
    env.seed = seed;
    env.pool_blocks = s->pool_blocks;
    env.cost = &s->cost;
    env.nominal = s->nominal;
    env.n_nominal = s->n_nominal;
    env.nominal_rate = rate;
    return env;
}

struct exp_stream {
    wl_replay *replay;
    wl_synth *synth;
};

static int replay_next(void *state, wl_request *out) { return wl_replay_next(state, out); }

int exp_stream_open(const exp_setup *s, uint64_t seed, double rate, exp_stream **out)
{
    const exp_config *cfg = s->cfg;
    exp_stream *st = sim_xcalloc(1, sizeof *st);
    int rc;
    if (s->is_trace) {
        wl_replay_params wp = {.block_size = (uint32_t)cfg->block_size,
                               .key_ids = (uint32_t)cfg->wl.key_ids, .rate = rate,
                               .tick_s = cfg->wl.tick_s, .seed = seed,
                               .max_requests = (uint64_t)cfg->wl.max_requests};
        rc = wl_replay_create(s->trace, &wp, &st->replay);
    } else {
        rc = wl_synth_create_keys(&cfg->wl, s->has_keys ? &s->keys : NULL, s->keys_theta, seed,
                                  rate, (uint32_t)cfg->block_size, &st->synth);
    }
    if (rc) {
        free(st);
        return rc;
    }
    *out = st;
    return SIM_OK;
}

wl_source exp_stream_source(exp_stream *st)
{
    if (st->replay)
        return (wl_source){st->replay, replay_next};
    return wl_synth_source(st->synth);
}

void exp_stream_close(exp_stream *st)
{
    if (!st)
        return;
    wl_replay_destroy(st->replay);
    wl_synth_destroy(st->synth);
    free(st);
}

void exp_setup_print(const exp_setup *s, FILE *out)
{
    const exp_config *cfg = s->cfg;
    fprintf(out, "cluster: %lld x %s on %lld x %s, weights %s, KV %s\n",
            (long long)cfg->destinations, s->model.name, (long long)cfg->tp, s->hw.name,
            cfg->weight_dtype, cfg->kv_dtype);
    fprintf(out, "cost model: %s, calibration profile %s\n",
            cost_kind_name((enum cost_kind)cfg->cost_model), s->cost_profile);
    if (cfg->scrape_interval_s > 0)
        fprintf(out, "gateway: %lld replica%s (%s), engine metrics scraped every %g s, visible "
                "%g s later (docs/information-model.md)\n", (long long)cfg->replicas,
                cfg->replicas == 1 ? "" : "s",
                cfg->replica_assign == CLUSTER_ASSIGN_RANDOM ? "random" : "round robin",
                cfg->scrape_interval_s, cfg->scrape_delay_s);
    else
        fprintf(out, "gateway: %lld replica%s (%s), exact engine metrics (read at every "
                "decision)\n", (long long)cfg->replicas, cfg->replicas == 1 ? "" : "s",
                cfg->replica_assign == CLUSTER_ASSIGN_RANDOM ? "random" : "round robin");
    if (s->nominal)
        fprintf(out, "%s warm start: ON (first plan from the workload's nominal rates of "
                "%zu keys, not from measured counts)\n", s->nominal_for, s->n_nominal);
    fprintf(out, "KV pool per destination: %u blocks x %lld tokens = %llu tokens (%.1f GB)\n",
            s->pool_blocks, (long long)cfg->block_size, (unsigned long long)s->pool_tokens,
            (double)s->pool_tokens * spec_kv_bytes_per_token(&s->model, s->dep.kv_dtype) / 1e9);
    if (s->is_trace) {
        fprintf(out, "workload: %s (%zu requests, %.0f s, %.2f requests/s as recorded)\n",
                cfg->wl.trace, s->trace->n, wl_trace_span_s(s->trace),
                wl_trace_mean_rate(s->trace));
        return;
    }
    wl_keyrates kr = {0};
    wl_keystats ks = {0};
    if (wl_synth_keys(&cfg->wl, &kr, NULL) == SIM_OK && wl_keyrates_describe(&kr, &ks) == SIM_OK)
        fprintf(out, "workload: synthetic%s%s, %zu keys, Gini %.3f, top 4%% of keys %.1f%% of "
                "requests, max key share %.3f%%\n", cfg->wl.name[0] ? " " : "", cfg->wl.name,
                ks.n, ks.gini, 100 * ks.top4, 100 * ks.max_share);
    wl_keyrates_fini(&kr);
}
