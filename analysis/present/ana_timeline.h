/*
 * ana_timeline.h - the run as a timeline, built once and written by both
 * exporters (ana_export.c: Chrome JSON, ana_perfetto.c: Perfetto protobuf);
 * private to analysis/.
 *
 * What a viewer needs and SQL rows do not say directly:
 *   - time in whole nanoseconds, as Perfetto stores it. Every time is
 *     floor(ps / 1000): a monotone map, so slices nested in picoseconds stay
 *     nested and disjoint ones stay disjoint (touching at most);
 *   - a track tree: a track per core (its scalar unit's waits) and, under
 *     it, a track per pipe for the transfers queued on it ("scalar" for
 *     the scalar unit's remote stores). Slices on one track must nest, and
 *     transfers that share a queue's bandwidth overlap without nesting, so
 *     a pipe has lanes: lane 0 is the pipe's track, a slice that does not
 *     nest in any lane opens the next one. Perfetto merges sibling tracks
 *     of the same name into one, so the lanes show as one pipe track;
 *   - flows: for every ended wait whose waker is known, an instant "wake"
 *     on the waker's track at the waking event and an instant "woken"
 *     inside the wait at its end. The arrow goes from the first to the
 *     second, so it never points back in time, and both ends are slices
 *     the viewer can attach it to;
 *   - one order for all events: by time, and at equal times the wake
 *     instants first (a flow's start is read before its end), then each
 *     track's events in nesting order (ends before begins, a woken instant
 *     before its wait's end). Perfetto sorts by time and keeps the file
 *     order of ties, so this order is what it reads.
 *   - counters: ring occupancy, link bandwidth (link_bandwidth) and NIC
 *     queue depth (RDMA operations issued and not yet landed, per rank);
 *   - the critical path (critical_path) as one track of adjacent slices,
 *     "critical path", in a process of its own after the ranks.
 */
#ifndef NPURR_ANA_TIMELINE_H
#define NPURR_ANA_TIMELINE_H

#include "analysis/derive/derive.h"
#include "analysis/present/present.h"

enum { TL_CORE = -1, TL_COUNTER = -2,
       TL_CRITICAL = -3 };   /* tl_track.pipe besides engine pipes; the critical path's
                                track has rank = run.ranks (a process of its own) */
enum { TL_CAT_WAIT = 1, TL_CAT_TRANSFER, TL_CAT_WAKE, TL_CAT_CRITICAL };
enum { TL_ARG_STR = 0, TL_ARG_INT };
#define TL_MAX_ARGS 5
#define TL_NONE UINT32_MAX

typedef struct tl_track {
    int32_t rank, core;       /* core -1 for a rank's counter tracks */
    int16_t pipe;             /* TL_CORE, TL_COUNTER or an engine pipe */
    uint16_t lane;            /* 0: the pipe's own track */
    uint32_t parent;          /* the core's track for a pipe lane (and for lanes
                                 of the core's own track); TL_NONE */
    uint32_t next_lane;       /* the pipe's next lane; TL_NONE */
    uint32_t name;            /* string id: "AIV5 RDMASender", "MTE3", "ring x occupancy" */
    uint32_t label;           /* JSON thread name: "AIV5 MTE3 (2)"; = name for core tracks */
    uint8_t is_double;        /* counter values are fractional (GB/s) */
} tl_track;

typedef struct tl_arg {
    uint32_t key;             /* string id */
    uint8_t type;             /* TL_ARG_* */
    int64_t v;                /* integer, or string id */
} tl_arg;

/* A slice: 40 bytes. What only some slices have is kept beside them:
 * arguments (waits and critical path segments; transfers have none) in
 * ana_timeline.arg, a flow (ended waits whose waker is known) in
 * ana_timeline.flow. */
typedef struct tl_slice {
    uint64_t b_ps, e_ps;
    uint32_t track;           /* lane track index */
    uint32_t name, site;      /* string id; sites row (1-based index), 0 none */
    uint32_t arg;             /* its first argument in ana_timeline.arg */
    uint32_t flow;            /* its flow's index in ana_timeline.flow + 1, 0 none */
    uint8_t cat, nargs;
} tl_slice;

/* A flow: from a wake instant on the waker's track to a woken instant at
 * the end of its wait. */
typedef struct tl_flow {
    uint64_t id;              /* the wait's id + 1 */
    uint64_t waker_ps;
    uint32_t waker_track;     /* the wake instant's track */
    uint32_t waker_name;
} tl_flow;

typedef struct tl_counter {
    uint64_t ps;
    uint32_t track;
    double value;
} tl_counter;

