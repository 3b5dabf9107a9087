/*
 * Tests of the trace formats beyond plain Mooncake JSONL (issue 16,
 * "Traces people have"): JSONL with extra fields and workload.key_field,
 * the Azure LLM inference CSV of 2023 and 2024, BurstGPT CSV, the
 * synthetic prefix model (none / per_key) and tick detection.  argv[1] is
 * tests/traces (the fixtures), argv[2] the shipped Azure 2023 trace
 * (data/azure, xz), argv[3] the Mooncake conversation trace.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "workloads/mooncake.h"
#include "workloads/trace_csv.h"
#include "workloads/wl_config.h"
#include "check.h"

static const char *dir;

static const char *fx(const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static const char *tmpfile_with(const char *content)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    const char *d = getenv("TMPDIR");
    snprintf(path[k], sizeof path[k], "%s/crsim-tf-XXXXXX", d && *d ? d : "/tmp");
    int fd = mkstemp(path[k]);
    if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content))
        exit(99);
    close(fd);
    return path[k];
}

static uint64_t text_key(const char *s) { return XXH3_64bits(s, strlen(s)); }

/* Load expecting failure; the message must contain every needle. */
static void load_fails(const char *path, wl_trace_opts o, const char *n1, const char *n2)
{
    wl_trace *t = (wl_trace *)&dir; /* sentinel */
    CHECK_INT_EQ(wl_trace_load(path, &o, &t), SIM_EINVAL);
    CHECK(t == (wl_trace *)&dir);
    CHECK_STR_CONTAINS(sim_errmsg(), n1);
    if (n2)
        CHECK_STR_CONTAINS(sim_errmsg(), n2);
    CHECK_STR_CONTAINS(sim_errmsg(), "expected");
    printf("  refused: %s\n", sim_errmsg());
}

static void test_jsonl_key_field(void)
{
    wl_trace *t;
    wl_trace_opts o = {.block_tokens = 512, .key_field = "session_id"};
    CHECK_INT_EQ(wl_trace_load(fx("sessions.jsonl"), &o, &t), SIM_OK);
    CHECK_INT_EQ((long long)t->n, 4);
    CHECK(strcmp(t->format, "mooncake") == 0 && strcmp(t->prefix, "hashes") == 0);
    CHECK_U64_EQ(wl_trace_routing_key(t, 0, 2), text_key("alice"));
    CHECK_U64_EQ(wl_trace_routing_key(t, 2, 2), text_key("alice"));
    CHECK_U64_EQ(wl_trace_routing_key(t, 1, 2), text_key("bob"));
    CHECK_U64_EQ(t->ids[t->reqs[2].ids_off + 2], 11); /* the trace's own ids kept */
    wl_trace_destroy(t);
    /* An integer field: the key is the hash of its decimal text. */
    o.key_field = "tenant";
    CHECK_INT_EQ(wl_trace_load(fx("sessions.jsonl"), &o, &t), SIM_OK);
    CHECK_U64_EQ(wl_trace_routing_key(t, 0, 2), text_key("3"));
    CHECK_U64_EQ(wl_trace_routing_key(t, 3, 2), text_key("4"));
    wl_trace_destroy(t);
    /* "" keeps the first-hash-ids rule. */
    o.key_field = "";
    CHECK_INT_EQ(wl_trace_load(fx("sessions.jsonl"), &o, &t), SIM_OK);
    CHECK(t->keys == NULL);
    uint64_t two[2] = {7, 8};
    CHECK_U64_EQ(wl_trace_routing_key(t, 0, 2), XXH3_64bits(two, 16)); /* little-endian host */
    wl_trace_destroy(t);
    /* Missing field on line 2: file:line and the key named. */
    o.key_field = "session_id";
    load_fails(fx("missing_key.jsonl"), o, "missing_key.jsonl:2:", "\"session_id\"");
    /* A field that is neither string nor integer. */
    load_fails(tmpfile_with("{\"timestamp\":0,\"input_length\":5,\"output_length\":1,"
                            "\"hash_ids\":[1],\"session_id\":1.5}\n"),
               o, ":1: key field \"session_id\" is a real number", NULL);
}

