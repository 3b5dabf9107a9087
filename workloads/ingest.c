/*
 * Traces ingested once per process; see ingest.h.
 */
#define _XOPEN_SOURCE 700 /* realpath (POSIX.1-2008 XSI) */
#define _DEFAULT_SOURCE    /* MAP_POPULATE (Linux) */
#include "workloads/ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "sim/core/fileio.h"
#include "sim/core/u64map.h"
#include "workloads/arrivals.h"
#include "workloads/internal.h"

/* One engine block size's table of a held trace: built in memory (h, off
 * malloc'd), or a read-only mapping of its cache file (map, map_len). */
typedef struct table {
    wl_trace_hashes pub;
    uint64_t *h, *off;
    void *map;
    size_t map_len;
} table;

/* One held trace. */
typedef struct entry {
    char *key;            /* canonical path + load options */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    wl_trace *t;
    unsigned refs;
    /* The trace's cache file (NULL: none applies) and what validates it. */
    char *cpath;
    uint64_t opts_hash, src_size, src_hash;
    table **tabs;         /* one per engine block size asked for */
    size_t n_tabs;
    struct entry *next;
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *held;
static wl_ingest_stats stats;

/* ---- load options and the cache file's place ---- */

static void opts_text(const wl_trace_opts *o, char *buf, size_t n)
{
    snprintf(buf, n, "crsim-trace-cache v%u|block_tokens=%u|format=%s|key_field=%s|"
             "prefix=%s|prefix_tokens=%llu", WL_INGEST_CACHE_VERSION, o->block_tokens,
             o->format && *o->format ? o->format : "auto", o->key_field ? o->key_field : "",
             o->prefix && *o->prefix ? o->prefix : "auto", (unsigned long long)o->prefix_tokens);
}

static uint64_t opts_hash(const wl_trace_opts *o)
{
    char txt[1024];
    opts_text(o, txt, sizeof txt);
    return XXH3_64bits(txt, strlen(txt));
}

/* mkdir -p of `dir` (modified in place and restored).  1 if it exists
 * afterwards as a writable folder. */
static int make_dirs(char *dir)
{
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            (void)mkdir(dir, 0777);
            *p = '/';
        }
    (void)mkdir(dir, 0777);
    return access(dir, W_OK | X_OK) == 0;
}

int wl_ingest_cache_path(const char *path, const wl_trace_opts *o, char *buf, size_t n)
{
    const char *mode = getenv("CRSIM_TRACE_CACHE");
    if (mode && strcmp(mode, "off") == 0)
        return 0;
    char real[PATH_MAX];
    if (!realpath(path, real))
        return 0;
    const uint64_t oh = opts_hash(o);
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    if (!mode || !*mode || strcmp(mode, "auto") == 0) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", slash && slash != real ? (int)(slash - real) : 1,
                 slash ? real : ".");
        if (access(dir, W_OK | X_OK) == 0) {
            int w = snprintf(buf, n, "%s/.%s.%016llx.crsim-cache", dir, base,
                             (unsigned long long)oh);
            return w > 0 && (size_t)w < n;
        }
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        char cdir[PATH_MAX];
        if (xdg && *xdg)
            snprintf(cdir, sizeof cdir, "%s/crsim/traces", xdg);
        else if (home && *home)
            snprintf(cdir, sizeof cdir, "%s/.cache/crsim/traces", home);
        else
            return 0;
        if (!make_dirs(cdir))
            return 0;
        /* Another folder: the path's hash keeps two traces of one name apart. */
        const uint64_t ph = XXH3_64bits_withSeed(real, strlen(real), oh);
        int w = snprintf(buf, n, "%s/%s.%016llx.crsim-cache", cdir, base,
                         (unsigned long long)ph);
        return w > 0 && (size_t)w < n;
    }
    char cdir[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s", mode);
    if (!make_dirs(cdir))
        return 0;
    const uint64_t ph = XXH3_64bits_withSeed(real, strlen(real), oh);
    int w = snprintf(buf, n, "%s/%s.%016llx.crsim-cache", cdir, base, (unsigned long long)ph);
    return w > 0 && (size_t)w < n;
}

/* ---- the cache file ---- */

