/*
 * bench_analysis.c - analysis over a big trace: `stats`, the queries of
 * docs/sql.md, and a full scan of the `events` virtual table.
 *
 * Usage: bench_analysis [RUN]            time an existing run
 *        bench_analysis --events N       synthesize a run of about N events
 *                                        (default 10500000) in a temp dir
 *        bench_analysis --out DIR        synthesize into DIR and keep it
 *                                        (profile derive or queries on it)
 *
 * No kernel of the repository makes 10 million events quickly, so without
 * RUN the benchmark writes a synthetic run through the recorder's own API
 * (rec_open, rec_observer's callbacks, rec_close): 64 producer/consumer
 * core pairs on 8 ranks, each pair streaming items through a 4-slot ring
 * with the event pattern of a real ring kernel (MTE3 copy, flag wait, tail
 * store; ring_data wait woken by that store, MTE2 copy, head store;
 * ring_space waits when the ring is full). Then ana_derive, and the timed
 * parts: every `stats` grouping, every query of docs/sql.md, a Chrome
 * export, a full events scan. Targets (issue 7): stats under 1 s; the
 * events scan at 20 M events/s or more.
 */
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "bench/bench_support.h"
#include "recorder/recorder.h"

#define RANKS 8
#define PAIRS_PER_RANK 8
#define CAP 4
#define SLOT 4096

typedef struct synth {
    engine_observer obs;
    uint64_t seq;
    int cpr;
} synth;

static void emit(synth *s, engine_event ev) {
    ev.seq = ++s->seq;
    s->obs.on_event(s->obs.ctx, &ev);
}

static uint32_t track1(int cpr, int rank, int core, int pipe) {
    return engine_track_id((uint32_t)cpr, (uint32_t)rank, (uint32_t)core, (uint32_t)pipe) + 1;
}

/* One pair's state: producer and consumer cores, ring words. */
typedef struct pair {
    int rank, prod, cons;
    uint32_t ring, head, tail;
    int64_t head_v, tail_v;
    uint64_t last_tail_seq, last_head_seq;
} pair;

/* The rings of every pair (objects and their names) and the cores' roles. */
static void declare_pairs(synth *s, pair *pairs, int num_aic) {
    uint32_t next_obj = 1, next_str = 4;
    for (int r = 0; r < RANKS; r++)
        for (int k = 0; k < PAIRS_PER_RANK; k++) {
            pair *p = &pairs[r * PAIRS_PER_RANK + k];
            memset(p, 0, sizeof *p);
            p->rank = r;
            p->prod = num_aic + 2 * k;
            p->cons = num_aic + 2 * k + 1;
            char name[64];
            uint32_t names[3];
            for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof name, "ring r%d.%d%s", r, k,
                         i == 0 ? "" : i == 1 ? ".head" : ".tail");
                names[i] = next_str++;
                s->obs.on_string(s->obs.ctx, names[i], name);
            }
            engine_object ring = {0}, h = {0}, t = {0};
            ring.id = p->ring = next_obj++;
            h.id = p->head = next_obj++;
            t.id = p->tail = next_obj++;
            ring.kind = OBJ_RING; ring.name = names[0]; ring.rank = r; ring.size = CAP;
            ring.head = h.id; ring.tail = t.id; ring.role = 3;
            ring.producer_rank = ring.consumer_rank = r;
            h.kind = OBJ_RING_HEAD; h.name = names[1]; h.rank = r; h.width = 8; h.ring = ring.id;
            h.addr = gm_make(r, 4096 + 64 * (uint64_t)k);
            t = h;
            t.id = p->tail;
            t.kind = OBJ_RING_TAIL; t.name = names[2]; t.addr = gm_make(r, 8192 + 64 * (uint64_t)k);
            s->obs.on_object(s->obs.ctx, &ring);
            s->obs.on_object(s->obs.ctx, &h);
            s->obs.on_object(s->obs.ctx, &t);
            engine_event role = {.kind = EV_ROLE, .rank = (uint32_t)r, .core = (uint32_t)p->prod,
                                 .pipe = PIPE_S, .value = 1};
            emit(s, role);
            role.core = (uint32_t)p->cons;
            role.value = 2;
            emit(s, role);
        }
}

