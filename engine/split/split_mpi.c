/*
 * split_mpi.c - the MPI transport of a split run (split.h).
 *
 * Collectives only: each window one all-to-all (of sizes, then of the
 * bytes: engine/split/partition.c's swap_window puts everything a window sends
 * into it), and a few allreduces and gathers at the start and the end of
 * a run. Each is started non-blocking and polled (MPI_Test, then short
 * sleeps, so P processes on fewer cores leave each other the CPU) while a
 * signal is watched for: when mpirun ends the job because a process died,
 * the others get SIGTERM in a wait, stop waiting, and process 0 still
 * finalises the trace as an interrupted run. Built without MPI, only
 * split_mpi_launched is real: it tells a user under mpirun what is missing.
 */
#include "engine/split/split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An MPI launcher's environment (Open MPI, then PMIx and PMI ones). */
static int launcher_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

/* This process's number in the launcher's job, -1 outside one. */
static int launcher_rank(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

/* Before MPI is up (a refused option), every process of the job would print
 * the same refusal: they all parse the same command line. Only process 0
 * speaks, as after split_mpi_start; the others exit with the same code. */
int split_mpi_process_speaks(void) {
    return launcher_size() <= 1 || launcher_rank() <= 0;
}

#ifdef NPURR_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

struct split_mpi {
    engine_transport t;
    int here;                 /* processes of the job on this machine (this one included) */
    int broken;
    int (*stopped)(void);     /* the caller's: a signal arrived, stop waiting */
    uint8_t *pack;            /* send side of alltoall / gather */
    size_t pack_cap;
    uint8_t *unpack;
    size_t unpack_cap;
};

int split_mpi_launched(int *count, char *err, size_t errlen) {
    (void)err; (void)errlen;
    *count = launcher_size();
    return *count > 1;
}

static void *room(uint8_t **p, size_t *cap, size_t n) {
    if (n > *cap) {
        free(*p);
        *p = malloc(n ? n : 1);
        if (!*p) abort();
        *cap = n;
    }
    return *p;
}

/* b holds exactly n bytes from p (its storage reused when large enough). */
static void buf_set(engine_buf *b, const void *p, size_t n) {
    if (b->cap < n) {
        free(b->p);
        b->p = malloc(n);
        if (!b->p) abort();
        b->cap = n;
    }
    if (n) memcpy(b->p, p, n);
    b->n = n;
}

static int fail(split_mpi *m, int rc, const char *what, char *err, size_t errlen) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
    snprintf(err, errlen, "process %d: %s%s%s", m->t.index, what, text[0] ? ": " : "", text);
    m->broken = 1;
    return -1;
}

/* Polls the n requests rq to their end; a signal (or a broken job) stops
 * the wait. */
