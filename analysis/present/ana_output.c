/*
 * ana_output.c - where an export or report goes: standard output for "-",
 * a plain file, or, for a name ending in ".gz", a gzip stream (zlib) behind
 * an ordinary FILE * (glibc's fopencookie), so the writers need not know.
 * Perfetto opens gzipped traces directly; a Chrome JSON trace shrinks
 * about tenfold.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"

static ssize_t gz_write(void *cookie, const char *buf, size_t size) {
    if (!size) return 0;
    int n = gzwrite((gzFile)cookie, buf, (unsigned)size);
    return n > 0 ? (ssize_t)n : -1;
}

static int gz_close(void *cookie) {
    return gzclose((gzFile)cookie) == Z_OK ? 0 : -1;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

FILE *ana_output_open(const char *path, char *err, size_t errlen) {
    if (!strcmp(path, "-")) return stdout;
    if (!ends_with(path, ".gz")) {
        FILE *f = fopen(path, "w");
        if (!f) ana_err(err, errlen, "%s: %s", path, strerror(errno));
        else setvbuf(f, NULL, _IOFBF, 1 << 20);
        return f;
    }
    gzFile gz = gzopen(path, "wb6");
    if (!gz) {
        ana_err(err, errlen, "%s: %s", path, errno ? strerror(errno) : "gzopen failed");
        return NULL;
    }
    gzbuffer(gz, 1 << 20);
    cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
    FILE *f = fopencookie(gz, "w", io);
    if (!f) {
        gzclose(gz);
        ana_err(err, errlen, "%s: cannot open a gzip stream", path);
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

int ana_output_close(FILE *f, const char *path, char *err, size_t errlen) {
    if (f == stdout) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            ana_err(err, errlen, "standard output: write failed");
            return -1;
        }
        return 0;
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        ana_err(err, errlen, "%s: write failed (disk full?)", path);
        return -1;
    }
    return 0;
}