/* The producer's side of one item: a ring_space wait when the ring is
 * full (woken by the consumer's head store), then the MTE3 put and its
 * flag wait. t is the virtual clock. */
static void emit_producer_item(synth *s, pair *p, uint64_t *t) {
    uint32_t R = (uint32_t)p->rank, P = (uint32_t)p->prod, C = (uint32_t)p->cons;
    /* producer: full ring -> ring_space wait woken by the last head store */
    if (p->tail_v - p->head_v >= CAP) {
        engine_event b = {.kind = EV_GM_WAIT_BEGIN, .time = *t, .rank = R, .core = P,
                          .pipe = PIPE_S, .sub = COND_GE, .aux = p->tail_v + 1 - CAP,
                          .value = p->head_v, .object = p->head, .site = 1};
        emit(s, b);
        *t += 5000;
        p->head_v++;
        engine_event hs = {.kind = EV_RING_HEAD, .time = *t, .rank = R, .core = C,
                           .pipe = PIPE_S, .value = p->head_v, .object = p->head,
                           .peer = R, .site = 2};
        emit(s, hs);
        p->last_head_seq = s->seq;
        engine_event e = b;
        e.kind = EV_GM_WAIT_END;
        e.time = *t;
        e.value = p->head_v;
        e.link = p->last_head_seq;
        e.peer = track1(s->cpr, p->rank, p->cons, PIPE_S);
        emit(s, e);
    }
    engine_event is = {.kind = EV_XFER_ISSUE, .time = *t, .rank = R, .core = P,
                       .pipe = PIPE_MTE3, .sub = XFER_MTE3, .len = SLOT,
                       .addr = gm_make(p->rank, 65536).a, .value = (int64_t)*t, .site = 1,
                       .peer = R};
    emit(s, is);
    uint64_t issue = s->seq;
    engine_event fb = {.kind = EV_FLAG_WAIT_BEGIN, .time = *t, .rank = R, .core = P,
                       .pipe = PIPE_S, .sub = 7, .value = 0, .aux = (int64_t)*t + 3000,
                       .site = 1};
    emit(s, fb);
    *t += 3000;
    engine_event dn = is;
    dn.kind = EV_XFER_DONE;
    dn.time = *t;
    dn.link = issue;
    emit(s, dn);
    engine_event fe = fb;
    fe.kind = EV_FLAG_WAIT_END;
    fe.time = *t;
    fe.link = s->seq;
    fe.peer = track1(s->cpr, p->rank, p->prod, PIPE_MTE3);
    emit(s, fe);
}

/* The consumer's side: a data wait woken by the producer's tail store,
 * the MTE2 read, and every other item a slot freed at once. */
static void emit_consumer_item(synth *s, pair *p, uint64_t t, uint64_t *items) {
    uint32_t R = (uint32_t)p->rank, P = (uint32_t)p->prod, C = (uint32_t)p->cons;
    /* consumer waits for data, woken by the tail store */
    engine_event cb = {.kind = EV_GM_WAIT_BEGIN, .time = t, .rank = R, .core = C,
                       .pipe = PIPE_S, .sub = COND_GT, .aux = p->tail_v,
                       .value = p->tail_v, .object = p->tail, .site = 2};
    emit(s, cb);
    p->tail_v++;
    engine_event ts = {.kind = EV_RING_TAIL, .time = t, .rank = R, .core = P,
                       .pipe = PIPE_S, .value = p->tail_v, .object = p->tail, .peer = R,
                       .site = 1};
    emit(s, ts);
    p->last_tail_seq = s->seq;
    engine_event ce = cb;
    ce.kind = EV_GM_WAIT_END;
    ce.value = p->tail_v;
    ce.link = p->last_tail_seq;
    ce.peer = track1(s->cpr, p->rank, p->prod, PIPE_S);
    emit(s, ce);
    engine_event ci = {.kind = EV_XFER_ISSUE, .time = t, .rank = R, .core = C,
                       .pipe = PIPE_MTE2, .sub = XFER_MTE2, .len = SLOT,
                       .aux = (int64_t)gm_make(p->rank, 65536).a, .value = (int64_t)t,
                       .site = 2, .peer = R};
    emit(s, ci);
    engine_event cd = ci;
    cd.kind = EV_XFER_DONE;
    cd.time = t + 3000;
    cd.link = s->seq;
    emit(s, cd);
    /* every other item the consumer frees a slot right away */
    if ((*items)++ % 2 == 0) {
        p->head_v++;
        engine_event hs = {.kind = EV_RING_HEAD, .time = t + 3000, .rank = R,
                           .core = C, .pipe = PIPE_S, .value = p->head_v,
                           .object = p->head, .peer = R, .site = 2};
        emit(s, hs);
        p->last_head_seq = s->seq;
    }
}

