/*
 * The run loop of one simulation: arrivals, routing, engine steps and
 * completions on the event kernel, then metrics.
 *
 * Event kinds: one pending ARRIVAL (the stream is pulled lazily, one
 * request ahead), at most one STEP completion per destination, END (last
 * arrival + drain), the routers' control INTERVAL and, with a scraped
 * information model, the engine SCRAPE (models/cluster.h).  Scrapes only
 * read engine state, so they change no engine behaviour.  Ties at equal
 * times are broken by insertion order (sim_evq), which keeps runs
 * bit-for-bit deterministic.
 */
#include "sim/core/number.h"
#include "models/cluster.h"
#include "models/latency.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/evq.h"
#include "sim/core/metrics.h"
#include "sim/core/sort.h"

enum { EV_ARRIVAL = 1, EV_STEP, EV_END, EV_INTERVAL, EV_SCRAPE, EV_FAULT, EV_RFAULT,
       EV_HEALTH, EV_RETRY };

/* A destination's service state under faults (docs/faults.md). */
enum { DEST_UP = 0, DEST_DRAIN = 1, DEST_DOWN = 2 };

/* A request inside the cluster: engine state plus the request itself. */
typedef struct creq {
    engine_req er;
    wl_request r;
    uint32_t replica; /* the gateway replica that routed it */
} creq;

/* Engine metrics of every destination at one instant (route_view). */
typedef struct snapshot {
    double t;          /* when taken, s */
    bool unread;       /* not taken: no dispatch can see it (on_scrape) */
    uint64_t *queued;  /* n_dest entries each */
    uint32_t *waiting;
    uint32_t *running;
    double *kv_util;
} snapshot;

/* An engine KV event waiting out its delay (hashes in the FIFO's pool). */
typedef struct kv_rec {
    double t, due;   /* cache change, delivery; s */
    uint64_t parent;
    size_t off;      /* first hash in kv_hash */
    uint32_t n, dest;
    int kind;
} kv_rec;

typedef struct cluster {
    const cluster_params *p;
    sim_evq *q;
    engine **eng;
    sim_event **step_ev;
    uint32_t n_rep;        /* gateway replicas */
    uint32_t *outstanding; /* n_rep x n_dest: replica i's at [i * n_dest] */
    void **rstate;         /* n_rep router states */
    sim_pcg32 assign_rng;  /* random replica assignment */
    /* Scraped metrics: the exact view uses ring[0] as live arrays; a
     * scraped one keeps snapshots seq_vis .. seq_new in ring[seq % n_ring]
     * (seq_vis is the one routers see). */
    bool exact;
    bool blind;            /* rt->metrics_blind or ROUTE_READS_NO_METRICS:
                              no scrape is taken or read */
    bool cruise;           /* engine_cruise on (CRSIM_CRUISE=0: off, for tests) */
    uint8_t *planned;      /* n_dest: the engine has a cruise plan (engine_cruise) */
    snapshot *ring;
    uint32_t n_ring;
    uint64_t seq_vis, seq_new;
    const route_type *rt;
    wl_source src;
    bool closed;           /* src is a closed-loop client (src.peek) */
    sim_event *arr_ev;     /* the one ARRIVAL (or END) event */
    wl_request pending;
    route_ops ops;
    bool have_pending;
    bool arrivals_done;
    bool loop_done;        /* the event loop has ended (drop KV events) */
    /* KV events in delivery order: kv[kv_head .. kv_n), their hashes in
     * kv_hash[kv_hash_head .. kv_hash_n).  Delivered lazily (kv_catch_up):
     * before any router callback, every event due by then. */
    kv_rec *kv;
    size_t kv_head, kv_n, kv_cap;
    uint64_t *kv_hash;
    size_t kv_hash_head, kv_hash_n, kv_hash_cap;
    uint64_t kv_firings;   /* deliveries as the kernel events they stand for */
    double kv_fire_due;    /* due time of the last of them */
    uint64_t inflight;     /* requests in engines or waiting to be retried */
    /* Faults (models/cluster.h cluster_faults); all NULL/false without. */
    bool faults_on;
    uint8_t *dstate;       /* n_dest: DEST_UP / DEST_DRAIN / DEST_DOWN */
    double *slow;          /* n_dest: step-time factor (1 = normal) */
    uint8_t *down_view;    /* n_dest: route_view.down, set at health checks */
    uint8_t *rdown;        /* n_dest: the random process crashed it */
    sim_pcg32 *frng;       /* n_dest: random fault streams */
    /* Retries in due order (one delay, so the FIFO is sorted): rq[rq_head
     * .. rq_n) due at rq_due[]; retry_ev scheduled at the head's due. */
    creq **rq;
    double *rq_due;
    size_t rq_head, rq_n, rq_cap;
    sim_event *retry_ev;
    cluster_result *res;
    uint64_t cap_rec;
    /* Request records of finished requests, for reuse by the next
     * arrivals (a LIFO through their first word): one calloc per request
     * in flight at the peak instead of a calloc and free per request. */
    creq *creq_free;
} cluster;

static void kv_catch_up(cluster *c, double now, bool incl);
static void closed_schedule(cluster *c);
static int on_arrival(cluster *c, double now);

/* A closed-loop client learns that request r ended at `now` (ttft_s < 0:
 * no first token) and may schedule sends from it. */
static void closed_done(cluster *c, const wl_request *r, double now, double ttft_s)
{
    c->src.done(c->src.state, r, now, ttft_s);
    closed_schedule(c);
}

static void on_first_token(void *ctx, uint32_t dest, engine_req *er, double t)
{
    cluster *c = ctx;
    (void)dest;
    cluster_rec *rec = &c->res->rec[er->r->id];
    rec->ttft_s = t - er->r->arrival_s;
    rec->hit_tokens = er->hit_tokens;
    rec->admitted = 1;
    rec->queue_s = er->admit_s - er->r->arrival_s;
    if (c->rt->on_first_token) { /* er is the first member of creq */
        const creq *cr = (const creq *)er;
        kv_catch_up(c, t, true);
        c->rt->on_first_token(c->rstate[cr->replica], &cr->r, dest, t);
    }
}

static void free_creq(cluster *c, creq *cr)
{
    wl_request_fini(&cr->r);
    *(creq **)(void *)cr = c->creq_free;
    c->creq_free = cr;
}

/* A zeroed request record: a reused one, or a new allocation (NULL if out
 * of memory). */
static creq *new_creq(cluster *c)
{
    creq *cr = c->creq_free;
    if (!cr)
        return calloc(1, sizeof *cr);
    c->creq_free = *(creq **)(void *)cr;
    memset(cr, 0, sizeof *cr);
    return cr;
}

static void on_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    cluster *c = ctx;
    creq *cr = (creq *)er; /* er is the first member of creq */
    cluster_rec *rec = &c->res->rec[er->r->id];
    if (er->rejected) {
        rec->rejected = 1;
        c->res->n_rejected++;
    } else {
        rec->e2e_s = t - er->r->arrival_s;
        rec->hit_tokens = er->hit_tokens;
        rec->admitted = 1;
        rec->queue_s = er->admit_s - er->r->arrival_s;
        c->res->n_completed++;
    }
    rec->preemptions = er->preemptions;
    uint32_t *own = c->outstanding + (size_t)cr->replica * c->p->n_dest;
    SIM_ALWAYS(own[dest] > 0);
    own[dest]--;
    c->inflight--;
    if (c->rt->on_complete) {
        kv_catch_up(c, t, true);
        route_done done = {.now_s = t, .ttft_s = er->rejected ? -1 : rec->ttft_s,
                           .e2e_s = er->rejected ? -1 : rec->e2e_s,
                           .output_tokens = er->rejected ? 0 : er->r->output_tokens};
        c->rt->on_complete(c->rstate[cr->replica], &cr->r, dest, &done);
    }
    if (c->closed)
        closed_done(c, &cr->r, t, er->rejected ? -1 : rec->ttft_s);
    free_creq(c, cr);
}

/* ---- route_ops: queued-request operations offered to routers ---- */

static uint32_t ops_waiting(void *ctx, uint32_t dest, const wl_request **out, uint32_t max)
{
    cluster *c = ctx;
    engine_req *tmp[256];
    uint32_t n = engine_waiting(c->eng[dest], tmp, max < 256 ? max : 256);
    for (uint32_t i = 0; i < n; i++)
        out[i] = tmp[i]->r;
    return n;
}

static void start_step(cluster *c, uint32_t d, double now);
static void cruise_stop(cluster *c, uint32_t d, double now);
static void dispatch(cluster *c, creq *cr, double now);

