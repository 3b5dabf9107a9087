/*
 * random: a Kubernetes Service in front of the engines, kube-proxy in its
 * default iptables mode (and in nftables mode), which picks one of the
 * Service's ready endpoints uniformly at random for each new connection
 * (kubernetes.io, "Virtual IPs and Service Proxies": iptables proxy mode
 * "selects a backend at random"; kube-proxy writes one `statistic --mode
 * random --probability 1/(n-i)` rule per endpoint, pkg/proxy/iptables/
 * proxier.go).  One request per connection is assumed, as for round_robin.
 * A destination the health view marks down is not a candidate.  Draws
 * from PCG stream (seed, SIM_STREAM_ROUTER); load- and cache-blind.
 */
#include <stddef.h>

#include "sim/core/error.h"
#include "models/routers/route_int.h"

typedef struct random_router {
    sim_pcg32 rng;
} random_router;

static int random_create(void *state, const route_env *env, const void *const *params)
{
    (void)params;
    random_router *s = state;
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    return SIM_OK;
}

static uint32_t random_route(void *state, const wl_request *r, const route_view *v)
{
    random_router *s = state;
    (void)r;
    if (v->down) { /* faults: uniform over the live destinations */
        uint32_t n_up = 0;
        for (uint32_t d = 0; d < v->n_dest; d++)
            n_up += !v->down[d];
        if (n_up > 0 && n_up < v->n_dest) {
            uint32_t k = sim_pcg32_bounded(&s->rng, n_up);
            for (uint32_t d = 0;; d++)
                if (!v->down[d] && k-- == 0)
                    return d;
        }
    }
    return sim_pcg32_bounded(&s->rng, v->n_dest);
}

const route_type route_random = {
    .name = "random",
    .help = "a Kubernetes Service with kube-proxy in iptables (default) mode: a destination "
            "uniformly at random; load- and cache-blind",
    .state_size = sizeof(random_router),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .create = random_create,
    .route = random_route,
};
