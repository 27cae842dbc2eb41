/*
 * recording.h - one record session in progress, shared by record_session.c
 * (before and during the run) and record_finish.c (after it). Internal to
 * the session library.
 */
#ifndef NPURR_SESSION_RECORDING_H
#define NPURR_SESSION_RECORDING_H

#include <pthread.h>

#include "recorder/recorder.h"
#include "session/session.h"

typedef struct recording {
    const run_options *ro;
    const char *command_line;
    const record_hooks *hooks;
    int catch_signals;
    record_result *r;
    engine *e;
    void *state;                 /* the kernel's */
    rec_writer *w;               /* NULL: no trace */
    rec_writer *part;            /* mpirun, traced: process k > 0 records its events here */
    engine_tee tee;              /* the recorder, then hooks->on_event */
    hb_checker *hb;
    struct split_mpi *split;     /* mpirun: this process's part (NULL alone) */
    /* The finishing thread (record_finish.c). */
    pthread_t thread;
    int thread_started;
    int close_rc;
    char close_err[ENGINE_ERRLEN];
} recording;

/* Starts finishing trace and index on a second thread (or here when no
 * thread can be had), calls hooks->on_ran, frees kernel state and engine,
 * waits for the thread and puts the run folder in place, filling
 * r->installed, run_dir, finish_error and analysis_error. */
void record_finish(recording *rc);
/* Frees process k > 0's part writer (record_session.c). */
void record_close_part(recording *rc);

#endif
