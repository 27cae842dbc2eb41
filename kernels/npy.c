/*
 * npy.c - NumPy .npy files: the header parsed strictly, and written.
 *
 * The files are the user's (or anybody's), so the parser trusts nothing: it
 * reads only the bytes it is given (no NUL terminator assumed), parses the
 * header dict as the Python literal NumPy writes - {'descr': '<i8',
 * 'fortran_order': False, 'shape': (64, 8), } padded with spaces and a
 * newline - token by token, and accepts a C-order array of up to 8
 * dimensions of one of the element types npurr_dtype names (either byte
 * order). Anything else - another dtype, Fortran order, a key twice or
 * missing or unknown, a number that overflows, trailing garbage - is
 * refused with a sentence saying what was found. Two readers narrow it:
 * `--routing npy:` takes only 2-D int32/int64 (routing_npy_parse, below)
 * and a plugin's gm_from_npy takes any (kit_host.c). tests/test_npy_fuzz.c
 * runs it over tens of thousands of mutated headers under ASan.
 *
 * The writer is `record --dump`'s: version 1.0, the dict padded so the
 * data starts at a multiple of 64 bytes, as NumPy writes it.
 */
#include "kernels.h"
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

/* (a, b, ...) or (a,): the shape; *ndims says how many integers it held
 * (counted past NPY_MAX_DIMS as NPY_MAX_DIMS + 1, only the first kept). */
static int shape_tuple(cur *c, int64_t dims[NPY_MAX_DIMS], int *ndims) {
    if (!eat(c, '(')) return -1;
    *ndims = 0;
    if (eat(c, ')')) return 0;
    for (;;) {
        int64_t v = 0;
        if (integer(c, &v)) return -1;
        if (*ndims < NPY_MAX_DIMS) dims[*ndims] = v;
        if (*ndims <= NPY_MAX_DIMS) (*ndims)++;
        if (eat(c, ')')) return 0;
        if (!eat(c, ',')) return -1;
        if (eat(c, ')')) return 0;
    }
}

/* The element types a .npy descr can name here: kind letter and size. */
static const struct {
    char kind;
    int size;
    npurr_dtype dtype;
} descr_types[] = {
    {'u', 1, NPURR_DT_U8},  {'i', 1, NPURR_DT_I8},  {'i', 2, NPURR_DT_I16},
    {'u', 2, NPURR_DT_U16}, {'i', 4, NPURR_DT_I32}, {'u', 4, NPURR_DT_U32},
    {'i', 8, NPURR_DT_I64}, {'u', 8, NPURR_DT_U64}, {'f', 2, NPURR_DT_F16},
    {'f', 4, NPURR_DT_F32}, {'f', 8, NPURR_DT_F64},
};

int npy_dtype_size(npurr_dtype t) {
    if (t == NPURR_DT_BF16) return 2;
    for (size_t i = 0; i < sizeof descr_types / sizeof descr_types[0]; i++)
        if (descr_types[i].dtype == t) return descr_types[i].size;
    return 0;
}