/* Header of a cache file, native byte order (the endian field rejects a
 * file from another byte order; a cache is a local artefact). */
typedef struct cache_hdr {
    char magic[8];           /* "CRSIMTC\0" */
    uint32_t endian;         /* 0x01020304 */
    uint32_t version;        /* WL_INGEST_CACHE_VERSION */
    uint64_t opts_hash;      /* opts_hash of the load options */
    uint64_t src_size;       /* trace file bytes */
    uint64_t src_hash;       /* XXH3-64 of the trace file's bytes */
    uint64_t n, n_ids;       /* requests, hash ids */
    uint64_t prefix_tokens, n_skipped;
    uint32_t block_tokens, has_keys, format, prefix; /* format/prefix: indexes below */
    uint32_t req_size, pad;  /* sizeof(wl_trace_req) */
    uint64_t payload_hash;   /* XXH3-64 of everything after the header */
} cache_hdr;

static const char *const formats[] = {"mooncake", "azure", "burstgpt", NULL};
static const char *const prefixes[] = {"hashes", "none", "per_key", NULL};

/* XXH3-64 and size of the bytes of file `path`.  SIM_OK or SIM_EIO. */
static int file_hash(const char *path, uint64_t *size, uint64_t *hash)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return SIM_ERROR(SIM_EIO, "%s: cannot open trace: %s; expected a readable trace file",
                         path, strerror(errno));
    XXH3_state_t *st = XXH3_createState();
    char *buf = malloc(1 << 20);
    if (!st || !buf) {
        XXH3_freeState(st);
        free(buf);
        fclose(f);
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory hashing the trace", path);
    }
    XXH3_64bits_reset(st);
    uint64_t tot = 0;
    size_t got;
    while ((got = fread(buf, 1, 1 << 20, f)) > 0) {
        XXH3_64bits_update(st, buf, got);
        tot += got;
    }
    int bad = ferror(f);
    *hash = XXH3_64bits_digest(st);
    *size = tot;
    XXH3_freeState(st);
    free(buf);
    fclose(f);
    if (bad)
        return SIM_ERROR(SIM_EIO, "%s: cannot read trace; expected a readable trace file", path);
    return SIM_OK;
}

static int index_of(const char *const names[], const char *s)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* A stretch of a cache file's payload. */
typedef struct part {
    const void *p;
    size_t len; /* bytes */
} part;

/* XXH3-64 of the parts in order into *hash; 0 on success. */
static int parts_hash(const part *pt, size_t n, uint64_t *hash)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return 1;
    XXH3_64bits_reset(st);
    for (size_t i = 0; i < n; i++)
        XXH3_64bits_update(st, pt[i].p, pt[i].len);
    *hash = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return 0;
}

/* Open cache file `path` for reading, never through a symlink (a link
 * planted in the trace's folder; issue 38 D4).  NULL if absent or not
 * openable; *existed says whether something was there. */
static FILE *open_cache(const char *path, int *existed)
{
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f && fd >= 0)
        close(fd);
    *existed = fd >= 0 || errno == ELOOP;
    return f;
}

/* Read a cache file whose header must match (opts, size, hash); NULL if it
 * is absent or unusable (*existed says whether there was a file). */
