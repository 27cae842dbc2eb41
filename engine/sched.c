/*
 * sched.c - the deterministic discrete-event scheduler.
 *
 * One binary heap holds everything that will happen: cores ready to resume
 * and transfers about to complete, ordered by (time, key) where key is the
 * issuing core's seeded priority and that core's item counter. A core runs
 * ahead without switching as long as its local time is still the earliest
 * thing in the heap; the moment a device call would touch shared state
 * later than some pending event, it yields (eng_sync). So every access
 * happens in global time order, exactly one core runs at a time, and the
 * event stream is a function of the configuration and the seed.
 *
 * A core that stops does the loop's work itself while the next items are
 * transfers: it runs them on its own stack, in the loop's order, and goes on
 * without a switch if it comes first then (switch_to_scheduler, yield_at).
 * The loop is only needed to start cores and to end a run or a window.
 */
#include "internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local core *g_current;

#define KEY_COUNTER_MASK ((1ULL << ENG_KEY_COUNTER_BITS) - 1)

/* A tie key names its core (the priority is unique per core) and counts that
 * core's items: which process pushes an item never enters its key, so a run
 * split over processes orders ties exactly as one process does. */
uint64_t eng_core_key(core *c) {
    return (c->prio << ENG_KEY_COUNTER_BITS) | (c->counter++ & KEY_COUNTER_MASK);
}

/* ------------------------------------------------------------ heap */
static inline int item_less(const qitem *a, const qitem *b) {
    return a->time < b->time || (a->time == b->time && a->key < b->key);
}

void eng_push(engine *e, uint64_t time, uint64_t key, qitem_type type, uint32_t idx) {
    if (e->heap_n == e->heap_cap) {
        e->heap_cap = e->heap_cap ? e->heap_cap * 2 : 1024;
        e->heap = realloc(e->heap, e->heap_cap * sizeof *e->heap);
        if (!e->heap) abort();
    }
    qitem it = {time, key, type, idx};
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!item_less(&it, &e->heap[parent])) break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = it;
}

/* it goes into the hole at the root, sinking below smaller children. */
static void heap_sift_root(engine *e, qitem it) {
    size_t i = 0, n = e->heap_n;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n) break;
        size_t m = (l + 1 < n && item_less(&e->heap[l + 1], &e->heap[l])) ? l + 1 : l;
        if (!item_less(&e->heap[m], &it)) break;
        e->heap[i] = e->heap[m];
        i = m;
    }
    e->heap[i] = it;
}

static qitem heap_pop(engine *e) {
    qitem top = e->heap[0];
    qitem last = e->heap[--e->heap_n];
    if (e->heap_n) heap_sift_root(e, last);
    return top;
}

/* A yielding core queues itself behind the first item, which the loop runs
 * next: the core takes the root's place and sinks only as far as its time
 * (just past the root's) takes it, instead of rising from the bottom and
 * the root's replacement sinking from the top. Keys are unique, so the
 * order items come out in does not depend on where they sit. */
static void queue_behind_first(engine *e, qitem it) {
    e->next = e->heap[0];
    e->has_next = 1;
    heap_sift_root(e, it);
}

/* ------------------------------------------------------------ events */
uint64_t eng_emit(engine *e, engine_event *ev) {
    uint64_t seq = e->seq + 1;
    /* an emitting call syncs first: no event follows a local step (eng_sync_local) */
    assert(!g_current || !g_current->after_local);
    if (seq == e->break_seq && e->break_fn) {
        ev->seq = seq;
        e->break_fn(e->break_ctx, ev);
    }
    e->seq = seq;
    ev->seq = seq;
    if (ev->site) e->last_site = ev->site;
    if (e->obs.on_event) e->obs.on_event(e->obs.ctx, ev);
    return seq;
}

/* ------------------------------------------------------------ cores */
core *eng_current(const char *api) {
    if (!g_current) {
        fprintf(stderr, "npurr: %s called outside a kernel running on an emulated core\n", api);
        abort();
    }
    g_current->calls++;   /* a poll loop is a load with no other call between (dev_gm_load) */
    return g_current;
}

/* ------------------------------------------------------------ the queue */
/* The first item: the one a yield took out (e->next), else the heap's root. */
static const qitem *queue_peek(const engine *e) {
    return e->has_next ? &e->next : e->heap_n ? &e->heap[0] : NULL;
}

static qitem queue_take(engine *e) {
    if (!e->has_next) return heap_pop(e);
    e->has_next = 0;
    return e->next;
}

/* The loop runs the first item now, unless the run or its window ends
 * there (outcome, window end, a stop, the watchdog: the loop's to handle). */