const char *npy_dtype_name(npurr_dtype t) {
    static const char *const names[] = {"unknown", "uint8", "int8", "int16", "uint16", "int32",
                                        "uint32", "int64", "uint64", "float16", "bfloat16",
                                        "float32", "float64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* descr ("<i8", "|u1") into *h's dtype, element size and byte order. */
static int parse_descr(const char *descr, npy_header *h) {
    size_t n = strlen(descr);
    if (n < 3 || n > 3 || !strchr("<>=|", descr[0])) return -1;
    int size = descr[2] - '0';
    for (size_t i = 0; i < sizeof descr_types / sizeof descr_types[0]; i++)
        if (descr_types[i].kind == descr[1] && descr_types[i].size == size) {
            if (size > 1 && descr[0] == '|') return -1;
            h->dtype = descr_types[i].dtype;
            h->elem = size;
            h->swap = size > 1 && descr[0] == '>';
            return 0;
        }
    return -1;
}

/* The header dict's three keys, each once: 0; -1 with err said; -2 a
 * syntax error at c->p. */
typedef struct npy_dict {
    char descr[16];
    int fortran, ndims;
    int64_t dims[NPY_MAX_DIMS];
} npy_dict;

static int parse_dict(cur *c, npy_dict *d, char *err, size_t errlen) {
    char key[32];
    int have_descr = 0, have_fo = 0, have_shape = 0;
    if (!eat(c, '{')) return -2;
    while (!eat(c, '}')) {
        if (string_lit(c, key, sizeof key) || !eat(c, ':')) return -2;
        if (!strcmp(key, "descr") && !have_descr) {
            if (string_lit(c, d->descr, sizeof d->descr)) return -2;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_fo) {
            if (word(c, "False")) d->fortran = 0;
            else if (word(c, "True")) d->fortran = 1;
            else return -2;
            have_fo = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if (shape_tuple(c, d->dims, &d->ndims)) return -2;
            have_shape = 1;
        } else {
            snprintf(err, errlen, "has an unexpected or repeated header key '%s'", key);
            return -1;
        }
        if (!eat(c, ',')) {
            if (!eat(c, '}')) return -2;
            break;
        }
    }
    skip_space(c);
    if (c->p != c->end) return -2;
    if (!have_descr || !have_fo || !have_shape) {
        snprintf(err, errlen, "header lacks '%s'",
                 !have_descr ? "descr" : !have_fo ? "fortran_order" : "shape");
        return -1;
    }
    return 0;
}

/* d's dtype, order and shape into h, each checked: 0, or -1 with err. */
static int take_dict(const npy_dict *d, npy_header *h, char *err, size_t errlen) {
    memcpy(h->descr, d->descr, sizeof h->descr);
    if (parse_descr(d->descr, h)) {
        snprintf(err, errlen, "holds dtype '%s', which npurr does not read (bool, integers and "
                 "float16/32/64: '<i4', '<f2', '|u1', ...)", d->descr);
        return -1;
    }
    if (d->fortran) {
        snprintf(err, errlen, "is in Fortran order; save it in C order");
        return -1;
    }
    if (d->ndims > NPY_MAX_DIMS) {
        snprintf(err, errlen, "has more than %d dimensions", NPY_MAX_DIMS);
        return -1;
    }
    h->ndim = d->ndims;
    /* the product of the shape times elem must be a size a file can have */
    uint64_t bytes = (uint64_t)h->elem;
    for (int i = 0; i < d->ndims; i++) {
        h->shape[i] = d->dims[i];
        if (d->dims[i] && bytes > (UINT64_C(1) << 62) / (uint64_t)d->dims[i]) {
            snprintf(err, errlen, "has an implausible shape (%lld, ...)", (long long)d->dims[0]);
            return -1;
        }
        bytes *= (uint64_t)d->dims[i];
    }
    h->data_bytes = bytes;
    return 0;
}

int npy_parse(const unsigned char *buf, size_t len, npy_header *h, char *err, size_t errlen) {
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
    npy_dict d;
    memset(&d, 0, sizeof d);
    int rc = parse_dict(&c, &d, err, errlen);
    if (rc == -2) {
        snprintf(err, errlen, "has a malformed header dict near byte %zu", (size_t)(c.p - buf));
        return -1;
    }
    if (rc) return -1;
    h->data_off = pre + hlen;
    return take_dict(&d, h, err, errlen);
}

int routing_npy_parse(const unsigned char *buf, size_t len, routing_npy_header *h, char *err,
                      size_t errlen) {
    memset(h, 0, sizeof *h);
    npy_header g;
    if (npy_parse(buf, len, &g, err, errlen)) {
        if (strstr(err, "holds dtype")) goto dtype;
        return -1;
    }
    if (g.dtype != NPURR_DT_I32 && g.dtype != NPURR_DT_I64) goto dtype;
    if (g.ndim != 2 || g.shape[1] < 1) {
        int nd = g.ndim > 2 ? 3 : g.ndim;
        snprintf(err, errlen, "is not a 2-D [tokens, topk] array (%d dimension%s%s)", nd,
                 nd == 1 ? "" : "s", nd == 2 ? ", topk 0" : nd > 2 ? " or more" : "");
        return -1;
    }
    h->elem = g.elem;
    h->swap = g.swap;
    h->rows = g.shape[0];
    h->cols = g.shape[1];
    h->data_off = g.data_off;
    h->data_bytes = g.data_bytes;
    return 0;
dtype:
    snprintf(err, errlen, "holds dtype '%s'; expected int32 or int64 ('<i4', '<i8')", g.descr);
    return -1;
}

int npy_write_header(FILE *out, npurr_dtype dtype, int ndim, const uint64_t *shape) {
    const char *order = "<";
    char kind = 0;
    int size = npy_dtype_size(dtype);
    for (size_t i = 0; i < sizeof descr_types / sizeof descr_types[0]; i++)
        if (descr_types[i].dtype == dtype) kind = descr_types[i].kind;
    if (!kind || ndim < 0 || ndim > NPY_MAX_DIMS) return -1;
    if (size == 1) order = "|";
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s%c%d', 'fortran_order': False, 'shape': (",
                     order, kind, size);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%llu,%s", (unsigned long long)shape[i],
                      i + 1 < ndim ? " " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* magic (6) + version (2) + length (2) + dict + padding + newline: a multiple of 64 */
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    size_t hlen = total - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    if (fwrite(pre, 1, 10, out) != 10 || fwrite(dict, 1, (size_t)n, out) != (size_t)n) return -1;
    for (size_t i = 10 + (size_t)n; i + 1 < total; i++)
        if (fputc(' ', out) == EOF) return -1;
    return fputc('\n', out) == EOF ? -1 : 0;
}
