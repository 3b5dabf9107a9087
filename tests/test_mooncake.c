/*
 * Tests of the Mooncake trace reader (workloads/mooncake.c).  Part (a)
 * loads the real conversation trace (path in argv[1]) and recomputes the
 * facts data/README.md states about it instead of trusting them; part (b)
 * feeds small broken files and checks the status, the line number and the
 * field named in each message, and that *out is left alone; part (c)
 * pins exact values on a tiny valid file.  An optional argv[2] names
 * tests/bad-inputs, whose fixtures are checked against its README.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "workloads/mooncake.h"
#include "workloads/replay.h"
#include "check.h"
#include "sim/core/wall.h"

/* A pointer that no successful load can produce, to detect writes to *out. */
static wl_trace sentinel_trace;
#define SENTINEL (&sentinel_trace)

/* Write `content` to a fresh temporary file; its path goes to `path`. */
static void write_tmp(const char *content, char *path, size_t pathsz)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(path, pathsz, "%s/crsim-mooncake-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(99);
    }
    size_t len = strlen(content);
    if (write(fd, content, len) != (ssize_t)len) {
        perror("write");
        exit(99);
    }
    close(fd);
}

/* The message must be one line of the form PATH:LINE: ...; expected ... */
static void check_message_form(const char *path)
{
    const char *msg = sim_errmsg();
    CHECK(strchr(msg, '\n') == NULL);
    CHECK(strncmp(msg, path, strlen(path)) == 0);
    CHECK_STR_CONTAINS(msg, "; expected ");
}

/*
 * Load `content` with `block` tokens per id; expect `want_rc`, a message
 * naming line `line` and containing `needle` (if not NULL), and *out
 * untouched.
 */
static void expect_fail_rc(const char *name, const char *content, uint32_t block,
                           int want_rc, int line, const char *needle)
{
    char path[512], tag[32];
    write_tmp(content, path, sizeof path);
    wl_trace *t = SENTINEL;
    int rc = wl_mooncake_load(path, block, &t);
    unlink(path); /* before the checks, so a failure leaves no file behind */
    printf("  %-24s -> %s: %s\n", name, sim_strstatus(rc), sim_errmsg());
    CHECK_INT_EQ(rc, want_rc);
    CHECK(t == SENTINEL);
    check_message_form(path);
    snprintf(tag, sizeof tag, ":%d: ", line);
    CHECK_STR_CONTAINS(sim_errmsg(), tag);
    if (needle)
        CHECK_STR_CONTAINS(sim_errmsg(), needle);
}

static void expect_fail(const char *name, const char *content, int line, const char *needle)
{
    expect_fail_rc(name, content, WL_MOONCAKE_BLOCK_TOKENS, SIM_EINVAL, line, needle);
}

/* Reference key: XXH3_64bits over the ids as little-endian uint64s,
 * encoded here independently of the reader. */
