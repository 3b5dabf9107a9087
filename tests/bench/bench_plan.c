/*
 * Plan-build benchmark: CacheRoute table for 128,824 keys (the paper's
 * key population; the paper reports 345 ms) and for 10^6 keys, R = 30,
 * with lognormal key rates (σ = 2, PCG stream (1, SIM_STREAM_KEYS)) scaled
 * to 100 requests/s in total, q_cap = 6 requests/s, W = 4.  Prints the
 * median of repeated builds and the machine.  Not a test: no assertions on
 * time.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/routers/plan.h"
#include "sim/core/rng.h"
#include "sim/core/wall.h"

static void bench(size_t n, int reps)
{
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_KEYS);
    plan_key *keys = malloc(n * sizeof *keys);
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        keys[i].key = gsl_rng_get(r) << 32 | gsl_rng_get(r);
        keys[i].rate = gsl_ran_lognormal(r, 0, 2);
        total += keys[i].rate;
    }
    for (size_t i = 0; i < n; i++)
        keys[i].rate *= 100 / total;
    plan_params p = {.n_dest = 30, .q_cap = 6, .slots = 4, .placement = PLAN_LPT, .replicate = 1};
    double *t = malloc((size_t)reps * sizeof *t);
    size_t admitted = 0;
    for (int k = 0; k < reps; k++) {
        plan pl;
        double t0 = sim_wall_s();
        plan_build(keys, n, &p, &pl);
        t[k] = sim_wall_s() - t0;
        admitted = pl.n_admitted;
        plan_fini(&pl);
    }
    gsl_sort(t, 1, (size_t)reps);
    printf("plan build: %8zu keys, R = 30: median %8.3f ms, min %8.3f ms over %d builds "
           "(%zu admitted)\n", n, 1e3 * t[reps / 2], 1e3 * t[0], reps, admitted);
    free(t);
    free(keys);
    sim_rng_destroy(r);
}

int main(void)
{
    bench(128824, 21);
    bench(1000000, 7);
    return 0;
}