static int ops_migrate(void *ctx, const wl_request *r, uint32_t to)
{
    cluster *c = ctx;
    cluster_rec *rec = &c->res->rec[r->id];
    uint32_t from = rec->dest;
    creq *cr = (creq *)((char *)r - offsetof(creq, r));
    if (to >= c->p->n_dest || to == from || (c->faults_on && c->dstate[to] != DEST_UP) ||
        !engine_withdraw(c->eng[from], &cr->er))
        return 0;
    double now = sim_evq_now(c->q);
    bool measured = rec->arrival_s >= c->p->warmup_s;
    uint32_t *own = c->outstanding + (size_t)cr->replica * c->p->n_dest;
    own[from]--;
    c->res->dest[from].routed--;
    c->res->dest[from].routed_measured -= measured;
    rec->dest = to;
    own[to]++;
    c->res->dest[to].routed++;
    c->res->dest[to].routed_measured += measured;
    cruise_stop(c, to, now);
    engine_submit(c->eng[to], &cr->er, now);
    start_step(c, to, now);
    return 1;
}

static void start_step(cluster *c, uint32_t d, double now)
{
    double dur = engine_try_start(c->eng[d], now);
    if (c->faults_on && dur > 0)
        dur *= c->slow[d]; /* a straggler (faults: slow) */
    if (dur > 0) {
        /* Pure steady-decode steps after this one run without kernel
         * events (engine_cruise; each counted in cluster_result.events
         * as the step event it stands for once it has run). */
        double t_end = now + dur;
        if (c->cruise)
            c->planned[d] = engine_cruise(c->eng[d], now, t_end,
                                          c->faults_on ? c->slow[d] : 1.0, &t_end) > 0;
        sim_evq_schedule(c->q, c->step_ev[d], t_end);
    }
}

/* Before anything changes engine d at `now` (a submission, a crash, a new
 * step-time factor): end its cruise there, materialising the planned
 * steps that ended by `now` (one ending exactly at `now` counts as ended),
 * and move its step event to the end of the step in progress. */
static void cruise_stop(cluster *c, uint32_t d, double now)
{
    double t_next;
    if (!c->planned[d])
        return;
    c->planned[d] = 0;
    if (engine_cruise_stop(c->eng[d], now, true, &t_next)) {
        sim_evq_cancel(c->q, c->step_ev[d]);
        sim_evq_schedule(c->q, c->step_ev[d], t_next);
    }
}

/* ---- engine KV events (route_type.on_kv_event) ---- */

/* engine_hooks.kv_change: queue the change for delivery after the delay.
 * Delivery times are t + delay with t non-decreasing, so the FIFO is in
 * delivery order and one kernel event at the head's time suffices. */
static void on_kv_change(void *ctx, uint32_t dest, int kind, uint64_t parent,
                         const uint64_t *hashes, uint32_t n)
{
    cluster *c = ctx;
    if (c->loop_done || n == 0)
        return;
    const double t = sim_evq_now(c->q);
    /* Coalesce with the previous change when it is of the same engine,
     * kind and instant (as vLLM batches a step's events), and for STORED
     * continues the same chain: its hashes are the last in the pool, so
     * the run just grows.  Fewer, longer events let consumers prefetch. */
    if (c->kv_n > c->kv_head) {
        kv_rec *last = &c->kv[c->kv_n - 1];
        if (last->dest == dest && last->kind == kind && last->t == t &&
            (kind == PCACHE_REMOVED || parent == c->kv_hash[last->off + last->n - 1]) &&
            last->off + last->n == c->kv_hash_n && last->n + (uint64_t)n <= UINT32_MAX) {
            if (c->kv_hash_n + n > c->kv_hash_cap) {
                while (c->kv_hash_n + n > c->kv_hash_cap)
                    c->kv_hash_cap *= 2;
                c->kv_hash = sim_xrealloc(c->kv_hash, c->kv_hash_cap * sizeof *c->kv_hash);
            }
            memcpy(c->kv_hash + c->kv_hash_n, hashes, (size_t)n * sizeof *hashes);
            c->kv_hash_n += n;
            last->n += n;
            return;
        }
    }
    if (c->kv_n == c->kv_cap) {
        if (c->kv_head > 0) { /* squeeze delivered records out first */
            memmove(c->kv, c->kv + c->kv_head, (c->kv_n - c->kv_head) * sizeof *c->kv);
            c->kv_n -= c->kv_head;
            c->kv_head = 0;
        }
        if (c->kv_n == c->kv_cap) {
            c->kv_cap = c->kv_cap ? 2 * c->kv_cap : 256;
            c->kv = sim_xrealloc(c->kv, c->kv_cap * sizeof *c->kv);
        }
    }
    if (c->kv_hash_n + n > c->kv_hash_cap) {
        if (c->kv_hash_head > 0) {
            memmove(c->kv_hash, c->kv_hash + c->kv_hash_head,
                    (c->kv_hash_n - c->kv_hash_head) * sizeof *c->kv_hash);
            for (size_t i = c->kv_head; i < c->kv_n; i++)
                c->kv[i].off -= c->kv_hash_head;
            c->kv_hash_n -= c->kv_hash_head;
            c->kv_hash_head = 0;
        }
        while (c->kv_hash_n + n > c->kv_hash_cap)
            c->kv_hash_cap = c->kv_hash_cap ? 2 * c->kv_hash_cap : 4096;
        c->kv_hash = sim_xrealloc(c->kv_hash, c->kv_hash_cap * sizeof *c->kv_hash);
    }
    memcpy(c->kv_hash + c->kv_hash_n, hashes, (size_t)n * sizeof *hashes);
    c->kv[c->kv_n++] = (kv_rec){.t = t, .due = t + c->p->gateway.kv_event_delay_s,
                                .parent = parent, .off = c->kv_hash_n, .n = n, .dest = dest,
                                .kind = kind};
    c->kv_hash_n += n;
    c->res->kv_events++;
}

/* Deliver every queued KV event due by `now` (at or before when `incl`),
 * in order, to every replica, each with now_s = its due time.
 *
 * Lazily: called before every router callback (route, on_complete,
 * on_first_token, on_interval) and at the end of the run, instead of a
 * kernel event at each due time.  A router's KV-event state is only read
 * in its callbacks, and every event due before a callback is delivered
 * before it, in the same order, with the same now_s: the router sees
 * exactly what a kernel event per due time would have shown it (an event
 * due exactly at a callback's time is delivered first).  Each distinct
 * due time is counted in cluster_result.events as the kernel event
 * (EV_KV, one per due time: the events of one due time were delivered
 * together) it stands for. */
static void kv_catch_up(cluster *c, double now, bool incl)
{
    if (c->kv_head == c->kv_n)
        return;
    while (c->kv_head < c->kv_n &&
           (incl ? c->kv[c->kv_head].due <= now : c->kv[c->kv_head].due < now)) {
        const kv_rec *k = &c->kv[c->kv_head];
        if (k->due != c->kv_fire_due) {
            c->kv_firings++;
            c->kv_fire_due = k->due;
        }
        const route_kv_event ev = {.dest = k->dest, .kind = k->kind, .parent = k->parent,
                                   .hashes = c->kv_hash + k->off, .n = k->n, .t_s = k->t,
                                   .now_s = k->due};
        for (uint32_t i = 0; i < c->n_rep; i++)
            c->rt->on_kv_event(c->rstate[i], &ev);
        c->kv_hash_head = k->off + k->n;
        c->kv_head++;
    }
    if (c->kv_head == c->kv_n) { /* empty: start the buffers over */
        c->kv_head = c->kv_n = 0;
        c->kv_hash_head = c->kv_hash_n = 0;
    }
}

/* Pull the next request of the stream and schedule its arrival (or END).
 * Returns SIM_OK or the stream's error (a negative next(): e.g. no memory
 * for the request's blocks), which ends the run as incomplete. */
static int pull_next(cluster *c, sim_event *ev)
{
    if (c->closed) {
        closed_schedule(c);
        return SIM_OK;
    }
    const int got = c->src.next(c->src.state, &c->pending);
    if (got < 0)
        return -got;
    if (got) {
        c->have_pending = true;
        sim_evq_schedule(c->q, ev, c->pending.arrival_s);
    } else {
        c->have_pending = false;
        c->arrivals_done = true;
        ev->kind = EV_END;
        sim_evq_schedule(c->q, ev, sim_evq_now(c->q) + c->p->drain_s);
    }
    return SIM_OK;
}

/* Closed-loop client (wl_source.peek): (re)schedule the arrival event at
 * the client's next send, or END drain_s from now when it will send no
 * more; with nothing due until a completion, no event (the completion's
 * done() calls this again).  Open-loop streams never come here. */
