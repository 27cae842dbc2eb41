/*
 * rec_writer.h - the live recorder's state, shared by rec_writer.c (one
 * process: chunks into trace.zst) and rec_split.c (a run split over
 * processes and recorded where it runs: parts of each chunk's seq range,
 * written by process 0). Private to the recorder.
 */
#ifndef NPURR_REC_WRITER_H
#define NPURR_REC_WRITER_H

#include <zstd.h>

#include "recorder/rec_internal.h"

typedef struct rec_assembly rec_assembly;   /* rec_split.c */

struct rec_writer {
    char dir[4096];
    int fd;
    rec_kv header;
    /* Engine thread: the chunk being filled. */
    engine_event *evs;
    size_t nev, cap_evs;
    size_t pend;              /* split: evs from here on carry this process's numbers until
                               * the engine renumbers them (engine.h on_renumber) */
    size_t chunk_events;  /* REC_CHUNK_EVENTS, or NPURR_CHUNK_EVENTS */
    rec_buf decls;
    engine_object prev_obj;   /* the last object declared in decls */
    uint32_t prev_string;     /* the last string id declared in decls */
    /* The chunk handed to the worker, and what writing it takes. */
    engine_event *job_evs;
    size_t job_nev, cap_job_evs;
    rec_buf job_decls;
    rec_worker *worker;       /* NULL: chunks are written in line */
    rec_codec *codec;
    ZSTD_CCtx *cctx;
    rec_buf raw, comp;
    uint64_t offset, events, max_time;  /* offset, events: atomics (progress reads) */
    rec_index *ix;
    int failed;
    char fail_msg[4400];
    /* Split over processes, recorded where it runs (rec_split.c): parts 0
     * when not. The events buffered are this process's: those before pend
     * numbered and of the seqs up to group_last (a group is chunk_events
     * seqs), those from pend on the window's, not numbered yet (they may
     * pass the chunk's size: evs grows); job_head names the part
     * handed to the worker, which appends it, encoded, to done. */
    int part, parts;
    uint64_t group_last;
    rec_part_head job_head;
    rec_buf done;
    rec_buf ix_begins, ix_rows;   /* the part's waits (rec_ix_take_part), the worker's */
    rec_assembly *assembly;   /* process 0: parts waiting for their group */
};

/* rec_writer.c, for rec_split.c */
/* Buffers, codec, zstd context, index builder and header of w (zeroed,
 * fd -1); -1 with err. rec_writer_free frees a writer in any state. */
int rec_writer_alloc(rec_writer *w, const rec_run_info *info, char *err, size_t errlen);
void rec_writer_free(rec_writer *w);
void rec_writer_fail(rec_writer *w, const char *fmt, const char *detail);
int rec_writer_write(rec_writer *w, const uint8_t *p, size_t n);   /* at the file's end */
void rec_writer_settle(rec_writer *w);   /* the job in flight is done */
/* Hands the first n buffered events and the declarations to fn on the
 * worker (or runs it in line); the events after them stay, first. */
void rec_writer_hand_over(rec_writer *w, void (*fn)(void *), size_t n);

/* rec_split.c, for rec_writer.c */
/* The events of a split run from evs[from] on have the run's seqs now:
 * the parts of the groups before each are handed over first. */
void rec_split_settle(rec_writer *w, size_t from);
void rec_split_free(rec_writer *w);
/* Process 0, closing: its own open waits numbered, the last rows written. */
void rec_split_index_close(rec_writer *w);

#endif
