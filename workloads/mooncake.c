/*
 * Mooncake JSONL trace reader.  Lines are read one at a time into a buffer
 * that grows up to WL_MOONCAKE_LINE_MAX bytes (hash_ids arrays make lines
 * of a few KiB; the bound keeps a file without line ends from being read
 * whole) and each is parsed on its own with json_loadb, so a bad line is
 * reported with its own line number and a truncated line cannot swallow
 * the next one.  The prefix-tree check keeps, for every distinct hash id,
 * the id before it (its parent) and the line that first showed it.  Parsed
 * values go straight into two growable flat arrays; the JSON tree of a line
 * is freed before the next is read, so peak memory is the arrays plus one
 * line.  Every failure path funnels through fail:, which frees everything,
 * so the loader is all-or-nothing.
 */
#include "workloads/mooncake.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "sim/core/u64map.h"
#include "workloads/infile.h"

/* The "expected" halves of messages, one per field, so every site that
 * rejects a field describes it the same way. */
#define EXPECT_TS "a non-negative integer (ms since trace start)"
#define EXPECT_LEN "a positive integer (tokens)"
#define EXPECT_IDS "an array of non-negative integers (prefix block ids)"
#define EXPECT_ID "a non-negative integer (prefix block id)"

/* Initial capacities: small enough for fixtures, and doubling reaches the
 * 12,031 requests / ~290,000 ids of conversation_trace in a few steps. */
#define INIT_REQS 256
#define INIT_IDS 4096

/* Ids encoded on the stack by wl_trace_routing_key; longer keys (rare: the
 * default is 2) use a heap buffer. */
#define KEY_STACK_IDS 32

/* Loader state: the arrays being built and where we are in the file. */
struct loader {
    const char *path;
    uint32_t block_tokens;
    const char *key_field;   /* "" = no key field */
    int synth;               /* ignore hash_ids: synthetic ids come later */
    uint64_t *keys;          /* with key_field: one per request (cap entries) */
    size_t line;             /* 1-based number of the line being parsed */
    wl_trace_req *reqs;
    size_t n, cap;
    uint64_t *ids;
    size_t n_ids, ids_cap;
    json_int_t prev_ts;      /* timestamp of the previous request */
    size_t prev_line;        /* its line (0: no request yet) */
    /* Prefix tree: id -> dense index j into parent[] (the id before it
     * plus 1, 0 for a first id) and first_line[] (where it first
     * appeared). */
    sim_u64map tree;
    uint64_t *parent;
    size_t *first_line;
    size_t n_tree, tree_cap;
};

/* Record that `id` follows `prev` (prev + 1; 0: `id` is the first id of
 * its request) at position k of this line, or report that an earlier line
 * had it after another id: then the ids are not a prefix tree (the same
 * block id would stand for two different prefixes). */
static int tree_check(struct loader *ld, uint64_t id, uint64_t prev, size_t k)
{
    if (ld->n_tree == ld->tree_cap) {
        size_t cap = ld->tree_cap ? 2 * ld->tree_cap : INIT_IDS;
        uint64_t *p = realloc(ld->parent, cap * sizeof *p);
        if (p)
            ld->parent = p;
        size_t *l = realloc(ld->first_line, cap * sizeof *l);
        if (l)
            ld->first_line = l;
        if (!p || !l)
            return SIM_ERROR(SIM_ENOMEM, "%s:%zu: out of memory growing the prefix tree to "
                             "%zu ids; expected a smaller trace", ld->path, ld->line, cap);
        ld->tree_cap = cap;
    }
    uint32_t j = sim_u64map_insert(&ld->tree, id, (uint32_t)ld->n_tree);
    if (j == SIM_U64MAP_NONE) {
        ld->parent[ld->n_tree] = prev;
        ld->first_line[ld->n_tree++] = ld->line;
        return SIM_OK;
    }
    if (ld->parent[j] == prev)
        return SIM_OK;
    char here[64], there[64];
    if (prev)
        snprintf(here, sizeof here, "follows %llu", (unsigned long long)(prev - 1));
    else
        snprintf(here, sizeof here, "is the first id");
    if (ld->parent[j])
        snprintf(there, sizeof there, "followed %llu", (unsigned long long)(ld->parent[j] - 1));
    else
        snprintf(there, sizeof there, "was the first id");
    return SIM_ERROR(SIM_EINVAL, "%s:%zu: hash_ids[%zu] = %llu %s here, but %s on line %zu; "
                     "expected hash_ids that form a prefix tree (a block id always extends "
                     "the same prefix)", ld->path, ld->line, k, (unsigned long long)id, here,
                     there, ld->first_line[j]);
}

