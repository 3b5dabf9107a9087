/*
 * Iteration-level engine: batch formation, KV block accounting with the
 * prefix cache, preemption by recompute, and per-step cost.
 *
 * A request's sequence is its prompt followed by the tokens generated so
 * far; `computed` counts the leading tokens whose KV exists.  One rule
 * covers prefill, decode and recompute after preemption: a step computes up
 * to `seq_len − computed` tokens of a request, and when its KV reaches
 * `seq_len` the request samples one more output token.  A fresh request
 * thus prefills its prompt and emits token 1; a decoding request computes
 * the one token it last emitted; a preempted request recomputes prompt and
 * output so far, then continues.
 *
 * Steady decoders cost nothing per step (docs/performance.md).  A running
 * request whose prompt is computed and that only decodes changes in a
 * fixed way each step it is scheduled (computed and generated +1, one more
 * token of decode context, a new KV block every block_size steps) until it
 * emits its last token.  Such a request is "steady": its counters are kept
 * as of tick `tick0` of the engine's tick counter (steps so far) and
 * brought up to date only when needed; the engine keeps Σ computed and
 * their number for the cost batch, a timing wheel of the ticks they finish
 * at, and per phase (tick mod block_size) the number of them that take a
 * new KV block in a step of that phase: the blocks are taken from the pool
 * at their tick without visiting anyone and credited to each decoder when
 * it leaves steady decode (until round 15 every new block was a visit, a
 * cold cache line each with hundreds of engines: docs/performance.md).  A
 * step visits only the other running requests (prefills, recomputes) and
 * the steady ones that finish in it.  That is exact while every running
 * request is scheduled in full and no allocation fails, which the engine
 * checks before the step from the sums (tokens ≤ budget, blocks ≤
 * available): then the order of allocations within the step cannot matter
 * (they only take blank blocks: never-used ones first, then the coldest
 * cached ones, whoever asks).  Otherwise (chunked prefill over budget,
 * memory short) every steady request is brought up to date and the step
 * runs as the plain loop over all running requests in admission order.
 * Releases and hooks of one step happen in admission order in both cases.
 */
#include "models/engine.h"

#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/core/prefetch.h"

struct engine {
    /* What a scrape reads (engine_queued_tokens, engine_n_waiting,
     * engine_n_running, and through `cache` engine_kv_used_blocks), first:
     * one cache line of the engine per scrape, which at R = 1000
     * destinations is cold (docs/performance.md "Scaling curve"). */
    uint64_t queued;  /* Σ queued_part() over requests inside */
    uint32_t n_wait;
    uint32_t n_run;
    pcache *cache;
    uint32_t dest;
    engine_params p;
    cost_model cost;
    engine_hooks hooks;
    engine_req *wait_head, *wait_tail;
    engine_req *run_head, *run_tail; /* running requests, admission order */
    /* Running requests that are not steady decoders, in admission order. */
    engine_req **act;
    uint32_t n_act, cap_act;
    /* Steady decoders by the tick of their next event (the step they
     * finish in): a timing wheel of wmask + 1 slots (a farther event is
     * parked in the last slot of the turn and moved on when that slot
     * comes round), each an intrusive list. */
    engine_req **wheel;
    uint64_t wmask;
    /* Steady decoders by the phase of their block ticks (tb0 mod
     * block_size, block_size entries): the step at tick t gives a new KV
     * block to ph_cnt[t mod block_size] of them, without visiting them. */
    uint32_t *ph_cnt;
    /* Steady decoders whose event is due in the step being formed or run
     * (taken from the wheel; after try_start: those finishing in it). */
    engine_req **due;
    uint32_t n_due, cap_due;
    uint64_t tick;     /* steps completed */
    uint64_t s_ctx;    /* Σ computed over steady decoders, as of tick */
    uint32_t n_steady;
    uint64_t next_seq;
    bool busy;
    double step_start;
    double win_t0;
    /* Memo of the last prefix match of a waiting request (normally the
     * queue head, which is re-examined every step while memory is short):
     * the request, the number of hashes matched against, the cache version
     * seen, and the result.  Cleared when memo_er leaves the waiting
     * queue. */
    engine_req *memo_er;
    uint32_t memo_n, memo_m, memo_unpinned;
    uint64_t memo_version;
    engine_stats st;
    cost_batch batch; /* composition of the step in progress */
    /* Cruise (engine_cruise): steps 1 .. cr_k - 1 of a plan formed at the
     * start of step 0 are pure steady decode; step j ends at cr_t[j + 1]
     * (cr_t[0] = step 0's start).  cr_m of them are materialised (the
     * engine is in step cr_m).  cr_k = 0: no plan. */
    uint32_t cr_k, cr_m;
    /* SGLang flavour (sglang_try_start): whether the step in progress is a
     * prefill batch, the requests whose prefill it completed, whose blocks
     * enter the cache only after the next batch is formed (pend), and a
     * scratch array for ordering the waiting queue. */
    bool sg_prefill;
    engine_req **pend, **sg_tmp;
    uint32_t n_pend, cap_pend, cap_tmp;
    uint64_t cr_steps; /* planned steps materialised, over the run */
    /* Steps with decode tokens in the window (engine_itl_steps). */
    engine_itl_step *itl;
    size_t n_itl, cap_itl;
    uint64_t itl_dropped;
    double cr_t[ENGINE_CRUISE_MAX + 1];
};

static inline uint32_t seq_len(const engine_req *er)
{
    return er->r->prompt_tokens + er->generated;
}

/* Tokens of `er` that still need prefill-style computation (0 for a
 * request in steady decode). */
static inline uint64_t queued_part(const engine_req *er)
{
    uint32_t todo = seq_len(er) - er->computed;
    return (er->generated == 0 || todo > 1) ? todo : 0;
}