static uint64_t ref_key(const uint64_t *ids, size_t k)
{
    unsigned char *b = malloc(k * 8 + 1);
    CHECK(b != NULL);
    for (size_t j = 0; j < k; j++)
        for (size_t byte = 0; byte < 8; byte++)
            b[j * 8 + byte] = (unsigned char)(ids[j] >> (8 * byte));
    uint64_t h = XXH3_64bits(b, k * 8);
    free(b);
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* (a) The real trace. */
static void test_real(const char *path)
{
    wl_trace *t = NULL;
    double t0 = sim_wall_s();
    int rc = wl_mooncake_load(path, WL_MOONCAKE_BLOCK_TOKENS, &t);
    double dt = sim_wall_s() - t0;
    if (rc != SIM_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, sim_errmsg());
        exit(1); /* the real trace is required data, not optional: no skip */
    }
    printf("loaded %s in %.3f s\n", path, dt);

    CHECK_INT_EQ(t->n, 12031);
    CHECK_INT_EQ(t->block_tokens, 512);
    CHECK(strcmp(t->path, path) == 0);
    CHECK_NEAR(wl_trace_span_s(t), 3536.999, 1e-9);
    CHECK_NEAR(t->reqs[0].t_s, 0.0, 0.0);
    CHECK_NEAR(wl_trace_mean_rate(t), 12031.0 / 3536.999, 1e-12);
    CHECK_NEAR(wl_trace_mean_rate(t), 3.40, 0.005);

    /* Per-request invariants, recomputed from the raw fields. */
    double sum_in = 0.0, sum_out = 0.0;
    size_t off = 0, out_zero = 0;
    for (size_t i = 0; i < t->n; i++) {
        const wl_trace_req *r = &t->reqs[i];
        CHECK(r->input_tokens >= 1);
        if (r->output_tokens == 0)
            out_zero++;
        CHECK_INT_EQ(r->n_ids, (r->input_tokens + 511) / 512);
        CHECK_INT_EQ(r->ids_off, off);
        CHECK_U64_EQ(t->ids[r->ids_off], 0); /* block 0 shared by every request */
        if (i > 0)
            CHECK(r->t_s >= t->reqs[i - 1].t_s);
        off += r->n_ids;
        sum_in += r->input_tokens;
        sum_out += r->output_tokens;
    }
    CHECK_INT_EQ(off, t->n_ids_total);
    CHECK_INT_EQ(out_zero, 0);
    double mean_in = sum_in / (double)t->n;
    printf("n=%zu span=%.3f s rate=%.4f/s mean_in=%.2f mean_out=%.2f ids=%zu\n", t->n,
           wl_trace_span_s(t), wl_trace_mean_rate(t), mean_in, sum_out / (double)t->n,
           t->n_ids_total);
    CHECK_NEAR(mean_in, 12035.0, 0.5);

    /* Routing keys on the first two ids: count distinct keys, and the
     * distinct (id0, id1) pairs directly, so a hash collision would show
     * as a difference between the two counts. */
    uint64_t *keys = malloc(t->n * sizeof *keys);
    uint64_t *pairs = malloc(t->n * sizeof *pairs);
    CHECK(keys && pairs);
    for (size_t i = 0; i < t->n; i++) {
        const wl_trace_req *r = &t->reqs[i];
        CHECK(r->n_ids >= 2);
        keys[i] = wl_trace_routing_key(t, i, WL_MOONCAKE_KEY_IDS);
        CHECK_U64_EQ(keys[i], ref_key(&t->ids[r->ids_off], 2));
        /* id0 is always 0, so id1 alone identifies the pair. */
        pairs[i] = t->ids[r->ids_off + 1];
    }
    qsort(keys, t->n, sizeof *keys, cmp_u64);
    qsort(pairs, t->n, sizeof *pairs, cmp_u64);
    size_t n_keys = 1, n_pairs = 1, run = 1, largest = 1;
    for (size_t i = 1; i < t->n; i++) {
        n_keys += keys[i] != keys[i - 1];
        if (pairs[i] != pairs[i - 1]) {
            n_pairs++;
            run = 1;
        } else if (++run > largest) {
            largest = run;
        }
    }
    printf("routing keys (first %u ids): %zu distinct, %zu distinct id pairs, largest "
           "group %zu\n", WL_MOONCAKE_KEY_IDS, n_keys, n_pairs, largest);
    CHECK_INT_EQ(n_pairs, n_keys);
    CHECK_INT_EQ(n_keys, 7373);
    CHECK_INT_EQ(largest, 43);
    free(keys);
    free(pairs);

    /* One id: every request falls in one group, since all start with 0. */
    for (size_t i = 0; i < t->n; i++)
        CHECK_U64_EQ(wl_trace_routing_key(t, i, 1), wl_trace_routing_key(t, 0, 1));

    /* The heap-buffer path of long keys matches the reference, and a key
     * longer than the request uses all of its ids. */
    size_t longest = 0;
    for (size_t i = 1; i < t->n; i++)
        if (t->reqs[i].n_ids > t->reqs[longest].n_ids)
            longest = i;
    const wl_trace_req *lr = &t->reqs[longest];
    CHECK(lr->n_ids > 40);
    CHECK_U64_EQ(wl_trace_routing_key(t, longest, 40), ref_key(&t->ids[lr->ids_off], 40));
    CHECK_U64_EQ(wl_trace_routing_key(t, longest, UINT32_MAX),
                 ref_key(&t->ids[lr->ids_off], lr->n_ids));

    /* The same file read with another block size is inconsistent. */
    wl_trace *bad = SENTINEL;
    CHECK_INT_EQ(wl_mooncake_load(path, 256, &bad), SIM_EINVAL);
    CHECK(bad == SENTINEL);
    CHECK_STR_CONTAINS(sim_errmsg(), ":1: field \"hash_ids\"");

    wl_trace_destroy(t);
}

