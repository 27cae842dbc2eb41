/*
 * hb_internal.h - the checker's structures, shared by its files: vector
 * clocks and their shared snapshots (hb_vc.c), shadow memory (hb_shadow.c),
 * the edges (hb_check.c) and the reports (hb_report.c).
 */
#ifndef NPURR_CHECKER_HB_INTERNAL_H
#define NPURR_CHECKER_HB_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "checker/hb.h"

/* ------------------------------------------------------------ clocks */
/* A vector clock over track ids; entries past n are 0. */
typedef struct hb_vc {
    uint32_t *c;
    uint32_t n, cap;
} hb_vc;

/* An immutable, shared copy of a clock: what a flag, a barrier or a word
 * carries from its release to its acquire. Between two joins a track's
 * clock changes only in its own entry (and, for a pipe, its scalar unit's),
 * so most snapshots are a shared full copy (base) plus those entries. */
typedef struct hb_snap {
    uint32_t refs, n;        /* n: entries in c (0 for a delta) */
    struct hb_snap *base;    /* NULL: c is the whole clock */
    uint32_t n_over;
    uint32_t over_tid[2], over_clock[2];
    uint32_t c[];
} hb_snap;

static inline uint32_t vc_get(const hb_vc *v, uint32_t t) { return t < v->n ? v->c[t] : 0; }
void vc_set(hb_vc *v, uint32_t t, uint32_t x);
/* dst = max(dst, src); returns 1 if dst changed. */
int vc_join(hb_vc *dst, const uint32_t *src, uint32_t n);
void vc_free(hb_vc *v);
hb_snap *snap_new(const hb_vc *v);
/* base + up to two entries over it. */
hb_snap *snap_delta(hb_snap *base, uint32_t n_over, const uint32_t *tid, const uint32_t *clock);
/* v = max(v, s); returns 1 if v changed. */
int vc_join_snap(hb_vc *v, const hb_snap *s);
static inline hb_snap *snap_ref(hb_snap *s) { if (s) s->refs++; return s; }
void snap_unref(hb_snap *s);

/* A track: one pipe of one core. The scalar unit (PIPE_S) of each core is
 * the one that issues work to its other pipes. */
typedef struct hb_track {
    hb_vc vc;
    uint32_t id, rank, core, pipe;
    uint64_t joins;          /* joins that changed vc (not own ticks) */
    uint64_t mods;           /* any change */
    uint64_t s_joins_seen;   /* pipe tracks: the scalar unit's joins already taken */
    hb_snap *snap;           /* cached snapshot, valid while mods == snap_mods */
    uint64_t snap_mods;
    hb_snap *base;           /* full copy taken at joins == base_joins */
    uint64_t base_joins;
    int32_t s_tid;           /* a pipe: its scalar unit's id; -1 for the scalar unit */
    hb_snap *seen[4];        /* full copies already joined (acquiring one again is O(1)) */
    uint32_t seen_next;
} hb_track;

/* ------------------------------------------------------------ shadow */
/* One access as shadow memory keeps it. */
typedef struct hb_acc {
    uint64_t seq;
    const char *file;
    uint32_t tid, clock;
    int32_t line;
    uint8_t write, atomic, scalar, valid;
} hb_acc;

#define HB_READS 4

typedef struct hb_iv {
    uint64_t lo, hi;
    hb_acc w;
    hb_acc r[HB_READS];
    uint32_t nr;
    uint32_t w_s_clock;      /* the writer's scalar unit's clock when it issued w */
} hb_iv;

typedef struct hb_space {
    hb_iv *v;
    uint32_t n, cap;
} hb_space;

/* One 64 KiB page of one space: (space key, page) + 1 as id, 0 empty. */
typedef struct hb_page {
    uint64_t id;
    hb_space sp;
} hb_page;

struct hb_checker;
/* Checks [lo, hi) of space `key` against what it holds, reports conflicts,
 * then records acc there. vc is the accessing track's clock; s_clock, for a
 * write by a pipe, its scalar unit's entry in vc. Keys: a rank for its GM,
 * n_ranks + (rank * cpr + core) * 6 + space for local memory. */
void shadow_access(struct hb_checker *h, uint32_t key, uint64_t lo, uint64_t hi,
                   const hb_acc *acc, const hb_vc *vc, uint32_t s_clock);
/* The last write recorded over byte off of space key (and its s_clock),
 * NULL if none. */
const hb_acc *shadow_last_write(struct hb_checker *h, uint32_t key, uint64_t off,
                                uint32_t *s_clock);
void shadow_free(struct hb_checker *h);

/* ------------------------------------------------------------ words */
/* A GM word used for synchronisation (named, or read by a scalar load or a
 * wait): the clock its last write released, and who wrote it. */
typedef struct hb_word {
    uint64_t off;
    uint32_t width;
    uint32_t object;
    hb_snap *release;
    hb_side writer;
    int has_writer;
} hb_word;

typedef struct hb_words {
    hb_word *v;
    uint32_t n, cap;
} hb_words;

