/*
 * Key-rate vectors (see keyrates.h).  Everything here works on vectors kept
 * sorted by decreasing rate, which makes the share cap, the active set and
 * the top-p shares single passes.  The Gini fit exploits that the drawn
 * normal deviates do not depend on σ: the ranking is fixed, so each
 * evaluation of Gini(σ) is O(n) without re-sorting.
 */
#include "workloads/keyrates.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_roots.h>
#include <gsl/gsl_sort.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/core/u64map.h"
#include "workloads/csv.h"
#include "workloads/internal.h"

const char *const wl_keydist_names[] = {WL_KEYDISTS(SIM_XENUM_NAME) NULL};

int wl_keydist_parse(const char *name, enum wl_keydist *out)
{
    int i, rc = wl__name_parse(wl_keydist_names, "key-rate distribution", name, &i);
    *out = rc ? *out : (enum wl_keydist)i;
    return rc;
}

const char *wl_keydist_name(enum wl_keydist d)
{
    return (unsigned)d < (unsigned)WL_KEYS_N ? wl_keydist_names[d] : "?";
}

void wl_keyrates_fini(wl_keyrates *kr)
{
    if (!kr)
        return;
    free(kr->rate);
    free(kr->id);
    kr->rate = NULL;
    kr->id = NULL;
    kr->n = 0;
}

static int kr_alloc(wl_keyrates *kr, size_t n)
{
    kr->n = n;
    kr->rate = malloc(n * sizeof *kr->rate);
    kr->id = malloc(n * sizeof *kr->id);
    if (!kr->rate || !kr->id) {
        wl_keyrates_fini(kr);
        return SIM_ERROR(SIM_ENOMEM, "out of memory for %zu key rates", n);
    }
    return SIM_OK;
}

int wl_keyrates_copy(const wl_keyrates *src, wl_keyrates *dst)
{
    *dst = (wl_keyrates){0};
    if (kr_alloc(dst, src->n))
        return SIM_ENOMEM;
    memcpy(dst->rate, src->rate, src->n * sizeof *src->rate);
    memcpy(dst->id, src->id, src->n * sizeof *src->id);
    return SIM_OK;
}

typedef struct kv {
    double rate;
    uint64_t id;
} kv;

