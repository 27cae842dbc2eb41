/*
 * replay_gdb.c - the state the gdb extension (replayer/npurr_gdb.py) reads.
 *
 * gdb cannot call a function in the stopped process on every machine: on
 * CPUs with AMX, Debian 12's gdb 13.1 fails to write the XSAVE state back
 * ("Couldn't write extended state status"), and `set may-call-functions
 * off` forbids it anywhere. So nothing here is called by the debugger.
 * The replayer keeps a view of the run in its own memory, and the
 * extension only reads memory and writes two words:
 *
 *   npurr_gdb_view      a versioned header (magic "npurrgdb", version):
 *                       seq, virtual time and matched count after the last
 *                       event; the cores' records (replay_core: state,
 *                       role, local time, the open wait and its kernel
 *                       line, the addresses of its saved context); the
 *                       rings (head, tail, capacity); the snapshot table;
 *                       at a break, the text of `npurr when`;
 *   engine break seq    the extension writes the target of a forward
 *                       `npurr goto` through view.break_seq_slot and
 *                       continues: the engine stops there as at --break-at;
 *   npurr_gdb_resume_seq  the target handed to a held snapshot
 *                       (replay_ckpt.c).
 *
 * The view is kept in two ways. After every event the observer updates the
 * record of the core that issued it (a few stores: its clock, wait opened
 * or closed, role, end) and, when the event names a ring's head or tail
 * word, reads that ring again; the clock of the view moves with it. That
 * makes the view right at any stop, a breakpoint the user set in a kernel
 * included, up to what only the engine knows between events (a woken core
 * not yet resumed, the current value of a word a core waits on). At a
 * break the replayer itself makes (--break-at, goto), it reads every core
 * and ring from the engine before raising SIGTRAP, so the view is exact
 * there; `refreshed_seq` tells the extension which seq that was. Which
 * core is running the extension finds itself: the one whose stack holds
 * the stack pointer.
 *
 * The break globals tell the extension's stop handler which kernel frame
 * to select after the SIGTRAP of a break point: the function and line of
 * the call site that issues the event.
 */
#include "replayer/replay_internal.h"

#include <stdlib.h>
#include <string.h>

/* Bumped whenever a field the extension reads changes meaning or layout;
 * npurr_gdb.py refuses a view whose version it does not know. */
#define NPURR_GDB_VIEW_VERSION 1

typedef struct npurr_gdb_view_t {
    char magic[8];               /* "npurrgdb" */
    uint32_t version;
    int32_t live;                /* 1 while a replay is attached */
    uint64_t seq;                /* the last executed event */
    uint64_t time;               /* its virtual time, ps */
    uint64_t matched;            /* events matched against the trace so far */
    uint64_t refreshed_seq;      /* cores' wait texts and rings exact at this seq */
    int32_t ncores, num_aic, cores_per_rank, nrings;
    replay_core *cores;
    replay_ring *rings;
    uint64_t *break_seq_slot;    /* the engine's break: written by `npurr goto` */
    int32_t at_break;            /* stopped before event break_seq by the replayer */
    int32_t break_on_stack;
    const replay_ckpts *ck;      /* snapshots (seq, pid) `npurr goto` can resume */
    char when[2048];             /* at a break: `npurr when` */
} npurr_gdb_view_t;

npurr_gdb_view_t npurr_gdb_view = {.magic = "npurrgdb", .version = NPURR_GDB_VIEW_VERSION};

volatile uint64_t npurr_gdb_break_seq;     /* the break being stopped at, 0 none */
volatile uint64_t npurr_gdb_break_serial;  /* counts breaks: a new value is a new stop */
volatile int npurr_gdb_break_on_stack;     /* 1: a kernel frame is up the stack */
volatile int npurr_gdb_break_line;
char npurr_gdb_break_file[1024];
char npurr_gdb_break_func[256];
volatile uint64_t npurr_gdb_resume_seq;    /* set by `npurr goto` in a held snapshot */

static void read_ring(replay *rp, replay_ring *r) {
    r->head = engine_word_value(rp->e, r->head_obj);
    r->tail = engine_word_value(rp->e, r->tail_obj);
}

