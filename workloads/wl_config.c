/*
 * Schema of the `workload:` config section (see wl_config.h).  The table is
 * the single place where a key's type, range, default and unit live; the
 * --help listing and the canonical dump stored with every run are generated
 * from it, and docs/workloads.md mirrors it.
 */
#include "workloads/wl_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/arrivals.h"
#include "workloads/client.h"
#include "workloads/ingest.h"
#include "workloads/internal.h"
#include "workloads/keyrates.h"

/* "mooncake" is the former name of "trace" (any trace format), kept so that
 * configs and stored runs written with it load unchanged (same text, same
 * config hash). */
static const char *const types[] = {"trace", "synthetic", "mooncake", NULL};
static const char *const trace_formats[] = {"auto", "mooncake", "azure", "burstgpt", NULL};
static const char *const trace_prefixes[] = {"auto", "hashes", "none", "per_key", NULL};
const char *const wl_lendist_names[] = {WL_LENDISTS(SIM_XENUM_NAME) NULL};

int wl__name_index(const char *const names[], const char *name)
{
    for (int i = 0; name && names[i]; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

int wl__name_parse(const char *const names[], const char *what, const char *name, int *index)
{
    int i = wl__name_index(names, name);
    if (i >= 0) {
        *index = i;
        return SIM_OK;
    }
    char list[256] = "";
    for (size_t k = 0, len = 0; names[k] && len < sizeof list; k++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", names[k]);
    return SIM_ERROR(SIM_EINVAL, "unknown %s '%s'; expected one of: %s", what,
                     name ? name : "(null)", list);
}

#define OFF(f) offsetof(wl_config, f)

/* The five keys of one length distribution under `grp`. */
#define LENSPEC(grp, field, unit_, dist_, mean_, cv_, min_, max_, what)                        \
    {.path = grp ".dist", .type = SIM_CFG_STRING, .offset = OFF(field.dist),                   \
     .choices = wl_lendist_names, .def = dist_,                                                        \
     .help = what ": distribution (const, uniform, lognormal, gamma)"},                        \
    {.path = grp ".mean", .type = SIM_CFG_DOUBLE, .offset = OFF(field.mean), .min = 0,         \
     .max = 1e9, .def = mean_, .unit = unit_, .help = what ": mean"},                          \
    {.path = grp ".cv", .type = SIM_CFG_DOUBLE, .offset = OFF(field.cv), .min = 0, .max = 100, \
     .def = cv_, .help = what ": coefficient of variation (lognormal, gamma)"},                \
    {.path = grp ".min", .type = SIM_CFG_INT, .offset = OFF(field.min), .min = 0, .max = 1e9,  \
     .def = min_, .unit = unit_, .help = what ": smallest value (draws are clamped)"},         \
    {.path = grp ".max", .type = SIM_CFG_INT, .offset = OFF(field.max), .min = 0, .max = 1e9,  \
     .def = max_, .unit = unit_, .help = what ": largest value (draws are clamped)"}

const char *const wl_client_mode_names[] = {"open", "sessions", "concurrency", "stages",
                                            "burst", NULL};
const char *const wl_client_rate_units[] = {"requests", "conversations", NULL};
const char *const wl_think_dist_names[] = {"const", "exponential", "lognormal", NULL};
const char *const wl_latency_from_names[] = {"send", "intended", NULL};
const char *const wl_benchmark_names[] = {"conversations", "shared_prefix", NULL};

static const sim_cfg_key wl_stage_schema[] = {
    {.path = "rate", .type = SIM_CFG_DOUBLE, .offset = offsetof(wl_stage, rate), .min = 0,
     .max = 1e9, .def = "0", .unit = "requests/s", .help = "the stage's request rate"},
    {.path = "concurrency", .type = SIM_CFG_INT, .offset = offsetof(wl_stage, concurrency),
     .min = 0, .max = 1e7, .def = "0", .unit = "clients", .help = "the stage's clients"},
    {.path = "duration_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(wl_stage, duration_s),
     .min = 0, .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = NULL, .unit = "s",
     .help = "the stage's length (sends stop at its end)"},
    {0},
};

const sim_cfg_key wl_config_schema[] = {
    {.path = "type", .type = SIM_CFG_STRING, .offset = OFF(type), .choices = types,
     .def = "trace",
     .help = "request source: trace (replay of workload.trace, format detected or named by "
             "workload.trace_format) or synthetic (business keys); mooncake = trace (former "
             "name)"},
    {.path = "name", .type = SIM_CFG_STRING, .offset = OFF(name), .def = "\"\"",
     .help = "preset name shown in reports"},
    {.path = "max_requests", .type = SIM_CFG_INT, .offset = OFF(max_requests), .min = 0,
     .max = 9007199254740992.0, .def = "0", .unit = "requests",
     .help = "stop after the first N arrivals; 0 = no limit"},
    /* Mooncake replay */
    {.path = "trace", .type = SIM_CFG_PATH, .flags = SIM_CFG_OPTIONAL, .offset = OFF(trace), .def = "\"\"",
     .help = "trace: trace file, JSONL or CSV, optionally .gz/.xz (relative to the config "
             "file); required for type trace"},
    {.path = "trace_block_tokens", .type = SIM_CFG_INT, .offset = OFF(trace_block_tokens),
     .min = 1, .max = 1 << 20, .def = "512", .unit = "tokens",
     .help = "trace: tokens per hash id in the trace"},
    {.path = "key_ids", .type = SIM_CFG_INT, .offset = OFF(key_ids), .min = 1, .max = 1e6,
     .def = "2", .help = "trace: leading hash ids forming the routing key"},
    {.path = "tick_s", .type = SIM_CFG_DOUBLE, .offset = OFF(tick_s), .min = -1, .max = 1e6,
     .def = "-1", .unit = "s",
     .help = "trace: spread arrivals uniformly within ticks of this length; 0 = as "
             "recorded; -1 = detect from the timestamps (3 for the Mooncake conversation "
             "trace, 0 for millisecond stamps; docs/trace-replay.md)"},
    {.path = "loop_s", .type = SIM_CFG_DOUBLE, .offset = OFF(loop_s), .min = 0, .max = 1e9,
     .def = "0", .unit = "s",
     .help = "trace: replay the trace repeatedly, each pass shifted by its span plus one "
             "mean gap, up to this replayed time; 0 = once (as before; issue 16, "
             "docs/trace-replay.md)"},
    {.path = "trace_format", .type = SIM_CFG_STRING, .offset = OFF(trace_format),
     .choices = trace_formats, .def = "auto",
     .help = "trace: trace format: auto (from the first line), mooncake (JSONL), azure "
             "(Azure LLM inference CSV 2023/2024), burstgpt (BurstGPT CSV)"},
    {.path = "key_field", .type = SIM_CFG_STRING, .offset = OFF(key_field), .def = "\"\"",
     .help = "trace: JSONL field or CSV column whose value (hashed, XXH3-64) is the "
             "routing key, e.g. session_id; \"\" = first key_ids hash ids"},
    {.path = "trace_prefix", .type = SIM_CFG_STRING, .offset = OFF(trace_prefix),
     .choices = trace_prefixes, .def = "auto",
     .help = "trace: prompt content: hashes (the trace's hash_ids), none (every block "
             "unique), per_key (trace_prefix_tokens shared per key); auto = hashes for "
             "Mooncake JSONL, none for CSV"},
    {.path = "trace_prefix_tokens", .type = SIM_CFG_INT, .offset = OFF(trace_prefix_tokens),
     .min = 0, .max = 1e8, .def = "0", .unit = "tokens",
     .help = "trace: per_key: synthetic prefix shared by a key's prompts (a positive "
             "multiple of trace_block_tokens; no default: state it)"},
    /* synthetic */
    {.path = "seed", .type = SIM_CFG_UINT64, .offset = OFF(seed), .def = "1",
     .help = "synthetic: workload seed fixing the key population (not the run seed)"},
    {.path = "duration_s", .type = SIM_CFG_DOUBLE, .offset = OFF(duration_s), .min = 0,
     .max = 1e9, .def = "0", .unit = "s",
     .help = "synthetic: stop at this simulated time; 0 = no limit (set it or max_requests)"},
    {.path = "keys.distribution", .type = SIM_CFG_STRING, .offset = OFF(keys.distribution),
     .choices = wl_keydist_names, .def = "lognormal", .help = "key-rate distribution"},
    {.path = "keys.n", .type = SIM_CFG_INT, .offset = OFF(keys.n), .min = 1, .max = 1e8,
     .def = "128824", .unit = "keys", .help = "keys in the population (lognormal, zipf)"},
    {.path = "keys.sigma", .type = SIM_CFG_DOUBLE, .offset = OFF(keys.sigma), .min = 0,
     .max = 12, .def = "1.65", .help = "lognormal: sigma of ln(rate) (ignored if fit_gini > 0)"},
    {.path = "keys.fit_gini", .type = SIM_CFG_DOUBLE, .offset = OFF(keys.fit_gini), .min = 0,
     .max = 1, .flags = SIM_CFG_EXCL_MAX, .def = "0",
     .help = "> 0: fit sigma (lognormal) or zipf_s (zipf) to this Gini by Brent root finding"},
    {.path = "keys.cap", .type = SIM_CFG_DOUBLE, .offset = OFF(keys.cap), .min = 0, .max = 1,
     .flags = SIM_CFG_EXCL_MAX, .def = "0",
     .help = "largest share of traffic any key may hold (water-filling); 0 = no cap"},
    {.path = "keys.zipf_s", .type = SIM_CFG_DOUBLE, .offset = OFF(keys.zipf_s), .min = 0,
     .max = 12, .def = "1", .help = "zipf: exponent s (ignored if fit_gini > 0)"},
    {.path = "keys.zipf_q", .type = SIM_CFG_DOUBLE, .offset = OFF(keys.zipf_q), .min = -1,
     .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = "0",
     .help = "zipf: Mandelbrot offset q, rate ~ 1/(rank+q)^s"},
    {.path = "keys.file", .type = SIM_CFG_PATH, .flags = SIM_CFG_OPTIONAL, .offset = OFF(keys.file), .def = "\"\"",
     .help = "file: CSV of key,rate rows (relative to the config file)"},
    {.path = "keys.active_set", .type = SIM_CFG_INT, .offset = OFF(keys.active_set), .min = 0,
     .max = 1e8, .def = "0", .unit = "keys",
     .help = "keep only the top K keys by rate, renormalised; 0 = all"},
    {.path = "keys.whales", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(keys.whales),
     .count_offset = OFF(keys.n_whales), .min = 0, .max = 1,
     .flags = SIM_CFG_EXCL_MIN | SIM_CFG_EXCL_MAX, .def = "[]",
     .help = "inject one key per entry holding that share of all traffic"},
    {.path = "arrival.process", .type = SIM_CFG_STRING, .offset = OFF(arrival.process),
     .choices = wl_arrival_kind_names, .def = "poisson", .help = "arrival process of the whole stream"},
    {.path = "arrival.cv", .type = SIM_CFG_DOUBLE, .offset = OFF(arrival.cv), .min = 0,
     .max = 100, .flags = SIM_CFG_EXCL_MIN, .def = "1",
     .help = "gamma: coefficient of variation of inter-arrival gaps (shape = 1/cv^2)"},
    {.path = "arrival.iat_file", .type = SIM_CFG_PATH, .flags = SIM_CFG_OPTIONAL, .offset = OFF(arrival.iat_file),
     .def = "\"\"", .help = "bootstrap: CSV of arrival times (relative to the config file)"},
    {.path = "arrival.iat_column", .type = SIM_CFG_STRING, .offset = OFF(arrival.iat_column),
     .def = "TIMESTAMP", .help = "bootstrap: header name of the time column"},
    {.path = "arrival.iat_is_gaps", .type = SIM_CFG_BOOL, .offset = OFF(arrival.iat_is_gaps),
     .def = "false", .help = "bootstrap: the column holds gaps (s), not times"},
    {.path = "arrival.block_len", .type = SIM_CFG_INT, .offset = OFF(arrival.block_len),
     .min = 1, .max = 1e9, .def = "50", .unit = "gaps",
     .help = "bootstrap: block length of the circular block bootstrap"},
    {.path = "prefix.global_tokens", .type = SIM_CFG_INT, .offset = OFF(global_prefix_tokens),
     .min = 0, .max = 1e7, .def = "0", .unit = "tokens",
     .help = "tokens at the start of every prompt of every key (a platform system prompt)"},
    LENSPEC("prefix", prefix, "tokens", "lognormal", "1024", "0.5", "16", "8192",
            "per-key shared prefix length"),
    LENSPEC("turns", turns, "turns", "gamma", "4", "1", "1", "64", "turns per conversation"),
    LENSPEC("input", input, "tokens", "lognormal", "256", "1", "1", "8192",
            "new input tokens per turn"),
    LENSPEC("output", output, "tokens", "lognormal", "256", "1", "1", "4096",
            "output tokens per turn (also appended to the history)"),
    {.path = "session.per_key", .type = SIM_CFG_INT, .offset = OFF(sessions_per_key), .min = 1,
     .max = 1e6, .def = "4", .unit = "sessions",
     .help = "conversations open at once per key; each request picks one uniformly"},
    {.path = "session.max_prompt_tokens", .type = SIM_CFG_INT,
     .offset = OFF(max_prompt_tokens), .min = 1, .max = 1e8, .def = "32768", .unit = "tokens",
     .help = "a conversation ends instead of growing a prompt beyond this"},
    /* clients (workloads/client.h, docs/clients.md) */
    {.path = "client.mode", .type = SIM_CFG_STRING, .offset = OFF(client.mode),
     .choices = wl_client_mode_names, .def = "open",
     .help = "who sends the requests: open (the arrival process, as before), sessions "
             "(closed-loop conversations), concurrency (N clients), stages (a rate or "
             "concurrency ladder), burst (all at once or in batches); docs/clients.md"},
    {.path = "client.rate_unit", .type = SIM_CFG_STRING, .offset = OFF(client.rate_unit),
     .choices = wl_client_rate_units, .def = "requests",
     .help = "sessions: the load is a request rate (conversations start at load / E[turns] "
             "per s, E[turns] the mean of the drawn turn counts; docs/clients.md) or a "
             "conversation rate"},
    {.path = "client.think.dist", .type = SIM_CFG_STRING, .offset = OFF(client.think.dist),
     .choices = wl_think_dist_names, .def = "const",
     .help = "think time between a reply's last token and the next turn: const, "
             "exponential or lognormal"},
    {.path = "client.think.mean_s", .type = SIM_CFG_DOUBLE, .offset = OFF(client.think.mean_s),
     .min = 0, .max = 1e9, .def = "0", .unit = "s", .help = "think time: mean"},
    {.path = "client.think.cv", .type = SIM_CFG_DOUBLE, .offset = OFF(client.think.cv),
     .min = 0, .max = 100, .def = "1",
     .help = "think time: coefficient of variation (lognormal)"},
    {.path = "client.patience_s", .type = SIM_CFG_DOUBLE, .offset = OFF(client.patience_s),
     .min = 0, .max = 1e9, .def = "0", .unit = "s",
     .help = "sessions: a turn whose TTFT exceeds this is abandoned (counted) and its "
             "conversation ends; 0 = infinite patience"},
    {.path = "client.concurrency", .type = SIM_CFG_INT, .offset = OFF(client.concurrency),
     .min = 0, .max = 1e7, .def = "0", .unit = "clients",
     .help = "concurrency: clients N; 0 = the run's load (experiment.rates is then the "
             "concurrency axis)"},
    {.path = "client.max_concurrency", .type = SIM_CFG_INT,
     .offset = OFF(client.max_concurrency), .min = 0, .max = 1e7, .def = "0",
     .unit = "requests",
     .help = "sessions and rate stages: requests in flight at most (vLLM bench serve "
             "--max-concurrency); a send waits for a slot; 0 = no cap"},
    {.path = "client.stages", .type = SIM_CFG_TABLE, .offset = OFF(client.stages),
     .count_offset = OFF(client.n_stages), .def = "[]", .table = wl_stage_schema,
     .elem_size = sizeof(wl_stage),
     .help = "stages: [{rate: R | concurrency: N, duration_s: D}, ...] in order (rate and "
             "concurrency multiplied by the run's load)"},
    {.path = "client.barrier", .type = SIM_CFG_BOOL, .offset = OFF(client.barrier),
     .def = "true",
     .help = "stages: the next stage starts when every request of the previous one has "
             "completed (inference-perf's drain between stages)"},
    {.path = "client.batch", .type = SIM_CFG_INT, .offset = OFF(client.batch), .min = 0,
     .max = 1e9, .def = "0", .unit = "requests",
     .help = "burst: requests sent at once per batch; 0 = the run's load"},
    {.path = "client.batch_interval_s", .type = SIM_CFG_DOUBLE,
     .offset = OFF(client.batch_interval_s), .min = 0, .max = 1e9, .def = "0", .unit = "s",
     .help = "burst: time between batches; 0 = the next batch when the previous one has "
             "completed"},
    {.path = "client.latency_from", .type = SIM_CFG_STRING, .offset = OFF(client.latency_from),
     .choices = wl_latency_from_names, .def = "send",
     .help = "latency the SLO reads: send (from when the client sent it, as benchmark tools "
             "report) or intended (from when its schedule wanted it sent: coordinated "
             "omission corrected)"},
    {.path = "benchmark", .type = SIM_CFG_STRING, .offset = OFF(benchmark),
     .choices = wl_benchmark_names, .def = "conversations",
     .help = "closed-loop clients' prompts: conversations (keys, prefixes and multi-turn "
             "histories as above) or shared_prefix (G groups x P prompts)"},
    {.path = "shared_prefix.groups", .type = SIM_CFG_INT, .offset = OFF(shared_prefix.groups),
     .min = 1, .max = 1e7, .def = "10", .unit = "groups",
     .help = "shared_prefix: groups G (one system prompt each; the routing key)"},
    {.path = "shared_prefix.prompts_per_group", .type = SIM_CFG_INT,
     .offset = OFF(shared_prefix.prompts_per_group), .min = 1, .max = 1e7, .def = "10",
     .unit = "prompts", .help = "shared_prefix: prompts P per group"},
    {.path = "shared_prefix.system_prompt_tokens", .type = SIM_CFG_INT,
     .offset = OFF(shared_prefix.system_prompt_tokens), .min = 0, .max = 1e7, .def = "100",
     .unit = "tokens", .help = "shared_prefix: system prompt length"},
    {.path = "shared_prefix.question_tokens", .type = SIM_CFG_INT,
     .offset = OFF(shared_prefix.question_tokens), .min = 1, .max = 1e7, .def = "50",
     .unit = "tokens", .help = "shared_prefix: question length"},
    {.path = "shared_prefix.output_tokens", .type = SIM_CFG_INT,
     .offset = OFF(shared_prefix.output_tokens), .min = 1, .max = 1e7, .def = "50",
     .unit = "tokens", .help = "shared_prefix: output length"},
    {.path = "shared_prefix.shuffle", .type = SIM_CFG_BOOL, .offset = OFF(shared_prefix.shuffle),
     .def = "true",
     .help = "shared_prefix: send the G x P prompts in a shuffled order (workload seed), as "
             "inference-perf and SGLang do by default; false: group by group (SGLang "
             "--gsp-ordered)"},
    {.path = "drift.sigma", .type = SIM_CFG_DOUBLE, .offset = OFF(drift.sigma), .min = 0,
     .max = 10, .def = "0", .help = "per-interval sigma of each key's log-rate random walk"},
    {.path = "drift.interval_s", .type = SIM_CFG_DOUBLE, .offset = OFF(drift.interval_s),
     .min = 0, .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = "600", .unit = "s",
     .help = "control interval: rates step at multiples of this time"},
    {.path = "drift.intervals", .type = SIM_CFG_INT, .offset = OFF(drift.intervals), .min = 0,
     .max = 1e9, .def = "0", .help = "number of drift steps; 0 = at every interval boundary"},
    {0},
};

static int check_len(const wl_lenspec *l, const char *grp, const char *where)
{
    if (l->min > l->max)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.%s.min %lld > workload.%s.max %lld; "
                         "expected min <= max", where, grp, (long long)l->min, grp,
                         (long long)l->max);
    if (wl__name_index(wl_lendist_names, l->dist) != WL_LEN_UNIFORM &&
        (l->mean < (double)l->min || l->mean > (double)l->max))
        return SIM_ERROR(SIM_EINVAL, "%s: workload.%s.mean %g lies outside [min, max] = "
                         "[%lld, %lld]; expected a mean inside the clamp range", where, grp,
                         l->mean, (long long)l->min, (long long)l->max);
    return SIM_OK;
}

int wl_config_check(const wl_config *c, const char *where)
{
    if (c->loop_s > 0 && !wl_config_is_trace(c))
        return SIM_ERROR(SIM_EINVAL, "%s: workload.loop_s is %g with workload.type %s; expected "
                         "0 (looping replays a trace; a synthetic workload runs for "
                         "workload.duration_s)", where, c->loop_s, c->type);
    if (wl_config_is_trace(c)) {
        const int crc = wl_client_check(c, where);
        if (crc)
            return crc;
        if (!*c->trace)
            return SIM_ERROR(SIM_EINVAL, "%s: workload.trace is empty; expected a trace file "
                             "(JSONL or CSV) when workload.type is %s", where, c->type);
        if (c->tick_s < 0 && c->tick_s != -1)
            return SIM_ERROR(SIM_EINVAL, "%s: workload.tick_s is %g; expected -1 (detect), 0 "
                             "(as recorded) or a tick > 0 (s)", where, c->tick_s);
        if (strcmp(c->trace_prefix, "per_key") == 0 &&
            (c->trace_prefix_tokens <= 0 ||
             c->trace_prefix_tokens % c->trace_block_tokens != 0))
            return SIM_ERROR(SIM_EINVAL, "%s: workload.trace_prefix_tokens is %lld with "
                             "workload.trace_prefix per_key; expected a positive multiple of "
                             "workload.trace_block_tokens (%lld)", where,
                             (long long)c->trace_prefix_tokens,
                             (long long)c->trace_block_tokens);
        return SIM_OK;
    }
    int rc = wl_client_check(c, where);
    if (rc)
        return rc;
    if (c->max_requests == 0 && c->duration_s == 0 &&
        wl_client_mode_of(c) != WL_CLIENT_STAGES)
        return SIM_ERROR(SIM_EINVAL, "%s: a synthetic workload needs an end; expected "
                         "workload.max_requests or workload.duration_s > 0", where);
    if (strcmp(c->keys.distribution, "servegen") == 0 && !*c->keys.file)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.keys.file is empty; expected the folder of "
                         "one model's ServeGen client CSVs when workload.keys.distribution is "
                         "servegen", where);
    if (strcmp(c->keys.distribution, "file") == 0 && !*c->keys.file)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.keys.file is empty; expected a CSV path "
                         "when workload.keys.distribution is file", where);
    if (strcmp(c->keys.distribution, "file") != 0 &&
        strcmp(c->keys.distribution, "servegen") != 0 && c->keys.cap > 0 &&
        (double)c->keys.n * c->keys.cap < 1.0 - 1e-12)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.keys.cap %g with workload.keys.n %lld "
                         "cannot carry all traffic; expected a cap >= 1/n", where, c->keys.cap,
                         (long long)c->keys.n);
    if (strcmp(c->arrival.process, "bootstrap") == 0 && !*c->arrival.iat_file)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.arrival.iat_file is empty; expected a CSV "
                         "path when workload.arrival.process is bootstrap", where);
    double s = 0;
    for (size_t i = 0; i < c->keys.n_whales; i++)
        s += c->keys.whales[i];
    if (!(s < 1))
        return SIM_ERROR(SIM_EINVAL, "%s: workload.keys.whales sum to %g; expected shares "
                         "summing below 1", where, s);
    if ((rc = check_len(&c->prefix, "prefix", where)) || (rc = check_len(&c->turns, "turns", where)) ||
        (rc = check_len(&c->input, "input", where)) ||
        (rc = check_len(&c->output, "output", where)))
        return rc;
    if (c->turns.min < 1)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.turns.min is 0; expected at least 1 turn",
                         where);
    if (c->input.min < 1 || c->output.min < 1)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.%s.min is 0; expected at least 1 token",
                         where, c->input.min < 1 ? "input" : "output");
    return SIM_OK;
}

