/*
 * The synthetic business-key generator (see synth.h).  State per key is its
 * prefix length and content id plus `session.per_key` conversation slots;
 * a slot remembers only the lengths of its earlier turns, and every
 * request's block hashes are recomputed from the segment list, so memory is
 * O(keys × slots × turns) rather than O(blocks of history).
 */
#include "workloads/synth.h"

#include "workloads/servegen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "workloads/blockhash.h"

#include "sim/core/error.h"
#include "sim/core/prefetch.h"
#include "sim/core/rng.h"
#include "workloads/arrivals.h"
#include "workloads/ingest.h"
#include "workloads/internal.h"

/* Tags mixed into segment ids so that the content of different segment
 * kinds can never coincide ("glob", "pref", "sess" in ASCII). */
#define TAG_GLOBAL 0x676c6f62ULL
#define TAG_PREFIX 0x70726566ULL
#define TAG_SESSION 0x73657373ULL

typedef struct lendist {
    enum wl_lendist kind;
    double mean, a, b; /* lognormal: μ, σ; gamma: shape, scale */
    uint32_t min, max;
} lendist;

typedef struct slot {
    uint64_t sess;     /* hashed conversation id */
    uint32_t turn;     /* turns done */
    uint32_t turns;    /* turns planned; 0 = slot idle */
    uint32_t hist;     /* history tokens (Σ earlier inputs and outputs) */
    uint32_t *seg_len; /* 2·turn lengths: in_1, out_1, in_2, ... */
    uint32_t seg_cap;
    /* Block hashes of the slot's last request (hb->h, hn of them): the
     * next turn of the same conversation starts with exactly those blocks,
     * and a new conversation of the same key with its first fixed/B of
     * them (the global and key prefix), so they are not rehashed.  The
     * buffer is shared with the slot's requests (WL_BLOCKS_COUNTED): a
     * turn appends in place after hn, which no holder reads past. */
    wl__hbuf *hb;
    uint32_t hn;
    uint32_t listed;   /* in wl_synth.used (started at least once) */
} slot;

typedef struct seg {
    uint64_t id;
    uint32_t len;
} seg;

/* Key draws made ahead (KEY_AHEAD requests), so that the conversation
 * slots of the next requests can be fetched into the cache while the
 * simulator works on this one: with thousands of active keys a slot, its
 * hash buffer and its segment lengths are cold lines (docs/performance.md,
 * round 11).  r_key feeds nothing but these draws, so drawing early
 * changes no value as long as the alias table is the one the draw would
 * have used: each draw keeps the drift epoch it was made in and r_key's
 * state before it, and a request that finds the epoch moved (a drift step
 * rebuilt the table) rewinds r_key to that state and draws afresh. */
#define KEY_AHEAD 2
typedef struct key_draw {
    size_t k;          /* key index in kr */
    uint32_t j;        /* conversation slot of the key */
    uint64_t epoch;    /* s->epoch when drawn */
    sim_pcg32 before;  /* r_key's state before this draw */
} key_draw;

struct wl_synth {
    wl_keyrates kr;      /* rates in requests/s (current, after drift) */
    uint32_t *prefix_len;/* per key (index in kr) */
    uint64_t *prefix_id; /* per key */
    wl__hpool *pool;     /* released conversation hash buffers, for reuse */
    slot *slots;         /* kr.n × per_key (calloc: pages of slots never
                            used are never touched) */
    size_t *used;        /* indexes of the slots ever started, so that
                            destroy frees them without reading all kr.n ×
                            per_key slots (10^7 keys: 2.2 GB of slots) */
    size_t n_used, cap_used;
    uint32_t per_key;
    gsl_ran_discrete_t *table;
    gsl_rng *r_arr, *r_key, *r_len, *r_drift;
    wl_arrivals *arr;
    const wl_iat_series *series; /* bootstrap: the process's shared copy of the
                                    recorded gaps (wl_ingest_iat), or NULL */
    lendist turns, input, output;
    uint32_t block, global_tokens, max_prompt;
    uint64_t global_id, sess_base, sess_counter;
    double t, duration_s;
    uint64_t next_id, max_requests;
    double drift_sigma, drift_interval, next_epoch_t;
    uint64_t epoch, drift_steps;
    double theta;
    seg *segs;
    size_t segs_cap;
    key_draw ahead[KEY_AHEAD]; /* drawn ahead, oldest first */
    uint32_t n_ahead;
};

