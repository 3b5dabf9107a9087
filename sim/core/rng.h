/*
 * Seeded, deterministic random-number streams for crsim: the PCG32 generator
 * (XSH-RR output on a 64-bit LCG), wrapped as a gsl_rng_type so that GSL's
 * distributions (gsl_ran_exponential, ...) draw from it.  Every consumer owns
 * its own stream, named by a (seed, stream id) pair, so runs are reproducible
 * and adding or reordering one consumer never perturbs the draws of another.
 *
 * Source: M.E. O'Neill, "PCG: A Family of Simple Fast Space-Efficient
 * Statistically Good Algorithms for Random Number Generation",
 * HMC-CS-2014-0905, Harvey Mudd College, 2014.  The seeding, output and
 * bounded-draw functions reproduce pcg_basic's pcg32_srandom_r,
 * pcg32_random_r and pcg32_boundedrand_r bit for bit (tests/test_rng_ref.cpp
 * checks this against the pcg-cpp reference).
 */
#ifndef CRSIM_SIM_RNG_H
#define CRSIM_SIM_RNG_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * PCG32 state.  `state` is the 64-bit LCG state; `inc` is the LCG increment,
 * which is always odd and selects one of 2^63 distinct streams.  The caller
 * provides the storage (for example inside a struct or a gsl_rng); there is
 * nothing to free.  Treat the fields as private and set them only through
 * sim_pcg32_seed().
 */
typedef struct sim_pcg32 {
    uint64_t state;
    uint64_t inc;
} sim_pcg32;

/* LCG multiplier of PCG32 (Knuth's MMIX multiplier). */
#define SIM_PCG32_MULT 6364136223846793005ULL

/*
 * Named stream ids of crsim's random consumers.
 *
 * Each consumer derives its own (seed, stream id) pair: the seed comes from
 * the experiment seed (the harness varies it per replicate), the stream id
 * from this enum, refined per component with sim_rng_substream() (for
 * example one stream per destination).  Because PCG streams with different
 * ids are independent sequences, adding a consumer, or changing how many
 * draws one consumer makes, never perturbs the draws of the others.  New
 * consumers get new values at the end; existing values never change, since
 * that would change every recorded result.  Values must stay below 2^31
 * so that sim_rng_substream() is collision-free.
 */
enum sim_rng_stream {
    SIM_STREAM_ARRIVALS = 1, /* workload arrival process */
    SIM_STREAM_KEYS = 2,     /* workload prefix/key choice */
    SIM_STREAM_LENGTHS = 3,  /* workload prompt/output lengths */
    SIM_STREAM_ROUTER = 4,   /* randomised routing policies */
    SIM_STREAM_DRIFT = 5,    /* workload drift over time */
    SIM_STREAM_ENGINE = 6,   /* per-engine service-time noise */
    SIM_STREAM_GATEWAY = 7,  /* gateway replicas: the bare id draws the
                                replica of each request (random
                                assignment); substream i >= 1 seeds
                                replica i's router (models/cluster.c) */
    SIM_STREAM_FAULTS = 8,   /* random destination faults (faults.mtbf_s):
                                substream d draws destination d's up and
                                repair times (models/cluster.c), so every
                                policy at one (seed, load) sees the same
                                faults */
    SIM_STREAM_CLIENT = 9    /* closed-loop clients (workloads/client.c):
                                substreams keyed by conversation number
                                and purpose (key, lengths, think times),
                                so every policy at one (seed, load) faces
                                the same users whatever the send order */
};

/*
 * Seed `r` exactly as pcg32_srandom_r(r, initstate, initseq) does: the
 * increment becomes (initseq << 1) | 1, then the state is set to 0, stepped,
 * increased by `initstate` and stepped again.  `initstate` picks the
 * starting point in the sequence (any value); `initseq` picks the stream
 * (any value, but the top bit is shifted out, so initseq and
 * initseq ^ 2^63 give the same stream).  Cannot fail.
 */
void sim_pcg32_seed(sim_pcg32 *r, uint64_t initstate, uint64_t initseq);

/*
 * Advance `r` and return the next 32-bit output, uniform over
 * [0, 2^32 - 1] (pcg32_random_r: the output is computed from the old state,
 * rotated by its top five bits).  Cannot fail.
 */
