/*
 * recorder.h - the recorder: engine events into RUN/trace.zst and RUN/index.db.
 *
 * This is the recorder library's one public header. The CLI (`record`,
 * `info`, `reindex`), the replayer and the analysis use it; nothing else in
 * recorder/ is meant to be called from outside.
 *
 * A run folder holds two files:
 *   trace.zst  the source of truth: independent zstd frames (a header frame
 *              with the run's metadata, one frame per chunk of events with
 *              the declarations that arrived since the previous chunk, a
 *              trailer frame with the outcome). `zstd -t` and `zstd -d`
 *              accept it; a crash loses at most the chunk being filled and
 *              the one being compressed.
 *              Byte-level layout: traces/FORMAT.md.
 *   index.db   SQLite, derived: meta, strings, tracks, sites, objects, rings,
 *              chunks, waits (paired while recording). rec_reindex rebuilds
 *              it from the trace alone; analysis adds its derived tables
 *              (transfers, causes, ...) on first use. Raw events are reachable through the `events`
 *              virtual table (rec_register_events_vtab), which decodes only
 *              the chunks a query's constraints can touch.
 *
 * Recording: rec_open, then install rec_observer's callbacks with
 * engine_set_observer, engine_run, then rec_close with the result. The
 * observer appends each event to a fixed chunk buffer (no allocation, no
 * SQLite per event); a full chunk is handed to a background thread that
 * encodes, compresses and writes it with one write() and adds its final
 * waits and transfers to index.db.tmp, while the engine fills a second
 * buffer. rec_close writes the rest of the index and renames it.
 *
 * Errors are values: every int-returning call returns 0 on success and -1
 * on error with a sentence naming the file or input at fault in err.
 */
#ifndef NPURR_RECORDER_H
#define NPURR_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "engine/engine.h"

/* Version of the trace format written by this library (meta format_version).
 * A reader accepts exactly the versions it knows, REC_FORMAT_OLDEST to
 * REC_FORMAT_VERSION (format 4 differs only in how chunks store rank, core
 * and time, format 5 in that a split run's chunks are never parts, format 6
 * in that a build could give one call site two ids); see traces/FORMAT.md. */
#define REC_FORMAT_VERSION 7
#define REC_FORMAT_OLDEST 4

/* Version of index.db's schema (meta index_version; absent in version 1).
 * 2: waits is a view over the narrow wait_rows table (docs/sql.md, "SQL over a
 * run"); version 1 stored waits as a wide table. 3: wait_rows.cause holds the
 * id of its name in strings, looked up by the view as role is (a text per
 * wait was a fifth of the derived index at EP64); analysis writes names
 * into a version 2 index as before. Readers query waits by name, which
 * every version answers alike. */
#define REC_INDEX_VERSION 3
/* Events per chunk frame. A chunk pays for its stream directory, its zstd
 * tables and (format 5) a table of its cores, and a transfer whose issue
 * fell in the previous chunk cannot be stored as a copy: at EP16 x 4096
 * tokens 262144 events per chunk take the trace from 4.21 to 3.89 bytes
 * per event against 65536, and at EP64 524288 take it 3-4 % below 262144
 * (which lets zstd use its fastest strategy, REC_ZSTD_LEVEL); 1048576
 * gain less and encode slower (64 MiB of events per chunk). Ctrl-C and
 * errors still write the partial chunk; only a killed process loses up to
 * two chunks' events, and a query of the events table decodes a whole
 * chunk. */
#define REC_CHUNK_EVENTS 524288

typedef struct rec_writer rec_writer;

typedef struct rec_run_info {
    const char *kernel;          /* -k name */
    const char *command_line;    /* shell-quoted argv of the record command, for people */
    const engine_config *config;
    int cores_per_rank, num_aic, num_aiv;
    /* What else rebuilds the run, as header keys (key, value, ..., NULL; may
     * be NULL): the session's spec_version, plugin.* and opt.* keys. */
    const char *const *spec_meta;
} rec_run_info;

