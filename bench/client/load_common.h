/*
 * load_common.h: what the two load clients of bench/client/run share (vela_client_load, in
 * C++ over vela::http::Client, and vela_curl_multi_load, in C over libcurl's multi
 * interface): the command line, the clocks and the report, so that both measure the same
 * window the same way.
 *
 *   --url URL          what every request GETs (default http://127.0.0.1:8080/)
 *   --connections N    keep-alive connections, one request in flight on each (default 100)
 *   --duration S       seconds measured (default 5)
 *   --warmup S         seconds of load before the measured window (default 1)
 *   --body-length N    the body every response must have, in bytes (default 13: the limit
 *                      server's "Hello, World!"; -1: any)
 *   --server-pid PID   also report that process's CPU ticks over the measured window
 *
 * A run is: load for --warmup seconds (connections are made, nothing is counted), a mark,
 * load for --duration seconds, a second mark, then no request starts and the ones in flight
 * finish. The figures are the differences between the two marks: responses completed, wall
 * time, this process's CPU (getrusage RUSAGE_SELF: utime + stime of every thread) and the
 * server's (utime + stime from /proc/PID/stat). Errors are counted over the whole run.
 *
 * The last line of the output is the one bench/client/run reads:
 *   RESULT requests=.. errors=.. seconds=.. rps=.. cpu_s=.. cpu_us_per_req=.. connects=..
 *          server_ticks=..
 * (server_ticks is -1 without --server-pid). Header only, C11 and C++20.
 */
#ifndef VELA_BENCH_CLIENT_LOAD_COMMON_H
#define VELA_BENCH_CLIENT_LOAD_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct load_options {
    const char* url;
    long connections;
    double duration;
    double warmup;
    long body_length; /* -1: any */
    long server_pid;  /* 0: none */
} load_options;

/* What a load client counts, read at the two marks. */
typedef struct load_counts {
    unsigned long long responses; /* 200 with the expected body */
    unsigned long long errors;    /* anything else */
    unsigned long long connects;  /* connections opened */
} load_counts;

/* One mark: the clocks and the counts at that moment. */
typedef struct load_mark {
    double wall; /* CLOCK_MONOTONIC, seconds */
    double cpu;  /* this process, seconds */
    long long server_ticks;
    load_counts counts;
} load_mark;

static const char load_usage_text[] =
    "  --url URL          what every request GETs (default http://127.0.0.1:8080/)\n"
    "  --connections N    keep-alive connections, one request in flight each (default 100)\n"
    "  --duration S       seconds measured (default 5)\n"
    "  --warmup S         seconds of load before the measured window (default 1)\n"
    "  --body-length N    bytes every response body must have (default 13; -1: any)\n"
    "  --server-pid PID   report that process's CPU ticks over the measured window\n";

static inline void load_usage_error(const char* prog, const char* what, const char* arg) {
    fprintf(stderr, "%s: %s%s%s\nusage: %s [options]\n%s", prog, what, arg ? " " : "",
            arg ? arg : "", prog, load_usage_text);
    exit(2);
}

/* A number in [min, max] from the whole of `v`, or a usage error. */
static inline double load_number(const char* prog, const char* opt, const char* v, double min,
                                 double max) {
    char* end = NULL;
    const double d = strtod(v, &end);
    if (end == v || *end != '\0' || !(d >= min && d <= max))
        load_usage_error(prog, "invalid value for", opt);
    return d;
}

/* Parses the command line (exits with status 2 on a bad one, 0 after --help). */
static inline load_options load_parse(int argc, char** argv, const char* prog) {
    load_options o;
    o.url = "http://127.0.0.1:8080/";
    o.connections = 100;
    o.duration = 5;
    o.warmup = 1;
    o.body_length = 13;
    o.server_pid = 0;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            printf("usage: %s [options]\n%s", prog, load_usage_text);
            exit(0);
        }
        if (i + 1 >= argc) load_usage_error(prog, "missing value for", a);
        const char* v = argv[++i];
        if (strcmp(a, "--url") == 0) {
            o.url = v;
        } else if (strcmp(a, "--connections") == 0) {
            o.connections = (long)load_number(prog, a, v, 1, 100000);
        } else if (strcmp(a, "--duration") == 0) {
            o.duration = load_number(prog, a, v, 0.001, 86400);
        } else if (strcmp(a, "--warmup") == 0) {
            o.warmup = load_number(prog, a, v, 0, 86400);
        } else if (strcmp(a, "--body-length") == 0) {
            o.body_length = (long)load_number(prog, a, v, -1, 1e12);
        } else if (strcmp(a, "--server-pid") == 0) {
            o.server_pid = (long)load_number(prog, a, v, 1, 4194304);
        } else {
            load_usage_error(prog, "unknown option", a);
        }
    }
    return o;
}

static inline double load_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double load_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* utime + stime of `pid` in clock ticks (fields 14 and 15 of /proc/PID/stat), -1 when
 * unknown. */
static inline long long load_server_ticks(long pid) {
    if (pid <= 0) return -1;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = fopen(path, "r");
    if (!f) return -1;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char* paren = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!paren || sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                         &utime, &stime) != 2)
        return -1;
    return (long long)(utime + stime);
}

static inline load_mark load_take_mark(const load_options* o, load_counts counts) {
    load_mark m;
    m.server_ticks = load_server_ticks(o->server_pid);
    m.cpu = load_cpu();
    m.wall = load_wall();
    m.counts = counts;
    return m;
}

/* Prints the run's figures, the RESULT line last; returns the exit status (0: requests
 * were made and none failed). `total` holds the counts at the end of the run. */
static inline int load_report(const char* prog, const char* driver, const load_options* o,
                              const load_mark* a, const load_mark* b, load_counts total) {
    const unsigned long long requests = b->counts.responses - a->counts.responses;
    const double seconds = b->wall - a->wall;
    const double cpu = b->cpu - a->cpu;
    const long long ticks =
        a->server_ticks >= 0 && b->server_ticks >= 0 ? b->server_ticks - a->server_ticks : -1;
    printf("%s: %s, %s, %ld connections, %.3f s warm-up, %.3f s measured\n", prog, driver, o->url,
           o->connections, o->warmup, seconds);
    printf("%s: %llu responses in all, %llu connections opened in all\n", prog, total.responses,
           total.connects);
    printf(
        "RESULT requests=%llu errors=%llu seconds=%.3f rps=%.1f cpu_s=%.3f cpu_us_per_req=%.4f "
        "connects=%llu server_ticks=%lld\n",
        requests, total.errors, seconds, seconds > 0 ? (double)requests / seconds : 0.0, cpu,
        requests ? cpu * 1e6 / (double)requests : 0.0, b->counts.connects - a->counts.connects,
        ticks);
    return requests > 0 && total.errors == 0 ? 0 : 1;
}

#endif