static wl_trace *cache_read(const char *cpath, const char *path, uint64_t oh, uint64_t size,
                            uint64_t hash, int *existed)
{
    FILE *f = open_cache(cpath, existed);
    if (!f)
        return NULL;
    *existed = 1;
    cache_hdr h;
    wl_trace *t = NULL;
    wl_trace_req *reqs = NULL;
    uint64_t *ids = NULL, *keys = NULL;
    char *pcopy = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, "CRSIMTC", 8) != 0 ||
        h.endian != 0x01020304u || h.version != WL_INGEST_CACHE_VERSION ||
        h.opts_hash != oh || h.src_size != size || h.src_hash != hash ||
        h.req_size != sizeof(wl_trace_req) || h.n == 0 || h.n > (SIZE_MAX >> 5) ||
        h.n_ids > UINT32_MAX || h.has_keys > 1 || h.format > 2 || h.prefix > 2 ||
        h.block_tokens == 0)
        goto bad;
    reqs = malloc(h.n * sizeof *reqs);
    ids = malloc((h.n_ids ? h.n_ids : 1) * sizeof *ids);
    keys = h.has_keys ? malloc(h.n * sizeof *keys) : NULL;
    t = malloc(sizeof *t);
    pcopy = malloc(strlen(path) + 1);
    if (!reqs || !ids || (h.has_keys && !keys) || !t || !pcopy)
        goto bad;
    if (fread(reqs, sizeof *reqs, h.n, f) != h.n || fread(ids, sizeof *ids, h.n_ids, f) != h.n_ids ||
        (keys && fread(keys, sizeof *keys, h.n, f) != h.n) || fgetc(f) != EOF)
        goto bad;
    const part pt[] = {{reqs, h.n * sizeof *reqs},
                       {ids, h.n_ids * sizeof *ids},
                       {keys, keys ? h.n * sizeof *keys : 0}};
    uint64_t ph;
    if (parts_hash(pt, sizeof pt / sizeof *pt, &ph) || ph != h.payload_hash)
        goto bad;
    /* The invariants of wl_trace (mooncake.h), so that even a forged
     * file with a matching hash cannot make a replay read out of bounds. */
    for (uint64_t i = 0; i < h.n; i++) {
        const wl_trace_req *r = &reqs[i];
        if ((uint64_t)r->ids_off + r->n_ids > h.n_ids || r->input_tokens == 0 ||
            r->output_tokens == 0 || !(r->t_s >= 0) || (i && !(r->t_s >= reqs[i - 1].t_s)) ||
            (i && r->ids_off < reqs[i - 1].ids_off))
            goto bad;
    }
    fclose(f);
    strcpy(pcopy, path);
    *t = (wl_trace){.n = h.n, .reqs = reqs, .ids = ids, .n_ids_total = h.n_ids,
                    .block_tokens = h.block_tokens, .path = pcopy, .keys = keys,
                    .format = formats[h.format], .prefix = prefixes[h.prefix],
                    .prefix_tokens = h.prefix_tokens, .n_skipped = h.n_skipped};
    return t;
bad:
    free(reqs);
    free(ids);
    free(keys);
    free(t);
    free(pcopy);
    fclose(f);
    return NULL;
}

/* Write the header and the parts to `path` atomically (a temporary file
 * renamed over it: a cache file is never rewritten in place).  1 on
 * success, 0 otherwise (nothing left behind). */
static int write_atomic(const char *path, const void *hdr, size_t hlen, const part *pt, size_t n)
{
    /* mkstemp: a new name, created with O_CREAT | O_EXCL in the cache's
     * folder, so a planted file or symlink is never written through
     * (issue 38 D4); readable by all, as fopen would have made it. */
    char tmp[PATH_MAX + 160];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
        return 0;
    const int fd = mkstemp(tmp);
    if (fd < 0)
        return 0;
    FILE *f = fchmod(fd, 0644) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        close(fd);
        unlink(tmp);
        return 0;
    }
    int ok = fwrite(hdr, hlen, 1, f) == 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = pt[i].len == 0 || fwrite(pt[i].p, pt[i].len, 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) == 0)
        return 1;
    unlink(tmp);
    return 0;
}

/* Write `t` to cache file `cpath` atomically (a temporary file renamed
 * over it).  1 on success, 0 otherwise (nothing left behind). */
static int cache_write(const char *cpath, const wl_trace *t, uint64_t oh, uint64_t size,
                       uint64_t hash)
{
    int fi = index_of(formats, t->format), pi = index_of(prefixes, t->prefix);
    if (fi < 0 || pi < 0)
        return 0;
    cache_hdr h = {.magic = "CRSIMTC", .endian = 0x01020304u,
                   .version = WL_INGEST_CACHE_VERSION, .opts_hash = oh, .src_size = size,
                   .src_hash = hash, .n = t->n, .n_ids = t->n_ids_total,
                   .prefix_tokens = t->prefix_tokens, .n_skipped = t->n_skipped,
                   .block_tokens = t->block_tokens, .has_keys = t->keys != NULL,
                   .format = (uint32_t)fi, .prefix = (uint32_t)pi,
                   .req_size = sizeof(wl_trace_req)};
    const part pt[] = {{t->reqs, t->n * sizeof *t->reqs},
                       {t->ids, t->n_ids_total * sizeof *t->ids},
                       {t->keys, t->keys ? t->n * sizeof *t->keys : 0}};
    const size_t np = sizeof pt / sizeof *pt;
    return parts_hash(pt, np, &h.payload_hash) == 0 && write_atomic(cpath, &h, sizeof h, pt, np);
}