static int finish_all(split_mpi *m, int n, MPI_Request *rq, const char *what, char *err,
                      size_t errlen) {
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        /* MPI_Test for one: with Open MPI's Testall of one request the
         * traced EP32 split took 30 s of wall time, not 24 */
        int rc = n == 1 ? MPI_Test(rq, &done, MPI_STATUS_IGNORE)
                        : MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return fail(m, rc, what, err, errlen);
        if (done) return 0;
        if (m->stopped && m->stopped()) {
            snprintf(err, errlen,
                     "process %d stopped waiting for the others (%s): a signal arrived (Ctrl-C, "
                     "or mpirun ending the job because a process died)", m->t.index, what);
            m->broken = 1;
            return -1;
        }
        if (spins < 1) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static int finish(split_mpi *m, MPI_Request *rq, const char *what, char *err, size_t errlen) {
    return finish_all(m, 1, rq, what, err, errlen);
}

static int mpi_allreduce(void *ctx, uint64_t *v, int n, int op, char *err, size_t errlen) {
    split_mpi *m = ctx;
    uint64_t in[16];
    if (n > 16) return fail(m, MPI_SUCCESS, "allreduce of more than 16 words", err, errlen);
    memcpy(in, v, (size_t)n * sizeof *v);
    MPI_Op o = op == ENGINE_REDUCE_MIN ? MPI_MIN : op == ENGINE_REDUCE_MAX ? MPI_MAX : MPI_SUM;
    MPI_Request rq;
    int rc = MPI_Iallreduce(in, v, n, MPI_UINT64_T, o, MPI_COMM_WORLD, &rq);
    if (rc != MPI_SUCCESS) return fail(m, rc, "allreduce", err, errlen);
    return finish(m, &rq, "allreduce", err, errlen);
}

static int fits(split_mpi *m, size_t n, char *err, size_t errlen) {
    if (n <= INT_MAX) return 0;
    return fail(m, MPI_SUCCESS, "a window's messages passed 2 GiB", err, errlen);
}

static int mpi_alltoall(void *ctx, const engine_buf *out, engine_buf *in, char *err,
                        size_t errlen) {
    split_mpi *m = ctx;
    int P = m->t.count;
    int sc[256], rc_[256], sd[256], rd[256];
    size_t total = 0;
    for (int q = 0; q < P; q++) {
        if (fits(m, out[q].n, err, errlen)) return -1;
        sc[q] = (int)out[q].n;
        sd[q] = (int)total;
        total += out[q].n;
    }
    if (fits(m, total, err, errlen)) return -1;
    MPI_Request rq;
    int rc = MPI_Ialltoall(sc, 1, MPI_INT, rc_, 1, MPI_INT, MPI_COMM_WORLD, &rq);
    if (rc != MPI_SUCCESS) return fail(m, rc, "alltoall of sizes", err, errlen);
    if (finish(m, &rq, "alltoall of sizes", err, errlen)) return -1;
    uint8_t *send = room(&m->pack, &m->pack_cap, total);
    for (int q = 0; q < P; q++)
        if (out[q].n) memcpy(send + sd[q], out[q].p, out[q].n);
    size_t rtotal = 0;
    for (int q = 0; q < P; q++) {
        rd[q] = (int)rtotal;
        rtotal += (size_t)rc_[q];
    }
    if (fits(m, rtotal, err, errlen)) return -1;
    uint8_t *recv = room(&m->unpack, &m->unpack_cap, rtotal);
    rc = MPI_Ialltoallv(send, sc, sd, MPI_BYTE, recv, rc_, rd, MPI_BYTE, MPI_COMM_WORLD, &rq);
    if (rc != MPI_SUCCESS) return fail(m, rc, "alltoall", err, errlen);
    if (finish(m, &rq, "alltoall", err, errlen)) return -1;
    for (int q = 0; q < P; q++) buf_set(&in[q], recv + rd[q], (size_t)rc_[q]);
    return 0;
}

/* Sizes by a gather; then each process's bytes straight into its all[q] on
 * process 0 (no byte goes through a staging buffer: the index parts at a
 * run's end were hundreds of MB before the waits travelled with the
 * parts). */
static int mpi_gather(void *ctx, const engine_buf *mine, engine_buf *all, char *err,
                      size_t errlen) {
    split_mpi *m = ctx;
    int P = m->t.count, root = m->t.index == 0;
    if (fits(m, mine->n, err, errlen)) return -1;
    int n = (int)mine->n, counts[256];
    MPI_Request rq[256];
    int rc = MPI_Igather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
    if (rc != MPI_SUCCESS) return fail(m, rc, "gather of sizes", err, errlen);
    if (finish(m, &rq[0], "gather of sizes", err, errlen)) return -1;
    if (!root) {
        rc = MPI_Isend(mine->p, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &rq[0]);
        if (rc != MPI_SUCCESS) return fail(m, rc, "gather", err, errlen);
        return finish(m, &rq[0], "gather of the event streams", err, errlen);
    }
    buf_set(&all[0], mine->p, mine->n);
    for (int q = 1; q < P; q++) {
        engine_buf *b = &all[q];
        if (b->cap < (size_t)counts[q]) {
            free(b->p);
            b->p = malloc(counts[q] ? (size_t)counts[q] : 1);
            if (!b->p) abort();
            b->cap = (size_t)counts[q];
        }
        b->n = (size_t)counts[q];
        rc = MPI_Irecv(b->p, counts[q], MPI_BYTE, q, 0, MPI_COMM_WORLD, &rq[q - 1]);
        if (rc != MPI_SUCCESS) return fail(m, rc, "gather", err, errlen);
    }
    return P > 1 ? finish_all(m, P - 1, rq, "gather of the event streams", err, errlen) : 0;
}

/* MPI_Finalize waits for every process: done at exit, after process 0 has
 * printed, so a process that exits early with an error code (which makes
 * mpirun end the job) cannot cut process 0's report short. */
static int finalize_at_exit;

static void finalize_now(void) {
    if (!finalize_at_exit) return;
    fflush(stdout);
    fflush(stderr);
    MPI_Finalize();
}

int split_mpi_start(split_mpi **out, int (*stopped)(void), char *err, size_t errlen) {
    *out = NULL;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed: is this npurr started by mpirun?");
        return -1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    finalize_at_exit = 1;
    atexit(finalize_now);
    split_mpi *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->stopped = stopped;
    MPI_Comm_rank(MPI_COMM_WORLD, &m->t.index);
    MPI_Comm_size(MPI_COMM_WORLD, &m->t.count);
    if (m->t.count > 255) {
        snprintf(err, errlen, "%d MPI processes: at most 255", m->t.count);
        free(m);
        return -1;
    }
    /* the processes that share this machine's memory (MPI-3) */
    MPI_Comm local;
    m->here = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
        MPI_Comm_size(local, &m->here);
        MPI_Comm_free(&local);
    }
    m->t.ctx = m;
    m->t.allreduce = mpi_allreduce;
    m->t.alltoall = mpi_alltoall;
    m->t.gather = mpi_gather;
    /* Only process 0 speaks; the others' errors reach it (split_mpi_agree). */
    if (m->t.index != 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            fflush(stdout);
            fflush(stderr);
            dup2(null, 1);
            dup2(null, 2);
            close(null);
        }
    }
    *out = m;
    return 0;
}

