/*
 * The trace-format dispatcher (wl_trace_load), the CSV trace readers
 * (Azure, BurstGPT), the synthetic prefix ids of traces without block
 * hashes, and a UTC date-time parser.  The date-time parser is written
 * here rather than shared with arrivals.c (whose parser is static and is
 * being reworked on another branch); it uses the same published formula,
 * days_from_civil of H. Hinnant, "chrono-Compatible Low-Level Date
 * Algorithms".
 */
#define _POSIX_C_SOURCE 200809L

#include "sim/core/number.h"
#include "workloads/trace_csv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "sim/core/fileio.h"
#include "workloads/csv.h"
#include "workloads/internal.h"
#include "workloads/infile.h"

/* Synthetic id spaces: the replay keeps the low 48 bits of an id
 * (id << 16), so unique ids are 2^47 + n and shared ids are 47-bit
 * hashes; the two never meet, and Mooncake's small ids stay below both
 * only by the hash's luck (2^-47 per pair), which is documented. */
#define UNIQUE_BASE (UINT64_C(1) << 47)
#define SHARED_MASK ((UINT64_C(1) << 47) - 1)

uint64_t wl__trace_text_key(const char *s, size_t len) { return XXH3_64bits(s, len); }

static void le64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

int wl__trace_synth_ids(wl_trace *t, uint64_t prefix_tokens)
{
    const uint32_t bt = t->block_tokens;
    if (!t->keys) {
        t->keys = malloc((t->n ? t->n : 1) * sizeof *t->keys);
        if (!t->keys)
            return SIM_ERROR(SIM_ENOMEM, "%s: out of memory for the routing keys", t->path);
        for (size_t i = 0; i < t->n; i++) {
            unsigned char b[8];
            le64(b, (uint64_t)i);
            t->keys[i] = XXH3_64bits(b, 8);
        }
    }
    uint64_t total = 0;
    for (size_t i = 0; i < t->n; i++)
        total += ((uint64_t)t->reqs[i].input_tokens + bt - 1) / bt;
    if (total > UINT32_MAX)
        return SIM_ERROR(SIM_EINVAL, "%s: trace needs %llu synthetic ids; expected at most "
                         "%lu (a smaller trace or larger workload.trace_block_tokens)", t->path,
                         (unsigned long long)total, (unsigned long)UINT32_MAX);
    /* A short file can ask for billions of ids (one row of 4e9 tokens):
     * refuse what does not fit in memory before allocating and hashing
     * (found by tests/fuzz/fuzz_azure; issue 38). */
    const double need = (double)total * sizeof *t->ids, avail = sim_mem_available();
    if (need > avail)
        return SIM_ERROR(SIM_EINVAL, "%s: trace needs %llu synthetic ids (%.3g GB) but only "
                         "%.3g GB of memory is available (MemAvailable); expected a smaller "
                         "trace, shorter requests or a larger workload.trace_block_tokens",
                         t->path, (unsigned long long)total, need / 1e9, avail / 1e9);
    free(t->ids);
    t->ids = malloc((total ? total : 1) * sizeof *t->ids);
    if (!t->ids)
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory for %llu synthetic ids", t->path,
                         (unsigned long long)total);
    const uint64_t shared_blocks = prefix_tokens / bt;
    uint64_t off = 0;
    for (size_t i = 0; i < t->n; i++) {
        wl_trace_req *r = &t->reqs[i];
        uint32_t nb = (uint32_t)(((uint64_t)r->input_tokens + bt - 1) / bt);
        r->ids_off = (uint32_t)off;
        r->n_ids = nb;
        for (uint32_t k = 0; k < nb; k++) {
            if (k < shared_blocks) {
                unsigned char b[16];
                le64(b, t->keys[i]);
                le64(b + 8, k);
                t->ids[off + k] = XXH3_64bits(b, 16) & SHARED_MASK;
            } else {
                t->ids[off + k] = UNIQUE_BASE + off + k;
            }
        }
        off += nb;
    }
    t->n_ids_total = (size_t)off;
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* Date-times                                                         */
/* ------------------------------------------------------------------ */

/* The calendar arithmetic is shared with the arrival-time reader
 * (wl__days_from_civil, wl__digits in workloads/internal.h). */