static void closed_schedule(cluster *c)
{
    if (c->arrivals_done)
        return;
    sim_event *ev = c->arr_ev;
    const double now = sim_evq_now(c->q);
    double t = now;
    const int got = c->src.peek(c->src.state, now, &t);
    if (ev->heap_idx != SIM_EVQ_IDLE) {
        if (got > 0 && ev->time == t)
            return;
        sim_evq_cancel(c->q, ev);
    }
    if (got > 0) {
        sim_evq_schedule(c->q, ev, t);
    } else if (got < 0) {
        c->arrivals_done = true;
        ev->kind = EV_END;
        sim_evq_schedule(c->q, ev, now + c->p->drain_s);
    }
}

/* EV_ARRIVAL of a closed-loop client at `now`: take the send due now, if
 * any (the event may be a wake-up, e.g. a stage starting), then schedule
 * the next.  Returns SIM_OK or the client's error. */
static int closed_arrival(cluster *c, double now)
{
    double t = now;
    if (c->src.peek(c->src.state, now, &t) > 0 && t <= now) {
        const int got = c->src.next(c->src.state, &c->pending);
        if (got < 0)
            return -got;
        if (got > 0) {
            c->have_pending = true;
            const int rc = on_arrival(c, now);
            if (rc)
                return rc;
        }
    }
    closed_schedule(c);
    return SIM_OK;
}

/* Record every engine's metrics into `s` at time `t`. */
static void take_snapshot(cluster *c, snapshot *s, double t)
{
    s->t = t;
    for (uint32_t d = 0; d < c->p->n_dest; d++) {
        engine *e = c->eng[d];
        if (c->planned[d])
            engine_cruise_sync(e, t); /* its KV blocks in use as of t */
        s->queued[d] = engine_queued_tokens(e);
        s->waiting[d] = engine_n_waiting(e);
        s->running[d] = engine_n_running(e);
        s->kv_util[d] = (double)engine_kv_used_blocks(e) / (double)c->res->dest[d].pool_blocks;
    }
}

/* A scrape at `now`: the next snapshot of the ring.  Snapshots whose delay
 * is over are published first, so the slot written is never the visible
 * one (the ring holds every snapshot of the last `delay` seconds plus the
 * visible one, see n_ring in cluster_run).
 *
 * A snapshot is read only by dispatches while it is the visible one, from
 * now + delay until the next scrape's time t_next + delay.  Dispatches
 * are arrivals and, with faults, retries; the next arrival is known (the
 * stream is pulled one request ahead).  So without faults, when the next
 * arrival comes after t_next + delay (or none comes), nothing can read
 * this snapshot: it is not taken (only its time is set, which the
 * publication above reads), which changes no result -- the engines'
 * planned steps that taking it would have materialised run at their next
 * event as they would anyway.  At low load most scrapes are so (the
 * Mooncake main job at 5 requests/s: 4 scrapes a request, each of every
 * destination); visible() checks that a dispatch never sees one.  For a
 * router that reads no scraped metric (route_type.metrics_blind, or
 * ROUTE_READS_NO_METRICS from its needs() for these parameters) no
 * snapshot is ever read, so none is taken. */
static void on_scrape(cluster *c, double now, double t_next)
{
    const double delay = c->p->gateway.scrape_delay_s;
    while (c->seq_vis < c->seq_new && c->ring[(c->seq_vis + 1) % c->n_ring].t + delay <= now)
        c->seq_vis++;
    SIM_ALWAYS(c->seq_new + 1 - c->seq_vis < c->n_ring);
    c->seq_new++;
    snapshot *s = &c->ring[c->seq_new % c->n_ring];
    /* A closed-loop client's next send is not known ahead: take it. */
    s->unread = c->blind ||
                (!c->faults_on && !c->closed &&
                 (!c->have_pending || t_next + delay < c->pending.arrival_s));
    if (s->unread) {
        s->t = now;
        c->res->scrapes_unread++;
    } else {
        take_snapshot(c, s, now);
    }
    c->res->scrapes++;
}

/* The engine metrics a router sees at `now` (models/cluster.h); their
 * age is now - ->t in a scraped view, 0 in the exact one.  O(1) per
 * decision with scrapes (the snapshot is shared by every destination). */
static const snapshot *visible(cluster *c, double now)
{
    if (c->blind) { /* metrics_blind / ROUTE_READS_NO_METRICS: nothing to read */
        static const snapshot none = {0};
        (void)now;
        return &none;
    }
    snapshot *s = &c->ring[0];
    if (c->exact) {
        take_snapshot(c, s, now); /* ->t = now: age 0 */
        return s;
    }
    const double delay = c->p->gateway.scrape_delay_s;
    while (c->seq_vis < c->seq_new && c->ring[(c->seq_vis + 1) % c->n_ring].t + delay <= now)
        c->seq_vis++;
    SIM_ALWAYS(!c->ring[c->seq_vis % c->n_ring].unread); /* on_scrape's rule */
    return &c->ring[c->seq_vis % c->n_ring];
}

/* ---- faults (models/cluster.h cluster_faults, docs/faults.md) ---- */

/* The router that routed `cr` learns that it failed (the gateway sees the
 * connection reset or refused): as a rejection, no token. */
static void notify_failed(cluster *c, creq *cr, uint32_t dest, double now)
{
    if (c->rt->on_complete) {
        kv_catch_up(c, now, true);
        const route_done done = {.now_s = now, .ttft_s = -1, .e2e_s = -1, .output_tokens = 0};
        c->rt->on_complete(c->rstate[cr->replica], &cr->r, dest, &done);
    }
}

/* `cr` (in no engine, not in any outstanding count) was lost at `now`:
 * its client retries it retry_timeout_s later, or it has failed for good
 * after max_retries retries. */
static void lose(cluster *c, creq *cr, double now)
{
    cluster_rec *rec = &c->res->rec[cr->r.id];
    rec->ttft_s = -1; /* the attempt that completes sets them */
    rec->queue_s = -1;
    rec->admitted = 0;
    rec->hit_tokens = 0;
    cr->er.admitted_once = false;
    cr->er.rejected = false;
    if (rec->retries >= c->p->faults.max_retries) {
        rec->failed = 1;
        c->res->n_failed++;
        c->inflight--;
        if (c->closed)
            closed_done(c, &cr->r, now, -1);
        free_creq(c, cr);
        return;
    }
    rec->retries++;
    c->res->n_retries++;
    if (c->rq_n == c->rq_cap) {
        if (c->rq_head > 0) {
            memmove(c->rq, c->rq + c->rq_head, (c->rq_n - c->rq_head) * sizeof *c->rq);
            memmove(c->rq_due, c->rq_due + c->rq_head,
                    (c->rq_n - c->rq_head) * sizeof *c->rq_due);
            c->rq_n -= c->rq_head;
            c->rq_head = 0;
        }
        if (c->rq_n == c->rq_cap) {
            c->rq_cap = c->rq_cap ? 2 * c->rq_cap : 64;
            c->rq = sim_xrealloc(c->rq, c->rq_cap * sizeof *c->rq);
            c->rq_due = sim_xrealloc(c->rq_due, c->rq_cap * sizeof *c->rq_due);
        }
    }
    c->rq[c->rq_n] = cr;
    c->rq_due[c->rq_n++] = now + c->p->faults.retry_timeout_s;
    if (c->retry_ev->heap_idx == SIM_EVQ_IDLE)
        sim_evq_schedule(c->q, c->retry_ev, c->rq_due[c->rq_head]);
}

/* engine_crash's lost(): a running or queued request of a crashed engine. */
static void on_lost(void *ctx, engine_req *er)
{
    cluster *c = ctx;
    creq *cr = (creq *)er; /* er is the first member of creq */
    const uint32_t dest = c->res->rec[cr->r.id].dest;
    uint32_t *own = c->outstanding + (size_t)cr->replica * c->p->n_dest;
    SIM_ALWAYS(own[dest] > 0);
    own[dest]--;
    c->res->n_lost++;
    const double now = sim_evq_now(c->q);
    notify_failed(c, cr, dest, now);
    lose(c, cr, now);
}

/* Destination `d` crashes at `now` (no-op if already crashed). */
static void crash(cluster *c, uint32_t d, bool warm)
{
    if (c->dstate[d] == DEST_DOWN)
        return;
    cruise_stop(c, d, sim_evq_now(c->q));
    c->dstate[d] = DEST_DOWN;
    c->slow[d] = 1.0;
    c->res->n_crashes++;
    sim_evq_cancel(c->q, c->step_ev[d]);
    engine_crash(c->eng[d], !warm, on_lost, c);
}

static void recover(cluster *c, uint32_t d, double now)
{
    c->dstate[d] = DEST_UP;
    c->slow[d] = 1.0;
    start_step(c, d, now); /* a drained engine may still hold work */
}

