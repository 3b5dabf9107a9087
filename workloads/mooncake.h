/*
 * Reader for Mooncake-format request traces (kvcache-ai/Mooncake,
 * FAST25-release/traces/, e.g. conversation_trace.jsonl).  These are the
 * only public traces that carry prefix-block identities next to arrival
 * times and lengths, so they are what the prefix caches and cache-aware
 * routing policies get replayed against.  The whole trace is loaded into two flat arrays (requests and
 * hash ids) so that a replay walks it without touching JSON again.
 *
 * Format: JSON Lines, one object per line with integer fields `timestamp`
 * (ms since trace start, non-negative, non-decreasing), `input_length` and
 * `output_length` (tokens, both >= 1) and `hash_ids` (array of non-negative
 * integer ids of the prompt's prefix blocks, one per `block_tokens` tokens:
 * len(hash_ids) == ceil(input_length / block_tokens)).  Other fields are
 * ignored, so traces with extra columns still load.  Lines holding only
 * white space (including a trailing empty line) are skipped; they still
 * count for line numbers in messages.  A UTF-8 byte order mark at the
 * start of the file is dropped.
 *
 * The hash ids of a trace must form a prefix tree: a block id stands for
 * the whole prefix up to and including its block (Mooncake derives each
 * id from the previous one), so the same id must always follow the same id
 * (or always be the first of its request).  The published traces satisfy
 * this (conversation_trace: 182,790 distinct ids, no conflict); a trace
 * that does not would make the prefix caches share blocks between
 * different prompts, so it is rejected.
 */
#ifndef CRSIM_WORKLOADS_MOONCAKE_H
#define CRSIM_WORKLOADS_MOONCAKE_H

#include <stddef.h>
#include <stdint.h>

/* Longest line accepted, bytes, without its line end: 1 MiB, room for
 * about 140,000 hash ids (a 70-million-token prompt at 512 tokens per id);
 * the longest line of conversation_trace is 2,054 bytes. */
#define WL_MOONCAKE_LINE_MAX 1048576u

/* Tokens per hash id in the published Mooncake traces. */
#define WL_MOONCAKE_BLOCK_TOKENS 512u

/*
 * Default number of leading hash ids that form a routing key
 * (wl_trace_routing_key).  In the Mooncake conversation trace every request
 * starts with block 0 (a shared system prompt), so the first id alone puts
 * every request in one group; the first two ids distinguish conversations
 * and contexts (7,373 groups over 12,031 requests in conversation_trace).
 */
#define WL_MOONCAKE_KEY_IDS 2u

/* One request of a trace.  Plain data, owned by the wl_trace holding it. */
typedef struct wl_trace_req {
    double t_s;              /* arrival time, seconds since trace start (timestamp/1000) */
    uint32_t input_tokens;   /* prompt length, tokens (>= 1) */
    uint32_t output_tokens;  /* output length, tokens (>= 1) */
    uint32_t n_ids;          /* number of hash ids (ceil(input_tokens / block_tokens)) */
    uint32_t ids_off;        /* offset of this request's ids in trace->ids */
} wl_trace_req;

/*
 * A loaded trace.  The struct is public rather than opaque (STYLE.md §2)
 * because replays iterate reqs[] and ids[] in their hot loop; treat it as
 * read-only.  Every pointer in it is owned by the trace and freed by
 * wl_trace_destroy().  Invariants: reqs[i].ids_off + reqs[i].n_ids <=
 * n_ids_total, offsets increase with i, and t_s is non-decreasing.
 */