static inline uint32_t ceil_div(uint64_t a, uint32_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

/* The cache observer: forwards to the owner's kv_change hook. */
static void observe_cache(void *ctx, int kind, uint64_t parent, const uint64_t *hashes,
                          uint32_t n)
{
    engine *e = ctx;
    e->hooks.kv_change(e->hooks.ctx, e->dest, kind, parent, hashes, n);
}

engine *engine_create(uint32_t dest, uint32_t n_blocks, const engine_params *p,
                      const cost_model *cost, const engine_hooks *hooks)
{
    engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->cache = pcache_create(n_blocks);
    e->cap_act = e->cap_due = 64;
    /* Wheel slots: a power of two > 2 block sizes, and at least 256 so
     * that most decoders' finish ticks (their only event) are within one
     * turn and are not parked and moved on (docs/performance.md, round
     * 15: 2.4 % of the run at R = 1000 against 64 slots). */
    uint64_t w = 256;
    while (w <= 2ull * p->block_size)
        w <<= 1;
    e->wmask = w - 1;
    e->act = malloc(e->cap_act * sizeof *e->act);
    e->wheel = calloc(w, sizeof *e->wheel);
    e->ph_cnt = calloc(p->block_size, sizeof *e->ph_cnt);
    e->due = malloc(e->cap_due * sizeof *e->due);
    if (!e->cache || !e->act || !e->wheel || !e->ph_cnt || !e->due) {
        pcache_destroy(e->cache);
        free(e->act);
        free(e->wheel);
        free(e->ph_cnt);
        free(e->due);
        free(e);
        return NULL;
    }
    e->dest = dest;
    e->p = *p;
    e->cost = *cost;
    e->hooks = *hooks;
    /* Requests' block lists are chained hashes (wl_request.blocks). */
    pcache_assume_chained(e->cache, true);
    if (hooks->kv_change)
        pcache_set_observer(e->cache, observe_cache, e);
    return e;
}

void engine_destroy(engine *e)
{
    if (!e)
        return;
    pcache_destroy(e->cache);
    free(e->act);
    free(e->wheel);
    free(e->ph_cnt);
    free(e->due);
    free(e->pend);
    free(e->sg_tmp);
    free(e->itl);
    free(e);
}

/* Append to a growable array of request pointers. */
static void ptr_push(engine_req ***a, uint32_t *n, uint32_t *cap, engine_req *er)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *a = sim_xrealloc(*a, *cap * sizeof **a);
    }
    (*a)[(*n)++] = er;
}

/* ---- running list (admission order, linked by qnext/qprev) ---- */

static void run_push_back(engine *e, engine_req *er)
{
    er->seq = e->next_seq++;
    er->qnext = NULL;
    er->qprev = e->run_tail;
    if (e->run_tail)
        e->run_tail->qnext = er;
    else
        e->run_head = er;
    e->run_tail = er;
    e->n_run++;
}

static void run_remove(engine *e, engine_req *er)
{
    if (er->qprev)
        er->qprev->qnext = er->qnext;
    else
        e->run_head = er->qnext;
    if (er->qnext)
        er->qnext->qprev = er->qprev;
    else
        e->run_tail = er->qprev;
    er->qnext = er->qprev = NULL;
    e->n_run--;
}

/* ---- waiting queue (FIFO, preempted requests go back to the front) ---- */

static void wait_push_back(engine *e, engine_req *er)
{
    er->qnext = NULL;
    er->qprev = e->wait_tail;
    if (e->wait_tail)
        e->wait_tail->qnext = er;
    else
        e->wait_head = er;
    e->wait_tail = er;
    e->n_wait++;
}

static void wait_push_front(engine *e, engine_req *er)
{
    er->qprev = NULL;
    er->qnext = e->wait_head;
    if (e->wait_head)
        e->wait_head->qprev = er;
    else
        e->wait_tail = er;
    e->wait_head = er;
    e->n_wait++;
}

static engine_req *wait_pop_front(engine *e)
{
    engine_req *er = e->wait_head;
    e->wait_head = er->qnext;
    if (e->wait_head)
        e->wait_head->qprev = NULL;
    else
        e->wait_tail = NULL;
    er->qnext = er->qprev = NULL;
    e->n_wait--;
    if (e->memo_er == er)
        e->memo_er = NULL;
    return er;
}

/* ---- KV blocks ---- */

/* Grow `er`'s block list to `target` blocks.  Returns false if the pool ran
 * out (blocks taken so far stay with the request). */
static bool ensure_blocks(engine *e, engine_req *er, uint32_t target)
{
    if (er->nblk >= target)
        return true;
    er->nblk += pcache_seq_alloc(e->cache, &er->kv, target - er->nblk);
    return er->nblk == target;
}

static void release_blocks(engine *e, engine_req *er)
{
    pcache_seq_release(e->cache, &er->kv);
    er->nblk = 0;
    er->n_reg = 0;
}

/* ---- public ---- */

void engine_submit(engine *e, engine_req *er, double now)
{
    (void)now;
    SIM_ALWAYS(er->kv.node == 0 && er->kv.n_tree == 0 && er->kv.n_priv == 0);
    er->computed = 0;
    er->generated = 0;
    er->n_sched = 0;
    er->nblk = 0;
    er->n_reg = 0;
    er->first_token_s = -1.0;
    er->finish_s = -1.0;
    e->st.requests++;
    e->queued += queued_part(er);
    wait_push_back(e, er);
}

/* Preempt the most recently admitted running request (only in a plain
 * step, when every running request is in `act`). */
static void preempt_last(engine *e)
{
    engine_req *v = e->act[--e->n_act];
    SIM_ALWAYS(v == e->run_tail && !v->steady);
    run_remove(e, v);
    e->queued -= queued_part(v);
    release_blocks(e, v);
    v->computed = 0;
    v->n_sched = 0;
    v->preemptions++;
    e->st.preemptions++;
    e->queued += queued_part(v);
    wait_push_front(e, v);
}

