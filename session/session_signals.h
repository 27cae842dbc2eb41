/*
 * session_signals.h - Ctrl-C and SIGTERM while a session runs (see
 * session_signals.c). Internal to the session library.
 */
#ifndef NPURR_SESSION_SIGNALS_H
#define NPURR_SESSION_SIGNALS_H

#include "engine/engine.h"

/* From now on the first signal stops e at its next event. second_kills:
 * a second signal (or one after session_signals_run_over without a trace
 * to finish) takes its default action, as a user pressing Ctrl-C twice
 * expects; otherwise every signal only asks e to stop. */
void session_signals_catch(engine *e, int second_kills);
/* The run is over. finishing: a trace is still being finalised, so the
 * first signal only prints that (and skips the output check); otherwise the
 * handlers are released. */
void session_signals_run_over(int finishing);
/* Restores the handlers found by session_signals_catch. */
void session_signals_release(void);
/* Whether a signal arrived since session_signals_catch. */
int session_signals_seen(void);

#endif
