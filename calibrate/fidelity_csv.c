/*
 * fidelity_csv.c - measured times in, as rows `npurr hw --compare`,
 * `npurr calibrate` and bench_fidelity run: npurr's own CSV (kernel,
 * options, phase, measured_us; optional id, use, source) or msprof's
 * op_summary CSV (its "Op Name" / "OP Type" matched against each phase's
 * kernel_phase.op_names, its "Task Duration(us)" averaged per phase, the
 * shape given apart). The format is told by the header.
 *
 * Every row is checked here, before anything runs, and every message names
 * FILE:LINE and what is wrong with it: an unknown kernel or phase, options
 * the kernel refuses, a duration that is not a positive number, a `use`
 * other than train or validate. Whether the shape runs (memory, topology,
 * deadlock) is only known by running it (fidelity_run.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "calibrate/calibrate.h"

#define MAX_FIELDS 64

/* Splits one CSV record (no newline inside fields) into fields, in place:
 * commas separate, a field in double quotes may hold commas and "" for a
 * quote. Leading and trailing blanks of unquoted fields are dropped. The
 * count, or -1 with why on a malformed line. */
static int split_csv(char *line, char **fields, int max, const char **why) {
    int n = 0;
    char *s = line;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (n == max) { *why = "too many columns"; return -1; }
        if (*s == '"') {
            char *out = ++s, *start = s;
            for (;;) {
                if (!*s) { *why = "a quoted field is not closed on its line"; return -1; }
                if (*s == '"') {
                    if (s[1] == '"') { *out++ = '"'; s += 2; continue; }
                    s++;
                    break;
                }
                *out++ = *s++;
            }
            while (*s == ' ' || *s == '\t') s++;
            if (*s && *s != ',') { *why = "text after a closing quote"; return -1; }
            char c = *s;
            *out = '\0';
            fields[n++] = start;
            if (!c) break;
            s++;
        } else {
            char *start = s;
            while (*s && *s != ',') s++;
            char c = *s, *end = s;
            while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
            *end = '\0';
            fields[n++] = start;
            if (!c) break;
            s++;
        }
    }
    return n;
}

/* The line without its newline (and a UTF-8 byte order mark on line 1). */
static char *chomp(char *line, int lineno) {
    if (lineno == 1 && (unsigned char)line[0] == 0xEF && (unsigned char)line[1] == 0xBB &&
        (unsigned char)line[2] == 0xBF)
        line += 3;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    return line;
}

static int blank_or_comment(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    return !*s || *s == '#';
}

/* The next record of f into buf, split into fld[0..*n): blank lines and
 * '#' comments skipped. 1, 0 at the end, -1 with err naming path:line. */
/* One line of f into buf (cap bytes, its newline kept): its length, 0 at
 * the end, -1 with err naming path:line for a line too long or holding a
 * NUL byte (fgets would cut it there and misread the rest). */
static long read_line(FILE *f, const char *path, int lineno, char *buf, size_t cap, char *err,
                      size_t errlen) {
    size_t n = 0;
    int c = EOF;
    while (n + 1 < cap && (c = getc(f)) != EOF) {
        if (c == 0) {
            snprintf(err, errlen, "%s:%d: a NUL byte at column %zu (not a text file?)", path,
                     lineno, n + 1);
            return -1;
        }
        buf[n++] = (char)c;
        if (c == '\n') break;
    }
    buf[n] = '\0';
    if (n + 1 >= cap && c != '\n' && (c = getc(f)) != EOF) {
        snprintf(err, errlen, "%s:%d: line longer than %zu bytes", path, lineno, cap - 2);
        return -1;
    }
    return (long)n;
}

static int next_record(FILE *f, const char *path, int *lineno, char *buf, size_t cap,
                       char **fld, int *n, char *err, size_t errlen) {
    long got;
    while ((got = read_line(f, path, *lineno + 1, buf, cap, err, errlen)) > 0) {
        ++*lineno;
        char *line = chomp(buf, *lineno);
        if (blank_or_comment(line)) continue;
        const char *why = NULL;
        *n = split_csv(line, fld, MAX_FIELDS, &why);
        if (*n < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, *lineno, why);
            return -1;
        }
        return 1;
    }
    return got < 0 ? -1 : 0;
}