static lendist make_len(const wl_lenspec *l)
{
    lendist d = {.mean = l->mean, .min = (uint32_t)l->min, .max = (uint32_t)l->max};
    /* The schema admits only wl_lendist_names; anything else is gamma, as
     * before the names had an enum. */
    const int k = wl__name_index(wl_lendist_names, l->dist);
    if (k == WL_LEN_CONST || l->cv == 0) {
        d.kind = k == WL_LEN_UNIFORM ? WL_LEN_UNIFORM : WL_LEN_CONST;
    } else if (k == WL_LEN_UNIFORM) {
        d.kind = WL_LEN_UNIFORM;
    } else if (k == WL_LEN_LOGNORMAL) {
        d.kind = WL_LEN_LOGNORMAL;
        double s2 = log1p(l->cv * l->cv);
        d.b = sqrt(s2);
        d.a = log(l->mean) - s2 / 2;
    } else {
        d.kind = WL_LEN_GAMMA;
        d.a = 1.0 / (l->cv * l->cv);
        d.b = l->mean * l->cv * l->cv;
    }
    return d;
}

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

int wl_synth_keys(const wl_config *cfg, wl_keyrates *out, double *theta)
{
    *out = (wl_keyrates){0};
    enum wl_keydist fam;
    int rc = wl_keydist_parse(cfg->keys.distribution, &fam);
    if (rc)
        return rc;
    double th = NAN;
    size_t n = (size_t)cfg->keys.n;
    if (fam == WL_KEYS_FILE || fam == WL_KEYS_SERVEGEN) {
        if (fam == WL_KEYS_FILE) {
            if ((rc = wl_keyrates_load_csv(cfg->keys.file, out)))
                return rc;
        } else {
            wl_servegen sg;
            if ((rc = wl_servegen_load(cfg->keys.file, 0, &sg)))
                return rc;
            rc = wl_servegen_keyrates(&sg, (size_t)-1, out, NULL);
            wl_servegen_fini(&sg);
            if (rc)
                return rc;
        }
        if (cfg->keys.cap > 0 && (rc = wl_keyrates_cap(out, cfg->keys.cap))) {
            wl_keyrates_fini(out);
            return rc;
        }
    } else {
        th = fam == WL_KEYS_LOGNORMAL ? cfg->keys.sigma : cfg->keys.zipf_s;
        if (cfg->keys.fit_gini > 0 &&
            (rc = wl_keyrates_fit_gini(fam, n, cfg->keys.fit_gini, cfg->keys.cap,
                                       cfg->keys.zipf_q, cfg->seed, &th)))
            return rc;
        rc = fam == WL_KEYS_LOGNORMAL
                 ? wl_keyrates_lognormal(n, th, cfg->keys.cap, cfg->seed, out)
                 : wl_keyrates_zipf(n, th, cfg->keys.zipf_q, cfg->keys.cap, out);
        if (rc)
            return rc;
    }
    wl_keyrates_active(out, (size_t)cfg->keys.active_set);
    if ((rc = wl_keyrates_add_whales(out, cfg->keys.whales, cfg->keys.n_whales))) {
        wl_keyrates_fini(out);
        return rc;
    }
    wl_keyrates_scale(out, 1.0);
    if (theta)
        *theta = th;
    return SIM_OK;
}

void wl_drift_step(double *rate, size_t n, double sigma, gsl_rng *r)
{
    double before = 0, after = 0;
    for (size_t i = 0; i < n; i++) {
        before += rate[i];
        rate[i] *= exp(sigma * gsl_ran_gaussian(r, 1.0));
        after += rate[i];
    }
    if (after > 0 && isfinite(after))
        for (size_t i = 0; i < n; i++)
            rate[i] *= before / after;
}

void wl_synth_destroy(wl_synth *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_used; i++) {
        free(s->slots[s->used[i]].seg_len);
        wl__hbuf_release(s->slots[s->used[i]].hb);
    }
    wl__hpool_close(s->pool);
    free(s->used);
    free(s->slots);
    free(s->prefix_len);
    free(s->prefix_id);
    if (s->table)
        gsl_ran_discrete_free(s->table);
    sim_rng_destroy(s->r_arr);
    sim_rng_destroy(s->r_key);
    sim_rng_destroy(s->r_len);
    sim_rng_destroy(s->r_drift);
    wl_arrivals_destroy(s->arr);
    wl_ingest_iat_release(s->series);
    wl_keyrates_fini(&s->kr);
    free(s->segs);
    free(s);
}

