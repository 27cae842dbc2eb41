/*
 * replay_text.c - events and cores as text.
 *
 * One formatter serves the CLI (a FILE) and the break dump without a
 * debugger, and renders `npurr when` into the gdb view at a break (a fixed
 * buffer: no allocation on the way to a stop). Core names follow the
 * engine's report ("rank 1 AIV3"), times are microseconds of virtual time.
 */
#include "replayer/replay_internal.h"

#include <stdarg.h>
#include <string.h>

void rout_printf(replay_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (o->f) {
        vfprintf(o->f, fmt, ap);
    } else if (o->buf && o->len + 1 < o->cap) {
        int k = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        if (k > 0) o->len = o->len + (size_t)k < o->cap ? o->len + (size_t)k : o->cap - 1;
    }
    va_end(ap);
}

void replay_fmt_core_name(const replay *rp, uint32_t rank, uint32_t core, char *buf, size_t len) {
    if ((int)core < rp->num_aic) snprintf(buf, len, "rank %u AIC%u", rank, core);
    else snprintf(buf, len, "rank %u AIV%d", rank, (int)core - rp->num_aic);
}

void replay_fmt_site(const replay *rp, uint32_t site, char *buf, size_t len) {
    engine_site s;
    if (site && engine_site_get(rp->e, site, &s))
        snprintf(buf, len, "%s:%d (%s)", s.file, s.line, s.func ? s.func : "?");
    else if (site)
        snprintf(buf, len, "site %u (not declared in this run)", site);
    else
        snprintf(buf, len, "no kernel line");
}

void replay_fmt_wait(const replay *rp, int i, const engine_core_state *st, char *buf, size_t len) {
    const replay_core *c = &rp->cores[i];
    const char *on = st->waiting_on[0] ? st->waiting_on
                     : c->wait_kind    ? engine_event_kind_name(c->wait_kind)
                                       : "its own pipes";
    if (!c->wait_seq) {
        snprintf(buf, len, "%s", on);
        return;
    }
    char site[400];
    replay_fmt_site(rp, c->wait_site, site, sizeof site);
    snprintf(buf, len, "%s since seq %llu at %s", on, (unsigned long long)c->wait_seq, site);
}

static const char *sub_name(const engine_event *ev, char *num, size_t len) {
    switch (ev->kind) {
    case EV_XFER_ISSUE: case EV_XFER_DONE: return engine_xfer_name(ev->sub);
    case EV_FLAG_SET: case EV_FLAG_WAIT_BEGIN: case EV_FLAG_WAIT_END:
        return engine_hard_event_name(ev->sub);
    case EV_GM_WAIT_BEGIN: case EV_GM_WAIT_END: return engine_cond_name(ev->sub);
    default: snprintf(num, len, "%u", ev->sub); return num;
    }
}

void replay_fmt_event(const replay *rp, const engine_event *ev, char *buf, size_t len) {
    char who[48], num[16];
    if (ev->kind == EV_RUN_END) snprintf(who, sizeof who, "engine");
    else replay_fmt_core_name(rp, ev->rank, ev->core, who, sizeof who);
    snprintf(buf, len,
             "%s sub=%s %s pipe %s t=%.6f us addr=0x%llx len=%llu value=%lld aux=%lld link=%llu "
             "site=%u object=%u peer=%u",
             engine_event_kind_name(ev->kind), sub_name(ev, num, sizeof num), who,
             engine_pipe_name(ev->pipe), (double)ev->time / 1e6, (unsigned long long)ev->addr,
             (unsigned long long)ev->len, (long long)ev->value, (long long)ev->aux,
             (unsigned long long)ev->link, ev->site, ev->object, ev->peer);
}

int replay_running_core(const replay *rp) {
    if (!rp->in_run) return -1;
    for (int i = 0; i < rp->ncores; i++) {
        engine_core_state st;
        engine_core_state_get(rp->e, i, &st);
        if (st.running) return i;
    }
    return -1;
}

/* What a core is doing, for the lists and the summaries. */
enum { ST_RUNNING, ST_READY, ST_BLOCKED, ST_FINISHED, ST_FAULTED, ST_COUNT };
static const char *const state_names[ST_COUNT] = {"running", "ready", "blocked", "finished",
                                                  "faulted"};

