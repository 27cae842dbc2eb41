/*
 * ana_crit_load.c - a run's events in memory for the critical path walk.
 *
 * The walk goes backwards and jumps (a wait to its waker, a completion to
 * its issue), so it needs every event by seq: one pass of the recorder's
 * sequential reader fills a 64-byte record per event (about 1.1 GB at 17 M
 * events, an EP16 x 4096 dispatch), linking each core's events to its
 * previous one and each issue to the previous issue on its pipe and to its
 * completion. An RDMA operation's record does not say how long it queued
 * at its source NIC, which the engine books as a calendar (first fit at or
 * after the post; engine/resource.c): the same booking is replayed here in
 * issue order, which is the engine's booking order, so the walk knows when
 * each operation left its NIC. The timing figures come from the trace header's hw.* keys,
 * turned into picoseconds by the engine's own engine_rates_of, so the walk
 * prices with exactly what the run priced with; a key an older trace
 * lacks takes its default, as replay does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/critical/ana_crit.h"
#include "analysis/derive/derive.h"
#include "recorder/recorder.h"

static double meta_num(rec_reader *r, const char *key, double def) {
    const char *v = rec_reader_meta(r, key);
    if (!v || !*v) return def;
    char *end = NULL;
    double x = strtod(v, &end);
    return end && end != v ? x : def;
}

static void load_model(rec_reader *r, ana_crit_model *m) {
    /* the configuration the run used, as replay rebuilds it; a damaged
     * header leaves the defaults (the path is then approximate, not refused) */
    engine_config cfg;
    char err[512];
    if (rec_meta_get_config(rec_reader_meta_get, r, &cfg, NULL, err, sizeof err))
        engine_config_defaults(&cfg);
    engine_rates rate;
    engine_rates_of(&cfg.hw, &rate);
    memset(m, 0, sizeof *m);
    m->mte_lat = rate.mte_latency_ps;
    m->hccs_lat = rate.hccs_latency_ps;
    m->rdma_lat = rate.rdma_latency_ps;
    m->xcore_lat = rate.xcore_latency_ps;
    m->barrier_lat = rate.barrier_latency_ps;
    m->aicpu_task = rate.batch_task_ps;
    m->nic_msg = rate.nic_message_ps;
    m->hccs_read_held = rate.hccs_read_held_ps;
    m->mte_ppb = rate.mte_ps_per_byte;
    m->mte_hccs_ppb = rate.mte_hccs_ps_per_byte;
    m->hbm_ppb = rate.hbm_ps_per_byte;
    m->hccs_ppb = rate.hccs_link_ps_per_byte;
    m->nic_ppb = rate.nic_ps_per_byte;
    m->hccs_port_ppb = rate.hccs_port_ps_per_byte;
    m->hccs_transfer = rate.hccs_transfer_ps;
    m->plane_ppb = rate.cross_plane_ps_per_byte;
    m->jitter = cfg.jitter;
    m->npus_per_node = cfg.npus_per_node;
    m->num_aic = (int)meta_num(r, "num_aic", 24);
}

static int outcome_code(const char *text) {
    for (int o = OUTCOME_RUNNING; o <= OUTCOME_INTERRUPTED; o++)
        if (text && engine_outcome_name(o) && !strcmp(text, engine_outcome_name(o))) return o;
    return OUTCOME_INTERRUPTED;   /* "truncated" and anything else: it did not complete */
}

static int is_core_event(int kind) {
    return kind != EV_XFER_DONE && kind != EV_BLOCKED && kind != EV_RUN_END;
}

static int is_wait_begin(int kind) {
    return kind == EV_FLAG_WAIT_BEGIN || kind == EV_XCORE_WAIT_BEGIN ||
           kind == EV_GM_WAIT_BEGIN || kind == EV_BARRIER_BEGIN || kind == EV_PIPE_WAIT_BEGIN;
}

