/*
 * report.c - names of everything the engine emits, and the human report of
 * a run's ending: for a deadlock or a watchdog stop, every core that did not
 * finish, what it waits for (object, expected vs current value), who last
 * wrote that word, and the notes its kernel published (role, channel,
 * cached head, credits), so the report reads like a per-role dump.
 */
#include "internal.h"

#include <string.h>

const char *engine_event_kind_name(int kind) {
    static const char *names[EV_KIND_COUNT] = {
        [EV_KERNEL_BEGIN] = "kernel_begin", [EV_KERNEL_END] = "kernel_end",
        [EV_XFER_ISSUE] = "xfer_issue", [EV_XFER_DONE] = "xfer_done",
        [EV_FLAG_SET] = "flag_set", [EV_FLAG_WAIT_BEGIN] = "flag_wait_begin",
        [EV_FLAG_WAIT_END] = "flag_wait_end", [EV_XCORE_SET] = "xcore_set",
        [EV_XCORE_WAIT_BEGIN] = "xcore_wait_begin", [EV_XCORE_WAIT_END] = "xcore_wait_end",
        [EV_GM_WAIT_BEGIN] = "gm_wait_begin", [EV_GM_WAIT_END] = "gm_wait_end",
        [EV_GM_LOAD] = "gm_load", [EV_GM_STORE] = "gm_store", [EV_RING_HEAD] = "ring_head",
        [EV_RING_TAIL] = "ring_tail", [EV_ATOMIC] = "atomic", [EV_BARRIER_BEGIN] = "barrier_begin",
        [EV_BARRIER_END] = "barrier_end", [EV_PIPE_WAIT_BEGIN] = "pipe_wait_begin",
        [EV_PIPE_WAIT_END] = "pipe_wait_end", [EV_ROLE] = "role", [EV_NOTE] = "note",
        [EV_FAULT] = "fault", [EV_BLOCKED] = "blocked", [EV_RUN_END] = "run_end",
    };
    return kind > 0 && kind < EV_KIND_COUNT && names[kind] ? names[kind] : "unknown";
}

const char *engine_xfer_name(int xfer) {
    static const char *names[XFER_KIND_COUNT] = {
        [XFER_MTE2] = "mte2", [XFER_MTE3] = "mte3", [XFER_MTE1] = "mte1", [XFER_FIX] = "fixpipe",
        [XFER_VEC] = "vector", [XFER_CUBE] = "cube", [XFER_HCCS_PUT] = "hccs_put",
        [XFER_HCCS_GET] = "hccs_get", [XFER_RDMA_WRITE] = "rdma_write",
        [XFER_RDMA_ATOMIC] = "rdma_atomic", [XFER_BATCHWRITE] = "batchwrite",
        [XFER_REMOTE_STORE] = "remote_store",
    };
    return xfer > 0 && xfer < XFER_KIND_COUNT && names[xfer] ? names[xfer] : "unknown";
}

const char *engine_pipe_name(int pipe) {
    static const char *names[PIPE_COUNT] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "NIC", "AICPU"};
    if (pipe == PIPE_ALL) return "ALL";
    return pipe >= 0 && pipe < PIPE_COUNT ? names[pipe] : "unknown";
}

const char *engine_cond_name(int cond) {
    static const char *names[] = {"?", "==", "!=", ">=", ">", "<=", "<"};
    return cond >= COND_EQ && cond <= COND_LT ? names[cond] : "?";
}

const char *engine_outcome_name(int outcome) {
    switch (outcome) {
    case OUTCOME_RUNNING: return "running";
    case OUTCOME_COMPLETED: return "completed";
    case OUTCOME_DEADLOCK: return "deadlock";
    case OUTCOME_WATCHDOG: return "watchdog";
    case OUTCOME_FAULT: return "fault";
    case OUTCOME_INTERRUPTED: return "interrupted";
    default: return "unknown";
    }
}

