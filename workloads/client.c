/*
 * Closed-loop and staged clients (see client.h, docs/clients.md).
 *
 * The run is a sequence of phases: a rate phase starts conversations
 * open-loop (the arrival process at the phase's conversation rate), a
 * concurrency phase runs N clients that each start a new conversation when
 * their previous one ends, a batch phase (burst) starts B conversations at
 * once.  sessions is one rate phase, concurrency one concurrency phase,
 * stages the configured ladder, burst a sequence of batch phases.  Within a
 * conversation, turn t+1 is scheduled a think time after turn t's end
 * (done()).  Pending sends sit in a binary min-heap by (time, insertion
 * number), so ties are broken deterministically.  Everything a
 * conversation is (key, turns, lengths, think times) is drawn when it
 * starts, from generators reseeded by its number: the send order, which
 * depends on the router, never changes a draw.
 */
#include "workloads/client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "workloads/arrivals.h"
#include "workloads/blockhash.h"
#include "workloads/internal.h"
#include "workloads/synth.h"

/* Segment tags ("glob", "pref", "sess" as in synth.c, so a conversation's
 * global and key prefix hash exactly as the open stream's do; "sysp",
 * "ques" for the shared-prefix benchmark). */
#define TAG_GLOBAL 0x676c6f62ULL
#define TAG_PREFIX 0x70726566ULL
#define TAG_SESSION 0x73657373ULL
#define TAG_SYSTEM 0x73797370ULL
#define TAG_QUESTION 0x71756573ULL

/* Purposes of the per-conversation substreams (SIM_STREAM_CLIENT). */
enum { DRAW_KEY = 0, DRAW_LENGTHS = 1, DRAW_THINK = 2 };

enum { PH_RATE = 0, PH_CONC = 1, PH_BATCH = 2 };

#define NO_CONV UINT32_MAX

typedef struct phase {
    int kind;
    double rate;          /* PH_RATE: conversations/s */
    uint32_t n;           /* PH_CONC: clients; PH_BATCH: conversations */
    double duration;      /* configured length, s (INFINITY: none) */
    double nominal_start; /* ladder time without barriers, s */
    double start;         /* actual start, s (NaN until started) */
    double send_end;      /* sends at or after it are dropped, s */
    bool barrier;         /* the next phase waits for this one to drain */
    uint64_t live;        /* requests in flight + sends pending */
    double last_done;     /* last completion of its requests, s */
    double load;          /* for wl_client_stage */
    bool is_conc;
    uint64_t conv_base;   /* conversations started before it */
} phase;

typedef struct conv {
    uint64_t index;
    uint64_t key;
    uint64_t prefix_id;   /* key prefix or system prompt segment id */
    uint64_t sess;        /* history segment ids base */
    uint32_t fixed;       /* global + key prefix tokens (system prompt) */
    uint32_t global;      /* global prefix tokens (0 for shared_prefix) */
    uint32_t turn, turns;
    uint32_t *len;        /* 2·turns: in_0, out_0, in_1, ... */
    double *think;        /* turns */
    uint32_t hist;
    uint32_t pslot;       /* its prefix's slot in wl_client.pfx (key index
                             or shared-prefix group) */
    uint32_t client;      /* concurrency client, or NO_CONV */
    uint32_t phase;
    wl__hbuf *hb;
    uint32_t hn;
    uint32_t next_free;
} conv;

typedef struct pend {
    double t, intended;
    uint64_t seq;
    uint32_t conv;   /* NO_CONV: start a new conversation */
    uint32_t client; /* PH_CONC client of a new conversation */
    uint32_t phase;
} pend;

typedef struct seg {
    uint64_t id;
    uint32_t len;
} seg;

typedef struct lendist {
    int kind; /* enum wl_lendist */
    double mean, a, b;
    uint32_t min, max;
} lendist;

struct wl_client {
    int mode;
    bool shared_prefix;
    uint64_t run_seed, wl_seed;
    uint32_t block;
    /* population */
    wl_keyrates kr;
    gsl_ran_discrete_t *table;
    uint32_t *prefix_len;
    uint64_t *prefix_id;
    uint64_t global_id;
    uint32_t global_tokens, max_prompt;
    lendist turns, input, output;
    int think_kind;
    double think_mean, think_a, think_b;
    double patience;
    /* shared prefix */
    uint64_t sp_n, sp_p;
    uint32_t sp_sys, sp_q, sp_out;
    uint64_t *perm;
    /* draws */
    gsl_rng *g;          /* reseeded per conversation and purpose */
    gsl_rng *r_arr;
    wl_arrivals *arr;
    /* conversations */
    conv *cv;
    uint32_t n_cv, cap_cv, free_cv;
    uint64_t next_conv;
    /* schedule */
    pend *heap;
    size_t n_heap, cap_heap;
    uint64_t seq;
    phase *ph;
    size_t n_ph, cap_ph, cur;
    bool ladder_open;    /* burst: more batch phases follow */
    double batch_interval;
    uint32_t batch_n;
    double next_start;   /* PH_RATE: next conversation start (nominal), s */
    double offset;       /* PH_RATE: start - nominal_start of the phase */
    uint64_t max_concurrency;
    uint64_t inflight;
    uint64_t max_requests;
    double duration;
    double now;
    bool started;
    /* records */
    wl_client_rec *rec;
    uint64_t n_rec, cap_rec;
    uint32_t *rec_conv;  /* conversation slot of each request */
    wl_client_stats st;
    wl__hpool *pool;
    /* Hashes of each prefix's full blocks (global + key prefix, or the
     * system prompt), computed by its first request and copied by later
     * conversations of the same prefix instead of rehashed; NULL until
     * then.  One per key index or shared-prefix group. */
    uint64_t **pfx;
    size_t n_pfx;
    seg *segs;
    size_t cap_segs;
    wl_client_stage *stage_out;
};

