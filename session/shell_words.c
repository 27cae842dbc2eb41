/*
 * shell_words.c - the recorded command line: argv joined with POSIX shell
 * quoting (so it can be pasted into a shell), and split back into argv by
 * `replay`, which rebuilds the run from it.
 */
#include "session/session.h"

#include <stdlib.h>
#include <string.h>

static int needs_quotes(const char *s) {
    if (!*s) return 1;
    for (; *s; s++)
        if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') || ('0' <= *s && *s <= '9') ||
              strchr("-_./:=,+%@", *s)))
            return 1;
    return 0;
}

char *shell_join(int argc, char **argv) {
    size_t cap = 1;
    for (int i = 0; i < argc; i++) cap += 4 * strlen(argv[i]) + 3;
    char *out = malloc(cap), *p = out;
    if (!out) return NULL;
    for (int i = 0; i < argc; i++) {
        if (i) *p++ = ' ';
        if (!needs_quotes(argv[i])) {
            size_t n = strlen(argv[i]);
            memcpy(p, argv[i], n);
            p += n;
            continue;
        }
        *p++ = '\'';
        for (const char *s = argv[i]; *s; s++) {
            if (*s == '\'') { memcpy(p, "'\\''", 4); p += 4; }
            else *p++ = *s;
        }
        *p++ = '\'';
    }
    *p = '\0';
    return out;
}

int shell_split(const char *line, char ***argv_out) {
    size_t len = strlen(line);
    int max_words = (int)len / 2 + 2;
    char **argv = malloc((size_t)(max_words + 1) * sizeof(char *) + len + 1);
    if (!argv) return -1;
    char *buf = (char *)(argv + max_words + 1), *w = buf;
    int argc = 0;
    const char *s = line;
    while (*s) {
        while (*s == ' ') s++;
        if (!*s) break;
        argv[argc++] = w;
        while (*s && *s != ' ') {
            if (*s == '\'') {
                s++;
                while (*s && *s != '\'') *w++ = *s++;
                if (*s != '\'') { free(argv); return -1; }
                s++;
            } else if (*s == '\\' && s[1]) {
                *w++ = s[1];
                s += 2;
            } else {
                *w++ = *s++;
            }
        }
        *w++ = '\0';
    }
    argv[argc] = NULL;
    *argv_out = argv;
    return argc;
}