/* (c) Exact values on a small valid file: blank lines are skipped, CRLF
 * endings, extra fields and a missing final newline are accepted. */
static void test_small_valid(void)
{
    const char *content =
        "\n"
        "{\"timestamp\": 1500, \"input_length\": 512, \"output_length\": 7, "
        "\"hash_ids\": [0], \"extra\": \"ignored\"}\r\n"
        "   \n"
        "{\"timestamp\": 1500, \"input_length\": 513, \"output_length\": 1, "
        "\"hash_ids\": [0, 9007199254740993]}\n"
        "{\"hash_ids\": [0, 5, 6], \"output_length\": 3, \"input_length\": 1025, "
        "\"timestamp\": 4000}";
    char path[512];
    write_tmp(content, path, sizeof path);
    wl_trace *t = NULL;
    int rc = wl_mooncake_load(path, 512, &t);
    unlink(path);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    CHECK_INT_EQ(t->n, 3);
    CHECK_INT_EQ(t->n_ids_total, 6);
    CHECK_NEAR(t->reqs[0].t_s, 1.5, 0.0);
    CHECK_NEAR(t->reqs[2].t_s, 4.0, 0.0);
    CHECK_INT_EQ(t->reqs[0].input_tokens, 512);
    CHECK_INT_EQ(t->reqs[0].output_tokens, 7);
    CHECK_INT_EQ(t->reqs[1].n_ids, 2);
    CHECK_INT_EQ(t->reqs[1].ids_off, 1);
    CHECK_U64_EQ(t->ids[2], 9007199254740993ull); /* > 2^53: kept exact */
    CHECK_INT_EQ(t->reqs[2].ids_off, 3);
    CHECK_U64_EQ(t->ids[5], 6);
    CHECK_NEAR(wl_trace_span_s(t), 2.5, 1e-15);
    CHECK_NEAR(wl_trace_mean_rate(t), 3.0 / 2.5, 1e-15);
    uint64_t two[2] = {0, 5};
    CHECK_U64_EQ(wl_trace_routing_key(t, 2, 2), ref_key(two, 2));
    CHECK_U64_EQ(wl_trace_routing_key(t, 0, 2), ref_key(two, 1)); /* min(2, n_ids) */
    CHECK_U64_EQ(wl_trace_routing_key(t, 0, 0), XXH3_64bits(NULL, 0));
    CHECK(wl_trace_routing_key(t, 1, 2) != wl_trace_routing_key(t, 2, 2));
    wl_trace_destroy(t);

    /* One request: span 0, rate defined as 0. */
    write_tmp("{\"timestamp\": 7, \"input_length\": 1, \"output_length\": 1, "
              "\"hash_ids\": [3]}\n", path, sizeof path);
    rc = wl_mooncake_load(path, 512, &t);
    unlink(path);
    CHECK_INT_EQ(rc, SIM_OK);
    CHECK_NEAR(wl_trace_span_s(t), 0.0, 0.0);
    CHECK_NEAR(wl_trace_mean_rate(t), 0.0, 0.0);
    wl_trace_destroy(t);
    wl_trace_destroy(NULL);
}

/* Issue 16: trace looping (workload.loop_s). */
static void replay_times(const wl_trace *t, double rate, double loop_s, uint64_t max,
                         double *arr, uint64_t *n_out, wl_request *keep, size_t n_keep)
{
    wl_replay_params p = {.block_size = 16, .key_ids = 1, .rate = rate, .seed = 1,
                          .max_requests = max, .loop_s = loop_s};
    wl_replay *rp = NULL;
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_OK);
    uint64_t n = 0;
    wl_request r;
    while (wl_replay_next(rp, &r) > 0) {
        CHECK_U64_EQ(r.id, n); /* dense, increasing over the passes */
        arr[n] = r.arrival_s;
        if (n < n_keep)
            keep[n] = r;
        else
            wl_request_fini(&r);
        n++;
    }
    CHECK_U64_EQ(wl_replay_count(rp), n);
    *n_out = n;
    wl_replay_destroy(rp);
}

