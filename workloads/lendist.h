/*
 * A length distribution of the synthetic generators (workloads/synth.c,
 * open-loop; workloads/client.c, closed-loop): turns, input, output and
 * prefix lengths in tokens (turns in turns), drawn from the law a
 * `wl_lenspec` names (docs/config.md, workload.input.* and the others),
 * rounded to the nearest integer and clamped to [min, max].  Internal to
 * the workloads module (double-underscore names, STYLE.md §1).
 *
 * Laws, parameterised by mean m and coefficient of variation cv:
 *   const: m; uniform: an integer uniform on [min, max] (m and cv unused);
 *   lognormal: σ² = ln(1 + cv²), μ = ln m − σ²/2 (so E = m, CV = cv);
 *   gamma: shape 1/cv², scale m·cv² (E = m, CV = cv).
 * A cv of 0 is const (uniform stays uniform).
 */
#ifndef CRSIM_WORKLOADS_LENDIST_H
#define CRSIM_WORKLOADS_LENDIST_H

#include <math.h>
#include <stdint.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/core/rng.h"
#include "workloads/wl_config.h"

typedef struct wl__lendist {
    int kind;          /* enum wl_lendist */
    double mean, a, b; /* mean, tokens; lognormal: μ, σ; gamma: shape, scale */
    uint32_t min, max; /* clamp, tokens */
} wl__lendist;

/* The distribution of `l` (its `dist` one of wl_lendist_names, as the
 * schema admits; any other name is gamma).  Cannot fail.  (lendist.c) */
wl__lendist wl__lendist_make(const wl_lenspec *l);

/* One draw from `d` with generator `r`: rounded to the nearest integer,
 * clamped to [min, max] (a NaN draw gives min).  Inline: it is on the
 * generators' per-request path. */
static inline uint32_t wl__lendist_draw(const wl__lendist *d, gsl_rng *r)
{
    double x;
    switch (d->kind) {
    case WL_LEN_UNIFORM:
        return d->min + sim_pcg32_bounded(sim_rng_pcg(r), d->max - d->min + 1);
    case WL_LEN_LOGNORMAL: x = gsl_ran_lognormal(r, d->a, d->b); break;
    case WL_LEN_GAMMA: x = gsl_ran_gamma(r, d->a, d->b); break;
    default: x = d->mean; break;
    }
    x = floor(x + 0.5);
    if (!(x >= d->min))
        return d->min;
    if (x > d->max)
        return d->max;
    return (uint32_t)x;
}

#endif
