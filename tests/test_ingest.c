/*
 * Tests of the shared trace ingestion (workloads/ingest.c): a trace is
 * parsed once per process and shared; the shared block-hash table gives
 * every run exactly the stream that per-request hashing (a separate
 * process, or the code before the table) gives; runs on several threads
 * see one stream; the binary cache is used when valid, and a stale
 * (edited, same size), truncated, corrupted or foreign cache file is
 * rebuilt, never used and never a crash; CRSIM_TRACE_CACHE=off writes
 * nothing.  argv[1] (optional): the Mooncake conversation trace, whose
 * shared stream is compared too.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "workloads/arrivals.h"
#include "workloads/ingest.h"
#include "workloads/replay.h"
#include "check.h"

static char dir[256];

/* A Mooncake JSONL trace of n requests (> 64 KiB for n >= 600): ids form a
 * prefix tree (first id i % 5, second 100 + i % 35, then unique ids),
 * `bump` added to every timestamp (an edit that keeps the size when it
 * does not change the digit count). */
static void write_trace(const char *path, int n, int bump)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < n; i++) {
        int k = 2 + i % 7;
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, "
                "\"hash_ids\": [%d, %d", 100000 + 250 * i + bump, 512 * k - 100 * (i % 3),
                10 + i % 50, i % 5, 100 + i % 35);
        for (int j = 2; j < k; j++)
            fprintf(f, ", %d", 10000 + 16 * i + j);
        fprintf(f, "]}\n");
    }
    CHECK(fclose(f) == 0);
}

static void check_same_trace(const wl_trace *a, const wl_trace *b)
{
    CHECK_U64_EQ(a->n, b->n);
    CHECK_U64_EQ(a->n_ids_total, b->n_ids_total);
    CHECK_INT_EQ(a->block_tokens, b->block_tokens);
    CHECK(memcmp(a->reqs, b->reqs, a->n * sizeof *a->reqs) == 0);
    CHECK(memcmp(a->ids, b->ids, a->n_ids_total * sizeof *a->ids) == 0);
    CHECK((a->keys == NULL) == (b->keys == NULL));
    CHECK(!a->keys || memcmp(a->keys, b->keys, a->n * sizeof *a->keys) == 0);
    CHECK(strcmp(a->format, b->format) == 0 && strcmp(a->prefix, b->prefix) == 0);
}

/* XXH-free digest of a whole stream: every field of every request. */
static uint64_t stream_digest(const wl_trace *t, const wl_trace_hashes *tab, uint32_t bs,
                              double rate, uint64_t seed, double loop_s, uint64_t *count)
{
    wl_replay_params p = {.block_size = bs, .key_ids = 2, .rate = rate, .tick_s = 3,
                          .seed = seed, .loop_s = loop_s, .hashes = tab};
    wl_replay *rp;
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_OK);
    wl_request r;
    uint64_t d = 1469598103934665603ull, n = 0;
#define MIX(x) (d = (d ^ (uint64_t)(x)) * 1099511628211ull)
    while (wl_replay_next(rp, &r) == 1) {
        uint64_t at;
        memcpy(&at, &r.arrival_s, sizeof at);
        MIX(r.id);
        MIX(at);
        MIX(r.key);
        MIX(r.prompt_tokens);
        MIX(r.output_tokens);
        MIX(r.n_blocks);
        for (uint32_t j = 0; j < r.n_blocks; j++)
            MIX(r.blocks[j]);
        CHECK_INT_EQ(r.blocks_mode, tab ? WL_BLOCKS_SHARED : WL_BLOCKS_OWNED);
        wl_request_fini(&r);
        CHECK(r.blocks == NULL);
        n++;
    }
#undef MIX
    wl_replay_destroy(rp);
    *count = n;
    return d;
}

/* The shared stream equals the per-request stream, request by request,
 * for several block sizes, rates, seeds and a looped replay. */
static void check_streams(const wl_trace *t)
{
    const uint32_t sizes[] = {16, 32, 512};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const wl_trace_hashes *tab = wl_ingest_hashes(t, sizes[k]);
        CHECK(tab != NULL);
        CHECK(wl_ingest_hashes(t, sizes[k]) == tab); /* built once */
        CHECK_INT_EQ(tab->block_size, sizes[k]);
        for (uint64_t seed = 1; seed <= 2; seed++) {
            uint64_t n1, n2;
            const double loop = seed == 2 ? 3 * wl_trace_span_s(t) / 4.0 : 0;
            uint64_t a = stream_digest(t, NULL, sizes[k], 7.5, seed, loop, &n1);
            uint64_t b = stream_digest(t, tab, sizes[k], 7.5, seed, loop, &n2);
            CHECK_U64_EQ(n1, n2);
            CHECK(n1 >= t->n / 8);
            CHECK_U64_EQ(a, b);
        }
    }
    CHECK(wl_ingest_hashes(t, 7) == NULL); /* not a divisor of 512 */
}