enum wl_client_mode wl_client_mode_of(const wl_config *cfg)
{
    const int k = wl__name_index(wl_client_mode_names, cfg->client.mode);
    return k < 0 ? WL_CLIENT_OPEN : (enum wl_client_mode)k;
}

bool wl_client_closed(const wl_config *cfg) { return wl_client_mode_of(cfg) != WL_CLIENT_OPEN; }

int wl_client_check(const wl_config *cfg, const char *where)
{
    const enum wl_client_mode m = wl_client_mode_of(cfg);
    const wl_config *c = cfg;
    if (c->client.n_stages && m != WL_CLIENT_STAGES)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.stages is set with workload.client.mode "
                         "%s; expected mode stages (or no stages)", where, c->client.mode);
    if (c->client.max_concurrency && m != WL_CLIENT_SESSIONS && m != WL_CLIENT_STAGES)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.max_concurrency is set with "
                         "workload.client.mode %s; expected mode sessions or stages", where,
                         c->client.mode);
    if (strcmp(c->benchmark, "shared_prefix") == 0 && m == WL_CLIENT_OPEN)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.benchmark is shared_prefix with "
                         "workload.client.mode open; expected a client mode (sessions, "
                         "concurrency, stages or burst) to send the prompts", where);
    if (m == WL_CLIENT_OPEN) {
        /* Keys of closed-loop clients, set with the open stream: never
         * silently ignored. */
        const char *key = c->client.think.mean_s > 0       ? "workload.client.think.mean_s"
                          : c->client.patience_s > 0       ? "workload.client.patience_s"
                          : c->client.concurrency > 0      ? "workload.client.concurrency"
                          : c->client.batch > 0            ? "workload.client.batch"
                          : c->client.batch_interval_s > 0 ? "workload.client.batch_interval_s"
                          : strcmp(c->client.latency_from, "send") != 0
                              ? "workload.client.latency_from"
                              : NULL;
        if (key)
            return SIM_ERROR(SIM_EINVAL, "%s: %s is set with workload.client.mode open; "
                             "expected a closed-loop mode (sessions, concurrency, stages, "
                             "burst) or the key's default", where, key);
        return SIM_OK;
    }
    if (strcmp(c->type, "synthetic") != 0)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.mode %s with workload.type %s; "
                         "expected type synthetic (closed-loop clients generate their "
                         "prompts)", where, c->client.mode, c->type);
    if (c->drift.sigma > 0)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.drift.sigma %g with workload.client.mode "
                         "%s; expected 0 (drift applies to open-loop streams only)", where,
                         c->drift.sigma, c->client.mode);
    if (strcmp(c->arrival.process, "bootstrap") == 0)
        return SIM_ERROR(SIM_EINVAL, "%s: workload.arrival.process bootstrap with "
                         "workload.client.mode %s; expected poisson or gamma", where,
                         c->client.mode);
    if (strcmp(c->client.think.dist, "lognormal") == 0 && c->client.think.mean_s > 0 &&
        !(c->client.think.cv > 0))
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.think.cv is 0 with dist lognormal; "
                         "expected a cv > 0 (or dist const)", where);
    if ((c->client.concurrency > 0 && m != WL_CLIENT_CONCURRENCY) ||
        ((c->client.batch > 0 || c->client.batch_interval_s > 0) && m != WL_CLIENT_BURST))
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.%s is set with workload.client.mode "
                         "%s; expected mode %s", where,
                         c->client.concurrency > 0 && m != WL_CLIENT_CONCURRENCY
                             ? "concurrency" : c->client.batch > 0 ? "batch" : "batch_interval_s",
                         c->client.mode,
                         c->client.concurrency > 0 && m != WL_CLIENT_CONCURRENCY ? "concurrency"
                                                                                 : "burst");
    if (m == WL_CLIENT_STAGES) {
        if (c->client.n_stages == 0)
            return SIM_ERROR(SIM_EINVAL, "%s: workload.client.stages is empty with "
                             "workload.client.mode stages; expected [{rate: R | concurrency: "
                             "N, duration_s: D}, ...]", where);
        for (size_t i = 0; i < c->client.n_stages; i++) {
            const wl_stage *s = &c->client.stages[i];
            if ((s->rate > 0) == (s->concurrency > 0))
                return SIM_ERROR(SIM_EINVAL, "%s: workload.client.stages[%zu] has rate %g and "
                                 "concurrency %lld; expected exactly one of them > 0", where,
                                 i, s->rate, (long long)s->concurrency);
        }
    } else if (c->max_requests == 0 && c->duration_s == 0) {
        return SIM_ERROR(SIM_EINVAL, "%s: workload.client.mode %s needs an end; expected "
                         "workload.max_requests or workload.duration_s > 0", where,
                         c->client.mode);
    }
    return SIM_OK;
}

/* ---- draws ---- */

static lendist make_len(const wl_lenspec *l)
{
    lendist d = {.mean = l->mean, .min = (uint32_t)l->min, .max = (uint32_t)l->max};
    const int k = wl__name_index(wl_lendist_names, l->dist);
    if (k == WL_LEN_UNIFORM) {
        d.kind = WL_LEN_UNIFORM;
    } else if (k == WL_LEN_CONST || l->cv == 0) {
        d.kind = WL_LEN_CONST;
    } else if (k == WL_LEN_LOGNORMAL) {
        d.kind = WL_LEN_LOGNORMAL;
        const double s2 = log1p(l->cv * l->cv);
        d.b = sqrt(s2);
        d.a = log(l->mean) - s2 / 2;
    } else {
        d.kind = WL_LEN_GAMMA;
        d.a = 1.0 / (l->cv * l->cv);
        d.b = l->mean * l->cv * l->cv;
    }
    return d;
}

