/*
 * replay_text.c - events, cores and rings as text.
 *
 * One formatter serves the CLI (a FILE), the break dump and the gdb
 * commands (a fixed buffer in the inferior: no allocation while it is
 * stopped at an arbitrary point, see replay_gdb.c). Core names follow the
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

void replay_text_cores(const replay *rp, replay_out *o) {
    int running = replay_running_core(rp);
    int n[5] = {0};  /* running, ready, blocked, finished, faulted */
    for (int i = 0; i < rp->ncores; i++) {
        engine_core_state st;
        engine_core_state_get(rp->e, i, &st);
        if (!st.launched) continue;
        const replay_core *c = &rp->cores[i];
        char name[48], site[400];
        replay_fmt_core_name(rp, (uint32_t)st.rank, (uint32_t)st.core, name, sizeof name);
        const char *role = st.role && st.role[0] ? st.role : st.kernel;
        const char *state;
        if (i == running) { state = "running"; n[0]++; }
        else if (st.faulted || c->faulted) { state = "faulted"; n[4]++; }
        else if (st.finished) { state = "finished"; n[3]++; }
        else if (st.blocked) { state = "blocked"; n[2]++; }
        else if (!c->started) { state = "ready (not started)"; n[1]++; }
        else { state = "ready"; n[1]++; }
        rout_printf(o, "  %-14s %-20s %-9s t=%.6f us", name, role, state, (double)st.now / 1e6);
        if (st.blocked) {
            rout_printf(o, "  on %s", st.waiting_on[0] ? st.waiting_on
                                    : c->wait_kind ? engine_event_kind_name(c->wait_kind)
                                                   : "its own pipes");
            if (c->wait_seq) {
                replay_fmt_site(rp, c->wait_site, site, sizeof site);
                rout_printf(o, " since seq %llu at %s", (unsigned long long)c->wait_seq, site);
            }
        }
        rout_printf(o, "\n");
    }
    rout_printf(o, "  (%d running, %d ready, %d blocked, %d finished, %d faulted)\n", n[0], n[1],
                n[2], n[3], n[4]);
}

void replay_text_rings(const replay *rp, replay_out *o) {
    uint32_t count = engine_object_count(rp->e), shown = 0;
    for (uint32_t id = 1; id <= count; id++) {
        const engine_object *r = engine_object_get(rp->e, id);
        if (!r || r->kind != OBJ_RING) continue;
        int64_t head = engine_word_value(rp->e, r->head);
        int64_t tail = engine_word_value(rp->e, r->tail);
        int64_t occ = tail - head;
        const char *name = engine_string(rp->e, r->name);
        const char *level = r->role ? engine_string(rp->e, r->role) : "";
        rout_printf(o, "  %-24s %-5s rank %d -> %d  head %lld  tail %lld  capacity %llu  "
                    "occupancy %lld (%.1f%%)%s\n",
                    name ? name : "?", level ? level : "", r->producer_rank, r->consumer_rank,
                    (long long)head, (long long)tail, (unsigned long long)r->size, (long long)occ,
                    r->size ? 100.0 * (double)occ / (double)r->size : 0.0,
                    occ < 0 || (r->size && (uint64_t)occ > r->size) ? "  (inconsistent)" : "");
        shown++;
    }
    if (!shown) rout_printf(o, "  (no ring was declared)\n");
}

void replay_text_when(const replay *rp, replay_out *o) {
    char text[600], name[48], site[400];
    if (rp->at_break) {
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
    } else {
        rout_printf(o, "seq %llu (last executed), virtual time %.6f us\n",
                    (unsigned long long)engine_seq(rp->e), (double)engine_now(rp->e) / 1e6);
        int c = replay_running_core(rp);
        if (c >= 0) {
            engine_core_state st;
            engine_core_state_get(rp->e, c, &st);
            replay_fmt_core_name(rp, (uint32_t)st.rank, (uint32_t)st.core, name, sizeof name);
            rout_printf(o, "  running: %s %s, local time %.6f us\n", name,
                        st.role && st.role[0] ? st.role : st.kernel, (double)st.now / 1e6);
        } else {
            rout_printf(o, "  no core is running (the scheduler has control)\n");
        }
    }
    rout_printf(o, "  replay: %llu events matched the trace so far\n",
                (unsigned long long)rp->v.matched);
}

void replay_text_checkpoints(const replay *rp, replay_out *o) {
    for (int i = 0; i < rp->ck.n; i++)
        rout_printf(o, "%llu %d\n", (unsigned long long)rp->ck.v[i].seq, (int)rp->ck.v[i].pid);
}

void replay_write_cores(const replay *rp, FILE *out) {
    replay_out o = {out, NULL, 0, 0};
    replay_text_cores(rp, &o);
}

void replay_write_rings(const replay *rp, FILE *out) {
    replay_out o = {out, NULL, 0, 0};
    replay_text_rings(rp, &o);
}