static int cmp_kv(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate > y->rate ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

void wl_keyrates_sort(wl_keyrates *kr)
{
    kv *t = sim_xmalloc((kr->n ? kr->n : 1) * sizeof *t);
    for (size_t i = 0; i < kr->n; i++)
        t[i] = (kv){kr->rate[i], kr->id[i]};
    qsort(t, kr->n, sizeof *t, cmp_kv);
    for (size_t i = 0; i < kr->n; i++) {
        kr->rate[i] = t[i].rate;
        kr->id[i] = t[i].id;
    }
    free(t);
}

double wl_keyrates_total(const wl_keyrates *kr)
{
    /* Sum from the smallest up: the vector is sorted decreasing, so this
     * adds small terms first and loses less precision. */
    double s = 0;
    for (size_t i = kr->n; i-- > 0;)
        s += kr->rate[i];
    return s;
}

void wl_keyrates_scale(wl_keyrates *kr, double total)
{
    double t = wl_keyrates_total(kr);
    if (!(t > 0))
        return;
    double f = total / t;
    for (size_t i = 0; i < kr->n; i++)
        kr->rate[i] *= f;
}

/* Cap a sorted-decreasing array in place (see wl_keyrates_cap); `suffix`
 * is scratch of n+1 doubles. */
static void cap_array(double *x, size_t n, double cap, double *suffix)
{
    suffix[n] = 0;
    for (size_t i = n; i-- > 0;)
        suffix[i] = suffix[i + 1] + x[i];
    const double total = suffix[0];
    for (size_t k = 0; k < n; k++) {
        /* Top k capped at cap·T; the rest scaled to fill (1 − k·cap)·T. */
        double rest = (1.0 - (double)k * cap) * total;
        if (rest <= 0 || suffix[k] <= 0)
            break;
        double f = rest / suffix[k];
        if (x[k] * f <= cap * total) {
            for (size_t i = 0; i < k; i++)
                x[i] = cap * total;
            for (size_t i = k; i < n; i++)
                x[i] *= f;
            return;
        }
    }
    /* n·cap == 1 (up to rounding): every key is capped, all equal. */
    for (size_t i = 0; i < n; i++)
        x[i] = total / (double)n;
}

static int check_cap(size_t n, double cap, int allow_zero)
{
    if (!(cap >= 0 && cap < 1) || (!allow_zero && cap == 0))
        return SIM_ERROR(SIM_EINVAL, "key share cap %g; expected a share in %s1) (0 = no cap)",
                         cap, allow_zero ? "[0, " : "(0, ");
    if (cap > 0 && (double)n * cap < 1.0 - 1e-12)
        return SIM_ERROR(SIM_EINVAL, "key share cap %g with %zu keys: %zu keys at most %g each "
                         "cannot carry all traffic; expected a cap >= 1/%zu", cap, n, n, cap, n);
    return SIM_OK;
}

int wl_keyrates_cap(wl_keyrates *kr, double cap)
{
    int rc = check_cap(kr->n, cap, 0);
    if (rc)
        return rc;
    double *suffix = sim_xmalloc((kr->n + 1) * sizeof *suffix);
    cap_array(kr->rate, kr->n, cap, suffix);
    free(suffix);
    return SIM_OK;
}

/* ---- process-wide memo ------------------------------------------------------
 *
 * The sorted log-weights of (n, seed) and the fitted shape of (family, n,
 * Gini, cap, q, seed) are pure functions of those inputs, and a process
 * builds the same population many times: every candidate of `crsim fit`
 * and every calibration probe sets up the same workload keys again
 * (round 5 of docs/performance.md).  The memo keeps the last MEMO_N of
 * each, keyed on every input bit for bit, and hands out copies, so a
 * result from the memo is the array or value a fresh computation gives.
 * One mutex: set-ups may run in worker threads (sim/exp/pool.c).  Only
 * successes are kept; vectors above MEMO_MAX_N keys are not kept (a
 * 10^7-key population would hold 80 MB per entry). */
enum { MEMO_N = 4, MEMO_MAX_N = (size_t)1 << 22 };

typedef struct z_entry {
    size_t n;
    uint64_t seed;
    double *z; /* n doubles, sorted decreasing; NULL = empty slot */
} z_entry;

typedef struct theta_key {
    int fam;
    size_t n;
    uint64_t gini, cap, q, seed; /* the doubles' bits, and the seed */
} theta_key;

typedef struct theta_entry {
    bool used;
    theta_key k;
    double theta;
} theta_entry;

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static z_entry z_memo[MEMO_N];
static theta_entry theta_memo[4 * MEMO_N];
static unsigned z_next, theta_next; /* round-robin replacement */
static wl_keyrates_memo_stats memo_stats;

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static bool theta_key_eq(const theta_key *a, const theta_key *b)
{
    return a->fam == b->fam && a->n == b->n && a->gini == b->gini && a->cap == b->cap &&
           a->q == b->q && a->seed == b->seed;
}

void wl_keyrates_memo_clear(void)
{
    pthread_mutex_lock(&memo_mu);
    for (size_t i = 0; i < MEMO_N; i++) {
        free(z_memo[i].z);
        z_memo[i] = (z_entry){0};
    }
    memset(theta_memo, 0, sizeof theta_memo);
    z_next = theta_next = 0;
    memo_stats = (wl_keyrates_memo_stats){0};
    pthread_mutex_unlock(&memo_mu);
}

wl_keyrates_memo_stats wl_keyrates_memo_get_stats(void)
{
    pthread_mutex_lock(&memo_mu);
    wl_keyrates_memo_stats st = memo_stats;
    pthread_mutex_unlock(&memo_mu);
    return st;
}

/* A copy of the memo's z of (n, seed) into z (n doubles): true if found. */
static bool z_memo_get(size_t n, uint64_t seed, double *z)
{
    bool hit = false;
    pthread_mutex_lock(&memo_mu);
    for (size_t i = 0; i < MEMO_N && !hit; i++)
        if (z_memo[i].z && z_memo[i].n == n && z_memo[i].seed == seed) {
            memcpy(z, z_memo[i].z, n * sizeof *z);
            hit = true;
        }
    if (hit)
        memo_stats.z_hits++;
    else
        memo_stats.z_misses++;
    pthread_mutex_unlock(&memo_mu);
    return hit;
}

/* Keep a copy of z of (n, seed); silently not kept without memory. */
static void z_memo_put(size_t n, uint64_t seed, const double *z)
{
    if (n > MEMO_MAX_N)
        return;
    double *c = malloc(n * sizeof *c);
    if (!c)
        return;
    memcpy(c, z, n * sizeof *c);
    pthread_mutex_lock(&memo_mu);
    bool have = false; /* another thread may have put it meanwhile */
    for (size_t i = 0; i < MEMO_N; i++)
        have = have || (z_memo[i].z && z_memo[i].n == n && z_memo[i].seed == seed);
    if (!have) {
        z_entry *e = &z_memo[z_next];
        z_next = (z_next + 1) % MEMO_N;
        free(e->z);
        *e = (z_entry){.n = n, .seed = seed, .z = c};
        c = NULL;
    }
    pthread_mutex_unlock(&memo_mu);
    free(c);
}

static bool theta_memo_get(const theta_key *k, double *theta)
{
    bool hit = false;
    pthread_mutex_lock(&memo_mu);
    for (size_t i = 0; i < sizeof theta_memo / sizeof *theta_memo && !hit; i++)
        if (theta_memo[i].used && theta_key_eq(&theta_memo[i].k, k)) {
            *theta = theta_memo[i].theta;
            hit = true;
        }
    if (hit)
        memo_stats.theta_hits++;
    else
        memo_stats.theta_misses++;
    pthread_mutex_unlock(&memo_mu);
    return hit;
}

static void theta_memo_put(const theta_key *k, double theta)
{
    pthread_mutex_lock(&memo_mu);
    bool have = false;
    for (size_t i = 0; i < sizeof theta_memo / sizeof *theta_memo; i++)
        have = have || (theta_memo[i].used && theta_key_eq(&theta_memo[i].k, k));
    if (!have) {
        theta_memo[theta_next] = (theta_entry){.used = true, .k = *k, .theta = theta};
        theta_next = (theta_next + 1) % (sizeof theta_memo / sizeof *theta_memo);
    }
    pthread_mutex_unlock(&memo_mu);
}

/* The lognormal population's log-weights z_i (N(0,1) deviates), drawn with
 * gsl_ran_lognormal(r, 0, 1) so that exp(σ z_i) is exactly what
 * gsl_ran_lognormal(r, 0, σ) returns up to rounding (GSL's sampler draws
 * the same normal deviate whatever σ).  Sorted decreasing.  From the memo
 * when (n, seed) was drawn before in this process. */
static int draw_z(size_t n, uint64_t seed, double **out)
{
    double *z = malloc(n * sizeof *z);
    if (z && z_memo_get(n, seed, z)) {
        *out = z;
        return SIM_OK;
    }
    gsl_rng *r = sim_rng_create(seed, sim_rng_substream(SIM_STREAM_KEYS, 1));
    if (!z || !r) {
        free(z);
        sim_rng_destroy(r);
        return SIM_ERROR(SIM_ENOMEM, "out of memory drawing %zu key rates", n);
    }
    for (size_t i = 0; i < n; i++)
        z[i] = log(gsl_ran_lognormal(r, 0.0, 1.0));
    sim_rng_destroy(r);
    gsl_sort(z, 1, n);
    /* reverse to decreasing */
    for (size_t i = 0, j = n - 1; i < j; i++, j--) {
        double t = z[i];
        z[i] = z[j];
        z[j] = t;
    }
    z_memo_put(n, seed, z);
    *out = z;
    return SIM_OK;
}

/* Weights of the family for shape θ (σ or s), sorted decreasing, scaled so
 * the largest is 1 (avoids overflow for large σ). */
static void fill_weights(enum wl_keydist fam, const double *z, size_t n, double theta, double q,
                         double *w)
{
    if (fam == WL_KEYS_LOGNORMAL) {
        for (size_t i = 0; i < n; i++)
            w[i] = exp(theta * (z[i] - z[0]));
    } else {
        for (size_t i = 0; i < n; i++)
            w[i] = pow((1.0 + q) / ((double)(i + 1) + q), theta);
    }
}

static int finish(wl_keyrates *out, double *w, size_t n, double cap)
{
    if (cap > 0) {
        double *suffix = malloc((n + 1) * sizeof *suffix);
        if (!suffix) {
            free(w);
            return SIM_ERROR(SIM_ENOMEM, "out of memory for %zu key rates", n);
        }
        cap_array(w, n, cap, suffix);
        free(suffix);
    }
    uint64_t *id = malloc(n * sizeof *id);
    if (!id) {
        free(w);
        return SIM_ERROR(SIM_ENOMEM, "out of memory for %zu key rates", n);
    }
    for (size_t i = 0; i < n; i++)
        id[i] = i;
    *out = (wl_keyrates){.n = n, .rate = w, .id = id};
    return SIM_OK;
}

int wl_keyrates_lognormal(size_t n, double sigma, double cap, uint64_t seed, wl_keyrates *out)
{
    *out = (wl_keyrates){0};
    if (n == 0)
        return SIM_ERROR(SIM_EINVAL, "workload.keys.n is 0; expected at least 1 key");
    if (!(sigma >= 0) || !isfinite(sigma))
        return SIM_ERROR(SIM_EINVAL, "lognormal sigma %g; expected a finite sigma >= 0", sigma);
    int rc = check_cap(n, cap, 1);
    if (rc)
        return rc;
    double *z;
    if ((rc = draw_z(n, seed, &z)))
        return rc;
    double *w = malloc(n * sizeof *w);
    if (!w) {
        free(z);
        return SIM_ERROR(SIM_ENOMEM, "out of memory for %zu key rates", n);
    }
    fill_weights(WL_KEYS_LOGNORMAL, z, n, sigma, 0, w);
    free(z);
    return finish(out, w, n, cap);
}

int wl_keyrates_zipf(size_t n, double s, double q, double cap, wl_keyrates *out)
{
    *out = (wl_keyrates){0};
    if (n == 0)
        return SIM_ERROR(SIM_EINVAL, "workload.keys.n is 0; expected at least 1 key");
    if (!(s >= 0) || !isfinite(s))
        return SIM_ERROR(SIM_EINVAL, "Zipf exponent s = %g; expected a finite s >= 0", s);
    if (!(q > -1) || !isfinite(q))
        return SIM_ERROR(SIM_EINVAL, "Zipf-Mandelbrot offset q = %g; expected a finite q > -1", q);
    int rc = check_cap(n, cap, 1);
    if (rc)
        return rc;
    double *w = malloc(n * sizeof *w);
    if (!w)
        return SIM_ERROR(SIM_ENOMEM, "out of memory for %zu key rates", n);
    fill_weights(WL_KEYS_ZIPF, NULL, n, s, q, w);
    return finish(out, w, n, cap);
}

/* Gini of a sorted-decreasing array (see wl_rates_describe). */
static double gini_sorted_desc(const double *x, size_t n)
{
    double num = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        double rank_asc = (double)(n - i); /* 1-based rank in increasing order */
        num += (2.0 * rank_asc - (double)n - 1.0) * x[i];
        sum += x[i];
    }
    return num / ((double)n * sum);
}

