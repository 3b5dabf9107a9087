/*
 * round_robin: a Kubernetes Service in front of the engines, kube-proxy in
 * IPVS mode with the `rr` scheduler (kube-proxy's default IPVS scheduler;
 * kubernetes.io, "Virtual IPs and Service Proxies", IPVS proxy mode; Linux
 * net/netfilter/ipvs/ip_vs_rr.c): each new connection goes to the next
 * destination in a fixed cyclic order.  One request per connection is
 * assumed (a client that reuses a keep-alive connection sends all its
 * requests to one pod, which this router does not model).
 *
 * Every router replica (a node's kube-proxy) keeps its own position and
 * decides alone, as each node's IPVS table does; replica i starts at a
 * destination drawn from its own seed (the real order of a Service's
 * endpoints is arbitrary), so replicas are not in lockstep.  A destination
 * the health view marks down is skipped (its endpoint has left the
 * EndpointSlice).  Load-blind and cache-blind.
 *
 * kube-proxy's default mode (iptables, and nftables) picks an endpoint at
 * random per connection instead: that is the `random` router.
 */
#include <stddef.h>

#include "sim/core/error.h"
#include "models/routers/route_int.h"

typedef struct round_robin {
    uint32_t next; /* the destination the next request goes to */
} round_robin;

static int round_robin_create(void *state, const route_env *env, const void *const *params)
{
    (void)params;
    round_robin *s = state;
    sim_pcg32 rng;
    sim_pcg32_seed(&rng, env->seed, SIM_STREAM_ROUTER);
    s->next = sim_pcg32_bounded(&rng, env->n_dest);
    return SIM_OK;
}

static uint32_t round_robin_route(void *state, const wl_request *r, const route_view *v)
{
    round_robin *s = state;
    (void)r;
    uint32_t d = s->next < v->n_dest ? s->next : 0;
    /* faults: the next live destination in the cycle (all down: keep d) */
    for (uint32_t step = 0; step < v->n_dest && route_view_down(v, d); step++)
        d = d + 1 < v->n_dest ? d + 1 : 0;
    s->next = d + 1 < v->n_dest ? d + 1 : 0;
    return d;
}

const route_type route_round_robin = {
    .name = "round_robin",
    .help = "a Kubernetes Service with kube-proxy in IPVS rr mode: destinations in turn; "
            "load- and cache-blind",
    .state_size = sizeof(round_robin),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .create = round_robin_create,
    .route = round_robin_route,
};