int wl_trace_parse_datetime(const char *s, int64_t *sec, int64_t *nsec)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t y, mo, d, h, mi, se, frac = 0;
    const char *p = s;
    if (!wl__digits(&p, 4, &y) || *p++ != '-' || !wl__digits(&p, 2, &mo) || *p++ != '-' ||
        !wl__digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
        return 0;
    p++;
    if (!wl__digits(&p, 2, &h) || *p++ != ':' || !wl__digits(&p, 2, &mi) || *p++ != ':' || !wl__digits(&p, 2, &se))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 60)
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (isdigit((unsigned char)*p)) {
            if (nd < 9) {
                frac = frac * 10 + (*p - '0');
                nd++;
            }
            p++;
        }
        if (nd == 0)
            return 0;
        for (; nd < 9; nd++)
            frac *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int neg = *p++ == '-';
        int64_t oh, om;
        if (!wl__digits(&p, 2, &oh) || *p++ != ':' || !wl__digits(&p, 2, &om) || oh > 23 || om > 59)
            return 0;
        off = (oh * 3600 + om * 60) * (neg ? -1 : 1);
    }
    if (*p != '\0')
        return 0;
    *sec = wl__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    *nsec = frac;
    return 1;
}

/* ------------------------------------------------------------------ */
/* CSV traces                                                         */
/* ------------------------------------------------------------------ */

struct fmt {
    const char *name, *time_col, *in_col, *out_col, *time_form;
};

static const struct fmt fmts[] = {
    {"azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens",
     "a UTC date-time YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM], non-decreasing"},
    {"burstgpt", "Timestamp", "Request tokens", "Response tokens",
     "seconds since the trace start (a decimal number in [0, 1e10]), non-decreasing"},
};

static int find_col(wl_csv *c, size_t nf, const char *name, size_t *col)
{
    for (size_t i = 0; i < nf; i++)
        if (strcmp(wl_csv_field(c, i), name) == 0) {
            *col = i;
            return 1;
        }
    return 0;
}

/* Token count cell: an integer in 0..UINT32_MAX. */
static int tokens(const char *cell, uint32_t *out)
{
    if (!*cell)
        return 0;
    unsigned long long v = 0;
    for (const char *p = cell; *p; p++) {
        if (!isdigit((unsigned char)*p) || v > UINT32_MAX)
            return 0;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v > UINT32_MAX)
        return 0;
    *out = (uint32_t)v;
    return 1;
}