/* EV_FAULT: scheduled event `k`. */
static void on_fault(cluster *c, size_t k, double now)
{
    const cluster_fault *f = &c->p->faults.events[k];
    const uint32_t d = f->dest;
    if (f->kind == CLUSTER_FAULT_CRASH) {
        crash(c, d, f->warm);
    } else if (f->kind == CLUSTER_FAULT_DRAIN) {
        if (c->dstate[d] == DEST_UP)
            c->dstate[d] = DEST_DRAIN;
    } else if (f->kind == CLUSTER_FAULT_SLOW) {
        if (c->dstate[d] != DEST_DOWN) {
            cruise_stop(c, d, now); /* planned with the old factor */
            c->slow[d] = f->factor; /* from the next step on */
        }
    } else {
        recover(c, d, now);
    }
}

/* An exponential time of mean `mean` s from `g` (inverse CDF). */
static double draw_exp(sim_pcg32 *g, double mean)
{
    return -mean * log1p(-sim_pcg32_uniform(g));
}

/* EV_RFAULT of destination `d`: the random process crashes it (cold) or
 * repairs it, and schedules its next change. */
static void on_rfault(cluster *c, sim_event *ev, double now)
{
    const uint32_t d = ev->target;
    const cluster_faults *f = &c->p->faults;
    if (!c->rdown[d]) {
        crash(c, d, false);
        c->rdown[d] = 1;
        sim_evq_schedule(c->q, ev, now + draw_exp(&c->frng[d], f->mttr_s));
    } else {
        recover(c, d, now);
        c->rdown[d] = 0;
        sim_evq_schedule(c->q, ev, now + draw_exp(&c->frng[d], f->mtbf_s));
    }
}

/* EV_RETRY at `now`: every retry due is routed again. */
static void on_retry(cluster *c, double now)
{
    while (c->rq_head < c->rq_n && c->rq_due[c->rq_head] <= now) {
        creq *cr = c->rq[c->rq_head++];
        dispatch(c, cr, now);
    }
    if (c->rq_head == c->rq_n)
        c->rq_head = c->rq_n = 0;
    else if (c->retry_ev->heap_idx == SIM_EVQ_IDLE)
        sim_evq_schedule(c->q, c->retry_ev, c->rq_due[c->rq_head]);
}

/* Route `cr` (arrived or retried; counted in inflight) and hand it to the
 * chosen engine, or lose it there if that destination is crashed or
 * draining (connection refused). */
static void dispatch(cluster *c, creq *cr, double now)
{
    cluster_result *res = c->res;
    const uint32_t i = cr->replica;
    uint32_t *own = c->outstanding + (size_t)i * c->p->n_dest;
    const snapshot *s = visible(c, now);
    route_view v = {.n_dest = c->p->n_dest, .outstanding = own, .queued_tokens = s->queued,
                    .now_s = now, .ops = &c->ops, .waiting = s->waiting,
                    .running = s->running, .kv_util = s->kv_util,
                    .age_s = c->blind ? 0 : now - s->t,
                    .down = c->down_view};
    kv_catch_up(c, now, true);
    uint32_t d = c->rt->route(c->rstate[i], &cr->r, &v);
    SIM_ALWAYS(d < c->p->n_dest);
    cluster_rec *rec = &res->rec[cr->r.id];
    rec->dest = d;
    if (c->faults_on && c->dstate[d] != DEST_UP) {
        res->n_refused++;
        notify_failed(c, cr, d, now);
        lose(c, cr, now);
        return;
    }
    bool measured = rec->arrival_s >= c->p->warmup_s;
    res->dest[d].routed++;
    res->dest[d].routed_measured += measured;
    own[d]++;
    cruise_stop(c, d, now);
    engine_submit(c->eng[d], &cr->er, now);
    start_step(c, d, now);
}

/* The two allocations that grow with a run's requests use the try
 * variants: a run too large for memory ends with SIM_ENOMEM (its
 * experiment marked incomplete) instead of aborting the process. */
static int on_arrival(cluster *c, double now)
{
    cluster_result *res = c->res;
    SIM_ALWAYS(c->pending.id == res->n_arrived); /* ids are dense, in order */
    if (res->n_arrived == c->cap_rec) {
        uint64_t cap = c->cap_rec ? 2 * c->cap_rec : 4096;
        cluster_rec *grown = realloc(res->rec, cap * sizeof *res->rec);
        if (!grown)
            return SIM_ERROR(SIM_ENOMEM, "out of memory for the records of %llu requests; "
                             "expected a smaller run (docs/harness.md, \"Size estimate\")",
                             (unsigned long long)cap);
        res->rec = grown;
        c->cap_rec = cap;
    }
    creq *cr = new_creq(c);
    if (!cr)
        return SIM_ERROR(SIM_ENOMEM, "out of memory for request %llu in flight; expected a "
                         "smaller run (docs/harness.md, \"Size estimate\")",
                         (unsigned long long)res->n_arrived);
    cr->r = c->pending;
    cr->er.r = &cr->r;
    c->have_pending = false;
    res->n_arrived++;
    if (res->n_arrived == 1)
        res->first_arrival_s = now;
    res->last_arrival_s = now;

    const wl_request *rq = &cr->r;
    if (c->p->max_model_len &&
        (uint64_t)rq->prompt_tokens + rq->output_tokens > c->p->max_model_len) {
        /* vLLM's HTTP 400: refused before any routing or scheduling. */
        res->rec[rq->id] = (cluster_rec){
            .arrival_s = now, .ttft_s = -1, .e2e_s = -1, .queue_s = -1, .key = rq->key,
            .dest = CLUSTER_NO_DEST, .prompt_tokens = rq->prompt_tokens,
            .output_tokens = rq->output_tokens, .too_long = 1};
        res->n_too_long++;
        if (c->closed)
            closed_done(c, &cr->r, now, -1);
        free_creq(c, cr);
        return SIM_OK;
    }
    uint32_t i = 0;
    if (c->n_rep > 1)
        i = c->p->gateway.assign == CLUSTER_ASSIGN_RANDOM
                ? sim_pcg32_bounded(&c->assign_rng, c->n_rep)
                : (uint32_t)((res->n_arrived - 1) % c->n_rep);
    cr->replica = i;
    res->rec[cr->r.id] = (cluster_rec){
        .arrival_s = now, .ttft_s = -1, .e2e_s = -1, .queue_s = -1, .key = cr->r.key,
        .replica = i, .prompt_tokens = cr->r.prompt_tokens,
        .output_tokens = cr->r.output_tokens};
    c->inflight++;
    dispatch(c, cr, now);
    return SIM_OK;
}

static void count_unfinished(void *ctx, engine_req *er)
{
    cluster *c = ctx;
    creq *cr = (creq *)er;
    c->res->n_unfinished++;
    cluster_rec *rec = &c->res->rec[er->r->id];
    rec->preemptions = er->preemptions;
    if (er->admitted_once)
        rec->queue_s = er->admit_s - er->r->arrival_s;
    c->outstanding[(size_t)cr->replica * c->p->n_dest + c->res->rec[er->r->id].dest]--;
    free_creq(c, cr);
}

static double max_over_mean(const double *x, uint32_t n)
{
    double mx = 0, sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        sum += x[i];
        if (x[i] > mx)
            mx = x[i];
    }
    return sum > 0 ? mx / (sum / n) : NAN;
}

/* The measured set: arrived at or after the warm-up, not too long. */
static bool keep_measured(const cluster_rec *r, void *ctx)
{
    const double warmup_s = *(const double *)ctx;
    return r->arrival_s >= warmup_s && !r->too_long;
}