static void test_loop(void)
{
    char path[512];
    write_tmp("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
              "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [2, 3]}\n"
              "{\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 4]}\n",
              path, sizeof path);
    wl_trace *t = NULL;
    CHECK_INT_EQ(wl_mooncake_load(path, 512, &t), SIM_OK);
    unlink(path);
    double a[16];
    uint64_t n;
    wl_request k[4];
    /* As recorded: span 3 s, n = 3, period P = 3 x 3/2 = 4.5 s.  To 10 s:
     * 0 1 3 | 4.5 5.5 7.5 | 9 (10 is not before 10). */
    replay_times(t, 0, 10, 0, a, &n, k, 4);
    CHECK_U64_EQ(n, 7);
    const double want[7] = {0, 1, 3, 4.5, 5.5, 7.5, 9};
    for (int i = 0; i < 7; i++)
        CHECK_NEAR(a[i], want[i], 1e-12);
    /* A repeat has the key and block hashes of its first pass. */
    CHECK_U64_EQ(k[3].key, k[0].key);
    CHECK_INT_EQ(k[3].n_blocks, k[0].n_blocks);
    for (uint32_t j = 0; j < k[0].n_blocks; j++)
        CHECK_U64_EQ(k[3].blocks[j], k[0].blocks[j]);
    CHECK(k[1].key != k[0].key);
    for (int i = 0; i < 4; i++)
        wl_request_fini(&k[i]);
    /* At most max_requests in all; a loop shorter than a pass truncates;
     * loop_s 0 replays once (as before). */
    replay_times(t, 0, 10, 5, a, &n, NULL, 0);
    CHECK_U64_EQ(n, 5);
    replay_times(t, 0, 2, 0, a, &n, NULL, 0);
    CHECK_U64_EQ(n, 2);
    replay_times(t, 0, 0, 0, a, &n, NULL, 0);
    CHECK_U64_EQ(n, 3);
    CHECK_NEAR(a[2], 3, 0);
    /* Scaled to 2 requests/s (recorded mean rate 3/3 = 1: times halved):
     * P = 2.25 s; to 5 s: 0 .5 1.5 | 2.25 2.75 3.75 | 4.5. */
    replay_times(t, 2, 5, 0, a, &n, NULL, 0);
    CHECK_U64_EQ(n, 7);
    CHECK_NEAR(a[3], 2.25, 1e-12);
    CHECK_NEAR(a[6], 4.5, 1e-12);
    /* Bad values. */
    wl_replay *rp = NULL;
    wl_replay_params p = {.block_size = 16, .key_ids = 1, .loop_s = -1};
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "workload.loop_s -1");
    p.loop_s = INFINITY;
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_EINVAL);
    wl_trace_destroy(t);
    write_tmp("{\"timestamp\": 7, \"input_length\": 1, \"output_length\": 1, "
              "\"hash_ids\": [3]}\n", path, sizeof path);
    CHECK_INT_EQ(wl_mooncake_load(path, 512, &t), SIM_OK);
    unlink(path);
    p.loop_s = 10;
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "share one timestamp");
    wl_trace_destroy(t);
}

#define GOOD0 "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
#define GOOD1 "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 2]}\n"

