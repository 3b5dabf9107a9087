/*
 * Building a run's inputs from a config: specs → deployment → KV pool,
 * calibration profile → cost model, workload → shared trace and per-run
 * streams.
 */
#include "sim/exp/setup.h"

#include <dirent.h>
#include <math.h>
#include <gsl/gsl_sort.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cost_profile.h"
#include "models/routers/plan.h"
#include "models/spec_load.h"
#include "workloads/ingest.h"
#include "workloads/keyrates.h"
#include "workloads/replay.h"
#include "workloads/client.h"
#include "workloads/synth.h"
#include "workloads/wl_config.h"
#include "sim/core/error.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of the *.yaml files of folder `dir` (without ".yaml"),
 * ", "-joined and sorted, into buf (n bytes; "(none)" if none).  Cannot
 * fail (an unreadable folder lists nothing). */
static void list_yaml(const char *dir, char *buf, size_t n)
{
    char *names[64];
    size_t k = 0;
    DIR *dp = opendir(dir);
    struct dirent *e;
    while (dp && k < 64 && (e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && e->d_name[0] != '.' && strcmp(e->d_name + len - 5, ".yaml") == 0) {
            names[k] = sim_xstrdup(e->d_name);
            names[k++][len - 5] = '\0';
        }
    }
    if (dp)
        closedir(dp);
    qsort(names, k, sizeof *names, cmp_str);
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        if (used + 1 < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    if (k == 0)
        snprintf(buf, n, "(none)");
}

/* A spec or profile named by config key `key` (value `value`) that cannot
 * be opened: say which key, the folder it was looked up in and what
 * exists there.  Other errors (a bad spec file) already name their file
 * and line and pass unchanged. */
static int missing_file_at(int rc, const char *where, const char *key, const char *value,
                           const char *what)
{
    if (rc != SIM_EIO || !strstr(sim_errmsg(), "cannot open"))
        return rc;
    char msg[512], have[512];
    snprintf(msg, sizeof msg, "%s", sim_errmsg());
    char *dir = NULL;
    if (spec_dir(&dir))
        return rc;
    list_yaml(dir, have, sizeof have);
    rc = SIM_ERROR(rc, "%s: key '%s' is '%s': no such %s (%s); expected a name in %s/ (one "
                   "of: %s) or a path to a %s file", where, key, value, what, msg, dir, have,
                   what);
    free(dir);
    return rc;
}

static int missing_file(int rc, const exp_config *cfg, const char *key, const char *value,
                        const char *what)
{
    return missing_file_at(rc, cfg->src.path ? cfg->src.path : "config", key, value, what);
}

/* "<spec dir>/cost" into dir (empty if the spec dir cannot be found). */
static void cost_dir(char *dir, size_t size)
{
    char *sd = NULL;
    if (spec_dir(&sd) == SIM_OK)
        snprintf(dir, size, "%s/cost", sd);
    else
        snprintf(dir, size, "(no spec folder)");
    free(sd);
}

/* A calibration profile that does not exist: named by cost.profile, or
 * derived from the deployment keys when cost.profile is empty
 * (cost_profile_default_name: model, hardware, tp, dtypes).  Say which,
 * and list the profiles there are. */
static int missing_profile(int rc, const exp_config *cfg, const char *pname)
{
    if (rc != SIM_EIO || !strstr(sim_errmsg(), "cannot open"))
        return rc;
    char dir[512], have[1024];
    cost_dir(dir, sizeof dir);
    list_yaml(dir, have, sizeof have);
    const char *src = cfg->src.path ? cfg->src.path : "config";
    if (cfg->cost_profile[0])
        return SIM_ERROR(rc, "%s: key 'cost.profile' is '%s': no such calibration profile; "
                         "expected a name in %s/ (one of: %s) or a path to a profile file",
                         src, cfg->cost_profile, dir, have);
    return SIM_ERROR(rc, "%s: no calibration profile '%s' for the deployment of keys "
                     "cluster.model (%s), cluster.hardware (%s), cluster.tp (%lld), "
                     "cluster.weight_dtype (%s) and cluster.kv_dtype (%s); expected a deployment "
                     "with a profile in %s/ (one of: %s), or set cost.profile to one of them or "
                     "to a profile file (docs/calibration.md)", src, pname, cfg->model,
                     cfg->hardware, (long long)cfg->tp, cfg->weight_dtype, cfg->kv_dtype, dir,
                     have);
}

/* Build group `i` of cluster.groups into *o (zeroed first): specs,
 * deployment, KV pool and cost model, the same way exp_setup_init builds
 * the single cluster's.  Errors name the group's key and line.  On error
 * *o holds nothing to free. */
static int group_init(const exp_config *cfg, size_t i, exp_setup_group *o)
{
    memset(o, 0, sizeof *o);
    o->g = exp_config_group(cfg, i);
    const exp_group *g = &o->g;
    char key[96];
    int rc;
    snprintf(key, sizeof key, "cluster.groups[%zu].hardware", i);
    if ((rc = spec_hw_load(g->hardware, &o->hw)))
        return missing_file_at(rc, g->where, key, g->hardware, "GPU spec");
    snprintf(key, sizeof key, "cluster.groups[%zu].model", i);
    if ((rc = spec_model_load(g->model, &o->model))) {
        spec_hw_fini(&o->hw);
        return missing_file_at(rc, g->where, key, g->model, "model spec");
    }
    o->dep = (spec_deploy){.hw = &o->hw, .model = &o->model, .tp = g->tp,
                           .mem_util = g->mem_util, .block_size = cfg->block_size};
    spec_dtype_parse(g->weight_dtype, &o->dep.weight_dtype); /* checked at load */
    spec_dtype_parse(g->kv_dtype, &o->dep.kv_dtype);
    char msg[768];
    if ((rc = spec_kv_pool(&o->dep, &o->pool_tokens, &o->pool_blocks))) {
        snprintf(msg, sizeof msg, "%s", sim_errmsg());
        rc = SIM_ERROR(rc, "%s: cluster.groups[%zu] ('%s'): %s", g->where, i, g->name, msg);
        goto fail;
    }
    char *pname = *g->cost_profile ? sim_xstrdup(g->cost_profile)
                                   : cost_profile_default_name(&o->dep);
    snprintf(o->cost_profile, sizeof o->cost_profile, "%s", pname);
    cost_profile prof;
    rc = cost_profile_load(pname, &prof);
    free(pname);
    if (rc == SIM_OK) {
        rc = cost_model_from_profile(&o->cost, (enum cost_kind)cfg->cost_model, &o->dep, &prof);
        cost_profile_fini(&prof);
    }
    if (rc) {
        char dir[512], have[1024];
        snprintf(msg, sizeof msg, "%s", sim_errmsg());
        cost_dir(dir, sizeof dir);
        list_yaml(dir, have, sizeof have);
        rc = SIM_ERROR(rc, "%s: cluster.groups[%zu] ('%s', %s on %lld x %s, weights %s, KV %s): "
                       "calibration profile '%s': %s; expected a profile in %s/ (one of: %s) "
                       "named by cluster.groups[%zu].cost_profile, or a deployment that has one "
                       "(docs/mixed-fleets.md)", g->where, i, g->name, g->model, (long long)g->tp,
                       g->hardware, g->weight_dtype, g->kv_dtype, o->cost_profile, msg, dir,
                       have, i);
        goto fail;
    }
    return SIM_OK;
fail:
    spec_hw_fini(&o->hw);
    spec_model_fini(&o->model);
    return rc;
}

/* The engine settings of a destination on GPUs `hw` with vLLM budget
 * `batch` and `seqs` running requests at most: with engine.flavor sglang
 * the step's prefill budget is engine.chunked_prefill_size, or SGLang's
 * default for the GPU's memory when that is 0 (docs/engine.md). */
static engine_params engine_of(const exp_config *cfg, const spec_hw *hw, int64_t batch,
                               int64_t seqs)
{
    engine_params p = {.block_size = (uint32_t)cfg->block_size,
                       .max_num_batched_tokens = (uint32_t)batch,
                       .max_num_seqs = (uint32_t)seqs,
                       .prefix_caching = cfg->prefix_caching,
                       .long_prefill_token_threshold =
                           (uint32_t)cfg->long_prefill_token_threshold,
                       .flavor = (enum engine_flavor)cfg->engine_flavor,
                       .policy = (enum engine_policy)cfg->schedule_policy};
    if (p.flavor == ENGINE_SGLANG)
        p.max_num_batched_tokens = cfg->chunked_prefill_size
                                       ? (uint32_t)cfg->chunked_prefill_size
                                       : engine_sglang_chunk_default(hw->mem_bytes);
    return p;
}

/* The groups of cluster.groups into s (cp is set afterwards): every
 * group built, group 0 also into the setup's single-deployment fields. */
static int groups_init(const exp_config *cfg, exp_setup *s)
{
    s->groups = sim_xcalloc(cfg->n_groups, sizeof *s->groups);
    s->cgroups = sim_xcalloc(cfg->n_groups, sizeof *s->cgroups);
    s->group_of = sim_xcalloc((size_t)cfg->destinations, sizeof *s->group_of);
    for (size_t i = 0; i < cfg->n_groups; i++) {
        int rc = group_init(cfg, i, &s->groups[i]);
        if (rc)
            return rc;
        s->n_groups = i + 1;
        const exp_setup_group *x = &s->groups[i];
        s->cgroups[i] = (cluster_group){
            .n_dest = x->g.n_dest, .deploy = x->dep, .cost = x->cost,
            .engine = engine_of(cfg, &x->hw, x->g.max_num_batched_tokens, x->g.max_num_seqs)};
        for (uint32_t d = x->g.first; d < x->g.first + x->g.n_dest; d++)
            s->group_of[d] = (uint32_t)i;
    }
    /* Group 0 again into the single-deployment fields (its own copies of
     * the specs, so that exp_setup_fini frees each once). */
    exp_setup_group g0;
    int rc = group_init(cfg, 0, &g0);
    if (rc)
        return rc;
    s->hw = g0.hw;
    s->model = g0.model;
    s->dep = g0.dep;
    s->dep.hw = &s->hw;
    s->dep.model = &s->model;
    s->pool_tokens = g0.pool_tokens;
    s->pool_blocks = g0.pool_blocks;
    s->cost = g0.cost;
    snprintf(s->cost_profile, sizeof s->cost_profile, "%s", g0.cost_profile);
    return SIM_OK;
}

int exp_setup_init(const exp_config *cfg, exp_setup *s)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    int rc;
    if (cfg->n_groups) {
        if ((rc = groups_init(cfg, s)))
            goto fail;
        goto shared;
    }
    if ((rc = spec_hw_load(cfg->hardware, &s->hw))) {
        rc = missing_file(rc, cfg, "cluster.hardware", cfg->hardware, "GPU spec");
        goto fail;
    }
    if ((rc = spec_model_load(cfg->model, &s->model))) {
        rc = missing_file(rc, cfg, "cluster.model", cfg->model, "model spec");
        goto fail;
    }
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
    if (rc)
        rc = missing_profile(rc, cfg, pname);
    free(pname);
    if (rc)
        goto fail;
    rc = cost_model_from_profile(&s->cost, (enum cost_kind)cfg->cost_model, &s->dep, &prof);
    cost_profile_fini(&prof);
    if (rc)
        goto fail;
shared:
    s->is_trace = wl_config_is_trace(&cfg->wl);
    /* The trace is parsed once per process and its block hashes computed
     * once per block size, both shared by every run (workloads/ingest.h). */
    if (s->is_trace &&
        (rc = wl_config_trace_acquire(&cfg->wl, &s->trace)))
        goto fail;
    if (s->is_trace) {
        s->tick_s = wl_config_trace_tick(&cfg->wl, s->trace, &s->tick_detected);
        s->hashes = wl_ingest_hashes(s->trace, (uint32_t)cfg->block_size);
    }
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
        .engine = engine_of(cfg, &s->hw, cfg->max_num_batched_tokens, cfg->max_num_seqs),
        .warmup_s = cfg->warmup_s,
        .drain_s = cfg->drain_s,
        .timeline_s = cfg->timeline_s,
        .max_model_len = (uint32_t)cfg->max_model_len,
        .fair_min_requests = (uint32_t)cfg->fair_min_requests,
        .goodput = {.ttft_s = cfg->goodput_ttft_s, .tpot_s = cfg->goodput_tpot_s},
        .gateway = {.scrape_interval_s = cfg->scrape_interval_s,
                    .scrape_delay_s = cfg->scrape_delay_s,
                    .replicas = (uint32_t)cfg->replicas,
                    .assign = cfg->replica_assign,
                    .kv_event_delay_s = cfg->kv_event_delay_s},
        .faults = {.events = cfg->faults, .n_events = cfg->n_fault_events,
                   .mtbf_s = cfg->mtbf_s, .mttr_s = cfg->mttr_s,
                   .retry_timeout_s = cfg->retry_timeout_s,
                   .max_retries = (uint32_t)cfg->max_retries,
                   .health_check_interval_s = cfg->health_check_interval_s},
        .groups = s->n_groups ? s->cgroups : NULL,
        .n_groups = (uint32_t)s->n_groups,
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
    wl_ingest_release(s->trace);
    s->trace = NULL;
    s->hashes = NULL;
    spec_hw_fini(&s->hw);
    spec_model_fini(&s->model);
    for (size_t i = 0; i < s->n_groups; i++) {
        spec_hw_fini(&s->groups[i].hw);
        spec_model_fini(&s->groups[i].model);
    }
    free(s->groups);
    free(s->cgroups);
    free(s->group_of);
    s->groups = NULL;
    s->cgroups = NULL;
    s->group_of = NULL;
    s->n_groups = 0;
}