static void summarize(cluster *c)
{
    cluster_result *res = c->res;
    const uint64_t n = res->n_arrived;
    for (uint64_t i = 0; i < n; i++) {
        const cluster_rec *r = &res->rec[i];
        if (r->arrival_s < c->p->warmup_s || r->too_long)
            continue;
        res->n_measured++;
        if (r->admitted && !r->rejected) {
            res->prompt_tokens += r->prompt_tokens;
            res->hit_tokens += r->hit_tokens;
        }
        res->measured_completed += r->e2e_s >= 0;
    }
    /* Latency, throughput and goodput of the measured requests over the
     * window (models/latency.h); ITL from the engines' steps ending in it. */
    double warmup_s = c->p->warmup_s;
    const double span = res->sim_end_s - c->p->warmup_s;
    latency_stats ls;
    latency_requests(res->rec, n, keep_measured, &warmup_s, span, &c->p->goodput, &ls);
    const engine_itl_step **steps = sim_xmalloc((c->p->n_dest ? c->p->n_dest : 1) *
                                                 sizeof *steps);
    size_t *ns = sim_xmalloc((c->p->n_dest ? c->p->n_dest : 1) * sizeof *ns);
    uint64_t dropped = 0;
    for (uint32_t d = 0; d < c->p->n_dest; d++) {
        uint64_t dr;
        steps[d] = engine_itl_steps(c->eng[d], &ns[d], &dr);
        dropped += dr;
    }
    latency_itl(steps, ns, c->p->n_dest, c->p->warmup_s, INFINITY, &ls);
    free(steps);
    free(ns);
    if (dropped) /* a step not recorded (out of memory): no ITL, not a wrong one */
        ls.itl_gaps = 0, ls.itl_mean = ls.itl_p50 = ls.itl_p90 = ls.itl_p99 = NAN;
    res->ttft_mean = ls.ttft_mean;
    res->ttft_p50 = ls.ttft_p50, res->ttft_p90 = ls.ttft_p90, res->ttft_p99 = ls.ttft_p99;
    res->e2e_p50 = ls.e2e_p50, res->e2e_p90 = ls.e2e_p90, res->e2e_p99 = ls.e2e_p99;
    res->tpot_p50 = ls.tpot_p50, res->tpot_p90 = ls.tpot_p90, res->tpot_p99 = ls.tpot_p99;
    res->tpot_mean = ls.tpot_mean;
    res->e2e_mean = ls.e2e_mean;
    res->itl_mean = ls.itl_mean;
    res->itl_p50 = ls.itl_p50, res->itl_p90 = ls.itl_p90, res->itl_p99 = ls.itl_p99;
    res->itl_gaps = ls.itl_gaps;
    res->output_tps = ls.output_tps;
    res->goodput_rps = ls.goodput_rps;
    res->n_good = ls.good;
    res->hit_rate = res->prompt_tokens ? (double)res->hit_tokens / (double)res->prompt_tokens : NAN;

    double *work = sim_xmalloc(res->n_dest * sizeof *work);
    double *reqs = sim_xmalloc(res->n_dest * sizeof *reqs);
    for (uint32_t d = 0; d < res->n_dest; d++) {
        const engine_stats *st = &res->dest[d].st;
        work[d] = (double)(st->win_prefill_tokens + st->win_decode_tokens);
        reqs[d] = (double)res->dest[d].routed_measured;
        res->steps += st->steps;
        res->preemptions += st->preemptions;
    }
    res->imbalance_work = max_over_mean(work, res->n_dest);
    res->imbalance_requests = max_over_mean(reqs, res->n_dest);
    free(work);
    free(reqs);
    res->throughput_rps = span > 0 ? (double)res->measured_completed / span : NAN;
}

/* Per-key fairness (models/cluster.h cluster_result.keys): group measured,
 * routed records by key, keep keys with >= fair_min_requests of them. */
static void fairness(const cluster_params *p, cluster_result *res)
{
    res->fair_worst_p99 = res->fair_spread_p99 = res->fair_jain = NAN;
    const uint64_t min = p->fair_min_requests ? p->fair_min_requests : 1;
    /* (key, id) pairs sorted: records of one key become a contiguous run. */
    uint64_t n = 0;
    for (uint64_t i = 0; i < res->n_arrived; i++)
        n += res->rec[i].arrival_s >= p->warmup_s && !res->rec[i].too_long;
    if (n == 0)
        return;
    uint64_t *pair = sim_xmalloc(2 * n * sizeof *pair);
    uint64_t m = 0;
    for (uint64_t i = 0; i < res->n_arrived; i++)
        if (res->rec[i].arrival_s >= p->warmup_s && !res->rec[i].too_long) {
            pair[2 * m] = res->rec[i].key;
            pair[2 * m + 1] = i;
            m++;
        }
    /* By key; ids, given in increasing order, stay so within a key (a
     * stable sort: the (key, id) order qsort gave, hence the same sums). */
    uint64_t *scratch = sim_xmalloc(2 * n * sizeof *scratch);
    sim_sort_pairs_u64(pair, n, scratch);
    free(scratch);
    double *v = sim_xmalloc(n * sizeof *v);
    size_t cap = 0;
    static const double q99 = 0.99;
    for (uint64_t a = 0, b; a < n; a = b) {
        const uint64_t key = pair[2 * a];
        uint64_t hit = 0, prompt = 0;
        for (b = a; b < n && pair[2 * b] == key; b++) {
            const cluster_rec *r = &res->rec[pair[2 * b + 1]];
            v[b - a] = r->ttft_s >= 0 ? r->ttft_s : INFINITY;
            if (r->admitted && !r->rejected) {
                hit += r->hit_tokens;
                prompt += r->prompt_tokens;
            }
        }
        if (b - a < min)
            continue;
        if (res->n_keys == cap) {
            cap = cap ? 2 * cap : 64;
            res->keys = sim_xrealloc(res->keys, cap * sizeof *res->keys);
        }
        cluster_key *k = &res->keys[res->n_keys++];
        k->key = key;
        k->requests = b - a;
        k->hit_rate = prompt ? (double)hit / (double)prompt : NAN;
        k->ttft_mean = sim_finite_mean(v, b - a);
        sim_quantiles(v, b - a, &q99, 1, &k->ttft_p99);
    }
    free(pair);
    if (res->n_keys) {
        double sx = 0, sxx = 0, worst = -INFINITY;
        size_t nm = 0;
        for (size_t i = 0; i < res->n_keys; i++) {
            v[i] = res->keys[i].ttft_p99;
            if (v[i] > worst || isnan(worst))
                worst = v[i];
            const double x = res->keys[i].ttft_mean;
            if (isfinite(x)) {
                sx += x;
                sxx += x * x;
                nm++;
            }
        }
        res->fair_worst_p99 = worst;
        sim_quantiles(v, res->n_keys, &q99, 1, &res->fair_spread_p99);
        res->fair_jain = cluster_jain_index_sums(sx, sxx, nm);
    }
    free(v);
}

double cluster_jain_index(const double *x, size_t n)
{
    double sx = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        sx += x[i];
        sxx += x[i] * x[i];
    }
    return cluster_jain_index_sums(sx, sxx, n);
}

double cluster_jain_index_sums(double sx, double sxx, size_t n)
{
    return n > 0 && sxx > 0 ? sx * sx / ((double)n * sxx) : NAN;
}

/* Per-window hit rate and p99 TTFT by arrival time (for drift timelines). */
static void timeline(const cluster_params *p, cluster_result *res)
{
    if (!(p->timeline_s > 0) || res->n_arrived == 0)
        return;
    size_t nw = (size_t)floor(res->last_arrival_s / p->timeline_s) + 1;
    res->n_win = nw;
    res->win_t0 = sim_xcalloc(nw, sizeof *res->win_t0);
    res->win_arrivals = sim_xcalloc(nw, sizeof *res->win_arrivals);
    res->win_hit_rate = sim_xcalloc(nw, sizeof *res->win_hit_rate);
    res->win_ttft_p99 = sim_xcalloc(nw, sizeof *res->win_ttft_p99);
    double *hit = sim_xcalloc(nw, sizeof *hit), *prompt = sim_xcalloc(nw, sizeof *prompt);
    size_t *start = sim_xcalloc(nw + 1, sizeof *start);
    /* Records are in arrival order, so each window is a contiguous run. */
    for (uint64_t i = 0; i < res->n_arrived; i++) {
        size_t w = (size_t)floor(res->rec[i].arrival_s / p->timeline_s);
        if (w >= nw)
            w = nw - 1;
        res->win_arrivals[w]++;
        if (res->rec[i].admitted && !res->rec[i].rejected) {
            hit[w] += res->rec[i].hit_tokens;
            prompt[w] += res->rec[i].prompt_tokens;
        }
    }
    for (size_t w = 0; w < nw; w++)
        start[w + 1] = start[w] + res->win_arrivals[w];
    double *v = sim_xmalloc((res->n_arrived ? res->n_arrived : 1) * sizeof *v);
    static const double q99 = 0.99;
    for (size_t w = 0; w < nw; w++) {
        res->win_t0[w] = (double)w * p->timeline_s;
        res->win_hit_rate[w] = prompt[w] > 0 ? hit[w] / prompt[w] : NAN;
        size_t k = 0;
        for (size_t i = start[w]; i < start[w + 1]; i++)
            if (!res->rec[i].too_long)
                v[k++] = res->rec[i].ttft_s >= 0 ? res->rec[i].ttft_s : INFINITY;
        sim_quantiles(v, k, &q99, 1, &res->win_ttft_p99[w]);
    }
    free(v);
    free(hit);
    free(prompt);
    free(start);
}

/* Check the gateway parameters (exp.c checks the config keys first, with
 * their locations; this guards direct callers). */