static int is_wait_end(int kind) {
    return kind == EV_FLAG_WAIT_END || kind == EV_XCORE_WAIT_END || kind == EV_GM_WAIT_END ||
           kind == EV_BARRIER_END || kind == EV_PIPE_WAIT_END;
}

/* One rank's NIC tx calendar: busy intervals [b, e) in time order, each
 * with the op (issue seq) that booked it. Adjacent intervals are kept
 * apart, not merged as the engine merges them: first fit finds the same
 * gaps either way, and each op's interval says who held the NIC. */
typedef struct calendar {
    uint64_t *busy;      /* b, e, seq per interval */
    size_t n, cap;
} calendar;

/* First fit of d ps at or after start, as resource_reserve books it; the
 * op whose interval ended where this one begins, if it had to wait, in
 * *after (0 none). Intervals that ended by `now` can never be booked again
 * and go. */
static int calendar_book(calendar *c, uint64_t now, uint64_t start, uint64_t d, uint64_t seq,
                         uint64_t *end, uint64_t *after) {
    size_t drop = 0;
    while (drop < c->n && c->busy[3 * drop + 1] <= now) drop++;
    if (drop) {
        memmove(c->busy, c->busy + 3 * drop, (c->n - drop) * 3 * sizeof *c->busy);
        c->n -= drop;
    }
    uint64_t t = start;
    size_t i = 0;
    *after = 0;
    if (d == 0) {
        *end = start;
        return 0;
    }
    while (i < c->n && c->busy[3 * i + 1] <= t) i++;
    while (i < c->n && c->busy[3 * i] < t + d) {
        if (c->busy[3 * i + 1] > t) {
            t = c->busy[3 * i + 1];
            *after = c->busy[3 * i + 2];
        }
        i++;
    }
    if (ana_grow((void **)&c->busy, &c->cap, c->n + 1, 3 * sizeof *c->busy, 16)) return -1;
    memmove(c->busy + 3 * (i + 1), c->busy + 3 * i, (c->n - i) * 3 * sizeof *c->busy);
    c->busy[3 * i] = t;
    c->busy[3 * i + 1] = t + d;
    c->busy[3 * i + 2] = seq;
    c->n++;
    *end = t + d;
    return 0;
}

static int rdma_kind(const ana_crit_run *run, const ana_crit_ev *e) {
    int per = run->m.npus_per_node > 0 ? run->m.npus_per_node : 8;
    return e->sub == XFER_RDMA_WRITE || e->sub == XFER_RDMA_ATOMIC ||
           (e->sub == XFER_BATCHWRITE && e->rank / per != e->peer / per);
}

/* Fills every RDMA issue's start with the end of its tx booking and its
 * prev_track with the op that held the NIC until this one could begin (0
 * when it began at its post). An op to another plane (a different-numbered
 * NPU) books the rank's plane share beside its NIC, as the engine does
 * (engine/rdma.c): it is sent when both are done, and whichever ended last
 * says who held it. */
static int replay_nic_tx(ana_crit_run *run, size_t ranks) {
    calendar *cal = calloc(ranks ? 2 * ranks : 1, sizeof *cal), *plane = cal + ranks;
    if (!cal) return -1;
    int per = run->m.npus_per_node > 0 ? run->m.npus_per_node : 8;
    uint64_t now = 0;   /* a lower bound of the engine's clock: completions come at it */
    int rc = 0;
    for (size_t s = 1; s < run->n && !rc; s++) {
        ana_crit_ev *e = &run->ev[s];
        if (e->kind == EV_XFER_DONE && e->time > now) now = e->time;
        if (e->kind != EV_XFER_ISSUE || !rdma_kind(run, e) || e->rank >= ranks) continue;
        uint64_t post = e->link ? run->ev[e->link].start : e->time;
        uint64_t d = (uint64_t)ceil((double)e->len * run->m.nic_ppb) +
                     (e->len ? run->m.nic_msg : 0);
        uint64_t after = 0;
        rc = calendar_book(&cal[e->rank], now, post, d, s, &e->start, &after);
        if (!rc && e->rank % per != e->peer % per) {
            uint64_t pend = 0, pafter = 0, pd = (uint64_t)ceil((double)e->len * run->m.plane_ppb);
            rc = calendar_book(&plane[e->rank], now, post, pd, s, &pend, &pafter);
            if (pend > e->start) {
                e->start = pend;
                after = pafter;
            }
        }
        e->prev_track = (uint32_t)after;
    }
    for (size_t r = 0; r < 2 * ranks; r++) free(cal[r].busy);
    free(cal);
    return rc;
}