const engine_transport *split_mpi_transport(split_mpi *m) { return &m->t; }
int split_mpi_index(const split_mpi *m) { return m->t.index; }
int split_mpi_count(const split_mpi *m) { return m->t.count; }
int split_mpi_on_this_machine(const split_mpi *m) { return m->here; }
int split_mpi_broken(const split_mpi *m) { return m->broken; }

int split_mpi_agree(split_mpi *m, int code, char *err, size_t errlen) {
    if (m->broken) return code ? code : 1;
    char why[ENGINE_ERRLEN];
    uint64_t v[2] = {(uint64_t)code, 0};
    if (mpi_allreduce(m, v, 1, ENGINE_REDUCE_MAX, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return 1;
    }
    if (!v[0]) return 0;
    /* every process's sentence to process 0; the first failing one wins */
    engine_buf mine = {(uint8_t *)err, code ? strlen(err) + 1 : 0, 0};
    engine_buf all[256];
    memset(all, 0, sizeof all);
    if (mpi_gather(m, &mine, m->t.index == 0 ? all : NULL, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return 1;
    }
    if (m->t.index == 0) {
        for (int q = 0; q < m->t.count; q++)
            if (all[q].n) {
                char first[ENGINE_ERRLEN];
                snprintf(first, sizeof first, "%.*s", (int)all[q].n, (const char *)all[q].p);
                if (q) snprintf(err, errlen, "process %d: %s", q, first);
                else snprintf(err, errlen, "%s", first);
                break;
            }
        for (int q = 0; q < m->t.count; q++) engine_buf_free(&all[q]);
    }
    return (int)v[0];
}

void split_mpi_end(split_mpi *m, int code) {
    if (!m) return;
    (void)code;
    /* A broken job cannot finalise (the others are gone or stuck in a
     * collective): leave MPI as it is and let the process exit with its
     * code; mpirun reports and ends the job. Otherwise at exit. */
    if (m->broken) finalize_at_exit = 0;
    free(m->pack);
    free(m->unpack);
    free(m);
}

#else   /* built without MPI */

struct split_mpi { int unused; };

int split_mpi_launched(int *count, char *err, size_t errlen) {
    *count = launcher_size();
    if (*count <= 1) return 0;
    snprintf(err, errlen,
             "started by mpirun with %d processes, but this npurr was built without MPI: "
             "install it (apt-get install -y libopenmpi-dev openmpi-bin) and build again "
             "(sh tools/setup.sh), or run npurr alone", *count);
    return -1;
}

int split_mpi_start(split_mpi **out, int (*stopped)(void), char *err, size_t errlen) {
    *out = NULL;
    snprintf(err, errlen, "this npurr was built without MPI");
    return -1;
}

const engine_transport *split_mpi_transport(split_mpi *m) { (void)m; return NULL; }
int split_mpi_index(const split_mpi *m) { (void)m; return 0; }
int split_mpi_count(const split_mpi *m) { (void)m; return 1; }
int split_mpi_on_this_machine(const split_mpi *m) { (void)m; return 1; }
int split_mpi_broken(const split_mpi *m) { (void)m; return 0; }
int split_mpi_agree(split_mpi *m, int code, char *err, size_t errlen) {
    (void)m; (void)err; (void)errlen;
    return code;
}
void split_mpi_end(split_mpi *m, int code) { (void)m; (void)code; }

#endif
