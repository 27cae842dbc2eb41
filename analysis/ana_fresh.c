/*
 * ana_fresh.c - whether a run's analysis tables can be served, and
 * deriving the parts that cannot: steps 1-3 of ana_open (analysis.h).
 *
 * Derived tables are only worth serving when they come from the trace as
 * it is now. So, in this order:
 *   1. RUN/index.db must have been built from RUN/trace.zst as it is now
 *      (rec_index_matches_trace): an index from another run, or a trace
 *      truncated, damaged or replaced after indexing, is refused with the
 *      fix (`npurr reindex RUN`); nothing is derived from it.
 *   2. The analysis tables come in parts (analysis.h: ANA_PART_*), and a
 *      reader asks for the parts it reads. The waits part is fresh when
 *      meta analysis.version is ANA_VERSION and analysis.trace_fingerprint
 *      equals the index's trace_fingerprint; transfers and critical_path
 *      when they are fresh and analysis.transfers / analysis.critical does
 *      (ana_derive_parts stamps them). Fresh parts are used.
 *   3. The missing ones are derived: into RUN/index.db itself when the run
 *      folder is writable (in one transaction with a rollback journal, so
 *      a kill or a full disk leaves the index as it was: ana_derive.c),
 *      else, or when the disk has no room for them, into a private
 *      per-user cache database, a copy of RUN/index.db with the derived
 *      tables added, so a read-only run (another user's, a shared folder)
 *      or a run on a full disk can still be queried. A derive holds the run
 *      folder's shared lock (rec_run_lock), so `record --force` or
 *      `reindex` cannot swap another run or index in under it. The
 *      cache file is named by the trace's fingerprint, so a cache entry can
 *      never be served for another trace; it lives in
 *      $XDG_CACHE_HOME/npurr, else $HOME/.cache/npurr, else
 *      $TMPDIR/npurr-cache-UID (a directory that must be ours and mode
 *      0700).
 * Every reader goes through ana_open, so none can bypass these checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/ana_parts.h"

/* The tables of the waits part; each other part is its one table. */
static const char *const waits_tables[] = {
    "cores", "wait_groups", "wait_labels", "word_writes", "wake_events",
    "ring_counters", "link_bytes", "last_writers", "stall_summary", "ring_occupancy"};

/* The parts a caller's flags ask for: the waits part always (every other
 * part builds on it), every part when none is named. */
static int parts_wanted(int flags) {
    int parts = flags & ANA_PARTS;
    return (parts ? parts : ANA_PARTS) | ANA_PART_WAITS;
}

/* Whether meta key is the fingerprint fp. */
static int stamped(sqlite3 *db, const char *key, const char *fp) {
    char stamp[160];
    rec_index_meta_text(db, key, stamp, sizeof stamp);
    return strcmp(stamp, fp) == 0;
}

/* The parts of want that db lacks: not derived, by another ANA_VERSION, or
 * from another trace than the one whose fingerprint is fp. When the waits
 * part is missing every part wanted is (the others are derived on it). */
static int parts_missing(sqlite3 *db, const char *fp, int want) {
    int fresh = ana_meta_i64(db, "analysis.version", 0) == ANA_VERSION &&
                stamped(db, "analysis.trace_fingerprint", fp);
    for (size_t i = 0; fresh && i < sizeof waits_tables / sizeof waits_tables[0]; i++)
        fresh = ana_has_table(db, waits_tables[i]);
    if (!fresh) return want;
    int missing = 0;
    if ((want & ANA_PART_TRANSFERS) &&
        !(stamped(db, "analysis.transfers", fp) && ana_has_table(db, "transfers")))
        missing |= ANA_PART_TRANSFERS;
    if ((want & ANA_PART_CRITICAL) &&
        !(stamped(db, "analysis.critical", fp) && ana_has_table(db, "critical_path")))
        missing |= ANA_PART_CRITICAL;
    return missing;
}

/* Whether db's analysis tables of the parts want were derived, by this
 * ANA_VERSION, from the trace whose fingerprint is fp. */
static int analysis_fresh(sqlite3 *db, const char *fp, int want) {
    return parts_missing(db, fp, want) == 0;
}

/* A word of SQL text: letters, digits, '_' (and '$', which SQLite allows). */
static int word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

/* Whether name occurs in sql as a whole word, in any case. */
static int names_word(const char *sql, const char *name) {
    size_t n = strlen(name);
    for (const char *p = sql; *p; p++) {
        if (strncasecmp(p, name, n) != 0) continue;
        if ((p == sql || !word_char(p[-1])) && !word_char(p[n])) return 1;
    }
    return 0;
}

