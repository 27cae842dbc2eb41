/*
 * input_file.c - engine_open_input: the one "is this a regular file I may
 * read" check of every npurr reader (a run's trace.zst and index.db, a
 * --hw file, --routing npy files, the inputs record copies).
 *
 * A FIFO given where a file is expected hangs a plain open(2) until some
 * writer appears, and a device or a directory reads as something it is
 * not. So the file is opened with O_NONBLOCK (which never waits, even on a
 * FIFO), checked with fstat on the descriptor itself (no window between
 * the check and the use), and refused unless it is a regular file; only
 * then is O_NONBLOCK cleared for the reads that follow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/host/host.h"

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int engine_open_input(const char *path, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "is %s, not a regular file", kind_of(st.st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        snprintf(why, whylen, "cannot clear O_NONBLOCK: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

FILE *engine_fopen_input(const char *path, char *why, size_t whylen) {
    int fd = engine_open_input(path, why, whylen);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(fd);
    }
    return f;
}

int engine_check_input(const char *path, char *why, size_t whylen) {
    int fd = engine_open_input(path, why, whylen);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}