/* The arrival order with many requests per tick (tick_s 1000 s: all 800
 * in one tick, so the replay's insertion sort gives up and qsort sorts):
 * non-decreasing times, every request once. */
static void check_one_tick(const wl_trace *t)
{
    wl_replay_params p = {.block_size = 16, .key_ids = 2, .rate = 0, .tick_s = 1000, .seed = 5};
    wl_replay *rp;
    CHECK_INT_EQ(wl_replay_create(t, &p, &rp), SIM_OK);
    wl_request r;
    double prev = -1;
    uint64_t n = 0, tok = 0, want = 0;
    while (wl_replay_next(rp, &r) == 1) {
        CHECK(r.arrival_s >= prev);
        prev = r.arrival_s;
        tok += r.prompt_tokens;
        n++;
        wl_request_fini(&r);
    }
    wl_replay_destroy(rp);
    for (size_t i = 0; i < t->n; i++)
        want += t->reqs[i].input_tokens;
    CHECK_U64_EQ(n, t->n);
    CHECK_U64_EQ(tok, want);
    CHECK(prev > 100); /* spread over the tick, not left at the stamps */
}

typedef struct thr {
    const char *path;
    uint64_t digest, n;
} thr;

static void *thread_main(void *arg)
{
    thr *x = arg;
    const wl_trace_opts o = {.block_tokens = 512};
    const wl_trace *t;
    CHECK_INT_EQ(wl_ingest_trace(x->path, &o, &t), SIM_OK);
    x->digest = stream_digest(t, wl_ingest_hashes(t, 16), 16, 5.0, 3, 0, &x->n);
    wl_ingest_release(t);
    return NULL;
}

/* Corrupt file `path` in place: flip bits `mask` of the byte at `at`. */
static void flip_byte(const char *path, long at, int mask)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, at, SEEK_SET) == 0);
    int c = fgetc(f);
    CHECK(fseek(f, at, SEEK_SET) == 0 && fputc(c ^ mask, f) != EOF);
    CHECK(fclose(f) == 0);
}