bool wl_config_is_trace(const wl_config *c)
{
    return strcmp(c->type, "trace") == 0 || strcmp(c->type, "mooncake") == 0;
}

static bool in(const char *s, const char *const list[])
{
    return wl__name_index(list, s) >= 0;
}

/*
 * What key `p` (a path of wl_config_schema) needs in order to be read with
 * the rest of `c`: NULL when it applies, else the setting it needs, written
 * as the message's "expected" part.  The one place that says which key
 * belongs to which workload type, key-rate family, arrival process and
 * length distribution (issue 39 item 1, issue 38 C10).
 */
static const char *key_needs(const wl_config *c, const char *p)
{
    static const char *const common[] = {"type", "name", "max_requests", NULL};
    static const char *const trace_keys[] = {"trace", "trace_block_tokens", "key_ids", "tick_s",
                                             "loop_s", "trace_format", "key_field",
                                             "trace_prefix", "trace_prefix_tokens", NULL};
    static const char *const len_groups[] = {"prefix", "turns", "input", "output", NULL};
    if (in(p, common))
        return NULL;
    if (in(p, trace_keys)) {
        if (!wl_config_is_trace(c))
            return "workload.type: trace (this key is read only when a trace is replayed)";
        if (strcmp(p, "trace_prefix_tokens") == 0 && strcmp(c->trace_prefix, "per_key") != 0)
            return "workload.trace_prefix: per_key (the only prompt model that reads it)";
        if (strcmp(p, "key_ids") == 0 && *c->key_field)
            return "workload.key_field \"\" (with a key_field the routing key is that field, "
                   "not the first key_ids hash ids)";
        return NULL;
    }
    if (wl_config_is_trace(c))
        return "workload.type: synthetic (a trace's keys, arrivals and lengths come from the "
               "trace; this key is read only by the synthetic generator)";
    const char *kd = c->keys.distribution, *ap = c->arrival.process;
    const bool param = strcmp(kd, "lognormal") == 0 || strcmp(kd, "zipf") == 0;
    if (strcmp(p, "keys.n") == 0 && !param)
        return "workload.keys.distribution lognormal or zipf (a file's or ServeGen's keys are "
               "its rows)";
    if (strcmp(p, "keys.fit_gini") == 0 && !param)
        return "workload.keys.distribution lognormal or zipf";
    if (strcmp(p, "keys.sigma") == 0)
        return strcmp(kd, "lognormal") != 0 ? "workload.keys.distribution: lognormal"
               : c->keys.fit_gini > 0 ? "workload.keys.fit_gini 0 (a Gini to fit replaces sigma)"
                                      : NULL;
    if (strcmp(p, "keys.zipf_s") == 0)
        return strcmp(kd, "zipf") != 0 ? "workload.keys.distribution: zipf"
               : c->keys.fit_gini > 0 ? "workload.keys.fit_gini 0 (a Gini to fit replaces zipf_s)"
                                      : NULL;
    if (strcmp(p, "keys.zipf_q") == 0 && strcmp(kd, "zipf") != 0)
        return "workload.keys.distribution: zipf";
    if (strcmp(p, "keys.file") == 0 && param)
        return "workload.keys.distribution: file (a CSV of key,rate) or servegen (a ServeGen "
               "folder)";
    if (strcmp(p, "arrival.cv") == 0 && strcmp(ap, "gamma") != 0)
        return "workload.arrival.process: gamma (Poisson gaps have CV 1; bootstrap gaps come "
               "from the file)";
    if (strncmp(p, "arrival.", 8) == 0 && strcmp(p, "arrival.process") != 0 &&
        strcmp(p, "arrival.cv") != 0 && strcmp(ap, "bootstrap") != 0)
        return "workload.arrival.process: bootstrap";
    if ((strcmp(p, "drift.interval_s") == 0 || strcmp(p, "drift.intervals") == 0) &&
        c->drift.sigma == 0)
        return "workload.drift.sigma > 0 (no drift steps without it)";
    for (size_t g = 0; len_groups[g]; g++) {
        size_t n = strlen(len_groups[g]);
        if (strncmp(p, len_groups[g], n) == 0 && strcmp(p + n, ".cv") == 0) {
            const wl_lenspec *l = g == 0 ? &c->prefix : g == 1 ? &c->turns
                                  : g == 2 ? &c->input : &c->output;
            if (strcmp(l->dist, "lognormal") != 0 && strcmp(l->dist, "gamma") != 0 &&
                l->cv != 0) /* cv 0 is what const has: consistent, not ignored */
                return "a lognormal or gamma distribution (.dist); const and uniform have no cv";
        }
    }
    return NULL;
}