/* Add `n` tokens of `er`, starting at its `computed`, to the step. */
static void batch_add(engine *e, engine_req *er, uint32_t n)
{
    cost_batch *b = &e->batch;
    uint32_t todo = seq_len(er) - er->computed;
    er->n_sched = n;
    if (er->generated > 0 && todo == 1) {
        b->decode_tokens++;
        b->decode_ctx += er->computed + 1u;
    } else {
        b->prefill_tokens += n;
        b->prefill_attn += (double)n * ((double)er->computed + (double)n / 2.0);
        b->prefill_ctx += er->computed;
    }
    if (n == todo)
        b->sampled++;
}

/* Longest cached prefix of waiting request `er` over its first `n` block
 * hashes, and how many of those blocks are unpinned: exactly what
 * pcache_match() returns now, but reusing the previous answer for the same
 * request while the cache version is unchanged. */
static uint32_t head_match(engine *e, engine_req *er, uint32_t n, uint32_t *unpinned)
{
    const uint64_t v = pcache_version(e->cache);
    if (e->memo_er != er || e->memo_n != n || e->memo_version != v) {
        e->memo_m = pcache_match(e->cache, er->r->blocks, n, &e->memo_unpinned);
        e->memo_er = er;
        e->memo_n = n;
    }
    e->memo_version = v;
    *unpinned = e->memo_unpinned;
    return e->memo_m;
}

static void reject(engine *e, engine_req *er, double now)
{
    e->queued -= queued_part(er);
    er->rejected = true;
    e->st.rejected++;
    e->hooks.finish(e->hooks.ctx, e->dest, er, now);
}

/* Offer `er`'s newly full blocks that have known hashes (prompt blocks,
 * and output blocks when the workload knows the output) to the cache. */
static void offer_full_blocks(engine *e, engine_req *er)
{
    uint32_t full = er->computed / e->p.block_size;
    if (full > er->r->n_blocks)
        full = er->r->n_blocks;
    if (full > er->nblk)
        full = er->nblk;
    if (er->n_reg < full) {
        pcache_seq_commit(e->cache, &er->kv, er->r->blocks, full);
        er->n_reg = full;
    }
}

/* ---- steady decoders ---- */

/* Tick of the step whose formation finds steady `er` needing a new block
 * (its next token would be the first past its last block), and of the step
 * after which it has emitted its last token.  Both from the counters as of
 * er->tick0; a steady request advances by one token per tick. */
static inline uint64_t tick_block(const engine *e, const engine_req *er)
{
    return er->tick0 + (uint64_t)er->nblk * e->p.block_size - er->computed;
}

static inline uint64_t tick_finish(const engine_req *er)
{
    return er->tick0 + er->r->output_tokens - er->generated - 1;
}

/* Put steady `er` in the wheel slot of its event tick er->ev (>= tick). */
static inline void wheel_put(engine *e, engine_req *er)
{
    const uint64_t t = er->ev - e->tick <= e->wmask ? er->ev : e->tick + e->wmask;
    engine_req **slot = &e->wheel[t & e->wmask];
    er->wnext = *slot;
    *slot = er;
}

/* Empty the wheel slot of this tick: its decoders due now into e->due (in
 * slot order), the ones parked there for a later tick back into the wheel. */
static inline void wheel_take_due(engine *e)
{
    engine_req **slot = &e->wheel[e->tick & e->wmask];
    engine_req *list = *slot;
    *slot = NULL;
    for (engine_req *er = list, *next; er; er = next) {
        next = er->wnext;
        if (er->ev == e->tick)
            ptr_push(&e->due, &e->n_due, &e->cap_due, er);
        else
            wheel_put(e, er); /* parked: not due yet */
    }
}

/* Running request `er` (not in `act`) starts steady decode at the current
 * tick.  Its prompt blocks are all offered to the cache already.  Its KV
 * blocks to come (one at tick_block, then one every block_size ticks up to
 * and including its finish tick) are counted in its phase, not visited:
 * its only wheel event is the step it finishes in. */
static void steady_join(engine *e, engine_req *er)
{
    const uint32_t bs = e->p.block_size;
    SIM_ALWAYS(er->nblk * (uint64_t)bs >= er->computed);
    er->steady = true;
    er->tick0 = e->tick;
    e->n_steady++;
    e->s_ctx += er->computed;
    er->tb0 = tick_block(e, er);
    er->ev = tick_finish(er);
    /* A steady decoder's last block is at most one block ahead of it, so
     * its first block tick is within block_size of now: no tick of its
     * phase comes before it. */
    SIM_ALWAYS(er->tb0 - e->tick < bs);
    if (er->tb0 <= er->ev)
        e->ph_cnt[er->tb0 % bs]++;
    wheel_put(e, er);
}

/* Bring steady `er`'s counters up to the current tick (its tokens, and the
 * KV blocks its phase was given by the steps before this tick) and take it
 * out of the steady sums (the caller has taken it out of the wheel). */
static void steady_leave(engine *e, engine_req *er)
{
    const uint32_t bs = e->p.block_size;
    const uint64_t d = e->tick - er->tick0;
    er->computed += (uint32_t)d;
    er->generated += (uint32_t)d;
    if (er->tb0 <= er->ev) {
        /* Its block ticks whose steps have been formed (their blocks
         * taken), up to its finish tick: those before the current tick,
         * and the current one when its step is in progress (a crash or
         * the end of a run in the middle of a step).  In step_done, where
         * the tick has advanced while busy, only decoders finishing in
         * that step leave, and their finish tick is the bound. */
        const uint64_t formed = e->tick + (e->busy ? 1u : 0u);
        const uint64_t end = formed < er->ev + 1 ? formed : er->ev + 1;
        if (end > er->tb0) {
            const uint32_t k = (uint32_t)((end - 1 - er->tb0) / bs + 1);
            er->nblk += k;
            pcache_seq_grant(e->cache, &er->kv, k);
        }
        e->ph_cnt[er->tb0 % bs]--;
    }
    er->steady = false;
    e->n_steady--;
    e->s_ctx -= er->computed;
    /* Output blocks filled while steady enter the cache now, at the same
     * simulated time as the step that filled them ended. */
    offer_full_blocks(e, er);
}