int ana_parts_of_sql(const char *sql) {
    int parts = ANA_PART_WAITS;
    if (!sql) return parts;
    if (names_word(sql, "transfers")) parts |= ANA_PART_TRANSFERS;
    if (names_word(sql, "critical_path")) parts |= ANA_PART_CRITICAL;
    return parts;
}

/* "cause and wait tables, transfers, critical_path": what a derive of
 * parts makes, for the message a first use prints. */
static const char *parts_text(int parts, char *buf, size_t len) {
    snprintf(buf, len, "%s%s%s%s%s",
             parts & ANA_PART_WAITS ? "causes and the wait tables" : "",
             (parts & ANA_PART_WAITS) && (parts & ANA_PART_TRANSFERS) ? ", " : "",
             parts & ANA_PART_TRANSFERS ? "transfers" : "",
             (parts & (ANA_PART_WAITS | ANA_PART_TRANSFERS)) && (parts & ANA_PART_CRITICAL)
                 ? ", " : "",
             parts & ANA_PART_CRITICAL ? "critical_path" : "");
    return buf;
}

/* Copies src into out (len bytes), cut if it does not fit. */
static void copy_str(char *out, size_t len, const char *src) {
    size_t n = strlen(src);
    if (n >= len) n = len - 1;
    memcpy(out, src, n);
    out[n] = 0;
}

static int open_ro(const char *path, sqlite3 **db, char *err, size_t errlen) {
    return rec_index_open_ro(path, db, err, errlen);
}

/* Derives what the database at path (read-write) lacks of the parts
 * want, reading run_dir's trace; what it derived goes into *done. */
static int derive_into(const char *path, const char *run_dir, const char *fp, int want,
                       int *done, char *err, size_t errlen) {
    sqlite3 *db = ana_open_rw(path, err, errlen);
    if (!db) return -1;
    int missing = parts_missing(db, fp, want);
    if (done) *done = missing;
    int rc = missing ? rec_register_events_vtab(db, run_dir, err, errlen) : 0;
    if (!rc && missing) rc = ana_derive_parts(db, run_dir, missing, err, errlen);
    sqlite3_close(db);
    return rc;
}

/* A private directory for derived copies of read-only runs: created 0700
 * (unless create is 0: only looking for an existing entry), and used only
 * if it is ours and nobody else can write into it. */
static int cache_dir(int create, char *out, size_t len, char *err, size_t errlen) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const char *tmp = getenv("TMPDIR");
    char cand[3][4096];
    int n = 0;
    if (xdg && *xdg) snprintf(cand[n++], sizeof cand[0], "%s/npurr", xdg);
    if (home && *home) snprintf(cand[n++], sizeof cand[0], "%s/.cache/npurr", home);
    snprintf(cand[n++], sizeof cand[0], "%s/npurr-cache-%ld", tmp && *tmp ? tmp : "/tmp",
             (long)geteuid());
    for (int i = 0; i < n; i++) {
        /* mkdir -p the parent (~/.cache), then the directory itself. */
        char parent[4096];
        copy_str(parent, sizeof parent, cand[i]);
        char *slash = strrchr(parent, '/');
        if (create && slash && slash != parent) {
            *slash = 0;
            if (mkdir(parent, 0700) != 0 && errno != EEXIST) continue;
        }
        if (create && mkdir(cand[i], 0700) != 0 && errno != EEXIST) continue;
        struct stat st;
        if (lstat(cand[i], &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077) || access(cand[i], W_OK | X_OK) != 0)
            continue;
        copy_str(out, len, cand[i]);
        return 0;
    }
    ana_err(err, errlen, "no private cache directory is usable (tried %s%s%s%s%s): set "
            "XDG_CACHE_HOME to a directory of yours", cand[0], n > 1 ? ", " : "",
            n > 1 ? cand[1] : "", n > 2 ? ", " : "", n > 2 ? cand[2] : "");
    return -1;
}

static int copy_file(const char *from, const char *to_tmpl, char *to, size_t tolen, char *err,
                     size_t errlen) {
    snprintf(to, tolen, "%s", to_tmpl);
    int out = mkstemp(to);
    if (out < 0) {
        ana_err(err, errlen, "cannot create %s: %s", to_tmpl, strerror(errno));
        return -1;
    }
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int rc = in < 0 ? -1 : 0;
    static char buf[1 << 16];
    ssize_t n;
    while (!rc && (n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = -1;
            break;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t k = write(out, buf + off, (size_t)(n - off));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) { rc = -1; break; }
            off += k;
        }
    }
    if (close(out) != 0) rc = -1;
    if (in >= 0) close(in);
    if (rc) {
        ana_err(err, errlen, "copying %s to %s: %s", from, to, strerror(errno));
        unlink(to);
    }
    return rc;
}