static int loop_runs(const engine *e, const qitem *it) {
    return e->outcome == OUTCOME_RUNNING && it->time < e->window_end && !e->stop_requested &&
           !(e->cfg.watchdog_ps && it->time > e->cfg.watchdog_ps);
}

/* An item's turn begins: the clock, and its segment (a local step's has none). */
static void begin_item(engine *e, const qitem *it) {
    e->now = it->time;
    if (e->obs.on_segment && it->type != Q_CORE_LOCAL) e->obs.on_segment(e->obs.ctx, it->time, it->key);
}

/* A transfer's turn (completion, RDMA stage): the loop runs it, or a core
 * that stops runs it on its own stack (switch_to_scheduler, yield_at). */
static void run_transfer(engine *e, const qitem *it) {
    switch (it->type) {
    case Q_XFER: eng_xfer_complete(e, &e->xfers[it->idx]); break;
    case Q_RDMA_TX: eng_rdma_tx(e, &e->xfers[it->idx]); break;
    case Q_RDMA_ARRIVE: eng_rdma_arrive(e, &e->xfers[it->idx]); break;
    case Q_RDMA_ACK: eng_rdma_ack(e, &e->xfers[it->idx]); break;
    default: abort();
    }
}

static int is_core_item(const qitem *it) { return it->type == Q_CORE || it->type == Q_CORE_LOCAL; }

/* c stops (queued or blocked) and does what the loop would do next, in
 * the loop's order, without switching to it: runs the transfers that come
 * first on its own stack, then resumes the core whose item comes first:
 * itself without a switch (a completion woke it, or it was queued), another
 * by one switch instead of two. The loop takes over when the run or its
 * window ends there, and for a core whose coroutine has not started yet
 * (its first switch tells a sanitizer where the loop's stack is). */
static void switch_to_scheduler(core *c) {
    engine *e = c->e;
    g_current = NULL;
    for (;;) {
        const qitem *first = queue_peek(e);
        if (!first || !loop_runs(e, first)) break;
        if (!is_core_item(first)) {
            qitem it = queue_take(e);
            begin_item(e, &it);
            run_transfer(e, &it);
            continue;
        }
        core *t = &e->cores[first->idx];
        if (!t->entered) break;
        qitem it = queue_take(e);
        begin_item(e, &it);
        e->current = t;
        if (t != c) {
            g_current = t;
            coro_switch(&c->co, &t->co);
        }
        goto resumed;
    }
    coro_switch(&c->co, &e->sched_co);
resumed:   /* by the loop, by another core or by itself */
    g_current = c;
    c->status = CS_RUNNING;
    e->now = c->now;
}

/* The bookkeeping of every step, yield or not: the step count the delay
 * points are drawn on, and the tie key the step is taken under. */
static uint64_t step_key(engine *e, core *c) {
    e->sched_steps++;
    if (e->delay) eng_delay_step(c);
    return eng_core_key(c);
}

/* Something queued comes before c's step at (now, key). */
static int queue_first(const engine *e, const core *c, uint64_t key) {
    const qitem *top = e->heap_n ? &e->heap[0] : NULL;
    return top && (top->time < c->now || (top->time == c->now && top->key < key));
}

/* Reasons to yield whatever is queued: the window ends, a stop, the watchdog. */
static int must_yield(const engine *e, const core *c) {
    return c->now >= e->window_end || e->stop_requested ||
           (e->cfg.watchdog_ps && c->now > e->cfg.watchdog_ps);
}

/* The transfers queued before c's step (me) run on c's stack, as the loop
 * would run them next; returns 1 if c's step comes first then and may run
 * at once, as if queued and popped (the heap never holds it). */
static int run_transfers_before(engine *e, core *c, const qitem *me) {
    g_current = NULL;
    for (;;) {
        const qitem *top = e->heap_n ? &e->heap[0] : NULL;
        if (!top || !item_less(top, me)) break;
        if (is_core_item(top) || !loop_runs(e, top)) return 0;
        qitem it = heap_pop(e);
        begin_item(e, &it);
        run_transfer(e, &it);
    }
    if (!loop_runs(e, me)) return 0;
    begin_item(e, me);
    g_current = c;
    c->status = CS_RUNNING;
    e->now = c->now;
    return 1;
}