/* As synth.c's draw_len: rounded, clamped to [min, max]. */
static uint32_t draw_len(const lendist *d, gsl_rng *r)
{
    double x;
    switch (d->kind) {
    case WL_LEN_UNIFORM:
        return d->min + sim_pcg32_bounded(sim_rng_pcg(r), d->max - d->min + 1);
    case WL_LEN_LOGNORMAL: x = gsl_ran_lognormal(r, d->a, d->b); break;
    case WL_LEN_GAMMA: x = gsl_ran_gamma(r, d->a, d->b); break;
    default: x = d->mean; break;
    }
    x = floor(x + 0.5);
    if (!(x >= d->min))
        return d->min;
    if (x > d->max)
        return d->max;
    return (uint32_t)x;
}

/* The mean of draw_len's values: Σ k·P(k) over k in [min, max], with
 * P(k) = F(k + 1/2) − F(k − 1/2) for the continuous law F (rounding to
 * the nearest integer), the tails folded into min and max (clamping).
 * Exact up to the CDF's accuracy; O(max − min) (turns: at most 64 by
 * default). */
static double mean_len(const lendist *d)
{
    if (d->kind == WL_LEN_CONST) {
        const double x = floor(d->mean + 0.5);
        return x < d->min ? d->min : x > d->max ? d->max : x;
    }
    if (d->kind == WL_LEN_UNIFORM)
        return ((double)d->min + d->max) / 2;
    double sum = 0, prev = 0;
    for (uint32_t k = d->min; k <= d->max; k++) {
        const double hi = k + 0.5;
        const double F = k == d->max ? 1
                         : d->kind == WL_LEN_LOGNORMAL ? gsl_cdf_lognormal_P(hi, d->a, d->b)
                                                       : gsl_cdf_gamma_P(hi, d->a, d->b);
        sum += k * (F - prev);
        prev = F;
        if (k == UINT32_MAX)
            break;
    }
    return sum;
}

static double draw_think(const wl_client *c, gsl_rng *r)
{
    if (!(c->think_mean > 0))
        return 0;
    if (c->think_kind == 1)
        return gsl_ran_exponential(r, c->think_mean);
    if (c->think_kind == 2)
        return gsl_ran_lognormal(r, c->think_a, c->think_b);
    return c->think_mean;
}

/* Reseed the shared generator for conversation `index` and `purpose`. */
static gsl_rng *keyed(wl_client *c, uint64_t index, uint64_t purpose)
{
    sim_pcg32_seed(sim_rng_pcg(c->g), wl_block_hash(c->run_seed, index),
                   sim_rng_substream(SIM_STREAM_CLIENT, purpose));
    return c->g;
}

/* ---- conversations ---- */

static uint32_t conv_new(wl_client *c, uint32_t phase_i)
{
    uint32_t i;
    if (c->free_cv != NO_CONV) {
        i = c->free_cv;
        c->free_cv = c->cv[i].next_free;
    } else {
        if (c->n_cv == c->cap_cv) {
            c->cap_cv = c->cap_cv ? 2 * c->cap_cv : 64;
            c->cv = sim_xrealloc(c->cv, c->cap_cv * sizeof *c->cv);
        }
        i = c->n_cv++;
        c->cv[i] = (conv){0};
    }
    conv *v = &c->cv[i];
    const uint64_t index = c->next_conv++;
    c->st.conversations++;
    v->index = index;
    v->turn = 0;
    v->hist = 0;
    v->hn = 0;
    v->client = NO_CONV;
    if (c->shared_prefix) {
        /* Prompt p of the G x P table, in order or shuffled, reused
         * round-robin when the run sends more than G·P; each stage of a
         * ladder starts again from the first prompt, as inference-perf's
         * stage runner asks its data generator anew per stage. */
        const uint64_t first = c->mode == WL_CLIENT_STAGES ? c->ph[phase_i].conv_base : 0;
        const uint64_t p = c->perm[(index - first) % c->sp_n];
        const uint64_t grp = p / c->sp_p;
        v->key = grp;
        v->pslot = (uint32_t)grp;
        v->prefix_id = wl_block_hash(wl_block_hash(TAG_SYSTEM, c->wl_seed), grp);
        v->sess = wl_block_hash(wl_block_hash(TAG_QUESTION, c->wl_seed), p);
        v->fixed = c->sp_sys;
        v->global = 0;
        v->turns = 1;
        v->len = sim_xrealloc(v->len, 2 * sizeof *v->len);
        v->think = sim_xrealloc(v->think, sizeof *v->think);
        v->len[0] = c->sp_q;
        v->len[1] = c->sp_out;
        v->think[0] = draw_think(c, keyed(c, index, DRAW_THINK));
        return i;
    }
    const size_t k = gsl_ran_discrete(keyed(c, index, DRAW_KEY), c->table);
    v->key = c->kr.id[k];
    v->pslot = (uint32_t)k;
    v->prefix_id = c->prefix_id[k];
    v->global = c->global_tokens;
    v->fixed = c->global_tokens + c->prefix_len[k];
    v->sess = wl_block_hash(wl_block_hash(TAG_SESSION, c->wl_seed),
                            wl_block_hash(c->run_seed, index));
    gsl_rng *r = keyed(c, index, DRAW_LENGTHS);
    v->turns = draw_len(&c->turns, r);
    v->len = sim_xrealloc(v->len, 2 * (size_t)v->turns * sizeof *v->len);
    uint64_t total = v->fixed;
    uint32_t t = 0;
    for (; t < v->turns; t++) {
        uint32_t in = draw_len(&c->input, r);
        const uint32_t out = draw_len(&c->output, r);
        if (t > 0 && total + in > c->max_prompt)
            break; /* the conversation would outgrow the context: it ends */
        if (t == 0 && total + in > c->max_prompt && total < c->max_prompt)
            in = (uint32_t)(c->max_prompt - total);
        v->len[2 * t] = in;
        v->len[2 * t + 1] = out;
        total += (uint64_t)in + out;
    }
    v->turns = t;
    v->think = sim_xrealloc(v->think, (size_t)v->turns * sizeof *v->think);
    gsl_rng *rt = keyed(c, index, DRAW_THINK);
    for (t = 0; t < v->turns; t++)
        v->think[t] = draw_think(c, rt);
    return i;
}

