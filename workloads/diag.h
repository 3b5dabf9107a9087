/*
 * The regime diagnostic (issue 7, "win/tie/lose before rollout"): a fast
 * estimate, from a request stream or from per-key rates and prefix sizes,
 * of the share of prompt tokens that re-see an identical cached prefix
 * within the engines' eviction window, under
 *
 *   (a) perfect affinity: every request of a key goes to the same
 *       destination (keys spread over R destinations), and
 *   (b) uniform spreading: every request goes to a uniformly random one
 *       of R destinations (what a cache-blind load balancer does),
 *
 * each destination holding `pool_tokens` of KV in an LRU prefix cache.
 * The difference (a) − (b) is the prefix work a cache-affinity router can
 * recover over plain load balancing: if it is small, affinity cannot win.
 *
 * Two forms:
 *   - wl_diag_stream: one pass over a wl_source, simulating one LRU block
 *     cache per virtual destination for each placement (exact LRU stack
 *     behaviour, no engine timing); the eviction window is measured as the
 *     mean age of evicted blocks.
 *   - wl_diag_rates: no stream; each key b has a Poisson rate λ_b, a
 *     reusable prefix of P_b tokens and a mean prompt of L_b tokens.  The
 *     eviction window T is the characteristic time of Che's approximation
 *     of LRU (H. Che, Y. Tung, Z. Wang, "Hierarchical Web caching systems:
 *     modeling, design and experimental results", IEEE JSAC 20(7), 2002),
 *     solved with gsl_root_fsolver_brent.
 * Method, assumptions, limits and measured accuracy: docs/diagnostic.md.
 */
#ifndef CRSIM_WORKLOADS_DIAG_H
#define CRSIM_WORKLOADS_DIAG_H

#include <stddef.h>
#include <stdint.h>

#include "workloads/request.h"

typedef struct wl_diag {
    double affinity_hit;      /* share of prompt tokens hit, perfect affinity (0..1) */
    double spread_hit;        /* share of prompt tokens hit, uniform spreading (0..1) */
    double recoverable;       /* affinity_hit − spread_hit (may be < 0) */
    double affinity_window_s; /* eviction window T per destination under
                                 affinity, s; INFINITY if nothing was
                                 (would be) evicted */
    double spread_window_s;   /* the same under spreading, s */
    uint32_t n_dest;          /* R */
    uint64_t pool_tokens;     /* KV pool per destination, tokens */
    /* Counts.  Stream form: requests consumed / counted (arrival >=
     * warmup), Σ prompt tokens and hit tokens of the counted requests,
     * evicted blocks.  Rates form: requests = number of keys with a
     * positive rate, counted = n, token sums 0, evictions 0. */
    uint64_t requests;
    uint64_t counted;
    uint64_t prompt_tokens;
    uint64_t affinity_hit_tokens;
    uint64_t spread_hit_tokens;
    uint64_t affinity_evictions;
    uint64_t spread_evictions;
    double span_s;            /* stream: last − first arrival, s; rates: 0 */
} wl_diag;

/* Key → destination map for the affinity placement: returns a destination
 * in [0, n_dest) for routing key `key`.  Must be a pure function. */
typedef uint32_t (*wl_diag_map_fn)(void *ctx, uint64_t key, uint32_t n_dest);

/* Options of wl_diag_stream_opts (zero-initialise, then set the
 * required fields). */
typedef struct wl_diag_opts {
    uint64_t max;             /* requests to consume; 0 = until the stream ends */
    uint32_t block_size;      /* tokens per block of the stream's hashes (>= 1, required) */
    uint32_t n_dest;          /* destinations R (>= 1, required) */
    uint64_t pool_tokens;     /* LRU cache per destination, tokens (>= block_size, required) */
    double warmup_s;          /* count hits only for requests arriving at or
                                 after this time, s (caches still warm up
                                 before); 0 = count all */
    wl_diag_map_fn affinity_map; /* NULL = XXH-style mix of the key mod R
                                    (a uniformly random assignment, like a
                                    consistent-hash ring) */
    void *affinity_ctx;       /* passed to affinity_map */
    uint64_t salt;            /* salt of the default key map and of the
                                 spreading choice (a mix of the request id) */
    uint32_t group;           /* blocks per cache unit; 0 or 1 = exact (one
                                 unit per block).  g > 1 caches a request's
                                 blocks in units of g (the last one shorter),
                                 each identified by the hash of its last
                                 block: g times fewer operations, and a shared
                                 prefix is rounded down to a unit boundary
                                 (at most g − 1 blocks lost per request; none
                                 when sharing happens at multiples of g blocks,
                                 e.g. g = 32 for Mooncake's 512-token ids
                                 with 16-token blocks) */
} wl_diag_opts;