/* Make every running request explicit and put them all in `act`, in
 * admission order (before a plain step, and at the end of a run). */
static void steady_flush(engine *e)
{
    if (e->n_steady == 0)
        return;
    for (uint64_t w = 0; w <= e->wmask; w++) {
        for (engine_req *er = e->wheel[w]; er; er = er->wnext)
            steady_leave(e, er);
        e->wheel[w] = NULL;
    }
    for (uint32_t i = 0; i < e->n_due; i++)
        steady_leave(e, e->due[i]);
    e->n_due = 0;
    SIM_ALWAYS(e->n_steady == 0 && e->s_ctx == 0);
    e->n_act = 0;
    for (engine_req *er = e->run_head; er; er = er->qnext)
        ptr_push(&e->act, &e->n_act, &e->cap_act, er);
}

/* ---- cruise: steady-decode steps without kernel events ---- */

/* The batch of a pure steady step (every running request a steady
 * decoder without an event in it, nothing waiting): what the fast path of
 * engine_try_start forms then. */
static inline void pure_batch(const engine *e, cost_batch *b)
{
    memset(b, 0, sizeof *b);
    b->decode_tokens = e->n_steady;
    b->decode_ctx = e->s_ctx + e->n_steady;
    b->sampled = e->n_steady;
}

/* Record a step with decode tokens for the ITL (engine_itl_steps): one
 * append per step, not per token. */
static void itl_push(engine *e, double now, double dur)
{
    if (e->n_itl == e->cap_itl) {
        size_t cap = e->cap_itl ? 2 * e->cap_itl : 1024;
        engine_itl_step *g = realloc(e->itl, cap * sizeof *g);
        if (!g) {
            e->itl_dropped++;
            return;
        }
        e->itl = g;
        e->cap_itl = cap;
    }
    e->itl[e->n_itl++] = (engine_itl_step){now, dur, e->batch.decode_tokens};
}

/* The counters of the step in progress (e->batch) ending at `now`: every
 * step's end, planned or not. */
static inline void count_step(engine *e, double now)
{
    const double dur = now - e->step_start;
    e->st.steps++;
    e->st.prefill_tokens += e->batch.prefill_tokens;
    e->st.decode_tokens += e->batch.decode_tokens;
    e->st.ctx_read_tokens += e->batch.prefill_ctx + e->batch.decode_ctx;
    e->st.busy_s += dur;
    if (now >= e->win_t0) {
        e->st.win_prefill_tokens += e->batch.prefill_tokens;
        e->st.win_decode_tokens += e->batch.decode_tokens;
        e->st.win_busy_s += dur;
        if (e->batch.decode_tokens)
            itl_push(e, now, dur);
    }
}

/* Step bookkeeping of engine_step_done at `now` for a step without
 * prefill, with nothing finishing and nobody to visit (a pure step). */
static void pure_done(engine *e, double now)
{
    e->tick++;
    e->s_ctx += e->n_steady;
    count_step(e, now);
}

/* This tick's new KV blocks of the steady decoders (those of its phase),
 * taken one at a time as the decoders' own allocations would be: all of
 * them succeed (the caller checked), so which decoder a block goes to
 * does not matter to the cache; each decoder is credited its blocks when
 * it leaves steady decode (steady_leave). */
static void take_phase_blocks(engine *e)
{
    const uint32_t need = e->ph_cnt[e->tick % e->p.block_size];
    for (uint32_t i = 0; i < need; i++)
        SIM_ALWAYS(pcache_take(e->cache, 1) == 1);
}

/* The formation of a planned step: engine_try_start's fast path with
 * nothing in `act`, nothing waiting and nobody finishing (the plan's
 * guarantees), in the same order: parked entries moved on, then the
 * phase's new KV blocks.  The batch is the pure one (the caller sets
 * it). */
static void cruise_form(engine *e)
{
    SIM_ALWAYS(e->n_due == 0 && e->n_act == 0);
    if (e->wheel[e->tick & e->wmask]) {
        wheel_take_due(e);
        SIM_ALWAYS(e->n_due == 0); /* nobody finishes in a planned step */
    }
    take_phase_blocks(e);
}

/* Materialise the planned steps that end at or before `now` (strictly
 * before when !incl): each step's end and the next step's start, at that
 * time: what engine_step_done and engine_try_start reduce to when the
 * plan's guarantees hold (nobody finishes, nothing waits, every
 * allocation succeeds, from blank blocks when the cache is observed: no
 * hook, no KV event), plus cruise_form for a step whose decoders need KV
 * blocks. */
static void cruise_run(engine *e, double now, bool incl)
{
    while (e->cr_m + 1 < e->cr_k) {
        const double t = e->cr_t[e->cr_m + 1];
        if (incl ? !(t <= now) : !(t < now))
            break;
        pure_done(e, t);
        cruise_form(e);
        pure_batch(e, &e->batch);
        e->step_start = t;
        e->cr_m++;
        e->cr_steps++;
    }
}