static void conv_end(wl_client *c, uint32_t i)
{
    conv *v = &c->cv[i];
    wl__hbuf_release(v->hb);
    v->hb = NULL;
    v->hn = 0;
    v->next_free = c->free_cv;
    c->free_cv = i;
}

static void push_seg(wl_client *c, size_t *ns, uint64_t id, uint32_t len)
{
    if (len == 0)
        return;
    if (*ns == c->cap_segs) {
        c->cap_segs = c->cap_segs ? 2 * c->cap_segs : 64;
        c->segs = sim_xrealloc(c->segs, c->cap_segs * sizeof *c->segs);
    }
    c->segs[(*ns)++] = (seg){id, len};
}

/* The request of conversation i's current turn: segments global, key
 * prefix (system prompt), earlier turns' inputs and outputs, this input
 * and output; block hashes as synth.c computes them (content id the XXH3
 * chain of the (segment, offset, length) pieces of the block), the
 * previous turn's full blocks reused (they are a prefix of this turn's). */
static int build(wl_client *c, uint32_t i, wl_request *out)
{
    conv *v = &c->cv[i];
    size_t ns = 0;
    if (c->shared_prefix) {
        push_seg(c, &ns, v->prefix_id, v->fixed);
    } else {
        push_seg(c, &ns, c->global_id, v->global);
        push_seg(c, &ns, v->prefix_id, v->fixed - v->global);
    }
    for (uint32_t s = 0; s < 2 * v->turn; s++)
        push_seg(c, &ns, wl_block_hash(v->sess, s), v->len[s]);
    const uint32_t in = v->len[2 * v->turn], outl = v->len[2 * v->turn + 1];
    push_seg(c, &ns, wl_block_hash(v->sess, 2 * v->turn), in);
    push_seg(c, &ns, wl_block_hash(v->sess, 2 * v->turn + 1), outl);
    const uint64_t prompt = (uint64_t)v->fixed + v->hist + in;
    SIM_ALWAYS(prompt + outl <= UINT32_MAX);
    const uint32_t B = c->block;
    const uint32_t nb = (uint32_t)((prompt + outl) / B);
    uint32_t reuse = v->hn < nb ? v->hn : nb;
    const uint32_t fixed_blocks = v->fixed / B < nb ? v->fixed / B : nb;
    const uint64_t *cached = v->hn == 0 ? c->pfx[v->pslot] : NULL;
    wl__hbuf *hb = v->hb;
    if (!hb || hb->cap < nb) {
        wl__hbuf *nh = wl__hpool_get(c->pool, nb ? nb : 1);
        if (!nh)
            return -SIM_ERROR(SIM_ENOMEM, "out of memory for the %u blocks of a request", nb);
        if (reuse)
            memcpy(nh->h, hb->h, reuse * sizeof nh->h[0]);
        wl__hbuf_release(hb);
        v->hb = hb = nh;
    }
    uint64_t *h = hb->h;
    if (cached && fixed_blocks) {
        memcpy(h, cached, fixed_blocks * sizeof *h);
        reuse = fixed_blocks;
    }
    uint64_t parent = reuse ? h[reuse - 1] : 0;
    size_t si = 0;
    uint64_t pos = (uint64_t)reuse * B;
    while (si < ns && pos >= c->segs[si].len) {
        pos -= c->segs[si].len;
        si++;
    }
    uint32_t off = (uint32_t)pos;
    for (uint32_t b = reuse; b < nb; b++) {
        uint64_t cid = 0;
        uint32_t need = B;
        while (need) {
            const uint32_t avail = c->segs[si].len - off;
            const uint32_t take = avail < need ? avail : need;
            const uint64_t piece[3] = {c->segs[si].id, off, take};
            cid = XXH3_64bits_withSeed(piece, sizeof piece, cid);
            off += take;
            need -= take;
            if (off == c->segs[si].len) {
                si++;
                off = 0;
            }
        }
        parent = h[b] = wl__block_hash(parent, cid);
    }
    if (v->hn == 0 && !cached && v->fixed / B) {
        /* The prefix's blocks, for the next conversations that share it
         * (all of them: a prompt is at least its prefix plus one token). */
        c->pfx[v->pslot] = sim_xmalloc((v->fixed / B) * sizeof *h);
        memcpy(c->pfx[v->pslot], h, fixed_blocks * sizeof *h);
        SIM_ALWAYS(fixed_blocks == v->fixed / B);
    }
    v->hn = nb;
    hb->refs++;
    *out = (wl_request){.id = c->n_rec, .arrival_s = c->now, .key = v->key,
                        .prompt_tokens = (uint32_t)prompt, .output_tokens = outl,
                        .n_blocks = nb, .blocks = h, .blocks_mode = WL_BLOCKS_COUNTED};
    return 1;
}

