/*
 * rec_worker.c - one background thread that runs one job at a time.
 *
 * The recorder has two pipelines with a cheap producer and an expensive
 * consumer on different cores of the machine: the engine filling chunks
 * while the previous chunk is encoded, compressed and written (rec_writer.c),
 * and SQLite stepping through one decoded chunk of the `events` table while
 * the next is decompressed and decoded (rec_vtab.c); analysis steps its bulk
 * inserts on one too (analysis/derive/ana_bulk.c). Each needs exactly one
 * job in flight, so this is a single slot with a mutex and a condition
 * variable, not a queue: submit hands over a job, wait blocks until it has
 * run. Everything a job touches belongs to it until wait returns; the mutex
 * hand-off orders its writes before the caller's reads.
 *
 * A worker pays only with a CPU of its own. The writers start none when
 * their thread is bound to one CPU, or when a split run has as many
 * processes on the machine as it has CPUs (rec_worker_start_if_cpu):
 * mpirun binds each process of a split to a core, and there the engine and
 * the worker took turns on it, a traced split spending 6-10 % more CPU and
 * more wall time than encoding in line.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "recorder/rec_internal.h"

struct rec_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *arg);
    void *arg;
    int busy;   /* a job was submitted and has not finished */
    int quit;
};

static void *worker_main(void *p) {
    rec_worker *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (w->busy) {
            void (*fn)(void *) = w->fn;
            void *arg = w->arg;
            pthread_mutex_unlock(&w->mu);
            fn(arg);
            pthread_mutex_lock(&w->mu);
            w->busy = 0;
            pthread_cond_broadcast(&w->cv);
            continue;
        }
        break; /* quit, and nothing left to run */
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

rec_worker *rec_worker_start(void) {
    rec_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return NULL;
    }
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    /* The thread blocks every signal: Ctrl-C and friends go to the
     * threads that handle them (the CLI's, which finalises the run). Not
     * the faults it raises itself: a blocked SIGBUS kills the process
     * without its handler (a trace truncated under a reader,
     * rec_map_guard.c). */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

int rec_worker_has_cpu(int sharers) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;   /* more CPUs than a set holds */
    return CPU_COUNT(&set) > (sharers > 1 ? sharers : 1);
}

rec_worker *rec_worker_start_if_cpu(int sharers) {
    return rec_worker_has_cpu(sharers) ? rec_worker_start() : NULL;
}

void rec_worker_wait(rec_worker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

int rec_worker_idle(rec_worker *w) {
    if (!w) return 1;
    pthread_mutex_lock(&w->mu);
    int idle = !w->busy;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

void rec_worker_submit(rec_worker *w, void (*fn)(void *arg), void *arg) {
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    w->fn = fn;
    w->arg = arg;
    w->busy = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void rec_worker_stop(rec_worker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
