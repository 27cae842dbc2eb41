/*
 * routing_npy.c - the .npy header of `--routing npy:PATH`, parsed strictly.
 *
 * The file is the user's (or anybody's), so the parser trusts nothing: it
 * reads only the bytes it is given (no NUL terminator assumed), parses the
 * header dict as the Python literal NumPy writes - {'descr': '<i8',
 * 'fortran_order': False, 'shape': (64, 8), } padded with spaces and a
 * newline - token by token, and accepts exactly one array kind: a 2-D
 * C-order [tokens, topk] array of int32 or int64 (either byte order).
 * Anything else - another dtype, another rank of shape, a key twice or
 * missing or unknown, a number that overflows, trailing garbage - is
 * refused with a sentence saying what was found. tests/test_npy_fuzz.c
 * runs it over tens of thousands of mutated headers under ASan.
 */
#include "routing.h"

#include <stdio.h>
#include <string.h>

typedef struct cur {
    const unsigned char *p, *end;
} cur;

static void skip_space(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int eat(cur *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == (unsigned char)ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes into out (at most outlen - 1 bytes). */
static int string_lit(cur *c, char *out, size_t outlen) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    unsigned char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p < 0x20 || n + 1 >= outlen) return -1;
        out[n++] = (char)*c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int word(cur *c, const char *w) {
    skip_space(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* A non-negative decimal integer that fits in int64. */
static int integer(cur *c, int64_t *out) {
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p++ - '0';
        if (v > (INT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;   /* Python 2's 64L */
    *out = v;
    return 0;
}

/* (a, b) or (a, b,): the shape; *dims says how many integers it held. */
static int shape_tuple(cur *c, int64_t dims[2], int *ndims) {
    if (!eat(c, '(')) return -1;
    *ndims = 0;
    if (eat(c, ')')) return 0;
    for (;;) {
        int64_t v = 0;
        if (integer(c, &v)) return -1;
        if (*ndims < 2) dims[*ndims] = v;
        if (*ndims < 3) (*ndims)++;
        if (eat(c, ')')) return 0;
        if (!eat(c, ',')) return -1;
        if (eat(c, ')')) return 0;
    }
}

int routing_npy_parse(const unsigned char *buf, size_t len, routing_npy_header *h, char *err,
                      size_t errlen) {
    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0 || buf[6] < 1 || buf[6] > 3) {
        snprintf(err, errlen, "is not a .npy file (magic \\x93NUMPY, version 1-3)");
        return -1;
    }
    size_t pre = buf[6] == 1 ? 10 : 12;
    if (len < pre) {
        snprintf(err, errlen, "has a truncated header");
        return -1;
    }
    size_t hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    if (pre == 12) hlen |= (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    if (hlen > len - pre) {
        snprintf(err, errlen, "has a truncated header (%zu bytes announced, %zu present)", hlen,
                 len - pre);
        return -1;
    }
    cur c = {buf + pre, buf + pre + hlen};
    char key[32], descr[16] = "";
    int have_descr = 0, have_fo = 0, have_shape = 0, fortran = 0, ndims = 0;
    int64_t dims[2] = {0, 0};
    if (!eat(&c, '{')) goto syntax;
    while (!eat(&c, '}')) {
        if (string_lit(&c, key, sizeof key) || !eat(&c, ':')) goto syntax;
        if (!strcmp(key, "descr") && !have_descr) {
            if (string_lit(&c, descr, sizeof descr)) goto syntax;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_fo) {
            if (word(&c, "False")) fortran = 0;
            else if (word(&c, "True")) fortran = 1;
            else goto syntax;
            have_fo = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if (shape_tuple(&c, dims, &ndims)) goto syntax;
            have_shape = 1;
        } else {
            snprintf(err, errlen, "has an unexpected or repeated header key '%s'", key);
            return -1;
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}')) goto syntax;
            break;
        }
    }
    skip_space(&c);
    if (c.p != c.end) goto syntax;
    if (!have_descr || !have_fo || !have_shape) {
        snprintf(err, errlen, "header lacks '%s'",
                 !have_descr ? "descr" : !have_fo ? "fortran_order" : "shape");
        return -1;
    }
    if (strlen(descr) != 3 || !strchr("<>=|", descr[0]) || descr[1] != 'i' ||
        (descr[2] != '4' && descr[2] != '8')) {
        snprintf(err, errlen, "holds dtype '%s'; expected int32 or int64 ('<i4', '<i8')",
                 descr);
        return -1;
    }
    if (fortran) {
        snprintf(err, errlen, "is in Fortran order; save it in C order");
        return -1;
    }
    if (ndims != 2 || dims[1] < 1) {
        snprintf(err, errlen, "is not a 2-D [tokens, topk] array (%d dimension%s%s)",
                 ndims > 2 ? 3 : ndims, ndims == 1 ? "" : "s",
                 ndims == 2 ? ", topk 0" : ndims > 2 ? " or more" : "");
        return -1;
    }
    h->elem = descr[2] - '0';
    h->swap = descr[0] == '>';
    h->rows = dims[0];
    h->cols = dims[1];
    h->data_off = pre + hlen;
    /* rows * cols * elem must be a size the file can have. */
    if ((uint64_t)h->rows > (UINT64_C(1) << 62) / (uint64_t)h->cols / (uint64_t)h->elem) {
        snprintf(err, errlen, "has an implausible shape (%lld, %lld)", (long long)h->rows,
                 (long long)h->cols);
        return -1;
    }
    h->data_bytes = (uint64_t)h->rows * (uint64_t)h->cols * (uint64_t)h->elem;
    return 0;
syntax:
    snprintf(err, errlen, "has a malformed header dict near byte %zu",
             (size_t)(c.p - buf));
    return -1;
}