typedef struct tl_site {
    uint32_t file, function; /* string ids */
    int64_t line;
} tl_site;

enum { TL_EV_BEGIN = 0, TL_EV_END, TL_EV_WAKE, TL_EV_WOKEN, TL_EV_COUNTER };
typedef struct tl_event {
    uint8_t type;             /* TL_EV_* */
    uint32_t idx;             /* slice or counter index */
} tl_event;

typedef struct ana_timeline {
    ana_run run;
    /* strings: id 1.. (0 = none) */
    char **str;
    uint32_t nstr, capstr;
    uint32_t *hash;           /* open addressing: string ids */
    uint32_t hashcap;
    tl_track *track;
    uint32_t ntrack, captrack;
    uint32_t *group;          /* (rank, core, pipe + 1) -> lane 0 track; TL_NONE */
    tl_slice *slice;
    uint32_t nslice, capslice;
    tl_arg *arg;              /* slices' arguments (tl_slice.arg, .nargs) */
    uint32_t narg, caparg;
    tl_flow *flow;            /* by tl_slice.flow - 1 */
    uint32_t nflow, capflow;
    tl_counter *counter;
    uint32_t ncounter, capcounter;
    tl_site *site;            /* by sites row index - 1 */
    uint32_t nsite;
    uint32_t *ev;             /* every event in the order a viewer reads, packed:
                                 tl_event_at unpacks one */
    uint32_t nev;
    uint64_t flows, transfers, waits;
    uint32_t str_wake, str_woken, str_cat[5];
    uint64_t critical;        /* critical path segments (one track) */
} ana_timeline;

/* ------------------------------------------------------------ Lookups
 * What the waits look up, read once rather than joined per wait
 * (ana_timeline_lookup.c). */

/* The code (1..) of text t in a short list of *n texts (strdup'd, freed by
 * the list's owner), added on first sight; 0 for NULL, -1 out of memory. */
int tl_text_code(char ***list, int *n, const char *t);

/* A wake's name parts: kind and xfer are codes into tl_wakes.kinds (1..,
 * 0 NULL), object the objects row's name (NULL: none). */
typedef struct tl_wake_shape {
    int kind, xfer;
    int64_t object_id;        /* -1: no object */
    char *object;
} tl_wake_shape;

typedef struct tl_wake {
    int64_t seq, time_ps;
    int32_t rank, core;       /* -1: NULL */
    int16_t pipe;             /* ana_pipe_from_text of its pipe; PIPE_S for NULL */
    uint32_t shape;           /* index in tl_wakes.shape */
} tl_wake;

typedef struct tl_wakes {
    sqlite3 *db;
    tl_wake *row;             /* by seq */
    size_t n, cap;
    char **kinds;             /* kind and xfer texts */
    int nkinds;
    tl_wake_shape *shape;
    size_t nshape, capshape;
    uint32_t *hash;           /* open addressing: shape index + 1 */
    size_t caphash;
    sqlite3_stmt *object_st;
} tl_wakes;

/* Every wake_events row of db. 0, or -1 with err. */
int tl_wakes_load(sqlite3 *db, tl_wakes *w, char *err, size_t errlen);
/* The wake event at seq; NULL when there is none. */
const tl_wake *tl_wakes_find(const tl_wakes *w, int64_t seq);
/* "wake: atomic", "wake: xfer_done mte3 ring_x.tail": e's name. */
void tl_wake_name(const tl_wakes *w, const tl_wake *e, char *buf, size_t len);
void tl_wakes_free(tl_wakes *w);

/* wait_labels read beside waits that come in begin_seq order. */
typedef struct tl_labels {
    sqlite3 *db;
    sqlite3_stmt *scan, *probe;
    int rc, have;             /* the scan's last step; it is on a row */
    int64_t key;              /* that row's begin_seq */
    int64_t asked;            /* the largest begin_seq asked for */
} tl_labels;

int tl_labels_open(sqlite3 *db, tl_labels *l, char *err, size_t errlen);
/* The label of the wait that began at seq into *label (NULL: none), valid
 * until the next call. 0, or -1 with err. */
int tl_labels_get(tl_labels *l, int64_t seq, const char **label, char *err, size_t errlen);
void tl_labels_close(tl_labels *l);

/* The tracks' pipes, by track id. */
typedef struct tl_track_pipe {
    int64_t id;
    int pipe;                 /* ana_pipe_from_text; PIPE_S for NULL */
} tl_track_pipe;

typedef struct tl_pipes {
    tl_track_pipe *row;
    size_t n, cap;
} tl_pipes;