/* Human-readable JSON type of `v`, for "is a string; expected ..." */
static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "an unknown JSON value"; /* unreachable with jansson 2.x */
}

/* Report `what` (a field name or "hash_ids[3]") holding a value of the wrong
 * JSON type.  Reals and strings are quoted so the user can find them. */
static int type_error(const struct loader *ld, const char *what, const json_t *v,
                      const char *expect)
{
    if (json_is_real(v))
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: %s is a real number (%.17g); expected %s",
                         ld->path, ld->line, what, json_real_value(v), expect);
    if (json_is_string(v))
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: %s is a string (\"%.40s\"); expected %s",
                         ld->path, ld->line, what, json_string_value(v), expect);
    return SIM_ERROR(SIM_EINVAL, "%s:%zu: %s is %s; expected %s", ld->path, ld->line,
                     what, json_kind(v), expect);
}

/* Fetch integer field `name` of `obj` into *out; reject a missing field or
 * a non-integer.  Range checks are left to the caller, which knows the
 * field's meaning. */
static int get_int(const struct loader *ld, const json_t *obj, const char *name,
                   const char *expect, json_int_t *out)
{
    const json_t *v = json_object_get(obj, name);
    if (!v)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: missing field \"%s\"; expected \"%s\": %s",
                         ld->path, ld->line, name, name, expect);
    if (!json_is_integer(v)) {
        char what[64];
        snprintf(what, sizeof what, "field \"%s\"", name);
        return type_error(ld, what, v, expect);
    }
    *out = json_integer_value(v);
    return SIM_OK;
}

/* A token count: 1..UINT32_MAX, since wl_trace_req stores uint32_t. */
static int get_length(const struct loader *ld, const json_t *obj, const char *name,
                      uint32_t *out)
{
    json_int_t v;
    int rc = get_int(ld, obj, name, EXPECT_LEN, &v);
    if (rc)
        return rc;
    if (v < 1)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: field \"%s\" is %" JSON_INTEGER_FORMAT
                         "; expected " EXPECT_LEN, ld->path, ld->line, name, v);
    if (v > (json_int_t)UINT32_MAX)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: field \"%s\" is %" JSON_INTEGER_FORMAT
                         "; expected " EXPECT_LEN " no larger than %lu", ld->path,
                         ld->line, name, v, (unsigned long)UINT32_MAX);
    *out = (uint32_t)v;
    return SIM_OK;
}

/* Make room for `more` ids.  Try-variant allocation: a trace is user input
 * of any size, so running out of memory is an error, not a crash. */
static int reserve_ids(struct loader *ld, size_t more)
{
    if (ld->ids_cap - ld->n_ids >= more)
        return SIM_OK;
    size_t cap = ld->ids_cap ? ld->ids_cap : INIT_IDS;
    while (cap - ld->n_ids < more) {
        if (cap > SIZE_MAX / 2 / sizeof *ld->ids)
            return SIM_ERROR(SIM_ENOMEM, "%s:%zu: too many hash ids to hold in memory; "
                             "expected a smaller trace", ld->path, ld->line);
        cap *= 2;
    }
    uint64_t *p = realloc(ld->ids, cap * sizeof *p);
    if (!p)
        return SIM_ERROR(SIM_ENOMEM, "%s:%zu: out of memory growing the hash id array "
                         "to %zu ids; expected a smaller trace", ld->path, ld->line, cap);
    ld->ids = p;
    ld->ids_cap = cap;
    return SIM_OK;
}