uint32_t engine_cruise(engine *e, double t0, double t1, double factor, double *t_end)
{
    *t_end = t1;
    e->cr_k = e->cr_m = 0;
    if (!e->busy || e->n_act || e->wait_head || e->n_due || e->n_steady == 0 ||
        e->batch.prefill_tokens)
        return 0;
    /* Step j (tick + j) joins the plan while nobody finishes in it and its
     * steady decoders' new blocks can be had: blank ones, or, when nobody
     * observes the cache (no KV-event consumer), any available one (an
     * eviction is then seen only by this engine's own later admissions,
     * which come after a submission, which ends the plan first).  A
     * decoder that gets a block at tick t has its next event at
     * min(t + block_size, its finish) (re-put in the wheel then): the plan
     * ends before that. */
    uint32_t blank = e->hooks.kv_change ? pcache_blank(e->cache) : pcache_available(e->cache);
    uint64_t stop = e->tick + (ENGINE_CRUISE_MAX < e->wmask ? ENGINE_CRUISE_MAX : e->wmask);
    uint32_t k = 1;
    for (; e->tick + k < stop; k++) {
        const uint64_t t = e->tick + k;
        bool ok = true;
        /* The wheel holds each decoder at its finish tick, or parked on
         * the way there: an entry due at t finishes in step t; one parked
         * at t moves on at t, possibly into this plan's window, so the
         * plan ends before its finish. */
        for (const engine_req *er = e->wheel[t & e->wmask]; er && ok; er = er->wnext) {
            ok = er->ev != t;
            if (er->ev < stop)
                stop = er->ev;
        }
        const uint32_t need = e->ph_cnt[t % e->p.block_size];
        if (!ok || need > blank)
            break;
        blank -= need;
    }
    if (k == 1)
        return 0;
    e->cr_t[0] = t0;
    e->cr_t[1] = t1;
    cost_batch b;
    memset(&b, 0, sizeof b);
    b.decode_tokens = e->n_steady;
    b.sampled = e->n_steady;
    for (uint32_t j = 1; j < k; j++) {
        b.decode_ctx = e->s_ctx + (uint64_t)(j + 1) * e->n_steady;
        e->cr_t[j + 1] = e->cr_t[j] + cost_step_time(&e->cost, &b) * factor;
    }
    e->cr_k = k;
    *t_end = e->cr_t[k];
    return k - 1;
}

void engine_cruise_sync(engine *e, double now)
{
    if (e->cr_k)
        cruise_run(e, now, true);
}

uint64_t engine_cruise_steps(const engine *e) { return e->cr_steps; }

void engine_prefetch(const engine *e)
{
    const char *p = (const char *)e;
    SIM_PREFETCH(p);
    SIM_PREFETCH(p + 64);
    SIM_PREFETCH(p + 128);
    SIM_PREFETCH(p + 192);
    SIM_PREFETCH(&e->wheel[(e->tick + 1) & e->wmask]);
    SIM_PREFETCH(e->act);
    for (uint32_t i = 0; i < e->n_act && i < 4; i++)
        SIM_PREFETCH(e->act[i]);
}

int engine_cruise_stop(engine *e, double now, bool incl, double *t_next)
{
    if (e->cr_k == 0)
        return 0;
    cruise_run(e, now, incl);
    const int moved = e->cr_m + 1 < e->cr_k;
    *t_next = e->cr_t[e->cr_m + 1];
    e->cr_k = e->cr_m = 0;
    return moved;
}

/* `todo` tokens to compute capped by long_prefill_token_threshold (vLLM
 * V1 Scheduler.schedule: `if 0 < threshold < num_new_tokens`), before the
 * token budget applies. */
static inline uint32_t long_cap(const engine *e, uint32_t todo)
{
    const uint32_t thr = e->p.long_prefill_token_threshold;
    return thr && todo > thr ? thr : todo;
}

/* Tokens running request `er` asks for in the next step: the rest of its
 * sequence, capped by long_prefill_token_threshold. */
static inline uint32_t step_tokens(const engine *e, const engine_req *er)
{
    return long_cap(e, seq_len(er) - er->computed);
}

/* Blocks `er` must hold to compute its next `n` tokens. */
static inline uint32_t blocks_needed(const engine_req *er, uint32_t n, uint32_t bs)
{
    /* Most steps of a decoding request stay within its last block: skip
     * the division (a measurable share of this loop) then. */
    const uint64_t end = (uint64_t)er->computed + n;
    return end <= (uint64_t)er->nblk * bs ? er->nblk : ceil_div(end, bs);
}

/* Admit waiting requests in queue order while the token budget
 * (*budget_io, reduced by what they take), max_num_seqs and free KV blocks
 * allow; the head of the queue blocks the rest when memory is short.  A
 * request whose prompt plus output can never fit is rejected. */
static inline void admit_waiting(engine *e, double now, uint32_t *budget_io)
{
    const uint32_t bs = e->p.block_size;
    while (e->wait_head && e->n_run < e->p.max_num_seqs && *budget_io > 0) {
        engine_req *er = e->wait_head;
        const wl_request *r = er->r;
        if (ceil_div((uint64_t)r->prompt_tokens + r->output_tokens - 1, bs) >
            pcache_capacity(e->cache)) {
            wait_pop_front(e);
            reject(e, er, now);
            continue;
        }
        uint32_t m = 0, unpinned = 0;
        if (e->p.prefix_caching) {
            /* Leave at least one token to compute, as vLLM (and SGLang)
             * do. */
            uint32_t cap = (seq_len(er) - 1) / bs;
            m = head_match(e, er, r->n_blocks < cap ? r->n_blocks : cap, &unpinned);
        }
        uint32_t ctok = m * bs;
        uint32_t todo = long_cap(e, seq_len(er) - ctok);
        uint32_t n = todo < *budget_io ? todo : *budget_io;
        uint32_t need = ceil_div((uint64_t)ctok + n, bs) - m;
        if (pcache_available(e->cache) < unpinned + need)
            break; /* FCFS: the head waits for memory */
        wait_pop_front(e);
        e->queued -= queued_part(er);
        er->kv.hint = r->n_blocks; /* sizes the run it starts (no regrowth) */
        /* A trace's shared table outlives the engine: the runs are views. */
        er->kv.stable = r->blocks_mode == WL_BLOCKS_SHARED;
        pcache_seq_pin(e->cache, &er->kv, r->blocks, m);
        er->nblk = m;
        er->n_reg = m;
        er->computed = ctok;
        if (!er->admitted_once) {
            er->admitted_once = true;
            er->admit_s = now;
            er->hit_tokens = ctok;
            e->st.hit_tokens += ctok;
            e->st.prompt_tokens += r->prompt_tokens;
        }
        SIM_ALWAYS(ensure_blocks(e, er, m + need));
        e->queued += queued_part(er);
        er->steady = false;
        run_push_back(e, er);
        ptr_push(&e->act, &e->n_act, &e->cap_act, er);
        batch_add(e, er, n);
        *budget_io -= n;
    }
}

