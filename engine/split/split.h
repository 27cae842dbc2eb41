/*
 * split.h - the split room of the engine: one run over several processes.
 * partition.c says who owns what and what crosses, merge.c makes the
 * processes' event streams one, seq_map.c maps their seqs (the engine core
 * calls them through engine/internal.h, which this room shares with it:
 * the layering check lets no other folder include it). This header is the
 * room's MPI transport (split_mpi.c), `mpirun -np P npurr record ...`,
 * which the session starts.
 *
 * The engine splits the run (engine.h, "split runs"); this moves its
 * buffers with MPI collectives, non-blocking and polled, so a signal (mpirun
 * terminating the job because a process died, or Ctrl-C) is seen while a
 * process waits for the others. Process 0 writes the run folder; the others
 * write nothing and print nothing (their stdout and stderr go to
 * /dev/null): every error is gathered to process 0 (split_mpi_agree), which
 * reports it, and every process exits with the same code.
 */
#ifndef NPURR_ENGINE_SPLIT_H
#define NPURR_ENGINE_SPLIT_H

#include <stddef.h>

#include "engine/engine.h"

typedef struct split_mpi split_mpi;

/* Was this process started by an MPI launcher with more than one process?
 * 0 no (npurr runs alone); 1 yes, *count processes; -1 yes, but this npurr
 * was built without MPI (err says how to get it). */
int split_mpi_launched(int *count, char *err, size_t errlen);
/* Before MPI is up (a refused option), every process of the job would
 * print the same refusal: they all parse the same command line. 1 when
 * this process is the one that speaks (process 0, or npurr alone). */
int split_mpi_process_speaks(void);
/* MPI_Init and the transport; a wait for the other processes ends early
 * when stopped (may be NULL) says a signal arrived. 0, or -1 with err. */
int split_mpi_start(split_mpi **out, int (*stopped)(void), char *err, size_t errlen);
/* The transport the engine's split run moves its buffers with (engine.h);
 * owned by m. */
const engine_transport *split_mpi_transport(split_mpi *m);
/* This process's number in the job, 0..count-1. */
int split_mpi_index(const split_mpi *m);
/* The job's processes. */
int split_mpi_count(const split_mpi *m);
/* How many of the job's processes run on this machine (this one included):
 * they share its memory. */
int split_mpi_on_this_machine(const split_mpi *m);
/* Every process's code combined (the largest); when it is not 0, process
 * 0's err becomes the first failing process's err ("process q: ..." when
 * q > 0). Returns the combined code (0, or a session's error code); a
 * broken transport gives 1. */
int split_mpi_agree(split_mpi *m, int code, char *err, size_t errlen);
/* The transport failed during the run (a process died, a signal arrived
 * while waiting): the job cannot end cleanly. */
int split_mpi_broken(const split_mpi *m);
/* Frees m; MPI_Finalize follows at exit (after process 0 has printed), not
 * at all when broken. */
void split_mpi_end(split_mpi *m, int code);

#endif