/* The rings declared so far, and which object ids are their words. */
static int build_rings(replay *rp) {
    engine *e = rp->e;
    uint32_t count = engine_object_count(e);
    int n = 0;
    for (uint32_t id = 1; id <= count; id++) {
        const engine_object *o = engine_object_get(e, id);
        n += o && o->kind == OBJ_RING;
    }
    replay_ring *rings = calloc(n ? (size_t)n : 1, sizeof *rings);
    int32_t *map = malloc(((size_t)count + 1) * sizeof *map);
    if (!rings || !map) {
        free(rings);
        free(map);
        return -1;
    }
    for (uint32_t id = 0; id <= count; id++) map[id] = -1;
    int k = 0;
    for (uint32_t id = 1; id <= count; id++) {
        const engine_object *o = engine_object_get(e, id);
        if (!o || o->kind != OBJ_RING) continue;
        replay_ring *r = &rings[k];
        r->name = engine_string(e, o->name);
        r->level = o->role ? engine_string(e, o->role) : "";
        r->producer = o->producer_rank;
        r->consumer = o->consumer_rank;
        r->capacity = o->size;
        r->head_obj = o->head;
        r->tail_obj = o->tail;
        if (o->head && o->head <= count) map[o->head] = k;
        if (o->tail && o->tail <= count) map[o->tail] = k;
        read_ring(rp, r);
        k++;
    }
    free(rp->rings);
    free(rp->ring_of_object);
    rp->rings = rings;
    rp->nrings = n;
    rp->ring_of_object = map;
    rp->nobjects = count;
    npurr_gdb_view.rings = rings;
    npurr_gdb_view.nrings = n;
    return 0;
}

static void set_wait_site(replay *rp, replay_core *c, uint32_t site) {
    engine_site s;
    c->wait_site = site;
    if (site && engine_site_get(rp->e, site, &s)) {
        c->wait_file = s.file;
        c->wait_func = s.func;
        c->wait_line = s.line;
    } else {
        c->wait_file = c->wait_func = NULL;
        c->wait_line = 0;
    }
}

/* One core's record from the engine: what only the engine knows between
 * events (blocked or woken, the current value of the awaited word). */
static void read_core(replay *rp, int i) {
    replay_core *c = &rp->cores[i];
    engine_core_state st;
    engine_core_state_get(rp->e, i, &st);
    c->rank = st.rank;
    c->core = st.core;
    c->launched = (uint8_t)st.launched;
    c->blocked = (uint8_t)st.blocked;
    if (st.finished) c->finished = 1;
    if (st.faulted) c->faulted = 1;
    c->role = st.role && st.role[0] ? st.role : st.kernel;
    c->now = st.now;
    snprintf(c->waiting_on, sizeof c->waiting_on, "%s", st.waiting_on);
    c->described_seq = engine_seq(rp->e);
}

int replay_view_attach(replay *rp) {
    for (int i = 0; i < rp->ncores; i++) {
        read_core(rp, i);
        engine_core_debug_slots(rp->e, i, &rp->cores[i].slots);
    }
    if (build_rings(rp)) return -1;
    npurr_gdb_view.cores = rp->cores;
    npurr_gdb_view.ncores = rp->ncores;
    npurr_gdb_view.num_aic = rp->num_aic;
    npurr_gdb_view.cores_per_rank = rp->cores_per_rank;
    npurr_gdb_view.break_seq_slot = engine_break_seq_slot(rp->e);
    npurr_gdb_view.ck = &rp->ck;
    npurr_gdb_view.seq = npurr_gdb_view.time = npurr_gdb_view.matched = 0;
    npurr_gdb_view.refreshed_seq = 0;
    npurr_gdb_view.at_break = 0;
    npurr_gdb_view.live = 1;
    return 0;
}

