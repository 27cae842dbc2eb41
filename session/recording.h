/*
 * recording.h - one record session: what record_session.c (open: before
 * the run; run; close) and record_finish.c (after the run) share. Internal
 * to the session library.
 */
#ifndef NPURR_SESSION_RECORDING_H
#define NPURR_SESSION_RECORDING_H

#include <pthread.h>

#include "recorder/recorder.h"
#include "session/session.h"

struct record_session {
    const run_spec *spec;
    const run_options *ro;       /* &spec->opts */
    record_hooks hooks;
    int catch_signals;
    record_result r;
    /* What r's strings point at when not "" (owned, freed by close). */
    char *run_dir, *finish_error, *analysis_error;
    engine *e;
    void *state;                 /* the kernel's */
    rec_writer *w;               /* NULL: no trace */
    rec_writer *part;            /* mpirun, traced: process k > 0 records its events here */
    engine_tee tee;              /* the recorder, then hooks.on_event */
    hb_checker *hb;
    struct split_mpi *split;     /* mpirun: this process's part (NULL alone) */
    int ran_once;
    /* The finishing thread (record_finish.c). */
    pthread_t thread;
    int thread_started;
    int close_rc;
    char close_err[ENGINE_ERRLEN];
};

/* Replaces the string *slot owns with s (malloc'd or NULL) and points
 * *view at it, or at "" when s is NULL. */
void recording_set(char **slot, const char **view, char *s);

/* Starts finishing trace and index on a second thread (or here when no
 * thread can be had), calls hooks.on_ran, frees kernel state and engine,
 * waits for the thread and puts the run folder in place, filling
 * r.installed, run_dir, finish_error and analysis_error. */
void record_finish(record_session *s);
/* "-k NAME", with the plugin it comes from: how messages name a kernel
 * (record_session.c). */
void session_kernel_name(const run_options *ro, char *out, size_t len);
/* Frees process k > 0's part writer (record_session.c). */
void record_close_part(record_session *rc);

#endif