/* ---- the registry ---- */

static void entry_free(entry *e)
{
    for (size_t i = 0; i < e->n_tabs; i++) {
        if (e->tabs[i]->map)
            munmap(e->tabs[i]->map, e->tabs[i]->map_len);
        free(e->tabs[i]->h);
        free(e->tabs[i]->off);
        free(e->tabs[i]);
    }
    free(e->tabs);
    wl_trace_destroy(e->t);
    free(e->cpath);
    free(e->key);
    free(e);
}

/* Parse (or read from the cache) the trace into e->t, and record its
 * cache file in e; under the mutex. */
static int load(const char *path, const wl_trace_opts *o, off_t st_size, entry *e)
{
    wl_trace **out = &e->t;
    char cpath[PATH_MAX + 64];
    const int cached = st_size >= (off_t)WL_INGEST_CACHE_MIN_BYTES &&
                       wl_ingest_cache_path(path, o, cpath, sizeof cpath);
    uint64_t size = 0, hash = 0, oh = opts_hash(o);
    int existed = 0, rc;
    if (cached) {
        if ((rc = file_hash(path, &size, &hash)))
            return rc;
        e->cpath = strdup(cpath); /* (none on out of memory: no cache) */
        e->opts_hash = oh;
        e->src_size = size;
        e->src_hash = hash;
        wl_trace *t = cache_read(cpath, path, oh, size, hash, &existed);
        if (t) {
            stats.cache_hits++;
            *out = t;
            return SIM_OK;
        }
    }
    if ((rc = wl_trace_load(path, o, out)))
        return rc;
    stats.parsed++;
    if (cached && cache_write(cpath, *out, oh, size, hash)) {
        stats.cache_written++;
        stats.cache_rebuilt += existed;
    }
    return SIM_OK;
}

int wl_ingest_trace(const char *path, const wl_trace_opts *o, const wl_trace **out)
{
    SIM_ALWAYS(path && o && out);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open trace: %s; expected a readable trace file "
                         "(workload.trace)", path, strerror(errno));
    sim_file_note(path); /* read from memory or the cache: still an input (fileio.h) */
    char real[PATH_MAX], otxt[1024];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    opts_text(o, otxt, sizeof otxt);
    size_t klen = strlen(real) + strlen(otxt) + 2;
    char *key = malloc(klen);
    if (!key)
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory loading the trace", path);
    snprintf(key, klen, "%s\n%s", real, otxt);
    pthread_mutex_lock(&mu);
    for (entry *e = held; e; e = e->next)
        if (e->dev == sb.st_dev && e->ino == sb.st_ino && e->size == sb.st_size &&
            e->mtime.tv_sec == sb.st_mtim.tv_sec && e->mtime.tv_nsec == sb.st_mtim.tv_nsec &&
            strcmp(e->key, key) == 0) {
            e->refs++;
            stats.shared++;
            pthread_mutex_unlock(&mu);
            free(key);
            *out = e->t;
            return SIM_OK;
        }
    entry *e = calloc(1, sizeof *e);
    int rc = e ? load(path, o, sb.st_size, e)
               : SIM_ERROR(SIM_ENOMEM, "%s: out of memory loading the trace", path);
    if (rc) {
        pthread_mutex_unlock(&mu);
        if (e)
            free(e->cpath);
        free(e);
        free(key);
        return rc;
    }
    wl_trace *t = e->t;
    *e = (entry){.key = key, .dev = sb.st_dev, .ino = sb.st_ino, .size = sb.st_size,
                 .mtime = sb.st_mtim, .t = t, .refs = 1, .next = held, .cpath = e->cpath,
                 .opts_hash = e->opts_hash, .src_size = e->src_size, .src_hash = e->src_hash};
    held = e;
    pthread_mutex_unlock(&mu);
    *out = t;
    return SIM_OK;
}