static int reserve_req(struct loader *ld)
{
    if (ld->n < ld->cap)
        return SIM_OK;
    size_t cap = ld->cap ? ld->cap : INIT_REQS;
    if (ld->cap) {
        if (cap > SIZE_MAX / 2 / sizeof *ld->reqs)
            return SIM_ERROR(SIM_ENOMEM, "%s:%zu: too many requests to hold in memory; "
                             "expected a smaller trace", ld->path, ld->line);
        cap *= 2;
    }
    wl_trace_req *p = realloc(ld->reqs, cap * sizeof *p);
    if (!p)
        return SIM_ERROR(SIM_ENOMEM, "%s:%zu: out of memory growing the request array "
                         "to %zu requests; expected a smaller trace", ld->path, ld->line,
                         cap);
    ld->reqs = p;
    if (*ld->key_field) {
        uint64_t *k = realloc(ld->keys, cap * sizeof *k);
        if (!k)
            return SIM_ERROR(SIM_ENOMEM, "%s:%zu: out of memory growing the key array; "
                             "expected a smaller trace", ld->path, ld->line);
        ld->keys = k;
    }
    ld->cap = cap;
    return SIM_OK;
}

/* Validate the object of one line and append its request and ids.  On
 * error the arrays may hold a partial request past ld->n; the caller frees
 * them, so no rollback is needed. */
static int add_request(struct loader *ld, const json_t *obj)
{
    json_int_t ts;
    wl_trace_req r;
    int rc;

    if ((rc = get_int(ld, obj, "timestamp", EXPECT_TS, &ts)))
        return rc;
    if (ts < 0)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: field \"timestamp\" is %" JSON_INTEGER_FORMAT
                         "; expected " EXPECT_TS, ld->path, ld->line, ts);
    if (ld->prev_line && ts < ld->prev_ts)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: field \"timestamp\" is %" JSON_INTEGER_FORMAT
                         ", smaller than %" JSON_INTEGER_FORMAT " on line %zu; expected "
                         "timestamps in non-decreasing order (ms since trace start)",
                         ld->path, ld->line, ts, ld->prev_ts, ld->prev_line);
    if ((rc = get_length(ld, obj, "input_length", &r.input_tokens)))
        return rc;
    if ((rc = get_length(ld, obj, "output_length", &r.output_tokens)))
        return rc;

    if (*ld->key_field) {
        const json_t *kv = json_object_get(obj, ld->key_field);
        if (!kv)
            return SIM_ERROR(SIM_EINVAL, "%s:%zu: missing key field \"%s\" "
                             "(workload.key_field); expected a string or integer field "
                             "\"%s\" on every line", ld->path, ld->line, ld->key_field,
                             ld->key_field);
        char what[96];
        snprintf(what, sizeof what, "key field \"%.60s\"", ld->key_field);
        char num[32];
        const char *txt;
        size_t tlen;
        if (json_is_string(kv)) {
            txt = json_string_value(kv);
            tlen = json_string_length(kv);
        } else if (json_is_integer(kv)) {
            tlen = (size_t)snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
                                    json_integer_value(kv));
            txt = num;
        } else {
            return type_error(ld, what, kv, "a string or an integer (the routing key)");
        }
        if ((rc = reserve_req(ld)))
            return rc;
        ld->keys[ld->n] = wl__trace_text_key(txt, tlen);
    }
    if (ld->synth) {
        if ((rc = reserve_req(ld)))
            return rc;
        r.t_s = (double)ts / 1000.0;
        r.n_ids = 0;
        r.ids_off = 0;
        ld->reqs[ld->n++] = r;
        ld->prev_ts = ts;
        ld->prev_line = ld->line;
        return SIM_OK;
    }

    const json_t *arr = json_object_get(obj, "hash_ids");
    if (!arr)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: missing field \"hash_ids\"; expected "
                         "\"hash_ids\": " EXPECT_IDS, ld->path, ld->line);
    if (!json_is_array(arr))
        return type_error(ld, "field \"hash_ids\"", arr, EXPECT_IDS);

    /* One id per started block: computed in 64 bits, as input_tokens +
     * block_tokens - 1 can exceed UINT32_MAX; the result cannot. */
    size_t len = json_array_size(arr);
    uint64_t want = ((uint64_t)r.input_tokens + ld->block_tokens - 1) / ld->block_tokens;
    if (len != want)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: field \"hash_ids\" has %zu ids but "
                         "input_length %lu needs ceil(%lu/%lu) = %llu; expected one id per "
                         "%lu-token block", ld->path, ld->line, len,
                         (unsigned long)r.input_tokens, (unsigned long)r.input_tokens,
                         (unsigned long)ld->block_tokens, (unsigned long long)want,
                         (unsigned long)ld->block_tokens);
    /* ids_off is 32-bit; 2^32 ids would be a 32 GiB array, far past any
     * published trace, so this limit is a guard, not a design constraint. */
    if (ld->n_ids + len > UINT32_MAX)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: trace has more than %lu hash ids; expected "
                         "a smaller trace", ld->path, ld->line, (unsigned long)UINT32_MAX);
    if ((rc = reserve_ids(ld, len)) || (rc = reserve_req(ld)))
        return rc;

    for (size_t k = 0; k < len; k++) {
        const json_t *v = json_array_get(arr, k);
        char what[48];
        snprintf(what, sizeof what, "hash_ids[%zu]", k);
        if (!json_is_integer(v))
            return type_error(ld, what, v, EXPECT_ID);
        json_int_t id = json_integer_value(v);
        if (id < 0)
            return SIM_ERROR(SIM_EINVAL, "%s:%zu: %s is %" JSON_INTEGER_FORMAT
                             "; expected " EXPECT_ID, ld->path, ld->line, what, id);
        ld->ids[ld->n_ids + k] = (uint64_t)id;
    }
    /* Checked after every id of the line is known to be valid, so a bad
     * id is reported as such rather than as a tree conflict. */
    for (size_t k = 0; k < len; k++) {
        uint64_t prev = k ? ld->ids[ld->n_ids + k - 1] + 1 : 0;
        if ((rc = tree_check(ld, ld->ids[ld->n_ids + k], prev, k)))
            return rc;
    }

    r.t_s = (double)ts / 1000.0;
    r.n_ids = (uint32_t)len;
    r.ids_off = (uint32_t)ld->n_ids;
    ld->reqs[ld->n++] = r;
    ld->n_ids += len;
    ld->prev_ts = ts;
    ld->prev_line = ld->line;
    return SIM_OK;
}

