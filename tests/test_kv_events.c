/*
 * Engine KV events (docs/information-model.md, "Engine KV events"):
 *  - engine level, known answer: a small pool, a hand-made stream with
 *    shared prefixes and evictions; a mirror fed only by the engine's
 *    kv_change reports holds, after every step, exactly the cache's
 *    registered blocks (same count, same longest match for every request),
 *    with every stored run's parent held and every removed block held;
 *  - cluster level: events reach a router exactly gateway.kv_event_delay_s
 *    after the change, in non-decreasing delivery order, every replica
 *    sees the same stream, per block stored before removed; at every
 *    other callback of the router (route, on_complete, on_first_token)
 *    it has seen exactly the events due by then (delivery is lazy,
 *    models/cluster.c kv_catch_up); a router that does not ask for
 *    events gets none and the run is unchanged.
 * The routers' block index is tested in tests/test_route_kv.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/cluster.h"
#include "models/engine.h"
#include "models/routers/route.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "sim/core/u64map.h"
#include "check.h"

/* ---- a mirror: the set of (dest, hash) an event consumer holds ---- */

typedef struct mirror {
    sim_u64map held; /* hash ^ dest salt -> 1 */
    uint64_t n, stored, removed;
    uint32_t bad;    /* events inconsistent with the mirror */
} mirror;

static uint64_t mkey(uint32_t dest, uint64_t h) { return h ^ (0x9e3779b97f4a7c15ULL * (dest + 1)); }

static void mirror_apply(mirror *m, uint32_t dest, int kind, uint64_t parent,
                         const uint64_t *hashes, uint32_t n)
{
    if (kind == PCACHE_STORED) {
        if (parent != 0 && sim_u64map_get(&m->held, mkey(dest, parent)) == SIM_U64MAP_NONE)
            m->bad++; /* parent must be held: closed under prefixes */
        for (uint32_t j = 0; j < n; j++) {
            if (sim_u64map_insert(&m->held, mkey(dest, hashes[j]), 1) != SIM_U64MAP_NONE)
                m->bad++; /* stored twice */
            else
                m->n++;
        }
        m->stored += n;
    } else {
        for (uint32_t j = 0; j < n; j++) {
            if (sim_u64map_get(&m->held, mkey(dest, hashes[j])) == SIM_U64MAP_NONE) {
                m->bad++; /* removed before stored */
                continue;
            }
            sim_u64map_del(&m->held, mkey(dest, hashes[j]));
            m->n--;
        }
        m->removed += n;
    }
}

static void eng_kv(void *ctx, uint32_t dest, int kind, uint64_t parent, const uint64_t *hashes,
                   uint32_t n)
{
    mirror_apply(ctx, dest, kind, parent, hashes, n);
}

static void eng_first(void *ctx, uint32_t dest, engine_req *er, double t)
{
    (void)ctx, (void)dest, (void)er, (void)t;
}

static uint32_t n_finished;
static void eng_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    (void)ctx, (void)dest, (void)er, (void)t;
    n_finished++;
}

/* Request j of the hand-made stream: 3 families of shared prefixes, 4..11
 * blocks each, 16-token blocks. */
static void make_req(wl_request *r, uint64_t j)
{
    const uint32_t nb = 4 + (uint32_t)(j * 7 % 8);
    *r = (wl_request){.id = j, .prompt_tokens = nb * 16 + 3, .output_tokens = 2, .n_blocks = nb};
    r->blocks = malloc(nb * sizeof *r->blocks);
    uint64_t h = 0;
    for (uint32_t i = 0; i < nb; i++) {
        /* The first 3 blocks are the family's; the rest are the request's. */
        const uint64_t content = i < 3 ? 1000 + j % 3 * 10 + i : 5000 + j * 100 + i;
        h = r->blocks[i] = wl_block_hash(h, content);
    }
}