void wl_ingest_release(const wl_trace *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&mu);
    entry **pp = &held;
    while (*pp && (*pp)->t != t)
        pp = &(*pp)->next;
    SIM_ALWAYS(*pp != NULL); /* not a held trace: a bug */
    entry *e = *pp;
    if (--e->refs == 0)
        *pp = e->next;
    else
        e = NULL;
    pthread_mutex_unlock(&mu);
    if (e)
        entry_free(e);
}

/* Build the table of `t` at block size bs; 0 on success. */
static int build_table(const wl_trace *t, uint32_t bs, table *tab)
{
    uint64_t tot = 0;
    for (size_t i = 0; i < t->n; i++)
        tot += wl__trace_req_blocks(t, i, bs);
    if (tot * sizeof(uint64_t) > WL_INGEST_HASH_MAX_BYTES)
        return 1;
    tab->off = malloc((t->n + 1) * sizeof *tab->off);
    tab->h = malloc((tot ? tot : 1) * sizeof *tab->h);
    if (!tab->off || !tab->h) {
        free(tab->off);
        free(tab->h);
        return 1;
    }
    /* A request's leading blocks are those of the last earlier request
     * with the same first hash id, as far as their ids agree (a block's
     * hash is a function of the ids up to its own): copied, not hashed
     * again (conversation traces repeat their prefixes). */
    sim_u64map last;
    if (sim_u64map_init(&last, 1024)) {
        free(tab->off);
        free(tab->h);
        return 1;
    }
    const uint32_t per = t->block_tokens / bs;
    uint64_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        tab->off[i] = k;
        const wl_trace_req *r = &t->reqs[i];
        uint32_t from = 0;
        if (r->n_ids > 0) {
            const uint64_t *ids = t->ids + r->ids_off;
            const uint32_t p = sim_u64map_get(&last, ids[0]);
            if (p != SIM_U64MAP_NONE) {
                const wl_trace_req *q = &t->reqs[p];
                const uint64_t *qids = t->ids + q->ids_off;
                const uint32_t lim = r->n_ids < q->n_ids ? r->n_ids : q->n_ids;
                uint32_t c = 0;
                while (c < lim && ids[c] == qids[c])
                    c++;
                const uint64_t nq = tab->off[p + 1] - tab->off[p];
                uint64_t m = (uint64_t)c * per;
                m = m < nq ? m : nq;
                const uint32_t nb = wl__trace_req_blocks(t, i, bs);
                from = (uint32_t)(m < nb ? m : nb);
                memcpy(tab->h + k, tab->h + tab->off[p], (size_t)from * sizeof *tab->h);
            }
            sim_u64map_put(&last, ids[0], (uint32_t)i);
        }
        k += wl__trace_req_hashes_from(t, i, bs, tab->h + k, from);
        tab->off[i + 1] = k; /* read above by later requests */
    }
    sim_u64map_fini(&last);
    tab->off[t->n] = k;
    tab->pub = (wl_trace_hashes){.block_size = bs, .h = tab->h, .off = tab->off};
    return 0;
}

/* ---- the block-hash table's cache file ---- */

#ifndef MAP_POPULATE /* not Linux: the pages fault in as they are read */
#define MAP_POPULATE 0
#endif

/* Header of a block-hash cache file (native byte order), followed by the
 * n + 1 offsets and the `total` hashes of the table, all uint64_t. */
typedef struct hash_hdr {
    char magic[8];         /* "CRSIMTH\0" */
    uint32_t endian;       /* 0x01020304 */
    uint32_t version;      /* WL_INGEST_CACHE_VERSION */
    uint64_t opts_hash, src_size, src_hash; /* as the trace's cache file */
    uint64_t n, total;     /* requests, hashes */
    uint32_t block_size, pad;
    uint64_t payload_hash; /* XXH3-64 of everything after the header */
} hash_hdr;

/* The hash cache file of entry e at block size bs: the trace cache's name
 * with ".bsN.crsim-hashes" for ".crsim-cache".  0 if none applies. */
