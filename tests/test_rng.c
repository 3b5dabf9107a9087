/*
 * Tests of sim/rng: a known answer, the gsl_rng_type wrapper (GSL samplers
 * draw from it with the right moments), stream reproducibility and
 * independence, and the range and uniformity of bounded draws.  Seeds are
 * fixed, so every statistical check is deterministic; tolerances are set
 * several standard errors wide so they pin the algorithm, not luck.
 * Bit-exactness against the reference pcg-cpp is in test_rng_ref.cpp.
 */
#include <stdint.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/core/rng.h"
#include "check.h"

#define N_DRAWS 1000000

/* pcg-c's pcg32-demo: first outputs of pcg32_srandom_r(&rng, 42u, 54u). */
static void test_known_answer(void)
{
    static const uint32_t want[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                     0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    sim_pcg32 r;
    sim_pcg32_seed(&r, 42u, 54u);
    for (int i = 0; i < 6; i++)
        CHECK_U64_EQ(sim_pcg32_next(&r), want[i]);

    gsl_rng *g = sim_rng_create(42u, 54u);
    CHECK(g != NULL);
    for (int i = 0; i < 6; i++)
        CHECK_U64_EQ(gsl_rng_get(g), want[i]);
    sim_rng_destroy(g);
}

static void test_type_descriptor(void)
{
    CHECK(strcmp(sim_rng_pcg32->name, "pcg32") == 0);
    CHECK_U64_EQ(sim_rng_pcg32->min, 0u);
    CHECK_U64_EQ(sim_rng_pcg32->max, 0xffffffffu);
    CHECK_U64_EQ(sim_rng_pcg32->size, sizeof(sim_pcg32));

    gsl_rng *g = sim_rng_create(1u, 2u);
    CHECK(g != NULL);
    CHECK(strcmp(gsl_rng_name(g), "pcg32") == 0);
    CHECK_U64_EQ(gsl_rng_min(g), 0u);
    CHECK_U64_EQ(gsl_rng_max(g), 0xffffffffu);
    CHECK(sim_rng_pcg(g) == (sim_pcg32 *)g->state);
    sim_rng_destroy(g);
}

/* gsl_rng_alloc + gsl_rng_set use the documented default stream. */
static void test_gsl_set_default_stream(void)
{
    gsl_rng *g = gsl_rng_alloc(sim_rng_pcg32);
    CHECK(g != NULL);
    gsl_rng_set(g, 987654321u);
    sim_pcg32 r;
    sim_pcg32_seed(&r, 987654321u, SIM_RNG_GSL_DEFAULT_SEQ);
    for (int i = 0; i < 100; i++)
        CHECK_U64_EQ(gsl_rng_get(g), sim_pcg32_next(&r));
    gsl_rng_free(g);
}

/* gsl_rng_clone copies type->size bytes of state: the copy continues the
 * same sequence independently of the original. */
static void test_clone(void)
{
    gsl_rng *a = sim_rng_create(7u, SIM_STREAM_KEYS);
    CHECK(a != NULL);
    (void)gsl_rng_get(a);
    gsl_rng *b = gsl_rng_clone(a);
    CHECK(b != NULL);
    for (int i = 0; i < 100; i++)
        CHECK_U64_EQ(gsl_rng_get(a), gsl_rng_get(b));
    sim_rng_destroy(a);
    sim_rng_destroy(b);
}

static void test_uniform(void)
{
    gsl_rng *g = sim_rng_create(2024u, SIM_STREAM_ARRIVALS);
    CHECK(g != NULL);
    double sum = 0.0, lo = 1.0, hi = 0.0;
    for (int i = 0; i < N_DRAWS; i++) {
        double u = gsl_rng_uniform(g);
        CHECK(u >= 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    /* Standard error of the mean is sqrt(1/12 / 1e6) ~ 2.9e-4. */
    CHECK_NEAR(sum / N_DRAWS, 0.5, 2e-3);
    CHECK(lo < 1e-4 && hi > 1.0 - 1e-4);

    /* 32 bits of resolution: u * 2^32 is exactly the raw output. */
    sim_pcg32 r1, r2;
    sim_pcg32_seed(&r1, 99u, 3u);
    sim_pcg32_seed(&r2, 99u, 3u);
    for (int i = 0; i < 1000; i++) {
        double u = sim_pcg32_uniform(&r1);
        CHECK(u * 0x1p32 == (double)sim_pcg32_next(&r2));
    }

    /* The largest output maps below 1. */
    CHECK((double)UINT32_MAX * 0x1p-32 < 1.0);
    sim_rng_destroy(g);
}

/* gsl_ran_exponential(r, mu) has density exp(-x/mu)/mu, mean mu. */
static void test_exponential(void)
{
    const double mu = 2.5;
    gsl_rng *g = sim_rng_create(42u, SIM_STREAM_ARRIVALS);
    CHECK(g != NULL);
    double sum = 0.0;
    for (int i = 0; i < N_DRAWS; i++) {
        double x = gsl_ran_exponential(g, mu);
        CHECK(x >= 0.0);
        sum += x;
    }
    /* Standard error of the mean is mu / 1000 = 0.1 %; allow 0.5 %. */
    CHECK_REL(sum / N_DRAWS, mu, 0.005);
    sim_rng_destroy(g);
}

static void test_streams(void)
{
    enum { N = 1000 };
    gsl_rng *a = sim_rng_create(42u, SIM_STREAM_ARRIVALS);
    gsl_rng *a2 = sim_rng_create(42u, SIM_STREAM_ARRIVALS);
    gsl_rng *b = sim_rng_create(42u, SIM_STREAM_KEYS);
    gsl_rng *c = sim_rng_create(42u,
                                sim_rng_substream(SIM_STREAM_ROUTER, 0u));
    CHECK(a && a2 && b && c);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < N; i++) {
        unsigned long xa = gsl_rng_get(a);
        CHECK_U64_EQ(xa, gsl_rng_get(a2));
        same_ab += xa == gsl_rng_get(b);
        same_ac += xa == gsl_rng_get(c);
    }
    /* Independent 32-bit streams agree at a given position with
     * probability 2^-32, so even one coincidence in 1000 draws has odds of
     * about 2e-7; more than one means the streams are not distinct. */
    CHECK(same_ab <= 1);
    CHECK(same_ac <= 1);

    /* Drawing from one stream does not move another. */
    sim_pcg32 fresh;
    sim_pcg32_seed(&fresh, 42u, SIM_STREAM_KEYS);
    for (int i = 0; i < N; i++)
        (void)sim_pcg32_next(&fresh);
    CHECK_U64_EQ(sim_pcg32_next(&fresh), gsl_rng_get(b));

    sim_rng_destroy(a);
    sim_rng_destroy(a2);
    sim_rng_destroy(b);
    sim_rng_destroy(c);
}

static void test_substream(void)
{
    CHECK_U64_EQ(sim_rng_substream(SIM_STREAM_ROUTER, 7u),
                 (UINT64_C(4) << 32) | 7u);
    CHECK_U64_EQ(sim_rng_substream(1u, UINT32_MAX), UINT64_C(0x1ffffffff));
    CHECK(sim_rng_substream(SIM_STREAM_ARRIVALS, 0u) > SIM_STREAM_ENGINE);
    CHECK(sim_rng_substream(1u, UINT32_MAX) != sim_rng_substream(2u, 0u));
}

static void test_bounded(void)
{
    enum { BINS = 10 };
    unsigned long count[BINS] = {0};
    sim_pcg32 r;
    sim_pcg32_seed(&r, 42u, SIM_STREAM_ROUTER);
    for (int i = 0; i < N_DRAWS; i++) {
        uint32_t k = sim_pcg32_bounded(&r, BINS);
        CHECK(k < BINS);
        count[k]++;
    }
    const double expect = (double)N_DRAWS / BINS;
    double chi2 = 0.0;
    for (int k = 0; k < BINS; k++) {
        double d = (double)count[k] - expect;
        chi2 += d * d / expect;
    }
    /* Upper 0.1 % point of chi-square with 9 degrees of freedom (~27.9). */
    const double crit = gsl_cdf_chisq_Qinv(1e-3, BINS - 1);
    CHECK(crit > 27.0 && crit < 29.0);
    if (!(chi2 < crit)) {
        fprintf(stderr, "bounded draws: chi2 = %g >= %g\n", chi2, crit);
        exit(1);
    }

    /* bound 1 always gives 0; huge bounds stay in range. */
    for (int i = 0; i < 100; i++)
        CHECK_U64_EQ(sim_pcg32_bounded(&r, 1u), 0u);
    static const uint32_t big[] = {0x80000001u, 0xfffffffeu, 0xffffffffu};
    for (size_t j = 0; j < sizeof big / sizeof big[0]; j++)
        for (int i = 0; i < 10000; i++)
            CHECK(sim_pcg32_bounded(&r, big[j]) < big[j]);
}

int main(void)
{
    test_known_answer();
    test_type_descriptor();
    test_gsl_set_default_stream();
    test_clone();
    test_uniform();
    test_exponential();
    test_streams();
    test_substream();
    test_bounded();
    sim_rng_destroy(NULL);
    printf("test_rng: OK\n");
    return 0;
}