static void test_jsonl_synthetic(void)
{
    wl_trace *t;
    /* No hash_ids: hashes refuses (legacy message), none/per_key accept. */
    wl_trace_opts o = {.block_tokens = 512, .key_field = "conversation_id"};
    load_fails(fx("sessions_nohash.jsonl"), o, ":1: missing field \"hash_ids\"", NULL);
    o.prefix = "per_key";
    o.prefix_tokens = 1024;
    CHECK_INT_EQ(wl_trace_load(fx("sessions_nohash.jsonl"), &o, &t), SIM_OK);
    CHECK(strcmp(t->prefix, "per_key") == 0);
    /* Request 0 (1024 tokens: 2 blocks, both shared) and request 2 (1536:
     * 3 blocks, first 2 shared) of conversation 17 share 2 ids; request 1
     * (conversation 18) shares none with them. */
    const uint64_t *a = t->ids + t->reqs[0].ids_off, *b = t->ids + t->reqs[1].ids_off,
                   *c = t->ids + t->reqs[2].ids_off;
    CHECK_INT_EQ(t->reqs[0].n_ids, 2);
    CHECK_INT_EQ(t->reqs[1].n_ids, 2);
    CHECK_INT_EQ(t->reqs[2].n_ids, 3);
    CHECK_U64_EQ(a[0], c[0]);
    CHECK_U64_EQ(a[1], c[1]);
    CHECK(c[2] >= (UINT64_C(1) << 47)); /* past the prefix: unique */
    CHECK(b[0] != a[0] && b[1] != a[1]);
    CHECK(a[0] < (UINT64_C(1) << 47));
    wl_trace_destroy(t);
    o.prefix = "none";
    CHECK_INT_EQ(wl_trace_load(fx("sessions_nohash.jsonl"), &o, &t), SIM_OK);
    for (size_t i = 0; i < t->n_ids_total; i++)
        CHECK_U64_EQ(t->ids[i], (UINT64_C(1) << 47) + i); /* all distinct */
    wl_trace_destroy(t);
    /* per_key prefix not a multiple of the block. */
    o.prefix = "per_key";
    o.prefix_tokens = 1000;
    load_fails(fx("sessions_nohash.jsonl"), o, "trace_prefix_tokens is 1000", "multiple");
    o.prefix_tokens = 0;
    load_fails(fx("sessions_nohash.jsonl"), o, "trace_prefix_tokens is 0", NULL);
    o.prefix = "sometimes";
    load_fails(fx("sessions_nohash.jsonl"), o, "unknown workload.trace_prefix 'sometimes'", NULL);
}

