/*
 * ana_table.c - printing result sets: aligned columns for people, CSV for
 * tools.
 *
 * An aligned table needs every row before it can pick column widths, so the
 * grid buffers its cells (a query that returns millions of rows belongs in
 * --csv, which streams). Numbers are right-aligned, text left-aligned, SQL
 * NULL prints as "NULL" (and as an empty CSV field).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"

int ana_grid_init(ana_grid *g, size_t cols) {
    memset(g, 0, sizeof *g);
    g->cols = cols;
    g->head = calloc(cols ? cols : 1, sizeof *g->head);
    g->numeric = malloc(cols ? cols : 1);
    if (!g->head || !g->numeric) {
        free(g->head);
        free(g->numeric);
        return -1;
    }
    memset(g->numeric, 1, cols ? cols : 1);
    return 0;
}

int ana_grid_set_head(ana_grid *g, size_t col, const char *name) {
    free(g->head[col]);
    g->head[col] = strdup(name ? name : "");
    return g->head[col] ? 0 : -1;
}

int ana_grid_add(ana_grid *g, const char *const *cells, const unsigned char *is_number) {
    if (ana_grow((void **)&g->cells, &g->cap, g->rows + 1, g->cols * sizeof *g->cells, 64))
        return -1;
    char **row = g->cells + g->rows * g->cols;
    for (size_t c = 0; c < g->cols; c++) {
        row[c] = NULL;
        if (!cells[c]) continue;
        row[c] = strdup(cells[c]);
        if (!row[c]) {
            for (size_t k = 0; k < c; k++) free(row[k]);
            return -1;
        }
        if (!is_number[c]) g->numeric[c] = 0;
    }
    g->rows++;
    return 0;
}

/* Display width in terminal columns: UTF-8 continuation bytes take none. */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

static void pad(FILE *out, size_t n) {
    while (n--) fputc(' ', out);
}

void ana_grid_print(const ana_grid *g, FILE *out) {
    size_t *w = calloc(g->cols ? g->cols : 1, sizeof *w);
    if (!w) return;
    for (size_t c = 0; c < g->cols; c++) w[c] = text_width(g->head[c] ? g->head[c] : "");
    for (size_t r = 0; r < g->rows; r++)
        for (size_t c = 0; c < g->cols; c++) {
            const char *s = g->cells[r * g->cols + c];
            size_t n = text_width(s ? s : "NULL");
            if (n > w[c]) w[c] = n;
        }
    for (size_t c = 0; c < g->cols; c++) {
        const char *h = g->head[c] ? g->head[c] : "";
        size_t n = text_width(h);
        if (g->numeric[c] && g->rows) pad(out, w[c] - n);
        fputs(h, out);
        if (c + 1 < g->cols) {
            if (!(g->numeric[c] && g->rows)) pad(out, w[c] - n);
            fputs("  ", out);
        }
    }
    fputc('\n', out);
    for (size_t c = 0; c < g->cols; c++) {
        for (size_t k = 0; k < w[c]; k++) fputc('-', out);
        if (c + 1 < g->cols) fputs("  ", out);
    }
    fputc('\n', out);
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t c = 0; c < g->cols; c++) {
            const char *s = g->cells[r * g->cols + c];
            if (!s) s = "NULL";
            size_t n = text_width(s);
            if (g->numeric[c]) pad(out, w[c] - n);
            fputs(s, out);
            if (c + 1 < g->cols) {
                if (!g->numeric[c]) pad(out, w[c] - n);
                fputs("  ", out);
            }
        }
        fputc('\n', out);
    }
    free(w);
}

void ana_grid_free(ana_grid *g) {
    for (size_t c = 0; c < g->cols; c++) free(g->head ? g->head[c] : NULL);
    for (size_t i = 0; i < g->rows * g->cols; i++) free(g->cells[i]);
    free(g->head);
    free(g->cells);
    free(g->numeric);
    memset(g, 0, sizeof *g);
}

void ana_csv_field(FILE *out, const char *s) {
    if (!s) return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}
