/*
 * flat_lb: power-of-two choices on outstanding requests (Mitzenmacher
 * 2001; as in sgl-router's power_of_two policy).  Draw two distinct
 * destinations uniformly at random, send to the one with fewer requests
 * this router has in flight, ties to the first drawn.  Cache-blind.
 */
#include "sim/core/error.h"
#include "models/route_int.h"

typedef struct flat_lb {
    sim_pcg32 rng;
} flat_lb;

static int flat_lb_create(void *state, const route_env *env, const void *const *params)
{
    flat_lb *s = state;
    (void)params; /* no parameters */
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    return SIM_OK;
}

static uint32_t flat_lb_route(void *state, const wl_request *r, const route_view *v)
{
    flat_lb *s = state;
    (void)r;
    return route__p2c(&s->rng, v);
}

const route_type route_flat_lb = {
    .name = "flat_lb",
    .help = "power of two choices on in-flight requests; cache-blind",
    .state_size = sizeof(flat_lb),
    .create = flat_lb_create,
    .route = flat_lb_route,
};