static void yield_at(engine *e, core *c, uint64_t time, uint64_t key, qitem_type type) {
    c->status = CS_READY;
    c->lagging = 0;
    c->after_local = 0;
    qitem me = {time, key, type, (uint32_t)(c - e->cores)};
    if (run_transfers_before(e, c, &me)) return;
    if (e->heap_n && item_less(&e->heap[0], &me)) queue_behind_first(e, me);
    else eng_push(e, time, key, type, me.idx);
    switch_to_scheduler(c);
}

void eng_sync(core *c) {
    engine *e = c->e;
    /* Yielding queues the core under this key; going on without a switch is
     * a segment of its own under it, as if queued and popped here. */
    uint64_t mykey = step_key(e, c);
    if (queue_first(e, c, mykey) || must_yield(e, c)) {
        yield_at(e, c, c->now, mykey, Q_CORE);
        return;
    }
    c->after_local = 0;
    if (e->obs.on_segment) e->obs.on_segment(e->obs.ctx, c->now, mykey);
    e->now = c->now;
}

/* A local step past earlier queue items changes nothing they read (only
 * c's own transfers reach its local memory, and those that touch the bytes
 * first are waited for), and emits nothing: every call that emits or
 * reads shared state syncs first (eng_sync), which yields while anything
 * is earlier. So the stream is the one a yield at every step gives, minus
 * a switch per step. Such a step counts and keys as any other, opens no
 * segment (it has no events, and whether it yields depends on what else
 * one process's queue holds, so a split run's segments would differ), and
 * a checker (on_hook) sees every step in order. */
void eng_sync_local(core *c, const mseg *seg, uint64_t off, uint64_t len) {
    engine *e = c->e;
    if (e->obs.on_hook) {
        eng_sync(c);
        return;
    }
    uint64_t mykey = step_key(e, c);
    int first = queue_first(e, c, mykey);
    if (must_yield(e, c) || (first && eng_local_pending_conflict(c, seg, off, len))) {
        yield_at(e, c, c->now, mykey, Q_CORE_LOCAL);
    } else if (first) {
        c->lagging = 1;
    } else {
        e->now = c->now;
    }
    c->after_local = 1;
    c->local_time = c->now;
    c->local_key = mykey;
}

/* An event after local steps (only a fault emits without syncing first):
 * it goes where a step that opened its segment would have put it. */
static void catch_up(engine *e, core *c) {
    if (c->lagging) {
        yield_at(e, c, c->local_time, c->local_key, Q_CORE);
        e->now = c->local_time;
    } else if (c->after_local && e->obs.on_segment) {
        e->obs.on_segment(e->obs.ctx, c->local_time, c->local_key);
    }
    c->after_local = 0;
}

void eng_advance(core *c, uint64_t ps) { c->now += ps; }

void eng_wait_on(core *c, wait_kind kind, uint32_t site, int64_t expected) {
    c->wait = kind;
    c->wait_pipe = PIPE_S;
    c->wait_site = site;
    c->wait_expected = expected;
    c->wait_object = 0;
    c->wait_addr.a = 0;
    c->wait_begin_time = c->now;
}

void eng_block(core *c) {
    c->status = CS_BLOCKED;
    switch_to_scheduler(c);
}

void eng_wake(engine *e, core *c, uint64_t t, int64_t value, uint64_t seq, uint32_t track1) {
    c->wake_value = value;
    c->wake_seq = seq;
    c->wake_track = track1;
    if (t > c->now) c->now = t;
    c->status = CS_READY;
    c->wait = WAIT_NONE;
    eng_push(e, c->now, eng_core_key(c), Q_CORE, (uint32_t)(c - e->cores));
}

static void flag_leftovers(core *c) {
    for (int ev = 1; ev < HARD_EVENT_COUNT; ev++)
        for (int id = 0; id < FLAG_IDS; id++)
            if (c->flags[ev][id].count)
                eng_fault(c, (dev_site){"(kernel end)", 0, "kernel"},
                          "SetFlag(%s, %d) was never matched by a WaitFlag before the kernel ended",
                          engine_hard_event_name(ev), id);
}