void ana_crit_run_free(ana_crit_run *run) {
    free(run->ev);
    free(run->done_seq);
    free(run->done_first);
    free(run->open_wait);
    memset(run, 0, sizeof *run);
}

int ana_crit_index(ana_crit_run *run, char *err, size_t errlen) {
    size_t nc = run->ncores;
    free(run->done_seq);
    free(run->done_first);
    free(run->open_wait);
    run->done_first = calloc(nc + 2, sizeof *run->done_first);
    run->open_wait = calloc(nc + 1, sizeof *run->open_wait);
    run->done_seq = NULL;
    /* One scratch block: per core its last own event, per (core, pipe) its
     * last issue, per rank the last op its AICPU posted. */
    size_t nranks = run->cores_per_rank > 0 ? nc / (size_t)run->cores_per_rank : 0;
    uint32_t *last = calloc((nc + 1) * (1 + PIPE_COUNT) + nranks + 1, sizeof *last);
    uint32_t *track = last + nc + 1, *aicpu = track + (nc + 1) * PIPE_COUNT;
    size_t ndone = 0;
    int rc = -1;
    if (!run->done_first || !run->open_wait || !last) goto out;
    for (size_t s = 1; s < run->n; s++) {
        ana_crit_ev *e = &run->ev[s];
        size_t c = (size_t)e->rank * (size_t)run->cores_per_rank + e->core;
        if (!e->kind || c >= nc) continue;
        if (e->kind == EV_XFER_DONE) {
            run->done_first[c + 1]++;
            ndone++;
            if (e->link && e->link < s && run->ev[e->link].kind == EV_XFER_ISSUE)
                run->ev[e->link].link = s;   /* an issue knows its completion */
            continue;
        }
        if (!is_core_event(e->kind)) continue;
        e->prev = last[c];
        last[c] = (uint32_t)s;
        if (e->kind == EV_XFER_ISSUE) {
            size_t t = c * PIPE_COUNT + (e->pipe < PIPE_COUNT ? e->pipe : 0);
            e->prev_track = track[t];
            track[t] = (uint32_t)s;
            e->link = 0;
            if ((e->sub == XFER_RDMA_WRITE || e->sub == XFER_RDMA_ATOMIC ||
                 e->sub == XFER_BATCHWRITE) && e->rank < nranks) {
                e->prev_aicpu = aicpu[e->rank];
                aicpu[e->rank] = (uint32_t)s;
            }
        }
        if (is_wait_begin(e->kind)) run->open_wait[c] = (uint32_t)s;
        else if (is_wait_end(e->kind)) run->open_wait[c] = 0;
    }
    for (size_t c = 0; c < nc; c++) run->done_first[c + 1] += run->done_first[c];
    run->done_seq = malloc((ndone ? ndone : 1) * sizeof *run->done_seq);
    if (!run->done_seq) goto out;
    /* last is done with: it now counts each core's completions placed */
    uint32_t *fill = last;
    memset(fill, 0, (nc + 1) * sizeof *fill);
    for (size_t s = 1; s < run->n; s++) {
        const ana_crit_ev *e = &run->ev[s];
        size_t c = (size_t)e->rank * (size_t)run->cores_per_rank + e->core;
        if (e->kind != EV_XFER_DONE || c >= nc) continue;
        size_t at = run->done_first[c] + fill[c]++;
        /* completions come in time order; keep them so */
        while (at > run->done_first[c] && run->ev[run->done_seq[at - 1]].time > e->time) {
            run->done_seq[at] = run->done_seq[at - 1];
            at--;
        }
        run->done_seq[at] = (uint32_t)s;
    }
    rc = 0;
out:
    free(last);
    if (rc) {
        ana_err(err, errlen, "out of memory indexing the events for the critical path");
        return -1;
    }
    if (run->cores_per_rank > 0 && replay_nic_tx(run, nc / (size_t)run->cores_per_rank)) {
        ana_err(err, errlen, "out of memory replaying the NICs' bookings");
        return -1;
    }
    return 0;
}