/* (b) Broken inputs. */
static void test_broken(void)
{
    printf("broken inputs:\n");
    expect_fail("truncated line", GOOD0 GOOD1 "{\"timestamp\": 0, \"input_length\": 10\n",
                3, "invalid JSON at column 35: '}' expected");
    expect_fail("truncated, no newline", GOOD0 "{\"timestamp\": 0, \"input_length\": 10",
                2, "invalid JSON");
    expect_fail("trailing garbage", GOOD0 "{\"timestamp\": 0} x\n" GOOD0, 2,
                "invalid JSON at column 18");
    expect_fail("two objects on a line", GOOD0 "{} {}\n", 2, "invalid JSON");
    expect_fail("duplicate key", GOOD0 "{\"timestamp\": 0, \"timestamp\": 1}\n", 2,
                "invalid JSON");
    expect_fail("not an object", GOOD0 "[1, 2]\n", 2, "an array, not an object");
    expect_fail("missing field", GOOD0
                "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [0, 1]}\n", 2,
                "missing field \"output_length\"");
    expect_fail("missing hash_ids", GOOD0
                "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5}\n", 2,
                "missing field \"hash_ids\"");
    expect_fail("missing timestamp", "{\"input_length\": 600, \"output_length\": 5, "
                "\"hash_ids\": [0, 1]}\n", 1, "missing field \"timestamp\"");
    expect_fail("negative input length", GOOD0
                "{\"timestamp\": 0, \"input_length\": -5, \"output_length\": 5, "
                "\"hash_ids\": []}\n", 2,
                "field \"input_length\" is -5; expected a positive integer (tokens)");
    expect_fail("zero input length", GOOD0
                "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 5, "
                "\"hash_ids\": []}\n", 2, "field \"input_length\" is 0");
    expect_fail("huge input length", GOOD0
                "{\"timestamp\": 0, \"input_length\": 4294967296, \"output_length\": 5, "
                "\"hash_ids\": []}\n", 2, "field \"input_length\" is 4294967296");
    expect_fail("negative output length", GOOD0
                "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": -1, "
                "\"hash_ids\": [0, 1]}\n", 2, "field \"output_length\" is -1");
    expect_fail("zero output length", GOOD0
                "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 0, "
                "\"hash_ids\": [0, 1]}\n", 2, "field \"output_length\" is 0");
    expect_fail("non-monotone timestamp", GOOD0 GOOD1
                "{\"timestamp\": 500, \"input_length\": 600, \"output_length\": 5, "
                "\"hash_ids\": [0, 1]}\n", 3,
                "field \"timestamp\" is 500, smaller than 1000 on line 2");
    expect_fail("non-monotone after blank", GOOD1 "\n\n" GOOD0, 4,
                "smaller than 1000 on line 1");
    expect_fail("negative timestamp", "{\"timestamp\": -1, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0, 1]}\n", 1,
                "field \"timestamp\" is -1");
    expect_fail("string timestamp", GOOD0 "{\"timestamp\": \"1000\", \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0, 1]}\n", 2,
                "field \"timestamp\" is a string");
    expect_fail("real timestamp", GOOD0 "{\"timestamp\": 1000.5, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0, 1]}\n", 2,
                "field \"timestamp\" is a real number (1000.5)");
    expect_fail("null input length", GOOD0 "{\"timestamp\": 0, \"input_length\": null, "
                "\"output_length\": 5, \"hash_ids\": [0, 1]}\n", 2,
                "field \"input_length\" is null");
    expect_fail("hash_ids not array", GOOD0 "{\"timestamp\": 0, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": {}}\n", 2,
                "field \"hash_ids\" is an object");
    expect_fail("hash_ids too short", GOOD0 GOOD1 GOOD1
                "{\"timestamp\": 2000, \"input_length\": 1025, \"output_length\": 5, "
                "\"hash_ids\": [0, 1]}\n", 4,
                "field \"hash_ids\" has 2 ids but input_length 1025 needs ceil(1025/512) = 3");
    expect_fail("hash_ids too long", GOOD0
                "{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 5, "
                "\"hash_ids\": [0, 1]}\n", 2, "field \"hash_ids\" has 2 ids");
    expect_fail("negative hash id", GOOD0 "{\"timestamp\": 0, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0, -3]}\n", 2, "hash_ids[1] is -3");
    expect_fail("real hash id", GOOD0 "{\"timestamp\": 0, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0.5, 1]}\n", 2,
                "hash_ids[0] is a real number");
    expect_fail("string hash id", GOOD0 "{\"timestamp\": 0, \"input_length\": 600, "
                "\"output_length\": 5, \"hash_ids\": [0, \"1\"]}\n", 2,
                "hash_ids[1] is a string");
    expect_fail("blank then bad", "\n" GOOD0 "\n{\"timestamp\": 0}\n", 4,
                "missing field");
    expect_fail("empty file", "", 1, "no requests");
    expect_fail("only blank lines", "\n  \n\n", 3, "no requests");
    /* Issue 17 item 16: ids that are not a prefix tree (block 5 after 1
     * on line 1, after 2 on line 3; or first, then after another). */
    expect_fail("not a prefix tree", GOOD0 "{\"timestamp\": 1, \"input_length\": 1500, "
                "\"output_length\": 5, \"hash_ids\": [0, 1, 5]}\n" GOOD1
                "{\"timestamp\": 2000, \"input_length\": 1500, \"output_length\": 5, "
                "\"hash_ids\": [0, 2, 5]}\n", 4,
                "hash_ids[2] = 5 follows 2 here, but followed 1 on line 2; expected hash_ids "
                "that form a prefix tree");
    expect_fail("first id elsewhere", GOOD0 "{\"timestamp\": 1, \"input_length\": 10, "
                "\"output_length\": 5, \"hash_ids\": [1]}\n", 2,
                "hash_ids[0] = 1 is the first id here, but followed 0 on line 1");
    expect_fail("repeated id", "{\"timestamp\": 1, \"input_length\": 1000, "
                "\"output_length\": 5, \"hash_ids\": [3, 3]}\n", 1,
                "hash_ids[1] = 3 follows 3 here, but was the first id on line 1");
    /* Issue 17 items 10 and 15: binary data, a UTF-16 file. */
    expect_fail("control character", GOOD0 "\001{}\n", 2, "invalid JSON");
    for (const char *m = sim_errmsg(); *m; m++)
        CHECK((unsigned char)*m >= 0x20); /* jansson quotes the byte raw: escaped */
    {
        static const char nul[] = GOOD0 "{\"timestamp\": 0\000}\n";
        char path[512];
        write_tmp("", path, sizeof path);
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL && fwrite(nul, 1, sizeof nul - 1, f) == sizeof nul - 1);
        fclose(f);
        wl_trace *t = SENTINEL;
        CHECK_INT_EQ(wl_mooncake_load(path, 512, &t), SIM_EINVAL);
        unlink(path);
        CHECK(t == SENTINEL);
        check_message_form(path);
        CHECK_STR_CONTAINS(sim_errmsg(), ":2: NUL byte in line; expected a text JSONL file");
    }
    expect_fail("UTF-16", "\xff\xfe{\n", 1, "UTF-16 byte order mark");

    /* Block size is a parameter: GOOD0 (600 tokens, 2 ids) is wrong at 256. */
    expect_fail_rc("block size 256", GOOD0, 256, SIM_EINVAL, 1, "ceil(600/256) = 3");

    /* block_tokens 0 is rejected before the file is touched. */
    wl_trace *t = SENTINEL;
    CHECK_INT_EQ(wl_mooncake_load("/nonexistent", 0, &t), SIM_EINVAL);
    CHECK(t == SENTINEL);
    CHECK_STR_CONTAINS(sim_errmsg(), "block size is 0");

    /* I/O errors: a missing file, and a directory (refused at open,
     * workloads/infile.c). */
    const char *missing = "/nonexistent-crsim-dir/trace.jsonl";
    CHECK_INT_EQ(wl_mooncake_load(missing, 512, &t), SIM_EIO);
    printf("  %-24s -> %s\n", "missing file", sim_errmsg());
    CHECK(t == SENTINEL);
    CHECK_STR_CONTAINS(sim_errmsg(), missing);
    CHECK_STR_CONTAINS(sim_errmsg(), "No such file or directory");
    int rc = wl_mooncake_load("/", 512, &t);
    printf("  %-24s -> %s: %s\n", "directory", sim_strstatus(rc), sim_errmsg());
    CHECK_INT_EQ(rc, SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "is a directory, not a regular file");
    CHECK(t == SENTINEL);
    CHECK_STR_CONTAINS(sim_errmsg(), "/: Mooncake trace is a directory, not a regular file");
    /* Issue 17 item 10: /dev/zero (before: 4.2 GB read, then a misleading
     * message) and a FIFO (before: blocked forever) are refused. */
    CHECK_INT_EQ(wl_mooncake_load("/dev/zero", 512, &t), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "/dev/zero: Mooncake trace is a character device");
    char fifo[512];
    write_tmp("", fifo, sizeof fifo);
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_INT_EQ(wl_mooncake_load(fifo, 512, &t), SIM_EIO);
    unlink(fifo);
    CHECK_STR_CONTAINS(sim_errmsg(), "Mooncake trace is a FIFO (named pipe)");
    CHECK(t == SENTINEL);
}

