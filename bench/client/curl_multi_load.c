/*
 * vela_curl_multi_load: the libcurl peer of vela_client_load, for bench/client/run
 * (docs/benchmarks.md, "HTTP client").
 *
 * The same work on one thread with libcurl's multi interface, used the way its
 * documentation and examples do: --connections easy handles on one multi handle
 * (CURLMOPT_MAX_HOST_CONNECTIONS and CURLMOPT_MAXCONNECTS = --connections, so each handle
 * keeps its own connection alive in the multi's cache), each a GET of --url over HTTP/1.1
 * with TCP_NODELAY, no signals and no proxy, its body counted by a write callback. The loop
 * is curl_multi_perform, curl_multi_info_read for the transfers that completed (each checked:
 * CURLE_OK, status 200, --body-length bytes) and re-added at once to the multi, then
 * curl_multi_poll. libcurl sends no User-Agent unless told, and offers no content coding
 * (CURLOPT_ACCEPT_ENCODING unset), like vela_client_load's settings.
 *
 * With --api socket it drives the same multi handle through libcurl's event API instead
 * (curl_multi_socket_action, the one its documentation recommends for many connections):
 * an epoll set kept by CURLMOPT_SOCKETFUNCTION, a timer kept by CURLMOPT_TIMERFUNCTION,
 * and libcurl told only about the sockets that are ready (docs/examples/hiperfifo.c's
 * shape, without libevent).
 *
 * The window, the marks and the RESULT line are load_common.h's (the same code as
 * vela_client_load's). Exit status 0 when requests were made and none failed.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "load_common.h"

static const char prog[] = "vela_curl_multi_load";

typedef struct slot {
    CURL* easy;
    size_t bytes; /* body bytes of the transfer in progress */
} slot;

static size_t on_body(char* data, size_t size, size_t n, void* user) {
    (void)data;
    ((slot*)user)->bytes += size * n;
    return size * n;
}

static void fail(load_counts* counts, const char* what, const char* detail) {
    if (++counts->errors <= 5) fprintf(stderr, "%s: %s%s\n", prog, what, detail);
}

static CURL* make_easy(const load_options* o, slot* s) {
    CURL* e = curl_easy_init();
    if (!e) return NULL;
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* no proxy from the environment */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_PRIVATE, s);
    return e;
}

/* Counts the transfer `msg` ended and starts the same handle again unless `stopping`. */
static void completed(CURLM* multi, CURLMsg* msg, const load_options* o, load_counts* counts,
                      int stopping) {
    CURL* e = msg->easy_handle;
    slot* s = NULL;
    long status = 0, connects = 0;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char**)&s);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    counts->connects += (unsigned long long)connects;
    if (msg->data.result != CURLE_OK) {
        fail(counts, "", curl_easy_strerror(msg->data.result));
    } else if (status != 200) {
        fail(counts, "a status other than 200", "");
    } else if (o->body_length >= 0 && s->bytes != (size_t)o->body_length) {
        fail(counts, "a body of the wrong length", "");
    } else {
        ++counts->responses;
    }
    curl_multi_remove_handle(multi, e);
    s->bytes = 0;
    if (!stopping) curl_multi_add_handle(multi, e);
}

/* How the multi handle is driven: curl_multi_poll + curl_multi_perform, or epoll +
 * curl_multi_socket_action. */
typedef struct driver {
    CURLM* multi;
    int socket_api;
    int running;     /* transfers running, as libcurl last said */
    int ep;          /* --api socket: the epoll set */
    double deadline; /* --api socket: when libcurl wants its timeout call; < 0: never */
} driver;

