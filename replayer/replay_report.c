/*
 * replay_report.c - the verdict as a report and as an exit code.
 *
 * A divergence report is what a kernel engineer needs to start: which seq,
 * both events field by field with the differing fields named, the core and
 * its role, the kernel line, and the --break-at command that stops there.
 * A reproduced deadlock lists the blocked cores with the seq and line where
 * each began to wait, which are the natural --break-at targets.
 */
#include "replayer/replay_internal.h"

#include <string.h>

static void write_blocked(const replay *rp, FILE *out) {
    for (int i = 0; i < rp->ncores; i++) {
        engine_core_state st;
        engine_core_state_get(rp->e, i, &st);
        if (!st.launched || st.finished) continue;
        const replay_core *c = &rp->cores[i];
        char name[48], wait[600];
        replay_fmt_core_name(rp, (uint32_t)st.rank, (uint32_t)st.core, name, sizeof name);
        fprintf(out, "  %-14s %-20s ", name, st.role && st.role[0] ? st.role : st.kernel);
        if (!st.blocked) {
            fprintf(out, "%s\n", c->faulted ? "faulted" : "still running");
            continue;
        }
        replay_fmt_wait(rp, i, &st, wait, sizeof wait);
        fprintf(out, "blocked on %s\n", wait);
    }
}

static void write_event_pair(const replay *rp, FILE *out) {
    const replay_verdict *v = &rp->v;
    char text[600];
    if (v->has_expected) {
        replay_fmt_event(rp, &v->expected, text, sizeof text);
        fprintf(out, "  expected (trace):  seq %llu %s\n", (unsigned long long)v->expected.seq, text);
    } else {
        fprintf(out, "  expected (trace):  nothing (the trace had ended)\n");
    }
    if (v->has_actual) {
        replay_fmt_event(rp, &v->actual, text, sizeof text);
        fprintf(out, "  actual (replay):   seq %llu %s\n", (unsigned long long)v->actual.seq, text);
    } else {
        fprintf(out, "  actual (replay):   nothing (the replay had ended)\n");
    }
    const engine_event *ev = v->has_actual ? &v->actual : &v->expected;
    if (ev->kind != EV_RUN_END) {
        char name[48], site[400];
        replay_fmt_core_name(rp, ev->rank, ev->core, name, sizeof name);
        replay_fmt_site(rp, ev->site, site, sizeof site);
        int ci = replay_core_index(rp, ev->rank, ev->core);
        engine_core_state st = {0};
        if (ci >= 0) engine_core_state_get(rp->e, ci, &st);
        fprintf(out, "  on %s%s%s, kernel line %s\n", name, st.role && st.role[0] ? " " : "",
                st.role && st.role[0] ? st.role : "", site);
    }
}

void replay_write_report(const replay *rp, FILE *out) {
    const replay_verdict *v = &rp->v;
    switch (v->status) {
    case REPLAY_IDENTICAL:
        fprintf(out, "identical: %llu events, outcome %s", (unsigned long long)v->matched,
                v->recorded_outcome);
        if (strcmp(v->recorded_check, "skipped") != 0)
            fprintf(out, ", data check %s", v->recorded_check);
        fprintf(out, " (as recorded)\n");
        if (v->outcome == OUTCOME_DEADLOCK || v->outcome == OUTCOME_WATCHDOG) {
            fprintf(out, "%s reproduced: the same %llu unfinished cores, reported at seq "
                         "%llu..%llu as in the trace:\n",
                    v->recorded_outcome, (unsigned long long)v->blocked,
                    (unsigned long long)v->first_blocked_seq,
                    (unsigned long long)(v->first_blocked_seq + v->blocked - 1));
            write_blocked(rp, out);
        }
        break;
    case REPLAY_DIVERGED:
        if (v->has_expected || v->has_actual) {
            fprintf(out, "diverged at seq %llu: %s%s\n", (unsigned long long)v->seq, v->what,
                    v->has_expected && v->has_actual ? " differ" : "");
            write_event_pair(rp, out);
            fprintf(out, "  the first %llu events matched; --break-at %llu stops just before it\n",
                    (unsigned long long)v->matched, (unsigned long long)v->seq);
        } else {
            fprintf(out, "diverged at the ending: %s (all %llu events matched)\n", v->what,
                    (unsigned long long)v->matched);
        }
        break;
    case REPLAY_BREAK:
        fprintf(out, "stopped before event %llu; the %llu events before it matched the trace\n",
                (unsigned long long)v->seq, (unsigned long long)v->matched);
        break;
    case REPLAY_TRACE_ERROR:
        fprintf(out, "cannot replay: %s (the %llu events up to there were replayed and matched)\n",
                v->what, (unsigned long long)v->matched);
        break;
    case REPLAY_INTERRUPTED:
        fprintf(out, "interrupted: %s (%llu events matched)\n", v->what,
                (unsigned long long)v->matched);
        break;
    case REPLAY_RUNNING:
        fprintf(out, "the replay did not finish\n");
        break;
    }
}

int replay_exit_code(const replay *rp) {
    const replay_verdict *v = &rp->v;
    switch (v->status) {
    case REPLAY_IDENTICAL:
        if (strcmp(v->recorded_outcome, "deadlock") == 0 ||
            strcmp(v->recorded_outcome, "watchdog") == 0)
            return 3;
        if (strcmp(v->recorded_outcome, "completed") == 0)
            return strcmp(v->recorded_check, "failed") == 0 ? 4 : 0;
        return 1;
    case REPLAY_BREAK: return 0;
    case REPLAY_DIVERGED: return 5;
    default: return 1;
    }
}