/* Issue 17 items 10 and 15: the line bound, a byte order mark. */
static void test_lines(void)
{
    printf("line bound and BOM:\n");
    /* A line of exactly WL_MOONCAKE_LINE_MAX bytes (padding spaces inside
     * the object, CRLF after it) loads; one byte more is refused. */
    size_t max = WL_MOONCAKE_LINE_MAX;
    char *buf = malloc(2 * max + 512);
    CHECK(buf != NULL);
    const char *obj = "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, "
                      "\"hash_ids\": [0, 1]";
    size_t k = strlen(obj);
    memcpy(buf, obj, k);
    memset(buf + k, ' ', max - k - 1);
    memcpy(buf + max - 1, "}\r\n", 4);
    char path[512];
    write_tmp(buf, path, sizeof path);
    wl_trace *t = NULL;
    CHECK_INT_EQ(wl_mooncake_load(path, 512, &t), SIM_OK);
    CHECK_INT_EQ(t->n, 1);
    wl_trace_destroy(t);
    unlink(path);
    memset(buf + k, ' ', max - k);
    memcpy(buf + max, "}\n", 3);
    char *two = malloc(2 * max + 512);
    CHECK(two != NULL);
    snprintf(two, 2 * max + 512, "%s%s", GOOD0, buf);
    expect_fail("line of max+1 bytes", two, 2, "line longer than 1048576 bytes; expected one "
                "JSON object per line of at most 1048576 bytes");
    /* No line end at all: refused after the bound, not read to the end. */
    memset(buf, '[', 2 * max);
    buf[2 * max] = '\0';
    expect_fail("no line end", buf, 1, "line longer than 1048576 bytes");
    free(two);
    free(buf);
    /* A UTF-8 byte order mark is dropped (before: "invalid JSON at column 1:
     * '[' or '{' expected near '\ufeff'"). */
    write_tmp("\xef\xbb\xbf" GOOD0 GOOD1, path, sizeof path);
    CHECK_INT_EQ(wl_mooncake_load(path, 512, &t), SIM_OK);
    CHECK_INT_EQ(t->n, 2);
    CHECK_INT_EQ(t->reqs[0].input_tokens, 600);
    wl_trace_destroy(t);
    unlink(path);
}