typedef struct wl_trace {
    size_t n;                /* requests (>= 1 for a loaded trace) */
    wl_trace_req *reqs;      /* n entries, in file order */
    uint64_t *ids;           /* all hash ids, concatenated in request order */
    size_t n_ids_total;      /* entries in ids */
    uint32_t block_tokens;   /* tokens per hash id (512 for Mooncake) */
    char *path;              /* copy of the path, for messages */
    uint64_t *keys;          /* n routing keys chosen at load (workload.key_field,
                                or one per request for synthetic ids), or NULL:
                                then the first-hash-ids rule applies */
    const char *format;      /* "mooncake", "azure" or "burstgpt" (static) */
    const char *prefix;      /* prefix model: "hashes" (the trace's ids), "none"
                                or "per_key" (synthetic ids; static string) */
    uint64_t prefix_tokens;  /* per_key: shared tokens per key */
    size_t n_skipped;        /* CSV rows skipped for 0 tokens (failed requests) */
} wl_trace;

/*
 * What wl_trace_load reads and how (the workload.trace_* keys, see
 * docs/trace-replay.md).  Strings are not owned and may be NULL for the
 * default shown.
 */
typedef struct wl_trace_opts {
    uint32_t block_tokens;   /* tokens per (real or synthetic) id; > 0 */
    const char *format;      /* "auto" (NULL), "mooncake", "azure", "burstgpt" */
    const char *key_field;   /* JSONL field or CSV column whose value is the
                                routing key; "" (NULL) = first-hash-ids rule */
    const char *prefix;      /* "auto" (NULL): hashes when the format has them
                                (Mooncake JSONL), else none; "hashes", "none",
                                "per_key" */
    uint64_t prefix_tokens;  /* per_key: shared prefix per key, tokens; a
                                positive multiple of block_tokens */
} wl_trace_opts;

/*
 * Load the trace at `path` as `o` says: the Mooncake JSONL reader below
 * (with key_field and synthetic prefixes) or the CSV readers of
 * workloads/trace_csv.h (Azure LLM inference 2023/2024, BurstGPT).
 * "auto" decides by the first non-blank line: '{' is JSONL, a CSV header
 * with ContextTokens is Azure, one with "Request tokens" is BurstGPT.
 * Keys from key_field are XXH3_64bits (seed 0) of the value's text (a
 * string's bytes, an integer's decimal digits); with synthetic ids and no
 * key_field every request is its own key (XXH3 of its 0-based row index as
 * a little-endian uint64).  Synthetic ids (prefix none/per_key): block k
 * of request i is shared by its key when k·block_tokens < prefix_tokens
 * (per_key; id = low 47 bits of XXH3 of (key, k) as two little-endian
 * uint64), else unique (id = 2^47 + running block number).
 * Returns SIM_OK, or SIM_EIO/SIM_EINVAL/SIM_ENOMEM as wl_mooncake_load,
 * plus SIM_EINVAL for an unknown format or prefix, a header of no known
 * format, prefix "hashes" on a format without ids, per_key without a
 * positive multiple of block_tokens, and a missing key field
 * ("PATH:LINE: missing key field \"session_id\" (workload.key_field);
 * expected ...").  On error *out is unchanged.
 */
int wl_trace_load(const char *path, const wl_trace_opts *o, wl_trace **out);

/*
 * The arrival tick of the trace, seconds, for workload.tick_s: auto.  Let g
 * be the smallest gap >= 1 s between consecutive timestamps and T = g
 * rounded to whole seconds; if every timestamp lies within 1 % of T of a
 * multiple of T (measured from the first), the trace was recorded in ticks
 * of T s and T is returned; otherwise (or with no gap >= 1 s) 0: the
 * stamps are used as recorded.  The Mooncake conversation trace gives 3
 * (stamps are multiples of 3,000 ms within -1..+3 ms).  Cannot fail.
 */
double wl_trace_detect_tick(const wl_trace *t);