typedef struct fit_ctx {
    enum wl_keydist fam;
    const double *z;
    size_t n;
    double q, cap, target;
    double *w, *suffix;
} fit_ctx;

static double fit_fn(double theta, void *p)
{
    fit_ctx *c = p;
    fill_weights(c->fam, c->z, c->n, theta, c->q, c->w);
    if (c->cap > 0)
        cap_array(c->w, c->n, c->cap, c->suffix);
    return gini_sorted_desc(c->w, c->n) - c->target;
}

int wl_keyrates_fit_gini(enum wl_keydist family, size_t n, double gini, double cap, double q,
                         uint64_t seed, double *theta)
{
    if (family != WL_KEYS_LOGNORMAL && family != WL_KEYS_ZIPF)
        return SIM_ERROR(SIM_EINVAL, "cannot fit a Gini target for distribution '%s'; expected "
                         "lognormal or zipf", wl_keydist_name(family));
    if (!(gini > 0 && gini < 1))
        return SIM_ERROR(SIM_EINVAL, "Gini target %g; expected a value in (0, 1)", gini);
    if (n < 2)
        return SIM_ERROR(SIM_EINVAL, "cannot fit a Gini with %zu key; expected at least 2 keys", n);
    if (family == WL_KEYS_ZIPF && (!(q > -1) || !isfinite(q)))
        return SIM_ERROR(SIM_EINVAL, "Zipf-Mandelbrot offset q = %g; expected a finite q > -1", q);
    int rc = check_cap(n, cap, 1);
    if (rc)
        return rc;
    /* Every input of the fit is in the key (the seed and q even where the
     * family ignores them: a miss costs one fit, a wrong hit would cost
     * exactness). */
    const theta_key key = (theta_key){.fam = (int)family, .n = n, .gini = dbits(gini), .cap = dbits(cap),
                      .q = dbits(q), .seed = seed};
    if (theta_memo_get(&key, theta))
        return SIM_OK;
    fit_ctx c = {.fam = family, .n = n, .q = q, .cap = cap, .target = gini};
    double *z = NULL;
    if (family == WL_KEYS_LOGNORMAL && (rc = draw_z(n, seed, &z)))
        return rc;
    c.z = z;
    c.w = malloc(n * sizeof *c.w);
    c.suffix = malloc((n + 1) * sizeof *c.suffix);
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!c.w || !c.suffix || !s) {
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory fitting %zu key rates", n);
        goto done;
    }
    const double lo = 0.0, hi = 12.0;
    double ghi = fit_fn(hi, &c);
    if (ghi < 0) {
        rc = SIM_ERROR(SIM_EINVAL, "a %s vector of %zu keys%s reaches a Gini of at most %.4f, "
                       "below the target %g; expected a lower target or a looser cap",
                       wl_keydist_name(family), n, cap > 0 ? " with this share cap" : "",
                       ghi + gini, gini);
        goto done;
    }
    gsl_function F = {.function = fit_fn, .params = &c};
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int st = gsl_root_fsolver_set(s, &F, lo, hi);
    double root = NAN;
    for (int it = 0; st == GSL_SUCCESS && it < 200; it++) {
        st = gsl_root_fsolver_iterate(s);
        if (st != GSL_SUCCESS)
            break;
        root = gsl_root_fsolver_root(s);
        double a = gsl_root_fsolver_x_lower(s), b = gsl_root_fsolver_x_upper(s);
        if (gsl_root_test_interval(a, b, 1e-10, 0) == GSL_SUCCESS ||
            fabs(fit_fn(root, &c)) < 1e-12) {
            st = GSL_SUCCESS;
            break;
        }
    }
    gsl_set_error_handler(old);
    if (st != GSL_SUCCESS || !isfinite(root)) {
        rc = SIM_ERROR(SIM_EINVAL, "Gini fit for %s did not converge (%s); expected a target "
                       "in the family's range", wl_keydist_name(family), gsl_strerror(st));
        goto done;
    }
    *theta = root;
    theta_memo_put(&key, root);