static void test_engine_mirror(void)
{
    mirror m = {0};
    CHECK_INT_EQ(sim_u64map_init(&m.held, 64), SIM_OK);
    engine_hooks hk = {.ctx = &m, .first_token = eng_first, .finish = eng_finish,
                       .kv_change = eng_kv};
    engine_params p = {.block_size = 16, .max_num_batched_tokens = 64, .max_num_seqs = 4,
                       .prefix_caching = true};
    const cost_linear lin = {.a_s = 0.01};
    cost_model cm;
    cost_linear_init(&cm, &lin);
    enum { N = 60 };
    engine *e = engine_create(0, 40, &p, &cm, &hk); /* 40 blocks: evictions */
    CHECK(e != NULL);
    wl_request *r = calloc(N, sizeof *r);
    engine_req *er = calloc(N, sizeof *er);
    double t = 0;
    for (uint64_t j = 0; j < N; j++) {
        make_req(&r[j], j);
        er[j].r = &r[j];
        engine_submit(e, &er[j], t);
        /* Run a few steps between submissions, checking the mirror. */
        for (int k = 0; k < 3; k++) {
            const double d = engine_try_start(e, t);
            if (d <= 0)
                break;
            t += d;
            CHECK_INT_EQ(engine_kv_used_blocks(e), pcache_pinned(engine_cache(e)));
            engine_step_done(e, t);
            const pcache *c = engine_cache(e);
            CHECK_U64_EQ(m.n, pcache_cached(c));
            /* The scraped KV usage is the pool's pinned count (kept by the engine). */
            CHECK_INT_EQ(engine_kv_used_blocks(e), pcache_pinned(c));
            for (uint64_t i = 0; i <= j; i++) { /* same longest match */
                uint32_t len = 0;
                while (len < r[i].n_blocks &&
                       sim_u64map_get(&m.held, mkey(0, r[i].blocks[len])) != SIM_U64MAP_NONE)
                    len++;
                CHECK_INT_EQ(len, pcache_match(c, r[i].blocks, r[i].n_blocks, NULL));
            }
        }
    }
    double d;
    while ((d = engine_try_start(e, t)) > 0) {
        t += d;
        engine_step_done(e, t);
    }
    CHECK_INT_EQ(n_finished, N);
    CHECK_INT_EQ(m.bad, 0);
    CHECK_U64_EQ(m.n, pcache_cached(engine_cache(e)));
    CHECK(m.removed > 0 && m.stored > m.removed); /* the pool did evict */
    engine_destroy(e);
    for (uint64_t j = 0; j < N; j++)
        wl_request_fini(&r[j]);
    free(r);
    free(er);
    sim_u64map_fini(&m.held);
}

/* ---- cluster level: a recording router ---- */

static spec_hw hw;
static spec_model model;

#define EV_MAX 200000
typedef struct kvrec {
    double t, now;
    uint32_t dest, n;
    int kind;
} kvrec;
/* A router callback: its time and how many events had arrived by then. */
typedef struct cbrec {
    double now;
    uint32_t seen;
} cbrec;
typedef struct krouter {
    uint32_t id;
    kvrec *log;
    uint32_t n_log;
    cbrec *cb;
    uint32_t n_cb;
    mirror m;
    double last_now;
    uint32_t disorder;
} krouter;
static uint32_t kr_next_id;
static unsigned kr_needs_bits = ROUTE_NEEDS_KV_EVENTS;

static int kr_create(void *state, const route_env *env, const void *const *params)
{
    krouter *s = state;
    (void)env, (void)params;
    s->id = kr_next_id++;
    s->log = calloc(EV_MAX, sizeof *s->log);
    s->cb = calloc(EV_MAX, sizeof *s->cb);
    CHECK_INT_EQ(sim_u64map_init(&s->m.held, 1024), SIM_OK);
    return SIM_OK;
}
static void kr_destroy(void *state)
{
    krouter *s = state;
    free(s->log);
    free(s->cb);
    sim_u64map_fini(&s->m.held);
}
static void kr_callback(krouter *s, double now)
{
    if (s->n_cb < EV_MAX)
        s->cb[s->n_cb++] = (cbrec){now, s->n_log};
}
static uint32_t kr_route(void *state, const wl_request *r, const route_view *v)
{
    kr_callback(state, v->now_s);
    return (uint32_t)(r->id % v->n_dest);
}
static void kr_complete(void *state, const wl_request *r, uint32_t dest, const route_done *d)
{
    (void)r, (void)dest;
    kr_callback(state, d->now_s);
}
static void kr_first(void *state, const wl_request *r, uint32_t dest, double now_s)
{
    (void)r, (void)dest;
    kr_callback(state, now_s);
}
static unsigned kr_needs(const void *const *params)
{
    (void)params;
    return kr_needs_bits;
}
static void kr_event(void *state, const route_kv_event *ev)
{
    krouter *s = state;
    if (s->n_log < EV_MAX)
        s->log[s->n_log++] = (kvrec){ev->t_s, ev->now_s, ev->dest, ev->n, ev->kind};
    if (ev->now_s < s->last_now)
        s->disorder++;
    s->last_now = ev->now_s;
    mirror_apply(&s->m, ev->dest, ev->kind, ev->parent, ev->hashes, ev->n);
}

static const route_type kr_type = {.name = "kv_recorder", .help = "test",
                                   .state_size = sizeof(krouter), .needs = kr_needs,
                                   .create = kr_create, .route = kr_route, .destroy = kr_destroy,
                                   .on_kv_event = kr_event, .on_complete = kr_complete,
                                   .on_first_token = kr_first};

/* Saved at destroy so the test can read the replicas' logs. */
typedef struct big {
    uint64_t n, next;
} big;
static int big_next(void *state, wl_request *r)
{
    big *b = state;
    if (b->next == b->n)
        return 0;
    const uint64_t j = b->next++;
    const uint32_t nb = 200; /* 3200-token prompts, all distinct but a shared first block */
    *r = (wl_request){.id = j, .arrival_s = 0.05 * (double)j, .prompt_tokens = nb * 16,
                      .output_tokens = 2, .n_blocks = nb};
    r->blocks = malloc(nb * sizeof *r->blocks);
    uint64_t h = 0;
    for (uint32_t i = 0; i < nb; i++)
        h = r->blocks[i] = wl_block_hash(h, i == 0 ? 1 : j * 1000 + i);
    return 1;
}