static double sglang_try_start(engine *e, double now);

double engine_try_start(engine *e, double now)
{
    if (e->busy)
        return 0.0;
    if (e->p.flavor == ENGINE_SGLANG)
        return sglang_try_start(e, now);
    const uint32_t bs = e->p.block_size;
    uint32_t budget = e->p.max_num_batched_tokens;
    bool preempted = false;
    memset(&e->batch, 0, sizeof e->batch);

    /* 0. Steady decoders with an event in this step, and whether the step
     * can run without visiting the others: every running request gets all
     * it asks for (tokens and blocks). */
    SIM_ALWAYS(e->n_due == 0);
    wheel_take_due(e); /* the steady decoders finishing in this step */
    uint64_t tokens = e->n_steady, blocks = e->ph_cnt[e->tick % bs];
    for (uint32_t i = 0; i < e->n_act; i++) {
        const engine_req *er = e->act[i];
        const uint32_t todo = step_tokens(e, er);
        tokens += todo;
        blocks += blocks_needed(er, todo, bs) - er->nblk;
    }
    const bool fast = tokens <= budget && blocks <= pcache_available(e->cache);

    if (fast) {
        /* 1a. Every running request in full (up to
         * long_prefill_token_threshold); no allocation can fail, so the
         * order of allocations does not matter. */
        for (uint32_t i = 0; i < e->n_act; i++) {
            engine_req *er = e->act[i];
            const uint32_t n = step_tokens(e, er);
            SIM_ALWAYS(ensure_blocks(e, er, blocks_needed(er, n, bs)));
            batch_add(e, er, n);
        }
        take_phase_blocks(e); /* the due ones stay in `due`: they finish */
        /* Each steady decoder: one token with context computed + 1. */
        e->batch.decode_tokens += e->n_steady;
        e->batch.decode_ctx += e->s_ctx + e->n_steady;
        e->batch.sampled += e->n_steady;
        budget -= (uint32_t)tokens;
    } else {
        /* 1b. The plain loop: running requests in admission order. */
        steady_flush(e);
        for (uint32_t i = 0; i < e->n_act && budget > 0; i++) {
            engine_req *er = e->act[i];
            uint32_t todo = step_tokens(e, er);
            uint32_t n = todo < budget ? todo : budget;
            bool self_preempted = false;
            const uint32_t need = blocks_needed(er, n, bs);
            while (!ensure_blocks(e, er, need)) {
                /* Out of blocks: preempt the most recently admitted
                 * request, which may be this one. */
                self_preempted = e->act[e->n_act - 1] == er;
                preempt_last(e);
                preempted = true;
                if (self_preempted)
                    break;
            }
            if (self_preempted)
                break;
            batch_add(e, er, n);
            budget -= n;
        }
    }

    /* 2. Admit waiting requests FCFS (not in a step that preempted, as in
     * vLLM: memory is short). */
    if (!preempted)
        admit_waiting(e, now, &budget);

    if (e->batch.prefill_tokens + e->batch.decode_tokens == 0)
        return 0.0;
    e->busy = true;
    e->step_start = now;
    return cost_step_time(&e->cost, &e->batch);
}

/* ---- SGLang flavour ---- */

uint32_t engine_sglang_chunk_default(double gpu_mem_bytes)
{
    const double mib = gpu_mem_bytes / 1048576.0;
    if (mib < 35 * 1024)
        return 2048; /* A10, L4, 4090 (and < 20 GiB: T4) */
    if (mib < 60 * 1024)
        return 4096; /* A100-40GB, L40S */
    if (mib < 160 * 1024)
        return 8192; /* A100-80GB, H100, H20, H200 */
    return 16384;    /* B200, MI300 */
}

/* Tokens in common at the front of two requests' block lists (whole
 * blocks: the hashes are chained, so equal hashes at a depth mean equal
 * prefixes). */
static uint32_t common_blocks(const wl_request *a, const wl_request *b)
{
    const uint32_t n = a->n_blocks < b->n_blocks ? a->n_blocks : b->n_blocks;
    uint32_t i = 0;
    while (i < n && a->blocks[i] == b->blocks[i])
        i++;
    return i;
}

/* SGLang's longest-prefix-match order of the waiting queue
 * (schedule_policy.py, SchedulePolicy.calc_priority with policy lpm): with
 * at most 128 requests waiting, each one's cached prefix is matched and
 * the queue is stably sorted by matched tokens, longest first; a request
 * with at most 32 matched tokens whose prompt shares at least 32 tokens
 * with an earlier such request in the queue (the in-batch prefix check)
 * goes to the back, so that the earlier one computes the prefix first.
 * With more than 128 waiting the queue stays as it is (FCFS). */
