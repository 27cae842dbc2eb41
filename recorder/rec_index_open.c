/*
 * rec_index_open.c - rec_index_open_ro: how every reader opens a run's
 * index.db, so that reading never writes and never hangs.
 *
 *   - index.db must be a regular file (engine_check_input): SQLite would
 *     block forever opening a FIFO.
 *   - A hot rollback journal (index.db-journal left by a derive that was
 *     killed) is rolled back first when the run is writable: SQLite refuses
 *     a read-only connection on a hot journal, and the rollback restores
 *     the index as it was before that derive began.
 *   - A stray index.db-wal (npurr never uses WAL; someone's `PRAGMA
 *     journal_mode=WAL`), or a header that says WAL, would make SQLite
 *     create index.db-shm beside it, a reader writing into the run. Then
 *     the index is opened immutable: no lock, no -shm, the file read as
 *     it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/rec_internal.h"

/* SQLite's URI filename: '%', '?' and '#' escaped. */
static int uri_of(const char *path, char *out, size_t len) {
    size_t n = (size_t)snprintf(out, len, "file:");
    for (const char *p = path; *p; p++) {
        if (n + 4 >= len) return -1;
        if (*p == '%' || *p == '?' || *p == '#')
            n += (size_t)snprintf(out + n, len - n, "%%%02X", (unsigned char)*p);
        else
            out[n++] = *p;
    }
    return snprintf(out + n, len - n, "?immutable=1") >= (int)(len - n) ? -1 : 0;
}

/* Byte 18 of a SQLite header is 2 in WAL mode. */
static int header_says_wal(const char *path) {
    char why[64];
    int fd = engine_open_input(path, why, sizeof why);
    if (fd < 0) return 0;
    unsigned char h[20];
    int wal = read(fd, h, sizeof h) == (ssize_t)sizeof h && h[18] == 2;
    close(fd);
    return wal;
}

int rec_index_open_ro(const char *path, sqlite3 **db, char *err, size_t errlen) {
    *db = NULL;
    char why[200], side[4300];
    if (engine_check_input(path, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    struct stat st;
    snprintf(side, sizeof side, "%s-journal", path);
    if (stat(side, &st) == 0 && st.st_size > 0 && access(path, W_OK) == 0) {
        /* The first read of a read-write connection rolls a hot journal
         * back (and leaves a journal that is not hot alone). */
        sqlite3 *rw = NULL;
        if (sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
            sqlite3_busy_timeout(rw, 5000);
            sqlite3_exec(rw, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
        }
        sqlite3_close(rw);
    }
    snprintf(side, sizeof side, "%s-wal", path);
    int immutable = stat(side, &st) == 0 || header_says_wal(path);
    char uri[8800];
    if (immutable && uri_of(path, uri, sizeof uri)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0);
    if (sqlite3_open_v2(immutable ? uri : path, db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, *db ? sqlite3_errmsg(*db) : "cannot open");
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, 5000);
    return 0;
}

uint64_t rec_run_identity(const char *run_dir) {
    /* The trace file, not the folder: a folder's inode is soon reused after
     * record --force removes the old run, and its times change whenever a
     * reader's derive makes a journal in it; a new run always brings a new
     * trace.zst, which nothing else ever modifies. */
    char path[4200];
    struct stat st;
    if (rec_path(path, sizeof path, run_dir, "trace.zst") || stat(path, &st) != 0) return 0;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    uint64_t parts[5] = {(uint64_t)st.st_ino, (uint64_t)st.st_dev, (uint64_t)st.st_size,
                         (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec};
    for (int i = 0; i < 5; i++) h = (h ^ parts[i]) * 0x100000001B3ull;
    return h ? h : 1;
}