static void test_azure(void)
{
    wl_trace *t;
    wl_trace_opts o = {.block_tokens = 512};
    CHECK_INT_EQ(wl_trace_load(fx("azure2023.csv"), &o, &t), SIM_OK); /* auto-detected */
    CHECK(strcmp(t->format, "azure") == 0 && strcmp(t->prefix, "none") == 0);
    CHECK_INT_EQ((long long)t->n, 4);       /* the row with 0 generated tokens skipped */
    CHECK_INT_EQ((long long)t->n_skipped, 1);
    CHECK_NEAR(t->reqs[0].t_s, 0.0, 0);
    CHECK_NEAR(t->reqs[1].t_s, 4.3145790, 1e-12);   /* 50.9951690 - 46.6805900 */
    CHECK_NEAR(t->reqs[3].t_s, 8.3194101, 1e-12);   /* 55.0000001 - 46.6805900 */
    CHECK_INT_EQ(t->reqs[2].input_tokens, 2048);
    CHECK_INT_EQ(t->reqs[2].output_tokens, 12);
    CHECK_INT_EQ(t->reqs[2].n_ids, 4);
    CHECK(wl_trace_routing_key(t, 0, 2) != wl_trace_routing_key(t, 1, 2)); /* own keys */
    wl_trace_destroy(t);
    CHECK_INT_EQ(wl_trace_load(fx("azure2024.csv"), &o, &t), SIM_OK);
    CHECK_INT_EQ((long long)t->n, 4);
    CHECK_NEAR(t->reqs[1].t_s, 0.00717, 1e-12);
    CHECK_NEAR(t->reqs[3].t_s, 4.24007, 1e-12);
    CHECK_NEAR(wl_trace_detect_tick(t), 0.0, 0);
    wl_trace_destroy(t);
    /* Date-times: offsets, days of the month. */
    int64_t s, ns;
    CHECK(wl_trace_parse_datetime("2024-05-10 02:00:00.5+02:00", &s, &ns));
    CHECK_INT_EQ(s, 1715299200);   /* 2024-05-10 00:00:00 UTC */
    CHECK_INT_EQ(ns, 500000000);
    CHECK(!wl_trace_parse_datetime("2023-02-29 00:00:00", &s, &ns));
    CHECK(wl_trace_parse_datetime("2024-02-29 00:00:00", &s, &ns));
    CHECK(!wl_trace_parse_datetime("2024-05-10 00:00:00+0200", &s, &ns));
    /* Bad inputs. */
    load_fails(tmpfile_with("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46,10,1\n2023-11-16 18:15:45,10,1\n"),
               o, ":3: time '2023-11-16 18:15:45' is earlier than line 2", NULL);
    load_fails(tmpfile_with("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46,10,1\nyesterday,10,1\n"),
               o, ":3: 'yesterday' in column 'TIMESTAMP' is not a date-time", NULL);
    load_fails(tmpfile_with("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46,-3,1\n"),
               o, ":2: '-3' in column 'ContextTokens' is not a token count", NULL);
    load_fails(tmpfile_with("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46,10\n"),
               o, ":2: row has 2 fields, no 'GeneratedTokens'", NULL);
    o.format = "azure";
    load_fails(tmpfile_with("TIMESTAMP,Context,GeneratedTokens\n"), o,
               ":1: header has no column 'ContextTokens'", NULL);
    load_fails(tmpfile_with("TIMESTAMP,ContextTokens,GeneratedTokens\n"), o,
               "no requests", NULL);
    o.prefix = "hashes";
    load_fails(fx("azure2023.csv"), o, "carry no block hashes", NULL);
    o.prefix = NULL;
    o.key_field = "tenant";
    load_fails(fx("azure2023.csv"), o, "header has no column 'tenant' (workload.key_field)",
               NULL);
    o = (wl_trace_opts){.block_tokens = 512};
    load_fails(tmpfile_with("time,in,out\n1,2,3\n"), o, "cannot tell the trace format",
               "trace_format");
    o.format = "parquet";
    load_fails(fx("azure2023.csv"), o, "unknown trace format 'parquet'", NULL);
}

static void test_burstgpt(void)
{
    wl_trace *t;
    wl_trace_opts o = {.block_tokens = 512, .key_field = "Model", .prefix = "per_key",
                       .prefix_tokens = 512};
    CHECK_INT_EQ(wl_trace_load(fx("burstgpt.csv"), &o, &t), SIM_OK);
    CHECK(strcmp(t->format, "burstgpt") == 0);
    CHECK_INT_EQ((long long)t->n, 4);        /* the failed row (Response tokens 0) skipped */
    CHECK_INT_EQ((long long)t->n_skipped, 1);
    CHECK_NEAR(t->reqs[0].t_s, 5.0, 0);
    CHECK_NEAR(t->reqs[2].t_s, 118.5, 0);
    CHECK_INT_EQ(t->reqs[1].input_tokens, 417);
    CHECK_INT_EQ(t->reqs[1].output_tokens, 276);
    CHECK_U64_EQ(wl_trace_routing_key(t, 1, 2), text_key("GPT-4"));
    /* Two ChatGPT requests share their first (512-token) block only. */
    CHECK_U64_EQ(t->ids[t->reqs[0].ids_off], t->ids[t->reqs[2].ids_off]);
    CHECK(t->ids[t->reqs[0].ids_off] != t->ids[t->reqs[1].ids_off]);
    CHECK(t->ids[t->reqs[2].ids_off + 1] >= (UINT64_C(1) << 47));
    wl_trace_destroy(t);
    o = (wl_trace_opts){.block_tokens = 512};
    load_fails(tmpfile_with("Timestamp,Model,Request tokens,Response tokens,Total tokens,"
                            "Log Type\n5,ChatGPT,10,1,11,API log\nnan,ChatGPT,1,1,2,API log\n"),
               o, ":3: 'nan' in column 'Timestamp' is not a time", NULL);
    load_fails(tmpfile_with("Timestamp,Model,Request tokens,Response tokens,Total tokens,"
                            "Log Type\n5,ChatGPT,10,1,11,API log\n4,ChatGPT,1,1,2,API log\n"),
               o, ":3: time '4' is earlier than line 2", NULL);
    load_fails(tmpfile_with("Timestamp,Model,Request tokens,Response tokens,Total tokens,"
                            "Log Type\n5,ChatGPT,10.5,1,11,API log\n"),
               o, "'10.5' in column 'Request tokens' is not a token count", NULL);
}