static int hash_path(const entry *e, uint32_t bs, char *buf, size_t n)
{
    static const char suffix[] = ".crsim-cache";
    if (!e->cpath)
        return 0;
    const size_t len = strlen(e->cpath), sl = sizeof suffix - 1;
    if (len < sl || strcmp(e->cpath + len - sl, suffix) != 0)
        return 0;
    int w = snprintf(buf, n, "%.*s.bs%u.crsim-hashes", (int)(len - sl), e->cpath, bs);
    return w > 0 && (size_t)w < n;
}

/* Map the hash cache file `hpath` for e's trace at block size bs into
 * tab, read-only, if it is valid: header, size, payload hash, and every
 * request's offset range equal to its block count (so a forged file with
 * a matching hash cannot make a replay read out of bounds).  0 on success;
 * *existed says whether there was a file. */
static int hash_read(const entry *e, uint32_t bs, const char *hpath, table *tab, int *existed)
{
    FILE *f = open_cache(hpath, existed);
    if (!f)
        return 1;
    struct stat sb;
    hash_hdr h;
    const wl_trace *t = e->t;
    if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1 ||
        memcmp(h.magic, "CRSIMTH", 8) != 0 || h.endian != 0x01020304u ||
        h.version != WL_INGEST_CACHE_VERSION || h.opts_hash != e->opts_hash ||
        h.src_size != e->src_size || h.src_hash != e->src_hash || h.n != t->n ||
        h.block_size != bs || h.total > WL_INGEST_HASH_MAX_BYTES / sizeof(uint64_t) ||
        (uint64_t)sb.st_size != sizeof h + (h.n + 1 + h.total) * sizeof(uint64_t)) {
        fclose(f);
        return 1;
    }
    /* A cache file is only ever replaced by a rename, never rewritten in
     * place, so the mapping stays what was checked. */
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
                     fileno(f), 0);
    fclose(f);
    if (map == MAP_FAILED)
        return 1;
    const uint64_t *off = (const uint64_t *)((const char *)map + sizeof h);
    const uint64_t *hs = off + h.n + 1;
    int bad = XXH3_64bits(off, (size_t)sb.st_size - sizeof h) != h.payload_hash ||
              off[0] != 0 || off[h.n] != h.total;
    for (size_t i = 0; i < t->n && !bad; i++)
        bad = off[i + 1] < off[i] || off[i + 1] - off[i] != wl__trace_req_blocks(t, i, bs);
    if (bad) {
        munmap(map, (size_t)sb.st_size);
        return 1;
    }
    tab->map = map;
    tab->map_len = (size_t)sb.st_size;
    tab->pub = (wl_trace_hashes){.block_size = bs, .h = hs, .off = off};
    return 0;
}

/* Write tab (built in memory) for e's trace to `hpath` atomically (a
 * temporary file renamed over it).  1 on success, 0 otherwise (nothing
 * left behind). */
static int hash_write(const entry *e, const table *tab, const char *hpath)
{
    const uint64_t n = e->t->n, total = tab->off[n];
    hash_hdr h = {.magic = "CRSIMTH", .endian = 0x01020304u,
                  .version = WL_INGEST_CACHE_VERSION, .opts_hash = e->opts_hash,
                  .src_size = e->src_size, .src_hash = e->src_hash, .n = n, .total = total,
                  .block_size = tab->pub.block_size};
    const part pt[] = {{tab->off, (n + 1) * sizeof *tab->off}, {tab->h, total * sizeof *tab->h}};
    const size_t np = sizeof pt / sizeof *pt;
    return parts_hash(pt, np, &h.payload_hash) == 0 && write_atomic(hpath, &h, sizeof h, pt, np);
}

/* The table of e's trace at block size bs into tab: from its cache file
 * when valid, else built (and the cache file written).  0 on success. */
static int get_table(const entry *e, uint32_t bs, table *tab)
{
    char hpath[PATH_MAX + 96];
    const int cached = hash_path(e, bs, hpath, sizeof hpath);
    int existed = 0;
    if (cached && hash_read(e, bs, hpath, tab, &existed) == 0) {
        stats.hash_cache_hits++;
        return 0;
    }
    if (build_table(e->t, bs, tab))
        return 1;
    stats.hash_tables++;
    if (cached && hash_write(e, tab, hpath)) {
        stats.hash_cache_written++;
        stats.hash_cache_rebuilt += existed;
    }
    return 0;
}