/* Whether the value of key `k` differs between the structs a and b. */
static bool key_differs(const sim_cfg_key *k, const void *a, const void *b)
{
    const char *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;
    switch (k->type) {
    case SIM_CFG_INT:
        return *(const int64_t *)pa != *(const int64_t *)pb;
    case SIM_CFG_UINT64:
        return *(const uint64_t *)pa != *(const uint64_t *)pb;
    case SIM_CFG_DOUBLE:
        return *(const double *)pa != *(const double *)pb;
    case SIM_CFG_BOOL:
        return *(const bool *)pa != *(const bool *)pb;
    case SIM_CFG_STRING:
    case SIM_CFG_PATH: {
        const char *x = *(char *const *)pa, *y = *(char *const *)pb;
        return strcmp(x ? x : "", y ? y : "") != 0;
    }
    case SIM_CFG_DOUBLE_LIST: {
        size_t na = *(const size_t *)((const char *)a + k->count_offset);
        size_t nb = *(const size_t *)((const char *)b + k->count_offset);
        const double *x = *(double *const *)pa, *y = *(double *const *)pb;
        if (na != nb)
            return true;
        for (size_t i = 0; i < na; i++)
            if (x[i] != y[i])
                return true;
        return false;
    }
    default:
        return false;
    }
}

