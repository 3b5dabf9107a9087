/*
 * flat_lb: cache-blind load balancing.  The default is power-of-two
 * choices on outstanding requests (Mitzenmacher 2001; as in sgl-router's
 * power_of_two policy): draw two distinct destinations uniformly at
 * random, send to the one with fewer requests this router has in flight,
 * ties to the first drawn.
 *
 * Two options (router.flat_lb, docs/policies.md) make the variants of the
 * staleness study (Mitzenmacher, "How useful is old information?", IEEE
 * TPDS 11(1), 2000; docs/information-model.md):
 *   signal   inflight: this router replica's own in-flight count
 *                      (route_view.outstanding; exact, but blind to the
 *                      other replicas' requests);
 *            queue:    the engines' waiting-request count as scraped
 *                      (route_view.waiting; shared by every replica, as
 *                      stale as the scrape).
 *   choices  2:   two random choices, ties to the first drawn;
 *            all: least loaded over every destination, ties broken
 *                 uniformly at random (the "least loaded" rule of the
 *                 paper, and what a gateway scoring every endpoint on a
 *                 queue metric does).
 * The defaults (inflight, 2) are the router of earlier versions, draw for
 * draw.
 */
#include <stddef.h>

#include "sim/core/error.h"
#include "models/routers/route_int.h"

enum { SIGNAL_INFLIGHT = 0, SIGNAL_QUEUE = 1 };
enum { CHOICES_TWO = 0, CHOICES_ALL = 1 };

typedef struct flat_lb_params {
    int signal;  /* SIGNAL_* */
    int choices; /* CHOICES_* */
} flat_lb_params;

static const char *const signal_names[] = {"inflight", "queue", NULL};
static const char *const choices_names[] = {"2", "all", NULL};

static const sim_cfg_key flat_lb_schema[] = {
    {.path = "signal", .type = SIM_CFG_ENUM, .offset = offsetof(flat_lb_params, signal),
     .choices = signal_names, .def = "inflight",
     .help = "load signal: inflight = this router replica's own in-flight requests (sgl-router "
             "power_of_two); queue = the engines' waiting requests as scraped (gateway.*)"},
    {.path = "choices", .type = SIM_CFG_ENUM, .offset = offsetof(flat_lb_params, choices),
     .choices = choices_names, .def = "2",
     .help = "2 = power of two choices (ties to the first drawn); all = least loaded over "
             "every destination (ties at random)"},
    {0},
};

const route_section route__sec_flat_lb = {.prefix = "router.flat_lb", .schema = flat_lb_schema,
                                          .params_size = sizeof(flat_lb_params)};

static const route_section *const flat_lb_sections[] = {&route__sec_flat_lb, NULL};

typedef struct flat_lb {
    sim_pcg32 rng;
    flat_lb_params p;
} flat_lb;

static int flat_lb_create(void *state, const route_env *env, const void *const *params)
{
    flat_lb *s = state;
    s->p = *(const flat_lb_params *)params[0];
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    return SIM_OK;
}

/* The default signal (inflight) reads no scraped metric: no scrape
 * snapshot is taken for it (route.h, ROUTE_READS_NO_METRICS). */
static unsigned flat_lb_needs(const void *const *params)
{
    const flat_lb_params *p = params[0];
    return p->signal == SIGNAL_INFLIGHT ? ROUTE_READS_NO_METRICS : 0;
}

static inline uint32_t load_of(const flat_lb *s, const route_view *v, uint32_t d)
{
    return s->p.signal == SIGNAL_QUEUE ? v->waiting[d] : v->outstanding[d];
}

static uint32_t flat_lb_route(void *state, const wl_request *r, const route_view *v)
{
    flat_lb *s = state;
    (void)r;
    if (s->p.choices == CHOICES_TWO) {
        if (s->p.signal == SIGNAL_INFLIGHT)
            return route__p2c(&s->rng, v); /* the default, as before */
        if (v->n_dest == 1)
            return 0;
        if (v->down) /* faults: live candidates only (route__p2c) */
            return route__p2c(&s->rng, &(route_view){.n_dest = v->n_dest,
                                                     .outstanding = v->waiting,
                                                     .down = v->down});
        /* The same draws as route__p2c, on the scraped queue. */
        uint32_t a = sim_pcg32_bounded(&s->rng, v->n_dest);
        uint32_t b = sim_pcg32_bounded(&s->rng, v->n_dest - 1);
        if (b >= a)
            b++;
        return load_of(s, v, b) < load_of(s, v, a) ? b : a;
    }
    /* Least loaded; the j-th tie replaces the choice with probability 1/j
     * (reservoir sampling), so ties are uniform. */
    uint32_t best = 0, ties = 1, lo = load_of(s, v, 0);
    if (route_view_down(v, 0)) /* faults: a down destination loses to any live one */
        lo = UINT32_MAX;
    for (uint32_t d = 1; d < v->n_dest; d++) {
        if (route_view_down(v, d))
            continue;
        const uint32_t x = load_of(s, v, d);
        if (x < lo || (lo == UINT32_MAX && route_view_down(v, best))) {
            lo = x;
            best = d;
            ties = 1;
        } else if (x == lo && sim_pcg32_bounded(&s->rng, ++ties) == 0) {
            best = d;
        }
    }
    return best;
}

const route_type route_flat_lb = {
    .name = "flat_lb",
    .help = "power of two choices on in-flight requests (router.flat_lb: signal, choices); "
            "cache-blind",
    .state_size = sizeof(flat_lb),
    .sections = flat_lb_sections,
    .needs = flat_lb_needs,
    .create = flat_lb_create,
    .route = flat_lb_route,
};
