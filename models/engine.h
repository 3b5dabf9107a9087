/*
 * One destination: an LLM engine instance modelled at iteration (step)
 * granularity, like vLLM's V1 scheduler with chunked prefill and automatic
 * prefix caching (docs/design.md §5).
 *
 * Each step the engine serves its running requests first, in admission
 * order (a decode needs 1 token, a prefill the next chunk of its prompt,
 * at most long_prefill_token_threshold tokens when set, within
 * max_num_batched_tokens), then admits waiting requests FCFS while
 * the token budget, max_num_seqs and free KV blocks allow.  On admission the
 * longest cached prefix of the prompt (full blocks only, at least one token
 * left to compute) is reused.  When a running request needs a block and
 * none is free, the most recently admitted running request is preempted:
 * its blocks are released (cached ones stay matchable) and it is recomputed
 * later.  A step's duration comes from the cost model.  With
 * engine_params.flavor ENGINE_SGLANG the engine follows SGLang's scheduler
 * instead (prefill and decode batches apart; see engine_params).
 *
 * What this version leaves out (issue "Engine fidelity"): hashes of
 * generated-output blocks (only prompt blocks enter the cache, so the next
 * turn of a conversation can hit its previous prompt but not the previous
 * answer), CPU-side scheduling time, and speculative decoding.
 */
#ifndef CRSIM_MODELS_ENGINE_H
#define CRSIM_MODELS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "workloads/request.h"
#include "models/cost.h"
#include "models/pcache.h"

/* Engine flavours: whose scheduler and prefix cache the engine follows
 * (docs/engine.md). */
enum engine_flavor {
    ENGINE_VLLM = 0,   /* vLLM V1 (the default) */
    ENGINE_SGLANG = 1, /* SGLang (see engine_params) */
};

/* Order of the waiting queue. */
enum engine_policy {
    ENGINE_FCFS = 0, /* first come, first served (both flavours' default) */
    ENGINE_LPM = 1,  /* SGLang only: longest cached prefix first */
};

/* Scheduler settings (vLLM names). */
typedef struct engine_params {
    uint32_t block_size;           /* tokens per KV block */
    uint32_t max_num_batched_tokens; /* token budget per step */
    uint32_t max_num_seqs;         /* running requests at most */
    bool prefix_caching;           /* reuse cached prefixes */
    /* vLLM V1 long_prefill_token_threshold: a request computing more than
     * this many tokens in a step (a prefill chunk or a recompute) takes at
     * most this many, before the token budget applies; 0 = off (vLLM's
     * default).  Source: vllm/v1/core/sched/scheduler.py, Scheduler.schedule
     * (running and waiting loops: `if 0 < threshold < num_new_tokens:
     * num_new_tokens = threshold`), vllm/config/scheduler.py SchedulerConfig
     * (default 0; derived as int(0.04 * max_model_len) only when
     * max_num_partial_prefills > 1, a key crsim does not have), vLLM main
     * at 00024d31 / 01230b40 (v0.11 line).  Tokens. */
    uint32_t long_prefill_token_threshold;
    /* ENGINE_SGLANG follows SGLang's scheduler (python/sglang/srt/managers/
     * scheduler.py, schedule_policy.py; mem_cache/radix_cache.py;
     * server_args.py; SGLang main of the v0.5.3 line, docs/engine.md):
     *  - a step is a prefill batch or a decode batch, never both
     *    (enable_mixed_chunk off, its default): a prefill batch, taken
     *    whenever there is prefill work that fits, holds the chunk of the
     *    request in progress and new requests up to max_num_batched_tokens
     *    (here SGLang's chunked_prefill_size; engine_sglang_chunk_default),
     *    the last one possibly truncated; decoders wait during it;
     *  - the waiting queue is ordered by `policy` at every prefill batch;
     *  - a request's prefix enters the cache when the result of the batch
     *    that completed its prefill is processed, which the overlap
     *    scheduler (its default) does after forming the next batch: a
     *    prefill that ends with step N is matched from step N + 2 on (the
     *    chunks of a prefill still in progress, from step N + 1);
     *  - long_prefill_token_threshold must be 0, and no request is ever a
     *    steady decoder (engine_cruise plans nothing). */
    enum engine_flavor flavor;
    enum engine_policy policy;
} engine_params;