/* Overwrite the first 8 bytes of file `path` (its header's magic). */
static void garble_header(const char *path)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f && fputs("garbage!", f) >= 0 && fclose(f) == 0);
}

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/crsim-ingest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    char trace[512], cdir[512], cpath[1024];
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    CHECK(setenv("CRSIM_TRACE_CACHE", cdir, 1) == 0);
    write_trace(trace, 800, 0);
    CHECK(file_size(trace) >= (long)WL_INGEST_CACHE_MIN_BYTES);
    const wl_trace_opts o = {.block_tokens = 512};
    CHECK(wl_ingest_cache_path(trace, &o, cpath, sizeof cpath) == 1);
    CHECK(strncmp(cpath, cdir, strlen(cdir)) == 0);

    /* (a) parsed once, shared, equal to a private load. */
    wl_trace *ref;
    CHECK_INT_EQ(wl_trace_load(trace, &o, &ref), SIM_OK);
    const wl_trace *t1, *t2;
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t2), SIM_OK);
    CHECK(t1 == t2);
    wl_ingest_stats s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.parsed, 1);
    CHECK_U64_EQ(s.shared, 1);
    CHECK_U64_EQ(s.cache_hits, 0);
    CHECK_U64_EQ(s.cache_written, 1);
    CHECK(file_size(cpath) > 0);
    check_same_trace(t1, ref);
    /* Other options: another trace, not the shared one. */
    const wl_trace_opts o2 = {.block_tokens = 512, .prefix = "none"};
    const wl_trace *t3;
    CHECK_INT_EQ(wl_ingest_trace(trace, &o2, &t3), SIM_OK);
    CHECK(t3 != t1 && strcmp(t3->prefix, "none") == 0);
    wl_ingest_release(t3);

    /* (b) the shared hashes give the per-request stream. */
    check_streams(t1);
    CHECK_U64_EQ(wl_ingest_get_stats().hash_tables, 3);
    CHECK_U64_EQ(wl_ingest_get_stats().hash_cache_written, 3); /* one per block size */
    CHECK_U64_EQ(wl_ingest_get_stats().hash_cache_hits, 0);
    check_one_tick(t1);

    /* (c) runs on several threads: one trace, one table, one stream. */
    thr th[4];
    pthread_t id[4];
    for (int i = 0; i < 4; i++) {
        th[i] = (thr){.path = trace};
        CHECK(pthread_create(&id[i], NULL, thread_main, &th[i]) == 0);
    }
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(id[i], NULL) == 0);
    uint64_t n0;
    const uint64_t d0 = stream_digest(ref, NULL, 16, 5.0, 3, 0, &n0);
    for (int i = 0; i < 4; i++) {
        CHECK_U64_EQ(th[i].digest, d0);
        CHECK_U64_EQ(th[i].n, n0);
    }
    wl_ingest_release(t1);
    wl_ingest_release(t2);

    /* (d) a new process (the registry is empty again): the cache serves. */
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
    s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.parsed, 2); /* t3 */
    CHECK_U64_EQ(s.cache_hits, 1);
    check_same_trace(t1, ref);
    check_streams(t1); /* the tables mapped from their cache files */
    s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.hash_tables, 3);
    CHECK_U64_EQ(s.hash_cache_hits, 3);
    wl_ingest_release(t1);

    /* (d2) a corrupted block-hash cache file (a flipped hash, a truncated
     * file, a garbage header, another block size's file under this one's
     * name) is rebuilt, never mapped, and the stream stays the
     * per-request one. */
    char hpath[1100];
    snprintf(hpath, sizeof hpath, "%.*s.bs16.crsim-hashes",
             (int)(strlen(cpath) - strlen(".crsim-cache")), cpath);
    CHECK(file_size(hpath) > 4096);
    for (int how = 0; how < 4; how++) {
        const long sz = file_size(hpath);
        if (how == 0) {
            flip_byte(hpath, sz - 20, 0x01); /* a hash */
        } else if (how == 1) {
            CHECK(truncate(hpath, sz - 8) == 0);
        } else if (how == 2) {
            garble_header(hpath);
        } else {
            char other[1100];
            snprintf(other, sizeof other, "%.*s.bs32.crsim-hashes",
                     (int)(strlen(cpath) - strlen(".crsim-cache")), cpath);
            CHECK(rename(other, hpath) == 0);
        }
        const wl_ingest_stats b = wl_ingest_get_stats();
        CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
        const wl_trace_hashes *tab = wl_ingest_hashes(t1, 16);
        CHECK(tab != NULL);
        s = wl_ingest_get_stats();
        CHECK_U64_EQ(s.hash_cache_hits, b.hash_cache_hits);
        CHECK_U64_EQ(s.hash_tables, b.hash_tables + 1);
        CHECK_U64_EQ(s.hash_cache_rebuilt, b.hash_cache_rebuilt + 1);
        uint64_t na, nb;
        CHECK_U64_EQ(stream_digest(t1, NULL, 16, 7.5, 1, 0, &na),
                     stream_digest(t1, tab, 16, 7.5, 1, 0, &nb));
        CHECK_U64_EQ(na, nb);
        wl_ingest_release(t1);
    }
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK); /* the rebuilt file serves */
    CHECK(wl_ingest_hashes(t1, 16) != NULL);
    CHECK_U64_EQ(wl_ingest_get_stats().hash_cache_hits, s.hash_cache_hits + 1);
    wl_ingest_release(t1);

    /* (e) stale: the trace edited, same size (every timestamp + 1 ms);
     * the cache must not be used, and is rebuilt. */
    const long before = file_size(trace);
    write_trace(trace, 800, 1);
    CHECK_INT_EQ(file_size(trace), before);
    wl_trace *ref2;
    CHECK_INT_EQ(wl_trace_load(trace, &o, &ref2), SIM_OK);
    CHECK(ref2->reqs[0].t_s != ref->reqs[0].t_s);
    const wl_ingest_stats be = wl_ingest_get_stats();
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
    s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.parsed, 3);
    CHECK_U64_EQ(s.cache_rebuilt, 1);
    check_same_trace(t1, ref2);
    /* The block-hash cache records the old trace's hash: rebuilt too. */
    CHECK(wl_ingest_hashes(t1, 16) != NULL);
    CHECK_U64_EQ(wl_ingest_get_stats().hash_cache_hits, be.hash_cache_hits);
    CHECK_U64_EQ(wl_ingest_get_stats().hash_cache_rebuilt, be.hash_cache_rebuilt + 1);
    wl_ingest_release(t1);
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK); /* the rebuilt cache serves */
    CHECK_U64_EQ(wl_ingest_get_stats().cache_hits, be.cache_hits + 1);
    check_same_trace(t1, ref2);
    wl_ingest_release(t1);

    /* (f) corrupted caches: a flipped payload byte, a truncated file, a
     * garbage header, an empty file: each rebuilt, never used. */
    for (int how = 0; how < 4; how++) {
        const long sz = file_size(cpath);
        CHECK(sz > 200);
        if (how == 0) {
            flip_byte(cpath, sz / 2, 0x10);
        } else if (how == 1) {
            CHECK(truncate(cpath, sz - 9) == 0);
        } else if (how == 2) {
            garble_header(cpath);
        } else {
            CHECK(truncate(cpath, 0) == 0);
        }
        const wl_ingest_stats b = wl_ingest_get_stats();
        CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
        s = wl_ingest_get_stats();
        CHECK_U64_EQ(s.cache_hits, b.cache_hits);
        CHECK_U64_EQ(s.parsed, b.parsed + 1);
        CHECK_U64_EQ(s.cache_rebuilt, b.cache_rebuilt + 1);
        check_same_trace(t1, ref2);
        wl_ingest_release(t1);
    }

    /* (g) off: no cache file is read or written. */
    CHECK(setenv("CRSIM_TRACE_CACHE", "off", 1) == 0);
    CHECK(wl_ingest_cache_path(trace, &o, cpath, sizeof cpath) == 0);
    const wl_ingest_stats b = wl_ingest_get_stats();
    CHECK_INT_EQ(wl_ingest_trace(trace, &o, &t1), SIM_OK);
    s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.parsed, b.parsed + 1);
    CHECK_U64_EQ(s.cache_written, b.cache_written);
    wl_ingest_release(t1);

    /* (h) a missing trace: one clear error. */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none.jsonl", dir);
    CHECK_INT_EQ(wl_ingest_trace(missing, &o, &t1), SIM_EIO);
    CHECK(strstr(sim_errmsg(), missing) != NULL);

    /* (h2) inter-arrival CSVs: parsed once, shared, equal to a private load. */
    char iat[600];
    snprintf(iat, sizeof iat, "%s/iat.csv", dir);
    FILE *f = fopen(iat, "w");
    CHECK(f != NULL);
    fprintf(f, "TIMESTAMP,other\n");
    for (int i = 0; i < 50; i++)
        fprintf(f, "%d.%d,x\n", 10 + 3 * i, (7 * i) % 10); /* gaps 2.x..3.9 s */
    CHECK(fclose(f) == 0);
    const struct wl_iat_series *g1, *g2;
    const wl_ingest_stats bi = wl_ingest_get_stats();
    if (wl_ingest_iat(iat, "TIMESTAMP", 0, &g1) != SIM_OK) {
        fprintf(stderr, "%s\n", sim_errmsg());
        return 1;
    }
    CHECK_INT_EQ(wl_ingest_iat(iat, "TIMESTAMP", 0, &g2), SIM_OK);
    CHECK(g1 == g2);
    s = wl_ingest_get_stats();
    CHECK_U64_EQ(s.iat_parsed, bi.iat_parsed + 1);
    CHECK_U64_EQ(s.iat_shared, bi.iat_shared + 1);
    wl_iat_series own;
    CHECK_INT_EQ(wl_iat_load_csv(iat, "TIMESTAMP", 0, &own), SIM_OK);
    CHECK_U64_EQ(g1->n, 49);
    CHECK_U64_EQ(own.n, g1->n);
    CHECK(memcmp(own.gap_s, g1->gap_s, own.n * sizeof *own.gap_s) == 0);
    wl_iat_series_fini(&own);
    const struct wl_iat_series *g3;
    CHECK_INT_EQ(wl_ingest_iat(iat, "TIMESTAMP", 1, &g3), SIM_OK); /* as gaps: another series */
    CHECK(g3 != g1);
    wl_ingest_iat_release(g3);
    wl_ingest_iat_release(g1);
    wl_ingest_iat_release(g2);
    CHECK_INT_EQ(wl_ingest_iat(missing, "TIMESTAMP", 0, &g1), SIM_EIO);

    /* (i) the real trace: the shared stream is the per-request stream. */
    if (argc > 1) {
        const wl_trace *m;
        CHECK_INT_EQ(wl_ingest_trace(argv[1], &o, &m), SIM_OK);
        const wl_trace_hashes *tab = wl_ingest_hashes(m, 16);
        CHECK(tab != NULL);
        /* sum of min(floor(input_length / 16), 32 len(hash_ids)), computed
         * independently (python over the JSONL) */
        CHECK_U64_EQ(tab->off[m->n], 9044013);
        uint64_t na, nb;
        CHECK_U64_EQ(stream_digest(m, NULL, 16, 20, 1, 0, &na),
                     stream_digest(m, tab, 16, 20, 1, 0, &nb));
        CHECK_U64_EQ(na, 12031);
        wl_ingest_release(m);
    }

    wl_trace_destroy(ref);
    wl_trace_destroy(ref2);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    printf("ingest: all checks passed\n");
    return 0;
}
