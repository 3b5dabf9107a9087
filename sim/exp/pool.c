/*
 * Worker pool; see pool.h.
 */
#include "sim/exp/pool.h"

#include <stdlib.h>

#include "sim/core/error.h"

static void work_locked(exp_pool *p)
{
    for (;;) {
        int finished = 0;
        void *t = p->ops->take(p->ctx, &finished);
        pthread_cond_broadcast(&p->cv);
        if (finished)
            break;
        if (!t) {
            if (p->in_flight == 0)
                break; /* nothing running could unblock the rest */
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        p->in_flight++;
        pthread_mutex_unlock(&p->mu);
        p->ops->run(p->ctx, t);
        pthread_mutex_lock(&p->mu);
        p->in_flight--;
        if (p->ops->done)
            p->ops->done(p->ctx, t);
        pthread_cond_broadcast(&p->cv);
    }
    pthread_cond_broadcast(&p->cv);
}

void exp_pool_work(exp_pool *p)
{
    pthread_mutex_lock(&p->mu);
    work_locked(p);
    pthread_mutex_unlock(&p->mu);
}

static void *thread_main(void *arg)
{
    exp_pool_work(arg);
    return NULL;
}

unsigned exp_pool_start(exp_pool *p, unsigned n_threads, const exp_pool_ops *ops, void *ctx)
{
    *p = (exp_pool){.ops = ops, .ctx = ctx};
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->th = sim_xcalloc(n_threads ? n_threads : 1, sizeof *p->th);
    while (p->n_th < n_threads && pthread_create(&p->th[p->n_th], NULL, thread_main, p) == 0)
        p->n_th++;
    return p->n_th;
}

void exp_pool_join(exp_pool *p)
{
    for (unsigned i = 0; i < p->n_th; i++)
        pthread_join(p->th[i], NULL);
    free(p->th);
    p->th = NULL;
    p->n_th = 0;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

void exp_pool_lock(exp_pool *p)
{
    pthread_mutex_lock(&p->mu);
}

void exp_pool_unlock(exp_pool *p)
{
    pthread_mutex_unlock(&p->mu);
}

void exp_pool_wait(exp_pool *p)
{
    pthread_cond_wait(&p->cv, &p->mu);
}

void exp_pool_broadcast(exp_pool *p)
{
    pthread_cond_broadcast(&p->cv);
}