const wl_trace_hashes *wl_ingest_hashes(const wl_trace *t, uint32_t block_size)
{
    if (!t || block_size == 0 || t->block_tokens % block_size != 0)
        return NULL;
    const wl_trace_hashes *res = NULL;
    pthread_mutex_lock(&mu);
    entry *e = held;
    while (e && e->t != t)
        e = e->next;
    for (size_t i = 0; e && i < e->n_tabs && !res; i++)
        if (e->tabs[i]->pub.block_size == block_size)
            res = &e->tabs[i]->pub;
    if (e && !res) {
        /* Each table is its own block: its address is handed out. */
        table *tab = calloc(1, sizeof *tab);
        table **grown = tab ? realloc(e->tabs, (e->n_tabs + 1) * sizeof *grown) : NULL;
        if (grown)
            e->tabs = grown;
        if (grown && get_table(e, block_size, tab) == 0) {
            e->tabs[e->n_tabs++] = tab;
            res = &tab->pub;
        } else {
            free(tab);
        }
    }
    pthread_mutex_unlock(&mu);
    return res;
}

/* ---- inter-arrival series ---- */

typedef struct iat_entry {
    char *key;            /* real path, column, as_gaps */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    wl_iat_series s;
    unsigned refs;
    struct iat_entry *next;
} iat_entry;

static iat_entry *held_iat;

int wl_ingest_iat(const char *path, const char *column, int as_gaps,
                  const struct wl_iat_series **out)
{
    SIM_ALWAYS(path && column && out);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open inter-arrival file: %s; expected a "
                         "readable CSV (workload.arrival.iat_file)", path, strerror(errno));
    char real[PATH_MAX];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    size_t klen = strlen(real) + strlen(column) + 8;
    char *key = malloc(klen);
    if (!key)
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory loading the inter-arrival file", path);
    snprintf(key, klen, "%s\n%s\n%d", real, column, as_gaps ? 1 : 0);
    pthread_mutex_lock(&mu);
    for (iat_entry *e = held_iat; e; e = e->next)
        if (e->dev == sb.st_dev && e->ino == sb.st_ino && e->size == sb.st_size &&
            e->mtime.tv_sec == sb.st_mtim.tv_sec && e->mtime.tv_nsec == sb.st_mtim.tv_nsec &&
            strcmp(e->key, key) == 0) {
            e->refs++;
            stats.iat_shared++;
            pthread_mutex_unlock(&mu);
            free(key);
            *out = &e->s;
            return SIM_OK;
        }
    iat_entry *e = calloc(1, sizeof *e);
    int rc = e ? wl_iat_load_csv(path, column, as_gaps, &e->s)
               : SIM_ERROR(SIM_ENOMEM, "%s: out of memory loading the inter-arrival file", path);
    if (rc) {
        pthread_mutex_unlock(&mu);
        free(e);
        free(key);
        return rc;
    }
    stats.iat_parsed++;
    e->key = key;
    e->dev = sb.st_dev;
    e->ino = sb.st_ino;
    e->size = sb.st_size;
    e->mtime = sb.st_mtim;
    e->refs = 1;
    e->next = held_iat;
    held_iat = e;
    pthread_mutex_unlock(&mu);
    *out = &e->s;
    return SIM_OK;
}

void wl_ingest_iat_release(const struct wl_iat_series *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&mu);
    iat_entry **pp = &held_iat;
    while (*pp && &(*pp)->s != s)
        pp = &(*pp)->next;
    SIM_ALWAYS(*pp != NULL); /* not a held series: a bug */
    iat_entry *e = *pp;
    if (--e->refs == 0)
        *pp = e->next;
    else
        e = NULL;
    pthread_mutex_unlock(&mu);
    if (e) {
        wl_iat_series_fini(&e->s);
        free(e->key);
        free(e);
    }
}

wl_ingest_stats wl_ingest_get_stats(void)
{
    pthread_mutex_lock(&mu);
    wl_ingest_stats s = stats;
    pthread_mutex_unlock(&mu);
    return s;
}