/* A run's meta, key by key, from wherever the run keeps it: the value of
 * key as text, or NULL when the run has no such key. rec_reader_meta_get
 * reads a trace header (ctx a rec_reader). */
typedef const char *rec_meta_get_fn(void *ctx, const char *key);
/* rec_reader_meta as a rec_meta_get_fn (reader is a rec_reader *). */
const char *rec_reader_meta_get(void *reader, const char *key);
/* What rec_meta_get_config found beside the configuration. */
typedef struct rec_meta_config_read {
    char missing_hw[512];        /* hw.<key>s the run lacks ("" if none): their defaults were
                                  * used, so the run's timing may differ */
    unsigned char hw_recorded[64]; /* per engine_hw_param_at(i): 1 when the run has its key */
} rec_meta_config_read;
/* The engine configuration a run used (topology, chip, seed, jitter,
 * watchdog, payload, PCT schedule, every timing value), read from its typed
 * meta keys (config.*, hw.*) as the recorder wrote them: the one reader
 * record, replay, info, critical and calibrate use. *cfg starts from the
 * defaults; how (may be NULL) says which timing keys the run had. 0, or -1
 * with err naming the key whose value is malformed or missing. */
int rec_meta_get_config(rec_meta_get_fn *get, void *ctx, engine_config *cfg,
                        rec_meta_config_read *how, char *err, size_t errlen);

/* Creates RUN (mkdir -p; refuses a non-empty dir that is not an npurr run,
 * replaces trace.zst and index.db of one that is), writes the trace header
 * frame. */
int rec_open(const char *run_dir, const rec_run_info *info, rec_writer **out, char *err,
             size_t errlen);
/* rec_open with more header keys (key, value, ..., NULL), e.g. replay.opt.NAME
 * redirections of input files copied into RUN; extra_meta may be NULL. */
int rec_open_with_meta(const char *run_dir, const rec_run_info *info,
                       const char *const *extra_meta, rec_writer **out, char *err, size_t errlen);
/* Fills *obs with callbacks that record into w. */
void rec_observer(rec_writer *w, engine_observer *obs);
/* Records the declarations e already made (interned strings, named objects:
 * the setup's allocations, rings and flags, which the engine announces only
 * once, to whichever observer is installed at the time), then installs
 * rec_observer(w) on e. Lets a caller open the recorder after the kernel's
 * setup without losing its objects. */
void rec_attach(rec_writer *w, engine *e);
/* Hands the events buffered so far to the background thread without
 * waiting: call it when the run ends and before slow work that precedes
 * rec_close (the output check), so the last chunk is compressed meanwhile. */
void rec_flush(rec_writer *w);
/* Flushes the last chunk, writes the trailer (outcome), builds index.db,
 * frees w (also on error). check_status: "passed"|"failed"|"skipped";
 * check_message may be NULL. res NULL means engine_run itself failed: the
 * outcome is then recorded as "fault". */
int rec_close(rec_writer *w, const engine_result *res, const char *check_status,
              const char *check_message, char *err, size_t errlen);

/* A run split over P processes, recorded where it runs (format 6,
 * rec_split.c): each process encodes, compresses and indexes its own
 * events, process 0 writes them into the run folder, and the waits that
 * ended into its index as they come. Process 0 opens the folder as usual
 * and calls rec_split(w, P, here); process k > 0 opens a writer without a
 * folder, rec_open_part(info, k, P, here). Each attaches (rec_attach), gives the
 * engine rec_split_sink(w) (engine_split_record), runs; then every process
 * k > 0 packs the rest of its part of the index (rec_split_index_pack: the
 * waits still open, tracks, roles, counts), process 0 merges them
 * (rec_split_index_merge), and every process rec_closes (process k > 0
 * only frees its writer). */
/* here is how many of the processes share this machine's CPUs: with as
 * many of them as CPUs, each encodes in line (rec_worker_has_cpu). */
/* Process 0: its writer w will take parts from parts processes. 0, or -1
 * with err. */
int rec_split(rec_writer *w, int parts, int here, char *err, size_t errlen);
/* Process part > 0: a writer without a folder, into *out (the caller
 * rec_closes it). 0, or -1 with err. */