int wl_synth_create(const wl_config *cfg, uint64_t run_seed, double rate, uint32_t block_size,
                    wl_synth **out)
{
    return wl_synth_create_keys(cfg, NULL, NAN, run_seed, rate, block_size, out);
}

int wl_synth_create_keys(const wl_config *cfg, const wl_keyrates *keys, double theta,
                         uint64_t run_seed, double rate, uint32_t block_size, wl_synth **out)
{
    *out = NULL;
    if (strcmp(cfg->type, "synthetic") != 0)
        return SIM_ERROR(SIM_EINVAL, "workload.type is '%s'; expected synthetic for the "
                         "synthetic generator", cfg->type);
    int rc = wl_config_check(cfg, cfg->name && *cfg->name ? cfg->name : "workload");
    if (rc)
        return rc;
    if (!(rate > 0) || !isfinite(rate))
        return SIM_ERROR(SIM_EINVAL, "request rate %g; expected a finite rate > 0 (requests/s)",
                         rate);
    if (block_size == 0)
        return SIM_ERROR(SIM_EINVAL, "engine.block_size 0; expected at least 1 token");
    enum wl_arrival_kind ak;
    if ((rc = wl_arrival_kind_parse(cfg->arrival.process, &ak)))
        return rc;
    wl_synth *s = calloc(1, sizeof *s);
    if (!s)
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating the synthetic workload");
    if (keys) {
        if ((rc = wl_keyrates_copy(keys, &s->kr)))
            goto fail;
        s->theta = theta;
    } else if ((rc = wl_synth_keys(cfg, &s->kr, &s->theta))) {
        goto fail;
    }
    wl_keyrates_scale(&s->kr, rate);
    const size_t n = s->kr.n;
    s->per_key = (uint32_t)cfg->sessions_per_key;
    s->prefix_len = malloc(n * sizeof *s->prefix_len);
    s->prefix_id = malloc(n * sizeof *s->prefix_id);
    s->slots = calloc(n * s->per_key, sizeof *s->slots);
    s->pool = wl__hpool_create();
    s->r_arr = sim_rng_create(run_seed, SIM_STREAM_ARRIVALS);
    s->r_key = sim_rng_create(run_seed, SIM_STREAM_KEYS);
    s->r_len = sim_rng_create(run_seed, SIM_STREAM_LENGTHS);
    s->r_drift = sim_rng_create(run_seed, SIM_STREAM_DRIFT);
    if (!s->prefix_len || !s->prefix_id || !s->slots || !s->pool || !s->r_arr || !s->r_key || !s->r_len ||
        !s->r_drift) {
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating the synthetic workload");
        goto fail;
    }
    /* Each key's prefix length depends only on (workload seed, key id), so
     * it is the same whatever the active set, the whales or the run seed:
     * one generator, reseeded per key on a substream of the workload seed. */
    {
        lendist pd = make_len(&cfg->prefix);
        gsl_rng *pr = sim_rng_create(0, 0);
        if (!pr) {
            rc = SIM_ERROR(SIM_ENOMEM, "out of memory creating the synthetic workload");
            goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t id = s->kr.id[i];
            sim_pcg32_seed(sim_rng_pcg(pr), wl_block_hash(cfg->seed, id),
                           sim_rng_substream(SIM_STREAM_LENGTHS, 1));
            s->prefix_len[i] = draw_len(&pd, pr);
            s->prefix_id[i] = wl_block_hash(wl_block_hash(TAG_PREFIX, cfg->seed), id);
        }
        sim_rng_destroy(pr);
    }
    s->table = gsl_ran_discrete_preproc(n, s->kr.rate);
    if (!s->table) {
        rc = SIM_ERROR(SIM_ENOMEM, "out of memory building the key alias table");
        goto fail;
    }
    if (ak == WL_ARRIVAL_BOOTSTRAP &&
        (rc = wl_ingest_iat(cfg->arrival.iat_file, cfg->arrival.iat_column,
                            cfg->arrival.iat_is_gaps, &s->series)))
        goto fail;
    wl_arrival_params ap = {.kind = ak, .rate = rate, .cv = cfg->arrival.cv,
                            .series = s->series, .block_len = (size_t)cfg->arrival.block_len};
    if ((rc = wl_arrivals_create(&ap, s->r_arr, &s->arr)))
        goto fail;
    s->turns = make_len(&cfg->turns);
    s->input = make_len(&cfg->input);
    s->output = make_len(&cfg->output);
    s->block = block_size;
    s->global_tokens = (uint32_t)cfg->global_prefix_tokens;
    s->max_prompt = (uint32_t)cfg->max_prompt_tokens;
    s->global_id = wl_block_hash(TAG_GLOBAL, cfg->seed);
    s->sess_base = wl_block_hash(wl_block_hash(TAG_SESSION, cfg->seed), run_seed);
    s->duration_s = cfg->duration_s;
    s->max_requests = (uint64_t)cfg->max_requests;
    s->drift_sigma = cfg->drift.sigma;
    s->drift_interval = cfg->drift.interval_s;
    s->drift_steps = (uint64_t)cfg->drift.intervals;
    s->next_epoch_t = s->drift_sigma > 0 ? s->drift_interval : INFINITY;
    *out = s;
    return SIM_OK;
fail:
    wl_synth_destroy(s);
    return rc;
}