static int check_gateway(const cluster_gateway *g)
{
    if (!(isfinite(g->scrape_interval_s) && g->scrape_interval_s >= 0))
        return SIM_ERROR(SIM_EINVAL, "gateway scrape interval %g s; expected a finite value "
                         ">= 0 (0 = exact view)", g->scrape_interval_s);
    if (!(isfinite(g->scrape_delay_s) && g->scrape_delay_s >= 0))
        return SIM_ERROR(SIM_EINVAL, "gateway scrape delay %g s; expected a finite value >= 0",
                         g->scrape_delay_s);
    if (g->scrape_interval_s == 0 && g->scrape_delay_s > 0)
        return SIM_ERROR(SIM_EINVAL, "gateway scrape delay %g s with the exact view (scrape "
                         "interval 0); expected delay 0 or a scrape interval > 0",
                         g->scrape_delay_s);
    if (g->scrape_interval_s > 0 && g->scrape_delay_s / g->scrape_interval_s > 1e6)
        return SIM_ERROR(SIM_EINVAL, "gateway scrape delay %g s is over 10^6 scrape intervals "
                         "of %g s; expected a shorter delay or a longer interval",
                         g->scrape_delay_s, g->scrape_interval_s);
    if (g->replicas > CLUSTER_MAX_REPLICAS)
        return SIM_ERROR(SIM_EINVAL, "%u gateway replicas; expected 1 to %d", g->replicas,
                         CLUSTER_MAX_REPLICAS);
    if (!(isfinite(g->kv_event_delay_s) && g->kv_event_delay_s >= 0))
        return SIM_ERROR(SIM_EINVAL, "gateway KV-event delay %g s; expected a finite value >= 0",
                         g->kv_event_delay_s);
    if (g->assign != CLUSTER_ASSIGN_ROUND_ROBIN && g->assign != CLUSTER_ASSIGN_RANDOM)
        return SIM_ERROR(SIM_EINVAL, "gateway replica assignment %d; expected round_robin or "
                         "random", g->assign);
    return SIM_OK;
}

const char *const cluster_fault_kind_names[] = {"crash", "drain", "slow", "recover", NULL};

int cluster_fault_parse(const char *text, cluster_fault *out, char *why, size_t n)
{
    *out = (cluster_fault){.factor = 1.0};
    char buf[128];
    if (strlen(text) >= sizeof buf) {
        snprintf(why, n, "expected TIME_S:KIND:DEST[:ARG], at most %zu characters",
                 sizeof buf - 1);
        return SIM_EINVAL;
    }
    strcpy(buf, text);
    char *f[5];
    int nf = 0;
    for (char *p = buf, *q; nf < 5; p = q + 1) {
        f[nf++] = p;
        if (!(q = strchr(p, ':')))
            break;
        *q = '\0';
    }
    if (nf < 3 || nf > 4) {
        snprintf(why, n, "expected TIME_S:KIND:DEST[:ARG] (e.g. 600:crash:3, 720:recover:3, "
                 "300:slow:5:3)");
        return SIM_EINVAL;
    }
    if (!sim_num_real(f[0], 0, 1e12, &out->t_s)) {
        snprintf(why, n, "expected TIME_S a decimal number of seconds in [0, 1e12], not '%s'",
                 f[0]);
        return SIM_EINVAL;
    }
    out->kind = -1;
    for (int k = 0; cluster_fault_kind_names[k]; k++)
        if (strcmp(f[1], cluster_fault_kind_names[k]) == 0)
            out->kind = k;
    if (out->kind < 0) {
        snprintf(why, n, "expected KIND crash, drain, slow or recover, not '%s'", f[1]);
        return SIM_EINVAL;
    }
    uint64_t dv = 0;
    if (f[2][0] == '+' || !sim_num_u64(f[2], UINT32_MAX - 1, &dv)) {
        snprintf(why, n, "expected DEST a destination index 0, 1, ..., not '%s'", f[2]);
        return SIM_EINVAL;
    }
    out->dest = (uint32_t)dv;
    if (out->kind == CLUSTER_FAULT_SLOW) {
        if (nf != 4) {
            snprintf(why, n, "expected slow with a factor, TIME_S:slow:DEST:FACTOR (>= 1)");
            return SIM_EINVAL;
        }
        if (!sim_num_real(f[3], 1, 1e6, &out->factor)) {
            snprintf(why, n, "expected FACTOR a number in [1, 1e6], not '%s'", f[3]);
            return SIM_EINVAL;
        }
    } else if (out->kind == CLUSTER_FAULT_CRASH && nf == 4) {
        if (strcmp(f[3], "warm") != 0 && strcmp(f[3], "cold") != 0) {
            snprintf(why, n, "expected crash's ARG cold or warm, not '%s'", f[3]);
            return SIM_EINVAL;
        }
        out->warm = strcmp(f[3], "warm") == 0;
    } else if (nf == 4) {
        snprintf(why, n, "expected no ARG for %s (TIME_S:%s:DEST)", f[1], f[1]);
        return SIM_EINVAL;
    }
    return SIM_OK;
}

long cluster_faults_check(const cluster_fault *ev, size_t n_ev, uint32_t n_dest, char *why,
                          size_t n)
{
    for (size_t k = 0; k < n_ev; k++)
        if (ev[k].dest >= n_dest) {
            snprintf(why, n, "destination %u of %u; expected DEST in [0, %u]", ev[k].dest,
                     n_dest, n_dest - 1);
            return (long)k;
        }
    /* Per destination, in time order (ties in list order): the state
     * machine up -> {crashed, draining, slow} -> recover -> up. */
    size_t *ord = sim_xmalloc((n_ev ? n_ev : 1) * sizeof *ord);
    long bad = -1;
    for (uint32_t d = 0; d < n_dest && bad < 0; d++) {
        size_t m = 0;
        for (size_t k = 0; k < n_ev; k++)
            if (ev[k].dest == d) {
                size_t j = m++;
                for (; j > 0 && ev[ord[j - 1]].t_s > ev[k].t_s; j--)
                    ord[j] = ord[j - 1];
                ord[j] = k;
            }
        int st = DEST_UP;
        bool slow = false;
        for (size_t j = 0; j < m && bad < 0; j++) {
            const cluster_fault *f = &ev[ord[j]];
            const char *err = NULL;
            if (f->kind == CLUSTER_FAULT_CRASH) {
                if (st == DEST_DOWN)
                    err = "already crashed";
                st = DEST_DOWN;
                slow = false;
            } else if (f->kind == CLUSTER_FAULT_DRAIN) {
                if (st != DEST_UP)
                    err = st == DEST_DOWN ? "crashed" : "already draining";
                st = DEST_DRAIN;
            } else if (f->kind == CLUSTER_FAULT_SLOW) {
                if (st == DEST_DOWN)
                    err = "crashed";
                slow = true;
            } else {
                if (st == DEST_UP && !slow)
                    err = "up and at full speed (nothing to recover from)";
                st = DEST_UP;
                slow = false;
            }
            if (err) {
                snprintf(why, n, "destination %u is %s at %g s; expected crash only when "
                         "not crashed, drain only when up, slow only when not crashed, "
                         "recover only after crash, drain or slow", d, err, f->t_s);
                bad = (long)ord[j];
            }
        }
    }
    free(ord);
    return bad;
}

/* Check the fault parameters (exp.c checks the config keys first, with
 * their locations; this guards direct callers). */
static int check_faults(const cluster_faults *f, uint32_t n_dest)
{
    char why[256];
    for (size_t k = 0; k < f->n_events; k++)
        if (f->events[k].kind < CLUSTER_FAULT_CRASH || f->events[k].kind > CLUSTER_FAULT_RECOVER ||
            !(isfinite(f->events[k].t_s) && f->events[k].t_s >= 0) ||
            !(f->events[k].factor >= 1 && isfinite(f->events[k].factor)))
            return SIM_ERROR(SIM_EINVAL, "fault event %zu: kind %d at %g s, factor %g; expected "
                             "a kind of enum cluster_fault_kind, a time >= 0 and a factor >= 1",
                             k, f->events[k].kind, f->events[k].t_s, f->events[k].factor);
    const long bad = cluster_faults_check(f->events, f->n_events, n_dest, why, sizeof why);
    if (bad >= 0)
        return SIM_ERROR(SIM_EINVAL, "fault event %ld: %s", bad, why);
    if (!(isfinite(f->mtbf_s) && f->mtbf_s >= 0) ||
        (f->mtbf_s > 0 && !(isfinite(f->mttr_s) && f->mttr_s > 0)))
        return SIM_ERROR(SIM_EINVAL, "faults MTBF %g s, MTTR %g s; expected MTBF >= 0 (0 = "
                         "none) and, with MTBF > 0, a finite MTTR > 0", f->mtbf_s, f->mttr_s);
    if (cluster_faults_on(f) &&
        (!(isfinite(f->retry_timeout_s) && f->retry_timeout_s >= 0) ||
         !(isfinite(f->health_check_interval_s) && f->health_check_interval_s > 0)))
        return SIM_ERROR(SIM_EINVAL, "faults retry timeout %g s, health-check interval %g s; "
                         "expected a timeout >= 0 and an interval > 0", f->retry_timeout_s,
                         f->health_check_interval_s);
    return SIM_OK;
}

