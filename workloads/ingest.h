/*
 * Traces ingested once per process (issue 18).  A trace file (Mooncake
 * JSONL, Azure or BurstGPT CSV; plain, .gz or .xz) is parsed once per
 * process and shared read-only by every run and sweep point that names
 * it with the same load options, and its engine-block hashes (the chained
 * hashes a replay hands to the cluster, workloads/replay.h) are computed
 * once per engine block size and shared too, so a run's stream costs no
 * parsing, no hashing and no allocation per request.
 *
 * Optionally the parsed trace is kept in a compact binary cache file
 * (docs/trace-replay.md, "Trace cache"), chosen by the environment
 * variable CRSIM_TRACE_CACHE:
 *   unset, "" or "auto"  beside the trace, as the hidden file
 *                        ".NAME.HHHHHHHHHHHHHHHH.crsim-cache" (H: the load
 *                        options' hash), or, when the trace's folder is not
 *                        writable, under $XDG_CACHE_HOME/crsim/traces
 *                        (default ~/.cache/crsim/traces);
 *   "off"                no cache: every process parses the trace;
 *   any other value      the folder to keep cache files in (created).
 * A cache file is used only when it records the trace file's exact size
 * and the XXH3-64 hash of all its bytes (read and hashed at every load:
 * an edited trace is never replayed from a stale cache; touching a file
 * without changing it keeps its cache), the same load options and this
 * cache format, and its own payload hash matches; anything else (stale,
 * truncated, corrupt, another format version) is ignored and the cache is
 * rebuilt from the trace.  Beside it, the block-hash table of each engine
 * block size asked for (wl_ingest_hashes) is kept as
 * ".NAME.HHHHHHHHHHHHHHHH.bsN.crsim-hashes", validated the same way (plus
 * block size, request count, file length and every request's block count)
 * and mapped read-only instead of computed into fresh memory.  Cache files
 * are only ever replaced by a rename, never rewritten in place.  Traces
 * smaller than WL_INGEST_CACHE_MIN_BYTES
 * are not cached (they parse in milliseconds).  A cache that cannot be
 * written is skipped silently: the cache only ever saves time.
 *
 * Thread safety: every function here may be called from any thread; one
 * process-wide mutex guards the registry.  What they return is immutable
 * until released, so runs on several threads read it without locks.
 */
#ifndef CRSIM_WORKLOADS_INGEST_H
#define CRSIM_WORKLOADS_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "workloads/mooncake.h"

/* Smallest trace file (bytes on disk) that gets a cache file: 64 KiB.
 * Below it parsing takes a few milliseconds (the cache would save nothing
 * and litter fixture folders). */
#define WL_INGEST_CACHE_MIN_BYTES 65536u

/* Largest shared block-hash table, bytes: 1 GiB (2^27 hashes; the
 * Mooncake conversation trace needs 72 MB at 16-token blocks).  A trace
 * needing more is replayed with per-request hashing as before (the same
 * hashes, computed per request). */
#define WL_INGEST_HASH_MAX_BYTES (1ull << 30)

/* Version of the cache file format and of the loaders it stores the
 * output of; a cache file of another version is rebuilt.  Bump it when
 * a reader's result changes. */
#define WL_INGEST_CACHE_VERSION 1u

/*
 * The engine-block hashes of every request of a trace at one engine block
 * size: request i's wl_request.blocks are h[off[i]] .. h[off[i+1] − 1],
 * exactly what wl_replay_next computes for it (workloads/replay.h).
 * Owned by the registry; valid while the trace is held.
 */
typedef struct wl_trace_hashes {
    uint32_t block_size;  /* engine block, tokens */
    const uint64_t *h;    /* all hashes, request after request */
    const uint64_t *off;  /* n + 1 offsets into h */
} wl_trace_hashes;

/*
 * The trace at `path` loaded with options `o` (as wl_trace_load), shared:
 * the first call in the process parses it (or reads its cache file), later
 * calls with the same file (same device, inode, size and modification
 * time) and options return the same trace.  *out is read-only and stays
 * valid until the matching wl_ingest_release.  Returns SIM_OK or the
 * errors of wl_trace_load (and SIM_EIO when the file cannot be stat'ed);
 * on error *out is unchanged.
 */
int wl_ingest_trace(const char *path, const wl_trace_opts *o, const wl_trace **out);

/*
 * Release one hold of a trace from wl_ingest_trace; the last release
 * frees it and its hash tables.  Accepts NULL.  A pointer that is not a
 * held trace is a bug (aborts).
 */
void wl_ingest_release(const wl_trace *t);

/*
 * The shared block-hash table of held trace `t` at engine block size
 * `block_size` (tokens; must divide t->block_tokens), on the first call
 * mapped from its cache file when one is valid, else built (O(total
 * blocks)) and its cache file written; or NULL when the table would exceed
 * WL_INGEST_HASH_MAX_BYTES, when `t` was not obtained from
 * wl_ingest_trace, or when its memory cannot be allocated: the caller
 * then hashes per request.  Valid until the trace's last release.
 * Cannot fail otherwise.
 */
const wl_trace_hashes *wl_ingest_hashes(const wl_trace *t, uint32_t block_size);

/*
 * The recorded inter-arrival gaps of column `column` of the CSV at `path`
 * (as wl_iat_load_csv, workloads/arrivals.h), shared like a trace: parsed
 * on the first call in the process, the same series for later calls with
 * the same file (device, inode, size, modification time), column and
 * `as_gaps`.  *out is read-only until the matching wl_ingest_iat_release.
 * Returns SIM_OK or the errors of wl_iat_load_csv (SIM_EIO when the file
 * cannot be stat'ed); on error *out is unchanged.  Not cached on disk.
 */
struct wl_iat_series;
int wl_ingest_iat(const char *path, const char *column, int as_gaps,
                  const struct wl_iat_series **out);

/* Release one hold from wl_ingest_iat.  Accepts NULL; a pointer that is
 * not a held series is a bug (aborts). */
void wl_ingest_iat_release(const struct wl_iat_series *s);

/* Counters of this process's ingestion, for tests and benchmarks. */
typedef struct wl_ingest_stats {
    uint64_t parsed;        /* traces parsed from their file */
    uint64_t shared;        /* wl_ingest_trace calls served by a held trace */
    uint64_t cache_hits;    /* traces read from a valid cache file */
    uint64_t cache_rebuilt; /* cache files found but unusable (stale,
                               corrupt, other version) and rewritten */
    uint64_t cache_written; /* cache files written */
    uint64_t hash_tables;   /* block-hash tables built (hashed) */
    uint64_t hash_cache_hits;    /* block-hash tables mapped from a valid cache file */
    uint64_t hash_cache_rebuilt; /* block-hash cache files found unusable and rewritten */
    uint64_t hash_cache_written; /* block-hash cache files written */
    uint64_t iat_parsed;    /* inter-arrival CSVs parsed (wl_ingest_iat) */
    uint64_t iat_shared;    /* wl_ingest_iat calls served by a held series */
} wl_ingest_stats;

/* The counters so far.  Cannot fail. */
wl_ingest_stats wl_ingest_get_stats(void);

/*
 * The cache file that a trace at `path` with options `o` uses under the
 * current CRSIM_TRACE_CACHE, into buf (n bytes); returns 1, or 0 when no
 * cache applies ("off", or no writable place).  Cannot fail.
 */
int wl_ingest_cache_path(const char *path, const wl_trace_opts *o, char *buf, size_t n);

#endif