route_env exp_setup_route_env(const exp_setup *s, uint64_t seed, double rate)
{
    route_env env = exp_config_route_env(s->cfg);
    env.seed = seed;
    env.batch_tokens = s->cp.engine.max_num_batched_tokens; /* SGLang: its chunk size */
    env.pool_blocks = s->pool_blocks;
    env.cost = &s->cost;
    env.nominal = s->nominal;
    env.n_nominal = s->n_nominal;
    env.nominal_rate = rate;
    env.group_of = s->group_of;
    return env;
}

struct exp_stream {
    wl_replay *replay;
    wl_synth *synth;
    wl_client *client; /* workload.client.mode other than open */
    double unloaded_now; /* exp_stream_source_unloaded: the last send, s */
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
                               .tick_s = s->tick_s, .seed = seed,
                               .max_requests = (uint64_t)cfg->wl.max_requests,
                               .loop_s = cfg->wl.loop_s, .hashes = s->hashes};
        rc = wl_replay_create(s->trace, &wp, &st->replay);
    } else if (wl_client_closed(&cfg->wl)) {
        rc = wl_client_create(&cfg->wl, s->has_keys ? &s->keys : NULL, seed, rate,
                              (uint32_t)cfg->block_size, &st->client);
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

/* A workload error that names no file although a file of the workload
 * caused it (an arrival-time CSV whose gaps are all 0, an all-idle
 * ServeGen folder): prefix the key and file. */
static int name_input(int rc, const exp_config *cfg)
{
    const wl_config *wl = &cfg->wl;
    const char *key = NULL, *file = NULL;
    const char *msg = sim_errmsg();
    if (wl->arrival.iat_file && wl->arrival.iat_file[0] && strstr(msg, "inter-arrival")) {
        key = "workload.arrival.iat_file";
        file = wl->arrival.iat_file;
    } else if (wl->keys.file && wl->keys.file[0] && strstr(msg, "ServeGen")) {
        key = "workload.keys.file";
        file = wl->keys.file;
    }
    if (!file || strstr(msg, file))
        return rc;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", msg);
    return SIM_ERROR(rc, "%s (%s): %s", file, key, copy);
}

int exp_setup_probe(const exp_setup *s, uint64_t seed, double rate, uint64_t max,
                    exp_probe *out)
{
    *out = (exp_probe){0};
    exp_stream *st = NULL;
    int rc = exp_stream_open(s, seed, rate, &st);
    if (rc)
        return name_input(rc, s->cfg);
    wl_source src = exp_stream_source(st);
    wl_request r;
    double blocks = 0, prompt = 0;
    int got = 0;
    double now = 0, t;
    bool stalled = false;
    /* A closed-loop client without completions yields its first sends
     * only (first turns, the first clients' or batch's requests): a
     * sample.  Its peek may name a wake-up (a stage start) rather than a
     * send: next() then gives 0 once at that time. */
    while (out->n < max) {
        if (src.peek) {
            if (src.peek(src.state, now, &t) <= 0)
                break;
            now = t;
        }
        if ((got = src.next(src.state, &r)) < 0)
            break;
        if (got == 0) {
            if (!src.peek || stalled)
                break;
            stalled = true;
            continue;
        }
        stalled = false;
        blocks += r.n_blocks;
        prompt += r.prompt_tokens;
        out->n++;
        wl_request_fini(&r);
    }
    if (got < 0) { /* a stream error: no memory for a request's blocks */
        exp_stream_close(st);
        return -got;
    }
    exp_stream_close(st);
    if (out->n) {
        out->mean_blocks = blocks / (double)out->n;
        out->mean_prompt = prompt / (double)out->n;
    }
    return SIM_OK;
}

int exp_setup_window(const exp_setup *s, uint64_t seed, double rate, uint64_t enough,
                     exp_window *out)
{
    const exp_config *cfg = s->cfg;
    *out = (exp_window){.warmup_s = cfg->warmup_s};
    const bool share = cfg->warmup_share > 0;
    const uint64_t nreq = cfg->warmup_requests > 0 ? (uint64_t)cfg->warmup_requests : 0;
    out->by_count = share || nreq > 0;
    if (out->by_count)
        out->warmup_s = INFINITY;
    if (wl_client_closed(&cfg->wl)) {
        /* Send times follow the completions: no scan ahead.  The warm-up
         * is by time (exp_config_check refuses the others); the measured
         * count is known only after the run. */
        exp_stream *st = NULL;
        int rc = exp_stream_open(s, seed, rate, &st);
        exp_stream_close(st);
        if (rc)
            return name_input(rc, cfg);
        out->by_count = false;
        out->warmup_s = cfg->warmup_s;
        out->n = out->n_measured = UINT64_MAX;
        return SIM_OK;
    }
    exp_stream *st = NULL;
    int rc = exp_stream_open(s, seed, rate, &st);
    if (rc)
        return name_input(rc, cfg);
    wl_source src = exp_stream_source(st);
    wl_request r;
    double *arr = NULL;
    size_t cap = 0;
    int got;
    double a;
    /* Only arrival times count here: a synthetic stream draws them alone
     * (wl_synth_next_arrival: the same times, without keys, lengths and
     * block hashes, which were most of this scan's time). */
    while ((got = st->synth ? wl_synth_next_arrival(st->synth, &a)
                            : src.next(src.state, &r)) > 0) {
        if (!st->synth) {
            a = r.arrival_s;
            wl_request_fini(&r);
        }
        if (share) {
            if (out->n == cap)
                arr = sim_xrealloc(arr, (cap = cap ? 2 * cap : 1024) * sizeof *arr);
            arr[out->n] = a;
        } else if (nreq > 0 && out->n == nreq) {
            out->warmup_s = a;
        }
        out->n++;
        if (!share && a >= out->warmup_s && ++out->n_measured >= enough && enough > 0)
            break;
    }
    exp_stream_close(st);
    if (got < 0) {
        free(arr);
        return -got;
    }
    if (share) {
        const uint64_t k = (uint64_t)floor(cfg->warmup_share * (double)out->n);
        out->warmup_s = k < out->n ? arr[k] : INFINITY;
        for (uint64_t i = 0; i < out->n; i++)
            out->n_measured += arr[i] >= out->warmup_s;
        free(arr);
    }
    return SIM_OK;
}

wl_source exp_stream_source(exp_stream *st)
{
    if (st->replay)
        return (wl_source){.state = st->replay, .next = replay_next};
    if (st->client)
        return wl_client_source(st->client);
    return wl_synth_source(st->synth);
}

wl_client *exp_stream_client(exp_stream *st) { return st ? st->client : NULL; }

/* next() of exp_stream_source_unloaded on a closed-loop client: take the
 * next send, report it completed at its send time (zero service time, a
 * first token at once), so the client schedules what follows it. */
static int unloaded_next(void *state, wl_request *out)
{
    exp_stream *st = state;
    wl_source src = wl_client_source(st->client);
    bool stalled = false;
    for (;;) {
        double t;
        /* 0: nothing due until a completion, but every request sent has
         * completed: nothing will ever be sent again. */
        if (src.peek(src.state, st->unloaded_now, &t) <= 0)
            return 0;
        st->unloaded_now = t;
        int got = src.next(src.state, out);
        if (got < 0)
            return got;
        if (got == 0) { /* a wake-up (a stage start), not a send */
            if (stalled)
                return 0;
            stalled = true;
            continue;
        }
        src.done(src.state, out, t, 0);
        return 1;
    }
}

wl_source exp_stream_source_unloaded(exp_stream *st)
{
    if (st->client)
        return (wl_source){.state = st, .next = unloaded_next};
    return exp_stream_source(st);
}

void exp_stream_close(exp_stream *st)
{
    if (!st)
        return;
    wl_replay_destroy(st->replay);
    wl_synth_destroy(st->synth);
    wl_client_destroy(st->client);
    free(st);
}

/* A profile whose factors were not all fitted to its deployment says so
 * on a start-up line (its `transferred` key, docs/calibration.md). */
static void print_transfer(FILE *out, const char *who, const char *pname)
{
    cost_profile p;
    if (cost_profile_load(pname, &p) != SIM_OK)
        return; /* loaded at set-up already: cannot fail here but for a race */
    if (p.transferred && *p.transferred)
        fprintf(out, "%sNOTE: calibration profile %s is not fitted to this deployment alone: %s "
                "(docs/calibration.md)\n", who, p.name, p.transferred);
    cost_profile_fini(&p);
}

void exp_setup_print_trace_rule(const exp_config *cfg, const wl_trace *t, double tick_s,
                                bool tick_detected, FILE *out)
{
    char keyrule[160], prefix[200], skipped[64] = "";
    if (*cfg->wl.key_field)
        snprintf(keyrule, sizeof keyrule, "field '%s' (XXH3-64 of its text)", cfg->wl.key_field);
    else if (t->keys)
        snprintf(keyrule, sizeof keyrule, "one per request (no key field)");
    else
        snprintf(keyrule, sizeof keyrule, "first %lld hash ids", (long long)cfg->wl.key_ids);
    if (strcmp(t->prefix, "hashes") == 0)
        snprintf(prefix, sizeof prefix, "the trace's hash ids (%u tokens each)", t->block_tokens);
    else if (strcmp(t->prefix, "none") == 0)
        snprintf(prefix, sizeof prefix, "none (synthetic: every block unique, no reuse)");
    else
        snprintf(prefix, sizeof prefix, "per_key (synthetic: %llu tokens shared per key%s)",
                 (unsigned long long)t->prefix_tokens,
                 t->keys && !*cfg->wl.key_field ? "; every request its own key, so no reuse"
                                                : "");
    if (t->n_skipped)
        snprintf(skipped, sizeof skipped, "; %zu rows with 0 tokens skipped", t->n_skipped);
    fprintf(out, "trace: format %s, key %s, prefix %s, tick %g s (%s)%s\n", t->format, keyrule,
            prefix, tick_s,
            tick_detected ? (tick_s > 0 ? "detected" : "detected: no tick, stamps as recorded")
                          : "workload.tick_s",
            skipped);
}

void exp_setup_print(const exp_setup *s, FILE *out)
{
    const exp_config *cfg = s->cfg;
    if (s->n_groups) {
        fprintf(out, "cluster: mixed fleet of %lld destinations in %zu groups (cost model %s; "
                "docs/mixed-fleets.md)\n", (long long)cfg->destinations, s->n_groups,
                cost_kind_name((enum cost_kind)cfg->cost_model));
        for (size_t i = 0; i < s->n_groups; i++) {
            const exp_setup_group *x = &s->groups[i];
            fprintf(out, "  group %s: destinations %u-%u, %u x %s on %lld x %s, weights %s, KV "
                    "%s, KV pool %u blocks = %llu tokens, profile %s, max_num_batched_tokens "
                    "%lld, max_num_seqs %lld\n", x->g.name, x->g.first,
                    x->g.first + x->g.n_dest - 1, x->g.n_dest, x->model.name,
                    (long long)x->g.tp, x->hw.name, x->g.weight_dtype, x->g.kv_dtype,
                    x->pool_blocks, (unsigned long long)x->pool_tokens, x->cost_profile,
                    (long long)x->g.max_num_batched_tokens, (long long)x->g.max_num_seqs);
            print_transfer(out, "  ", x->cost_profile);
        }
    } else {
        fprintf(out, "cluster: %lld x %s on %lld x %s, weights %s, KV %s\n",
                (long long)cfg->destinations, s->model.name, (long long)cfg->tp, s->hw.name,
                cfg->weight_dtype, cfg->kv_dtype);
        char *ppath = NULL;
        if (cost_profile_path(s->cost_profile, &ppath))
            ppath = NULL;
        fprintf(out, "cost model: %s, calibration profile %s (%s)\n",
                cost_kind_name((enum cost_kind)cfg->cost_model), s->cost_profile,
                ppath ? ppath : "?");
        free(ppath);
        print_transfer(out, "", s->cost_profile);
    }
    if (cfg->engine_flavor == ENGINE_SGLANG)
        fprintf(out, "engine: SGLang flavour, prefill and decode batches apart, "
                "chunked_prefill_size %u%s, schedule_policy %s (docs/engine.md)\n",
                s->cp.engine.max_num_batched_tokens,
                cfg->chunked_prefill_size ? "" : " (SGLang's default for the GPU memory)",
                cfg->schedule_policy == ENGINE_LPM ? "lpm" : "fcfs");
    else if (cfg->long_prefill_token_threshold)
        fprintf(out, "engine: vLLM V1, long_prefill_token_threshold %lld tokens "
                "(docs/engine.md)\n", (long long)cfg->long_prefill_token_threshold);
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
    if (cfg->n_fault_events > 0 || cfg->mtbf_s > 0)
        fprintf(out, "faults: %zu scheduled event%s, random crashes %s (MTBF %g s, MTTR %g s); "
                "health checks every %g s, client retries after %g s, at most %lld "
                "(docs/faults.md)\n", cfg->n_fault_events, cfg->n_fault_events == 1 ? "" : "s",
                cfg->mtbf_s > 0 ? "on" : "off", cfg->mtbf_s, cfg->mttr_s,
                cfg->health_check_interval_s, cfg->retry_timeout_s,
                (long long)cfg->max_retries);
    if (s->nominal)
        fprintf(out, "%s warm start: ON (first plan from the workload's nominal rates of "
                "%zu keys, not from measured counts)\n", s->nominal_for, s->n_nominal);
    if (!s->n_groups) /* groups print their pools above */
        fprintf(out, "KV pool per destination: %u blocks x %lld tokens = %llu tokens (%.1f "
                "GB)\n", s->pool_blocks, (long long)cfg->block_size,
                (unsigned long long)s->pool_tokens,
                (double)s->pool_tokens * spec_kv_bytes_per_token(&s->model, s->dep.kv_dtype) /
                    1e9);
    if (s->is_trace) {
        const wl_trace *t = s->trace;
        fprintf(out, "workload: %s (%zu requests, %.0f s, %.2f requests/s as recorded)\n",
                cfg->wl.trace, t->n, wl_trace_span_s(t), wl_trace_mean_rate(t));
        exp_setup_print_trace_rule(cfg, t, s->tick_s, s->tick_detected, out);
        return;
    }
    if (cfg->wl.benchmark && strcmp(cfg->wl.benchmark, "shared_prefix") == 0) {
        /* The routing keys are the groups, not the key-rate population. */
        fprintf(out, "workload: synthetic%s%s, benchmark shared_prefix: %lld groups (the "
                "routing keys) x %lld prompts, %lld-token system prompt + %lld-token question, "
                "%lld output tokens\n", cfg->wl.name[0] ? " " : "", cfg->wl.name,
                (long long)cfg->wl.shared_prefix.groups,
                (long long)cfg->wl.shared_prefix.prompts_per_group,
                (long long)cfg->wl.shared_prefix.system_prompt_tokens,
                (long long)cfg->wl.shared_prefix.question_tokens,
                (long long)cfg->wl.shared_prefix.output_tokens);
        return;
    }
    wl_keyrates kr = {0};
    wl_keystats ks = {0};
    /* The population built at set-up, else built again (a large one
     * takes seconds to build: not twice when it can be avoided). */
    if ((s->has_keys ? wl_keyrates_copy(&s->keys, &kr) : wl_synth_keys(&cfg->wl, &kr, NULL)) ==
            SIM_OK &&
        wl_keyrates_describe(&kr, &ks) == SIM_OK)
        fprintf(out, "workload: synthetic%s%s, %zu keys, Gini %.3f, top 4%% of keys %.1f%% of "
                "requests, max key share %.3f%%\n", cfg->wl.name[0] ? " " : "", cfg->wl.name,
                ks.n, ks.gini, 100 * ks.top4, 100 * ks.max_share);
    wl_keyrates_fini(&kr);
}

/* One deployment's profile note for exp_setup_calib_notes: appended to *s
 * when the profile transfers factors. */
static void calib_note(char **s, size_t *len, const char *who, const char *hardware,
                       const char *model, int64_t tp, const char *wd, const char *kd,
                       const char *profile)
{
    spec_hw hw = {0};
    spec_model md = {0};
    char line[1024] = "";
    char *pname = NULL;
    if (*profile) {
        pname = sim_xstrdup(profile);
    } else if (spec_hw_load(hardware, &hw) == SIM_OK && spec_model_load(model, &md) == SIM_OK) {
        spec_deploy d = {.hw = &hw, .model = &md, .tp = tp};
        spec_dtype_parse(wd, &d.weight_dtype);
        spec_dtype_parse(kd, &d.kv_dtype);
        pname = cost_profile_default_name(&d);
    }
    cost_profile p;
    if (!pname)
        snprintf(line, sizeof line, "%scalibration profile of %s on %lld x %s not resolved "
                 "here: %s\n", who, model, (long long)tp, hardware, sim_errmsg());
    else if (cost_profile_load(pname, &p) != SIM_OK)
        snprintf(line, sizeof line, "%scalibration profile %s not resolved here: %s\n", who,
                 pname, sim_errmsg());
    else {
        if (p.transferred && *p.transferred)
            snprintf(line, sizeof line, "%sNOTE: calibration profile %s is not fitted to this "
                     "deployment alone: %s (docs/calibration.md)\n", who, p.name,
                     p.transferred);
        cost_profile_fini(&p);
    }
    size_t k = strlen(line);
    if (k) {
        *s = sim_xrealloc(*s, *len + k + 1);
        memcpy(*s + *len, line, k + 1);
        *len += k;
    }
    free(pname);
    spec_hw_fini(&hw);
    spec_model_fini(&md);
}

/* Bind a stored config text (through a temporary file, without the
 * routers' checks) into *cfg: SIM_OK, SIM_EIO when the temporary file
 * cannot be written, or the binder's error. */
static int config_from_text(const char *config_text, exp_config *cfg)
{
    char path[] = "/tmp/crsim-report-config.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            remove(path);
        }
        return SIM_ERROR(SIM_EIO, "cannot write a temporary config file: %s",
                         strerror(errno));
    }
    int ok = fputs(config_text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    int rc = ok ? exp_config_load_unchecked(path, NULL, 0, cfg)
                : SIM_ERROR(SIM_EIO, "cannot write a temporary config file");
    remove(path);
    return rc;
}

