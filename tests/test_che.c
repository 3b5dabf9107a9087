/*
 * Validation of the prefix cache's LRU eviction against Che's approximation
 * (H. Che, Y. Tung, Z. Wang, "Hierarchical Web caching systems: modeling,
 * design and experimental results", IEEE JSAC 20(7), 2002; shown to be
 * very accurate for LRU under the independent reference model by Fricker,
 * Robert and Roberts, "A versatile and accurate approximation for LRU cache
 * performance", ITC 24, 2012).
 *
 * The cache (models/pcache.h) of C blocks is fed single-block requests
 * whose ids are drawn i.i.d. from a Zipf(alpha) catalogue of N items.  A hit
 * pins and releases the block (which moves it to the warm end of the LRU
 * list); a miss allocates a block (evicting the coldest one once the pool is
 * full), commits the item's hash and releases it.  So the pool is an LRU
 * cache of C items, and its hit ratio after warm-up should match Che's
 * formula: with T_C the root of  sum_i (1 − exp(−p_i·T)) = C,
 * hit ratio = sum_i p_i·(1 − exp(−p_i·T_C)).
 *
 * Statistics: the hit indicators are nearly independent (the cache state
 * forgets within ~C requests), so the standard error of the hit ratio over
 * n requests is about sqrt(h(1−h)/n) times a small correlation factor; the
 * test uses batch means and checks that its 2-point tolerance is many
 * standard errors wide, so a failure means the cache or the formula
 * disagree, not bad luck.  Che's approximation itself is off by a few
 * tenths of a point at these sizes (it is asymptotically exact as C grows).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "models/pcache.h"
#include "sim/core/rng.h"
#include "check.h"

#define SEED 7002u
#define N_BATCH 20u
#define TOL 0.02 /* absolute, on the hit ratio */

/* Zipf(alpha) over ids 0..n-1: p_i proportional to (i+1)^-alpha. */
typedef struct zipf {
    uint32_t n;
    double *p;   /* probabilities */
    double *cdf; /* cdf[i] = p_0 + ... + p_i, cdf[n-1] = 1 */
} zipf;

static void zipf_init(zipf *z, uint32_t n, double alpha)
{
    z->n = n;
    z->p = malloc(n * sizeof *z->p);
    z->cdf = malloc(n * sizeof *z->cdf);
    CHECK(z->p && z->cdf);
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += z->p[i] = pow((double)i + 1.0, -alpha);
    double c = 0;
    for (uint32_t i = 0; i < n; i++) {
        z->p[i] /= s;
        c += z->p[i];
        z->cdf[i] = c;
    }
    z->cdf[n - 1] = 1.0; /* absorb rounding so every u < 1 finds an id */
}

static void zipf_fini(zipf *z)
{
    free(z->p);
    free(z->cdf);
}