/* Per-request state inside an engine.  Allocated zero-initialised by the
 * caller (the cluster), which owns it and the wl_request it points to; the
 * engine only links it into its queues between engine_submit() and the
 * finish callback, and holds no memory of it afterwards (its KV blocks are
 * counts in the engine's cache, released at finish). */
typedef struct engine_req {
    wl_request *r;
    uint32_t computed;    /* tokens of the sequence whose KV is computed */
    uint32_t generated;   /* output tokens emitted */
    uint32_t hit_tokens;  /* prefix-hit tokens at first admission */
    uint32_t n_sched;     /* tokens scheduled in the current step */
    pcache_seq kv;        /* KV blocks held (engine-private) */
    uint32_t nblk;        /* KV blocks held: kv.n_tree + kv.n_priv */
    uint32_t n_reg;       /* leading blocks already offered to the cache */
    uint32_t preemptions;
    bool admitted_once;
    bool rejected;        /* can never fit in this engine's pool */
    double admit_s;       /* start of the step that first admitted it
                             (first scheduled), s; valid when admitted_once */
    double first_token_s; /* time of the first output token, s (< 0 if none) */
    double finish_s;      /* completion time, s (< 0 if unfinished) */
    struct engine_req *qnext, *qprev; /* waiting- or running-list links */
    /* Engine-private bookkeeping of running requests (engine.c). */
    uint64_t seq;         /* admission order */
    uint64_t tick0;       /* steady decode: engine tick at which computed
                             and generated above were exact */
    uint64_t ev;          /* steady decode: tick of its next event (the
                             step it finishes in) */
    uint64_t tb0;         /* steady decode: first tick whose step gives it
                             a new KV block (then every block_size ticks;
                             the blocks are counted per phase by the
                             engine and credited when it leaves) */
    struct engine_req *wnext; /* steady decode: next in its wheel slot */
    bool steady;          /* in steady decode (state kept lazily) */
} engine_req;

/* Callbacks from an engine to its owner. */
typedef struct engine_hooks {
    void *ctx;
    /* The request emitted its first output token at `t` seconds. */
    void (*first_token)(void *ctx, uint32_t dest, engine_req *er, double t);
    /* The request finished (or was rejected) at `t` seconds; the engine no
     * longer references `er`. */
    void (*finish)(void *ctx, uint32_t dest, engine_req *er, double t);
    /* Optional (NULL = none, and then the cache is not observed at all):
     * the engine's prefix cache stored (kind PCACHE_STORED) or evicted
     * (PCACHE_REMOVED) blocks hashes[0..n) (models/pcache.h,
     * pcache_set_observer; `parent` as there), at the current simulated
     * time of the call that changed it: a step's end for blocks a prefill
     * chunk (or a decode) filled, a step's start for evictions by its
     * allocations.  `hashes` is valid during the call only. */
    void (*kv_change)(void *ctx, uint32_t dest, int kind, uint64_t parent,
                      const uint64_t *hashes, uint32_t n);
} engine_hooks;

/* Counters of one engine, cumulative since creation. */
typedef struct engine_stats {
    uint64_t steps;
    uint64_t prefill_tokens;  /* prompt tokens computed (misses + recompute) */
    uint64_t decode_tokens;
    uint64_t hit_tokens;      /* prefix-hit tokens at first admission */
    uint64_t prompt_tokens;   /* prompt tokens of admitted requests */
    uint64_t requests;        /* requests submitted */
    uint64_t preemptions;
    uint64_t rejected;
    uint64_t ctx_read_tokens; /* KV tokens read by attention: earlier context of
                                 every prefill chunk plus every decode's context */
    double busy_s;            /* time spent in steps, seconds */
    /* Same counters restricted to steps ending at or after the start of the
     * measurement window (engine_mark_window). */
    uint64_t win_prefill_tokens, win_decode_tokens;
    double win_busy_s;
} engine_stats;