int rec_open_part(const rec_run_info *info, int part, int parts, int here, rec_writer **out,
                  char *err, size_t errlen);
/* The sink that hands w's windows between processes (engine_split_record);
 * it points into w, so it lives as long as w. */
engine_split_sink rec_split_sink(rec_writer *w);
/* Process k > 0: its part of the index as bytes in *out (the caller frees
 * it with engine_buf_free). */
void rec_split_index_pack(rec_writer *w, engine_buf *out);
/* Process 0: merges process part's part of the index, packed by
 * rec_split_index_pack (p, n stay the caller's), into w's index. 0, or -1
 * with err. */
int rec_split_index_merge(rec_writer *w, int part, const uint8_t *p, size_t n, char *err,
                          size_t errlen);

/* Rebuilds RUN/index.db from RUN/trace.zst alone. Returns 0 when the trace
 * is complete; 1 when it is truncated: index.db is then rebuilt from the
 * complete chunks with outcome "truncated" and err says how far the trace is
 * complete; -1 on error (nothing written). */
int rec_reindex(const char *run_dir, char *err, size_t errlen);
/* Locks the run folder run_dir (rec_run_lock.c): shared by a derive that
 * writes RUN/index.db, exclusive by whatever puts another run or index in
 * its place (record --force, reindex), so the two never overlap. Blocks
 * while the other kind is held, saying so once on stderr; a shared lock is
 * on the folder at run_dir when it is granted. Returns a descriptor for
 * rec_run_unlock (the caller owns it), or -1 with err. */
int rec_run_lock(const char *run_dir, int exclusive, char *err, size_t errlen);
/* Drops a lock rec_run_lock returned (fd -1: nothing). */
void rec_run_unlock(int fd);
/* What a run folder holds (`npurr info` prints it), from RUN/index.db and
 * the files' sizes (rec_info.c). Text fields are the run's meta values as
 * recorded ("" when absent); the rest are counts. */
typedef struct rec_run_summary {
    char *kernel, *command_line;
    char *nodes, *npus_per_node, *chip, *cores_per_rank, *num_aic, *num_aiv, *seed, *jitter;
    char *format_version, *npurr_version;
    char *outcome, *outcome_message, *check, *check_message;
    char *plugin_name, *plugin_file, *plugin_sha256, *plugin_source;   /* "" built in */
    uint64_t end_time_ps;                  /* virtual time at the end */
    uint64_t events;                       /* in the whole run */
    uint64_t kind_events[EV_KIND_COUNT];   /* per engine_event_kind */
    int64_t chunks;                        /* chunk frames the index knows */
    int64_t raw_bytes, compressed_bytes;   /* their columns before and after zstd */
    int64_t waits, open_waits, stall_ps;   /* waits, those never ended, their total */
    int64_t transfers, transfer_bytes;     /* issued transfers and the bytes they move */
    int64_t trace_bytes, index_bytes;      /* sizes of trace.zst and index.db */
} rec_run_summary;
/* Fills *s. Returns 0; 1 when s is filled but covers only part of the run:
 * the trace is truncated or the index misses chunks (err says why and how
 * far the trace is complete); -1 with err when the run cannot be read or
 * its index was not built from its trace (s then holds nothing: it would
 * describe another trace). Free a filled s with rec_run_summary_free. */
int rec_run_summary_read(const char *run_dir, rec_run_summary *s, char *err, size_t errlen);
/* Frees what rec_run_summary_read allocated in *s (not s itself). */
void rec_run_summary_free(rec_run_summary *s);

/* One timing parameter as a run used it (meta hw.*; rec_info_timing.c). */
typedef struct rec_hw_value {
    const engine_hw_param *param;
    int recorded;   /* 0: the run is older than this key */
    double value;   /* what the run used */
    int from_hw;    /* differs from the default, so it came from a --hw file */
} rec_hw_value;
/* Fills vals[i] for every engine_hw_param_at(i), i < engine_hw_count(); n is
 * the room in vals. Returns 0, or -1 with err (index unreadable, n short). */