/*
 * Load the Mooncake JSONL trace at `path`, checking every line, with
 * `block_tokens` tokens per hash id (pass WL_MOONCAKE_BLOCK_TOKENS for the
 * published traces).  On success stores a new trace in *out and returns
 * SIM_OK; the caller owns it and frees it with wl_trace_destroy().
 * Arrival times are converted from ms to seconds (t_s = timestamp / 1000),
 * exact for timestamps below 2^53 ms.
 *
 * Returns (see codes):
 *   SIM_EIO    the file cannot be opened or read (the message names the path
 *              and the system's reason), or is not a regular file (a FIFO,
 *              device or directory is refused before any read:
 *              sim_file_open);
 *   SIM_EINVAL bad input: block_tokens is 0; the file holds no request;
 *              a line is not valid JSON (jansson's reason, duplicate keys
 *              included), not an object, lacks a field, has a field of the
 *              wrong type (strings and reals are rejected where integers are
 *              expected), an input_length outside 1..UINT32_MAX, an
 *              output_length outside 1..UINT32_MAX, a negative or
 *              non-integer hash id, a hash_ids length other than
 *              ceil(input_length / block_tokens), a timestamp that is
 *              negative or smaller than the previous request's, a line
 *              longer than WL_MOONCAKE_LINE_MAX bytes or holding a NUL byte,
 *              a UTF-16 byte order mark, or hash ids that are not a prefix
 *              tree ("PATH:LINE: hash_ids[2] = 7 follows 3 here, but
 *              followed 5 on line 4; expected hash_ids that form a prefix
 *              tree ...");
 *   SIM_ENOMEM an allocation failed.
 * Every message is one line, "PATH:LINE: <what is wrong>; expected <form>",
 * retrievable with sim_errmsg(); an empty file is reported at line 1, a
 * file of blank lines at its last line.  On error nothing is allocated and
 * *out is unchanged.  `path` and `out` must not be NULL.
 */
int wl_mooncake_load(const char *path, uint32_t block_tokens, wl_trace **out);

/* Free a trace and everything it owns.  Accepts NULL.  Cannot fail. */
void wl_trace_destroy(wl_trace *t);

/*
 * Span of the trace in seconds: arrival time of the last request minus that
 * of the first (0 for a trace of one request, or of requests that all
 * arrive at once).  Cannot fail.
 */
double wl_trace_span_s(const wl_trace *t);

/*
 * Mean arrival rate in requests per second: n / wl_trace_span_s(t).  When
 * the span is 0 (one request, or all at the same instant) the rate is
 * undefined and this returns 0.0, so callers that scale by the rate must
 * check for 0 rather than receive an infinity.  Cannot fail.
 */
double wl_trace_mean_rate(const wl_trace *t);

/*
 * Routing key of request `i` (< t->n): t->keys[i] when the trace has keys
 * (workload.key_field, synthetic ids), else the XXH3_64bits hash (seed 0) of its
 * first min(key_ids, n_ids) hash ids, each encoded as a little-endian
 * uint64, so keys are the same on every host.  Requests that share those
 * leading prefix blocks get the same key; WL_MOONCAKE_KEY_IDS (2) is the
 * documented default.  key_ids == 0 hashes the empty string, giving every
 * request the same key.  Cannot fail: a key of more than 32 ids is encoded
 * in a temporary buffer from sim_xmalloc, which aborts on exhaustion, and
 * an out-of-range `i` is a bug that aborts.
 */
uint64_t wl_trace_routing_key(const wl_trace *t, size_t i, uint32_t key_ids);

/* Internal to workloads/ (mooncake.c, trace_csv.c): give `t` (whose reqs
 * hold input_tokens and whose keys are set) synthetic ids by the rule of
 * wl_trace_load; prefix_tokens 0 means none.  SIM_OK or SIM_ENOMEM. */
int wl__trace_synth_ids(wl_trace *t, uint64_t prefix_tokens);

/* Internal (trace_csv.c): the JSONL loader behind wl_mooncake_load, with a
 * key field ("" = none) and, if `synth`, hash_ids ignored and synthetic ids
 * of wl__trace_synth_ids(prefix_tokens) given instead. */
int wl__mooncake_load_opts(const char *path, uint32_t block_tokens, const char *key_field,
                           int synth, uint64_t prefix_tokens, wl_trace **out);

/* Internal: XXH3_64bits of `len` bytes, the key of a field's text. */
uint64_t wl__trace_text_key(const char *s, size_t len);

#endif