const char *exp_setup_load_unit(const char *config_text)
{
    exp_config cfg;
    if (config_from_text(config_text, &cfg) != SIM_OK)
        return "requests/s";
    const char *u = exp_load_unit(&cfg);
    exp_config_fini(&cfg);
    return u;
}

char *exp_setup_calib_notes(const char *config_text)
{
    char *s = sim_xstrdup("");
    size_t len = 0;
    exp_config cfg;
    int rc = config_from_text(config_text, &cfg);
    if (rc == SIM_EIO) {
        free(s);
        return sim_xstrdup("");
    }
    if (rc) {
        char line[1200];
        snprintf(line, sizeof line, "calibration profiles not resolved here: %s\n",
                 sim_errmsg());
        free(s);
        return sim_xstrdup(line);
    }
    if (cfg.n_groups)
        for (size_t i = 0; i < cfg.n_groups; i++) {
            exp_group g = exp_config_group(&cfg, i);
            char who[96];
            snprintf(who, sizeof who, "group %s: ", g.name);
            calib_note(&s, &len, who, g.hardware, g.model, g.tp, g.weight_dtype, g.kv_dtype,
                       g.cost_profile);
        }
    else
        calib_note(&s, &len, "", cfg.hardware, cfg.model, cfg.tp, cfg.weight_dtype,
                   cfg.kv_dtype, cfg.cost_profile);
    if (cfg.n_sweep) {
        static const char caveat[] = "(calibration notes of the base config; sweep points "
                                     "that change the deployment are not shown)\n";
        if (*s) {
            s = sim_xrealloc(s, len + sizeof caveat);
            memcpy(s + len, caveat, sizeof caveat);
            len += sizeof caveat - 1;
        }
    }
    exp_config_fini(&cfg);
    return s;
}
