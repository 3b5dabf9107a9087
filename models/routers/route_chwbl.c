/*
 * chwbl: consistent hashing with bounded loads (Mirrokni, Thorup and
 * Zadimoghaddam, SODA 2018), on the same ring as `sticky`.
 *
 * With T requests in flight over R destinations, the new request makes
 * T + 1, and every destination may hold at most
 *     B = max(1, ceil(c · (T + 1) / R))
 * of them (c = 1 + ε, default 1.25, the value used by Google's load
 * balancer, Vimeo, HAProxy's hash-balance-factor and KubeAI).  The request
 * walks the ring clockwise from its key's position and goes to the first
 * destination whose load would stay within B (load + 1 <= B).  Because
 * R · B >= c · (T + 1) > T, some destination always qualifies, so the
 * fallback to the key's home destination is reached only if none does
 * (kept for safety, as in KubeAI, whose fallback is also the home node).
 *
 * The max(1, ·) avoids the trap of the relative test when the cluster is
 * nearly idle (T << R): without it the bound falls below one request and
 * every busy destination fails it (documented as KubeAI issue #519).
 * c = infinity reduces to `sticky`.  Load = this router's in-flight count.
 *
 * Key (router.chwbl.key): `prefix` (default) hashes what KubeAI's
 * PrefixHash gateway sees, the first 100 characters of the prompt
 * (substratusai/kubeai, internal/loadbalancer: prefixCharLength 100).
 * crsim has tokens, not characters: the key is the chained hash of the
 * first ceil(prefix_tokens / block_size) KV blocks, i.e. of the leading
 * prefix_tokens tokens rounded up to whole blocks; prefix_tokens defaults
 * to 25 = 100 characters / 4 characters per token (OpenAI's rule of thumb
 * for English text, "one token is about 4 characters"; Llama 3's 128k
 * tokenizer is of the same order).  A prompt shorter than one block, or a
 * gateway that does not know the block size (route_env.block_size 0), uses
 * the routing key.  `routing_key` hashes the workload's business key
 * (crsim <= 0.1, the paper's setting).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "models/routers/route_int.h"

#define CHWBL_SALT 0x5eedc0ffee123457ULL /* same ring as sticky */

typedef struct chwbl {
    route__ring ring;
    double c;
    uint32_t key_blocks; /* 0 = routing key; else leading blocks hashed */
    uint8_t *seen; /* per destination: visited in this walk */
} chwbl;

typedef struct chwbl_params {
    double c;              /* bound factor c = 1 + eps, >= 1 */
    int key;               /* index in chwbl_key_names */
    int64_t prefix_tokens; /* key: prefix — leading tokens hashed */
} chwbl_params;

static const char *const chwbl_key_names[] = {"prefix", "routing_key", NULL};

static const sim_cfg_key chwbl_schema[] = {
    {.path = "c", .type = SIM_CFG_DOUBLE, .offset = offsetof(chwbl_params, c), .min = 1,
     .max = 1e9, .def = "1.25",
     .help = "bound factor c = 1 + eps: at most ceil(c x mean) in flight per destination"},
    {.path = "key", .type = SIM_CFG_ENUM, .offset = offsetof(chwbl_params, key),
     .choices = chwbl_key_names, .def = "prefix",
     .help = "what is hashed: prefix = the leading prefix_tokens of the prompt, as KubeAI "
             "hashes its first 100 characters; routing_key = the business key (crsim <= 0.1)"},
    {.path = "prefix_tokens", .type = SIM_CFG_INT, .offset = offsetof(chwbl_params, prefix_tokens),
     .min = 1, .max = 1e7, .def = "25", .unit = "tokens",
     .help = "key: prefix — tokens hashed, rounded up to whole KV blocks (25 = KubeAI's 100 "
             "characters at ~4 characters per token)"},
    {0},
};

const route_section route__sec_chwbl = {.prefix = "router.chwbl", .schema = chwbl_schema,
                                        .params_size = sizeof(chwbl_params)};

