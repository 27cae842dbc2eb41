/*
 * record_races.h - `--check races` as a record session runs it
 * (record_races.c). Internal to the session library.
 */
#ifndef NPURR_SESSION_RECORD_RACES_H
#define NPURR_SESSION_RECORD_RACES_H

#include "session/session.h"

/* Wraps the engine's current observer in a checker when enabled. */
int record_races_attach(engine *e, int enabled, hb_checker **out, char *err, size_t errlen);
/* Once the checker has seen the whole run: its counts into r. */
void record_races_count(hb_checker *hb, const engine_result *res, record_result *r);
/* Writes the races table into run_dir's index.db: the hidden folder the
 * run is recorded into, before it is renamed into place. */
int record_races_write(hb_checker *hb, const char *run_dir, char *err, size_t errlen);

#endif