done:
    gsl_root_fsolver_free(s);
    free(z);
    free(c.w);
    free(c.suffix);
    return rc;
}

void wl_keyrates_active(wl_keyrates *kr, size_t k)
{
    if (k == 0 || k >= kr->n)
        return;
    double total = wl_keyrates_total(kr);
    kr->n = k; /* the arrays keep their size; only n entries are live */
    wl_keyrates_scale(kr, total);
}

int wl_keyrates_add_whales(wl_keyrates *kr, const double *shares, size_t n_whales)
{
    double sum = 0;
    for (size_t j = 0; j < n_whales; j++) {
        if (!(shares[j] > 0 && shares[j] < 1))
            return SIM_ERROR(SIM_EINVAL, "whale share %g (workload.keys.whales[%zu]); expected "
                             "a share in (0, 1)", shares[j], j);
        sum += shares[j];
    }
    if (n_whales == 0)
        return SIM_OK;
    if (!(sum < 1))
        return SIM_ERROR(SIM_EINVAL, "whale shares sum to %g; expected a sum below 1", sum);
    size_t n = kr->n + n_whales;
    double *rate = malloc(n * sizeof *rate);
    uint64_t *id = malloc(n * sizeof *id);
    if (!rate || !id) {
        free(rate);
        free(id);
        return SIM_ERROR(SIM_ENOMEM, "out of memory adding whales");
    }
    double total = wl_keyrates_total(kr);
    uint64_t max_id = 0;
    for (size_t i = 0; i < kr->n; i++) {
        rate[i] = kr->rate[i] * (1.0 - sum);
        id[i] = kr->id[i];
        if (id[i] > max_id)
            max_id = id[i];
    }
    for (size_t j = 0; j < n_whales; j++) {
        rate[kr->n + j] = shares[j] * total;
        id[kr->n + j] = (kr->n ? max_id + 1 : 0) + j;
    }
    free(kr->rate);
    free(kr->id);
    *kr = (wl_keyrates){.n = n, .rate = rate, .id = id};
    wl_keyrates_sort(kr);
    return SIM_OK;
}