int ana_crit_load(const char *run_dir, uint64_t events, ana_crit_run *run, char *err,
                  size_t errlen) {
    memset(run, 0, sizeof *run);
    rec_reader *r = NULL;
    char rerr[1024];
    if (rec_reader_open(run_dir, &r, rerr, sizeof rerr)) {
        ana_err(err, errlen, "%s", rerr);
        return -1;
    }
    load_model(r, &run->m);
    run->cores_per_rank = (int)meta_num(r, "cores_per_rank", 72);
    int ranks = (int)(meta_num(r, "config.nodes", 1) * meta_num(r, "config.npus_per_node", 8));
    if (run->cores_per_rank <= 0 || ranks <= 0) {
        ana_err(err, errlen, "%s: the trace header gives no cores per rank or ranks", run_dir);
        rec_reader_close(r);
        return -1;
    }
    run->ncores = (size_t)ranks * (size_t)run->cores_per_rank;
    size_t cap = events && events < UINT32_MAX ? (size_t)events + 2 : 1u << 16;
    run->ev = calloc(cap, sizeof *run->ev);
    run->n = 1;
    engine_event ev;
    int k;
    uint64_t last_time = 0;
    if (!run->ev) goto oom;
    while ((k = rec_reader_next(r, &ev)) == 1) {
        if (ev.seq >= UINT32_MAX) {
            ana_err(err, errlen, "%s: more than %u events: too many for the critical path walk",
                    run_dir, UINT32_MAX - 1);
            goto fail;
        }
        if (ev.seq >= cap) {
            size_t nc = cap;
            while (nc <= ev.seq) nc += nc / 2;
            ana_crit_ev *p = realloc(run->ev, nc * sizeof *p);
            if (!p) goto oom;
            memset(p + cap, 0, (nc - cap) * sizeof *p);
            run->ev = p;
            cap = nc;
        }
        ana_crit_ev *e = &run->ev[ev.seq];
        e->time = ev.time;
        e->link = ev.link;
        e->start = ev.kind == EV_XCORE_SET ? (uint64_t)ev.aux : (uint64_t)ev.value;
        e->len = ev.len;
        e->site = ev.site;
        e->rank = (uint16_t)ev.rank;
        e->core = (uint16_t)ev.core;
        e->peer = (uint16_t)ev.peer;
        e->kind = ev.kind;
        e->pipe = ev.pipe;
        e->sub = ev.sub;
        if (ev.seq + 1 > run->n) run->n = ev.seq + 1;
        if (ev.time > last_time) last_time = ev.time;
    }
    if (k < 0 && !rec_reader_truncated(r)) {
        ana_err(err, errlen, "%s: reading the events: %s", run_dir, rec_reader_error(r));
        goto fail;
    }
    run->outcome = rec_reader_truncated(r) ? OUTCOME_INTERRUPTED
                                           : outcome_code(rec_reader_meta(r, "outcome"));
    run->end_time = (uint64_t)meta_num(r, "end_time_ps", (double)last_time);
    if (rec_reader_truncated(r) || run->end_time < last_time) run->end_time = last_time;
    rec_reader_close(r);
    return ana_crit_index(run, err, errlen);
oom:
    ana_err(err, errlen, "%s: out of memory loading the events for the critical path", run_dir);
fail:
    rec_reader_close(r);
    ana_crit_run_free(run);
    return -1;
}