/* The defaults of every workload key, bound once per call (a stored run's
 * config lists every key, each inapplicable one at its default). */
static void bind_defaults(wl_config *def)
{
    memset(def, 0, sizeof *def);
    sim_cfgdoc *empty = NULL;
    int rc = sim_cfgdoc_parse_string("workload: {}\n", "defaults", &empty);
    if (rc == SIM_OK)
        rc = sim_cfg_bind_prefix(empty, "workload", wl_config_schema, def);
    sim_cfgdoc_destroy(empty);
    SIM_ALWAYS(rc == SIM_OK); /* the schema's defaults bind */
}

size_t wl_config_inapplicable(const wl_config *c, const char **needs)
{
    wl_config def;
    bind_defaults(&def);
    size_t i = 0;
    for (; wl_config_schema[i].path; i++) {
        const sim_cfg_key *k = &wl_config_schema[i];
        if ((needs[i] = key_differs(k, c, &def) ? key_needs(c, k->path) : NULL) != NULL)
            break;
    }
    size_t first = i;
    for (; wl_config_schema[i].path; i++) {
        const sim_cfg_key *k = &wl_config_schema[i];
        needs[i] = key_differs(k, c, &def) ? key_needs(c, k->path) : NULL;
    }
    sim_cfg_free(wl_config_schema, &def);
    return first;
}