/* The cache entry for a trace: named by its fingerprint and ANA_VERSION. */
static int cache_path(int create, const rec_fingerprint *f, char *dir, size_t dirlen,
                      char *path, size_t pathlen, char *err, size_t errlen) {
    if (cache_dir(create, dir, dirlen, err, errlen)) return -1;
    snprintf(path, pathlen, "%s/%016llx-%llu-a%d.db", dir, (unsigned long long)f->hash,
             (unsigned long long)f->bytes, ANA_VERSION);
    return 0;
}

/* The parts of want the cache entry at path lacks (want when there is no
 * entry of the trace fp at all); *valid says there is one. */
static int cache_missing(const char *path, const char *fp, int want, int *valid) {
    sqlite3 *db = NULL;
    char inner[512];
    *valid = 0;
    if (access(path, R_OK) != 0 || open_ro(path, &db, inner, sizeof inner) != 0) {
        sqlite3_close(db);
        return want;
    }
    char stored[160];
    rec_index_meta_text(db, "trace_fingerprint", stored, sizeof stored);
    *valid = strcmp(stored, fp) == 0;
    int missing = *valid ? parts_missing(db, fp, want) : want;
    sqlite3_close(db);
    return missing;
}

/* 1 when the cache entry at path holds fresh tables of the parts want of
 * the trace fp. */
static int cache_fresh(const char *path, const char *fp, int want) {
    int valid;
    return cache_missing(path, fp, want, &valid) == 0;
}

/* Derived tables of a run whose index.db cannot take them (a read-only
 * run, a full disk): a copy of its index, derived once per trace
 * fingerprint, in the user's cache (the parts want; an entry that has some
 * of them is copied and completed). why says which, for the message. */
static int derive_cached(const char *run_dir, const char *index, const rec_fingerprint *f,
                         const char *fp, int want, const char *why, ana_source *src, char *err,
                         size_t errlen) {
    char dir[4096], inner[1024];
    if (cache_path(1, f, dir, sizeof dir, src->db_path, sizeof src->db_path, inner,
                   sizeof inner)) {
        ana_err(err, errlen, "%s %s and its analysis tables are not derived: %s", run_dir, why,
                inner);
        return -1;
    }
    /* killed derives' copies (.derive-PID-XXXXXX and journals) go */
    static const char *const derive_tails[] = {"", "-journal", NULL};
    engine_remove_orphans(dir, ".derive-", derive_tails);
    int valid;
    cache_missing(src->db_path, fp, want, &valid);
    fprintf(stderr, "npurr: %s %s: deriving its analysis tables into %s\n", run_dir, why,
            src->db_path);
    char tmpl[4200], tmp[4200];
    snprintf(tmpl, sizeof tmpl, "%s/.derive-%ld-XXXXXX", dir, (long)getpid());
    if (copy_file(valid ? src->db_path : index, tmpl, tmp, sizeof tmp, err, errlen)) return -1;
    inner[0] = 0;
    if (derive_into(tmp, run_dir, fp, want, NULL, inner, sizeof inner) ||
        rename(tmp, src->db_path) != 0) {
        if (!inner[0]) copy_str(inner, sizeof inner, strerror(errno));
        ana_err(err, errlen, "%s: deriving analysis tables into %s: %s", run_dir, src->db_path,
                inner);
        unlink(tmp);
        return -1;
    }
    src->cached = 1;
    return 0;
}

/* SQLite's words for a write that found no room. */
static int no_room(const char *msg) {
    return strstr(msg, "database or disk is full") || strstr(msg, "No space left");
}

/* The derive itself, under the run folder's shared lock: the parts of
 * want that index.db lacks (missing), into it when the run can take them,
 * else into the user's cache. */
