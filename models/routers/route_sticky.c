/*
 * sticky: plain consistent hashing of the routing key (Karger et al.,
 * STOC 1997) on a ring with router.sticky.vnodes virtual nodes per
 * destination (default 256, as KubeAI's `replication`).  A key always goes to the owner
 * of the first ring position clockwise from its hash.  Load-blind.
 */
#include <stddef.h>

#include "sim/core/error.h"
#include "models/routers/route_int.h"

/* Salt of the ring and key hashes; fixed so a key's destination does not
 * depend on the run seed (a deployed ring does not change per run). */
#define STICKY_SALT 0x5eedc0ffee123457ULL

typedef struct sticky {
    route__ring ring;
} sticky;

static const sim_cfg_key sticky_schema[] = {
    {.path = "vnodes", .type = SIM_CFG_INT, .offset = offsetof(route__sticky_params, vnodes),
     .min = 1, .max = 1e5, .def = "256", .help = "virtual nodes per destination (sticky, chwbl)"},
    {0},
};

/* Read by sticky, chwbl and the cacheroute family (route_int.h). */
const route_section route__sec_sticky = {.prefix = "router.sticky", .schema = sticky_schema,
                                         .params_size = sizeof(route__sticky_params)};

static const route_section *const sticky_sections[] = {&route__sec_sticky, NULL};

static int sticky_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const route__sticky_params *p = params[0];
    return route__check_ring(env->n_dest, p->vnodes, "router.sticky.vnodes", loc);
}

static int sticky_create(void *state, const route_env *env, const void *const *params)
{
    sticky *s = state;
    const route__sticky_params *p = params[0];
    return route__ring_init(&s->ring, env->n_dest, (uint32_t)p->vnodes, STICKY_SALT);
}

static uint32_t sticky_route(void *state, const wl_request *r, const route_view *v)
{
    sticky *s = state;
    uint32_t i = route__ring_find(&s->ring, route__key_hash(r->key, STICKY_SALT));
    if (v && v->down) /* faults: the next live node on the ring (v may be NULL: load-blind) */
        return route__ring_live(&s->ring, i, v);
    return s->ring.dest[i];
}

static void sticky_destroy(void *state)
{
    sticky *s = state;
    route__ring_fini(&s->ring);
}

const route_type route_sticky = {
    .name = "sticky",
    .help = "consistent hashing of the routing key with virtual nodes; load-blind",
    .state_size = sizeof(sticky),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = sticky_sections,
    .check = sticky_check,
    .create = sticky_create,
    .route = sticky_route,
    .destroy = sticky_destroy,
};