/* The seed of replica i's router: the run seed for replica 0 (so one
 * replica is today's run), else 64 bits drawn from PCG stream
 * (seed, sim_rng_substream(SIM_STREAM_GATEWAY, i)). */
static uint64_t replica_seed(uint64_t seed, uint32_t i)
{
    if (i == 0)
        return seed;
    sim_pcg32 g;
    sim_pcg32_seed(&g, seed, sim_rng_substream(SIM_STREAM_GATEWAY, i));
    uint64_t hi = sim_pcg32_next(&g);
    return hi << 32 | sim_pcg32_next(&g);
}

/* Groups of a mixed fleet that cannot work: they must cover n_dest and
 * keep the cluster's block size and prefix caching. */
static int mixed_fleet_check(const cluster_params *p)
{
    if (!p->n_groups)
        return SIM_OK;
    uint64_t sum = 0;
    for (uint32_t g = 0; g < p->n_groups; g++) {
        const cluster_group *x = &p->groups[g];
        if (x->n_dest == 0 || x->engine.block_size != p->engine.block_size ||
            x->engine.prefix_caching != p->engine.prefix_caching)
            return SIM_ERROR(SIM_EINVAL, "destination group %u has %u destinations, block size "
                             "%u, prefix caching %d; expected >= 1 destination and the "
                             "cluster's block size %u and prefix caching %d", g, x->n_dest,
                             x->engine.block_size, (int)x->engine.prefix_caching,
                             p->engine.block_size, (int)p->engine.prefix_caching);
        sum += x->n_dest;
    }
    if (sum != p->n_dest)
        return SIM_ERROR(SIM_EINVAL, "destination groups add up to %llu destinations; expected "
                         "n_dest = %u", (unsigned long long)sum, p->n_dest);
    return SIM_OK;
}