int rec_run_timing(const char *run_dir, rec_hw_value *vals, size_t n, char *err, size_t errlen);

/* Which exact trace file an index was built from: its size, its complete
 * zstd frames and a hash of every byte. Stored in meta trace_fingerprint
 * (as rec_fingerprint_format prints it) by the recorder and by reindex;
 * analysis stamps the same text on what it derives. */
typedef struct rec_fingerprint {
    uint64_t bytes, frames, hash;
} rec_fingerprint;
/* The fingerprint of the trace file at trace_path into *fp (reads the whole
 * file): 0, or -1 with err. */
int rec_trace_fingerprint(const char *trace_path, rec_fingerprint *fp, char *err, size_t errlen);
/* *fp as the text meta trace_fingerprint stores, into out (len bytes). */
void rec_fingerprint_format(const rec_fingerprint *fp, char *out, size_t len);
/* The index's meta value for key, copied into out ("" if absent). */
void rec_index_meta_text(sqlite3 *db, const char *key, char *out, size_t len);
/* 0 when db (RUN/index.db) was built from RUN/trace.zst as it is now; -1
 * with err naming both fingerprints and the fix (`npurr reindex RUN`) when
 * the index belongs to another run or the trace changed since. fp_out (may
 * be NULL) receives the trace's fingerprint text. Every command that reads
 * an index calls it first. */
int rec_index_matches_trace(sqlite3 *db, const char *run_dir, char *fp_out, size_t fp_len,
                            char *err, size_t errlen);

/* Opens an index (RUN/index.db) read-only, as every reader must
 * (rec_index_open.c): refuses what is not a regular file, rolls back a hot
 * journal left by a killed derive when it can, and opens immutable when a
 * stray index.db-wal would make SQLite create index.db-shm. 0, or -1 with
 * err naming path; close *db with sqlite3_close either way. */
int rec_index_open_ro(const char *path, sqlite3 **db, char *err, size_t errlen);
/* The identity of the run run_dir names now (its trace.zst's inode,
 * device, size and modification time mixed), 0 if it cannot be read: a
 * reader that found index and trace disagreeing compares it with the
 * identity before it began, to tell a run swapped in by `record --force`
 * from a damaged one. */
uint64_t rec_run_identity(const char *run_dir);
/* The message for an index SQLite cannot read (sqlite_msg): names a
 * leftover index.db-journal when there is one (a rollback journal SQLite
 * must apply first, or garbage), else says the index is not npurr's. */
void rec_index_unreadable(const char *run_dir, const char *sqlite_msg, char *err, size_t errlen);

/* Sequential reader (replay, reindex). */
typedef struct rec_reader rec_reader;
/* Opens run_dir/trace.zst and reads its header. 0 with *out, which the caller
 * frees with rec_reader_close; -1 with err naming run_dir. */
int rec_reader_open(const char *run_dir, rec_reader **out, char *err, size_t errlen);
/* Header keys (same names as the meta table: kernel, config.seed, hw.*, ...)
 * and, once rec_reader_next has returned 0, the trailer's keys (outcome,
 * outcome_message, end_time_ps, events, check, check_message). NULL if
 * absent. */
const char *rec_reader_meta(rec_reader *r, const char *key);
/* The i-th key of the trace header (in the order it was written), its
 * value in *value; NULL (and *value NULL) past the last. Owned by r. */
const char *rec_reader_meta_at(rec_reader *r, size_t i, const char **value);
/* 1 event, 0 clean end, -1 error/truncated (rec_reader_error says which). */
int rec_reader_next(rec_reader *r, engine_event *ev);
/* 1 when the trace ended inside a chunk or without its trailer (a killed
 * record): what was read is all there is. */
int rec_reader_truncated(const rec_reader *r);
/* Last seq of the last complete chunk read so far. */
uint64_t rec_reader_complete_seq(const rec_reader *r);
/* Text of a string declared so far in the trace (role names, fault
 * messages), NULL if unknown. */
const char *rec_reader_string(rec_reader *r, uint32_t id);
/* Objects and call sites declared so far in the trace, by id (NULL if
 * none); replay compares them with the ones the replayed run declares. */