static int core_state(const replay *rp, int i, int running, const engine_core_state *st) {
    const replay_core *c = &rp->cores[i];
    if (i == running) return ST_RUNNING;
    if (st->faulted || c->faulted) return ST_FAULTED;
    if (st->finished) return ST_FINISHED;
    if (st->blocked) return ST_BLOCKED;
    return ST_READY;
}

static void core_line(const replay *rp, replay_out *o, int i, int state,
                      const engine_core_state *st) {
    const replay_core *c = &rp->cores[i];
    char name[48], wait[600];
    replay_fmt_core_name(rp, (uint32_t)st->rank, (uint32_t)st->core, name, sizeof name);
    const char *role = st->role && st->role[0] ? st->role : st->kernel;
    const char *text = state == ST_READY && !c->started ? "ready (not started)" : state_names[state];
    rout_printf(o, "  %-14s %-20s %-9s t=%.6f us", name, role ? role : "", text,
                (double)st->now / 1e6);
    if (st->blocked) {
        replay_fmt_wait(rp, i, st, wait, sizeof wait);
        rout_printf(o, "  on %s", wait);
    }
    rout_printf(o, "\n");
}

/* Summary first (per state, then per role with its blocked count), then
 * every launched core: the break dump without a debugger. The gdb
 * extension formats the same listing from the view (npurr_gdb.py). */
static void replay_text_cores(const replay *rp, replay_out *o) {
    int running = replay_running_core(rp);
    int n[ST_COUNT] = {0}, launched = 0;
    enum { MAX_ROLES = 64 };
    const char *roles[MAX_ROLES];
    int role_n[MAX_ROLES], role_blocked[MAX_ROLES], nroles = 0, other = 0;
    for (int i = 0; i < rp->ncores; i++) {
        engine_core_state st;
        engine_core_state_get(rp->e, i, &st);
        if (!st.launched) continue;
        int state = core_state(rp, i, running, &st);
        n[state]++;
        launched++;
        const char *role = st.role && st.role[0] ? st.role : st.kernel ? st.kernel : "";
        int r = 0;
        while (r < nroles && strcmp(roles[r], role) != 0) r++;
        if (r == nroles) {
            if (nroles == MAX_ROLES) { other++; continue; }
            roles[nroles] = role;
            role_n[nroles] = role_blocked[nroles] = 0;
            nroles++;
        }
        role_n[r]++;
        role_blocked[r] += state == ST_BLOCKED;
    }
    rout_printf(o, "%d cores: %d running, %d ready, %d blocked, %d finished, %d faulted\n",
                launched, n[ST_RUNNING], n[ST_READY], n[ST_BLOCKED], n[ST_FINISHED],
                n[ST_FAULTED]);
    for (int r = 0; r < nroles; r++)
        rout_printf(o, "  %-24s %5d cores, %5d blocked\n", roles[r], role_n[r], role_blocked[r]);
    if (other) rout_printf(o, "  (%d cores of further roles)\n", other);
    for (int i = 0; i < rp->ncores; i++) {
        engine_core_state st;
        engine_core_state_get(rp->e, i, &st);
        if (!st.launched) continue;
        int state = core_state(rp, i, running, &st);
        core_line(rp, o, i, state, &st);
    }
}

/* `npurr when` at a break: the event about to execute and who issues it
 * (replay_gdb.c renders it into the view before raising SIGTRAP). */
void replay_text_when(const replay *rp, replay_out *o) {
    char text[600], name[48], site[400];
    const engine_event *ev = &rp->break_ev;
    replay_fmt_event(rp, ev, text, sizeof text);
    replay_fmt_site(rp, ev->site, site, sizeof site);
    rout_printf(o, "seq %llu (about to execute), virtual time %.6f us\n",
                (unsigned long long)ev->seq, (double)ev->time / 1e6);
    if (ev->kind == EV_RUN_END) {
        rout_printf(o, "  the end of the run, emitted by the scheduler\n");
    } else {
        replay_fmt_core_name(rp, ev->rank, ev->core, name, sizeof name);
        if (rp->break_on_stack)
            rout_printf(o, "  issued by %s at %s\n", name, site);
        else
            rout_printf(o, "  emitted by the scheduler for %s (kernel line %s)\n", name, site);
    }
    rout_printf(o, "  event: %s\n", text);
    rout_printf(o, "  replay: %llu events matched the trace so far\n",
                (unsigned long long)rp->v.matched);
}

void replay_write_cores(const replay *rp, FILE *out) {
    replay_out o = {out, NULL, 0, 0};
    replay_text_cores(rp, &o);
}