int wl_rates_describe(const double *rate, size_t n, wl_keystats *out)
{
    if (n == 0)
        return SIM_ERROR(SIM_EINVAL, "cannot describe an empty rate vector; expected at least "
                         "one key");
    double *x = malloc(n * sizeof *x);
    int scaled = 0; /* x holds rate · 2^-scaled */
    if (!x)
        return SIM_ERROR(SIM_ENOMEM, "out of memory describing %zu key rates", n);
    for (size_t i = 0; i < n; i++) {
        if (!(rate[i] >= 0) || !isfinite(rate[i])) {
            free(x);
            return SIM_ERROR(SIM_EINVAL, "key rate %g at index %zu; expected a finite rate >= 0",
                             rate[i], i);
        }
        x[i] = rate[i];
    }
    gsl_sort(x, 1, n); /* increasing */
    double total = 0, num = 0;
    for (size_t i = 0; i < n; i++) {
        total += x[i];
        num += (2.0 * (double)(i + 1) - (double)n - 1.0) * x[i];
    }
    if (!isfinite(total)) {
        free(x);
        return SIM_ERROR(SIM_EINVAL, "key rates sum to %g (the sum overflows); expected rates "
                         "with a finite sum", total);
    }
    if (!(total > 0)) {
        free(x);
        return SIM_ERROR(SIM_EINVAL, "key rates sum to 0; expected a positive total");
    }
    if (!isfinite(num)) {
        /* The Gini numerator weighs rates by up to n − 1: with rates near
         * DBL_MAX it overflows although their sum does not (a fuzz
         * finding).  Scaling every rate by 2^-e (e the exponent of the
         * largest) is exact, so every statistic below is unchanged; it is
         * done only here, so ordinary vectors are computed as before. */
        int e;
        frexp(x[n - 1], &e);
        total = 0;
        num = 0;
        for (size_t i = 0; i < n; i++) {
            x[i] = ldexp(x[i], -e);
            total += x[i];
            num += (2.0 * (double)(i + 1) - (double)n - 1.0) * x[i];
        }
        scaled = e;
    }
    const double ps[3] = {0.01, 0.04, 0.10};
    double shares[3];
    for (int j = 0; j < 3; j++) {
        size_t k = (size_t)ceil(ps[j] * (double)n - 1e-9);
        if (k < 1)
            k = 1;
        double s = 0;
        for (size_t i = 0; i < k; i++)
            s += x[n - 1 - i];
        shares[j] = s / total;
    }
    /* The sum above cancels in floating point: n equal rates of 0.1 give
     * about −2e-17 for n = 5 (a fuzz finding, CI of 2026-12-06).  The
     * exact value lies in [0, 1 − 1/n], so rounding past either end is
     * clamped back (only values outside the range change). */
    double gini = num / ((double)n * total);
    double gini_max = 1.0 - 1.0 / (double)n;
    if (!(gini > 0))
        gini = 0;
    else if (gini > gini_max)
        gini = gini_max;
    *out = (wl_keystats){.n = n, .total = ldexp(total, scaled), .gini = gini,
                         .top1 = shares[0], .top4 = shares[1], .top10 = shares[2],
                         .max_share = x[n - 1] / total};
    free(x);
    return SIM_OK;
}

