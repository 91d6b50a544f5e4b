/*
 * vela_bench_client: a tiny keep-alive HTTP/1.1 client for bench/callgrind.
 *
 * Opens one connection and sends COUNT requests on it one after another,
 * reading each response completely (status 200 and a Content-Length body
 * required) before sending the next. If a response says "Connection: close"
 * (cpp-httplib does every 5th) it reconnects. Being sequential and
 * deterministic, two runs that differ only in COUNT differ in the server's
 * instruction count by (COUNT2 - COUNT1) requests.
 *
 *   usage: vela_bench_client --port N [--path /] [--count N] [--body JSON]
 *          (--body sends POST with Content-Type: application/json)
 *
 * Exit status 0 if every response was a 200, 1 otherwise.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read one response into buf; returns its HTTP status, or -1 on error.
 * *close_after is set if the response carries "Connection: close". */
static int read_response(int fd, char *buf, size_t cap, int *close_after) {
    size_t len = 0, need = 0;
    int status = -1;
    for (;;) {
        if (need && len >= need) return status;
        if (len == cap) return -1; /* response larger than the buffer */
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        len += (size_t)r;
        if (need) continue;
        char *end = memmem(buf, len, "\r\n\r\n", 4);
        if (!end) continue;
        /* Head complete: status and Content-Length. */
        if (len < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0) return -1;
        status = atoi(buf + 9);
        long body = -1;
        for (char *line = memmem(buf, (size_t)(end - buf), "\r\n", 2); line && line < end;
             line = memmem(line + 2, (size_t)(end - line), "\r\n", 2)) {
            if (strncasecmp(line + 2, "content-length:", 15) == 0) body = atol(line + 17);
            if (strncasecmp(line + 2, "connection: close", 17) == 0) *close_after = 1;
        }
        if (body < 0) {
            fprintf(stderr, "vela_bench_client: response without Content-Length\n");
            return -1;
        }
        need = (size_t)(end + 4 - buf) + (size_t)body;
    }
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("vela_bench_client: connect");
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv) {
    int port = 0;
    long count = 1;
    const char *path = "/", *body = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--path") == 0) path = argv[i + 1];
        else if (strcmp(argv[i], "--count") == 0) count = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--body") == 0) body = argv[i + 1];
        else port = 0;
    }
    if (port <= 0 || count < 0 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s --port N [--path /] [--count N] [--body JSON]\n", argv[0]);
        return 2;
    }

    char req[4096];
    int n = body ? snprintf(req, sizeof req,
                            "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\n\r\n%s",
                            path, port, strlen(body), body)
                 : snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
    if (n < 0 || (size_t)n >= sizeof req) return 2;

    static char buf[1 << 20];
    int fd = -1;
    for (long i = 0; i < count; i++) {
        if (fd < 0 && (fd = connect_to(port)) < 0) return 1;
        int status, close_after = 0;
        if (write_all(fd, req, (size_t)n) < 0 ||
            (status = read_response(fd, buf, sizeof buf, &close_after)) < 0) {
            fprintf(stderr, "vela_bench_client: connection failed at request %ld\n", i + 1);
            return 1;
        }
        if (status != 200) {
            fprintf(stderr, "vela_bench_client: status %d at request %ld\n", status, i + 1);
            return 1;
        }
        if (close_after) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
    return 0;
}
