/*
 * ana_perfetto.c - `npurr export RUN --perfetto OUT.pftrace`: the run in
 * Perfetto's native protobuf format (a Trace: TracePackets of TrackEvents),
 * which ui.perfetto.dev and trace_processor open without a JSON import.
 *
 * The timeline (tracks, lanes, flows, counters and the event order) is
 * ana_timeline's; this file only encodes it, with ana_pb's hand-written
 * encoder (ana_pb.h says why not protobuf-c). Field numbers are those of
 * Perfetto's public protos/perfetto/trace/ schema; tests/data/perfetto_min.proto
 * declares exactly the fields written here, for `protoc --decode`.
 *
 * Track tree, all TrackDescriptors written first:
 *   process track per rank    uuid rank + 1, pid rank + 1 ("rank 3 (node 0)")
 *   thread track per core     parent the rank, tid (rank + 1) * 1000 + core,
 *                             named "AIV5 RDMASender": the scalar unit's waits
 *   pipe tracks per core      parent the core, named "MTE3", "scalar", ...:
 *                             its transfers; lanes are siblings of the same
 *                             name, which Perfetto merges into one track
 *   counter tracks per rank   ring occupancy, "<link> GB/s", NIC queue depth
 *   "critical path"           a top-level track: the critical path's segments
 * Events: one TracePacket each, on sequence 1, time in ns. Names,
 * categories, argument names and values and kernel call sites are interned:
 * the packet that first uses one carries it in interned_data. A flow is a
 * wake instant with flow_ids and a woken instant with terminating_flow_ids.
 *
 * Size: even interned, a slice costs about 45 bytes as two packets (the
 * README's sample: 25 MB for 424 k slices), so the packets are written as
 * Perfetto's tracing service writes them when asked to compress: bundles of
 * up to 256 KiB of packets, each a zlib stream in one TracePacket's
 * compressed_packets field, which every Perfetto reader expands (the sample
 * then takes under a third, 7.5 MB). libdeflate makes the streams, at its
 * fastest level: 3.5x zlib's fastest for a file 4 % smaller (measured on an
 * EP16 export's packets), deflating having been a third of the export's
 * time at EP16 x 4096. Deflating still takes longer than
 * encoding, so a bundle is deflated on a worker thread while the next one
 * fills, or on this one when the worker is still busy (always, when the
 * process has one CPU); bundles are written in order. opts->raw_packets
 * writes them as they are (for a .gz file, which is compressed as a whole,
 * and for protoc --decode).
 */
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

#include "analysis/present/ana_pb.h"
#include "analysis/present/ana_timeline.h"

/* Field numbers (Perfetto protos/perfetto/trace/...). */
enum {
    TRACE_PACKET = 1, PKT_COMPRESSED = 50,
    PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
    PKT_SEQ_FLAGS = 13, PKT_TRACK_DESCRIPTOR = 60,
    SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
    PD_PID = 1, PD_NAME = 6,
    THD_PID = 1, THD_TID = 2, THD_NAME = 5,
    CD_UNIT_NAME = 6,
    TE_CATEGORY_IIDS = 3, TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
    TE_COUNTER = 30, TE_SRCLOC_IID = 34, TE_DOUBLE_COUNTER = 44, TE_FLOW = 47,
    TE_TERMINATING_FLOW = 48,
    TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
    DA_NAME_IID = 1, DA_INT = 4, DA_STRING_IID = 17,
    ID_CATEGORIES = 1, ID_NAMES = 2, ID_DEBUG_NAMES = 3, ID_SRCLOCS = 4, ID_DEBUG_STRINGS = 29,
    IID = 1, IID_NAME = 2,           /* EventName, EventCategory, DebugAnnotationName, InternedString */
    SL_FILE = 2, SL_FUNCTION = 3, SL_LINE = 4,
};

enum { NS_NAME = 0, NS_CAT, NS_DNAME, NS_DVAL, NS_COUNT };

/* A bundle of packets, deflated by zjob_run: on the writer's worker
 * thread while the next bundle fills, or in line when the worker is still
 * busy with an earlier one (deflating takes longer than encoding, so both
 * threads deflate); the writer writes them in order. */
