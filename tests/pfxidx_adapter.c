/*
 * The sim/core/pfxidx.h interface on the per-block reference
 * (tests/pfxidx_ref.c): linked instead of sim/core/pfxidx.c into a second
 * build of the simulator (tests/meson.build: equiv_dm_sim), so that
 * tests/pfxidx_equiv.sh can check that the run queue and the per-block
 * table give bit-identical dualmap simulations.  For tests only.
 */
#include "sim/core/pfxidx.h"
#include "pfxidx_ref.h"

/* A sim_pfxidx handle is a pfxidx_ref handle (never dereferenced here). */

sim_pfxidx *sim_pfxidx_create(uint32_t capacity, uint32_t n_dest)
{
    return (sim_pfxidx *)pfxidx_ref_create(capacity, n_dest);
}

void sim_pfxidx_destroy(sim_pfxidx *x)
{
    pfxidx_ref_destroy((pfxidx_ref *)x);
}

void sim_pfxidx_expire(sim_pfxidx *x, double before)
{
    pfxidx_ref_expire((pfxidx_ref *)x, before);
}

uint32_t sim_pfxidx_match(const sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d)
{
    return pfxidx_ref_match((const pfxidx_ref *)x, h, n, d);
}

void sim_pfxidx_add(sim_pfxidx *x, const uint64_t *h, uint32_t n, uint32_t d, double now)
{
    pfxidx_ref_add((pfxidx_ref *)x, h, n, d, now);
}

uint32_t sim_pfxidx_size(const sim_pfxidx *x)
{
    return pfxidx_ref_size((const pfxidx_ref *)x);
}
