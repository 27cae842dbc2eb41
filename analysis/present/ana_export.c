/*
 * ana_export.c - `npurr export RUN --chrome OUT.json`: the run as Chrome
 * trace event JSON, which ui.perfetto.dev and chrome://tracing open.
 *
 * It writes ana_timeline's model (ana_timeline.h: tracks, lanes, flows,
 * counters, event order), the same one the protobuf export writes:
 *   process per rank        pid = rank + 1 (Perfetto reserves pid 0),
 *                           process_name "rank 3 (node 0)"
 *   thread per track        the core's own track ("AIV5 RDMASender": its
 *                           waits), one per pipe ("AIV5 MTE3": transfers),
 *                           and one per extra lane ("AIV5 MTE3 (2)") for
 *                           transfers that overlap without nesting
 *   slices                  X events; ts and dur in whole ns (as us with
 *                           three decimals), so Perfetto's ns timestamps are
 *                           exactly these and nesting survives its import
 *   flows                   a zero-length "wake" slice and an `s` on the
 *                           waker's track, a zero-length "woken" slice and
 *                           an `f` (bp "e") at the end of the wait
 *   counters                C events: ring occupancy, link GB/s, NIC queue
 * Events are written in ana_timeline's order: by time, wakes before the
 * rest. Perfetto sorts X slices of equal time first and keeps the file
 * order of the other ties, so every `s` is read before its `f`, and each
 * marker slice is on top of its track when its flow event is read.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/present.h"
#include "analysis/present/ana_print.h"
#include "analysis/present/ana_timeline.h"

typedef struct exporter {
    const ana_timeline *tl;
    FILE *out;
    int first;             /* no event written yet (comma handling) */
} exporter;

static void begin_event(exporter *x) {
    fputs(x->first ? "\n" : ",\n", x->out);
    x->first = 0;
}

static long long pid_of(const tl_track *t) { return (long long)t->rank + 1; }
static long long tid_of(uint32_t track) { return (long long)track + 1; }

static void write_metadata(exporter *x) {
    const ana_timeline *tl = x->tl;
    uint8_t *named = calloc((size_t)tl->run.ranks + 1, 1);
    for (uint32_t i = 0; i < tl->ntrack; i++) {
        const tl_track *t = &tl->track[i];
        if (named && !named[t->rank]) {
            named[t->rank] = 1;
            begin_event(x);
            if (t->pipe == TL_CRITICAL)   /* its own process, after the ranks */
                fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,"
                        "\"tid\":0,\"args\":{\"name\":\"critical path\"}}", pid_of(t));
            else
                fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,"
                        "\"tid\":0,\"args\":{\"name\":\"rank %d (node %lld)\"}}", pid_of(t),
                        t->rank, (long long)(t->rank / (tl->run.npus_per_node > 0
                                                            ? tl->run.npus_per_node : 1)));
            begin_event(x);
            fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%lld,"
                    "\"tid\":0,\"args\":{\"sort_index\":%d}}", pid_of(t), t->rank);
        }
        if (t->pipe == TL_COUNTER) continue;
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,"
                "\"args\":{\"name\":", pid_of(t), tid_of(i));
        ana_json_str(x->out, tl_str(tl, t->label));
        fputs("}}", x->out);
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%lld,"
                "\"tid\":%lld,\"args\":{\"sort_index\":%lld}}", pid_of(t), tid_of(i),
                (long long)t->core * 1000 + (t->pipe + 1) * 64 + t->lane);
    }
    free(named);
}

/* The head of an X slice, up to its name. */
static void slice_head(exporter *x, uint32_t track, uint64_t ps, uint32_t cat, uint32_t name) {
    const tl_track *t = &x->tl->track[track];
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"X\",\"pid\":%lld,\"tid\":%lld,\"ts\":", pid_of(t),
            tid_of(track));
    ana_json_ns(x->out, tl_ns(ps));
    fputs(",\"cat\":", x->out);
    ana_json_str(x->out, tl_str(x->tl, cat));
    fputs(",\"name\":", x->out);
    ana_json_str(x->out, tl_str(x->tl, name));
}

static void write_flow(exporter *x, char ph, uint32_t track, uint64_t ps, uint64_t id) {
    const tl_track *t = &x->tl->track[track];
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"%c\",%s\"pid\":%lld,\"tid\":%lld,\"ts\":", ph,
            ph == 'f' ? "\"bp\":\"e\"," : "", pid_of(t), tid_of(track));
    ana_json_ns(x->out, tl_ns(ps));
    fprintf(x->out, ",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%llu}",
            (unsigned long long)id);
}