size_t wl_config_n_keys(void)
{
    size_t n = 0;
    while (wl_config_schema[n].path)
        n++;
    return n;
}

int wl_config_key_error(const wl_config *c, const sim_cfgdoc *d, const char *file, size_t i,
                        const char *needs)
{
    char path[128], at[512];
    snprintf(path, sizeof path, "workload.%s", wl_config_schema[i].path);
    if (!d || !sim_cfgdoc_locate(d, path, NULL, at, sizeof at))
        snprintf(at, sizeof at, "%s", file ? file : d ? sim_cfgdoc_path(d) : "workload");
    return SIM_ERROR(SIM_EINVAL, "%s: key '%s' does not apply to this workload (type %s%s%s) "
                     "and would be ignored; expected %s, or remove the key", at, path, c->type,
                     wl_config_is_trace(c) ? "" : ", keys ",
                     wl_config_is_trace(c) ? "" : c->keys.distribution, needs);
}

int wl_config_check_keys(const wl_config *c, const sim_cfgdoc *d)
{
    const char **needs = calloc(wl_config_n_keys() + 1, sizeof *needs);
    SIM_ALWAYS(needs != NULL);
    size_t i = wl_config_inapplicable(c, needs);
    int rc = wl_config_schema[i].path ? wl_config_key_error(c, d, NULL, i, needs[i]) : SIM_OK;
    free(needs);
    return rc;
}