static int on_socket(CURL* e, curl_socket_t s, int what, void* user, void* socketp) {
    driver* d = (driver*)user;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(d->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev;
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (socketp) {
        if (epoll_ctl(d->ep, EPOLL_CTL_MOD, s, &ev) == 0 || errno != ENOENT) return 0;
    }
    if (epoll_ctl(d->ep, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
        epoll_ctl(d->ep, EPOLL_CTL_MOD, s, &ev);
    curl_multi_assign(d->multi, s, d); /* known to the epoll set from now on */
    return 0;
}

static int on_timer(CURLM* multi, long ms, void* user) {
    (void)multi;
    driver* d = (driver*)user;
    d->deadline = ms < 0 ? -1 : load_wall() + (double)ms / 1000;
    return 0;
}

static int drive_failed(const char* what, CURLMcode mc) {
    fprintf(stderr, "%s: %s: %s\n", prog, what, curl_multi_strerror(mc));
    return -1;
}

/* Waits at most 100 ms for libcurl's sockets or timer and lets it work; -1 on failure. */
static int drive(driver* d) {
    if (!d->socket_api) {
        CURLMcode mc = curl_multi_poll(d->multi, NULL, 0, 100, NULL);
        if (mc != CURLM_OK) return drive_failed("curl_multi_poll", mc);
        mc = curl_multi_perform(d->multi, &d->running);
        return mc == CURLM_OK ? 0 : drive_failed("curl_multi_perform", mc);
    }
    struct epoll_event evs[256];
    int wait_ms = 100;
    if (d->deadline >= 0) {
        const double left = (d->deadline - load_wall()) * 1000;
        wait_ms = left <= 0 ? 0 : left < 100 ? (int)left + 1 : 100;
    }
    const int n = epoll_wait(d->ep, evs, 256, wait_ms);
    for (int i = 0; i < n; ++i) {
        const int flags = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                          ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                          ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        const CURLMcode mc = curl_multi_socket_action(d->multi, evs[i].data.fd, flags, &d->running);
        if (mc != CURLM_OK) return drive_failed("curl_multi_socket_action", mc);
    }
    if (d->deadline >= 0 && load_wall() >= d->deadline) {
        d->deadline = -1;
        const CURLMcode mc =
            curl_multi_socket_action(d->multi, CURL_SOCKET_TIMEOUT, 0, &d->running);
        if (mc != CURLM_OK) return drive_failed("curl_multi_socket_action", mc);
    }
    return 0;
}

/* Takes "--api poll|socket" out of the command line (load_common.h knows the rest). */
static int take_api(int* argc, char** argv) {
    int socket_api = 0;
    for (int i = 1; i < *argc; ++i) {
        if (strcmp(argv[i], "--api") != 0) continue;
        if (i + 1 >= *argc || (strcmp(argv[i + 1], "poll") && strcmp(argv[i + 1], "socket")))
            load_usage_error(prog, "--api is poll or socket", NULL);
        socket_api = strcmp(argv[i + 1], "socket") == 0;
        for (int j = i; j + 2 <= *argc; ++j) argv[j] = argv[j + 2];
        *argc -= 2;
        --i;
    }
    return socket_api;
}

int main(int argc, char** argv) {
    driver d = {NULL, take_api(&argc, argv), 0, -1, -1};
    const load_options opt = load_parse(argc, argv, prog);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "%s: curl_global_init failed\n", prog);
        return 1;
    }
    d.multi = curl_multi_init();
    slot* slots = calloc((size_t)opt.connections, sizeof *slots);
    if (!d.multi || !slots) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    curl_multi_setopt(d.multi, CURLMOPT_MAX_HOST_CONNECTIONS, opt.connections);
    curl_multi_setopt(d.multi, CURLMOPT_MAXCONNECTS, opt.connections);
    if (d.socket_api) {
        d.ep = epoll_create1(EPOLL_CLOEXEC);
        curl_multi_setopt(d.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(d.multi, CURLMOPT_SOCKETDATA, &d);
        curl_multi_setopt(d.multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(d.multi, CURLMOPT_TIMERDATA, &d);
    }
    for (long i = 0; i < opt.connections; ++i) {
        slots[i].easy = make_easy(&opt, &slots[i]);
        if (!slots[i].easy) {
            fprintf(stderr, "%s: curl_easy_init failed\n", prog);
            return 1;
        }
        curl_multi_add_handle(d.multi, slots[i].easy);
    }

    load_counts counts = {0, 0, 0};
    load_mark first = {0, 0, -1, counts}, second = first;
    const double start = load_wall();
    int phase = 0; /* 0 warm-up, 1 measured, 2 draining */
    for (;;) {
        if (drive(&d) < 0) return 1;
        /* Once draining nothing is re-added, so running == 0 means every transfer ended. */
        const int draining = phase == 2;
        CURLMsg* msg;
        int left = 0;
        while ((msg = curl_multi_info_read(d.multi, &left)))
            if (msg->msg == CURLMSG_DONE) completed(d.multi, msg, &opt, &counts, draining);
        if (draining && d.running == 0) break;
        const double now = load_wall();
        if (phase == 0 && now >= start + opt.warmup) {
            first = load_take_mark(&opt, counts);
            phase = 1;
        } else if (phase == 1 && now >= first.wall + opt.duration) {
            second = load_take_mark(&opt, counts);
            phase = 2;
        }
    }

    for (long i = 0; i < opt.connections; ++i) {
        curl_multi_remove_handle(d.multi, slots[i].easy); /* harmless when already removed */
        curl_easy_cleanup(slots[i].easy);
    }
    free(slots);
    curl_multi_cleanup(d.multi);
    curl_global_cleanup();
    return load_report(prog,
                       d.socket_api ? "libcurl " LIBCURL_VERSION " multi, socket_action + epoll"
                                    : "libcurl " LIBCURL_VERSION " multi, curl_multi_poll",
                       &opt, &first, &second, counts);
}