const char *engine_hard_event_name(int ev) {
    static const char *names[HARD_EVENT_COUNT] = {
        [MTE2_V] = "MTE2_V", [V_MTE2] = "V_MTE2", [MTE3_V] = "MTE3_V", [V_MTE3] = "V_MTE3",
        [MTE2_MTE3] = "MTE2_MTE3", [MTE3_MTE2] = "MTE3_MTE2", [MTE3_S] = "MTE3_S",
        [S_MTE3] = "S_MTE3", [MTE2_S] = "MTE2_S", [S_MTE2] = "S_MTE2", [V_S] = "V_S",
        [S_V] = "S_V", [MTE1_M] = "MTE1_M", [M_MTE1] = "M_MTE1", [MTE2_MTE1] = "MTE2_MTE1",
        [MTE1_MTE2] = "MTE1_MTE2", [M_FIX] = "M_FIX", [FIX_M] = "FIX_M", [FIX_S] = "FIX_S",
        [S_FIX] = "S_FIX", [MTE2_M] = "MTE2_M", [M_V] = "M_V", [V_M] = "V_M",
        [FIX_MTE2] = "FIX_MTE2", [MTE2_FIX] = "MTE2_FIX",
    };
    return ev > 0 && ev < HARD_EVENT_COUNT && names[ev] ? names[ev] : "unknown";
}

/* ------------------------------------------------------------ reports */
static void core_name(const engine *e, const core *c, char *buf, size_t len) {
    snprintf(buf, len, "rank %d %s%d", c->rank, c->is_aic ? "AIC" : "AIV",
             c->is_aic ? c->index : c->index - e->n_aic);
}

static void track_name(const engine *e, uint32_t track1, char *buf, size_t len) {
    if (!track1) { snprintf(buf, len, "unknown"); return; }
    uint32_t t = track1 - 1;
    uint32_t pipe = t % PIPE_COUNT, ci = t / PIPE_COUNT;
    int rank = (int)(ci / (uint32_t)e->cores_per_rank), idx = (int)(ci % (uint32_t)e->cores_per_rank);
    const core *c = eng_core(e, rank, idx);
    char cn[64];
    core_name(e, c, cn, sizeof cn);
    snprintf(buf, len, "%s%s%s %s", cn, c->role ? " " : "", c->role ? engine_string(e, c->role) : "",
             engine_pipe_name((int)pipe));
}

static void eng_describe_wait(const engine *e, const core *c, char *buf, size_t len) {
    switch (c->wait) {
    case WAIT_GM: {
        const engine_object *o = engine_object_get(e, c->wait_object);
        uint8_t *p = eng_gm_ptr((engine *)e, c->wait_addr, (uint64_t)c->wait_width);
        int64_t cur = p ? eng_read_word(p, c->wait_width) : 0;
        char name[160];
        if (o) snprintf(name, sizeof name, "%s", engine_string(e, o->name));
        else snprintf(name, sizeof name, "GM word rank %d +0x%llx", gm_rank(c->wait_addr),
                      (unsigned long long)gm_offset(c->wait_addr));
        snprintf(buf, len, "%s %s %lld (current %lld)", name, engine_cond_name(c->wait_cond),
                 (long long)c->wait_expected, (long long)cur);
        break;
    }
    case WAIT_XCORE:
        snprintf(buf, len, "cross-core flag %d (needs %d set%s, has %u)", c->wait_flag, c->wait_need,
                 c->wait_need == 1 ? "" : "s", c->xcore_count[c->wait_flag]);
        break;
    case WAIT_BARRIER:
        snprintf(buf, len, "%s barrier (%lld cores expected)", c->wait_barrier ? "all-rank" : "rank",
                 (long long)c->wait_expected);
        break;
    case WAIT_RDMA:
        snprintf(buf, len, "acks of %u RDMA operation%s", c->rdma_outstanding,
                 c->rdma_outstanding == 1 ? "" : "s");
        break;
    default:
        snprintf(buf, len, "%s", "");
        break;
    }
}

