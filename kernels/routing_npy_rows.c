/*
 * routing_npy_rows.c - the npy routing kind: rows of a real routing array
 * read from a NumPy file (`--routing npy:PATH`).
 *
 * The file name follows the input grammar of routing_npy_path.c, the header
 * is parsed strictly by routing_npy.c; this file opens rank's file, checks
 * that it holds exactly the array its header announces and the shape the
 * run needs, and reads the rank's rows, refusing an expert id out of range
 * or named twice in a row. routing.c's kind table calls
 * routing_npy_generate_rows.
 */
#include "routing.h"

#include "kit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* npy:PATH: a real routing array [rows, topk] of int32 or int64
 * (-1 = dropped slot) from NumPy's .npy format (versions 1-3, C order,
 * either byte order). PATH with "{rank}" names one file per rank holding
 * exactly that rank's tokens; otherwise one file holds every rank's rows
 * back to back in rank order and rank r reads from its first row on.
 * Weights are drawn as for the other kinds (stream 0 of the rank). */
/* rank's file: PATH with its "{rank}" replaced (routing_npy_path.c). */
static int npy_path(const routing_spec *spec, int rank, char *out, size_t outlen, char *err,
                    size_t errlen) {
    if (routing_npy_rank_path(spec->arg, rank, out, outlen) == 0) return 0;
    snprintf(err, errlen, "--routing %s: path too long", spec->text);
    return -1;
}

typedef struct npy_file {
    FILE *f;
    int64_t rows, cols;
    int elem;        /* 4 or 8 */
    int swap;        /* big-endian data */
    long data_off;
} npy_file;

/* Opens path and reads its header (routing_npy_parse) and checks that the
 * file holds exactly the array the header announces. */
static int npy_open(const char *path, const char *spec_text, npy_file *nf, char *err,
                    size_t errlen) {
    memset(nf, 0, sizeof *nf);
    char open_why[200];
    nf->f = kit_fopen_input(path, open_why, sizeof open_why);
    if (!nf->f) {
        snprintf(err, errlen, "--routing %s: cannot open %s: %s", spec_text, path, open_why);
        return -1;
    }
    struct stat st;
    if (fstat(fileno(nf->f), &st) != 0) {
        snprintf(err, errlen, "--routing %s: %s: %s", spec_text, path, strerror(errno));
        goto fail;
    }
    /* The header: 12 bytes of preamble and a dict NumPy keeps short. */
    size_t want = (size_t)st.st_size < (1u << 16) + 12 ? (size_t)st.st_size : (1u << 16) + 12;
    unsigned char *buf = malloc(want ? want : 1);
    char why[200];
    routing_npy_header h;
    int rc = !buf || fread(buf, 1, want, nf->f) != want
                 ? (snprintf(why, sizeof why, "cannot be read"), -1)
                 : routing_npy_parse(buf, want, &h, why, sizeof why);
    free(buf);
    if (rc) {
        snprintf(err, errlen, "--routing %s: %s %s", spec_text, path, why);
        goto fail;
    }
    if ((uint64_t)st.st_size - h.data_off != h.data_bytes) {
        snprintf(err, errlen, "--routing %s: %s holds %llu bytes of data but its header "
                 "announces (%lld, %lld) x %d bytes = %llu", spec_text, path,
                 (unsigned long long)((uint64_t)st.st_size - h.data_off), (long long)h.rows,
                 (long long)h.cols, h.elem, (unsigned long long)h.data_bytes);
        goto fail;
    }
    nf->rows = h.rows;
    nf->cols = h.cols;
    nf->elem = h.elem;
    nf->swap = h.swap;
    nf->data_off = (long)h.data_off;
    return 0;
fail:
    fclose(nf->f);
    nf->f = NULL;
    return -1;
}

int routing_npy_shape(const routing_spec *spec, int rank, int64_t *rows, int64_t *cols,
                      int *per_rank, char *err, size_t errlen) {
    char path[ROUTING_SPEC_MAX + 32];
    npy_file nf;
    if (npy_path(spec, rank, path, sizeof path, err, errlen) ||
        npy_open(path, spec->text, &nf, err, errlen))
        return -1;
    fclose(nf.f);
    *rows = nf.rows;
    *cols = nf.cols;
    *per_rank = routing_npy_per_rank(spec->arg);
    return 0;
}

static int64_t npy_value(const unsigned char *p, int elem, int swap) {
    unsigned char b[8];
    for (int i = 0; i < elem; i++) b[i] = swap ? p[elem - 1 - i] : p[i];
    return kit_int_at(b, elem);
}

int routing_npy_generate_rows(const routing_spec *spec, const routing_shape *shape, uint64_t seed,
                              int rank, int64_t first_row, int tokens, int32_t *ids,
                              float *weights, char *err, size_t errlen) {
    char path[ROUTING_SPEC_MAX + 32];
    npy_file nf;
    int per_rank = routing_npy_per_rank(spec->arg);
    if (npy_path(spec, rank, path, sizeof path, err, errlen) ||
        npy_open(path, spec->text, &nf, err, errlen))
        return -1;
    int64_t first = per_rank ? 0 : first_row;
    int rc = -1;
    unsigned char *buf = NULL;
    if (nf.cols != shape->topk) {
        snprintf(err, errlen, "--routing %s: %s has %lld columns but --topk is %d", spec->text,
                 path, (long long)nf.cols, shape->topk);
        goto out;
    }
    if (per_rank ? nf.rows != tokens : nf.rows < first + tokens) {
        snprintf(err, errlen,
                 "--routing %s: %s has %lld rows; rank %d needs %s%lld (--tokens %d)", spec->text,
                 path, (long long)nf.rows, rank, per_rank ? "exactly " : "rows up to ",
                 (long long)(first + tokens), tokens);
        goto out;
    }
    size_t row_bytes = (size_t)nf.cols * (size_t)nf.elem;
    buf = malloc(row_bytes ? row_bytes : 1);
    if (!buf || fseek(nf.f, nf.data_off + (long)((size_t)first * row_bytes), SEEK_SET) != 0) {
        snprintf(err, errlen, "--routing %s: %s: cannot read its rows", spec->text, path);
        goto out;
    }
    kit_rng r;
    kit_rng_seed(&r, seed, 0, (uint64_t)rank);
    for (int t = 0; t < tokens; t++) {
        if (fread(buf, 1, row_bytes, nf.f) != row_bytes) {
            snprintf(err, errlen, "--routing %s: %s: truncated at row %lld", spec->text, path,
                     (long long)(first + t));
            goto out;
        }
        int32_t *row = ids + (size_t)t * (size_t)shape->topk;
        for (int k = 0; k < shape->topk; k++) {
            int64_t v = npy_value(buf + (size_t)k * (size_t)nf.elem, nf.elem, nf.swap);
            if (v < -1 || v >= shape->experts) {
                snprintf(err, errlen,
                         "--routing %s: %s row %lld column %d is %lld; experts are 0..%d, -1 drops",
                         spec->text, path, (long long)(first + t), k, (long long)v,
                         shape->experts - 1);
                goto out;
            }
            for (int j = 0; j < k; j++)
                if (v >= 0 && row[j] == v) {
                    snprintf(err, errlen,
                             "--routing %s: %s row %lld names expert %lld twice", spec->text,
                             path, (long long)(first + t), (long long)v);
                    goto out;
                }
            row[k] = (int32_t)v;
        }
        routing_draw_weights(&r, row, shape->topk, weights + (size_t)t * (size_t)shape->topk);
    }
    rc = 0;
out:
    free(buf);
    fclose(nf.f);
    return rc;
}