/* The tests/bad-inputs fixtures fail where tests/bad-inputs/README.md says. */
static void test_fixtures(const char *dir)
{
    static const struct {
        const char *file;
        int line;
        const char *needle;
    } fx[] = {
        {"truncated.jsonl", 3, "invalid JSON"},
        {"missing_field.jsonl", 2, "missing field \"output_length\""},
        {"negative_length.jsonl", 4, "field \"input_length\" is -5"},
        {"nonmonotone.jsonl", 3, "field \"timestamp\" is 3000, smaller than 6000"},
        {"prefix_conflict.jsonl", 4, "hash_ids[2] = 5 follows 2 here, but followed 1 on line 1"},
    };
    printf("fixtures in %s:\n", dir);
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        char path[1024], tag[32];
        snprintf(path, sizeof path, "%s/%s", dir, fx[i].file);
        wl_trace *t = SENTINEL;
        int rc = wl_mooncake_load(path, WL_MOONCAKE_BLOCK_TOKENS, &t);
        printf("  %-24s -> %s: %s\n", fx[i].file, sim_strstatus(rc), sim_errmsg());
        CHECK_INT_EQ(rc, SIM_EINVAL);
        CHECK(t == SENTINEL);
        snprintf(tag, sizeof tag, ":%d: ", fx[i].line);
        CHECK_STR_CONTAINS(sim_errmsg(), tag);
        CHECK_STR_CONTAINS(sim_errmsg(), fx[i].needle);
    }
    /* bom.jsonl: valid after its UTF-8 byte order mark. */
    char path[1024];
    snprintf(path, sizeof path, "%s/bom.jsonl", dir);
    wl_trace *t = NULL;
    CHECK_INT_EQ(wl_mooncake_load(path, WL_MOONCAKE_BLOCK_TOKENS, &t), SIM_OK);
    CHECK_INT_EQ(t->n, 2);
    CHECK_NEAR(t->reqs[1].t_s, 1.0, 0);
    wl_trace_destroy(t);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s conversation_trace.jsonl [tests/bad-inputs]\n", argv[0]);
        return 99;
    }
    test_small_valid();
    test_loop();
    test_broken();
    test_lines();
    if (argc > 2)
        test_fixtures(argv[2]);
    test_real(argv[1]);
    printf("ok\n");
    return 0;
}
