/*
 * Key-rate vectors: how a workload's traffic is split over its business
 * keys (tenants, applications, system prompts).  This module draws the
 * population (lognormal with an optional share cap, Zipf-Mandelbrot, or a
 * CSV file), fits a family's shape parameter to a target Gini coefficient
 * with GSL's Brent root finder, keeps the active set (top-K keys), injects
 * "whale" keys holding a chosen share of traffic, and describes any vector
 * by the statistics the paper reports (Gini, top-1/4/10 % share, largest
 * share).  A vector is plain data; the request generator (synth.h) turns it
 * into a request stream.
 */
#ifndef CRSIM_WORKLOADS_KEYRATES_H
#define CRSIM_WORKLOADS_KEYRATES_H

#include <stddef.h>
#include <stdint.h>

#include "sim/core/xenum.h"

/*
 * A key-rate vector.  Entry i is key `id[i]` with weight `rate[i]` (> 0,
 * finite).  Weights are relative unless a function says otherwise
 * (wl_keyrates_scale makes them requests/s).  Every function that builds a
 * vector leaves it sorted by decreasing rate (ties by increasing id), so
 * entry 0 is the busiest key.  Key ids are stable identities: drawn keys
 * are numbered by their rank in the drawn population (0 = busiest), file
 * keys by their row order, whales after all others.  Public rather than
 * opaque (STYLE.md §2) because it is plain data that callers iterate; both
 * arrays are owned by the struct and freed by wl_keyrates_fini().
 */
typedef struct wl_keyrates {
    size_t n;       /* number of keys */
    double *rate;   /* n weights (relative, or requests/s after scaling) */
    uint64_t *id;   /* n key ids */
} wl_keyrates;

/* Rate-distribution families (workload.keys.distribution), defined once
 * (X-macro, sim/core/xenum.h): X(constant, name).  The order is the enum value;
 * append only.
 *   LOGNORMAL  rate ∝ exp(σ·Z), Z ~ N(0,1), optional share cap
 *   ZIPF       rate ∝ 1 / (rank + q)^s, rank = 1..n (Zipf-Mandelbrot)
 *   FILE       CSV "key,rate"
 *   SERVEGEN   one model's folder of ServeGen per-client CSVs: key =
 *              client, rate = its mean rate_rps */
#define WL_KEYDISTS(X) \
    X(WL_KEYS_LOGNORMAL, lognormal) X(WL_KEYS_ZIPF, zipf) X(WL_KEYS_FILE, file) \
    X(WL_KEYS_SERVEGEN, servegen)

/* WL_KEYS_N is the number of families. */
enum wl_keydist { WL_KEYDISTS(SIM_XENUM_CONST) WL_KEYS_N };

/* Names of the families by enum wl_keydist (from WL_KEYDISTS),
 * NULL-terminated; the choices of workload.keys.distribution. */
extern const char *const wl_keydist_names[];

/* Parse a family name ("lognormal", "zipf", "file", "servegen") into *out.
 * Returns SIM_OK or SIM_EINVAL ("unknown key-rate distribution 'X';
 * expected one of: lognormal, zipf, file, servegen").  On error *out is
 * unchanged. */
int wl_keydist_parse(const char *name, enum wl_keydist *out);

/* Name of a family ("lognormal", ...); "?" for an invalid value.  Cannot fail. */
const char *wl_keydist_name(enum wl_keydist d);

/*
 * Draw `n` lognormal weights w_i = exp(σ·Z_i) (GSL gsl_ran_lognormal with
 * ζ = 0; the median weight is 1, the mean exp(σ²/2)) from PCG stream
 * (`seed`, sim_rng_substream(SIM_STREAM_KEYS, 1)) — the *workload* seed, not
 * the run seed, so the population is fixed across runs.  The Z_i do not
 * depend on σ, so the same seed gives the same ranking for every σ (this is
 * what makes wl_keyrates_fit_gini a smooth 1-D problem).  If `cap` is in
 * (0, 1), shares are then capped by wl_keyrates_cap(); cap = 0 means no cap.
 * Writes a new sorted vector to *out (caller frees with wl_keyrates_fini).
 * Returns SIM_OK; SIM_EINVAL if n = 0, σ is not finite and >= 0, cap is not
 * in [0, 1), or n·cap < 1 (no vector of n keys can keep every share below
 * cap); SIM_ENOMEM.  On error *out is zeroed.
 */
