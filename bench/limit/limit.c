/*
 * vela_limit: the "limit server", the reference ceiling for vela's
 * plaintext benchmarks (see docs/benchmarks.md).
 *
 * One thread, one level-triggered epoll loop, nothing else. For every
 * complete request it receives it appends one canned "Hello, World!"
 * response, whatever the method or path, and after each read batch it
 * issues exactly one write(). It does the least work a correct HTTP/1.1
 * keep-alive server can do, so vela's CPU time per request is reported as
 * a multiple of this server's.
 *
 *   usage: vela_limit [--port N]        (default 8080)
 *
 * What "correct" covers here: requests split across reads, many requests
 * in one read (pipelining), request bodies announced by Content-Length
 * (skipped, so POST works), a Date header refreshed at most once per
 * second, EAGAIN on write (output kept, EPOLLOUT awaited, reading paused),
 * and orderly close. Request heads larger than IN_CAP close the connection.
 */
#define _GNU_SOURCE /* accept4, memmem */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP 8192    /* per-connection input buffer: holds one partial request head */
#define MAX_EVENTS 512

typedef struct conn {
    int fd;
    int paused;        /* 1 while output is pending: we wait for EPOLLOUT, not EPOLLIN */
    int closing;       /* peer sent EOF: close once the pending output is written */
    size_t in_len;     /* bytes in in[]: the unfinished tail of the last read(s) */
    size_t skip;       /* body bytes of the current request still to discard */
    char *out;         /* responses not yet written: out[out_off..out_len) */
    size_t out_off, out_len, out_cap;
    char in[IN_CAP];
} conn;

/* The canned response; the 29 bytes after "Date: " are rewritten once per second. */
static char response[] =
    "HTTP/1.1 200 OK\r\nServer: L\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
    "Content-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
#define RESPONSE_LEN (sizeof response - 1)
static time_t date_second = -1;
static int ep; /* the epoll instance */

/* Rewrite the Date header (RFC 7231 IMF-fixdate) when the second changes. */
static void refresh_date(void) {
    time_t now = time(NULL); /* vDSO: no system call */
    if (now == date_second) return;
    date_second = now;
    struct tm tm;
    char buf[32];
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm); /* "C" locale: English names */
    memcpy(strstr(response, "Date: ") + 6, buf, 29);
}

static void close_conn(conn *c) {
    close(c->fd); /* also removes it from the epoll set */
    free(c->out);
    free(c);
}

/* Value of a Content-Length header in the request head [p, p+len), or 0. */
static size_t content_length(const char *p, size_t len) {
    const char *end = p + len;
    for (const char *line = p; line < end;) {
        const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
        if (!eol) break;
        if (eol - line > 15 && strncasecmp(line, "content-length:", 15) == 0) {
            size_t n = 0;
            for (const char *d = line + 15; d < eol; d++)
                if (*d >= '0' && *d <= '9') n = n * 10 + (size_t)(*d - '0');
            return n;
        }
        line = eol + 2;
    }
    return 0;
}

/* Append one response to the output buffer. Returns -1 on out of memory. */
static int queue_response(conn *c) {
    if (c->out_len + RESPONSE_LEN > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap * 2 : 1024;
        while (cap < c->out_len + RESPONSE_LEN) cap *= 2;
        char *p = realloc(c->out, cap);
        if (!p) return -1;
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, response, RESPONSE_LEN);
    c->out_len += RESPONSE_LEN;
    return 0;
}

/* Answer every complete request in in[] and keep only the unfinished tail.
 * The response is queued as soon as the head is complete; body bytes
 * (Content-Length) are then discarded as they arrive, never stored. */
static int parse(conn *c) {
    size_t pos = 0;
    for (;;) {
        if (c->skip) {
            size_t n = c->in_len - pos < c->skip ? c->in_len - pos : c->skip;
            pos += n;
            c->skip -= n;
            if (c->skip) break; /* the body continues in a later read */
        }
        char *head = c->in + pos;
        char *end = memmem(head, c->in_len - pos, "\r\n\r\n", 4);
        if (!end) break; /* incomplete head: wait for more bytes */
        size_t head_len = (size_t)(end + 4 - head);
        c->skip = content_length(head, head_len);
        pos += head_len;
        if (queue_response(c) < 0) return -1;
    }
    memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
    return c->in_len == IN_CAP ? -1 : 0; /* a head that can never fit */
}

/* The one write() of a batch. Whatever the kernel does not take stays in
 * out[] and we switch to waiting for EPOLLOUT (no reading meanwhile). */
static int flush(conn *c) {
    if (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
        if (n > 0) c->out_off += (size_t)n;
    }
    int pending = c->out_off < c->out_len;
    if (!pending) {
        if (c->closing) return -1; /* everything owed is sent: now close */
        c->out_off = c->out_len = 0;
    }
    if (pending != c->paused) {
        struct epoll_event ev = {.events = pending ? EPOLLOUT : EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) return -1;
        c->paused = pending;
    }
    return 0;
}

/* Read until a short read (the socket is then drained: the next epoll event
 * tells us when there is more), answering requests as they complete, then
 * write once. Returns -1 if the connection must be closed. */
static int on_readable(conn *c) {
    for (;;) {
        size_t space = IN_CAP - c->in_len;
        ssize_t n = read(c->fd, c->in + c->in_len, space);
        if (n > 0) {
            c->in_len += (size_t)n;
            if (parse(c) < 0) return -1;
            if ((size_t)n < space) break;
        } else if (n == 0) { /* peer done sending: send what we owe, then close */
            c->closing = 1;
            break;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN) {
            break;
        } else {
            return -1;
        }
    }
    return flush(c);
}

static void accept_all(int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN) perror("accept4"); /* e.g. EMFILE: raise ulimit -n */
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* malloc, not calloc: only the in[] pages a read touches become resident. */
        conn *c = malloc(sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        memset(c, 0, offsetof(conn, in)); /* the header fields; in[] stays untouched */
        c->fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            free(c);
            close(fd);
        }
    }
}

int main(int argc, char **argv) {
    int port = 8080;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--port N]\n", argv[0]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN); /* a write to a reset peer returns EPIPE instead */

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 65535) < 0) {
        perror("listen");
        return 1;
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL}; /* NULL marks the listener */
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    fprintf(stderr, "vela_limit listening on port %d\n", port);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        if (n < 0 && errno != EINTR) {
            perror("epoll_wait");
            return 1;
        }
        refresh_date();
        for (int i = 0; i < n; i++) {
            conn *c = events[i].data.ptr;
            uint32_t e = events[i].events;
            if (!c) {
                accept_all(lfd);
            } else if (e & EPOLLERR) {
                close_conn(c);
            } else if (c->paused ? flush(c) < 0 : on_readable(c) < 0) {
                close_conn(c); /* EPOLLHUP lands here too: read() returns 0 or an error */
            }
        }
    }
}