/* ---- schedule ---- */

static bool pend_less(const pend *a, const pend *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(wl_client *c, pend p)
{
    if (c->n_heap == c->cap_heap) {
        c->cap_heap = c->cap_heap ? 2 * c->cap_heap : 64;
        c->heap = sim_xrealloc(c->heap, c->cap_heap * sizeof *c->heap);
    }
    p.seq = c->seq++;
    size_t i = c->n_heap++;
    while (i > 0) {
        const size_t up = (i - 1) / 2;
        if (!pend_less(&p, &c->heap[up]))
            break;
        c->heap[i] = c->heap[up];
        i = up;
    }
    c->heap[i] = p;
    c->ph[p.phase].live++;
}

static pend heap_pop(wl_client *c)
{
    const pend top = c->heap[0];
    const pend last = c->heap[--c->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l >= c->n_heap)
            break;
        if (pend_less(&c->heap[l], &last))
            m = l;
        if (l + 1 < c->n_heap && pend_less(&c->heap[l + 1], m == l ? &c->heap[l] : &last))
            m = l + 1;
        if (m == i)
            break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (c->n_heap)
        c->heap[i] = last;
    c->ph[top.phase].live--;
    return top;
}

static bool past_end(const wl_client *c, double t)
{
    return c->duration > 0 && t > c->duration;
}

/* Schedule the next send of conversation slot i (phase ph) at t, or drop
 * the conversation's remaining turns when t falls past its phase's or
 * the run's end. */
static void schedule_turn(wl_client *c, uint32_t i, double t)
{
    conv *v = &c->cv[i];
    const phase *p = &c->ph[v->phase];
    if (t >= p->send_end || past_end(c, t)) {
        c->st.unsent += v->turns - v->turn;
        conv_end(c, i);
        return;
    }
    heap_push(c, (pend){.t = t, .intended = t, .conv = i, .client = v->client,
                        .phase = v->phase});
}

/* A concurrency client whose conversation ended at t starts the next one
 * a think time later (the think time after the last turn), if its phase
 * still sends then. */
static void client_next(wl_client *c, uint32_t client, uint32_t phase_i, double t)
{
    const phase *p = &c->ph[phase_i];
    if (t >= p->send_end || past_end(c, t))
        return;
    heap_push(c, (pend){.t = t, .intended = t, .conv = NO_CONV, .client = client,
                        .phase = phase_i});
}

/* Phase k starts at `t`: a concurrency phase pushes its clients' first
 * sends, a batch its conversations, a rate phase draws its first start. */
static void phase_begin(wl_client *c, size_t k, double t)
{
    phase *p = &c->ph[k];
    p->start = t;
    p->send_end = isinf(p->duration) ? INFINITY : t + p->duration;
    p->last_done = t;
    p->conv_base = c->next_conv;
    c->cur = k;
    if (p->kind == PH_RATE) {
        c->offset = t - p->nominal_start;
        c->next_start = p->nominal_start + wl_arrivals_next(c->arr) / p->rate;
    } else if (p->kind == PH_CONC) {
        for (uint32_t j = 0; j < p->n; j++)
            heap_push(c, (pend){.t = t, .intended = t, .conv = NO_CONV, .client = j,
                                .phase = (uint32_t)k});
    } else {
        for (uint32_t j = 0; j < p->n; j++)
            heap_push(c, (pend){.t = t, .intended = p->nominal_start, .conv = NO_CONV,
                                .client = NO_CONV, .phase = (uint32_t)k});
    }
}

/* Append burst batch phase number n_ph (nominal start after the last). */
static void add_batch(wl_client *c)
{
    if (c->n_ph == c->cap_ph) {
        c->cap_ph = c->cap_ph ? 2 * c->cap_ph : 16;
        c->ph = sim_xrealloc(c->ph, c->cap_ph * sizeof *c->ph);
    }
    const double nominal = c->n_ph ? c->ph[c->n_ph - 1].nominal_start + c->batch_interval : 0;
    c->ph[c->n_ph++] = (phase){.kind = PH_BATCH, .n = c->batch_n, .duration = INFINITY,
                               .nominal_start = nominal, .start = NAN,
                               .barrier = !(c->batch_interval > 0),
                               .load = c->batch_n};
}

/* When the phase after the current one may start (INFINITY: not yet, a
 * barrier is waiting; NaN: there is none). */
static double next_phase_time(wl_client *c)
{
    const phase *p = &c->ph[c->cur];
    if (c->cur + 1 >= c->n_ph) {
        if (c->mode != WL_CLIENT_BURST)
            return NAN;
        add_batch(c);
        p = &c->ph[c->cur];
    }
    const double nominal_end = c->mode == WL_CLIENT_BURST
                                   ? p->start + c->batch_interval
                                   : p->start + p->duration;
    if (!p->barrier)
        return nominal_end;
    if (p->live > 0 || (p->kind == PH_RATE && c->next_start + c->offset < p->send_end))
        return INFINITY;
    return nominal_end > p->last_done ? nominal_end : p->last_done;
}

/* The current rate phase's next conversation start, s (INFINITY if none
 * before its end). */
static double rate_start(const wl_client *c)
{
    const phase *p = &c->ph[c->cur];
    if (p->kind != PH_RATE)
        return INFINITY;
    const double t = c->next_start + c->offset;
    return t < p->send_end ? t : INFINITY;
}

static int peek(void *state, double now, double *t_out)
{
    wl_client *c = state;
    c->now = now;
    if (!c->started) {
        c->started = true;
        phase_begin(c, 0, 0);
    }
    if (c->max_requests && c->n_rec >= c->max_requests)
        return -1;
    if (past_end(c, now))
        return -1;
    for (;;) {
        double t = rate_start(c);
        if (c->n_heap && c->heap[0].t < t)
            t = c->heap[0].t;
        if (isfinite(t)) {
            if (past_end(c, t))
                return c->inflight ? 0 : -1;
            if (c->max_concurrency && c->inflight >= c->max_concurrency)
                return 0; /* a slot frees at a completion */
            *t_out = t > now ? t : now;
            /* A phase change due before t comes first. */
            const double nt = next_phase_time(c);
            if (!(nt <= t))
                return 1;
        }
        const double nt = next_phase_time(c);
        if (isnan(nt))
            return c->inflight ? 0 : -1;
        if (isinf(nt))
            return 0; /* barrier: waits for a completion */
        if (past_end(c, nt))
            return c->inflight ? 0 : -1;
        if (nt > now) {
            *t_out = nt; /* a wake-up: the next phase starts then */
            return 1;
        }
        phase_begin(c, c->cur + 1, nt);
    }
}

static int next(void *state, wl_request *out)
{
    wl_client *c = state;
    double t = rate_start(c);
    const bool from_heap = c->n_heap && c->heap[0].t < t;
    if (from_heap)
        t = c->heap[0].t;
    if (!isfinite(t) || t > c->now)
        return 0; /* nothing due now (a wake-up or a probe past the start) */
    if (c->max_requests && c->n_rec >= c->max_requests)
        return 0;
    uint32_t i;
    double intended;
    uint32_t ph;
    if (from_heap) {
        const pend p = heap_pop(c);
        intended = p.intended;
        ph = p.phase;
        if (p.conv == NO_CONV) {
            i = conv_new(c, p.phase);
            c->cv[i].client = p.client;
            c->cv[i].phase = p.phase;
        } else {
            i = p.conv;
        }
    } else {
        phase *p = &c->ph[c->cur];
        intended = c->next_start;
        c->next_start += wl_arrivals_next(c->arr) / p->rate;
        ph = (uint32_t)c->cur;
        i = conv_new(c, ph);
        c->cv[i].phase = ph;
    }
    if (c->cv[i].turns == 0) { /* cannot happen: turns.min >= 1 */
        conv_end(c, i);
        return 0;
    }
    const int rc = build(c, i, out);
    if (rc < 0)
        return rc;
    if (c->n_rec == c->cap_rec) {
        c->cap_rec = c->cap_rec ? 2 * c->cap_rec : 1024;
        c->rec = sim_xrealloc(c->rec, c->cap_rec * sizeof *c->rec);
        c->rec_conv = sim_xrealloc(c->rec_conv, c->cap_rec * sizeof *c->rec_conv);
    }
    c->rec[c->n_rec] = (wl_client_rec){.intended_s = intended < c->now ? intended : c->now,
                                       .send_s = c->now,
                                       .stage = c->mode == WL_CLIENT_STAGES ? ph : 0,
                                       .turn = c->cv[i].turn, .conv = c->cv[i].index};
    c->rec_conv[c->n_rec] = i;
    c->n_rec++;
    c->st.sent++;
    c->inflight++;
    c->ph[ph].live++;
    return 1;
}

static void done(void *state, const wl_request *r, double now, double ttft)
{
    wl_client *c = state;
    c->now = now;
    SIM_ALWAYS(r->id < c->n_rec);
    const uint32_t i = c->rec_conv[r->id];
    conv *v = &c->cv[i];
    phase *p = &c->ph[v->phase];
    SIM_ALWAYS(c->inflight > 0 && p->live > 0);
    c->inflight--;
    p->live--;
    if (now > p->last_done)
        p->last_done = now;
    const double think = v->think[v->turn];
    const uint32_t client = v->client, phase_i = v->phase;
    const bool gave_up = ttft < 0 || (c->patience > 0 && ttft > c->patience);
    if (gave_up)
        c->st.abandoned++;
    if (!gave_up && v->turn + 1 < v->turns) {
        v->hist += v->len[2 * v->turn] + v->len[2 * v->turn + 1];
        v->turn++;
        schedule_turn(c, i, now + think);
        return;
    }
    c->st.unsent += v->turns - v->turn - 1;
    conv_end(c, i);
    if (client != NO_CONV && p->kind == PH_CONC)
        client_next(c, client, phase_i, now + think);
}

wl_source wl_client_source(wl_client *c)
{
    return (wl_source){.state = c, .next = next, .peek = peek, .done = done};
}

/* ---- create ---- */

void wl_client_destroy(wl_client *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_cv; i++) {
        wl__hbuf_release(c->cv[i].hb);
        free(c->cv[i].len);
        free(c->cv[i].think);
    }
    free(c->cv);
    wl__hpool_close(c->pool);
    wl_keyrates_fini(&c->kr);
    if (c->table)
        gsl_ran_discrete_free(c->table);
    free(c->prefix_len);
    free(c->prefix_id);
    free(c->perm);
    for (size_t i = 0; i < c->n_pfx; i++)
        free(c->pfx[i]);
    free(c->pfx);
    sim_rng_destroy(c->g);
    sim_rng_destroy(c->r_arr);
    wl_arrivals_destroy(c->arr);
    free(c->heap);
    free(c->ph);
    free(c->rec);
    free(c->rec_conv);
    free(c->segs);
    free(c->stage_out);
    free(c);
}