static void test_tick(const char *azure_xz, const char *mooncake_xz)
{
    wl_trace *t;
    wl_trace_opts o = {.block_tokens = 512};
    /* Fixture in 3 s ticks with a few ms of jitter → 3; shifted by 0.5 s → 0. */
    CHECK_INT_EQ(wl_trace_load(tmpfile_with(
        "{\"timestamp\":0,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"
        "{\"timestamp\":2,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"
        "{\"timestamp\":2999,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"
        "{\"timestamp\":9003,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"),
        &o, &t), SIM_OK);
    CHECK_NEAR(wl_trace_detect_tick(t), 3.0, 0);
    wl_trace_destroy(t);
    CHECK_INT_EQ(wl_trace_load(tmpfile_with(
        "{\"timestamp\":0,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"
        "{\"timestamp\":3000,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"
        "{\"timestamp\":7500,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n"),
        &o, &t), SIM_OK);
    CHECK_NEAR(wl_trace_detect_tick(t), 0.0, 0);
    wl_trace_destroy(t);
    /* The public traces: Mooncake conversation → 3 s; Azure (100 ns stamps) → 0. */
    CHECK_INT_EQ(wl_trace_load(mooncake_xz, &o, &t), SIM_OK);
    CHECK_NEAR(wl_trace_detect_tick(t), 3.0, 0);
    wl_trace_destroy(t);
    CHECK_INT_EQ(wl_trace_load(azure_xz, &o, &t), SIM_OK);
    CHECK_INT_EQ((long long)t->n, 19366);
    CHECK_INT_EQ((long long)t->n_skipped, 0);
    CHECK_NEAR(wl_trace_detect_tick(t), 0.0, 0);
    printf("  azure 2023 conv: %zu requests over %.3f s, tick %g\n", t->n, wl_trace_span_s(t),
           wl_trace_detect_tick(t));
    wl_trace_destroy(t);
}

/* The config keys' own errors (file, key, expected form). */
static void test_config(void)
{
    wl_config c;
    CHECK_INT_EQ(wl_config_parse("workload:\n  trace: t.jsonl\n  tick_s: -0.5\n", "c.yaml", &c),
                 SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "workload.tick_s is -0.5; expected -1 (detect)");
    CHECK_INT_EQ(wl_config_parse("workload:\n  trace: t.jsonl\n  trace_prefix: per_key\n"
                                 "  trace_prefix_tokens: 1000\n", "c.yaml", &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "c.yaml: workload.trace_prefix_tokens is 1000");
    CHECK_INT_EQ(wl_config_parse("workload:\n  trace: t.jsonl\n  trace_format: parquet\n",
                                 "c.yaml", &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "trace_format");
    printf("  config: %s\n", sim_errmsg());
    CHECK_INT_EQ(wl_config_parse("workload:\n  trace: t.jsonl\n  trace_prefix: per_key\n"
                                 "  trace_prefix_tokens: 1024\n  key_field: tenant\n"
                                 "  tick_s: 0\n", "c.yaml", &c), SIM_OK);
    CHECK_INT_EQ(c.trace_prefix_tokens, 1024);
    CHECK(strcmp(c.key_field, "tenant") == 0);
    wl_config_fini(&c);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_trace_formats TRACES_DIR AZURE_XZ MOONCAKE_XZ\n");
        return 99;
    }
    dir = argv[1];
    test_jsonl_key_field();
    test_jsonl_synthetic();
    test_azure();
    test_burstgpt();
    test_tick(argv[2], argv[3]);
    test_config();
    printf("ok\n");
    return 0;
}
