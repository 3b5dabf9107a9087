/*
 * A small worker pool: N threads pulling tasks through callbacks under one
 * mutex, shared by the sweep runner (sim/exp/exp.c) and the calibration
 * (sim/exp/calib.c).  The pool owns only the threads, the mutex, a
 * condition variable and the count of running tasks; which task runs next
 * (run-index order, pruning, aborting) is the caller's policy, decided in
 * its `take` callback, and the caller's other threads may wait on the same
 * mutex and condition (exp_pool_lock / exp_pool_wait) for tasks to finish.
 *
 * Protocol of a worker (the thread body, and exp_pool_work):
 *   lock; loop { t = take(ctx, &finished) -- under the lock;
 *                finished: stop.  NULL: wait for a change (stop if no task
 *                is running, since nothing could change then);
 *                else unlock; run(ctx, t); lock; done(ctx, t) }
 * and the pool broadcasts the condition after every take and done, so a
 * waiter sees every state change the callbacks make.
 */
#ifndef CRSIM_EXP_POOL_H
#define CRSIM_EXP_POOL_H

#include <pthread.h>

typedef struct exp_pool_ops {
    /* Under the lock: the next task to run, or NULL with *finished = 0
     * to wait, or NULL with *finished = 1 when the worker should stop. */
    void *(*take)(void *ctx, int *finished);
    /* Without the lock: run the task. */
    void (*run)(void *ctx, void *task);
    /* Under the lock, after run: record that the task is finished (may be
     * NULL). */
    void (*done)(void *ctx, void *task);
} exp_pool_ops;

/* Caller-provided storage; fields are private to pool.c. */
typedef struct exp_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *th;
    unsigned n_th;
    unsigned in_flight; /* tasks between take and done */
    const exp_pool_ops *ops;
    void *ctx;
} exp_pool;

/* Initialise *p and start up to `n_threads` workers (0 starts none: the
 * caller then works with exp_pool_work).  `ops` and `ctx` must outlive
 * exp_pool_join.  Returns the number of threads started (fewer than asked
 * when the system refuses more; aborts if out of memory). */
unsigned exp_pool_start(exp_pool *p, unsigned n_threads, const exp_pool_ops *ops, void *ctx);

/* Work in the calling thread, as one more worker, until `take` says
 * finished (or nothing is left to wait for).  Cannot fail. */
void exp_pool_work(exp_pool *p);

/* Wait for every worker thread to stop, then free the threads, the mutex
 * and the condition.  Call once after exp_pool_start.  Cannot fail. */
void exp_pool_join(exp_pool *p);

/* The pool's mutex and condition, for the caller's own waits on the tasks'
 * state (which the callbacks change under the same mutex). */
void exp_pool_lock(exp_pool *p);
void exp_pool_unlock(exp_pool *p);
/* Under the lock: wait for the next take, done or exp_pool_broadcast. */
void exp_pool_wait(exp_pool *p);
/* Under the lock: wake every waiter (after changing shared state). */
void exp_pool_broadcast(exp_pool *p);

#endif
