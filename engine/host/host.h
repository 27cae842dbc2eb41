/*
 * host.h - the engine's host utilities: what npurr needs of the machine it
 * runs on, apart from any emulated device. A room of its own under the
 * engine (engine.h includes this header, so callers see one API): nothing
 * here knows of ranks, cores or time in a run.
 *   host_clock.c    the host's monotonic clock (wall-time figures only)
 *   input_file.c    the one check of every file npurr reads
 *   orphan_files.c  temporary files a killed npurr left
 *   process_pool.c  jobs in forked processes, stopped by Ctrl-C
 *   sha256.c        SHA-256 of a file or bytes
 * Errors are values: 0, or -1 with why (to be prefixed by the caller).
 */
#ifndef NPURR_ENGINE_HOST_H
#define NPURR_ENGINE_HOST_H

#include <stddef.h>
#include <stdio.h>

/* Seconds on the host's monotonic clock, from an arbitrary start
 * (host_clock.c): for the wall-time figures npurr prints, never for
 * anything a run or its trace depends on. */
double engine_host_seconds(void);

/* The one check of every file npurr reads (input_file.c): opens path for
 * reading without ever blocking (a FIFO is refused, not waited on) and
 * returns the descriptor only when it is a regular file; else -1 with why
 * ("is a FIFO, not a regular file", or the errno text), to be prefixed
 * with the path by the caller. engine_fopen_input is the same as a FILE *
 * ("rb"); engine_check_input only checks (for files another library opens
 * by name, such as SQLite's). */
int engine_open_input(const char *path, char *why, size_t whylen);
/* engine_open_input as a stdio stream ("rb"); the caller fcloses it. NULL with why. */
FILE *engine_fopen_input(const char *path, char *why, size_t whylen);
/* engine_open_input's check alone, for a file another library opens by name (SQLite's): 0, or
 * -1 with why. */
int engine_check_input(const char *path, char *why, size_t whylen);
/* Removes dir's files named prefix PID "-" XXXXXX tail (tail one of the
 * NULL-ended tails) whose process PID no longer exists: temporary files
 * a killed npurr left (orphan_files.c). Nothing else is touched. */
void engine_remove_orphans(const char *dir, const char *prefix, const char *const *tails);
/* In a forked child: run job i of a pool, filling result (the pool's
 * result_size bytes, zeroed). */
typedef void (*engine_pool_job)(void *ctx, size_t i, void *result);
/* In the parent as job i ends (finished of total so far): sent 1 when its
 * result arrived whole, else 0 (its result zeroed) with wstatus saying
 * how its process ended. Not called for jobs a Ctrl-C stopped or that
 * never started. */
typedef void (*engine_pool_done)(void *ctx, size_t i, int sent, int wstatus, size_t finished,
                                 size_t total);
/* Runs jobs 0..n-1 in forked processes, up to j at once (process_pool.c);
 * job i's result goes to results + i * result_size. Returns 0 when every
 * job ended; 1 when Ctrl-C or SIGTERM stopped it (no job started after,
 * running ones ended, finished results kept, and every later pool of this
 * process starts nothing); -1 when no process or pipe could be had (err).
 * A pool's children die with it, even by kill -9. */
int engine_pool_run(size_t n, int j, size_t result_size, engine_pool_job job,
                    engine_pool_done done, void *ctx, void *results, char *err, size_t errlen);
/* 1 once a pool of this process was stopped by Ctrl-C or SIGTERM. */
int engine_pool_interrupted(void);
/* SHA-256 of the file at path (read through engine_open_input) as 64 hex
 * digits and a NUL into hex: 0, or -1 with why (sha256.c). */
int engine_sha256_file(const char *path, char hex[65], char *why, size_t whylen);
/* SHA-256 of n bytes at p, as engine_sha256_file gives it. */
void engine_sha256_bytes(const void *p, size_t n, char hex[65]);

#endif