int wl_keyrates_describe(const wl_keyrates *kr, wl_keystats *out)
{
    return wl_rates_describe(kr->rate, kr->n, out);
}

/* ------------------------------------------------------------------ */
/* CSV "key,rate"                                                     */
/* ------------------------------------------------------------------ */


void wl_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

int wl_keyrates_load_csv(const char *path, wl_keyrates *out)
{
    return wl_keyrates_load_csv_names(path, out, NULL);
}

/* The row of an earlier key named `key` (rows 0..n-1 of `names`), found
 * through `seen` (XXH3 of the text -> row), or SIZE_MAX; adds `key` as
 * row n when it is new.  A hash that matches a different name (a 64-bit
 * collision) falls back to comparing every earlier name. */
static size_t dup_row(sim_u64map *seen, char **names, size_t n, const char *key)
{
    uint64_t h = XXH3_64bits(key, strlen(key));
    uint32_t prev = sim_u64map_insert(seen, h, (uint32_t)n);
    if (prev == SIM_U64MAP_NONE)
        return SIZE_MAX;
    if (strcmp(names[prev], key) == 0)
        return prev;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], key) == 0)
            return i;
    return SIZE_MAX;
}

int wl_keyrates_load_csv_names(const char *path, wl_keyrates *out, char ***names_out)
{
    *out = (wl_keyrates){0};
    char **names = NULL;
    long *lines = NULL;
    if (names_out)
        *names_out = NULL;
    wl_csv *csv;
    int rc = wl_csv_open(path, "key-rate file", WL_CSV_COMMENTS, &csv);
    if (rc)
        return rc;
    size_t n = 0, alloc = 0, nf;
    double *rate = NULL;
    int seen_row = 0;
    sim_u64map seen;
    if (sim_u64map_init(&seen, 1024)) {
        wl_csv_close(csv);
        return SIM_ERROR(SIM_ENOMEM, "%s: out of memory reading key rates", path);
    }
    static const char form[] = "expected key,rate with a rate > 0 (requests/s)";
    while ((rc = wl_csv_next(csv, &nf)) == SIM_OK && nf > 0) {
        long lineno = wl_csv_line(csv);
        if (nf != 2) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: %s; %s", path, lineno,
                           nf > 2 ? "more than two fields" : "one field (no comma)", form);
            break;
        }
        const char *key = wl_csv_field(csv, 0), *val = wl_csv_field(csv, 1);
        char *end;
        double r;
        int numeric = wl__parse_decimal(val, &r);
        if (!numeric && *val && strpbrk(val, "xX") && (strtod(val, &end), *end == '\0')) {
            /* strtod reads "0x10" as 16: refused, not taken for a header */
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: rate '%s' is hexadecimal; %s, written "
                           "in decimal", path, lineno, val, form);
            break;
        }
        if (!numeric && *val && (strtod(val, &end), *end == '\0')) {
            /* nan, inf, infinity: numbers to strtod, never a header */
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: rate %s for key '%s'; %s", path, lineno, val, key,
                           form);
            break;
        }
        if (!numeric && !seen_row) { /* header line */
            seen_row = 1;
            continue;
        }
        seen_row = 1;
        if (!*key) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: empty key; %s", path, lineno, form);
            break;
        }
        if (!numeric) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: rate '%s' is not a number; %s", path, lineno,
                           val, form);
            break;
        }
        if (!(r > 0) || !isfinite(r)) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: rate %s for key '%s'; %s", path, lineno, val, key,
                           form);
            break;
        }
        if (n == alloc) {
            alloc = alloc ? 2 * alloc : 1024;
            double *nr = realloc(rate, alloc * sizeof *rate);
            if (!nr) {
                rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory reading key rates", path);
                break;
            }
            rate = nr;
            names = sim_xrealloc(names, alloc * sizeof *names);
            lines = sim_xrealloc(lines, alloc * sizeof *lines);
        }
        size_t d = n < UINT32_MAX ? dup_row(&seen, names, n, key) : SIZE_MAX;
        if (d != SIZE_MAX) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: key '%s' again (first on line %ld); expected "
                           "each key once", path, lineno, key, lines[d]);
            break;
        }
        names[n] = sim_xstrdup(key);
        lines[n] = lineno;
        rate[n++] = r;
    }
    wl_csv_close(csv);
    sim_u64map_fini(&seen);
    free(lines);
    if (rc == SIM_OK && n == 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: no key-rate rows; %s", path, form);
    if (rc == SIM_OK) {
        uint64_t *id = malloc(n * sizeof *id);
        if (!id)
            rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory reading key rates", path);
        else {
            for (size_t i = 0; i < n; i++)
                id[i] = i;
            *out = (wl_keyrates){.n = n, .rate = rate, .id = id};
            wl_keyrates_sort(out);
            double total = wl_keyrates_total(out);
            if (!isfinite(total)) {
                rc = SIM_ERROR(SIM_EINVAL, "%s: the %zu key rates sum to %g (the sum "
                               "overflows); expected rates whose sum is finite (requests/s)",
                               path, n, total);
                wl_keyrates_fini(out);
                rate = NULL;
            } else {
                if (names_out)
                    *names_out = names;
                else
                    wl_names_free(names, n);
                return SIM_OK;
            }
        }
    }
    wl_names_free(names, n);
    free(rate);
    return rc;
}
