/*
 * Event queue tests: tie order (same time fires in insertion order),
 * time order against a sorted reference, cancel by handle, time monotone,
 * and that scheduling into the past aborts (checked in a child process);
 * the lazy pop (the popped event left at the root until the next
 * operation) against a linear-scan reference under random interleavings
 * of pop, re-schedule, schedule, cancel, peek, size and release.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/core/evq.h"
#include "check.h"

static void test_tie_order(void)
{
    sim_evq *q = sim_evq_create();
    sim_event *e[10];
    /* Ten events at t = 1.0, scheduled in order 0..9, interleaved with
     * events at other times; the ties must come out 0..9. */
    for (uint32_t i = 0; i < 10; i++) {
        e[i] = sim_evq_alloc(q);
        e[i]->target = i;
        sim_event *other = sim_evq_alloc(q);
        other->target = 100 + i;
        sim_evq_schedule(q, other, i % 2 ? 0.5 : 2.0);
        sim_evq_schedule(q, e[i], 1.0);
    }
    uint32_t expect_next = 0;
    sim_event *x;
    double last = 0;
    while ((x = sim_evq_pop(q))) {
        CHECK(x->time >= last);
        last = x->time;
        if (x->time == 1.0) {
            CHECK_INT_EQ(x->target, expect_next);
            expect_next++;
        }
        sim_evq_release(q, x);
    }
    CHECK_INT_EQ(expect_next, 10);
    sim_evq_destroy(q);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_random_order_and_cancel(void)
{
    sim_evq *q = sim_evq_create();
    enum { N = 5000 };
    sim_event *ev[N];
    double times[N];
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        times[i] = (double)(s >> 40) / 1000.0;
        ev[i] = sim_evq_alloc(q);
        ev[i]->target = (uint32_t)i;
        sim_evq_schedule(q, ev[i], times[i]);
    }
    /* Cancel every third event; cancelling twice is a no-op. */
    double kept[N];
    int nk = 0;
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) {
            sim_evq_cancel(q, ev[i]);
            sim_evq_cancel(q, ev[i]);
            CHECK_INT_EQ(ev[i]->heap_idx, SIM_EVQ_IDLE);
        } else {
            kept[nk++] = times[i];
        }
    }
    CHECK_INT_EQ(sim_evq_size(q), nk);
    qsort(kept, (size_t)nk, sizeof kept[0], cmp_double);
    for (int i = 0; i < nk; i++) {
        sim_event *x = sim_evq_pop(q);
        CHECK(x != NULL);
        CHECK(x->time == kept[i]);
        CHECK(sim_evq_now(q) == kept[i]);
        CHECK(x->target % 3 != 0);
    }
    CHECK(sim_evq_pop(q) == NULL);
    CHECK_INT_EQ(sim_evq_popped(q), nk);
    /* A cancelled event can be rescheduled. */
    sim_evq_schedule(q, ev[0], sim_evq_now(q) + 1.0);
    CHECK(sim_evq_pop(q) == ev[0]);
    sim_evq_destroy(q);
}

/* Reference: the scheduled events with their (time, seq) keys, minimum by
 * linear scan; the queue must pop, peek and count exactly as it does. */
typedef struct ref_ev {
    sim_event *e;
    double t;
    uint64_t seq;
    int on;
} ref_ev;

static int ref_min(const ref_ev *r, int n)
{
    int m = -1;
    for (int i = 0; i < n; i++)
        if (r[i].on && (m < 0 || r[i].t < r[m].t || (r[i].t == r[m].t && r[i].seq < r[m].seq)))
            m = i;
    return m;
}

static void test_lazy_pop_against_reference(void)
{
    enum { N = 64, OPS = 200000 };
    sim_evq *q = sim_evq_create();
    ref_ev r[N];
    uint64_t seq = 0, s = 99;
    int on = 0;
    for (int i = 0; i < N; i++) {
        r[i] = (ref_ev){.e = sim_evq_alloc(q)};
        r[i].e->target = (uint32_t)i;
    }
    for (int op = 0; op < OPS; op++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const uint32_t x = (uint32_t)(s >> 33);
        const int i = (int)(x % N);
        /* Coarse times (multiples of 1/8) so that ties are frequent. */
        const double t = sim_evq_now(q) + (double)((x >> 8) % 16) / 8.0;
        switch ((x >> 16) % 6) {
        case 0:
        case 1: { /* pop, and most often schedule the popped event again */
            const int m = ref_min(r, N);
            sim_event *e = sim_evq_pop(q);
            if (m < 0) {
                CHECK(e == NULL);
                break;
            }
            CHECK(e == r[m].e);
            CHECK(sim_evq_now(q) == r[m].t);
            r[m].on = 0;
            on--;
            if ((x >> 20) % 4) {
                sim_evq_schedule(q, e, sim_evq_now(q) + (double)((x >> 24) % 16) / 8.0);
                r[m] = (ref_ev){.e = e, .t = e->time, .seq = seq++, .on = 1};
                on++;
            }
            break;
        }
        case 2:
            if (!r[i].on) {
                sim_evq_schedule(q, r[i].e, t);
                r[i].t = t;
                r[i].seq = seq++;
                r[i].on = 1;
                on++;
            }
            break;
        case 3:
            sim_evq_cancel(q, r[i].e);
            on -= r[i].on;
            r[i].on = 0;
            CHECK_INT_EQ(r[i].e->heap_idx, SIM_EVQ_IDLE);
            break;
        case 4: {
            const int m = ref_min(r, N);
            CHECK(sim_evq_peek(q) == (m < 0 ? NULL : r[m].e));
            break;
        }
        default: /* release an unscheduled event (maybe the stale root) and take a new one */
            if (!r[i].on) {
                sim_evq_release(q, r[i].e);
                r[i].e = sim_evq_alloc(q);
                r[i].e->target = (uint32_t)i;
            }
            break;
        }
        CHECK_INT_EQ(sim_evq_size(q), on);
    }
    sim_evq_destroy(q);
}

static void test_past_aborts(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* Child: silence the expected abort message. */
        freopen("/dev/null", "w", stderr);
        sim_evq *q = sim_evq_create();
        sim_event *a = sim_evq_alloc(q);
        sim_evq_schedule(q, a, 5.0);
        sim_evq_pop(q);
        sim_event *b = sim_evq_alloc(q);
        sim_evq_schedule(q, b, 4.0); /* in the past: must abort */
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK_INT_EQ(WTERMSIG(status), SIGABRT);
}

int main(void)
{
    test_tie_order();
    test_random_order_and_cancel();
    test_lazy_pop_against_reference();
    test_past_aborts();
    puts("evq: ok");
    return 0;
}