typedef struct engine engine;

/* Create an engine `dest` with a pool of `n_blocks` KV blocks, cost model
 * `cost` (copied) and scheduler settings `p` (copied).  Returns NULL if out
 * of memory.  Free with engine_destroy(). */
engine *engine_create(uint32_t dest, uint32_t n_blocks, const engine_params *p,
                      const cost_model *cost, const engine_hooks *hooks);

/* SGLang's default chunked_prefill_size for a GPU of `gpu_mem_bytes`
 * bytes (server_args.py, ServerArgs._handle_gpu_memory_settings, by the
 * memory in MiB): < 35 GiB 2048, < 60 GiB 4096, < 160 GiB 8192, else
 * 16384 tokens.  Cannot fail. */
uint32_t engine_sglang_chunk_default(double gpu_mem_bytes);

/* Free the engine.  Requests still inside are not freed (their owner frees
 * them).  Accepts NULL. */
void engine_destroy(engine *e);

/* Hand a request to the engine at time `now` (appended to the waiting
 * queue).  The caller then calls engine_try_start() if the engine is idle. */
void engine_submit(engine *e, engine_req *er, double now);

/* If the engine is idle and has work, form the next batch and return its
 * duration in seconds (> 0); the caller must call engine_step_done() after
 * that long.  Returns 0 if the engine is busy or has nothing to run. */
double engine_try_start(engine *e, double now);

/* Finish the step in progress at time `now`: advance every scheduled
 * request, register newly full prompt blocks in the cache, emit first
 * tokens and completions through the hooks.  Then the caller calls
 * engine_try_start() again. */
void engine_step_done(engine *e, double now);

/* Longest cruise engine_cruise plans (steps; the wheel's span bounds it
 * further: 2 x block_size rounded up to a power of two). */
#define ENGINE_CRUISE_MAX 64u

/*
 * Cruise: steps of steady decode without a kernel event each
 * (docs/performance.md, "Round 5: cruise, lazy KV delivery, batched KV
 * events").  Call right after
 * engine_try_start returned a step of duration d at `t0` that the caller
 * will end at t1 = t0 + d * factor (factor: the caller's step-time
 * multiplier, 1 without one).  If that step and the next ones are steady
 * decode only (every running request a steady decoder, nothing waiting)
 * with nobody emitting its last token in them, and the KV blocks the
 * decoders need in them can be had without a visible change (blank ones
 * when a KV-event consumer observes the cache, so no eviction and no KV
 * event; any available ones otherwise: an eviction is then seen only by
 * this engine's later admissions, which follow a submission, which ends
 * the plan), the engine plans them: step j + 1 ends at
 * t_{j+1} = t_j + cost_step_time(its batch) * factor, the same
 * floating-point sums as one step at a time.  Returns the number of
 * planned steps beyond the first (0: no plan) and sets *t_end to the end
 * of the last one (t1 without a plan): the caller schedules its step
 * event there instead of at t1.  No hook fires in a planned step, and of
 * what a scrape reads only the KV blocks in use change (the decoders'
 * new blocks): the planned steps are materialised lazily, by
 * engine_step_done at *t_end, by engine_cruise_sync (before a scrape
 * reads the engine) or by engine_cruise_stop.
 */
uint32_t engine_cruise(engine *e, double t0, double t1, double factor, double *t_end);

/* End the plan at `now`, before anything changes the engine (a
 * submission, a crash, a new step-time factor, the end of the run): the
 * planned steps ending before `now` (at or before when `incl`) are
 * materialised, and the step in progress becomes the last.  Returns 1 and
 * its end time in *t_next if that is earlier than the plan's end (the
 * caller moves its step event there), else 0.  No plan: returns 0. */
int engine_cruise_stop(engine *e, double now, bool incl, double *t_next);

/* Materialise the planned steps whose ends are at or before `now`,
 * keeping the plan (before reading engine_kv_used_blocks at `now`).  No
 * plan: nothing. */