void replay_view_detach(replay *rp) {
    if (npurr_gdb_view.cores == rp->cores) {
        npurr_gdb_view.live = 0;
        npurr_gdb_view.cores = NULL;
        npurr_gdb_view.rings = NULL;
        npurr_gdb_view.ncores = npurr_gdb_view.nrings = 0;
        npurr_gdb_view.break_seq_slot = NULL;
        npurr_gdb_view.ck = NULL;
    }
    free(rp->rings);
    free(rp->ring_of_object);
    rp->rings = NULL;
    rp->ring_of_object = NULL;
}

/* On the replay's hot path: a handful of stores for most events. */
void replay_view_event(replay *rp, const engine_event *ev) {
    npurr_gdb_view.seq = ev->seq;
    npurr_gdb_view.time = ev->time;
    npurr_gdb_view.matched = rp->v.matched;
    if (ev->object && rp->ring_of_object) {
        if (ev->object > rp->nobjects) build_rings(rp);   /* declared during the run */
        int32_t k = ev->object <= rp->nobjects ? rp->ring_of_object[ev->object] : -1;
        if (k >= 0) read_ring(rp, &rp->rings[k]);
    }
    int i = replay_core_index(rp, ev->rank, ev->core);
    if (i < 0 || ev->kind == EV_RUN_END) return;
    replay_core *c = &rp->cores[i];
    c->last_seq = ev->seq;
    c->now = ev->time;
    switch (ev->kind) {
    case EV_KERNEL_BEGIN: c->started = 1; break;
    case EV_KERNEL_END: c->finished = 1; c->wait_seq = 0; c->blocked = 0; break;
    case EV_FAULT: c->faulted = 1; break;
    case EV_ROLE: c->role = engine_string(rp->e, (uint32_t)ev->value); break;
    case EV_FLAG_WAIT_BEGIN: case EV_XCORE_WAIT_BEGIN: case EV_GM_WAIT_BEGIN:
    case EV_BARRIER_BEGIN: case EV_PIPE_WAIT_BEGIN:
        c->wait_seq = ev->seq;
        c->wait_kind = ev->kind;
        c->wait_what = engine_event_kind_name(ev->kind);
        c->blocked = 1;
        set_wait_site(rp, c, ev->site);
        break;
    case EV_FLAG_WAIT_END: case EV_XCORE_WAIT_END: case EV_GM_WAIT_END:
    case EV_BARRIER_END: case EV_PIPE_WAIT_END:
        c->wait_seq = 0;
        c->blocked = 0;
        break;
    case EV_BLOCKED:
        if (!rp->v.blocked) rp->v.first_blocked_seq = ev->seq;
        rp->v.blocked++;
        break;
    default: break;
    }
}

void replay_gdb_note_break(replay *rp, const engine_event *ev, int on_core_stack) {
    engine_site s;
    for (int i = 0; i < rp->ncores; i++) read_core(rp, i);
    if (rp->nobjects != engine_object_count(rp->e)) build_rings(rp);
    for (int k = 0; k < rp->nrings; k++) read_ring(rp, &rp->rings[k]);
    npurr_gdb_view.refreshed_seq = engine_seq(rp->e);
    npurr_gdb_view.at_break = 1;
    npurr_gdb_view.break_on_stack = on_core_stack;
    replay_out o = {NULL, npurr_gdb_view.when, sizeof npurr_gdb_view.when, 0};
    npurr_gdb_view.when[0] = 0;
    replay_text_when(rp, &o);

    npurr_gdb_break_line = 0;
    npurr_gdb_break_file[0] = npurr_gdb_break_func[0] = 0;
    if (ev->site && engine_site_get(rp->e, ev->site, &s)) {
        npurr_gdb_break_line = s.line;
        snprintf(npurr_gdb_break_file, sizeof npurr_gdb_break_file, "%s", s.file ? s.file : "");
        snprintf(npurr_gdb_break_func, sizeof npurr_gdb_break_func, "%s", s.func ? s.func : "");
    }
    npurr_gdb_break_on_stack = on_core_stack;
    npurr_gdb_break_seq = ev->seq;
    npurr_gdb_break_serial++;
}

void replay_gdb_note_resume(void) {
    npurr_gdb_view.at_break = 0;
    npurr_gdb_view.when[0] = 0;
    npurr_gdb_break_seq = 0;
}