/* True if the line holds only JSON white space (a skipped blank line). */
static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

static int parse_line(struct loader *ld, const char *buf, size_t len)
{
    json_error_t jerr;
    /* Drop the line ending so that jansson's column for a truncated line
     * points at its end rather than at column 0 of a line that isn't
     * there. */
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    /* Duplicate keys are rejected: with them "the" value of a field would
     * depend on the parser. */
    json_t *obj = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: invalid JSON at column %d: %s; expected one "
                         "complete JSON object per line", ld->path, ld->line, jerr.column,
                         jerr.text);
    int rc;
    if (!json_is_object(obj))
        rc = SIM_ERROR(SIM_EINVAL, "%s:%zu: line is %s, not an object; expected one JSON "
                       "object per line", ld->path, ld->line, json_kind(obj));
    else
        rc = add_request(ld, obj);
    json_decref(obj);
    return rc;
}

/* Read one line (with its CR LF or LF, if any) into *buf (grown to at most
 * WL_MOONCAKE_LINE_MAX + 3 bytes: the body, CR, LF and a NUL) and its
 * length into *len; *len = 0 at the end of the file.  A line whose body is
 * longer than the bound, or that holds a NUL byte, is an error naming it
 * (ld->line is its number). */
static int read_line(struct loader *ld, FILE *f, char **buf, size_t *cap, size_t *len)
{
    size_t n = 0;
    int c;
    *len = 0;
    while ((c = getc_unlocked(f)) != EOF) {
        if (n == 0)
            ld->line++;
        if (c == '\0')
            return SIM_ERROR(SIM_EINVAL, "%s:%zu: NUL byte in line; expected a text JSONL "
                             "file, one JSON object per line", ld->path, ld->line);
        if (n == (size_t)WL_MOONCAKE_LINE_MAX + 2) /* no room for a line end */
            return SIM_ERROR(SIM_EINVAL, "%s:%zu: line longer than %u bytes; expected one "
                             "JSON object per line of at most %u bytes", ld->path, ld->line,
                             (unsigned)WL_MOONCAKE_LINE_MAX, (unsigned)WL_MOONCAKE_LINE_MAX);
        if (n + 2 > *cap) {
            size_t nc = *cap ? 2 * *cap : 4096;
            char *p = realloc(*buf, nc);
            if (!p)
                return SIM_ERROR(SIM_ENOMEM, "%s:%zu: out of memory reading a line; expected "
                                 "a smaller trace", ld->path, ld->line);
            *buf = p;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
        if (c == '\n')
            break;
    }
    if (ferror(f))
        return SIM_ERROR(SIM_EIO, "%s:%zu: cannot read: %s; expected a readable Mooncake "
                         "JSONL trace", ld->path, ld->line + (n == 0), strerror(errno));
    size_t body = n - (n > 0 && (*buf)[n - 1] == '\n');
    body -= body > 0 && (*buf)[body - 1] == '\r';
    if (body > WL_MOONCAKE_LINE_MAX)
        return SIM_ERROR(SIM_EINVAL, "%s:%zu: line longer than %u bytes; expected one JSON "
                         "object per line of at most %u bytes", ld->path, ld->line,
                         (unsigned)WL_MOONCAKE_LINE_MAX, (unsigned)WL_MOONCAKE_LINE_MAX);
    if (n)
        (*buf)[n] = '\0';
    *len = n;
    return SIM_OK;
}

int wl_mooncake_load(const char *path, uint32_t block_tokens, wl_trace **out)
{
    return wl__mooncake_load_opts(path, block_tokens, "", 0, 0, out);
}

int wl__mooncake_load_opts(const char *path, uint32_t block_tokens, const char *key_field,
                           int synth, uint64_t prefix_tokens, wl_trace **out)
{
    SIM_ALWAYS(path != NULL && out != NULL && key_field != NULL);
    if (block_tokens == 0)
        return SIM_ERROR(SIM_EINVAL, "%s: block size is 0 tokens; expected a positive "
                         "number of tokens per hash id (512 for Mooncake)", path);

    FILE *f;
    int rc = wl_infile_open(path, "Mooncake trace", &f, NULL); /* plain, .gz or .xz */
    if (rc)
        return rc;

    struct loader ld = {.path = path, .block_tokens = block_tokens, .key_field = key_field,
                        .synth = synth};
    wl_trace *t = NULL;
    char *buf = NULL;
    size_t bufcap = 0, got;
    if (sim_u64map_init(&ld.tree, 4096)) {
        fclose(f);
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory; expected a smaller trace", path);
    }

    for (;;) {
        if ((rc = read_line(&ld, f, &buf, &bufcap, &got)))
            goto fail;
        if (got == 0)
            break;
        char *s = buf;
        if (ld.line == 1 && got >= 2 && (((unsigned char)s[0] == 0xff && (unsigned char)s[1] == 0xfe) ||
                                         ((unsigned char)s[0] == 0xfe && (unsigned char)s[1] == 0xff))) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:1: UTF-16 byte order mark; expected a UTF-8 (or "
                           "ASCII) Mooncake JSONL trace", path);
            goto fail;
        }
        if (ld.line == 1 && got >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
            s += 3; /* a UTF-8 byte order mark is dropped */
            got -= 3;
        }
        if (is_blank(s, got))
            continue;
        if ((rc = parse_line(&ld, s, got)))
            goto fail;
    }
    if (ld.n == 0) {
        rc = SIM_ERROR(SIM_EINVAL, "%s:%zu: no requests (the file is empty or holds only "
                       "blank lines); expected one JSON object per line", path,
                       ld.line ? ld.line : 1);
        goto fail;
    }

    t = malloc(sizeof *t);
    char *pcopy = malloc(strlen(path) + 1);
    if (!t || !pcopy) {
        free(pcopy);
        rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory finishing the trace; expected a "
                       "smaller trace", path);
        goto fail;
    }
    strcpy(pcopy, path);
    /* Give back the doubling slack; if shrinking fails the block stays. */
    wl_trace_req *rs = realloc(ld.reqs, ld.n * sizeof *rs);
    uint64_t *is = realloc(ld.ids, (ld.n_ids ? ld.n_ids : 1) * sizeof *is);
    *t = (wl_trace){
        .n = ld.n,
        .reqs = rs ? rs : ld.reqs,
        .ids = is ? is : ld.ids,
        .n_ids_total = ld.n_ids,
        .block_tokens = block_tokens,
        .path = pcopy,
        .keys = ld.keys,
        .format = "mooncake",
        .prefix = synth ? (prefix_tokens ? "per_key" : "none") : "hashes",
        .prefix_tokens = synth ? prefix_tokens : 0,
    };
    free(buf);
    fclose(f);
    sim_u64map_fini(&ld.tree);
    free(ld.parent);
    free(ld.first_line);
    if (synth && (rc = wl__trace_synth_ids(t, prefix_tokens))) {
        wl_trace_destroy(t);
        return rc;
    }
    *out = t;
    return SIM_OK;