void engine_cruise_sync(engine *e, double now);

/* Planned steps materialised so far (each a step end without a kernel
 * event of its own). */
uint64_t engine_cruise_steps(const engine *e);

/* A hint, nothing else: start loading what the end of e's current step
 * and the start of its next will read first (the engine's fields, its
 * next wheel slot, its first running requests).  The caller knows which
 * destination's event comes next (the event queue's head); with hundreds
 * of destinations their states are cold (docs/performance.md, "Scaling
 * curve"). */
void engine_prefetch(const engine *e);

/* Count served work from steps ending at or after `t0` seconds into the
 * window counters of engine_stats. */
void engine_mark_window(engine *e, double t0);

/* Current counters. */
const engine_stats *engine_get_stats(const engine *e);

/*
 * One step that produced decode tokens, ending at or after the window's
 * start (engine_mark_window): the inter-token latency (ITL) of each of
 * its `tokens` decode tokens is the step's duration (a running request is
 * in every step, and steps run back to back while any request runs; see
 * models/latency.h for the definition and its exceptions).
 */
typedef struct engine_itl_step {
    double t_end_s;  /* step end, simulated s */
    double dur_s;    /* step duration, s (> 0) */
    uint64_t tokens; /* decode tokens of the step (>= 1) */
} engine_itl_step;

/* The steps recorded so far, in time order, *n of them; owned by the
 * engine, valid until its next step or engine_destroy.  Cannot fail (a
 * step not recorded for want of memory is counted in *dropped, NULL =
 * not asked). */
const engine_itl_step *engine_itl_steps(const engine *e, size_t *n, uint64_t *dropped);

/* Requests inside the engine (waiting + running). */
uint32_t engine_inflight(const engine *e);

/* Prompt tokens still to prefill over all requests inside the engine
 * (what a gateway scraping the engine's queue would see). */
uint64_t engine_queued_tokens(const engine *e);

/* Requests in the waiting queue: never admitted plus preempted ones (what
 * vLLM exports as num_requests_waiting).  Cannot fail. */
uint32_t engine_n_waiting(const engine *e);

/* Requests in the running set (vLLM num_requests_running).  Cannot fail. */
uint32_t engine_n_running(const engine *e);

/* KV blocks held by running requests (pcache_pinned): the used part of
 * the pool, as vLLM's kv_cache_usage counts it (cached blocks that no
 * request holds are free, i.e. evictable).  Divide by
 * pcache_capacity(engine_cache(e)) for the utilisation.  Cannot fail. */
uint32_t engine_kv_used_blocks(const engine *e);

/* The engine's prefix cache (read-only, for tests and telemetry). */
const pcache *engine_cache(const engine *e);

/* Remove `er` from the waiting queue if it has never been admitted (a
 * preempted request has started and stays).  Returns 1 if removed (the
 * engine no longer references it), 0 otherwise. */
int engine_withdraw(engine *e, engine_req *er);

/* Write up to `max` never-admitted waiting requests, in queue order, to
 * out[]; returns how many. */
uint32_t engine_waiting(const engine *e, engine_req **out, uint32_t max);

/*
 * Fault hook (docs/faults.md): the engine crashes at `now`.  The step in
 * progress is abandoned (not counted in engine_stats; the caller cancels
 * its step-completion event), every running and waiting request releases
 * its KV blocks and leaves the engine, in admission order then queue
 * order, through lost(ctx, er) (the engine no longer references er; its
 * counters are reset for a later engine_submit, preemptions kept), and
 * with `cold` every cached block is dropped (pcache_clear: an empty prefix
 * cache, reported as removals to a KV observer).  Returns the number of
 * requests lost.  Cannot fail.
 */
uint32_t engine_crash(engine *e, bool cold, void (*lost)(void *ctx, engine_req *er), void *ctx);

/* Visit every request inside the engine (for end-of-run accounting). */
void engine_foreach(engine *e, void (*fn)(void *ctx, engine_req *er), void *ctx);

#endif