int wl_trace_csv_load(const char *path, const char *format, const char *key_column,
                      uint32_t block_tokens, uint64_t prefix_tokens, wl_trace **out)
{
    const struct fmt *f = NULL;
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
        if (strcmp(format, fmts[i].name) == 0)
            f = &fmts[i];
    if (!f)
        return SIM_ERROR(SIM_EINVAL, "%s: unknown CSV trace format '%s'; expected azure or "
                         "burstgpt", path, format);
    wl_csv *c;
    int rc = wl_csv_open(path, "CSV trace", 0, &c);
    if (rc)
        return rc;
    size_t nf, ct = 0, ci = 0, co = 0, ck = 0, n = 0, cap = 0, skipped = 0;
    int have_header = 0, is_azure = strcmp(f->name, "azure") == 0;
    const int keyed = *key_column != '\0';
    wl_trace_req *reqs = NULL;
    uint64_t *keys = NULL;
    int64_t s0 = 0, ns0 = 0;
    double prev_t = 0;
    long prev_line = 0;
    while ((rc = wl_csv_next(c, &nf)) == SIM_OK && nf > 0) {
        long line = wl_csv_line(c);
        if (!have_header) {
            const char *miss = !find_col(c, nf, f->time_col, &ct) ? f->time_col
                               : !find_col(c, nf, f->in_col, &ci)  ? f->in_col
                               : !find_col(c, nf, f->out_col, &co) ? f->out_col
                               : keyed && !find_col(c, nf, key_column, &ck) ? key_column
                                                                             : NULL;
            if (miss) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: header has no column '%s'%s; expected a "
                               "%s header with %s,%s,%s", path, line, miss,
                               miss == key_column ? " (workload.key_field)" : "", f->name,
                               f->time_col, f->in_col, f->out_col);
                break;
            }
            have_header = 1;
            continue;
        }
        const char *tc = wl_csv_field(c, ct), *ic = wl_csv_field(c, ci),
                   *oc = wl_csv_field(c, co), *kc = keyed ? wl_csv_field(c, ck) : "";
        if (!tc || !ic || !oc || !kc) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: row has %zu fields, no '%s'; expected a value "
                           "in every column the header names", path, line, nf,
                           !tc ? f->time_col : !ic ? f->in_col : !oc ? f->out_col : key_column);
            break;
        }
        double t;
        if (is_azure) {
            int64_t s, ns;
            if (!wl_trace_parse_datetime(tc, &s, &ns)) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' is not a date-time; "
                               "expected %s", path, line, tc, f->time_col, f->time_form);
                break;
            }
            if (n + skipped == 0) {
                s0 = s;
                ns0 = ns;
            }
            /* Nanoseconds since the first row in int64: checked, since
             * date-times more than ~292 years apart overflow it (a row in
             * year 2700 read as 92 years after one in 2023; issue 38 D10). */
            int64_t dns;
            if (__builtin_mul_overflow(s - s0, (int64_t)1000000000, &dns) ||
                __builtin_add_overflow(dns, ns - ns0, &dns)) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' is %.0f years from the "
                               "first row's date-time; expected rows within 292 years of each "
                               "other (%s)", path, line, tc, f->time_col,
                               (double)(s - s0) / (365.2425 * 86400), f->time_form);
                break;
            }
            t = (double)dns * 1e-9;
        } else {
            /* decimal seconds in [0, 1e10] (317 years; sim/core/number.h) */
            if (!sim_num_real(tc, 0, 1e10, &t)) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' is not a time; "
                               "expected %s", path, line, tc, f->time_col, f->time_form);
                break;
            }
        }
        if (prev_line && t < prev_t) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: time '%s' is earlier than line %ld's; "
                           "expected %s", path, line, tc, prev_line, f->time_form);
            break;
        }
        uint32_t in, outk;
        if (!tokens(ic, &in) || !tokens(oc, &outk)) {
            int bad_in = !tokens(ic, &in);
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' is not a token count; "
                           "expected an integer 0..%lu (tokens)", path, line, bad_in ? ic : oc,
                           bad_in ? f->in_col : f->out_col, (unsigned long)UINT32_MAX);
            break;
        }
        prev_t = t;
        prev_line = line;
        if (in == 0 || outk == 0) {
            skipped++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            wl_trace_req *nr = realloc(reqs, cap * sizeof *nr);
            uint64_t *nk = nr ? realloc(keys, cap * sizeof *nk) : NULL;
            if (nr)
                reqs = nr;
            if (nk)
                keys = nk;
            if (!nr || !nk) {
                rc = SIM_ERROR(SIM_ENOMEM, "%s:%ld: out of memory growing the trace; "
                               "expected a smaller trace", path, line);
                break;
            }
        }
        reqs[n] = (wl_trace_req){.t_s = t, .input_tokens = in, .output_tokens = outk};
        keys[n] = wl__trace_text_key(kc, strlen(kc));
        n++;
    }
    long last = wl_csv_line(c);
    wl_csv_close(c);
    if (rc == SIM_OK && !have_header)
        rc = SIM_ERROR(SIM_EINVAL, "%s:1: empty file; expected a %s header %s,%s,%s and rows",
                       path, f->name, f->time_col, f->in_col, f->out_col);
    else if (rc == SIM_OK && n == 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: no requests (%zu rows with 0 tokens skipped); "
                       "expected rows with prompt and output tokens >= 1", path,
                       last > 0 ? last : 1, skipped);
    wl_trace *t = NULL;
    char *pcopy = NULL;
    if (rc == SIM_OK) {
        t = calloc(1, sizeof *t);
        pcopy = malloc(strlen(path) + 1);
        if (!t || !pcopy)
            rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory finishing the trace", path);
    }
    if (rc) {
        free(t);
        free(pcopy);
        free(reqs);
        free(keys);
        return rc;
    }
    strcpy(pcopy, path);
    *t = (wl_trace){.n = n, .reqs = reqs, .block_tokens = block_tokens, .path = pcopy,
                    .keys = keyed ? keys : NULL, .format = f->name,
                    .prefix = prefix_tokens ? "per_key" : "none",
                    .prefix_tokens = prefix_tokens, .n_skipped = skipped};
    if (!keyed)
        free(keys);
    if ((rc = wl__trace_synth_ids(t, prefix_tokens))) {
        wl_trace_destroy(t);
        return rc;
    }
    *out = t;
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                           */
/* ------------------------------------------------------------------ */

/* The format named by the first non-blank line of `path`: its first
 * 4095 bytes decide.  Lines are counted at their line ends (issue 38 C15:
 * chunks of a long line were counted as lines, so a 1 GB file of NUL
 * bytes was reported at "line 244201"); a NUL byte is an error at once. */