int wl_keyrates_lognormal(size_t n, double sigma, double cap, uint64_t seed, wl_keyrates *out);

/*
 * Zipf-Mandelbrot weights w_rank = 1 / (rank + q)^s for rank = 1..n
 * (deterministic; q = 0 is plain Zipf), then the share cap as for the
 * lognormal.  Returns SIM_OK; SIM_EINVAL if n = 0, s is not finite and
 * >= 0, q is not finite and > -1, or the cap is bad (as above); SIM_ENOMEM.
 */
int wl_keyrates_zipf(size_t n, double s, double q, double cap, wl_keyrates *out);

/*
 * Read a CSV of "key,rate" rows from `path`: one key a line, the key any
 * non-empty text without a comma (it is only checked, not kept: ids are the
 * row order from 0), the rate a finite number > 0 in any unit (only ratios
 * matter until wl_keyrates_scale).  A first line whose rate field is not a
 * number is taken as a header; blank lines and lines starting with '#' are
 * skipped.  Returns SIM_OK; SIM_EIO (cannot open/read: "PATH: cannot open
 * key-rate file: REASON"); SIM_EINVAL, one line naming the file and line:
 * "PATH:LINE: rate 'X' is not a number; expected key,rate with a rate > 0
 * (requests/s)", a zero, negative, NaN or infinite rate, a row without
 * exactly two fields, an empty key, or a file with no data row
 * ("PATH: no key-rate rows; expected ..."), a rate written in hexadecimal
 * ("PATH:LINE: rate '0x10' is hexadecimal; ..."; strtod would read 16), a
 * key seen before ("PATH:LINE: key 'a' again (first on line 2); expected
 * each key once"), rates whose sum overflows ("PATH: the 2 key rates sum
 * to inf (the sum overflows); ..."), and the CSV reader's errors (binary
 * data, over-long lines: workloads/csv.h); SIM_EIO also for a FIFO, device
 * or directory (refused before any read); SIM_ENOMEM.  A UTF-8 byte order
 * mark is dropped.  On error *out is zeroed.
 */
int wl_keyrates_load_csv(const char *path, wl_keyrates *out);

/* As wl_keyrates_load_csv, also returning the key names: (*names)[id] is
 * the key text of row id (an array of out->n strings; free each and the
 * array, or call wl_names_free).  *names is NULL on error. */
int wl_keyrates_load_csv_names(const char *path, wl_keyrates *out, char ***names);

/* Free an array of `n` strings from wl_keyrates_load_csv_names.  Accepts
 * NULL. */
void wl_names_free(char **names, size_t n);

/*
 * Water-filling share cap: scale the vector so no key holds more than
 * `cap` of the total, keeping the order and the ratios of uncapped keys.
 * The top k keys get exactly cap·T and the rest are scaled by a common
 * factor, with k the smallest count for which the first uncapped key stays
 * below the cap.  The total T is kept.  `kr` must be sorted (as every
 * constructor leaves it).  Returns SIM_OK, or SIM_EINVAL if cap is not in
 * (0, 1) or n·cap < 1; on error `kr` is unchanged.  O(n).
 */
int wl_keyrates_cap(wl_keyrates *kr, double cap);

/*
 * The process-wide memo of the key-rate constructors (round 5 of
 * docs/performance.md): wl_keyrates_lognormal and wl_keyrates_fit_gini
 * keep the sorted normal deviates of the last 4 (n, seed) pairs (up to
 * 2^22 keys each) and the fitted shape of the last 16 (family, n, Gini,
 * cap, q, seed) inputs, keyed bit for bit on every input, and return
 * copies: results are identical to a fresh computation, only faster when
 * the same population is built again in one process (every candidate of
 * `crsim fit`, every calibration probe).  Thread-safe (one mutex).
 * wl_keyrates_memo_clear frees every entry and zeroes the counters (for
 * tests; cannot fail); wl_keyrates_memo_get_stats returns the hit and
 * miss counts since the last clear.
 */
typedef struct wl_keyrates_memo_stats {
    uint64_t z_hits, z_misses;         /* sorted deviates of (n, seed) */
    uint64_t theta_hits, theta_misses; /* fitted shapes */
} wl_keyrates_memo_stats;

void wl_keyrates_memo_clear(void);
wl_keyrates_memo_stats wl_keyrates_memo_get_stats(void);