/* A whole number >= 1 from the load (clients, batch size), or 0. */
static uint32_t whole(double x)
{
    if (!(x >= 1) || x > 1e7 || floor(x) != x)
        return 0;
    return (uint32_t)x;
}

int wl_client_create(const wl_config *cfg, const wl_keyrates *keys, uint64_t run_seed,
                     double load, uint32_t block_size, wl_client **out)
{
    *out = NULL;
    const char *where = cfg->name && *cfg->name ? cfg->name : "workload";
    int rc = wl_config_check(cfg, where);
    if (rc)
        return rc;
    const enum wl_client_mode mode = wl_client_mode_of(cfg);
    if (mode == WL_CLIENT_OPEN)
        return SIM_ERROR(SIM_EINVAL, "workload.client.mode is open; expected a closed-loop "
                         "mode for wl_client_create");
    if (!(load > 0) || !isfinite(load))
        return SIM_ERROR(SIM_EINVAL, "load %g; expected a finite load > 0 (experiment.rates)",
                         load);
    if (block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "engine.block_size 0; expected at least 1 token");
    enum wl_arrival_kind ak;
    if ((rc = wl_arrival_kind_parse(cfg->arrival.process, &ak)))
        return rc;
    wl_client *c = sim_xcalloc(1, sizeof *c);
    c->mode = mode;
    c->run_seed = run_seed;
    c->wl_seed = cfg->seed;
    c->block = block_size;
    c->free_cv = NO_CONV;
    c->shared_prefix = strcmp(cfg->benchmark, "shared_prefix") == 0;
    c->g = sim_rng_create(0, 0);
    c->r_arr = sim_rng_create(run_seed, SIM_STREAM_ARRIVALS);
    c->pool = wl__hpool_create();
    if (!c->g || !c->r_arr || !c->pool) {
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating the client");
        goto fail;
    }
    const wl_arrival_params ap = {.kind = ak, .rate = 1.0, .cv = cfg->arrival.cv};
    if ((rc = wl_arrivals_create(&ap, c->r_arr, &c->arr)))
        goto fail;
    c->turns = make_len(&cfg->turns);
    c->input = make_len(&cfg->input);
    c->output = make_len(&cfg->output);
    c->global_tokens = (uint32_t)cfg->global_prefix_tokens;
    c->max_prompt = (uint32_t)cfg->max_prompt_tokens;
    c->global_id = wl_block_hash(TAG_GLOBAL, cfg->seed);
    c->think_kind = wl__name_index(wl_think_dist_names, cfg->client.think.dist);
    c->think_mean = cfg->client.think.mean_s;
    if (c->think_kind == 2) {
        const double s2 = log1p(cfg->client.think.cv * cfg->client.think.cv);
        c->think_b = sqrt(s2);
        c->think_a = log(c->think_mean > 0 ? c->think_mean : 1) - s2 / 2;
    }
    c->patience = cfg->client.patience_s;
    c->max_requests = (uint64_t)cfg->max_requests;
    c->duration = mode == WL_CLIENT_STAGES ? 0 : cfg->duration_s;
    c->max_concurrency = (uint64_t)cfg->client.max_concurrency;
    double turns_mean = 1;
    if (c->shared_prefix) {
        c->sp_p = (uint64_t)cfg->shared_prefix.prompts_per_group;
        c->sp_n = (uint64_t)cfg->shared_prefix.groups * c->sp_p;
        c->sp_sys = (uint32_t)cfg->shared_prefix.system_prompt_tokens;
        c->sp_q = (uint32_t)cfg->shared_prefix.question_tokens;
        c->sp_out = (uint32_t)cfg->shared_prefix.output_tokens;
        c->perm = sim_xmalloc(c->sp_n * sizeof *c->perm);
        for (uint64_t j = 0; j < c->sp_n; j++)
            c->perm[j] = j;
        if (cfg->shared_prefix.shuffle) {
            /* Fisher-Yates from the workload seed: the same order for
             * every run seed, load and router. */
            sim_pcg32 g;
            sim_pcg32_seed(&g, cfg->seed, sim_rng_substream(SIM_STREAM_CLIENT, 3));
            for (uint64_t j = c->sp_n; j > 1; j--) {
                const uint64_t k = sim_pcg32_bounded(&g, (uint32_t)j);
                const uint64_t tmp = c->perm[j - 1];
                c->perm[j - 1] = c->perm[k];
                c->perm[k] = tmp;
            }
        }
    } else {
        turns_mean = mean_len(&c->turns);
        if (keys) {
            if ((rc = wl_keyrates_copy(keys, &c->kr)))
                goto fail;
        } else if ((rc = wl_synth_keys(cfg, &c->kr, NULL))) {
            goto fail;
        }
        const size_t n = c->kr.n;
        c->table = gsl_ran_discrete_preproc(n, c->kr.rate);
        c->prefix_len = sim_xmalloc(n * sizeof *c->prefix_len);
        c->prefix_id = sim_xmalloc(n * sizeof *c->prefix_id);
        if (!c->table) {
            rc = SIM_ERROR(SIM_ENOMEM, "out of memory building the key alias table");
            goto fail;
        }
        /* Each key's prefix as synth.c draws it: (workload seed, key id). */
        const lendist pd = make_len(&cfg->prefix);
        for (size_t i = 0; i < n; i++) {
            const uint64_t id = c->kr.id[i];
            sim_pcg32_seed(sim_rng_pcg(c->g), wl_block_hash(cfg->seed, id),
                           sim_rng_substream(SIM_STREAM_LENGTHS, 1));
            c->prefix_len[i] = draw_len(&pd, c->g);
            c->prefix_id[i] = wl_block_hash(wl_block_hash(TAG_PREFIX, cfg->seed), id);
        }
    }
    /* Requests/s to conversations/s: a conversation sends E[turns]
     * requests on average, the mean of the drawn (rounded, clamped) turn
     * counts (mean_len); conversations cut short by max_prompt_tokens or
     * by the end of the run send fewer. */
    const double to_conv =
        strcmp(cfg->client.rate_unit, "conversations") == 0 ? 1 : 1 / turns_mean;
    if (mode == WL_CLIENT_SESSIONS) {
        c->ph = sim_xcalloc(1, sizeof *c->ph);
        c->n_ph = 1;
        c->ph[0] = (phase){.kind = PH_RATE, .rate = load * to_conv, .duration = INFINITY,
                           .start = NAN, .load = load};
    } else if (mode == WL_CLIENT_CONCURRENCY) {
        const uint32_t n = cfg->client.concurrency ? (uint32_t)cfg->client.concurrency
                                                   : whole(load);
        if (!n) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: load %g with workload.client.mode concurrency and "
                           "workload.client.concurrency 0; expected a whole number of clients "
                           ">= 1 in experiment.rates (or workload.client.concurrency >= 1)",
                           where, load);
            goto fail;
        }
        c->ph = sim_xcalloc(1, sizeof *c->ph);
        c->n_ph = 1;
        c->ph[0] = (phase){.kind = PH_CONC, .n = n, .duration = INFINITY, .start = NAN,
                           .load = n, .is_conc = true};
    } else if (mode == WL_CLIENT_BURST) {
        c->batch_n = cfg->client.batch ? (uint32_t)cfg->client.batch : whole(load);
        if (!c->batch_n) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: load %g with workload.client.mode burst and "
                           "workload.client.batch 0; expected a whole batch size >= 1 in "
                           "experiment.rates (or workload.client.batch >= 1)", where, load);
            goto fail;
        }
        c->batch_interval = cfg->client.batch_interval_s;
        add_batch(c);
    } else {
        c->n_ph = cfg->client.n_stages;
        c->ph = sim_xcalloc(c->n_ph, sizeof *c->ph);
        double nominal = 0;
        for (size_t k = 0; k < c->n_ph; k++) {
            const wl_stage *s = &cfg->client.stages[k];
            phase *p = &c->ph[k];
            *p = (phase){.duration = s->duration_s, .nominal_start = nominal, .start = NAN,
                         .barrier = cfg->client.barrier};
            if (s->rate > 0) {
                p->kind = PH_RATE;
                p->rate = s->rate * load * to_conv;
                p->load = s->rate * load;
            } else {
                const double n = floor((double)s->concurrency * load + 0.5);
                if (!(n >= 1)) {
                    rc = SIM_ERROR(SIM_EINVAL, "%s: workload.client.stages[%zu] concurrency "
                                   "%lld times load %g is below 1 client; expected a "
                                   "concurrency x load >= 1", where, k,
                                   (long long)s->concurrency, load);
                    goto fail;
                }
                p->kind = PH_CONC;
                p->n = (uint32_t)n;
                p->load = n;
                p->is_conc = true;
            }
            nominal += s->duration_s;
        }
        c->ph[c->n_ph - 1].barrier = false; /* nothing follows the last */
    }
    c->cap_ph = c->n_ph;
    c->n_pfx = c->shared_prefix ? (size_t)cfg->shared_prefix.groups : c->kr.n;
    c->pfx = sim_xcalloc(c->n_pfx ? c->n_pfx : 1, sizeof *c->pfx);
    *out = c;
    return SIM_OK;