static int column(char **names, int n, const char *want) {
    for (int i = 0; i < n; i++)
        if (strcasecmp(names[i], want) == 0) return i;
    return -1;
}

static int parse_us(const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    while (end && (*end == ' ' || *end == '\t')) end++;
    if (errno || end == s || *end || !isfinite(v) || v <= 0) return -1;
    *out = v;
    return 0;
}

/* measured_us as one time or a row's replicates "a;b;c": the row holds their
 * mean, count and range (a row is held against the mean; the spread is
 * shown beside it). -1 if any is not a positive number. */
static int parse_replicates(const char *s, fidelity_row *r) {
    char buf[1024];
    if (strlen(s) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", s);
    double sum = 0;
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok;
         tok = strtok_r(NULL, ";", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        double v;
        if (parse_us(tok, &v)) return -1;
        if (!n || v < r->rep_min) r->rep_min = v;
        if (!n || v > r->rep_max) r->rep_max = v;
        sum += v;
        n++;
    }
    if (!n || s[0] == ';' || s[strlen(s) - 1] == ';' || strstr(s, ";;")) return -1;
    r->replicates = n;
    r->measured_us = sum / n;
    return 0;
}

static int add_row(fidelity_table *t, const fidelity_row *r) {
    fidelity_row *rows = realloc(t->rows, (size_t)(t->n + 1) * sizeof *rows);
    if (!rows) return -1;
    t->rows = rows;
    t->rows[t->n++] = *r;
    return 0;
}

/* "notify, dispatch, total": what a phase column may say for k. */
static void phase_list(const kernel_desc *k, char *out, size_t len) {
    size_t n = 0;
    out[0] = '\0';
    for (const kernel_phase *p = k->phases; p && p->name; p++)
        n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s, ", p->name);
    snprintf(out + (n < len ? n : len - 1), n < len ? len - n : 1, "total");
}

static int known_phase(const kernel_desc *k, const char *phase) {
    if (strcmp(phase, "total") == 0) return 1;
    for (const kernel_phase *p = k->phases; p && p->name; p++)
        if (strcmp(p->name, phase) == 0) return 1;
    return 0;
}

/* None of the options a measured row must not carry (the file names the
 * kernel, the command the timing parameters, and rows run without a
 * trace); with parse, the options as record takes them. */
static int check_options(const fidelity_row *r, int parse, char *err, size_t errlen) {
    char **words = NULL;
    int n = shell_split(r->options, &words);
    if (n < 0) {
        snprintf(err, errlen, "%s: options: malformed quoting in '%s'", r->where, r->options);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        static const char *const refused[] = {"-k", "--kernel", "--hw", "-o", "--force",
                                              "--check", "--progress", NULL};
        for (const char *const *x = refused; *x; x++) {
            size_t len = strlen(*x);
            if (strcmp(w, *x) == 0 || (strncmp(w, *x, len) == 0 && w[len] == '=')) {
                snprintf(err, errlen, "%s: options: %s has no place in a measured row (%s)",
                         r->where, *x,
                         strcmp(*x, "--hw") == 0 ? "give the timing parameters to the command"
                         : (*x)[1] == 'k' || strcmp(*x, "--kernel") == 0
                             ? "the kernel column names the kernel"
                             : "rows run without a trace");
                free(words);
                return -1;
            }
        }
    }
    if (!parse) {   /* the run reports them */
        free(words);
        return 0;
    }
    run_spec spec;
    char why[1024];
    int rc = run_spec_from_words(r->kernel, words, n, &spec, why, sizeof why);
    run_spec_free(&spec);
    if (rc) {
        snprintf(err, errlen, "%s: options '%s': %s", r->where, r->options, why);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- npurr's CSV */

static int read_rows(FILE *f, const char *path, char **head, int nhead, int *lineno, int flags,
                     fidelity_table *t, char *err, size_t errlen) {
    int c_kernel = column(head, nhead, "kernel"), c_opts = column(head, nhead, "options");
    int c_phase = column(head, nhead, "phase"), c_us = column(head, nhead, "measured_us");
    int c_id = column(head, nhead, "id"), c_use = column(head, nhead, "use");
    int c_src = column(head, nhead, "source");
    const char *missing = c_kernel < 0 ? "kernel" : c_opts < 0 ? "options" : c_phase < 0 ? "phase"
                        : c_us < 0 ? "measured_us" : NULL;
    if (missing) {
        snprintf(err, errlen, "%s:%d: the header has no '%s' column (a measured-rows CSV has "
                 "kernel,options,phase,measured_us and optionally id,use,source; or give "
                 "msprof's op_summary CSV)", path, *lineno, missing);
        return -1;
    }
    char buf[8192], *fld[MAX_FIELDS];
    int n, got;
    while ((got = next_record(f, path, lineno, buf, sizeof buf, fld, &n, err, errlen)) > 0) {
        if (n != nhead) {
            snprintf(err, errlen, "%s:%d: %d field%s, the header has %d (quote options that "
                     "hold commas)", path, *lineno, n, n == 1 ? "" : "s", nhead);
            return -1;
        }
        fidelity_row r;
        memset(&r, 0, sizeof r);
        snprintf(r.where, sizeof r.where, "%s:%d", path, *lineno);
        if (c_id >= 0) snprintf(r.id, sizeof r.id, "%s", fld[c_id]);
        if (c_src >= 0) snprintf(r.source, sizeof r.source, "%s", fld[c_src]);
        if (strcmp(fld[c_kernel], "-") == 0) {   /* no npurr kernel stands for it */
            snprintf(r.kernel, sizeof r.kernel, "-");
            snprintf(r.options, sizeof r.options, "%s", fld[c_opts]);
            snprintf(r.phase, sizeof r.phase, "%s", fld[c_phase]);
            if (!r.options[0]) {
                snprintf(err, errlen, "%s: kernel '-' (no npurr kernel stands for the row): say "
                         "why in the options column", r.where);
                return -1;
            }
        }
        const kernel_desc *k = r.kernel[0] ? NULL : kernels_find(fld[c_kernel]);
        if (!r.kernel[0] && !k) {
            snprintf(err, errlen, "%s: kernel '%s': no such kernel (npurr record --help lists them)",
                     r.where, fld[c_kernel]);
            return -1;
        }
        r.covered = k != NULL;
        if (k) snprintf(r.kernel, sizeof r.kernel, "%s", k->name);
        if (strlen(fld[c_opts]) >= sizeof r.options) {
            snprintf(err, errlen, "%s: options longer than %zu bytes", r.where, sizeof r.options - 1);
            return -1;
        }
        snprintf(r.options, sizeof r.options, "%s", fld[c_opts]);
        if (k && !known_phase(k, fld[c_phase])) {
            char list[256];
            phase_list(k, list, sizeof list);
            snprintf(err, errlen, "%s: phase '%s': not a phase of %s (its phases: %s)", r.where,
                     fld[c_phase], k->name, list);
            return -1;
        }
        snprintf(r.phase, sizeof r.phase, "%s", fld[c_phase]);
        if (parse_replicates(fld[c_us], &r)) {
            snprintf(err, errlen, "%s: measured_us '%s' is not a positive number of microseconds "
                     "(or replicates as \"a;b;c\")", r.where, fld[c_us]);
            return -1;
        }
        r.train = 1;
        if (c_use >= 0) {
            if (strcmp(fld[c_use], "train") == 0) r.train = 1;
            else if (strcmp(fld[c_use], "validate") == 0) r.train = 0;
            else {
                snprintf(err, errlen, "%s: use '%s': train or validate", r.where, fld[c_use]);
                return -1;
            }
        }
        if (k && check_options(&r, !(flags & FIDELITY_LATE_OPTIONS), err, errlen)) return -1;
        if (add_row(t, &r)) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    return got < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- msprof op_summary */

typedef struct op_sum {
    double sum;
    int count;
    char op[64];             /* the first matching op name seen */
} op_sum;

/* Which phase of k an op row belongs to: the first whose op names one of
 * name and type hold; -1 if none. */
static int phase_of_op(const kernel_desc *k, const char *name, const char *type) {
    int i = 0;
    for (const kernel_phase *p = k->phases; p && p->name; p++, i++)
        for (int j = 0; j < 6 && p->op_names[j]; j++)
            if (strstr(name, p->op_names[j]) || (type && strstr(type, p->op_names[j]))) return i;
    return -1;
}

/* The row every phase of an op summary starts from: the kernel and its
 * options out of --kernel-options, checked as a CSV row's are; *k the
 * kernel. 0, or -1 with err. */
static int shape_proto(const char *path, const char *kernel_options, fidelity_row *proto,
                       const kernel_desc **kout, char *err, size_t errlen) {
    if (!kernel_options || !*kernel_options) {
        snprintf(err, errlen, "%s is an msprof op_summary CSV: give the shape its ops ran at with "
                 "--kernel-options \"-k KERNEL --nodes N --tokens T ...\"", path);
        return -1;
    }
    /* the kernel and its options out of the shape */
    char **words = NULL;
    int nw = shell_split(kernel_options, &words);
    if (nw < 0) {
        snprintf(err, errlen, "--kernel-options: malformed quoting in '%s'", kernel_options);
        return -1;
    }
    const char *kname = NULL;
    char **rest = calloc((size_t)nw + 1, sizeof *rest);
    int nrest = 0;
    if (!rest) { free(words); snprintf(err, errlen, "out of memory"); return -1; }
    for (int i = 0; i < nw; i++) {
        if ((strcmp(words[i], "-k") == 0 || strcmp(words[i], "--kernel") == 0) && i + 1 < nw)
            kname = words[++i];
        else if (strncmp(words[i], "--kernel=", 9) == 0)
            kname = words[i] + 9;
        else
            rest[nrest++] = words[i];
    }
    const kernel_desc *k = kname ? kernels_find(kname) : NULL;
    char *joined = k ? shell_join(nrest, rest) : NULL;
    memset(proto, 0, sizeof *proto);
    int bad = 0;
    if (!kname)
        snprintf(err, errlen, "--kernel-options '%s': name the kernel with -k KERNEL", kernel_options), bad = 1;
    else if (!k)
        snprintf(err, errlen, "--kernel-options: -k %s: no such kernel", kname), bad = 1;
    else if (!joined || strlen(joined) >= sizeof proto->options)
        snprintf(err, errlen, "--kernel-options: too long"), bad = 1;
    else {
        snprintf(proto->kernel, sizeof proto->kernel, "%s", k->name);
        snprintf(proto->options, sizeof proto->options, "%s", joined);
        snprintf(proto->where, sizeof proto->where, "--kernel-options");
        bad = check_options(proto, 1, err, errlen) != 0;
    }
    free(joined);
    free(rest);
    free(words);
    *kout = k;
    return bad ? -1 : 0;
}

static int read_op_summary(FILE *f, const char *path, char **head, int nhead, int *lineno,
                           const char *kernel_options, fidelity_table *t, char *err,
                           size_t errlen) {
    fidelity_row proto;
    const kernel_desc *k = NULL;
    if (shape_proto(path, kernel_options, &proto, &k, err, errlen)) return -1;

    int c_name = column(head, nhead, "Op Name"), c_dur = column(head, nhead, "Task Duration(us)");
    int c_type = column(head, nhead, "OP Type");
    op_sum sums[FIDELITY_MAX_PHASES];
    memset(sums, 0, sizeof sums);
    char buf[16384], *fld[MAX_FIELDS];
    int n, got;
    while ((got = next_record(f, path, lineno, buf, sizeof buf, fld, &n, err, errlen)) > 0) {
        if (n <= c_name || n <= c_dur) {
            snprintf(err, errlen, "%s:%d: %d fields, too few for the header's Op Name and Task "
                     "Duration(us)", path, *lineno, n);
            return -1;
        }
        int ph = phase_of_op(k, fld[c_name], c_type >= 0 && c_type < n ? fld[c_type] : NULL);
        if (ph < 0 || ph >= FIDELITY_MAX_PHASES) continue;   /* another op of the model */
        double us;
        if (parse_us(fld[c_dur], &us)) {
            snprintf(err, errlen, "%s:%d: op %s: Task Duration(us) '%s' is not a positive number",
                     path, *lineno, fld[c_name], fld[c_dur]);
            return -1;
        }
        if (!sums[ph].count) snprintf(sums[ph].op, sizeof sums[ph].op, "%s", fld[c_name]);
        sums[ph].sum += us;
        sums[ph].count++;
        if (!isfinite(sums[ph].sum)) {   /* the mean would be inf, the ratio 0 */
            snprintf(err, errlen, "%s:%d: op %s: Task Duration(us) '%s' takes the sum of the "
                     "phase's %d rows past the largest number; check the file", path, *lineno,
                     fld[c_name], fld[c_dur], sums[ph].count);
            return -1;
        }
    }
    if (got < 0) return -1;
    int i = 0, added = 0;
    for (const kernel_phase *p = k->phases; p && p->name && i < FIDELITY_MAX_PHASES; p++, i++) {
        if (!sums[i].count) continue;
        fidelity_row r = proto;
        snprintf(r.where, sizeof r.where, "%s (op %s, %d row%s)", path, sums[i].op, sums[i].count,
                 sums[i].count == 1 ? "" : "s");
        snprintf(r.id, sizeof r.id, "%s", sums[i].op);
        r.covered = 1;
        snprintf(r.phase, sizeof r.phase, "%s", p->name);
        r.measured_us = sums[i].sum / sums[i].count;
        r.replicates = 1;
        r.rep_min = r.rep_max = r.measured_us;
        r.train = 1;
        snprintf(r.source, sizeof r.source, "msprof op_summary %s", path);
        if (add_row(t, &r)) { snprintf(err, errlen, "out of memory"); return -1; }
        added++;
    }
    if (!added) {
        char names[512];
        size_t n = 0;
        names[0] = '\0';
        for (const kernel_phase *p = k->phases; p && p->name; p++)
            for (int j = 0; j < 6 && p->op_names[j]; j++)
                n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s",
                                      n ? ", " : "", p->op_names[j]);
        snprintf(err, errlen, "%s: no op matches a phase of -k %s (op names looked for: %s)", path,
                 k->name, n ? names : "none: the kernel names no msprof ops");
        return -1;
    }
    return 0;
}

int fidelity_table_read(const char *path, const char *kernel_options, int flags,
                        fidelity_table *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    char open_why[256];
    FILE *f = engine_fopen_input(path, open_why, sizeof open_why);   /* a FIFO: refused, not waited on */
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, open_why);
        return SESSION_ERROR;
    }
    char buf[16384];
    int lineno = 0;
    char *line = NULL;
    long got;
    while ((got = read_line(f, path, lineno + 1, buf, sizeof buf, err, errlen)) > 0) {
        line = chomp(buf, ++lineno);
        if (!blank_or_comment(line)) break;
        line = NULL;
    }
    if (got < 0) {
        fclose(f);
        return SESSION_ERROR;
    }
    if (!line) {
        snprintf(err, errlen, "%s: %s", path,
                 ferror(f) ? "cannot read (a folder?)" : "no header line (empty file)");
        fclose(f);
        return SESSION_ERROR;
    }
    char *head[MAX_FIELDS];
    const char *why = NULL;
    int nhead = split_csv(line, head, MAX_FIELDS, &why);
    int rc, twice = -1;
    for (int a = 0; a < nhead && twice < 0; a++)
        for (int b = a + 1; b < nhead; b++)
            if (head[a][0] && strcasecmp(head[a], head[b]) == 0) twice = a;
    if (nhead < 0) {
        snprintf(err, errlen, "%s:%d: header: %s", path, lineno, why);
        rc = -1;
    } else if (twice >= 0) {   /* which of the two would a row's value come from? */
        snprintf(err, errlen, "%s:%d: the header names the column '%s' twice", path, lineno,
                 head[twice]);
        rc = -1;
    } else if (column(head, nhead, "Op Name") >= 0 &&
               column(head, nhead, "Task Duration(us)") >= 0) {
        rc = read_op_summary(f, path, head, nhead, &lineno, kernel_options, t, err, errlen);
    } else if (kernel_options) {
        snprintf(err, errlen, "--kernel-options is for msprof op_summary CSVs; %s names the kernel "
                 "and options of each row", path);
        rc = -1;
    } else {
        rc = read_rows(f, path, head, nhead, &lineno, flags, t, err, errlen);
    }
    if (!rc && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    if (!rc && t->n == 0) {
        snprintf(err, errlen, "%s: no rows after the header", path);
        rc = -1;
    }
    if (rc) {
        fidelity_table_free(t);
        return SESSION_ERROR;
    }
    return SESSION_OK;
}

void fidelity_table_free(fidelity_table *t) {
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}