/* Apply the drift steps of every interval boundary up to time t. */
static void drift_to(wl_synth *s, double t)
{
    int stepped = 0;
    while (t >= s->next_epoch_t) {
        wl_drift_step(s->kr.rate, s->kr.n, s->drift_sigma, s->r_drift);
        s->epoch++;
        stepped = 1;
        s->next_epoch_t = (s->drift_steps && s->epoch >= s->drift_steps)
                              ? INFINITY
                              : (double)(s->epoch + 1) * s->drift_interval;
    }
    if (stepped) {
        gsl_ran_discrete_t *nt = gsl_ran_discrete_preproc(s->kr.n, s->kr.rate);
        SIM_ALWAYS(nt != NULL); /* positive finite weights: only OOM can fail */
        gsl_ran_discrete_free(s->table);
        s->table = nt;
    }
}

static void push_seg(wl_synth *s, size_t *ns, uint64_t id, uint32_t len)
{
    if (len == 0)
        return;
    if (*ns == s->segs_cap) {
        s->segs_cap = s->segs_cap ? 2 * s->segs_cap : 64;
        s->segs = sim_xrealloc(s->segs, s->segs_cap * sizeof *s->segs);
    }
    s->segs[(*ns)++] = (seg){id, len};
}

static void slot_start(wl_synth *s, slot *sl)
{
    if (!sl->listed) {
        if (s->n_used == s->cap_used) {
            s->cap_used = s->cap_used ? 2 * s->cap_used : 256;
            s->used = sim_xrealloc(s->used, s->cap_used * sizeof *s->used);
        }
        s->used[s->n_used++] = (size_t)(sl - s->slots);
        sl->listed = 1;
    }
    sl->sess = wl_block_hash(s->sess_base, s->sess_counter++);
    sl->turn = 0;
    sl->turns = draw_len(&s->turns, s->r_len);
    sl->hist = 0;
}

/* The next arrival time into *t and s->t (the end rule: 0 at the end,
 * nothing drawn past it): the start of wl_synth_next and all of
 * wl_synth_next_arrival. */
static int next_arrival(wl_synth *s, double *t)
{
    if (s->max_requests && s->next_id >= s->max_requests)
        return 0;
    *t = s->t + wl_arrivals_next(s->arr);
    if (s->duration_s > 0 && *t > s->duration_s)
        return 0;
    s->t = *t;
    return 1;
}

static key_draw draw_key(wl_synth *s)
{
    key_draw d = {.epoch = s->epoch, .before = *sim_rng_pcg(s->r_key)};
    d.k = gsl_ran_discrete(s->r_key, s->table);
    d.j = s->per_key > 1 ? sim_pcg32_bounded(sim_rng_pcg(s->r_key), s->per_key) : 0;
    return d;
}

/* The key and slot of this request: the oldest draw made ahead if the
 * table has not changed since, else a fresh draw (r_key rewound to before
 * the draws made ahead, which are dropped). */
static key_draw take_key(wl_synth *s)
{
    if (s->n_ahead) {
        const key_draw d = s->ahead[0];
        if (d.epoch == s->epoch) {
            for (uint32_t i = 1; i < s->n_ahead; i++)
                s->ahead[i - 1] = s->ahead[i];
            s->n_ahead--;
            return d;
        }
        *sim_rng_pcg(s->r_key) = d.before;
        s->n_ahead = 0;
    }
    return draw_key(s);
}

/* Draw the keys of the next KEY_AHEAD requests and start loading what
 * they will read: the newest draw's slot, and for the next request (whose
 * slot line was asked for one call ago) its hash buffer's header and last
 * block, its segment lengths and its key's prefix.  Hints only. */
