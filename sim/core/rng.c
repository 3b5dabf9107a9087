/*
 * PCG32 streams and their gsl_rng_type wrapper (see rng.h).  The generator
 * itself is a few lines; most of this file adapts it to GSL's plug-in
 * interface so that GSL samplers and crsim's integer draws share one
 * seeded stream per consumer.
 *
 * Source: M.E. O'Neill, "PCG: A Family of Simple Fast Space-Efficient
 * Statistically Good Algorithms for Random Number Generation",
 * HMC-CS-2014-0905, 2014.
 */
#include "sim/core/rng.h"

#include <stdlib.h>

#include "sim/core/error.h"

void sim_pcg32_seed(sim_pcg32 *r, uint64_t initstate, uint64_t initseq)
{
    /* Same steps as pcg32_srandom_r, so (initstate, initseq) name the same
     * sequence as in pcg-c and pcg-cpp: a reader can reproduce any stream
     * with the reference code. */
    r->state = 0u;
    r->inc = (initseq << 1u) | 1u;
    (void)sim_pcg32_next(r);
    r->state += initstate;
    (void)sim_pcg32_next(r);
}

uint32_t sim_pcg32_bounded(sim_pcg32 *r, uint32_t bound)
{
    SIM_ALWAYS(bound > 0u);
    /* 2^32 mod bound, computed in 32-bit arithmetic as (2^32 - bound) mod
     * bound.  Outputs below it are rejected so that the accepted range
     * [threshold, 2^32) holds a whole number of copies of [0, bound). */
    uint32_t threshold = (0u - bound) % bound;
    for (;;) {
        uint32_t x = sim_pcg32_next(r);
        if (x >= threshold)
            return x % bound;
    }
}

double sim_pcg32_uniform(sim_pcg32 *r)
{
    /* 2^-32 is exact in binary and every 32-bit integer is exact in a
     * double, so the product is exact and at most 1 - 2^-32 < 1. */
    return (double)sim_pcg32_next(r) * 0x1p-32;
}

/* gsl_rng_type handlers: generic signatures, no function-pointer casts. */

static void pcg32_gsl_set(void *state, unsigned long int seed)
{
    sim_pcg32_seed(state, (uint64_t)seed, SIM_RNG_GSL_DEFAULT_SEQ);
}

static unsigned long int pcg32_gsl_get(void *state)
{
    return sim_pcg32_next(state);
}

static double pcg32_gsl_get_double(void *state)
{
    return sim_pcg32_uniform(state);
}

static const gsl_rng_type pcg32_gsl_type = {
    "pcg32",              /* name */
    0xffffffffUL,         /* max */
    0UL,                  /* min */
    sizeof(sim_pcg32),    /* size */
    pcg32_gsl_set,        /* set */
    pcg32_gsl_get,        /* get */
    pcg32_gsl_get_double  /* get_double */
};

const gsl_rng_type *const sim_rng_pcg32 = &pcg32_gsl_type;

gsl_rng *sim_rng_create(uint64_t seed, uint64_t stream_id)
{
    /* Built by hand rather than with gsl_rng_alloc(): on allocation failure
     * gsl_rng_alloc reports through the GSL error handler, whose default
     * aborts, so it could not honour the NULL-on-ENOMEM contract without
     * changing that process-wide handler.  The layout (type + malloc'ed
     * state) is the public gsl_rng struct, and gsl_rng_free() releases it
     * exactly as it releases one from gsl_rng_alloc(). */
    gsl_rng *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    r->state = malloc(sizeof(sim_pcg32));
    if (!r->state) {
        free(r);
        return NULL;
    }
    r->type = sim_rng_pcg32;
    sim_pcg32_seed(r->state, seed, stream_id);
    return r;
}

void sim_rng_destroy(gsl_rng *r)
{
    if (r)
        gsl_rng_free(r);
}

sim_pcg32 *sim_rng_pcg(gsl_rng *r)
{
    /* Reinterpreting another generator's state as PCG would silently give
     * garbage streams, so the check stays in release builds. */
    SIM_ALWAYS(r != NULL && r->type == sim_rng_pcg32);
    return r->state;
}

uint64_t sim_rng_substream(uint64_t base, uint64_t index)
{
    SIM_ALWAYS(base >= 1u && base < (UINT64_C(1) << 31));
    SIM_ALWAYS(index <= UINT32_MAX);
    return (base << 32) | index;
}