typedef struct zjob {
    pb_buf in;                  /* packets waiting to be deflated */
    pb_buf z, pkt, out;         /* the deflated bundle; its packet; as written */
    struct libdeflate_compressor *c;   /* made on first use: one per job, as
                                          the worker and this thread share none */
    int failed;
} zjob;

/* Bundles in flight: the one filling, the one the worker deflates, and
 * those deflated in line that wait for it to be written first. */
#define NJOBS 4
#define NO_BUNDLE UINT64_MAX

typedef struct writer {
    const ana_timeline *tl;
    FILE *out;
    pb_buf pkt, te, in, tmp, ann;
    uint8_t *seen[NS_COUNT];    /* interned iids already written, by string id */
    uint8_t *site_seen;
    int first;
    int compress;
    zjob job[NJOBS];            /* bundle k in job[k % NJOBS] */
    uint64_t head, next;        /* the first bundle not written; the one filling */
    uint64_t at_worker;         /* the bundle the worker has; NO_BUNDLE */
    rec_worker *wr;             /* NULL: bundles are deflated in line */
    pb_buf zout;                /* a raw packet as written */
    uint64_t packets;
} writer;

#define BUNDLE_BYTES (256u << 10)

static uint64_t track_uuid(const ana_timeline *tl, uint32_t track) {
    return (uint64_t)tl->run.ranks + 1 + track;
}

/* Deflates the bundle into one compressed_packets packet (j->out). */
static void zjob_run(void *arg) {
    zjob *j = arg;
    if (j->in.oom) {
        j->failed = 1;
        return;
    }
    if (!j->c && !(j->c = libdeflate_alloc_compressor(1))) {
        j->failed = 1;
        return;
    }
    size_t bound = libdeflate_zlib_compress_bound(j->c, j->in.n);
    pb_reset(&j->z);
    if (j->z.cap < bound) {
        uint8_t *p = realloc(j->z.p, bound);
        if (!p) {
            j->failed = 1;
            return;
        }
        j->z.p = p;
        j->z.cap = bound;
    }
    /* Level 1: the default (6) deflates several times slower for a file
     * about a seventh smaller. */
    size_t zlen = libdeflate_zlib_compress(j->c, j->in.p, j->in.n, j->z.p, bound);
    if (!zlen) {
        j->failed = 1;
        return;
    }
    pb_reset(&j->pkt);
    pb_bytes(&j->pkt, PKT_COMPRESSED, j->z.p, zlen);
    pb_reset(&j->out);
    pb_bytes(&j->out, TRACE_PACKET, j->pkt.p, j->pkt.n);
    pb_reset(&j->in);
    if (j->out.oom || j->pkt.oom) j->failed = 1;
}

/* Writes the deflated bundles, in order, up to the first one the worker
 * still deflates; waits for that one when room for a bundle is needed
 * (every job in flight). 0, or -1 when a bundle failed. */
static int write_done(writer *w, int need_room) {
    while (w->head < w->next) {
        if (w->head == w->at_worker) {
            if (!rec_worker_idle(w->wr)) {
                if (!need_room) break;
                rec_worker_wait(w->wr);
            }
            w->at_worker = NO_BUNDLE;
        }
        zjob *j = &w->job[w->head % NJOBS];
        if (j->failed) return -1;
        fwrite(j->out.p, 1, j->out.n, w->out);
        w->head++;
        need_room = 0;
    }
    return 0;
}

/* Deflates the filled bundle, on the worker when it is free and in line
 * when it is not, writes what is done and makes room for the next. */
static int flush_bundle(writer *w) {
    zjob *j = &w->job[w->next % NJOBS];
    if (!j->in.n) return 0;
    if (j->in.oom || write_done(w, 0)) return -1;   /* frees the worker when it is done */
    if (w->wr && w->at_worker == NO_BUNDLE) {
        w->at_worker = w->next;
        rec_worker_submit(w->wr, zjob_run, j);
    } else {
        zjob_run(j);
    }
    w->next++;
    return write_done(w, w->next - w->head == NJOBS);
}