typedef struct rec_site_decl {
    int declared, line;
    char file[256], func[128];
} rec_site_decl;
/* Object id as the trace declared it so far; owned by r, NULL if none. */
const engine_object *rec_reader_object(rec_reader *r, uint32_t id);
/* Call site id as the trace declared it so far; owned by r, NULL if none. */
const rec_site_decl *rec_reader_site(rec_reader *r, uint32_t id);
/* Ids of strings, objects and sites declared so far are all below this. */
uint32_t rec_reader_decl_bound(const rec_reader *r);
/* 0 when the trace's header meta equals what info would record (every key
 * but npurr_version); -1 with what naming the first key that differs. */
int rec_reader_header_matches(rec_reader *r, const rec_run_info *info, char *what, size_t len);
/* Why the last rec_reader_next returned -1 ("" otherwise). */
const char *rec_reader_error(const rec_reader *r);
/* Frees r and what it read; NULL is ignored. */
void rec_reader_close(rec_reader *r);

/* Registers the `events` virtual table (temp.events) on db for run_dir's
 * trace; its chunk index is read from run_dir/index.db. Columns: seq, time,
 * rank, core, pipe TEXT, kind TEXT, sub, addr, len, value, aux, link, site,
 * object, peer. Constraints (=, <, <=, >, >=) on seq, time, rank, core and
 * (=) on kind select the chunks to decode. */
int rec_register_events_vtab(sqlite3 *db, const char *run_dir, char *err, size_t errlen);
/* Chunks decoded by every events cursor of this process so far; a test or
 * a user (EXPLAIN-like curiosity) compares it before and after a query. */
uint64_t rec_events_vtab_chunks_decoded(void);

/* One background thread running one job at a time: the recorder pipelines
 * chunk encoding and decoding with it, and analysis steps its bulk inserts
 * on it. */
typedef struct rec_worker rec_worker;
/* Starts the thread. NULL when no thread can be made (callers then do the
 * work themselves); stop it with rec_worker_stop. */
rec_worker *rec_worker_start(void);
/* 1 when the CPUs the calling thread may run on outnumber the processes
 * that share them (sharers, 1 for a process alone), so a worker it starts
 * can run beside it. 0 when they do not: bound to one CPU (mpirun binds
 * each process of a split run to a core), or as many processes as CPUs (an
 * oversubscribed split, unbound); a worker there only takes turns with
 * its caller, and costs the switches between them. */
int rec_worker_has_cpu(int sharers);
/* rec_worker_start when rec_worker_has_cpu(sharers), else NULL: the
 * recorder's writers, which then encode in line. */
rec_worker *rec_worker_start_if_cpu(int sharers);
/* Waits for the previous job, then hands fn(arg) to the thread; arg stays the
 * caller's until rec_worker_wait. */
void rec_worker_submit(rec_worker *w, void (*fn)(void *arg), void *arg);
/* Blocks until the submitted job has run; NULL returns at once. */
void rec_worker_wait(rec_worker *w);
/* Waits for the job in hand, joins the thread and frees w; NULL is ignored. */
void rec_worker_stop(rec_worker *w);
/* 1 when no job is in flight (what it wrote is then the caller's). */
int rec_worker_idle(rec_worker *w);

/* Names of event kinds and pipes as the index and the events table spell
 * them (the engine's names, with a stable KIND_n / PIPE_n fallback). */
const char *rec_kind_name(int kind);
int rec_kind_from_name(const char *name);   /* -1 if unknown */
/* The name of pipe as the index spells it ("MTE2", or "PIPE_n" when the
 * engine has none); static. */
const char *rec_pipe_name(int pipe);
/* The ranks a transfer reads from and writes to, from its raw addresses
 * (local memory belongs to the issuing rank; remote stores and RDMA atomics
 * carry a value, not a source address, in src_addr). */
void rec_transfer_ranks(int sub, uint32_t rank, uint64_t src_addr, uint64_t dst_addr,
                        int64_t *src_rank, int64_t *dst_rank);

#endif
