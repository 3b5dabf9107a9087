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
 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "../sim/error.h"

struct engine {
    uint32_t dest;
    engine_params p;
    cost_model cost;
    engine_hooks hooks;
    pcache *cache;
    engine_req *wait_head, *wait_tail;
    uint32_t n_wait;
    engine_req **run; /* running requests in admission order */
    uint32_t n_run, cap_run;
    bool busy;
    double step_start;
    double win_t0;
    uint64_t queued;  /* Σ queued_part() over requests inside */
    /* Memo of the last prefix match of a waiting request (normally the
     * queue head, which is re-examined every step while memory is short):
     * the request, the number of hashes matched against, the cache version
     * seen, and the result; the matched block indices are kept in
     * memo_er->blk, unused while the request waits (nblk == 0).  Cleared
     * when memo_er leaves the waiting queue. */
    engine_req *memo_er;
    uint32_t memo_n, memo_m, memo_unpinned;
    uint64_t memo_version;
    engine_stats st;
    cost_batch batch; /* composition of the step in progress */
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

engine *engine_create(uint32_t dest, uint32_t n_blocks, const engine_params *p,
                      const cost_model *cost, const engine_hooks *hooks)
{
    engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->cache = pcache_create(n_blocks);
    e->cap_run = p->max_num_seqs < 64 ? p->max_num_seqs : 64;
    e->run = malloc(e->cap_run * sizeof *e->run);
    if (!e->cache || !e->run) {
        pcache_destroy(e->cache);
        free(e->run);
        free(e);
        return NULL;
    }
    e->dest = dest;
    e->p = *p;
    e->cost = *cost;
    e->hooks = *hooks;
    return e;
}

void engine_destroy(engine *e)
{
    if (!e)
        return;
    pcache_destroy(e->cache);
    free(e->run);
    free(e);
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

static void blk_reserve(engine_req *er, uint32_t n)
{
    if (n <= er->capblk)
        return;
    uint32_t cap = er->capblk ? er->capblk : 8;
    while (cap < n)
        cap *= 2;
    er->blk = sim_xrealloc(er->blk, cap * sizeof *er->blk);
    er->capblk = cap;
}

/* Grow `er`'s block list to `target` blocks.  Returns false if the pool ran
 * out (blocks taken so far stay with the request). */
static bool ensure_blocks(engine *e, engine_req *er, uint32_t target)
{
    if (er->nblk >= target)
        return true;
    blk_reserve(er, target);
    er->nblk += pcache_alloc_run(e->cache, er->blk + er->nblk, target - er->nblk);
    return er->nblk == target;
}

static void release_blocks(engine *e, engine_req *er)
{
    pcache_release(e->cache, er->blk, er->nblk);
    er->nblk = 0;
    er->n_reg = 0;
}

/* ---- public ---- */

void engine_submit(engine *e, engine_req *er, double now)
{
    (void)now;
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

static void preempt_last(engine *e)
{
    engine_req *v = e->run[--e->n_run];
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
 * request while the cache version is unchanged, and re-checking it block
 * by block (pcache_rematch) when it changed.  Leaves the matched indices in
 * er->blk[0..m) for pcache_pin_blocks(). */
static uint32_t head_match(engine *e, engine_req *er, uint32_t n, uint32_t *unpinned)
{
    const uint64_t v = pcache_version(e->cache);
    if (e->memo_er == er && e->memo_n == n) {
        if (e->memo_version != v)
            e->memo_m = pcache_rematch(e->cache, er->r->blocks, n, er->blk, e->memo_m,
                                       &e->memo_unpinned);
    } else {
        blk_reserve(er, n);
        e->memo_m = pcache_match_blocks(e->cache, er->r->blocks, n, er->blk,
                                        &e->memo_unpinned);
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

double engine_try_start(engine *e, double now)
{
    if (e->busy)
        return 0.0;
    const uint32_t bs = e->p.block_size;
    uint32_t budget = e->p.max_num_batched_tokens;
    bool preempted = false;
    memset(&e->batch, 0, sizeof e->batch);

    /* 1. Running requests first, in admission order. */
    for (uint32_t i = 0; i < e->n_run && budget > 0; i++) {
        engine_req *er = e->run[i];
        uint32_t todo = seq_len(er) - er->computed;
        uint32_t n = todo < budget ? todo : budget;
        bool self_preempted = false;
        /* Most steps of a decoding request stay within its last block:
         * skip the division (a measurable share of this loop) then. */
        const uint64_t end = (uint64_t)er->computed + n;
        const uint32_t need = end <= (uint64_t)er->nblk * bs ? er->nblk : ceil_div(end, bs);
        while (!ensure_blocks(e, er, need)) {
            /* Out of blocks: preempt the most recently admitted request,
             * which may be this one. */
            self_preempted = e->run[e->n_run - 1] == er;
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

    /* 2. Admit waiting requests FCFS (not in a step that preempted, as in
     * vLLM: memory is short). */
    while (!preempted && e->wait_head && e->n_run < e->p.max_num_seqs && budget > 0) {
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
            /* Leave at least one token to compute, as vLLM does. */
            uint32_t cap = (seq_len(er) - 1) / bs;
            m = head_match(e, er, r->n_blocks < cap ? r->n_blocks : cap, &unpinned);
        }
        uint32_t ctok = m * bs;
        uint32_t todo = seq_len(er) - ctok;
        uint32_t n = todo < budget ? todo : budget;
        uint32_t need = ceil_div((uint64_t)ctok + n, bs) - m;
        if (pcache_available(e->cache) < unpinned + need)
            break; /* FCFS: the head waits for memory */
        wait_pop_front(e);
        e->queued -= queued_part(er);
        blk_reserve(er, m + need); /* keeps er->blk[0..m) from head_match */
        pcache_pin_blocks(e->cache, er->blk, m);
        er->nblk = m;
        er->n_reg = m;
        er->computed = ctok;
        if (!er->admitted_once) {
            er->admitted_once = true;
            er->hit_tokens = ctok;
            e->st.hit_tokens += ctok;
            e->st.prompt_tokens += r->prompt_tokens;
        }
        SIM_ALWAYS(ensure_blocks(e, er, m + need));
        e->queued += queued_part(er);
        if (e->n_run == e->cap_run) {
            e->cap_run *= 2;
            e->run = sim_xrealloc(e->run, e->cap_run * sizeof *e->run);
        }
        e->run[e->n_run++] = er;
        batch_add(e, er, n);
        budget -= n;
    }

    if (e->batch.prefill_tokens + e->batch.decode_tokens == 0)
        return 0.0;
    e->busy = true;
    e->step_start = now;
    return cost_step_time(&e->cost, &e->batch);
}

void engine_step_done(engine *e, double now)
{
    SIM_ALWAYS(e->busy);
    const uint32_t bs = e->p.block_size;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < e->n_run; i++) {
        engine_req *er = e->run[i];
        if (er->n_sched == 0) {
            e->run[kept++] = er;
            continue;
        }
        e->queued -= queued_part(er);
        er->computed += er->n_sched;
        er->n_sched = 0;
        /* Offer newly full prompt blocks to the cache. */
        uint32_t full = er->computed / bs;
        if (full > er->r->n_blocks)
            full = er->r->n_blocks;
        if (full > er->nblk)
            full = er->nblk;
        if (er->n_reg < full) {
            const uint32_t j = er->n_reg;
            pcache_commit_run(e->cache, er->blk + j, er->r->blocks + j, full - j,
                              j ? er->r->blocks[j - 1] : 0);
            er->n_reg = full;
        }
        if (er->computed == seq_len(er)) {
            er->generated++;
            if (er->generated == 1) {
                er->first_token_s = now;
                e->hooks.first_token(e->hooks.ctx, e->dest, er, now);
            }
        }
        if (er->generated >= er->r->output_tokens) {
            release_blocks(e, er);
            er->finish_s = now;
            e->hooks.finish(e->hooks.ctx, e->dest, er, now);
            continue;
        }
        e->queued += queued_part(er);
        e->run[kept++] = er;
    }
    e->n_run = kept;

    const double dur = now - e->step_start;
    e->st.steps++;
    e->st.prefill_tokens += e->batch.prefill_tokens;
    e->st.decode_tokens += e->batch.decode_tokens;
    e->st.busy_s += dur;
    if (now >= e->win_t0) {
        e->st.win_prefill_tokens += e->batch.prefill_tokens;
        e->st.win_decode_tokens += e->batch.decode_tokens;
        e->st.win_busy_s += dur;
    }
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

uint32_t engine_inflight(const engine *e) { return e->n_wait + e->n_run; }

uint64_t engine_queued_tokens(const engine *e) { return e->queued; }

const pcache *engine_cache(const engine *e) { return e->cache; }

void engine_foreach(engine *e, void (*fn)(void *ctx, engine_req *er), void *ctx)
{
    /* Read each link before calling `fn`, which may free the request. */
    for (uint32_t i = 0; i < e->n_run; i++)
        fn(ctx, e->run[i]);
    for (engine_req *er = e->wait_head, *next; er; er = next) {
        next = er->qnext;
        fn(ctx, er);
    }
}
