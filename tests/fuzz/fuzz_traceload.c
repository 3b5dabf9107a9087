/*
 * libFuzzer target: every trace reader behind wl_trace_load
 * (workloads/trace_csv.c: Azure 2023/2024 and BurstGPT CSV, Mooncake
 * JSONL) with the trace load options (workload.trace_format, _prefix,
 * _prefix_tokens, _block_tokens, _key_field) chosen by the input's first
 * byte.  Checks as fuzz_mooncake.c: one-line errors naming the path, *out
 * alone on error, the trace invariants on success.
 *
 * The same source makes three more targets (each a two-line file that
 * defines a macro and includes this one):
 *   fuzz_azure.c, fuzz_burstgpt.c  FZ_TRACE_FORMAT fixes the format (the
 *       CSV reader of that trace), byte 0 still chooses the other options;
 *   fuzz_compressed.c  FZ_TRACE_COMPRESSED: the same bytes gzip- and
 *       xz-compressed (workloads/infile.c) must load to exactly the plain
 *       file's trace, or fail as it does.
 */
#include <lzma.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sim/core/error.h"
#include "workloads/mooncake.h"
#include "fuzz_common.h"

#ifndef FZ_TRACE_COMPRESSED
#define FZ_TRACE_COMPRESSED 0
#endif

static void check_trace(const wl_trace *t, uint32_t bt)
{
    if (t->n < 1 || t->block_tokens != bt)
        fz_fail("loaded trace header");
    size_t off = 0;
    for (size_t i = 0; i < t->n; i++) {
        const wl_trace_req *r = &t->reqs[i];
        if (r->input_tokens < 1 || r->output_tokens < 1)
            fz_fail("a length below 1 token");
        if (r->ids_off != off)
            fz_fail("id offsets not contiguous");
        off += r->n_ids;
        if (!(r->t_s >= 0) || !isfinite(r->t_s) || (i && r->t_s < t->reqs[i - 1].t_s))
            fz_fail("arrival times negative or decreasing");
        (void)wl_trace_routing_key(t, i, 2);
    }
    if (off != t->n_ids_total)
        fz_fail("n_ids_total");
    if (!isfinite(wl_trace_span_s(t)) || !isfinite(wl_trace_mean_rate(t)))
        fz_fail("span or rate not finite");
}

static bool same_trace(const wl_trace *a, const wl_trace *b)
{
    return a->n == b->n && a->n_ids_total == b->n_ids_total &&
           memcmp(a->reqs, b->reqs, a->n * sizeof *a->reqs) == 0 &&
           memcmp(a->ids, b->ids, a->n_ids_total * sizeof *a->ids) == 0 &&
           (!a->keys) == (!b->keys) &&
           (!a->keys || memcmp(a->keys, b->keys, a->n * sizeof *a->keys) == 0);
}

/* gzip (RFC 1952) of data into a malloc'd buffer; NULL on failure. */
static uint8_t *gzip_of(const uint8_t *data, size_t size, size_t *n)
{
    z_stream s = {0};
    if (deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 1, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&s, size) + 64;
    uint8_t *out = malloc(cap);
    s.next_in = (Bytef *)data;
    s.avail_in = (uInt)size;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    int r = out ? deflate(&s, Z_FINISH) : Z_MEM_ERROR;
    *n = cap - s.avail_out;
    deflateEnd(&s);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static uint8_t *xz_of(const uint8_t *data, size_t size, size_t *n)
{
    size_t cap = lzma_stream_buffer_bound(size);
    uint8_t *out = malloc(cap);
    *n = 0;
    /* Preset 0 with a 64 KiB dictionary: the default presets allocate
     * megabytes per call, which made the target ~50 executions/s. */
    lzma_options_lzma opt;
    if (!out || lzma_lzma_preset(&opt, 0)) {
        free(out);
        return NULL;
    }
    opt.dict_size = 1u << 16;
    lzma_filter filters[] = {{.id = LZMA_FILTER_LZMA2, .options = &opt},
                             {.id = LZMA_VLI_UNKNOWN, .options = NULL}};
    if (lzma_stream_buffer_encode(filters, LZMA_CHECK_CRC64, NULL, data, size, out, n, cap) ==
        LZMA_OK)
        return out;
    free(out);
    return NULL;
}

/* Load `name` holding data; the trace or NULL, and the status. */
static int load(const char *name, const uint8_t *data, size_t size, const wl_trace_opts *o,
                wl_trace **out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write(name, data, size));
    wl_trace sentinel, *t = &sentinel;
    int rc = wl_trace_load(path, o, &t);
    if (rc) {
        fz_check_error(rc, path, rc == SIM_EINVAL);
        if (t != &sentinel)
            fz_fail("*out changed on error");
        t = NULL;
    }
    *out = t;
    return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* A few bytes can ask for billions of synthetic ids: the loaders refuse
     * what exceeds the available memory, here faked at 50 MB so every
     * input stays fast (sim_mem_available). */
    setenv("CRSIM_MEM_AVAILABLE_GB", "0.05", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const formats[] = {"auto", "azure", "burstgpt", "mooncake"};
    static const char *const prefixes[] = {"auto", "none", "per_key", "hashes"};
    static const char *const keys[] = {"", "", "Model", "session_id"};
    const uint8_t sel = data[0];
    const uint32_t bt = (sel & 0x40) ? 16 : 512;
#ifdef FZ_TRACE_FORMAT
    const char *format = FZ_TRACE_FORMAT;
    (void)formats;
#else
    const char *format = formats[sel & 3];
#endif
    const wl_trace_opts o = {.block_tokens = bt, .format = format,
                             .prefix = prefixes[(sel >> 2) & 3],
                             .prefix_tokens = ((sel >> 2) & 3) == 2 ? 2 * (uint64_t)bt : 0,
                             .key_field = keys[(sel >> 4) & 3]};
    data++;
    size--;
    const char *ext = strcmp(format, "mooncake") == 0 ? "jsonl" : "csv";
    char name[32];
    snprintf(name, sizeof name, "trace.%s", ext);
    wl_trace *plain = NULL;
    const int rc = load(name, data, size, &o, &plain);
    if (plain)
        check_trace(plain, bt);
    if (!FZ_TRACE_COMPRESSED) {
        wl_trace_destroy(plain);
        return 0;
    }
    /* The same bytes compressed: the same trace, or an error too. */
    size_t n = 0;
    uint8_t *z[2] = {gzip_of(data, size, &n), NULL};
    for (int k = 0; k < 2; k++) {
        size_t zn = n;
        if (k == 1)
            z[1] = xz_of(data, size, &zn);
        if (!z[k])
            continue;
        snprintf(name, sizeof name, "trace.%s.%s", ext, k ? "xz" : "gz");
        wl_trace *c = NULL;
        const int crc = load(name, z[k], zn, &o, &c);
        if ((crc == SIM_OK) != (rc == SIM_OK))
            fz_fail("compressed input loads differently from the plain file");
        if (c && !same_trace(plain, c))
            fz_fail("compressed input gives another trace than the plain file");
        wl_trace_destroy(c);
        free(z[k]);
    }
    wl_trace_destroy(plain);
    return 0;
}