static void draw_ahead(wl_synth *s)
{
    while (s->n_ahead < KEY_AHEAD) {
        const key_draw d = draw_key(s);
        s->ahead[s->n_ahead++] = d;
        const slot *sl = &s->slots[d.k * s->per_key + d.j];
        SIM_PREFETCH_W(sl);
        SIM_PREFETCH_W((const char *)(sl + 1) - 1);
        SIM_PREFETCH(&s->prefix_len[d.k]);
        SIM_PREFETCH(&s->prefix_id[d.k]);
    }
    const key_draw *d = &s->ahead[0];
    const slot *sl = &s->slots[d->k * s->per_key + d->j];
    if (sl->turns && sl->seg_len)
        SIM_PREFETCH(sl->seg_len);
    if (sl->hb) {
        /* The last reused block (wl_synth_next's `reuse`): all of the
         * previous turn's, or of a new conversation only the global and
         * key prefix. */
        uint64_t reuse = sl->hn;
        if (sl->turns == 0 || sl->turn == 0) {
            const uint64_t fixed_blocks =
                ((uint64_t)s->global_tokens + s->prefix_len[d->k]) / s->block;
            if (reuse > fixed_blocks)
                reuse = fixed_blocks;
        }
        SIM_PREFETCH_W(sl->hb);
        if (reuse)
            SIM_PREFETCH(&sl->hb->h[reuse - 1]);
    }
}

