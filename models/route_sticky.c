/*
 * sticky: plain consistent hashing of the routing key (Karger et al.,
 * STOC 1997) on a ring with `sticky_vnodes` virtual nodes per destination
 * (default 256, as KubeAI's `replication`).  A key always goes to the owner
 * of the first ring position clockwise from its hash.  Load-blind.
 */
#include "sim/core/error.h"
#include "models/route_int.h"

/* Salt of the ring and key hashes; fixed so a key's destination does not
 * depend on the run seed (a deployed ring does not change per run). */
#define STICKY_SALT 0x5eedc0ffee123457ULL

typedef struct sticky {
    route__ring ring;
} sticky;

static int sticky_create(void *state, const route_params *p)
{
    sticky *s = state;
    return route__ring_init(&s->ring, p->n_dest, p->sticky_vnodes, STICKY_SALT);
}

static uint32_t sticky_route(void *state, const wl_request *r, const route_view *v)
{
    sticky *s = state;
    (void)v;
    uint32_t i = route__ring_find(&s->ring, route__key_hash(r->key, STICKY_SALT));
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
    .create = sticky_create,
    .route = sticky_route,
    .destroy = sticky_destroy,
};