const char *wl_config_default(const char *path)
{
    for (const sim_cfg_key *k = wl_config_schema; k->path; k++)
        if (strcmp(k->path, path) == 0)
            return k->def;
    return NULL;
}

int wl_config_bind(const sim_cfgdoc *d, wl_config *out)
{
    return wl_config_bind_opts(d, true, out);
}

int wl_config_bind_opts(const sim_cfgdoc *d, bool check_keys, wl_config *out)
{
    memset(out, 0, sizeof *out);
    int rc = sim_cfg_bind_prefix(d, "workload", wl_config_schema, out);
    if (rc == SIM_OK) {
        rc = wl_config_check(out, sim_cfgdoc_path(d));
    }
    if (rc == SIM_OK && check_keys)
        rc = wl_config_check_keys(out, d);
    if (rc)
        wl_config_fini(out);
    return rc;
}

int wl_config_parse(const char *text, const char *name, wl_config *out)
{
    memset(out, 0, sizeof *out);
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_parse_string(text, name, &d);
    if (rc == SIM_OK)
        rc = wl_config_bind(d, out);
    sim_cfgdoc_destroy(d);
    return rc;
}

int wl_config_load(const char *path, wl_config *out)
{
    memset(out, 0, sizeof *out);
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_load(path, &d);
    if (rc == SIM_OK)
        rc = wl_config_bind(d, out);
    sim_cfgdoc_destroy(d);
    return rc;
}