static int sniff(const char *path, const char **format)
{
    FILE *f;
    int rc = wl_infile_open(path, "trace", &f, NULL);
    if (rc)
        return rc;
    char buf[4096];
    size_t n = 0;
    long line = 1;
    int c;
    *format = NULL;
    while ((c = getc_unlocked(f)) != EOF) {
        if (c == '\0') {
            fclose(f);
            return SIM_ERROR(SIM_EINVAL, "%s:%ld: NUL byte in line; expected a text trace "
                             "(Mooncake JSONL, Azure or BurstGPT CSV)", path, line);
        }
        if (c == '\n') {
            if (n > 0)
                break;
            line++;
            continue;
        }
        if (n == 0 && (c == ' ' || c == '\t' || c == '\r'))
            continue;
        buf[n++] = (char)c;
        if (n == sizeof buf - 1)
            break;
    }
    buf[n] = '\0';
    if (n > 0) {
        if (buf[0] == '{')
            *format = "mooncake";
        else if (strstr(buf, "ContextTokens"))
            *format = "azure";
        else if (strstr(buf, "Request tokens"))
            *format = "burstgpt";
    }
    int err = ferror(f);
    fclose(f);
    if (err)
        return SIM_ERROR(SIM_EIO, "%s: cannot read trace; expected a readable file", path);
    if (!*format) {
        char where[64] = "";
        if (n)
            snprintf(where, sizeof where, ":%ld", line);
        return SIM_ERROR(SIM_EINVAL, "%s%s: cannot tell the trace format from %s; "
                         "expected a JSON object (Mooncake JSONL), an Azure CSV header "
                         "(TIMESTAMP,ContextTokens,GeneratedTokens) or a BurstGPT CSV header "
                         "(Timestamp,...,Request tokens,Response tokens,...), or set "
                         "workload.trace_format", path, where,
                         n ? "this line" : "an empty or blank file");
    }
    return SIM_OK;
}

int wl_trace_load(const char *path, const wl_trace_opts *o, wl_trace **out)
{
    SIM_ALWAYS(path && o && out);
    const char *format = o->format && *o->format ? o->format : "auto";
    const char *key = o->key_field ? o->key_field : "";
    const char *prefix = o->prefix && *o->prefix ? o->prefix : "auto";
    int rc;
    if (o->block_tokens == 0)
        return SIM_ERROR(SIM_EINVAL, "%s: block size is 0 tokens; expected a positive "
                         "number of tokens per hash id (workload.trace_block_tokens)", path);
    if (strcmp(format, "auto") == 0 && (rc = sniff(path, &format)))
        return rc;
    int jsonl = strcmp(format, "mooncake") == 0;
    if (!jsonl && strcmp(format, "azure") != 0 && strcmp(format, "burstgpt") != 0)
        return SIM_ERROR(SIM_EINVAL, "%s: unknown trace format '%s' (workload.trace_format); "
                         "expected auto, mooncake, azure or burstgpt", path, format);
    if (strcmp(prefix, "auto") == 0)
        prefix = jsonl ? "hashes" : "none";
    uint64_t ptok;
    if (strcmp(prefix, "hashes") == 0) {
        if (!jsonl)
            return SIM_ERROR(SIM_EINVAL, "%s: workload.trace_prefix is hashes but %s traces "
                             "carry no block hashes; expected none or per_key", path, format);
        return wl__mooncake_load_opts(path, o->block_tokens, key, 0, 0, out);
    } else if (strcmp(prefix, "none") == 0) {
        ptok = 0;
    } else if (strcmp(prefix, "per_key") == 0) {
        if (o->prefix_tokens == 0 || o->prefix_tokens % o->block_tokens != 0)
            return SIM_ERROR(SIM_EINVAL, "%s: workload.trace_prefix_tokens is %llu with "
                             "trace_prefix per_key; expected a positive multiple of "
                             "workload.trace_block_tokens (%lu)", path,
                             (unsigned long long)o->prefix_tokens,
                             (unsigned long)o->block_tokens);
        ptok = o->prefix_tokens;
    } else {
        return SIM_ERROR(SIM_EINVAL, "%s: unknown workload.trace_prefix '%s'; expected auto, "
                         "hashes, none or per_key", path, prefix);
    }
    if (jsonl)
        return wl__mooncake_load_opts(path, o->block_tokens, key, 1, ptok, out);
    return wl_trace_csv_load(path, format, key, o->block_tokens, ptok, out);
}