static void core_main(void *arg) {
    core *c = arg;
    engine *e = c->e;
    coro_entered(&e->sched_co);
    c->entered = 1;
    g_current = c;
    c->status = CS_RUNNING;
    e->now = c->now;
    launch_info *l = &e->launches[c->launch];
    engine_event ev = EV_INIT(c, EV_KERNEL_BEGIN, PIPE_S);
    ev.time = c->now;
    ev.value = l->name_id;
    ev.aux = c->block_idx;
    c->last_seq = eng_emit(e, &ev);
    l->fn(l->args);
    /* The kernel returns when its scalar code ends; it is done when every
     * queued pipe operation has completed too. */
    uint64_t end = c->now;
    for (int p = 0; p < PIPE_COUNT; p++)
        if (c->pipes[p].done_at > end) end = c->pipes[p].done_at;
    c->now = end;
    eng_sync(c);
    eng_rdma_wait_acks(c, 0, 0);   /* and every RDMA op it posted has been acked */
    eng_hook_sync(c, HOOK_KERNEL_RETURN, 0, 0, (dev_site){"(kernel end)", 0, "kernel"});
    flag_leftovers(c);
    eng_role_leave(c);
    engine_event ee = EV_INIT(c, EV_KERNEL_END, PIPE_S);
    ee.time = c->now;
    ee.value = l->name_id;
    c->last_seq = eng_emit(e, &ee);
    c->status = CS_FINISHED;
    e->finished_cores++;
    g_current = NULL;
    coro_switch(&c->co, &e->sched_co);
    abort();  /* a finished core is never resumed */
}

/* ------------------------------------------------------------ faults */
void eng_stop(engine *e, engine_outcome outcome, const char *msg) {
    if (e->outcome != OUTCOME_RUNNING) return;
    e->outcome = outcome;
    snprintf(e->message, sizeof e->message, "%s", msg);
}