/* ------------------------------------------------------------ per core */
#define HB_HARD_EVENTS 32   /* above device.h's HARD_EVENT_COUNT */
#define HB_FLAG_IDS 8
#define HB_FLAG_DEPTH 4
#define HB_XCORE_FLAGS 16

typedef struct hb_pending {
    hb_snap *snap;
    uint64_t seq;
    const char *file;
    int line;
} hb_pending;

typedef struct hb_flag_fifo {
    hb_pending e[HB_FLAG_DEPTH];
    uint8_t head, count;
} hb_flag_fifo;

typedef struct hb_xfifo {
    hb_snap **v;
    uint32_t head, n, cap;
} hb_xfifo;

/* The last ring tail this core acquired: to name a tail published early. */
typedef struct hb_tail_seen {
    int valid;
    hb_side store;
} hb_tail_seen;

typedef struct hb_core {
    hb_flag_fifo *flags;     /* [HARD_EVENT_COUNT * HB_FLAG_IDS], lazily */
    hb_xfifo xcore[HB_XCORE_FLAGS];
    uint64_t bar_instance;
    int last_wait_kind;      /* engine_event_kind of its last *_WAIT_BEGIN */
    hb_tail_seen tail;
    int returned;
} hb_core;

typedef struct hb_barrier {
    hb_vc acc;
    uint32_t arrived;
    uint64_t instance;
    hb_snap *released[2];
} hb_barrier;

/* A transfer between its issue and completion. */
typedef struct hb_op {
    uint64_t seq;            /* issue seq; 0 = empty slot */
    uint32_t tid, clock;
    uint32_t s_clock;        /* its scalar unit's clock when it issued it */
    hb_snap *release;        /* the clock it publishes to the words it writes */
    uint8_t wants_release;   /* it writes GM words used for synchronisation */
    uint8_t acquires;        /* it reads such words (its source is the event's aux) */
} hb_op;

/* ------------------------------------------------------------ reports */
typedef struct hb_reports {
    hb_report *v;
    size_t n, cap;
    uint32_t *hash;          /* open addressing over (kind, sites): index + 1 */
    size_t hash_cap;
    uint64_t races, sync_errors, dropped;
} hb_reports;

void report_add(struct hb_checker *h, hb_kind kind, const hb_side *a, const hb_side *b,
                const char *object, const char *what);
void reports_free(hb_reports *r);
/* Describes addr/len for a report ("fullmesh.windows_in[rank 3] +0x40..0x60"). */
void hb_describe(const struct hb_checker *h, uint64_t addr, uint64_t len, int rank, int core,
                 char *buf, size_t n);

/* ------------------------------------------------------------ checker */
struct hb_checker {
    engine *e;
    engine_tee tee;          /* the observer it wraps (inner), then itself (also) */
    int n_ranks, cpr, n_aic;
    int32_t *tid_of;         /* [(rank * cpr + core) * PIPE_COUNT + pipe], -1 none */
    hb_track **tracks;       /* by id */
    uint32_t n_tracks, cap_tracks;
    hb_page *pages;          /* shadow memory, open addressing (hb_shadow.c) */
    size_t pages_cap, pages_n;
    hb_words *words;         /* [n_ranks] */
    hb_core *cores;          /* [n_ranks * cpr] */
    hb_barrier *barriers;    /* [2 + n_ranks * 2] */
    hb_op *ops;              /* open addressing by issue seq */
    size_t ops_cap, ops_n;
    hb_snap *xcore_pending;  /* the snapshot of the CrossCoreSetFlag being posted */
    uint64_t xcore_pending_seq;
    hb_op cur_op;            /* the transfer whose ranges the hooks are showing */
    hb_reports rep;
};

hb_track *hb_track_of(hb_checker *h, uint32_t rank, uint32_t core, uint32_t pipe);

/* hb_check.c: clocks of tracks */
hb_track *hb_scalar_of(hb_checker *h, uint32_t rank, uint32_t core);
void hb_tick(hb_track *t);
void hb_join_snap(hb_track *t, hb_snap *s);
hb_snap *hb_snapshot(hb_track *t);
void hb_pipe_takes_scalar(hb_track *p, const hb_track *s);
hb_core *hb_core_of(hb_checker *h, uint32_t rank, uint32_t core);
void hb_site_of(const hb_checker *h, uint32_t site, const char **file, int *line);

/* hb_sync.c: flags, cross-core flags, barriers */
void hb_on_flag_set(hb_checker *h, const engine_event *ev);
void hb_on_flag_wait(hb_checker *h, const engine_hook *hk);
void hb_flags_learn(hb_checker *h, uint32_t rank, uint32_t core, int pipe, uint64_t after,
                    const hb_vc *what);
void hb_flags_left(hb_checker *h, uint32_t rank, uint32_t core);
void hb_xfifo_push(hb_xfifo *q, hb_snap *s);
hb_snap *hb_xfifo_pop(hb_xfifo *q);
void hb_on_xcore_set(hb_checker *h, const engine_event *ev);
void hb_on_barrier_begin(hb_checker *h, const engine_event *ev);
void hb_on_barrier_end(hb_checker *h, const engine_event *ev);

#endif