int tl_pipes_load(sqlite3 *db, tl_pipes *p, char *err, size_t errlen);
/* The pipe of track; PIPE_S when the track is not in tracks. */
int tl_pipe_of(const tl_pipes *p, int64_t track);
void tl_pipes_free(tl_pipes *p);

/* Builds the timeline of db (analysis tables needed) for opts. */
int ana_timeline_build(sqlite3 *db, const ana_export_opts *opts, ana_timeline *tl, char *err,
                       size_t errlen);
void ana_timeline_free(ana_timeline *tl);

static inline const char *tl_str(const ana_timeline *tl, uint32_t id) {
    return id && id <= tl->nstr ? tl->str[id - 1] : "";
}
static inline uint64_t tl_ns(uint64_t ps) { return ps / 1000u; }
/* The flow of slice s; NULL when it has none. */
static inline const tl_flow *tl_flow_of(const ana_timeline *tl, const tl_slice *s) {
    return s->flow ? &tl->flow[s->flow - 1] : NULL;
}
/* Event i of the viewer's order: its type in the top 3 bits, its index
 * below (what the sort moves, without an index to gather through). */
#define TL_EV_IDX_BITS 29
static inline tl_event tl_event_at(const ana_timeline *tl, uint32_t i) {
    return (tl_event){.type = (uint8_t)(tl->ev[i] >> TL_EV_IDX_BITS),
                      .idx = tl->ev[i] & ((1u << TL_EV_IDX_BITS) - 1)};
}
/* The time of an event, in ps. */
uint64_t ana_timeline_event_ps(const ana_timeline *tl, const tl_event *e);

/* Asks the cache ahead for what writing event i + TL_AHEAD reads (its
 * slice or counter) and, half way, for a slice's arguments and flow:
 * events go in time order and slices lie in load order, so without it
 * nearly every event a writer writes waits for memory. */
#define TL_AHEAD 16
static inline void tl_prefetch(const ana_timeline *tl, uint32_t i) {
    if (i + TL_AHEAD < tl->nev) {
        tl_event e = tl_event_at(tl, i + TL_AHEAD);
        if (e.type == TL_EV_COUNTER) {
            __builtin_prefetch(&tl->counter[e.idx]);
        } else {
            __builtin_prefetch(&tl->slice[e.idx]);
            __builtin_prefetch((const char *)&tl->slice[e.idx + 1] - 1);
        }
    }
    if (i + TL_AHEAD / 2 < tl->nev) {
        tl_event e = tl_event_at(tl, i + TL_AHEAD / 2);
        if (e.type == TL_EV_COUNTER) return;
        const tl_slice *s = &tl->slice[e.idx];
        if (e.type == TL_EV_BEGIN && s->nargs) __builtin_prefetch(&tl->arg[s->arg]);
        else if (e.type != TL_EV_BEGIN && e.type != TL_EV_END && s->flow)
            __builtin_prefetch(&tl->flow[s->flow - 1]);
    }
}

/* Ordering the events (ana_timeline_order.c): each event the builder emits
 * goes to the next slot of its time's bucket, and each bucket is then
 * sorted by the time within it; ties keep the order they were emitted in. */
typedef struct tl_order {
    uint64_t *ev;             /* (ns in the bucket << 32 | event packed as in ev) */
    size_t *at, *end;         /* each bucket's next slot and its end */
    size_t nb, n;
    uint64_t mask;            /* ns in the bucket: ns & mask; the bucket: ns >> shift */
    unsigned shift;
} tl_order;
/* Sizes o for the events of tl's slices, flows and counters as they are
 * now (a slice's begin and end, a flow's wake and woken, each counter):
 * 0, or -1 out of memory (or too many events). tl_order_free frees o
 * either way. */
int tl_order_start(tl_order *o, const ana_timeline *tl);
/* Emits an event of type for slice or counter idx at ps: 0, or -1 when it
 * was not counted by tl_order_start. */
static inline int tl_order_emit(tl_order *o, uint64_t ps, uint8_t type, uint32_t idx) {
    uint64_t ns = tl_ns(ps);
    size_t b = (size_t)(ns >> o->shift);
    if (b >= o->nb || o->at[b] == o->end[b] || idx >> TL_EV_IDX_BITS) return -1;
    o->ev[o->at[b]++] = (ns & o->mask) << 32 | (uint64_t)type << TL_EV_IDX_BITS | idx;
    return 0;
}
/* Sorts each bucket and hands the events to tl->ev and tl->nev: 0, or -1
 * out of memory or when fewer events were emitted than counted. */
int tl_order_finish(tl_order *o, ana_timeline *tl);
/* Frees what o still holds (tl->ev, once handed over, is the timeline's). */
void tl_order_free(tl_order *o);

#endif