int cluster_run(const cluster_params *p, const route_type *rt, const route_env *env,
                const route_config *rcfg, wl_source src, cluster_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = check_gateway(&p->gateway);
    if (rc)
        return rc;
    rc = mixed_fleet_check(p);
    if (rc)
        return rc;
    rc = spec_kv_pool(p->n_groups ? &p->groups[0].deploy : &p->deploy, &out->pool_tokens,
                      &out->pool_blocks);
    if (rc)
        return rc;
    if ((rc = check_faults(&p->faults, p->n_dest)))
        return rc;
    const cluster_gateway *gw = &p->gateway;
    cluster c = {.p = p, .rt = rt, .src = src, .res = out, .closed = src.peek != NULL};
    c.ops = (route_ops){.ctx = &c, .waiting = ops_waiting, .migrate = ops_migrate};
    c.n_rep = gw->replicas ? gw->replicas : 1;
    c.faults_on = cluster_faults_on(&p->faults);
    c.exact = !(gw->scrape_interval_s > 0);
    c.blind = rt->metrics_blind || (route_needs(rt, rcfg) & ROUTE_READS_NO_METRICS);
    {
        const char *cz = getenv("CRSIM_CRUISE");
        c.cruise = !(cz && !strcmp(cz, "0"));
    }
    /* Unpublished snapshots are those of the last `delay` seconds: at most
     * floor(delay / interval) + 1, plus the visible one; one more slot
     * absorbs rounding of k * interval. */
    c.n_ring = c.exact ? 1 : (uint32_t)floor(gw->scrape_delay_s / gw->scrape_interval_s) + 3;
    out->n_dest = p->n_dest;
    out->warmup_s = p->warmup_s;
    out->dest = sim_xcalloc(p->n_dest, sizeof *out->dest);
    for (uint32_t g = 0, d = 0; g < (p->n_groups ? p->n_groups : 1); g++) {
        uint64_t tok = out->pool_tokens;
        uint32_t blk = out->pool_blocks;
        if (g > 0 && (rc = spec_kv_pool(&p->groups[g].deploy, &tok, &blk)) != SIM_OK) {
            free(out->dest);
            out->dest = NULL;
            return rc;
        }
        for (uint32_t e = d + (p->n_groups ? p->groups[g].n_dest : p->n_dest); d < e; d++)
            out->dest[d] = (cluster_dest){.pool_blocks = blk, .pool_tokens = tok, .group = g};
    }
    c.q = sim_evq_create();
    c.eng = sim_xcalloc(p->n_dest, sizeof *c.eng);
    c.step_ev = sim_xcalloc(p->n_dest, sizeof *c.step_ev);
    c.planned = sim_xcalloc(p->n_dest, sizeof *c.planned);
    c.outstanding = sim_xcalloc((size_t)c.n_rep * p->n_dest, sizeof *c.outstanding);
    c.ring = sim_xcalloc(c.n_ring, sizeof *c.ring);
    for (uint32_t k = 0; k < c.n_ring; k++) {
        c.ring[k].queued = sim_xcalloc(p->n_dest, sizeof *c.ring[k].queued);
        c.ring[k].waiting = sim_xcalloc(p->n_dest, sizeof *c.ring[k].waiting);
        c.ring[k].running = sim_xcalloc(p->n_dest, sizeof *c.ring[k].running);
        c.ring[k].kv_util = sim_xcalloc(p->n_dest, sizeof *c.ring[k].kv_util);
    }
    c.rstate = sim_xcalloc(c.n_rep, sizeof *c.rstate);
    for (uint32_t i = 0; i < c.n_rep; i++)
        c.rstate[i] = sim_xcalloc(1, rt->state_size ? rt->state_size : 1);
    sim_pcg32_seed(&c.assign_rng, env->seed, SIM_STREAM_GATEWAY);
    if (!c.q)
        sim_panic(__FILE__, __LINE__, "out of memory");
    const bool kv_events =
        rt->on_kv_event && (route_needs(rt, rcfg) & ROUTE_NEEDS_KV_EVENTS);
    engine_hooks hooks = {.ctx = &c, .first_token = on_first_token, .finish = on_finish,
                          .kv_change = kv_events ? on_kv_change : NULL};
    if (kv_events) {
        c.kv_fire_due = -INFINITY;
    }
    for (uint32_t d = 0; d < p->n_dest; d++) {
        const cluster_group *g = p->n_groups ? &p->groups[out->dest[d].group] : NULL;
        c.eng[d] = engine_create(d, out->dest[d].pool_blocks, g ? &g->engine : &p->engine,
                                 g ? &g->cost : &p->cost, &hooks);
        if (!c.eng[d])
            sim_panic(__FILE__, __LINE__, "out of memory creating engines");
        engine_mark_window(c.eng[d], p->warmup_s);
        c.step_ev[d] = sim_evq_alloc(c.q);
        c.step_ev[d]->kind = EV_STEP;
        c.step_ev[d]->target = d;
    }
    uint32_t n_created = 0;
    const void *args[ROUTE_MAX_READS];
    route_config_args(rcfg, rt, args);
    const double interval_s = route_interval_s(rt, rcfg);
    /* Mixed fleet: every destination's pool, step budget and cost model
     * for the routers (route_env.dest_*; valid during create only).
     * Without groups they stay NULL, as the caller's env has them. */
    uint32_t *env_pool = NULL, *env_batch = NULL;
    const cost_model **env_cost = NULL;
    if (p->n_groups && !env->dest_pool_blocks) {
        env_pool = sim_xcalloc(p->n_dest, sizeof *env_pool);
        env_batch = sim_xcalloc(p->n_dest, sizeof *env_batch);
        env_cost = sim_xcalloc(p->n_dest, sizeof *env_cost);
        for (uint32_t d = 0; d < p->n_dest; d++) {
            const cluster_group *g = &p->groups[out->dest[d].group];
            env_pool[d] = out->dest[d].pool_blocks;
            env_batch[d] = g->engine.max_num_batched_tokens;
            env_cost[d] = &g->cost;
        }
    }
    for (; n_created < c.n_rep; n_created++) {
        route_env e = *env;
        e.seed = replica_seed(env->seed, n_created);
        if (env_pool) {
            e.dest_pool_blocks = env_pool;
            e.dest_batch_tokens = env_batch;
            e.dest_cost = env_cost;
        }
        rc = rt->create(c.rstate[n_created], &e, args);
        if (rc)
            break;
    }
    free(env_pool);
    free(env_batch);
    free(env_cost);
    if (rc)
        goto done;
    if (rt->attach)
        for (uint32_t i = 1; i < c.n_rep; i++)
            rt->attach(c.rstate[i], c.rstate[0]);
    /* Replicas that share a plan are ticked through the primary only. */
    const uint32_t n_tick = rt->attach ? 1 : c.n_rep;

    if (rt->on_interval && interval_s > 0) {
        sim_event *tick = sim_evq_alloc(c.q);
        tick->kind = EV_INTERVAL;
        sim_evq_schedule(c.q, tick, interval_s);
    }
    uint64_t n_scrape = 0; /* scrape k is at k * interval (no drift) */
    if (!c.exact) {
        sim_event *scrape = sim_evq_alloc(c.q);
        scrape->kind = EV_SCRAPE;
        sim_evq_schedule(c.q, scrape, gw->scrape_interval_s);
    }
    if (c.faults_on) {
        const cluster_faults *f = &p->faults;
        c.dstate = sim_xcalloc(p->n_dest, sizeof *c.dstate);
        c.down_view = sim_xcalloc(p->n_dest, sizeof *c.down_view);
        c.rdown = sim_xcalloc(p->n_dest, sizeof *c.rdown);
        c.slow = sim_xmalloc(p->n_dest * sizeof *c.slow);
        for (uint32_t d = 0; d < p->n_dest; d++)
            c.slow[d] = 1.0;
        c.retry_ev = sim_evq_alloc(c.q);
        c.retry_ev->kind = EV_RETRY;
        for (size_t k = 0; k < f->n_events; k++) {
            sim_event *fe = sim_evq_alloc(c.q);
            fe->kind = EV_FAULT;
            fe->target = (uint32_t)k;
            sim_evq_schedule(c.q, fe, f->events[k].t_s);
        }
        if (f->mtbf_s > 0) {
            c.frng = sim_xcalloc(p->n_dest, sizeof *c.frng);
            for (uint32_t d = 0; d < p->n_dest; d++) {
                sim_pcg32_seed(&c.frng[d], env->seed, sim_rng_substream(SIM_STREAM_FAULTS, d));
                sim_event *fe = sim_evq_alloc(c.q);
                fe->kind = EV_RFAULT;
                fe->target = d;
                sim_evq_schedule(c.q, fe, draw_exp(&c.frng[d], f->mtbf_s));
            }
        }
        sim_event *hc = sim_evq_alloc(c.q);
        hc->kind = EV_HEALTH;
        sim_evq_schedule(c.q, hc, f->health_check_interval_s);
    }
    sim_event *arr = sim_evq_alloc(c.q);
    arr->kind = EV_ARRIVAL;
    c.arr_ev = arr;
    rc = pull_next(&c, arr);
    sim_event *ev;
    uint64_t nev = 0;
    while (rc == SIM_OK && (ev = sim_evq_pop(c.q))) {
        double now = ev->time;
        nev++;
        {
            /* The next event is usually the queue's head now: start
             * loading its destination while this one is handled. */
            const sim_event *nx = sim_evq_peek(c.q);
            if (nx && nx->kind == EV_STEP)
                engine_prefetch(c.eng[nx->target]);
        }
        if (ev->kind == EV_ARRIVAL) {
            if (c.closed) {
                if ((rc = closed_arrival(&c, now)))
                    break;
            } else if ((rc = on_arrival(&c, now)) || (rc = pull_next(&c, ev))) {
                break;
            }
        } else if (ev->kind == EV_STEP) {
            c.planned[ev->target] = 0;
            engine_step_done(c.eng[ev->target], now);
            start_step(&c, ev->target, now);
        } else if (ev->kind == EV_INTERVAL) {
            kv_catch_up(&c, now, true);
            for (uint32_t i = 0; i < n_tick; i++)
                rt->on_interval(c.rstate[i], now);
            if (!c.arrivals_done)
                sim_evq_schedule(c.q, ev, now + interval_s);
        } else if (ev->kind == EV_FAULT) {
            on_fault(&c, ev->target, now);
        } else if (ev->kind == EV_RFAULT) {
            on_rfault(&c, ev, now);
        } else if (ev->kind == EV_RETRY) {
            on_retry(&c, now);
        } else if (ev->kind == EV_HEALTH) {
            for (uint32_t d = 0; d < p->n_dest; d++)
                c.down_view[d] = c.dstate[d] != DEST_UP;
            out->health_checks++;
            sim_evq_schedule(c.q, ev, (double)(out->health_checks + 1) *
                                          p->faults.health_check_interval_s);
        } else if (ev->kind == EV_SCRAPE) {
            on_scrape(&c, now, (double)(n_scrape + 2) * gw->scrape_interval_s);
            n_scrape++;
            if (!c.arrivals_done || c.faults_on) /* arrivals and retries read them */
                sim_evq_schedule(c.q, ev, (double)(n_scrape + 1) * gw->scrape_interval_s);
        } else { /* EV_END: drain time is over */
            break;
        }
        if (c.arrivals_done && c.inflight == 0)
            break;
        if (p->stop && (nev & 1023) == 0 && *p->stop) {
            out->interrupted = 1;
            rc = SIM_ERROR(SIM_EINTR, "run interrupted by a signal");
            break;
        }
    }
    c.loop_done = true;
    out->sim_end_s = sim_evq_now(c.q);
    /* KV events due before the end: a kernel event per due time would
     * have delivered them (kv_catch_up). */
    kv_catch_up(&c, out->sim_end_s, false);
    out->events = nev + c.kv_firings;
    for (uint32_t d = 0; d < p->n_dest; d++) {
        /* Planned steps that ended before the last event: an event loop
         * stepping one at a time would have run them. */
        double t_next;
        (void)engine_cruise_stop(c.eng[d], out->sim_end_s, false, &t_next);
        out->events += engine_cruise_steps(c.eng[d]);
        out->cruise_steps += engine_cruise_steps(c.eng[d]);
        engine_foreach(c.eng[d], count_unfinished, &c);
        out->dest[d].st = *engine_get_stats(c.eng[d]);
    }
    for (size_t k = c.rq_head; k < c.rq_n; k++) { /* waiting to be retried */
        out->n_unfinished++;
        free_creq(&c, c.rq[k]);
    }
    c.rq_head = c.rq_n = 0;
    if (c.have_pending)
        wl_request_fini(&c.pending);
    if (rc == SIM_OK) {
        SIM_ALWAYS(out->n_arrived ==
                   out->n_completed + out->n_unfinished + out->n_rejected + out->n_too_long +
                       out->n_failed);
        SIM_ALWAYS(out->n_lost + out->n_refused == out->n_retries + out->n_failed);
        summarize(&c);
        fairness(p, out);
        timeline(p, out);
        if (rt->telemetry)
            rt->telemetry(c.rstate[0], &out->tel);
    }
done:
    /* Replicas before the primary, whose state they may share. */
    for (uint32_t i = n_created; i-- > 0;)
        if (rt->destroy)
            rt->destroy(c.rstate[i]);
    for (uint32_t i = 0; i < c.n_rep; i++)
        free(c.rstate[i]);
    free(c.rstate);
    for (uint32_t d = 0; d < p->n_dest; d++)
        engine_destroy(c.eng[d]);
    sim_evq_destroy(c.q);
    while (c.creq_free) {
        creq *cr = c.creq_free;
        c.creq_free = *(creq **)(void *)cr;
        free(cr);
    }
    free(c.eng);
    free(c.step_ev);
    free(c.planned);
    free(c.outstanding);
    for (uint32_t k = 0; k < c.n_ring; k++) {
        free(c.ring[k].queued);
        free(c.ring[k].waiting);
        free(c.ring[k].running);
        free(c.ring[k].kv_util);
    }
    free(c.ring);
    free(c.kv);
    free(c.kv_hash);
    free(c.dstate);
    free(c.slow);
    free(c.down_view);
    free(c.rdown);
    free(c.frng);
    free(c.rq);
    free(c.rq_due);
    return rc;
}

void cluster_result_fini(cluster_result *r)
{
    free(r->dest);
    free(r->rec);
    r->dest = NULL;
    r->rec = NULL;
    route_telemetry_fini(&r->tel);
    free(r->win_t0);
    free(r->win_arrivals);
    free(r->win_hit_rate);
    free(r->win_ttft_p99);
    r->win_t0 = r->win_hit_rate = r->win_ttft_p99 = NULL;
    r->win_arrivals = NULL;
    r->n_win = 0;
    free(r->keys);
    r->keys = NULL;
    r->n_keys = 0;
}