static inline uint32_t sim_pcg32_next(sim_pcg32 *r)
{
    uint64_t old = r->state;
    r->state = old * SIM_PCG32_MULT + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
}

/*
 * Return an integer uniform over [0, bound - 1] without modulo bias, by the
 * algorithm of pcg32_boundedrand_r: outputs below 2^32 mod bound are
 * rejected and the next one is drawn (each draw is rejected with
 * probability (2^32 mod bound) / 2^32 < 1/2).  `bound` must be at least 1; bound == 0 is a
 * caller bug and aborts via SIM_ALWAYS.  Cannot fail.
 */
uint32_t sim_pcg32_bounded(sim_pcg32 *r, uint32_t bound);

/*
 * Return a double uniform over [0, 1) with 32 bits of resolution: the next
 * output divided by 2^32, so the result is a multiple of 2^-32 and never
 * 1.0 (it can be 0.0).  Consumes exactly one output.  Cannot fail.
 */
double sim_pcg32_uniform(sim_pcg32 *r);

/*
 * The GSL generator type "pcg32" (GSL's documented extension point, used
 * instead of gsl_rng_env_setup so no environment variable can change a run).
 * Its range is [0, 0xffffffff]; its state is one sim_pcg32.  gsl_rng_get
 * returns sim_pcg32_next(), and gsl_rng_uniform returns
 * sim_pcg32_uniform() in [0, 1).
 *
 * gsl_rng_set(r, seed) seeds with initstate = seed and the fixed stream
 * initseq = 0xda3e39cb94b95bdb.  That constant is borrowed from pcg_basic's
 * PCG32_INITIALIZER, where it is the increment itself rather than initseq,
 * so this default stream is not pcg-c's default generator; it is just one
 * arbitrary fixed stream.  Generators made with sim_rng_create() carry their
 * own stream id, which gsl_rng_set() would overwrite with this default:
 * reseed those with sim_pcg32_seed(sim_rng_pcg(r), ...) instead.
 */
extern const gsl_rng_type *const sim_rng_pcg32;

/* The stream id that gsl_rng_set() uses for sim_rng_pcg32 (see above). */
#define SIM_RNG_GSL_DEFAULT_SEQ 0xda3e39cb94b95bdbULL

/*
 * Allocate a GSL generator of type sim_rng_pcg32 seeded with
 * initstate = `seed` and initseq = `stream_id`, i.e. the same sequence as the
 * reference pcg32(seed, stream_id) / pcg32_srandom_r(rng, seed, stream_id).
 * Pass it to any GSL sampler (gsl_ran_exponential(r, mu), ...).
 * The caller owns the result and frees it with sim_rng_destroy() (or
 * gsl_rng_free(), which is equivalent).  Returns NULL if memory runs out,
 * with nothing left allocated.  ENOMEM only.
 */
gsl_rng *sim_rng_create(uint64_t seed, uint64_t stream_id);

/*
 * Free a generator from sim_rng_create().  `r` may be NULL, in which case
 * nothing happens.  Cannot fail.
 */
void sim_rng_destroy(gsl_rng *r);

/*
 * Return the PCG32 state inside `r`, for fast integer draws with
 * sim_pcg32_next()/sim_pcg32_bounded() on the same stream that GSL
 * samplers use (draws through either view advance the one shared state).
 * `r` must be of type sim_rng_pcg32 (from sim_rng_create()); any other type
 * is a caller bug and aborts via SIM_ALWAYS.  The pointer is owned by `r`
 * and valid until `r` is destroyed.  Cannot fail.
 */
sim_pcg32 *sim_rng_pcg(gsl_rng *r);

/*
 * Stream id of component `index` under the named stream `base`
 * (an enum sim_rng_stream value): (base << 32) | index.  For example the
 * router's stream for destination 7 is sim_rng_substream(SIM_STREAM_ROUTER, 7).
 * The rule is injective for base in [1, 2^31 - 1] and index in
 * [0, 2^32 - 1], and its results (>= 2^32) never equal a bare enum value,
 * so substreams collide neither with each other nor with named streams;
 * base < 2^31 also keeps the result clear of the bit that PCG discards.
 * Out-of-range arguments are a caller bug and abort via SIM_ALWAYS.
 * Cannot fail.
 */
uint64_t sim_rng_substream(uint64_t base, uint64_t index);

#ifdef __cplusplus
}
#endif

#endif