static void write_slice(exporter *x, const tl_slice *s) {
    const ana_timeline *tl = x->tl;
    slice_head(x, s->track, s->b_ps, tl->str_cat[s->cat], s->name);
    fputs(",\"dur\":", x->out);
    ana_json_ns(x->out, tl_ns(s->e_ps) - tl_ns(s->b_ps));
    fputs(",\"args\":{", x->out);
    int comma = 0;
    for (uint8_t a = 0; a < s->nargs; a++) {
        const tl_arg *arg = &tl->arg[s->arg + a];
        fputs(comma ? "," : "", x->out);
        comma = 1;
        ana_json_str(x->out, tl_str(tl, arg->key));
        fputc(':', x->out);
        if (arg->type == TL_ARG_STR) ana_json_str(x->out, tl_str(tl, (uint32_t)arg->v));
        else fprintf(x->out, "%lld", (long long)arg->v);
    }
    if (s->site && s->site <= tl->nsite && tl->site[s->site - 1].file) {
        const tl_site *site = &tl->site[s->site - 1];
        char text[512];
        snprintf(text, sizeof text, "%s:%lld %s", tl_str(tl, site->file), (long long)site->line,
                 tl_str(tl, site->function));
        fputs(comma ? ",\"site\":" : "\"site\":", x->out);
        ana_json_str(x->out, text);
    }
    fputs("}}", x->out);
}

static void write_event(exporter *x, const tl_event *e) {
    const ana_timeline *tl = x->tl;
    if (e->type == TL_EV_COUNTER) {
        const tl_counter *c = &tl->counter[e->idx];
        const tl_track *t = &tl->track[c->track];
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"C\",\"pid\":%lld,\"tid\":0,\"ts\":", pid_of(t));
        ana_json_ns(x->out, tl_ns(c->ps));
        fputs(",\"name\":", x->out);
        ana_json_str(x->out, tl_str(tl, t->name));
        if (t->is_double) fprintf(x->out, ",\"args\":{\"value\":%.3f}}", c->value);
        else fprintf(x->out, ",\"args\":{\"value\":%lld}}", (long long)c->value);
        return;
    }
    const tl_slice *s = &tl->slice[e->idx];
    switch (e->type) {
    case TL_EV_BEGIN:
        write_slice(x, s);
        break;
    case TL_EV_WAKE: {
        const tl_flow *f = tl_flow_of(tl, s);
        slice_head(x, f->waker_track, f->waker_ps, tl->str_wake, f->waker_name);
        fputs(",\"dur\":0}", x->out);
        write_flow(x, 's', f->waker_track, f->waker_ps, f->id);
        break;
    }
    case TL_EV_WOKEN:
        slice_head(x, s->track, s->e_ps, tl->str_wake, tl->str_woken);
        fputs(",\"dur\":0}", x->out);
        write_flow(x, 'f', s->track, s->e_ps, tl_flow_of(tl, s)->id);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ entry */

static void write_header(sqlite3 *db, FILE *out) {
    sqlite3_stmt *st = NULL;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"npurr export\","
          "\"time\":\"virtual; ts in us with ns resolution\"",
          out);
    const char *sql = "SELECT key, value FROM meta WHERE key IN ('kernel', 'outcome',"
                      " 'npurr_version', 'command_line', 'end_time_ps') ORDER BY key";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            fputc(',', out);
            ana_json_str(out, (const char *)sqlite3_column_text(st, 0));
            fputc(':', out);
            ana_json_str(out, (const char *)sqlite3_column_text(st, 1));
        }
    }
    sqlite3_finalize(st);
    fputs("},\"traceEvents\":[", out);
}

int ana_export_chrome(sqlite3 *db, const ana_export_opts *opts, FILE *out,
                      ana_export_counts *counts, char *err, size_t errlen) {
    ana_timeline tl;
    if (ana_timeline_build(db, opts, &tl, err, errlen)) return -1;
    exporter x = {.tl = &tl, .out = out, .first = 1};
    write_header(db, out);
    write_metadata(&x);
    for (uint32_t i = 0; i < tl.nev; i++) {
        tl_event e = tl_event_at(&tl, i);
        write_event(&x, &e);
    }
    fputs("\n]}\n", out);
    if (counts) {
        *counts = (ana_export_counts){.slices = tl.waits + tl.transfers, .flows = tl.flows,
                                      .counters = tl.ncounter, .tracks = tl.ntrack};
    }
    ana_timeline_free(&tl);
    if (ferror(out)) {
        ana_err(err, errlen, "writing the trace failed (disk full?)");
        return -1;
    }
    return 0;
}
