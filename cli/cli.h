/*
 * cli.h - what the subcommands of `npurr` share: the command table's entry
 * points and the parsing of a run's options (engine options plus the
 * kernel's own), which `record`, `layout` and `replay` all accept, so a
 * recorded command line rebuilds the same run.
 */
#ifndef NPURR_CLI_H
#define NPURR_CLI_H

#include <stdio.h>

#include "engine/engine.h"
#include "engine/kernels/kernels.h"

/* Exit codes (DESIGN.md). */
enum { EXIT_DONE = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_DEADLOCK = 3, EXIT_CHECK = 4,
       EXIT_DIVERGED = 5, EXIT_RACES = 6 };

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

/* A run's options as parsed from argv. Strings point into argv. */
typedef struct run_options {
    const kernel_desc *kernel;
    engine_config config;
    kernel_opts kopts;
    const char *out_dir;      /* -o RUN */
    const char *hw_file;
    int no_trace;
    int force;                /* --force: -o may replace an existing run */
    int check_races;          /* --check races */
    int quiet;
    int progress;             /* --progress: the progress line even off a terminal */
    int help;
} run_options;

/* Parses argv[1..] of record/layout/replay. `allow` is a mask of which
 * non-kernel options the command takes. Returns 0, or EXIT_USAGE /
 * EXIT_ERROR with err naming the option at fault. */
enum { RUN_OPT_OUTPUT = 1, RUN_OPT_NO_TRACE = 2,
       RUN_OPT_EXECUTES = 4 /* --seed/--jitter/--hw/--watchdog-us/--quiet; implied by the
                               other two: record and replay run the engine, layout does not */ };
int run_options_parse(int argc, char **argv, int allow, run_options *ro, char *err, size_t errlen);
/* Help text for the engine options and, if k is not NULL, its options. */
void run_options_help(FILE *out, const kernel_desc *k, int allow);
/* The list of kernels with their summaries. */
void run_options_list_kernels(FILE *out);

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

/* Before an engine or plan is built: the kernel's options validated
 * against the topology and its memory estimate (kernel_estimate_memory)
 * against the machine's available memory; host_only compares only the
 * host-side plan (what `layout` allocates). -1 with err naming the options
 * and both sizes: a usage error. */
int cli_memory_check(const run_options *ro, int host_only, char *err, size_t errlen);

/* Joins argv with POSIX shell quoting (for meta command_line); malloc'd. */
char *shell_join(int argc, char **argv);
/* Splits a shell_join result back into words; *argv_out and its strings are
 * one malloc'd block. Returns argc, or -1 on malformed quoting. */
int shell_split(const char *line, char ***argv_out);

#endif