static int derive_locked(const char *run_dir, const char *index, int64_t events,
                         const rec_fingerprint *f, const char *fp, int want, int missing,
                         ana_source *src, char *err, size_t errlen) {
    char inner[1400];
    if (access(index, W_OK) == 0 && access(run_dir, W_OK) == 0) {
        /* Seconds at tens of millions of events: say what the wait is for,
         * and which tables this command builds. */
        char what[128];
        fprintf(stderr, "npurr: deriving the analysis tables of %s (first use, %lld events): "
                "%s\n", run_dir, (long long)events, parts_text(missing, what, sizeof what));
        if (derive_into(index, run_dir, fp, want, NULL, inner, sizeof inner) == 0) return 0;
        if (!no_room(inner)) {
            ana_err(err, errlen, "%s: deriving analysis tables: %s", run_dir, inner);
            return -1;
        }
        /* The transaction was rolled back: index.db is as it was. */
        return derive_cached(run_dir, index, f, fp, want, "has no room for its analysis tables",
                             src, err, errlen);
    }
    return derive_cached(run_dir, index, f, fp, want, "is read-only", src, err, errlen);
}

/* Waits for the turn to derive run_dir's tables: an exclusive flock on
 * index.db (SQLite locks with fcntl, which flock does not touch). Returns
 * the fd holding it, or -1 when it cannot be had (then the derive goes on
 * unordered, as before, and SQLite's own lock decides). */
