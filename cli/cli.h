/*
 * cli.h - what the subcommands of `npurr` share: the command table's entry
 * points, the exit codes, and a few helpers. A run's options (engine
 * options plus the kernel's own, which `record`, `layout` and `replay` all
 * accept, so a recorded command line rebuilds the same run) and the record
 * and replay sequences are the run-session library's (session/session.h).
 */
#ifndef NPURR_CLI_H
#define NPURR_CLI_H

#include <stdio.h>

#include "engine/engine.h"
#include "engine/kernels/kernels.h"
#include "session/session.h"

/* Exit codes (DESIGN.md); a session's error codes are numbered the same. */
enum { EXIT_DONE = 0, EXIT_ERROR = SESSION_ERROR, EXIT_USAGE = SESSION_USAGE, EXIT_DEADLOCK = 3,
       EXIT_CHECK = 4, EXIT_DIVERGED = SESSION_DIVERGED, EXIT_RACES = 6 };

/* Each takes its subcommand's argv (argv[0] the subcommand's name), inside
 * the whole command line: argv[-1] is the program, which `record` keeps in
 * the recorded command line. */
int cmd_record(int argc, char **argv);
int cmd_layout(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_reindex(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_sql(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_explore(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Measured rows for `hw --compare` and `calibrate` (measured.c). Loads the
 * timing parameters (defaults, then hw_file if not NULL) and the rows of
 * file (kernel_options: the shape of an msprof op_summary); errors printed
 * as "npurr CMD: ...". EXIT_DONE or EXIT_ERROR. */
int measured_load(const char *cmd, const char *file, const char *kernel_options,
                  const char *hw_file, fidelity_table *t, engine_hw *hw);
/* -j's value into *out (1..256); -1 with the error printed. */
int measured_jobs(const char *cmd, const char *v, int *out);
/* Every row of t under hw, jobs at once; 1 if a row failed (res says why). */
int measured_run_all(const fidelity_table *t, const engine_hw *hw, int jobs,
                     fidelity_result *res);
/* One line per row: measured time, npurr's and the ratio (before; and
 * after a fit when after is not NULL), a failed row's error under it. */
void measured_print(FILE *out, const fidelity_table *t, const fidelity_result *before,
                    const fidelity_result *after);

/* `npurr sql RUN` with no query: the sqlite3-shell-like prompt on db
 * (sql_shell.c). Returns the exit status. */
struct sqlite3;
int sql_shell(struct sqlite3 *db, const char *run, int csv, FILE *in, FILE *out);

/* Closes an output opened with ana_output_open after the work that wrote it
 * returned rc (0 ok, err filled otherwise): a failed or unclosable output is
 * removed, unless it is standard output. Returns 0, or -1 with err. */
int cli_output_finish(FILE *out, const char *path, int rc, char *err, size_t errlen);

/* 0 if a command reading run_dir may write out (option names it in the
 * message): not inside the run folder, not a hard link to its files, not a
 * directory; "-" (stdout) is always fine. -1 with err: a usage error. */
int cli_output_check(const char *run_dir, const char *out, const char *option, char *err,
                     size_t errlen);

/* The exit code of a run that ended as o (`record`, `explore`): 0, 3 for a
 * deadlock or watchdog, 4 for a failed data check, 1 otherwise. */
int cli_outcome_status(engine_outcome o, int check_failed);

#endif