/*
 * Stream form.  Consume up to `max` requests of `src` (0 = all) and, for
 * each placement, replay them on `n_dest` virtual destinations, each an
 * LRU cache of floor(pool_tokens / block_size) blocks of `block_size`
 * tokens.  Affinity sends a request to hash(key) mod R; spreading to
 * hash(request id) mod R.  A request hits the longest run of its leading
 * block hashes cached at its destination (capped, as in the engine, so at
 * least one prompt token is left to compute); then all its blocks are
 * touched or inserted (deepest first, so the first block ends warmest, as
 * the engine's tail-first release does), evicting the least recently used.
 * Hit shares are token-weighted: Σ hit tokens / Σ prompt tokens.
 * Equivalent to wl_diag_stream_opts with the other options zero.
 *
 * Cost: O(total blocks) time (one hash probe and an O(1) list move per
 * block and placement); memory O(min(distinct blocks, 2·R·pool blocks)).
 * Frees each request.  A stream without reuse gives affinity = spread = 0
 * (not an error).  Returns SIM_OK; SIM_EINVAL (block_size, n_dest or
 * pool_tokens 0, a pool smaller than one block, arrivals out of order);
 * SIM_ENOMEM.  On error *out is zeroed.
 */
int wl_diag_stream(wl_source src, uint64_t max, uint32_t block_size, uint32_t n_dest,
                   uint64_t pool_tokens, wl_diag *out);

/* Stream form with options (warm-up, a caller-supplied affinity map such
 * as a router's own consistent-hash ring, salt).  Same cost and returns. */
int wl_diag_stream_opts(wl_source src, const wl_diag_opts *o, wl_diag *out);

/*
 * Rates form.  Key b (b < n) receives Poisson arrivals at rate[b]
 * requests/s; its requests share a reusable prefix of prefix_tokens[b]
 * tokens and have a mean prompt of prompt_tokens[b] tokens (>= prefix;
 * the rest is unique to the request and never reused).  Under Che's
 * approximation an LRU cache of C tokens keeps an item iff it was touched
 * within the characteristic time T, the root of
 *
 *   Σ_b P_b·(1 − e^{−λ'_b·T}) + T·Σ_b λ'_b·(L_b − P_b) = C_eff,
 *
 * where the second term is the unique suffixes, each held for T after its
 * only use.  Affinity (keys spread over R destinations, mean field):
 * λ'_b = λ_b, C_eff = R·pool_tokens.  Spreading (each destination sees
 * every key at λ_b / R): λ'_b = λ_b / R, and the unique term divided by R,
 * C_eff = pool_tokens.  If the left side stays below C_eff for all T, the
 * cache never evicts (T = INFINITY, every repeated prefix hits).  Then
 *
 *   hit = Σ_b λ_b·P_b·(1 − e^{−λ'_b·T}) / Σ_b λ_b·L_b.
 *
 * Keys with rate 0 are ignored.  Cost O(n · Brent iterations), no
 * allocation beyond the GSL solver.  Returns SIM_OK; SIM_EINVAL (n 0,
 * n_dest 0, pool_tokens 0, a NaN, infinite or negative input, a prefix
 * longer than its prompt, a positive rate with a zero prompt, rates
 * summing to 0); SIM_ENOMEM.  On error *out is zeroed.
 */
int wl_diag_rates(const double *rate, const double *prefix_tokens, const double *prompt_tokens,
                  size_t n, uint32_t n_dest, uint64_t pool_tokens, wl_diag *out);

#endif