static int derive_turn(const char *index, const char *run_dir) {
    int fd = open(index, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
    if (errno != EWOULDBLOCK) {
        close(fd);
        return -1;
    }
    fprintf(stderr, "npurr: %s: waiting for another reader deriving its analysis tables\n",
            run_dir);
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

/* The parts of want index.db still lacks now (another reader, whose turn
 * came first, may have derived them). */
static int now_missing(const char *index, const char *fp, int want) {
    sqlite3 *db = NULL;
    char inner[512];
    if (open_ro(index, &db, inner, sizeof inner) != 0) {
        sqlite3_close(db);
        return want;
    }
    int missing = parts_missing(db, fp, want);
    sqlite3_close(db);
    return missing;
}

/* index.db of run_dir opened read-only and checked (it exists, has its
 * meta, belongs to the trace; a truncated run noted in src): 1 when the
 * parts want asks for are derived and current, 0 when not (*events the
 * run's count, for the progress line), -1 with err. */
static int index_state(const char *run_dir, const char *index, int flags, int want,
                       ana_source *src, int64_t *events, char *err, size_t errlen) {
    struct stat sb;
    if (stat(index, &sb) != 0) {
        ana_err(err, errlen, "%s: no such file: is '%s' a run folder written by `npurr record`?",
                index, run_dir);
        return -1;
    }
    sqlite3 *db = NULL;
    if (open_ro(index, &db, err, errlen)) return -1;
    if (!ana_has_table(db, "meta")) {
        rec_index_unreadable(run_dir, sqlite3_errcode(db) != SQLITE_OK ? sqlite3_errmsg(db)
                                                                        : "no meta table",
                             err, errlen);
        sqlite3_close(db);
        return -1;
    }
    if (rec_index_matches_trace(db, run_dir, src->trace_fingerprint,
                                sizeof src->trace_fingerprint, err, errlen)) {
        sqlite3_close(db);
        return -1;
    }
    char outcome[64];
    rec_index_meta_text(db, "outcome", outcome, sizeof outcome);
    if (strcmp(outcome, "truncated") == 0) {
        char msg[600];
        rec_index_meta_text(db, "outcome_message", msg, sizeof msg);
        src->partial = 1;
        snprintf(src->partial_note, sizeof src->partial_note,
                 "warning: %s; what is shown covers only its complete chunks", msg);
    }
    int fresh = analysis_fresh(db, src->trace_fingerprint, want);
    /* A read-only connection is served what is there: the parts derived so
     * far (at least the waits part); a table of a part not derived yet is
     * then missing from it. */
    if (!fresh && (flags & ANA_OPEN_NO_DERIVE) && (flags & ANA_PARTS) == 0)
        fresh = analysis_fresh(db, src->trace_fingerprint, ANA_PART_WAITS);
    *events = ana_meta_i64(db, "events", 0);
    sqlite3_close(db);
    return fresh ? 1 : 0;
}

static int ensure_fresh(const char *run_dir, int flags, ana_source *src, char *err,
                        size_t errlen) {
    memset(src, 0, sizeof *src);
    char index[4096], inner[1400];
    if (snprintf(index, sizeof index, "%s/index.db", run_dir) >= (int)sizeof index) {
        ana_err(err, errlen, "run path '%s' is too long", run_dir);
        return -1;
    }
    snprintf(src->run_dir, sizeof src->run_dir, "%s", run_dir);
    snprintf(src->db_path, sizeof src->db_path, "%s", index);
    int want = parts_wanted(flags);
    int64_t events = 0;
    int fresh = index_state(run_dir, index, flags, want, src, &events, err, errlen);
    if (fresh < 0) return -1;
    if (fresh) return 0;

    rec_fingerprint f;
    char trace[4200], dir[4096], cached[4200];
    snprintf(trace, sizeof trace, "%s/trace.zst", run_dir);
    if (rec_trace_fingerprint(trace, &f, err, errlen)) return -1;
    /* Derived before into the cache (the run read-only or its disk full
     * then): served from there. */
    if (cache_path(0, &f, dir, sizeof dir, cached, sizeof cached, inner, sizeof inner) == 0 &&
        (cache_fresh(cached, src->trace_fingerprint, want) ||
         ((flags & ANA_OPEN_NO_DERIVE) && cache_fresh(cached, src->trace_fingerprint,
                                                      ANA_PART_WAITS)))) {
        snprintf(src->db_path, sizeof src->db_path, "%s", cached);
        src->cached = 1;
        return 0;
    }
    if (flags & ANA_OPEN_NO_DERIVE) {
        ana_err(err, errlen, "%s: its analysis tables are not derived yet, and this connection "
                "may not write them (a read-only connection); run `npurr stats %s` once, or "
                "open index.db read-write", run_dir, run_dir);
        return -1;
    }
    /* From here to the end of the derive no run or index may be swapped in
     * (rec_run_lock.c); one that was, between the checks above and the
     * lock, is seen by the caller's identity check and the step rerun. */
    int lock = rec_run_lock(run_dir, 0, err, errlen);
    if (lock < 0) return -1;
    /* One deriver at a time: the others wait for it and then use what it
     * derived, instead of each failing on SQLite's lock after 5 s. */
    int one = derive_turn(index, run_dir);
    int missing = now_missing(index, src->trace_fingerprint, want), rc = 0;
    if (missing)
        rc = derive_locked(run_dir, index, events, &f, src->trace_fingerprint, want, missing,
                           src, err, errlen);
    if (one >= 0) close(one);   /* closing releases the flock */
    rec_run_unlock(lock);
    return rc;
}

/* `record --force` swaps a whole run folder in by rename while a reader
 * opens index.db and trace.zst by name, one after the other: a reader
 * caught between them sees an index and a trace of two runs. When the
 * folder was replaced while a step ran, the step is run again on the run
 * now in place. Each retry needs another swap during the step; a loop of
 * `record --force` on a loaded machine swaps faster than a derive runs, so
 * the bound is generous (a reader gives up only after 10 such swaps). */
enum { SWAP_RETRIES = 10 };

int ana_fresh_ensure(const char *run_dir, int flags, ana_source *src, char *err,
                     size_t errlen) {
    for (int attempt = 0;; attempt++) {
        uint64_t before = rec_run_identity(run_dir);
        int rc = ensure_fresh(run_dir, flags, src, err, errlen);
        if (!rc || attempt == SWAP_RETRIES || !before || rec_run_identity(run_dir) == before)
            return rc;
    }
}

/* The index served must be the one whose trace and tables were checked. */
static int open_checked(const char *run_dir, int flags, sqlite3 **out, ana_source *src,
                        char *err, size_t errlen) {
    if (ana_fresh_ensure(run_dir, flags, src, err, errlen)) return -1;
    sqlite3 *db = NULL;
    if (open_ro(src->db_path, &db, err, errlen)) return -1;
    char stored[160];
    rec_index_meta_text(db, "trace_fingerprint", stored, sizeof stored);
    if (strcmp(stored, src->trace_fingerprint) != 0 ||
        !analysis_fresh(db, src->trace_fingerprint,
                        (flags & ANA_OPEN_NO_DERIVE) && !(flags & ANA_PARTS)
                            ? ANA_PART_WAITS : parts_wanted(flags))) {
        ana_err(err, errlen, "%s changed while it was opened (another record --force?): run "
                "the command again", run_dir);
        sqlite3_close(db);
        return -1;
    }
    if (rec_register_events_vtab(db, run_dir, err, errlen) ||
        ana_packed_register(db, err, errlen)) {
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

int ana_fresh_open(const char *run_dir, int flags, sqlite3 **out, ana_source *src, char *err,
                   size_t errlen) {
    for (int attempt = 0;; attempt++) {
        uint64_t before = rec_run_identity(run_dir);
        if (open_checked(run_dir, flags, out, src, err, errlen) == 0) return 0;
        if (attempt == SWAP_RETRIES || !before || rec_run_identity(run_dir) == before) return -1;
    }
}
