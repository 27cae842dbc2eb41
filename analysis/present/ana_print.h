/*
 * ana_print.h - what the presentation room's files share: result sets
 * buffered for aligned printing (ana_table.c) and the JSON spellings of the
 * Chrome export (ana_json.c).
 */
#ifndef NPURR_ANA_PRINT_H
#define NPURR_ANA_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------- printing */

/* A result set buffered for alignment; cells are owned copies (NULL = SQL
 * NULL). */
typedef struct ana_grid {
    size_t cols, rows, cap;
    char **head;          /* cols names */
    char **cells;         /* rows * cols */
    unsigned char *numeric; /* per column: every non-NULL cell is a number */
} ana_grid;

int ana_grid_init(ana_grid *g, size_t cols);
int ana_grid_set_head(ana_grid *g, size_t col, const char *name);
/* Appends a row of cols cells (copied). */
int ana_grid_add(ana_grid *g, const char *const *cells, const unsigned char *is_number);
void ana_grid_print(const ana_grid *g, FILE *out);
void ana_grid_free(ana_grid *g);

/* ---------------------------------------------------------- JSON output */

/* Writes s as a JSON string literal (with quotes). */
void ana_json_str(FILE *out, const char *s);
/* Writes ns as microseconds with three decimals, exactly (no float rounding). */
void ana_json_ns(FILE *out, uint64_t ns);

#endif