void engine_write_report(const engine *e, FILE *out) {
    fprintf(out, "outcome: %s\n", engine_outcome_name(e->outcome));
    if (e->message[0]) fprintf(out, "%s\n", e->message);
    if (e->outcome != OUTCOME_DEADLOCK && e->outcome != OUTCOME_WATCHDOG &&
        e->outcome != OUTCOME_INTERRUPTED)
        return;
    int n = e->n_ranks * e->cores_per_rank, shown = 0;
    for (int i = 0; i < n; i++) {
        const core *c = &e->cores[i];
        if (c->launch < 0 || c->status == CS_FINISHED || c->status == CS_IDLE) continue;
        char cn[64], what[320];
        core_name(e, c, cn, sizeof cn);
        eng_describe_wait(e, c, what, sizeof what);
        const char *role = c->role ? engine_string(e, c->role) : e->launches[c->launch].name;
        fprintf(out, "  %-16s %-22s %s", cn, role,
                c->status == CS_BLOCKED ? "blocked on " : "still running");
        if (c->status == CS_BLOCKED) fprintf(out, "%s", what);
        if (c->status == CS_BLOCKED && c->wait_site) {
            const site_entry *se = &e->sites[c->wait_site - 1];
            fprintf(out, " at %s:%d", se->file, se->line);
        }
        fprintf(out, "\n");
        if (c->n_notes) {
            fprintf(out, "  %-16s %-22s  ", "", "");
            for (int k = 0; k < c->n_notes; k++)
                fprintf(out, "%s%s=%lld", k ? " " : "", engine_string(e, c->note_key[k]),
                        (long long)c->note_val[k]);
            fprintf(out, "\n");
        }
        if (c->status == CS_BLOCKED && c->wait == WAIT_GM && c->wait_object) {
            uint32_t id = c->wait_object;
            if (e->obj_last_seq[id - 1]) {
                char tn[160];
                track_name(e, e->obj_last_track[id - 1], tn, sizeof tn);
                fprintf(out, "  %-16s %-22s  last written by %s at seq %llu, %.3f us\n", "", "", tn,
                        (unsigned long long)e->obj_last_seq[id - 1],
                        (double)e->obj_last_time[id - 1] / 1e6);
            } else {
                fprintf(out, "  %-16s %-22s  never written during the run\n", "", "");
            }
        }
        shown++;
    }
    if (!shown) fprintf(out, "  (no core was left blocked)\n");
}

int engine_core_count(const engine *e) { return e->n_ranks * e->cores_per_rank; }

void engine_core_state_get(const engine *e, int index, engine_core_state *st) {
    memset(st, 0, sizeof *st);
    const core *c = &e->cores[index];
    st->rank = c->rank;
    st->core = c->index;
    st->launched = c->launch >= 0;
    st->finished = c->status == CS_FINISHED;
    st->blocked = c->status == CS_BLOCKED;
    st->running = c->status == CS_RUNNING;
    st->faulted = c->status == CS_FAULTED;
    st->kernel = c->launch >= 0 ? e->launches[c->launch].name : "";
    st->role = c->role ? engine_string(e, c->role) : "";
    st->now = c->now;
    if (st->blocked) eng_describe_wait(e, c, st->waiting_on, sizeof st->waiting_on);
}

int engine_site_get(const engine *e, uint32_t id, engine_site *out) {
    if (id == 0 || id > e->n_sites) return 0;
    const site_entry *se = &e->sites[id - 1];
    out->id = id;
    out->file = se->file;
    out->line = se->line;
    out->func = se->func;
    return 1;
}

void *engine_core_saved_sp(const engine *e, int index) {
    const core *c = &e->cores[index];
    if (c->launch < 0 || c->status == CS_RUNNING || c->status == CS_IDLE || !c->co.stack) return NULL;
    return c->co.sp;
}