char *wl_config_dump(const wl_config *cfg)
{
    const sim_cfg_section s = {"workload", wl_config_schema, (void *)(uintptr_t)cfg};
    return sim_cfg_dump_sections(&s, 1);
}

void wl_config_fini(wl_config *cfg)
{
    if (cfg)
        sim_cfg_free(wl_config_schema, cfg);
}

static wl_trace_opts trace_opts(const wl_config *cfg)
{
    return (wl_trace_opts){.block_tokens = (uint32_t)cfg->trace_block_tokens,
                           .format = cfg->trace_format, .key_field = cfg->key_field,
                           .prefix = cfg->trace_prefix,
                           .prefix_tokens = (uint64_t)cfg->trace_prefix_tokens};
}

int wl_config_trace_load(const wl_config *cfg, wl_trace **out)
{
    const wl_trace_opts o = trace_opts(cfg);
    return wl_trace_load(cfg->trace, &o, out);
}

int wl_config_trace_acquire(const wl_config *cfg, const wl_trace **out)
{
    const wl_trace_opts o = trace_opts(cfg);
    return wl_ingest_trace(cfg->trace, &o, out);
}

double wl_config_trace_tick(const wl_config *cfg, const wl_trace *t, int *detected)
{
    int det = cfg->tick_s < 0;
    if (detected)
        *detected = det;
    return det ? wl_trace_detect_tick(t) : cfg->tick_s;
}