/* Draw an id: the smallest i with cdf[i] > u, by binary search. */
static uint32_t zipf_draw(const zipf *z, sim_pcg32 *r)
{
    const double u = sim_pcg32_uniform(r);
    uint32_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* f(T) = sum_i (1 − exp(−p_i·T)) − C: the expected number of distinct items
 * requested in time T (one request per unit time) minus the cache size. */
typedef struct che_args {
    const zipf *z;
    double cap;
} che_args;

static double che_f(double t, void *vp)
{
    const che_args *a = vp;
    double s = 0;
    for (uint32_t i = 0; i < a->z->n; i++)
        s += -expm1(-a->z->p[i] * t);
    return s - a->cap;
}

/* Che's hit ratio for an LRU cache of `cap` items; *tc gets T_C. */
static double che_hit_ratio(const zipf *z, double cap, double *tc)
{
    che_args a = {z, cap};
    gsl_function f = {.function = che_f, .params = &a};
    /* f is increasing from f(0) = −C to N − C > 0: bracket by doubling. */
    double lo = 0.0, hi = cap;
    while (che_f(hi, &a) < 0) {
        lo = hi;
        hi *= 2;
    }
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    CHECK(s != NULL);
    CHECK_INT_EQ(gsl_root_fsolver_set(s, &f, lo, hi), GSL_SUCCESS);
    int status = GSL_CONTINUE;
    for (int it = 0; it < 200 && status == GSL_CONTINUE; it++) {
        CHECK_INT_EQ(gsl_root_fsolver_iterate(s), GSL_SUCCESS);
        status = gsl_root_test_interval(gsl_root_fsolver_x_lower(s),
                                        gsl_root_fsolver_x_upper(s), 0.0, 1e-13);
    }
    CHECK_INT_EQ(status, GSL_SUCCESS);
    const double t = gsl_root_fsolver_root(s);
    gsl_root_fsolver_free(s);
    CHECK_NEAR(che_f(t, &a), 0.0, 1e-6 * cap);
    double h = 0;
    for (uint32_t i = 0; i < z->n; i++)
        h += z->p[i] * -expm1(-z->p[i] * t);
    *tc = t;
    return h;
}

/*
 * Run `warmup + n` requests (n a multiple of N_BATCH) against a cache of
 * `cap` blocks and return the hit ratio of the last n, with its batch-means
 * standard error in *se.
 */
static double simulate(const zipf *z, uint32_t cap, uint64_t warmup, uint64_t n,
                       uint64_t stream, double *se)
{
    CHECK(n % N_BATCH == 0);
    gsl_rng *g = sim_rng_create(SEED, sim_rng_substream(SIM_STREAM_KEYS, stream));
    CHECK(g != NULL);
    sim_pcg32 *r = sim_rng_pcg(g);
    pcache *c = pcache_create(cap);
    CHECK(c != NULL);
    const uint64_t batch = n / N_BATCH;
    uint64_t bhits[N_BATCH] = {0};
    uint64_t hits = 0, misses = 0;
    for (uint64_t k = 0; k < warmup + n; k++) {
        /* Item i is a one-block prefix with hash i + 1 (block hashes are
         * non-zero in crsim) and no parent. */
        const uint64_t h = (uint64_t)zipf_draw(z, r) + 1u;
        pcache_seq s = {0};
        uint32_t unpinned;
        const uint32_t m = pcache_match(c, &h, 1, &unpinned);
        if (m == 1) {
            CHECK_INT_EQ(unpinned, 1); /* nothing stays pinned between requests */
            pcache_seq_pin(c, &s, &h, 1);
            hits++;
            if (k >= warmup)
                bhits[(k - warmup) / batch]++;
        } else {
            CHECK_INT_EQ(m, 0);
            CHECK_INT_EQ(pcache_seq_alloc(c, &s, 1), 1);
            CHECK_INT_EQ(pcache_seq_commit(c, &s, &h, 1), 1);
            misses++;
        }
        pcache_seq_release(c, &s);
        CHECK_INT_EQ(pcache_pinned(c), 0);
    }
    /* The pool holds exactly min(C, distinct items seen) cached items: every
     * miss registers one, and eviction only happens when the pool is full. */
    CHECK_U64_EQ(hits + misses, warmup + n);
    CHECK_INT_EQ(pcache_cached(c), misses < cap ? misses : cap);
    CHECK_INT_EQ(pcache_available(c), cap);
    pcache_check(c);
    pcache_destroy(c);
    sim_rng_destroy(g);

    double mean = 0, ss = 0;
    for (unsigned i = 0; i < N_BATCH; i++)
        mean += (double)bhits[i] / (double)batch;
    mean /= N_BATCH;
    for (unsigned i = 0; i < N_BATCH; i++) {
        double d = (double)bhits[i] / (double)batch - mean;
        ss += d * d;
    }
    *se = sqrt(ss / (N_BATCH - 1) / N_BATCH);
    return mean;
}

static void test_che(uint32_t n_items, uint32_t cap, double alpha, uint64_t stream)
{
    zipf z;
    zipf_init(&z, n_items, alpha);
    double tc;
    const double che = che_hit_ratio(&z, cap, &tc);
    /* Warm-up: 20 fills of the cache, far beyond the time the LRU state
     * takes to forget its empty start (the cache is full after about T_C
     * requests plus the time to see C distinct items). */
    const uint64_t warmup = 20ull * (uint64_t)cap + (uint64_t)(5 * tc);
    const uint64_t n = 2000000;
    double se;
    const double hit = simulate(&z, cap, warmup, n, stream, &se);
    printf("N=%-6u C=%-5u alpha=%.1f  T_C=%10.1f  hit ratio: measured %.5f  "
           "Che %.5f  diff %+.5f  s.e. %.5f  tol/s.e. %.0f\n",
           n_items, cap, alpha, tc, hit, che, hit - che, se, TOL / se);
    CHECK(TOL > 4.0 * se);
    CHECK_NEAR(hit, che, TOL);
    zipf_fini(&z);
}

/* The Zipf sampler and Che solver on a case with a closed form: with
 * alpha = 0 every item has p = 1/N, so T_C = −N·ln(1 − C/N) and the hit
 * ratio is C/N (exactly the LRU hit ratio under uniform demand). */
static void test_reference(void)
{
    zipf z;
    zipf_init(&z, 1000, 0.0);
    double tc;
    CHECK_NEAR(che_hit_ratio(&z, 250, &tc), 0.25, 1e-12);
    CHECK_REL(tc, -1000.0 * log(0.75), 1e-9);
    zipf_fini(&z);
}

int main(void)
{
    gsl_set_error_handler_off(); /* errors come back as codes, checked above */
    test_reference();
    test_che(10000, 1000, 0.8, 1);
    test_che(10000, 500, 1.0, 2);
    test_che(50000, 5000, 1.2, 3);
    test_che(100000, 2000, 0.6, 4);
    return 0;
}