static int synthesize(const char *run, uint64_t target, char *err, size_t errlen) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = RANKS;
    int num_aic = 24, num_aiv = 48, cpr = num_aic + num_aiv;
    rec_run_info info = {"synthetic-rings", "bench_analysis (synthetic events)", &cfg, cpr,
                         num_aic, num_aiv, NULL};
    rec_writer *w = NULL;
    if (rec_open(run, &info, &w, err, errlen)) return -1;
    synth s = {.cpr = cpr};
    rec_observer(w, &s.obs);
    s.obs.on_string(s.obs.ctx, 1, "Producer");
    s.obs.on_string(s.obs.ctx, 2, "Consumer");
    s.obs.on_string(s.obs.ctx, 3, "local");
    engine_site site = {1, "bench_analysis.c", 100, "producer"};
    s.obs.on_site(s.obs.ctx, &site);
    engine_site site2 = {2, "bench_analysis.c", 200, "consumer"};
    s.obs.on_site(s.obs.ctx, &site2);
    pair pairs[RANKS * PAIRS_PER_RANK];
    declare_pairs(&s, pairs, num_aic);
    uint64_t t = 0;
    uint64_t items = 0;
    while (s.seq < target) {
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && s.seq < target; i++) {
            t += 1000;
            emit_producer_item(&s, &pairs[i], &t);
            emit_consumer_item(&s, &pairs[i], t, &items);
        }
    }
    engine_event end = {.kind = EV_RUN_END, .time = t + 3000, .value = OUTCOME_COMPLETED};
    emit(&s, end);
    engine_result res = {0};
    res.outcome = OUTCOME_COMPLETED;
    res.end_time = t + 3000;
    res.events = s.seq;
    return rec_close(w, &res, "skipped", NULL, err, errlen);
}

/* The ```sql blocks of docs/sql.md (next to this file's ../docs). */
static int docs_queries(char **q, char **head, int max) {
    char here[1024], path[1100];
    snprintf(here, sizeof here, "%s", __FILE__);
    snprintf(path, sizeof path, "%s/../docs/sql.md", dirname(here));
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[2048], heading[256] = "";
    int n = 0, in = 0;
    size_t len = 0;
    char *sql = NULL;
    while (fgets(line, sizeof line, f)) {
        if (!in && !strncmp(line, "## ", 3)) {
            snprintf(heading, sizeof heading, "%.200s", line + 3);
            heading[strcspn(heading, "\n")] = 0;
        } else if (!in && !strncmp(line, "```sql", 6)) {
            in = 1;
            sql = calloc(1, 1);
            len = 0;
        } else if (in && !strncmp(line, "```", 3)) {
            in = 0;
            if (n < max && sql) {
                q[n] = sql;
                head[n++] = strdup(heading);
            } else {
                free(sql);
            }
            sql = NULL;
        } else if (in && sql) {
            size_t l = strlen(line);
            char *p = realloc(sql, len + l + 1);
            if (!p) break;
            sql = p;
            memcpy(sql + len, line, l + 1);
            len += l;
        }
    }
    free(sql);
    fclose(f);
    return n;
}

/* The stall tables of every grouping, the queries of docs/sql.md and a Chrome
 * export, each timed on db. */