static void sglang_order(engine *e)
{
    enum { IN_BATCH_TOKENS = 32, LPM_MAX_QUEUE = 128 };
    if (e->p.policy != ENGINE_LPM || !e->p.prefix_caching || e->n_wait < 2 ||
        e->n_wait > LPM_MAX_QUEUE)
        return;
    if (e->cap_tmp < 2 * e->n_wait) {
        e->cap_tmp = 2 * e->n_wait;
        e->sg_tmp = sim_xrealloc(e->sg_tmp, e->cap_tmp * sizeof *e->sg_tmp);
    }
    engine_req **q = e->sg_tmp, **ins = e->sg_tmp + e->n_wait;
    uint32_t n = 0, n_ins = 0;
    int64_t key[LPM_MAX_QUEUE];
    const uint32_t bs = e->p.block_size;
    for (engine_req *er = e->wait_head; er; er = er->qnext) {
        uint32_t cap = (seq_len(er) - 1) / bs, unpinned;
        if (er->r->n_blocks < cap)
            cap = er->r->n_blocks;
        const uint64_t tok = (uint64_t)pcache_match(e->cache, er->r->blocks, cap, &unpinned) * bs;
        key[n] = -(int64_t)tok;
        if (tok <= IN_BATCH_TOKENS) {
            uint32_t best = 0;
            for (uint32_t j = 0; j < n_ins; j++) {
                const uint32_t c = common_blocks(er->r, ins[j]->r);
                best = c > best ? c : best;
            }
            if ((uint64_t)best * bs >= IN_BATCH_TOKENS)
                key[n] = INT64_MAX; /* deprioritised */
            else
                ins[n_ins++] = er;
        }
        q[n++] = er;
    }
    /* Stable insertion sort by key (Python's list.sort is stable). */
    for (uint32_t i = 1; i < n; i++) {
        engine_req *x = q[i];
        const int64_t k = key[i];
        uint32_t j = i;
        for (; j > 0 && key[j - 1] > k; j--) {
            q[j] = q[j - 1];
            key[j] = key[j - 1];
        }
        q[j] = x;
        key[j] = k;
    }
    for (uint32_t i = 0; i < n; i++) {
        q[i]->qprev = i ? q[i - 1] : NULL;
        q[i]->qnext = i + 1 < n ? q[i + 1] : NULL;
    }
    e->wait_head = q[0];
    e->wait_tail = q[n - 1];
}

/* One step of the SGLang flavour (scheduler.py get_next_batch_to_run with
 * enable_mixed_chunk off, its default): a prefill batch when there is
 * prefill work — first the next chunk of the request whose prefill is in
 * progress, then waiting requests in the policy's order while the
 * chunked-prefill budget (max_num_batched_tokens = chunked_prefill_size),
 * max_num_seqs and free KV blocks allow, the last one possibly truncated
 * — and otherwise a decode batch of every running request.  Decoders wait
 * during prefill batches.  After the batch is formed, the prefixes whose
 * prefill completed in the previous step enter the cache (the overlap
 * scheduler processes a batch's result after launching the next). */
static double sglang_try_start(engine *e, double now)
{
    const uint32_t bs = e->p.block_size;
    uint32_t budget = e->p.max_num_batched_tokens;
    bool preempted = false;
    memset(&e->batch, 0, sizeof e->batch);
    /* 1. The prefill in progress (the chunked request; any recompute). */
    for (uint32_t i = 0; i < e->n_act && budget > 0; i++) {
        engine_req *er = e->act[i];
        const uint32_t todo = seq_len(er) - er->computed;
        if (er->generated > 0 && todo == 1)
            continue; /* a decoder */
        const uint32_t n = todo < budget ? todo : budget;
        bool self_preempted = false;
        while (!ensure_blocks(e, er, blocks_needed(er, n, bs))) {
            self_preempted = e->act[e->n_act - 1] == er;
            preempt_last(e);
            preempted = true;
            if (self_preempted)
                break;
        }
        if (self_preempted)
            break;
        batch_add(e, er, n);
        budget -= n;
    }
    /* 2. New requests in the policy's order. */
    if (!preempted) {
        sglang_order(e);
        admit_waiting(e, now, &budget);
    }
    e->sg_prefill = e->batch.prefill_tokens > 0;
    /* 3. No prefill: a decode batch of every running request. */
    for (uint32_t i = 0; !e->sg_prefill && i < e->n_act; i++) {
        engine_req *er = e->act[i];
        bool self_preempted = false;
        while (!ensure_blocks(e, er, blocks_needed(er, 1, bs))) {
            self_preempted = e->act[e->n_act - 1] == er;
            preempt_last(e);
            if (self_preempted)
                break;
        }
        if (self_preempted)
            break;
        batch_add(e, er, 1);
    }
    /* 4. The previous step's completed prefills enter the cache. */
    for (uint32_t i = 0; i < e->n_pend; i++)
        offer_full_blocks(e, e->pend[i]);
    e->n_pend = 0;
    if (e->batch.prefill_tokens + e->batch.decode_tokens == 0)
        return 0.0;
    e->busy = true;
    e->step_start = now;
    return cost_step_time(&e->cost, &e->batch);
}

/* Requests that finish (or emit their first token) in a step are reported,
 * and their blocks released, in admission order. */
static void finish_one(engine *e, engine_req *er, double now)
{
    run_remove(e, er);
    release_blocks(e, er);
    er->finish_s = now;
    e->hooks.finish(e->hooks.ctx, e->dest, er, now);
}

static void step_done(engine *e, double now);

void engine_step_done(engine *e, double now)
{
    SIM_ALWAYS(e->busy);
    if (e->cr_k) { /* the planned steps before this one, then this one */
        cruise_run(e, now, false);
        SIM_ALWAYS(e->cr_m + 1 == e->cr_k && e->cr_t[e->cr_k] == now);
        e->cr_k = e->cr_m = 0;
    }
    step_done(e, now);
}