/* The last bundle written: 0, or -1 when a bundle failed. */
static int finish_bundles(writer *w) {
    int rc = flush_bundle(w);
    rec_worker_wait(w->wr);
    w->at_worker = NO_BUNDLE;
    return write_done(w, 1) || rc ? -1 : 0;
}

static int put_packet(writer *w) {
    if (w->pkt.oom) return -1;
    w->packets++;
    if (w->compress) {
        pb_buf *bundle = &w->job[w->next % NJOBS].in;
        pb_bytes(bundle, TRACE_PACKET, w->pkt.p, w->pkt.n);
        return bundle->n >= BUNDLE_BYTES ? flush_bundle(w) : bundle->oom ? -1 : 0;
    }
    pb_reset(&w->zout);
    pb_bytes(&w->zout, TRACE_PACKET, w->pkt.p, w->pkt.n);
    if (w->zout.oom) return -1;
    fwrite(w->zout.p, 1, w->zout.n, w->out);
    return 0;
}

/* Starts a packet on our sequence; the first one clears incremental state. */
static void begin_packet(writer *w) {
    pb_reset(&w->pkt);
    pb_uint(&w->pkt, PKT_SEQ_ID, 1);
    if (w->first) {
        pb_uint(&w->pkt, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        w->first = 0;
    }
}

/* ------------------------------------------------------------ descriptors */

static int write_descriptors(writer *w) {
    const ana_timeline *tl = w->tl;
    uint8_t *has_rank = calloc((size_t)tl->run.ranks + 1, 1);
    if (!has_rank) return -1;
    for (uint32_t i = 0; i < tl->ntrack; i++)
        if (tl->track[i].rank >= 0 && tl->track[i].rank < tl->run.ranks)
            has_rank[tl->track[i].rank] = 1;
    int rc = 0;
    for (int64_t r = 0; r < tl->run.ranks && !rc; r++) {
        if (!has_rank[r]) continue;
        char name[64];
        snprintf(name, sizeof name, "rank %lld (node %lld)", (long long)r,
                 (long long)(r / (tl->run.npus_per_node > 0 ? tl->run.npus_per_node : 1)));
        pb_reset(&w->tmp);
        pb_uint(&w->tmp, PD_PID, (uint64_t)r + 1);
        pb_str(&w->tmp, PD_NAME, name);
        pb_reset(&w->te);
        pb_uint(&w->te, TD_UUID, (uint64_t)r + 1);
        pb_msg(&w->te, TD_PROCESS, &w->tmp);
        begin_packet(w);
        pb_msg(&w->pkt, PKT_TRACK_DESCRIPTOR, &w->te);
        rc = put_packet(w);
    }
    free(has_rank);
    for (uint32_t i = 0; i < tl->ntrack && !rc; i++) {
        const tl_track *t = &tl->track[i];
        pb_reset(&w->te);
        pb_uint(&w->te, TD_UUID, track_uuid(tl, i));
        if (t->pipe == TL_CORE && t->lane == 0) {
            pb_uint(&w->te, TD_PARENT, (uint64_t)t->rank + 1);
            pb_reset(&w->tmp);
            pb_uint(&w->tmp, THD_PID, (uint64_t)t->rank + 1);
            pb_uint(&w->tmp, THD_TID, (uint64_t)(t->rank + 1) * 1000 + (uint64_t)t->core);
            pb_str(&w->tmp, THD_NAME, tl_str(tl, t->name));
            pb_msg(&w->te, TD_THREAD, &w->tmp);
        } else if (t->pipe == TL_CRITICAL) {   /* a top-level track of its own */
            pb_str(&w->te, TD_NAME, tl_str(tl, t->name));
        } else if (t->pipe == TL_COUNTER) {
            pb_uint(&w->te, TD_PARENT, (uint64_t)t->rank + 1);
            pb_str(&w->te, TD_NAME, tl_str(tl, t->name));
            pb_reset(&w->tmp);
            if (t->is_double) pb_str(&w->tmp, CD_UNIT_NAME, "GB/s");
            pb_msg(&w->te, TD_COUNTER, &w->tmp);
        } else {
            pb_uint(&w->te, TD_PARENT, track_uuid(tl, t->parent));
            pb_str(&w->te, TD_NAME, tl_str(tl, t->name));
        }
        begin_packet(w);
        pb_msg(&w->pkt, PKT_TRACK_DESCRIPTOR, &w->te);
        rc = put_packet(w);
    }
    return rc;
}

/* ------------------------------------------------------------ interning */

/* Adds string id to the packet's interned data under namespace ns (field
 * of InternedData) unless it was written before. */
static void intern_str(writer *w, int ns, uint32_t field, uint32_t id) {
    if (!id || w->seen[ns][id]) return;
    w->seen[ns][id] = 1;
    pb_reset(&w->tmp);
    pb_uint(&w->tmp, IID, id);
    pb_str(&w->tmp, IID_NAME, tl_str(w->tl, id));
    pb_msg(&w->in, field, &w->tmp);
}

static void intern_site(writer *w, uint32_t site) {
    if (!site || site > w->tl->nsite || w->site_seen[site]) return;
    w->site_seen[site] = 1;
    const tl_site *s = &w->tl->site[site - 1];
    pb_reset(&w->tmp);
    pb_uint(&w->tmp, IID, site);
    pb_str(&w->tmp, SL_FILE, tl_str(w->tl, s->file));
    pb_str(&w->tmp, SL_FUNCTION, tl_str(w->tl, s->function));
    pb_uint(&w->tmp, SL_LINE, (uint64_t)s->line);
    pb_msg(&w->in, ID_SRCLOCS, &w->tmp);
}

/* ------------------------------------------------------------ events */

static int write_event(writer *w, const tl_event *e) {
    const ana_timeline *tl = w->tl;
    pb_reset(&w->te);
    pb_reset(&w->in);
    int interned = 0;
    if (e->type == TL_EV_COUNTER) {
        const tl_counter *c = &tl->counter[e->idx];
        pb_uint(&w->te, TE_TYPE, TYPE_COUNTER);
        pb_uint(&w->te, TE_TRACK, track_uuid(tl, c->track));
        if (tl->track[c->track].is_double) pb_double(&w->te, TE_DOUBLE_COUNTER, c->value);
        else pb_int(&w->te, TE_COUNTER, (int64_t)c->value);
    } else {
        const tl_slice *s = &tl->slice[e->idx];
        switch (e->type) {
        case TL_EV_BEGIN:
            pb_uint(&w->te, TE_TYPE, TYPE_SLICE_BEGIN);
            pb_uint(&w->te, TE_TRACK, track_uuid(tl, s->track));
            intern_str(w, NS_CAT, ID_CATEGORIES, tl->str_cat[s->cat]);
            intern_str(w, NS_NAME, ID_NAMES, s->name);
            pb_uint(&w->te, TE_CATEGORY_IIDS, tl->str_cat[s->cat]);
            pb_uint(&w->te, TE_NAME_IID, s->name);
            for (uint8_t a = 0; a < s->nargs; a++) {
                const tl_arg *arg = &tl->arg[s->arg + a];
                intern_str(w, NS_DNAME, ID_DEBUG_NAMES, arg->key);
                pb_reset(&w->ann);
                pb_uint(&w->ann, DA_NAME_IID, arg->key);
                if (arg->type == TL_ARG_STR) {
                    intern_str(w, NS_DVAL, ID_DEBUG_STRINGS, (uint32_t)arg->v);
                    pb_uint(&w->ann, DA_STRING_IID, (uint64_t)arg->v);
                } else {
                    pb_int(&w->ann, DA_INT, arg->v);
                }
                pb_msg(&w->te, TE_DEBUG, &w->ann);
            }
            if (s->site && s->site <= tl->nsite && tl->site[s->site - 1].file) {
                intern_site(w, s->site);
                pb_uint(&w->te, TE_SRCLOC_IID, s->site);
            }
            interned = 1;
            break;
        case TL_EV_END:
            pb_uint(&w->te, TE_TYPE, TYPE_SLICE_END);
            pb_uint(&w->te, TE_TRACK, track_uuid(tl, s->track));
            break;
        case TL_EV_WAKE:
        case TL_EV_WOKEN: {
            int wake = e->type == TL_EV_WAKE;
            const tl_flow *f = tl_flow_of(tl, s);
            uint32_t name = wake ? f->waker_name : tl->str_woken;
            pb_uint(&w->te, TE_TYPE, TYPE_INSTANT);
            pb_uint(&w->te, TE_TRACK, track_uuid(tl, wake ? f->waker_track : s->track));
            intern_str(w, NS_CAT, ID_CATEGORIES, tl->str_wake);
            intern_str(w, NS_NAME, ID_NAMES, name);
            pb_uint(&w->te, TE_CATEGORY_IIDS, tl->str_wake);
            pb_uint(&w->te, TE_NAME_IID, name);
            pb_fixed64(&w->te, wake ? TE_FLOW : TE_TERMINATING_FLOW, f->id);
            interned = 1;
            break;
        }
        }
    }
    begin_packet(w);
    pb_uint(&w->pkt, PKT_TIMESTAMP, tl_ns(ana_timeline_event_ps(tl, e)));
    if (w->in.n) pb_msg(&w->pkt, PKT_INTERNED, &w->in);
    if (interned) pb_uint(&w->pkt, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    pb_msg(&w->pkt, PKT_TRACK_EVENT, &w->te);
    return put_packet(w);
}

int ana_export_perfetto(sqlite3 *db, const ana_export_opts *opts, FILE *out,
                        ana_export_counts *counts, char *err, size_t errlen) {
    ana_timeline tl;
    if (ana_timeline_build(db, opts, &tl, err, errlen)) return -1;
    double t0 = ana_step_clock(NULL, 0);
    writer w = {.tl = &tl, .out = out, .first = 1, .compress = !(opts && opts->raw_packets),
                .at_worker = NO_BUNDLE};
    if (w.compress) w.wr = rec_worker_start_if_cpu(1);
    int rc = 0;
    for (int ns = 0; ns < NS_COUNT; ns++)
        if (!(w.seen[ns] = calloc((size_t)tl.nstr + 1, 1))) rc = -1;
    if (!(w.site_seen = calloc((size_t)tl.nsite + 1, 1))) rc = -1;
    if (rc) ana_err(err, errlen, "out of memory");
    if (!rc && write_descriptors(&w)) {
        ana_err(err, errlen, "out of memory encoding the track descriptors");
        rc = -1;
    }
    for (uint32_t i = 0; i < tl.nev && !rc; i++) {
        tl_prefetch(&tl, i);
        tl_event e = tl_event_at(&tl, i);
        if (write_event(&w, &e)) {
            ana_err(err, errlen, "out of memory encoding event %u", i);
            rc = -1;
        }
    }
    if (finish_bundles(&w) && !rc) {
        ana_err(err, errlen, "out of memory compressing the trace");
        rc = -1;
    }
    rec_worker_stop(w.wr);
    ana_step_clock("pf write", t0);
    if (counts) {
        *counts = (ana_export_counts){.slices = tl.waits + tl.transfers, .flows = tl.flows,
                                      .counters = tl.ncounter, .tracks = tl.ntrack};
    }
    for (int ns = 0; ns < NS_COUNT; ns++) free(w.seen[ns]);
    free(w.site_seen);
    pb_free(&w.pkt);
    pb_free(&w.te);
    pb_free(&w.in);
    pb_free(&w.tmp);
    pb_free(&w.ann);
    for (int k = 0; k < NJOBS; k++) {
        pb_free(&w.job[k].in);
        pb_free(&w.job[k].z);
        pb_free(&w.job[k].pkt);
        pb_free(&w.job[k].out);
        libdeflate_free_compressor(w.job[k].c);
    }
    pb_free(&w.zout);
    ana_timeline_free(&tl);
    if (rc == 0 && ferror(out)) {
        ana_err(err, errlen, "writing the trace failed (disk full?)");
        rc = -1;
    }
    return rc;
}