static int time_reports(sqlite3 *db) {
    char err[1024];
    for (int by = 0; by < ANA_BY_COUNT; by++) {
        ana_stall_table t;
        double t0 = now_s();
        if (ana_stall_table_get(db, (ana_group_by)by, 0, &t, err, sizeof err)) {
            fprintf(stderr, "bench_analysis: %s\n", err);
            return -1;
        }
        double dt = now_s() - t0;
        printf("stats --by %-6s %8.3f s  (%zu groups)%s\n", ana_group_by_name((ana_group_by)by),
               dt, t.groups, by == ANA_BY_ROLE ? "  [target: stall summary < 1 s]" : "");
        ana_stall_table_free(&t);
    }
    char *q[32], *head[32];
    int nq = docs_queries(q, head, 32);
    FILE *null = fopen("/dev/null", "w");
    for (int i = 0; i < nq; i++) {
        double t0 = now_s();
        int rc = ana_sql_print(db, q[i], 1, null, err, sizeof err);
        printf("docs query %-58.58s %8.3f s%s\n", head[i], now_s() - t0, rc ? "  FAILED" : "");
        if (rc) fprintf(stderr, "  %s\n", err);
        free(q[i]);
        free(head[i]);
    }
    if (!nq) printf("docs/sql.md not found next to the sources: its queries were not timed\n");
    if (null) fclose(null);
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
        ana_export_counts n = {0};
        double t0 = now_s();
        int rc = ana_export_chrome(db, NULL, sink, &n, err, sizeof err);
        printf("export --chrome (to /dev/null): %.2f s, %llu slices, %llu tracks, %llu flows, "
               "%llu counter samples%s\n",
               now_s() - t0, (unsigned long long)n.slices, (unsigned long long)n.tracks,
               (unsigned long long)n.flows, (unsigned long long)n.counters, rc ? "  FAILED" : "");
        fclose(sink);
    }
    return 0;
}

/* Two counts, then a full scan of the events virtual table, timed. */
static void time_events_scan(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    long long events = 0, waits = 0;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key = 'events'),"
                               " (SELECT COUNT(*) FROM waits)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        events = sqlite3_column_int64(st, 0);
        waits = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    printf("events: %lld, waits: %lld\n", events, waits);
    if (time_reports(db)) return;
    double t0 = now_s();
    long long rows = 0, sum = 0;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*), SUM(value) FROM events", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        rows = sqlite3_column_int64(st, 0);
        sum = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    double dt = now_s() - t0;
    printf("full events scan (SELECT COUNT(*), SUM(value) FROM events): %lld rows in %.2f s = "
           "%.1f M events/s  [target: >= 20 M events/s] (checksum %lld)\n",
           rows, dt, dt > 0 ? (double)rows / dt / 1e6 : 0.0, sum);
}

/* The synthetic trace into run (out, or a temporary folder named in tmp). */
static const char *make_trace(const char *out, uint64_t target, char *tmp, size_t tmplen) {
    static char path[300];
    char err[1024];
    const char *run = out;
    if (!run) {
        snprintf(tmp, tmplen, "/tmp/npurr_bench_ana_XXXXXX");
        if (!mkdtemp(tmp)) {
            perror("mkdtemp");
            return NULL;
        }
        snprintf(path, sizeof path, "%s/run", tmp);
        run = path;
    }
    printf("trace: synthetic (no kernel makes %llu events quickly): %d producer/consumer "
           "ring pairs on %d ranks, written through rec_observer\n",
           (unsigned long long)target, RANKS * PAIRS_PER_RANK, RANKS);
    double t0 = now_s();
    if (synthesize(run, target, err, sizeof err)) {
        fprintf(stderr, "bench_analysis: %s\n", err);
        return NULL;
    }
    printf("record (synthetic events -> trace.zst + index.db): %.2f s\n", now_s() - t0);
    return run;
}

int main(int argc, char **argv) {
    const char *run = NULL, *out = NULL;
    uint64_t target = 10500000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc) target = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: bench_analysis [RUN] [--events N] [--out DIR]\n");
            return 0;
        } else run = argv[i];
    }
    char err[1024], tmp[256] = "";
    if (run) printf("trace: %s\n", run);
    else if (!(run = make_trace(out, target, tmp, sizeof tmp))) return 1;
    double t0 = now_s();
    if (ana_open(run, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "bench_analysis: %s\n", err);
        return 1;
    }
    printf("ana_derive (causes, word_writes, ring_counters, link_bytes, views): %.2f s\n",
           now_s() - t0);
    sqlite3 *db = NULL;
    if (ana_open(run, ANA_OPEN_AS_IS, &db, NULL, err, sizeof err)) {
        fprintf(stderr, "bench_analysis: %s\n", err);
        return 1;
    }
    time_events_scan(db);
    sqlite3_close(db);
    if (tmp[0]) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    }
    return 0;
}