void eng_fault(core *c, dev_site s, const char *fmt, ...) {
    engine *e = c->e;
    char what[ENGINE_ERRLEN - 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char msg[ENGINE_ERRLEN];
    snprintf(msg, sizeof msg, "fault at %s:%d (%s), rank %d %s%d: %s", s.file, s.line, s.func,
             c->rank, c->is_aic ? "AIC" : "AIV", c->is_aic ? c->index : c->index - e->n_aic, what);
    catch_up(e, c);
    eng_stop(e, OUTCOME_FAULT, msg);
    engine_event ev = EV_INIT(c, EV_FAULT, PIPE_S);
    ev.time = c->now;
    ev.value = eng_intern(e, msg);
    ev.site = s.line ? eng_site(e, s) : 0;
    eng_emit(e, &ev);
    c->status = CS_FAULTED;
    g_current = NULL;
    coro_switch(&c->co, &e->sched_co);
    abort();  /* a faulted core is never resumed */
}

/* ------------------------------------------------------------ run */
void engine_set_observer(engine *e, const engine_observer *obs) {
    if (obs) e->obs = *obs; else memset(&e->obs, 0, sizeof e->obs);
}

void engine_set_break(engine *e, uint64_t seq, engine_break_fn fn, void *ctx) {
    e->break_seq = seq;
    e->break_fn = fn;
    e->break_ctx = ctx;
}

void engine_request_stop(engine *e) { e->stop_requested = 1; }
uint64_t engine_now(const engine *e) { return e->now; }
uint64_t engine_seq(const engine *e) { return e->seq; }

int engine_running_core(const engine *e, int *rank, int *core, engine_site *last) {
    memset(last, 0, sizeof *last);
    if (e->last_site) (void)engine_site_get(e, e->last_site, last);
    if (!g_current || g_current->e != e) return 0;
    *rank = g_current->rank;
    *core = g_current->index;
    return 1;
}
uint64_t engine_sched_steps(const engine *e) { return e->sched_steps; }

void eng_emit_blocked(engine *e) {
    int n = e->n_ranks * e->cores_per_rank;
    for (int i = 0; i < n; i++) {
        core *c = &e->cores[i];
        if (c->launch < 0 || c->status == CS_FINISHED || c->status == CS_IDLE) continue;
        engine_event ev = EV_INIT(c, EV_BLOCKED, c->wait == WAIT_NONE ? PIPE_S : c->wait_pipe);
        ev.time = e->now;
        ev.addr = c->wait_addr.a;
        ev.aux = c->wait_expected;
        ev.sub = (uint8_t)(c->wait == WAIT_GM ? c->wait_cond : c->wait_flag);
        ev.object = c->wait_object;
        ev.site = c->wait_site;
        ev.link = c->wait_begin_seq;
        if (c->wait == WAIT_GM) {
            uint8_t *p = eng_gm_ptr(e, c->wait_addr, (uint64_t)c->wait_width);
            ev.value = p ? eng_read_word(p, c->wait_width) : 0;
        }
        eng_emit(e, &ev);
    }
}

/* Every launched core of this process's ranks becomes a coroutine, ready at
 * time 0. */
int eng_start_cores(engine *e, char *err, size_t errlen) {
    int n = e->n_ranks * e->cores_per_rank;
    for (int i = 0; i < n; i++) {
        core *c = &e->cores[i];
        if (c->launch < 0 || !eng_local_rank(e, c->rank)) continue;
        if (coro_init(&c->co, eng_coro_stack_size(), core_main, c) != 0) {
            snprintf(err, errlen, "cannot map a coroutine stack for rank %d core %d (out of memory?)",
                     c->rank, c->index);
            return ENGINE_ERR;
        }
        c->status = CS_READY;
        e->started_cores++;
        eng_push(e, 0, eng_core_key(c), Q_CORE, (uint32_t)i);
    }
    return ENGINE_OK;
}

/* The discrete-event loop: completions and core resumptions in (time, tie
 * key) order until the run ends, stops or passes the watchdog, or (split)
 * the window ends. */
void eng_run_loop(engine *e) {
    for (;;) {
        const qitem *first = queue_peek(e);
        if (e->outcome != OUTCOME_RUNNING || !first || first->time >= e->window_end) break;
        if (e->stop_requested) {
            eng_stop(e, OUTCOME_INTERRUPTED, "the run was stopped on request (Ctrl-C or SIGTERM)");
            break;
        }
        qitem it = queue_take(e);
        if (e->cfg.watchdog_ps && it.time > e->cfg.watchdog_ps) {
            char msg[ENGINE_ERRLEN];
            snprintf(msg, sizeof msg,
                     "virtual time passed %.3f us with cores still running (livelock?)",
                     (double)e->cfg.watchdog_ps / 1e6);
            e->now = e->cfg.watchdog_ps;
            eng_stop(e, OUTCOME_WATCHDOG, msg);
            eng_push(e, it.time, it.key, (qitem_type)it.type, it.idx);
            break;
        }
        begin_item(e, &it);
        if (!is_core_item(&it)) {
            run_transfer(e, &it);
            continue;
        }
        core *c = &e->cores[it.idx];
        e->current = c;
        g_current = c;
        coro_switch(&e->sched_co, &c->co);
        g_current = NULL;
        e->current = NULL;
    }
    if (e->has_next) {   /* left for a later window or nobody: back into the queue */
        e->has_next = 0;
        eng_push(e, e->next.time, e->next.key, (qitem_type)e->next.type, e->next.idx);
    }
}

int eng_blocked_count(const engine *e) {
    int n = e->n_ranks * e->cores_per_rank, blocked = 0;
    for (int i = 0; i < n; i++)
        if (e->cores[i].launch >= 0 && e->cores[i].status == CS_BLOCKED) blocked++;
    return blocked;
}

/* Nothing left to run: completed, or a deadlock naming how many cores are
 * blocked; blocked waits are closed and count up to the end. */
static void finish_outcome(engine *e) {
    int n = e->n_ranks * e->cores_per_rank;
    if (e->outcome == OUTCOME_RUNNING) {
        if (e->finished_cores == e->started_cores) {
            eng_stop(e, OUTCOME_COMPLETED, "completed");
        } else {
            int blocked = eng_blocked_count(e);
            char msg[ENGINE_ERRLEN];
            snprintf(msg, sizeof msg, "%d core%s blocked and nothing left to happen at %.3f us",
                     blocked, blocked == 1 ? "" : "s", (double)e->now / 1e6);
            eng_stop(e, OUTCOME_DEADLOCK, msg);
        }
    }
    if (e->outcome == OUTCOME_DEADLOCK || e->outcome == OUTCOME_WATCHDOG) eng_emit_blocked(e);
    for (int i = 0; i < n; i++) {
        core *c = &e->cores[i];
        if (c->launch >= 0 && c->status == CS_BLOCKED && e->now > c->wait_begin_time)
            e->stall_ps += e->now - c->wait_begin_time;
    }
}

int engine_run(engine *e, engine_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    if (e->running) {
        snprintf(err, errlen, "engine_run: this engine has already run");
        return ENGINE_ERR;
    }
    if (e->n_launches == 0) {
        snprintf(err, errlen, "engine_run: no kernel was launched");
        return ENGINE_ERR;
    }
    e->running = 1;
    if (e->split) return eng_split_run(e, res, err, errlen);
    if (eng_start_cores(e, err, errlen) != ENGINE_OK) return ENGINE_ERR;
    eng_run_loop(e);
    finish_outcome(e);
    engine_event end = {.kind = EV_RUN_END, .time = e->now, .value = e->outcome};
    eng_emit(e, &end);
    res->outcome = e->outcome;
    res->end_time = e->now;
    res->events = e->seq;
    res->stall_ps = e->stall_ps;
    snprintf(res->message, sizeof res->message, "%s", e->message);
    return ENGINE_OK;
}
