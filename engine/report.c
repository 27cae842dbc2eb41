/*
 * report.c - names of everything the engine emits, and the human report of
 * a run's ending: for a deadlock or a watchdog stop, every core that did not
 * finish, what it waits for (object, expected vs current value), who last
 * wrote that word, and the notes its kernel published (role, channel,
 * cached head, credits), so the report reads like a per-role dump.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdlib.h>
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

/* roles: every core's role by core index when the cores live in other
 * processes (a split run's report), NULL to read them from e. */
static void track_name(const engine *e, const char *const *roles, uint32_t track1, char *buf,
                       size_t len) {
    if (!track1) { snprintf(buf, len, "unknown"); return; }
    uint32_t t = track1 - 1;
    uint32_t pipe = t % PIPE_COUNT, ci = t / PIPE_COUNT;
    int rank = (int)(ci / (uint32_t)e->cores_per_rank), idx = (int)(ci % (uint32_t)e->cores_per_rank);
    const core *c = eng_core(e, rank, idx);
    char cn[64];
    core_name(e, c, cn, sizeof cn);
    const char *role = roles ? roles[ci] : c->role ? engine_string(e, c->role) : NULL;
    snprintf(buf, len, "%s%s%s %s", cn, role ? " " : "", role ? role : "",
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

/* The report is written in two steps so that a split run can gather it:
 * each core's entry is packed (its lines, then who last wrote the word it
 * waits on: the writer's track and that event's seq as the writing process
 * numbered it), and the entries are printed with the writer named by its
 * role and the seq made global (eng_report_format). Alone the two steps
 * run back to back with roles and seqs as they are. */
enum { WRITER_NONE, WRITER_SEEN, WRITER_NEVER };

static void put_u32(engine_buf *b, uint32_t v) { engine_buf_put(b, &v, sizeof v); }
static void put_u64(engine_buf *b, uint64_t v) { engine_buf_put(b, &v, sizeof v); }

static void put_line(engine_buf *b, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    engine_buf_put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void pack_core(const engine *e, const core *c, engine_buf *b) {
    engine_buf text = {0};
    char cn[64], what[320];
    core_name(e, c, cn, sizeof cn);
    eng_describe_wait(e, c, what, sizeof what);
    const char *role = c->role ? engine_string(e, c->role) : e->launches[c->launch].name;
    put_line(&text, "  %-16s %-22s %s", cn, role,
             c->status == CS_BLOCKED ? "blocked on " : "still running");
    if (c->status == CS_BLOCKED) put_line(&text, "%s", what);
    if (c->status == CS_BLOCKED && c->wait_site) {
        const site_entry *se = &e->sites[c->wait_site - 1];
        put_line(&text, " at %s:%d", se->file, se->line);
    }
    put_line(&text, "\n");
    if (c->n_notes) {
        put_line(&text, "  %-16s %-22s  ", "", "");
        for (int k = 0; k < c->n_notes; k++)
            put_line(&text, "%s%s=%lld", k ? " " : "", engine_string(e, c->note_key[k]),
                     (long long)c->note_val[k]);
        put_line(&text, "\n");
    }
    put_u32(b, (uint32_t)text.n);
    engine_buf_put(b, text.p, text.n);
    engine_buf_free(&text);
    uint8_t writer = WRITER_NONE;
    uint32_t id = c->wait_object;
    if (c->status == CS_BLOCKED && c->wait == WAIT_GM && id)
        writer = e->obj_last_seq[id - 1] ? WRITER_SEEN : WRITER_NEVER;
    engine_buf_put(b, &writer, 1);
    if (writer != WRITER_SEEN) return;
    put_u64(b, e->obj_last_seq[id - 1]);
    put_u64(b, e->obj_last_time[id - 1]);
    put_u32(b, e->obj_last_track[id - 1]);
}

void eng_report_pack_roles(const engine *e, engine_buf *b) {
    for (uint32_t i = (uint32_t)(e->own_first * e->cores_per_rank);
         i < (uint32_t)(e->own_end * e->cores_per_rank); i++) {
        const core *c = &e->cores[i];
        if (!c->role) continue;
        const char *role = engine_string(e, c->role);
        put_u32(b, i);
        put_u32(b, (uint32_t)strlen(role));
        engine_buf_put(b, role, strlen(role));
    }
}

void eng_report_pack(const engine *e, engine_buf *b) {
    for (int i = e->own_first * e->cores_per_rank; i < e->own_end * e->cores_per_rank; i++) {
        const core *c = &e->cores[i];
        if (c->launch < 0 || c->status == CS_FINISHED || c->status == CS_IDLE) continue;
        pack_core(e, c, b);
    }
}

static int take(const engine_buf *b, size_t *at, void *out, size_t n) {
    if (*at + n > b->n) return -1;
    memcpy(out, b->p + *at, n);
    *at += n;
    return 0;
}

int eng_report_roles(const engine *e, const engine_buf *packed, char **roles) {
    size_t at = 0;
    uint32_t n = (uint32_t)(e->n_ranks * e->cores_per_rank);
    while (at < packed->n) {
        uint32_t i, len;
        if (take(packed, &at, &i, sizeof i) || take(packed, &at, &len, sizeof len) || i >= n ||
            at + len > packed->n)
            return -1;
        free(roles[i]);
        roles[i] = malloc((size_t)len + 1);
        if (!roles[i]) abort();
        memcpy(roles[i], packed->p + at, len);
        roles[i][len] = 0;
        at += len;
    }
    return 0;
}

int eng_report_format(const engine *e, const char *const *roles, const engine_buf *entries,
                      uint64_t (*global_seq)(void *, uint64_t), void *ctx, engine_buf *out) {
    int shown = 0;
    size_t at = 0;
    while (at < entries->n) {
        uint32_t len;
        uint8_t writer;
        if (take(entries, &at, &len, sizeof len) || at + len > entries->n) return -1;
        engine_buf_put(out, entries->p + at, len);
        at += len;
        if (take(entries, &at, &writer, 1)) return -1;
        if (writer == WRITER_NEVER)
            put_line(out, "  %-16s %-22s  never written during the run\n", "", "");
        if (writer == WRITER_SEEN) {
            uint64_t seq, time;
            uint32_t track1;
            if (take(entries, &at, &seq, sizeof seq) || take(entries, &at, &time, sizeof time) ||
                take(entries, &at, &track1, sizeof track1) ||
                track1 > (uint32_t)(e->n_ranks * e->cores_per_rank * PIPE_COUNT))
                return -1;
            uint64_t g = global_seq ? global_seq(ctx, seq) : seq;
            char tn[160];
            track_name(e, roles, track1, tn, sizeof tn);
            put_line(out, "  %-16s %-22s  last written by %s", "", "", tn);
            /* a split run without a trace has no global seq to name */
            if (g)
                put_line(out, " at seq %llu, %.3f us\n", (unsigned long long)g, (double)time / 1e6);
            else
                put_line(out, " at %.3f us\n", (double)time / 1e6);
        }
        shown++;
    }
    return shown;
}

void engine_write_report(const engine *e, FILE *out) {
    fprintf(out, "outcome: %s\n", engine_outcome_name(e->outcome));
    if (e->message[0]) fprintf(out, "%s\n", e->message);
    if (e->outcome != OUTCOME_DEADLOCK && e->outcome != OUTCOME_WATCHDOG &&
        e->outcome != OUTCOME_INTERRUPTED)
        return;
    if (e->split) {
        const engine_buf *gathered = eng_split_report(e);
        if (!gathered)
            fprintf(out, "  (a split run's cores are reported by process 0, after a deadlock or "
                         "a watchdog stop)\n");
        else if (gathered->n)
            fwrite(gathered->p, 1, gathered->n, out);
        else
            fprintf(out, "  (no core was left blocked)\n");
        return;
    }
    engine_buf entries = {0}, text = {0};
    eng_report_pack(e, &entries);
    int shown = eng_report_format(e, NULL, &entries, NULL, NULL, &text);
    if (text.n) fwrite(text.p, 1, text.n, out);
    if (shown == 0) fprintf(out, "  (no core was left blocked)\n");
    engine_buf_free(&entries);
    engine_buf_free(&text);
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

void engine_core_debug_slots(const engine *e, int index, engine_core_slots *out) {
    const core *c = &e->cores[index];
    out->saved_sp = &c->co.sp;
    out->stack = &c->co.stack;
    out->stack_size = &c->co.stack_size;
}

uint64_t *engine_break_seq_slot(engine *e) { return &e->break_seq; }
