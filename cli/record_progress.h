/*
 * record_progress.h - the progress line of `npurr record` (record_progress.c):
 * an engine observer, teed beside the recorder's.
 */
#ifndef NPURR_RECORD_PROGRESS_H
#define NPURR_RECORD_PROGRESS_H

#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef struct record_progress {
    engine *e;
    const kernel_desc *kernel;   /* its progress(), when it has one, gives the share done */
    const void *state;
    double start, last;
    double every;            /* seconds between lines: 2, or NPURR_PROGRESS_EVERY */
    uint64_t begun, ended;   /* KERNEL_BEGIN / KERNEL_END events: cores launched, finished */
    uint32_t phase_id;       /* string id of the kernel launched last */
    int64_t step;            /* highest "dispatch"/"round"/"phase" note so far */
    const char *step_key;
    int enabled, tty, shown;
} record_progress;

/* Enabled when stderr is a terminal or forced (--progress), never quiet.
 * kernel and state (may be NULL) measure the share done. */
void record_progress_init(record_progress *p, engine *e, const kernel_desc *kernel,
                          const void *state, int quiet, int forced);
/* The observer callback (ctx: the record_progress). */
void record_progress_event(void *ctx, const engine_event *ev);
/* Ends an in-place line with a newline. */
void record_progress_end(record_progress *p);

#endif