fail:
    wl_client_destroy(c);
    return rc;
}

const wl_client_rec *wl_client_records(const wl_client *c, uint64_t *n)
{
    *n = c->n_rec;
    return c->rec;
}

const wl_client_stage *wl_client_stages(wl_client *c, size_t *n)
{
    wl_client *m = c;
    size_t k = c->mode == WL_CLIENT_BURST ? (c->started ? c->cur + 1 : 0) : c->n_ph;
    free(m->stage_out);
    m->stage_out = sim_xcalloc(k ? k : 1, sizeof *m->stage_out);
    for (size_t i = 0; i < k; i++) {
        const phase *p = &c->ph[i];
        const bool ran = i <= c->cur && c->started;
        m->stage_out[i] = (wl_client_stage){
            .load = p->load, .is_concurrency = p->is_conc, .nominal_start_s = p->nominal_start,
            .start_s = ran ? p->start : NAN,
            .end_s = ran ? (isinf(p->send_end) ? c->now : p->send_end) : NAN};
    }
    *n = k;
    return m->stage_out;
}

wl_client_stats wl_client_get_stats(const wl_client *c) { return c->st; }

double wl_client_estimate_requests(const wl_config *cfg, double load)
{
    const enum wl_client_mode m = wl_client_mode_of(cfg);
    const double d = cfg->duration_s > 0 ? cfg->duration_s : INFINITY;
    const double mr = cfg->max_requests > 0 ? (double)cfg->max_requests : INFINITY;
    double n;
    if (m == WL_CLIENT_STAGES) {
        n = 0;
        for (size_t k = 0; k < cfg->client.n_stages; k++) {
            const wl_stage *s = &cfg->client.stages[k];
            n += s->rate > 0 ? s->rate * load * s->duration_s
                             : (double)s->concurrency * load * s->duration_s * 10;
        }
    } else if (m == WL_CLIENT_CONCURRENCY) {
        const double nc = cfg->client.concurrency ? (double)cfg->client.concurrency : load;
        n = nc * d * 10;
    } else if (m == WL_CLIENT_BURST) {
        const double b = cfg->client.batch ? (double)cfg->client.batch : load;
        n = b * d;
    } else {
        n = load * d;
    }
    return n < mr ? n : mr;
}