static krouter *saved[4];
static void kr_destroy_save(void *state)
{
    krouter *s = state;
    krouter *copy = malloc(sizeof *copy);
    *copy = *s; /* takes the log and the map */
    saved[s->id % 4] = copy;
}

static void test_cluster_delivery(void)
{
    const double delay = 0.0137;
    route_type rt = kr_type;
    rt.destroy = kr_destroy_save;
    cluster_params p = {
        .n_dest = 2,
        .deploy = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                   .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16},
        .engine = {.block_size = 16, .max_num_batched_tokens = 8192, .max_num_seqs = 64,
                   .prefix_caching = true},
        .drain_s = 1e6,
        .gateway = {.scrape_interval_s = 0, .replicas = 2, .kv_event_delay_s = delay},
    };
    const cost_linear lin = {.a_s = 0.01};
    cost_linear_init(&p.cost, &lin);
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse("router: {}", "test_kv_events", &rc), SIM_OK);
    route_env env = {.n_dest = 2, .seed = 1, .block_size = 16};
    big b = {.n = 400};
    cluster_result res;
    kr_next_id = 0;
    CHECK_INT_EQ(cluster_run(&p, &rt, &env, rc, (wl_source){.state = &b, .next = big_next}, &res), SIM_OK);
    CHECK_U64_EQ(res.n_completed, 400);
    CHECK(res.kv_events > 0);
    krouter *a = saved[0], *c = saved[1];
    CHECK(a && c);
    CHECK(a->n_log > 0 && a->n_log < EV_MAX);
    CHECK_INT_EQ(a->n_log, c->n_log); /* every replica gets every event */
    CHECK_INT_EQ(a->disorder, 0);
    CHECK_INT_EQ(a->m.bad, 0);        /* stored before removed, parents held */
    CHECK(a->m.removed > 0);          /* 400 x 100 blocks on 2 x 28k: evictions */
    uint32_t exact = 0;
    for (uint32_t i = 0; i < a->n_log; i++) {
        exact += a->log[i].now == a->log[i].t + delay;
        CHECK(a->log[i].t == c->log[i].t && a->log[i].dest == c->log[i].dest &&
              a->log[i].n == c->log[i].n && a->log[i].kind == c->log[i].kind);
        if (i > 0)
            CHECK(a->log[i].now >= a->log[i - 1].now);
    }
    CHECK_INT_EQ(exact, a->n_log);    /* delivered exactly `delay` later */
    /* At every router callback (routing decision, completion, first
     * token), the router has seen exactly the events due by then: every
     * event due before the callback's time, none due after it. */
    uint32_t late = 0, early = 0, j = 0;
    CHECK(a->n_cb > 500 && a->n_cb < EV_MAX); /* its 200 requests, 3 callbacks each */
    for (uint32_t i = 0; i < a->n_cb; i++) {
        const double now = a->cb[i].now;
        while (j < a->n_log && a->log[j].now < now)
            j++;
        late += a->cb[i].seen < j;                          /* one due before not seen */
        early += a->cb[i].seen > j &&
                 a->log[a->cb[i].seen - 1].now > now;       /* one due after seen */
    }
    CHECK_INT_EQ(late, 0);
    CHECK_INT_EQ(early, 0);
    /* Every request's blocks were stored once on its destination (200
     * blocks, the shared first one once per destination), except that the
     * run ends with the last request's completion, in the step that
     * registered its 199 own blocks: that event is still in flight. */
    CHECK_U64_EQ(a->m.stored, 400 * 199 + 2 - 199);
    for (int i = 0; i < 2; i++) {
        kr_destroy(saved[i]);
        free(saved[i]);
        saved[i] = NULL;
    }
    cluster_result_fini(&res);

    /* A router that does not ask for events gets none; the run is the same. */
    kr_needs_bits = 0;
    b = (big){.n = 400};
    cluster_result res2;
    kr_next_id = 0;
    CHECK_INT_EQ(cluster_run(&p, &rt, &env, rc, (wl_source){.state = &b, .next = big_next}, &res2), SIM_OK);
    CHECK_U64_EQ(res2.kv_events, 0);
    CHECK_INT_EQ(saved[0]->n_log, 0);
    CHECK(res2.sim_end_s == res.sim_end_s && res2.hit_tokens == res.hit_tokens);
    for (int i = 0; i < 2; i++) {
        kr_destroy(saved[i]);
        free(saved[i]);
        saved[i] = NULL;
    }
    kr_needs_bits = ROUTE_NEEDS_KV_EVENTS;
    cluster_result_fini(&res2);
    route_config_free(rc);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_kv_events SPEC_DIR\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    CHECK_INT_EQ(spec_hw_load("h100-sxm", &hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load("llama-3.3-70b", &model), SIM_OK);
    test_engine_mirror();
    test_cluster_delivery();
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    puts("kv_events: ok");
    return 0;
}