fail:
    free(t);
    free(buf);
    free(ld.reqs);
    free(ld.ids);
    sim_u64map_fini(&ld.tree);
    free(ld.parent);
    free(ld.first_line);
    free(ld.keys);
    fclose(f);
    return rc;
}

void wl_trace_destroy(wl_trace *t)
{
    if (!t)
        return;
    free(t->reqs);
    free(t->ids);
    free(t->path);
    free(t->keys);
    free(t);
}

double wl_trace_span_s(const wl_trace *t)
{
    if (t->n == 0)
        return 0.0;
    return t->reqs[t->n - 1].t_s - t->reqs[0].t_s;
}

double wl_trace_mean_rate(const wl_trace *t)
{
    double span = wl_trace_span_s(t);
    return span > 0.0 ? (double)t->n / span : 0.0;
}

uint64_t wl_trace_routing_key(const wl_trace *t, size_t i, uint32_t key_ids)
{
    SIM_ALWAYS(t != NULL && i < t->n);
    if (t->keys)
        return t->keys[i];
    const wl_trace_req *r = &t->reqs[i];
    size_t k = key_ids < r->n_ids ? key_ids : r->n_ids;
    const uint64_t *ids = t->ids + r->ids_off;
    /* Zeroed only to quiet gcc's maybe-uninitialized false positive for
     * k == 0 (XXH3 reads no byte then); 256 bytes cost nothing here. */
    unsigned char stackbuf[KEY_STACK_IDS * 8] = {0};
    /* Encode explicitly rather than hashing ids[] in place, so the key is
     * the same on big-endian hosts. */
    unsigned char *b = k <= KEY_STACK_IDS ? stackbuf : sim_xmalloc(k * 8);
    for (size_t j = 0; j < k; j++)
        for (int byte = 0; byte < 8; byte++)
            b[j * 8 + (size_t)byte] = (unsigned char)(ids[j] >> (8 * byte));
    uint64_t h = XXH3_64bits(b, k * 8);
    if (b != stackbuf)
        free(b);
    return h;
}

double wl_trace_detect_tick(const wl_trace *t)
{
    if (t->n < 2)
        return 0.0;
    double g = INFINITY;
    for (size_t i = 1; i < t->n; i++) {
        double d = t->reqs[i].t_s - t->reqs[i - 1].t_s;
        if (d >= 1.0 && d < g)
            g = d;
    }
    if (!isfinite(g))
        return 0.0;
    double T = floor(g + 0.5);
    const double t0 = t->reqs[0].t_s, tol = 0.01 * T;
    for (size_t i = 0; i < t->n; i++) {
        double d = t->reqs[i].t_s - t0;
        if (fabs(d - floor(d / T + 0.5) * T) > tol)
            return 0.0;
    }
    return T;
}
