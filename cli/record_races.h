/*
 * record_races.h - `--check races` as `record` runs it (record_races.c).
 */
#ifndef NPURR_CLI_RECORD_RACES_H
#define NPURR_CLI_RECORD_RACES_H

#include "checker/hb.h"
#include "cli.h"

/* Wraps the engine's current observer in a checker when enabled. */
int record_races_attach(engine *e, int enabled, hb_checker **out, char *err, size_t errlen);
/* The exit code once the checker has seen the whole run (6: races). */
int record_races_status(hb_checker *hb, const engine_result *res, int status);
/* Writes the races table into run_dir's index.db: the hidden folder the
 * run is recorded into, before it is renamed into place. */
int record_races_write(hb_checker *hb, const char *run_dir);
/* Prints up to print_max reports, names run_dir's races table (NULL: no
 * trace), frees the checker. */
void record_races_finish(hb_checker *hb, const char *run_dir, int print_max);

#endif