/* The ring is sticky's (router.sticky.vnodes); the bound is chwbl's own. */
static const route_section *const chwbl_sections[] = {&route__sec_sticky, &route__sec_chwbl,
                                                      NULL};

static int chwbl_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const route__sticky_params *sp = params[0];
    return route__check_ring(env->n_dest, sp->vnodes, "router.sticky.vnodes", loc);
}

static int chwbl_create(void *state, const route_env *env, const void *const *params)
{
    chwbl *s = state;
    const route__sticky_params *sp = params[0];
    const chwbl_params *p = params[1];
    if (!(p->c >= 1.0))
        return SIM_ERROR(SIM_EINVAL, "router.chwbl.c is %g; expected a bound factor >= 1", p->c);
    int rc = route__ring_init(&s->ring, env->n_dest, (uint32_t)sp->vnodes, CHWBL_SALT);
    if (rc)
        return rc;
    s->c = p->c;
    s->key_blocks = 0;
    if (p->key == 0 && env->block_size > 0) /* block size unknown: the routing key */
        s->key_blocks = (uint32_t)(((uint64_t)p->prefix_tokens + env->block_size - 1) /
                                   env->block_size);
    s->seen = calloc(env->n_dest, 1);
    if (!s->seen) {
        route__ring_fini(&s->ring);
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating chwbl");
    }
    return SIM_OK;
}

/* The per-destination bound for the next request, in requests. */
static uint64_t chwbl_bound(double c, uint64_t total, uint32_t n_dest)
{
    double b = ceil(c * (double)(total + 1) / (double)n_dest);
    return b < 1.0 ? 1 : (uint64_t)b;
}

static uint32_t chwbl_route(void *state, const wl_request *r, const route_view *v)
{
    chwbl *s = state;
    uint64_t total = 0;
    for (uint32_t d = 0; d < v->n_dest; d++)
        total += v->outstanding[d];
    const uint64_t bound = chwbl_bound(s->c, total, v->n_dest);
    uint64_t key = r->key;
    if (s->key_blocks && r->n_blocks > 0) /* chained: the last hashed block names them all */
        key = r->blocks[(r->n_blocks < s->key_blocks ? r->n_blocks : s->key_blocks) - 1];
    uint32_t i = route__ring_find(&s->ring, route__key_hash(key, CHWBL_SALT));
    const uint32_t home = s->ring.dest[i];
    uint32_t chosen = home, distinct = 0;
    /* Walk at most one lap, testing each destination once. */
    for (uint32_t step = 0; step < s->ring.n && distinct < v->n_dest; step++) {
        uint32_t d = s->ring.dest[(i + step) % s->ring.n];
        if (s->seen[d])
            continue;
        s->seen[d] = 1;
        distinct++;
        if (route_view_down(v, d)) /* faults: skip a down node */
            continue;
        if ((uint64_t)v->outstanding[d] + 1 <= bound) {
            chosen = d;
            break;
        }
    }
    /* Clear the marks (only the visited ones, by walking again). */
    for (uint32_t step = 0, left = distinct; left > 0; step++) {
        uint32_t d = s->ring.dest[(i + step) % s->ring.n];
        if (s->seen[d]) {
            s->seen[d] = 0;
            left--;
        }
    }
    if (route_view_down(v, chosen)) /* faults: all over the bound, home down */
        chosen = route__ring_live(&s->ring, i, v);
    return chosen;
}

static void chwbl_destroy(void *state)
{
    chwbl *s = state;
    route__ring_fini(&s->ring);
    free(s->seen);
}

const route_type route_chwbl = {
    .name = "chwbl",
    .help = "consistent hashing with bounded loads (c = router.chwbl.c, default 1.25)",
    .state_size = sizeof(chwbl),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = chwbl_sections,
    .check = chwbl_check,
    .create = chwbl_create,
    .route = chwbl_route,
    .destroy = chwbl_destroy,
};