int wl_synth_next(wl_synth *s, wl_request *out)
{
    double t;
    if (!next_arrival(s, &t))
        return 0;
    drift_to(s, t);
    const key_draw kd = take_key(s);
    const size_t k = kd.k;
    slot *sl = &s->slots[k * s->per_key + kd.j];
    if (sl->turns == 0)
        slot_start(s, sl);
    uint32_t in = draw_len(&s->input, s->r_len);
    uint32_t outl = draw_len(&s->output, s->r_len);
    const uint64_t fixed = (uint64_t)s->global_tokens + s->prefix_len[k];
    if (sl->turn > 0 && fixed + sl->hist + in > s->max_prompt) {
        /* The conversation would outgrow the context: it ends here and this
         * request opens a new one (turn count drawn afresh). */
        sl->turns = 0;
        slot_start(s, sl);
    }
    if (fixed + in > s->max_prompt && fixed < s->max_prompt)
        in = (uint32_t)(s->max_prompt - fixed);
    /* Segment list: global, key prefix, history, new input. */
    size_t ns = 0;
    push_seg(s, &ns, s->global_id, s->global_tokens);
    push_seg(s, &ns, s->prefix_id[k], s->prefix_len[k]);
    for (uint32_t i = 0; i < 2 * sl->turn; i++)
        push_seg(s, &ns, wl_block_hash(sl->sess, i), sl->seg_len[i]);
    push_seg(s, &ns, wl_block_hash(sl->sess, 2 * sl->turn), in);
    /* The output is known too (it is this conversation's next history
     * segment), so its full blocks get hashes: the engine registers them
     * as their KV is computed, and the next turn can hit them. */
    push_seg(s, &ns, wl_block_hash(sl->sess, 2 * sl->turn + 1), outl);
    const uint64_t prompt = fixed + sl->hist + in;
    SIM_ALWAYS(prompt + outl <= UINT32_MAX);
    /* Blocks: the content id of a block is the XXH3 chain of the
     * (segment id, offset, length) pieces it covers, so a block's content
     * is a function of exactly its tokens; its hash chains the parent's.
     * The leading blocks this request shares with the slot's previous one
     * (same conversation: all of that request's full blocks; new
     * conversation: those inside the global and key prefix) have the same
     * tokens, hence the same hashes: they are copied from the slot's cache
     * and hashing resumes after them (identical values, less work). */
    const uint32_t B = s->block;
    const uint32_t nb = (uint32_t)((prompt + outl) / B); /* prompt and output */
    uint32_t reuse = sl->hn;
    if (sl->turn == 0 && reuse > fixed / B)
        reuse = (uint32_t)(fixed / B);
    if (reuse > nb)
        reuse = nb;
    /* Write in place when the buffer is large enough and nobody else reads
     * what is overwritten: every other holder reads only its own leading
     * blocks, at most hn, so either reuse == hn (the next turn) or the slot
     * is the only holder.  Otherwise a new buffer (the pool's size class
     * of this request's blocks, at most 25 % larger, workloads/request.c;
     * from the pool of released ones) with the reused blocks copied, once per conversation
     * or per outgrown class.  Until round 12 it was the class of twice the
     * blocks, room for turns to come that most conversations (single-turn
     * on the flagship: ~78 %) never have: at R = 1000 the buffers were a
     * third of the run's memory, and sizing them to the request took the
     * peak RSS from 486 to 410 MB at no cost in time (docs/performance.md,
     * round 12).  A run too large for memory ends with SIM_ENOMEM (the
     * experiment marked incomplete), not an abort. */
    wl__hbuf *hb = sl->hb;
    if (!hb || hb->cap < nb || (reuse != sl->hn && hb->refs > 1)) {
        wl__hbuf *nh = wl__hpool_get(s->pool, nb);
        if (!nh)
            return -SIM_ERROR(SIM_ENOMEM, "out of memory for the %u blocks of a request; expected "
                              "a smaller run (docs/harness.md, \"Size estimate\")", nb);
        if (reuse)
            memcpy(nh->h, hb->h, reuse * sizeof nh->h[0]);
        wl__hbuf_release(hb);
        sl->hb = hb = nh;
    }
    uint64_t *h = hb->h;
    uint64_t parent = reuse ? h[reuse - 1] : 0;
    size_t si = 0;
    uint32_t off = 0;
    for (uint64_t pos = reuse < nb ? (uint64_t)reuse * B : 0; pos;) {
        /* Segment and offset of token `reuse·B`, as the loop below would
         * have left them after block reuse − 1. */
        if (pos < s->segs[si].len) {
            off = (uint32_t)pos;
            break;
        }
        pos -= s->segs[si].len;
        si++;
    }
    for (uint32_t b = reuse; b < nb; b++) {
        uint64_t c = 0;
        uint32_t need = B;
        const uint64_t sl_len = s->segs[si].len;
        if (off + (uint64_t)B < sl_len) {
            /* The common case, the block inside one segment and not at its
             * end: the loop below with one piece, without its bookkeeping. */
            const uint64_t piece[3] = {s->segs[si].id, off, B};
            c = XXH3_64bits_withSeed(piece, sizeof piece, 0);
            off += B;
            need = 0;
        }
        while (need) {
            uint32_t avail = s->segs[si].len - off;
            uint32_t take = avail < need ? avail : need;
            const uint64_t piece[3] = {s->segs[si].id, off, take};
            c = XXH3_64bits_withSeed(piece, sizeof piece, c);
            off += take;
            need -= take;
            if (off == s->segs[si].len) {
                si++;
                off = 0;
            }
        }
        parent = h[b] = wl__block_hash(parent, c);
    }
    sl->hn = nb;
    hb->refs++; /* the request's reference */
    *out = (wl_request){
        .id = s->next_id++,
        .arrival_s = t,
        .key = s->kr.id[k],
        .prompt_tokens = (uint32_t)prompt,
        .output_tokens = outl,
        .n_blocks = nb,
        .blocks = h,
        .blocks_mode = WL_BLOCKS_COUNTED,
    };
    /* The turn's input and output join the history. */
    if (sl->turn + 1 >= sl->turns) {
        sl->turns = 0; /* conversation over; the slot reopens on next use */
    } else {
        if (2 * sl->turn + 2 > sl->seg_cap) {
            sl->seg_cap = sl->seg_cap ? 2 * sl->seg_cap : 8;
            sl->seg_len = sim_xrealloc(sl->seg_len, sl->seg_cap * sizeof *sl->seg_len);
        }
        sl->seg_len[2 * sl->turn] = in;
        sl->seg_len[2 * sl->turn + 1] = outl;
        sl->hist += in + outl;
        sl->turn++;
    }
    draw_ahead(s);
    return 1;
}

int wl_synth_next_arrival(wl_synth *s, double *arrival_s)
{
    /* wl_synth_next's arrival time and end rule, nothing else drawn. */
    double t;
    if (!next_arrival(s, &t))
        return 0;
    s->next_id++;
    *arrival_s = t;
    return 1;
}

static int source_next(void *state, wl_request *out) { return wl_synth_next(state, out); }

wl_source wl_synth_source(wl_synth *s) { return (wl_source){.state = s, .next = source_next}; }

const wl_keyrates *wl_synth_rates(const wl_synth *s) { return &s->kr; }

uint64_t wl_synth_epoch(const wl_synth *s) { return s->epoch; }

double wl_synth_theta(const wl_synth *s) { return s->theta; }