static void step_done(engine *e, double now)
{
    /* Every steady decoder computed one token. */
    e->tick++;
    e->s_ctx += e->n_steady;
    /* Steady decoders finishing now, in admission order (few). */
    for (uint32_t i = 0; i < e->n_due; i++) {
        engine_req *er = e->due[i];
        steady_leave(e, er);
        SIM_ALWAYS(er->generated == er->r->output_tokens);
        uint32_t j = i;
        for (; j > 0 && e->due[j - 1]->seq > er->seq; j--)
            e->due[j] = e->due[j - 1];
        e->due[j] = er;
    }
    uint32_t kept = 0, d = 0;
    const uint32_t n_due = e->n_due;
    e->n_due = 0;
    for (uint32_t i = 0; i < e->n_act; i++) {
        engine_req *er = e->act[i];
        while (d < n_due && e->due[d]->seq < er->seq)
            finish_one(e, e->due[d++], now);
        if (er->n_sched == 0) {
            e->act[kept++] = er;
            continue;
        }
        e->queued -= queued_part(er);
        er->computed += er->n_sched;
        er->n_sched = 0;
        if (e->sg_prefill && er->computed == seq_len(er) &&
            er->generated + 1 < er->r->output_tokens)
            /* SGLang: a completed prefill enters the radix cache after
             * the next batch is formed (sglang_try_start). */
            ptr_push(&e->pend, &e->n_pend, &e->cap_pend, er);
        else
            offer_full_blocks(e, er);
        if (er->computed == seq_len(er)) {
            er->generated++;
            if (er->generated == 1) {
                er->first_token_s = now;
                e->hooks.first_token(e->hooks.ctx, e->dest, er, now);
            }
        }
        if (er->generated >= er->r->output_tokens) {
            finish_one(e, er, now);
            continue;
        }
        e->queued += queued_part(er);
        if (er->generated > 0 && seq_len(er) - er->computed == 1 && e->p.flavor == ENGINE_VLLM)
            steady_join(e, er);
        else
            e->act[kept++] = er;
    }
    while (d < n_due)
        finish_one(e, e->due[d++], now);
    e->n_act = kept;
    count_step(e, now);
    e->busy = false;
}

int engine_withdraw(engine *e, engine_req *er)
{
    if (er->admitted_once)
        return 0;
    for (engine_req *x = e->wait_head; x; x = x->qnext) {
        if (x != er)
            continue;
        if (x->qprev)
            x->qprev->qnext = x->qnext;
        else
            e->wait_head = x->qnext;
        if (x->qnext)
            x->qnext->qprev = x->qprev;
        else
            e->wait_tail = x->qprev;
        x->qnext = x->qprev = NULL;
        e->n_wait--;
        if (e->memo_er == x)
            e->memo_er = NULL;
        e->queued -= queued_part(x);
        e->st.requests--;
        return 1;
    }
    return 0;
}

uint32_t engine_waiting(const engine *e, engine_req **out, uint32_t max)
{
    uint32_t n = 0;
    for (engine_req *x = e->wait_head; x && n < max; x = x->qnext)
        if (!x->admitted_once)
            out[n++] = x;
    return n;
}

void engine_mark_window(engine *e, double t0) { e->win_t0 = t0; }

const engine_stats *engine_get_stats(const engine *e) { return &e->st; }

const engine_itl_step *engine_itl_steps(const engine *e, size_t *n, uint64_t *dropped)
{
    *n = e->n_itl;
    if (dropped)
        *dropped = e->itl_dropped;
    return e->itl;
}

uint32_t engine_inflight(const engine *e) { return e->n_wait + e->n_run; }

uint64_t engine_queued_tokens(const engine *e) { return e->queued; }

uint32_t engine_n_waiting(const engine *e) { return e->n_wait; }

uint32_t engine_n_running(const engine *e) { return e->n_run; }

uint32_t engine_kv_used_blocks(const engine *e) { return pcache_pinned(e->cache); }

const pcache *engine_cache(const engine *e) { return e->cache; }

/* Reset `er` for a later engine_submit after a crash (engine_crash). */
static void crash_reset(engine_req *er)
{
    er->computed = er->generated = er->hit_tokens = er->n_sched = 0;
    er->admitted_once = er->rejected = er->steady = false;
    er->first_token_s = er->finish_s = -1.0;
    er->qnext = er->qprev = er->wnext = NULL;
}

uint32_t engine_crash(engine *e, bool cold, void (*lost)(void *ctx, engine_req *er), void *ctx)
{
    steady_flush(e); /* every running request explicit, wheel empty */
    uint32_t n = 0;
    while (e->run_head) {
        engine_req *er = e->run_head;
        run_remove(e, er);
        release_blocks(e, er);
        crash_reset(er);
        n++;
        lost(ctx, er);
    }
    while (e->wait_head) {
        engine_req *er = wait_pop_front(e);
        release_blocks(e, er);
        crash_reset(er);
        n++;
        lost(ctx, er);
    }
    e->n_act = e->n_due = e->n_pend = 0;
    e->sg_prefill = false;
    e->queued = 0;
    e->memo_er = NULL;
    e->busy = false;
    memset(&e->batch, 0, sizeof e->batch);
    if (cold)
        pcache_clear(e->cache);
    return n;
}

void engine_foreach(engine *e, void (*fn)(void *ctx, engine_req *er), void *ctx)
{
    /* Read each link before calling `fn`, which may free the request. */
    steady_flush(e);
    for (engine_req *er = e->run_head, *next; er; er = next) {
        next = er->qnext;
        fn(ctx, er);
    }
    for (engine_req *er = e->wait_head, *next; er; er = next) {
        next = er->qnext;
        fn(ctx, er);
    }
}