/*
 * Fit the shape parameter of `family` (σ of the lognormal, s of Zipf with
 * offset `q`) so that the Gini coefficient of the generated n-key vector,
 * after the share cap `cap` (0 = none), equals `gini`.  Uses
 * gsl_root_fsolver_brent on g(θ) = Gini(θ) − gini, bracketed on
 * [0, 12] for σ and [0, 12] for s, to |Δθ| < 1e-10 or |g| < 1e-12; the lognormal
 * draws come from `seed` as in wl_keyrates_lognormal, so the fit is for
 * that exact population.  Writes the parameter to *theta.  Returns SIM_OK;
 * SIM_EINVAL if gini is not in (0, 1), the family is WL_KEYS_FILE, the
 * other arguments are bad as for the constructors, or the target lies
 * outside the range the family reaches with this cap ("... the family
 * reaches at most G; expected a lower target or a looser cap") — a cap
 * bounds the achievable Gini, and this says so rather than returning an
 * approximate fit; SIM_ENOMEM.
 */
int wl_keyrates_fit_gini(enum wl_keydist family, size_t n, double gini, double cap, double q,
                         uint64_t seed, double *theta);

/*
 * Keep the top `k` keys by rate (the active set), rescaled so their total
 * equals the total of the whole vector (renormalised).  k = 0 or k >= n
 * keeps everything.  Cannot fail.
 */
void wl_keyrates_active(wl_keyrates *kr, size_t k);

/*
 * Whale injection: add `n_whales` keys, whale j holding share shares[j] of
 * the total of the resulting vector, and scale the existing keys by
 * (1 − Σ shares) so the total is unchanged.  Whale ids follow the largest
 * existing id.  The result is re-sorted.  Returns SIM_OK; SIM_EINVAL if a
 * share is not in (0, 1) or the shares sum to 1 or more; SIM_ENOMEM.  On
 * error `kr` is unchanged.
 */
int wl_keyrates_add_whales(wl_keyrates *kr, const double *shares, size_t n_whales);

/* Scale the vector so its rates sum to `total` (requests/s), total > 0.
 * Cannot fail. */
void wl_keyrates_scale(wl_keyrates *kr, double total);

/* Sum of the rates.  Cannot fail. */
double wl_keyrates_total(const wl_keyrates *kr);

/* Sort by decreasing rate, ties by increasing id.  Cannot fail. */
void wl_keyrates_sort(wl_keyrates *kr);

/* Deep copy of `src` into *dst.  Returns SIM_OK or SIM_ENOMEM (then *dst
 * is zeroed). */
int wl_keyrates_copy(const wl_keyrates *src, wl_keyrates *dst);

/* Free the arrays and zero the struct.  Accepts NULL and a zeroed struct.
 * Cannot fail. */
void wl_keyrates_fini(wl_keyrates *kr);

/*
 * What a key-rate vector looks like, in the paper's terms.  Shares are
 * fractions of total traffic in [0, 1].  "Top p" is the top ceil(p·n) keys
 * by rate (at least one key).
 */
typedef struct wl_keystats {
    size_t n;          /* number of keys */
    double total;      /* sum of rates (requests/s, or relative) */
    double gini;       /* Gini coefficient in [0, 1 − 1/n] */
    double top1;       /* share of the top 1 % of keys */
    double top4;       /* share of the top 4 % of keys */
    double top10;      /* share of the top 10 % of keys */
    double max_share;  /* share of the busiest key */
} wl_keystats;

/*
 * Compute the statistics of any rate vector `rate` of `n` non-negative
 * values (need not be sorted; not modified).  The Gini coefficient is the
 * mean absolute difference over twice the mean,
 *   G = Σ_i (2i − n − 1) x_(i) / (n Σ x),   x_(1) <= ... <= x_(n),
 * (the sample Gini without small-sample correction, so n equal keys give 0
 * and one key holding everything gives 1 − 1/n).  Returns SIM_OK; SIM_EINVAL
 * if n = 0, a value is negative or not finite, or the total is 0; SIM_ENOMEM.
 * O(n log n) (one sorted copy).
 */
int wl_rates_describe(const double *rate, size_t n, wl_keystats *out);

/* wl_rates_describe of a key-rate vector.  Same returns. */
int wl_keyrates_describe(const wl_keyrates *kr, wl_keystats *out);

#endif
