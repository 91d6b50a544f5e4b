// Load and hostile client for the soak test (tests/soak/run), against vela_bench_app.
//
//   vela_soak_client --port N [--duration S] [--valid-threads N] [--seed N]
//   vela_soak_client --free-port        prints a free loopback port
//   vela_soak_client --probe --port N   one GET /, exit 0 if it gets 200
//
// Valid load: keep-alive connections sending GETs and POSTs (Content-Length and chunked
// bodies), single and in pipelined batches, every response checked for its status and its
// exact body, each connection ended by "Connection: close". Hostile load, in parallel: slowloris
// headers and slow bodies (one byte a second), garbage bytes, oversized heads, smuggling
// attempts followed by a request that must never be answered, connections opened and closed
// (or reset) at once, and a client that pipelines without reading.
//
// Prints a summary; exits 1 when any valid request got a wrong answer or none, or when a
// hostile connection saw the server misbehave (a smuggled request answered, no close after
// an error, no 408 for a slow client, a connection left hanging).
//
// Only 127.0.0.1. Blocking sockets with timeouts (tests/e2e/client.hpp), one thread per role.

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "e2e/client.hpp"

namespace {

using vela::e2e::Client;
using vela::e2e::HttpResponse;
using vela::e2e::Ms;
using vela::e2e::SteadyClock;
using namespace std::chrono_literals;

std::uint16_t g_port = 0;
SteadyClock::time_point g_deadline;

bool running() { return SteadyClock::now() < g_deadline; }

// ---- Counters and the first few failures ----------------------------------------------

struct Tally {
    const char* name;
    std::atomic<std::uint64_t> runs{0};
    std::atomic<std::uint64_t> expected{0};   // the server did what it should
    std::atomic<std::uint64_t> anomalies{0};  // it did not: fails the run
};

struct Stats {
    std::atomic<std::uint64_t> valid_requests{0}, valid_ok{0}, valid_wrong{0}, valid_missing{0};
    std::atomic<std::uint64_t> valid_connections{0}, connect_failures{0};
    Tally slowloris{"slowloris (408)"}, slow_body{"slow body (408)"}, garbage{"garbage"},
        oversize{"oversize head (414/431)"}, smuggling{"smuggling"}, open_close{"open/close"},
        no_read{"pipelining without reading"};
    std::atomic<std::uint64_t> no_read_paused{0};
    std::mutex mu;
    std::vector<std::string> failures;

    void fail(std::string what) {
        std::lock_guard<std::mutex> lock(mu);
        if (failures.size() < 20) failures.push_back(std::move(what));
    }
};

Stats g_stats;

void anomaly(Tally& t, std::string what) {
    ++t.anomalies;
    g_stats.fail(std::string(t.name) + ": " + what);
}

// ---- Valid requests --------------------------------------------------------------------

struct Exchange {
    std::string request;
    int status = 200;
    std::string body;  // expected exactly, unless !check_body
    bool check_body = true;
    bool head = false;
};

std::string random_word(std::mt19937& rng, std::size_t min, std::size_t max) {
    std::uniform_int_distribution<std::size_t> len(min, max);
    std::uniform_int_distribution<int> ch(0, 35);
    std::string s(len(rng), 'a');
    for (char& c : s) {
        int v = ch(rng);
        c = static_cast<char>(v < 26 ? 'a' + v : '0' + (v - 26));
    }
    return s;
}

std::string chunked(std::mt19937& rng, const std::string& body) {
    std::string out;
    std::uniform_int_distribution<std::size_t> piece(1, 700);
    char size[32];
    for (std::size_t i = 0; i < body.size();) {
        std::size_t n = std::min(piece(rng), body.size() - i);
        std::snprintf(size, sizeof size, "%zx\r\n", n);
        out += size;
        out.append(body, i, n);
        out += "\r\n";
        i += n;
    }
    return out + "0\r\n\r\n";
}

// One valid request and the exact answer it must get.
Exchange make_exchange(std::mt19937& rng, bool close) {
    const std::string conn = close ? "Connection: close\r\n" : "";
    Exchange e;
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
        case 0:
            e.request = "GET / HTTP/1.1\r\nHost: localhost\r\n" + conn + "\r\n";
            e.body = "Hello, World!";
            break;
        case 1:
        case 2: {
            std::string id = random_word(rng, 1, 24);
            e.request = "GET /users/" + id + " HTTP/1.1\r\nHost: localhost\r\n" + conn + "\r\n";
            e.body = "{\"userId\":\"" + id + "\",\"name\":\"User " + id + "\"}";
            break;
        }
        case 3: {
            std::string id = random_word(rng, 1, 8);
            e.request = "HEAD /users/" + id + " HTTP/1.1\r\nHost: localhost\r\n" + conn + "\r\n";
            e.head = true;
            break;
        }
        case 4:
            e.request = "GET /middleware/3 HTTP/1.1\r\nHost: localhost\r\n" + conn + "\r\n";
            e.body = "{\"middleware_count\":3}";
            break;
        case 5:
            e.request = "GET /no/such/" + random_word(rng, 1, 8) +
                        " HTTP/1.1\r\nHost: localhost\r\n" + conn + "\r\n";
            e.status = 404;
            e.check_body = false;
            break;
        default: {  // POST /api/echo, Content-Length or chunked, bodies up to ~8 KiB
            const std::string name = random_word(rng, 1, 8000);
            const std::string age = std::to_string(std::uniform_int_distribution<int>(0, 120)(rng));
            const std::string email = random_word(rng, 1, 20) + "@example.com";
            const std::string json =
                "{\"name\":\"" + name + "\",\"age\":" + age + ",\"email\":\"" + email + "\"}";
            e.body = json;
            e.request = "POST /api/echo HTTP/1.1\r\nHost: localhost\r\n" + conn +
                        "Content-Type: application/json\r\n";
            if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
                e.request += "Transfer-Encoding: chunked\r\n\r\n" + chunked(rng, json);
            } else {
                e.request += "Content-Length: " + std::to_string(json.size()) + "\r\n\r\n" + json;
            }
            break;
        }
    }
    return e;
}

// Checks one response; false (and a recorded failure) when it is wrong.
bool check(const Exchange& e, const std::optional<HttpResponse>& r, const Client& c) {
    const std::string line = e.request.substr(0, e.request.find("\r\n"));
    if (!r) {
        ++g_stats.valid_missing;
        g_stats.fail("no answer to " + line + ": " + c.error());
        return false;
    }
    const bool body_ok = e.head || !e.check_body || r->body == e.body;
    if (r->status != e.status || !body_ok) {
        ++g_stats.valid_wrong;
        g_stats.fail("wrong answer to " + line + ": " + std::to_string(r->status) + " " +
                     r->body.substr(0, 120));
        return false;
    }
    ++g_stats.valid_ok;
    return true;
}

// Keep-alive connections, each ending with "Connection: close" (the server must close).
void valid_worker(unsigned seed) {
    std::mt19937 rng(seed);
    while (running()) {
        Client c = Client::tcp(g_port, 10s);
        if (!c.connected()) {
            ++g_stats.connect_failures;
            g_stats.fail("valid: connect failed");
            std::this_thread::sleep_for(10ms);
            continue;
        }
        ++g_stats.valid_connections;
        const int rounds = std::uniform_int_distribution<int>(1, 60)(rng);
        bool ok = true;
        for (int round = 0; ok && round < rounds && running(); ++round) {
            const bool last = round + 1 == rounds;
            // A single request, or a pipelined batch of up to 16 sent with one write.
            const int batch = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                                  ? std::uniform_int_distribution<int>(2, 16)(rng)
                                  : 1;
            std::vector<Exchange> ex;
            std::string bytes;
            for (int i = 0; i < batch; ++i) {
                ex.push_back(make_exchange(rng, last && i + 1 == batch));
                bytes += ex.back().request;
            }
            g_stats.valid_requests += ex.size();
            if (!c.send(bytes)) {
                g_stats.valid_missing += ex.size();
                g_stats.fail("valid: send failed: " + c.error());
                ok = false;
                break;
            }
            for (const Exchange& e : ex) {
                if (!check(e, c.read_response(e.head), c)) {
                    ok = false;
                    break;
                }
            }
            if (ok && last && !c.closed_by_peer(10s)) {
                ++g_stats.valid_wrong;
                g_stats.fail("valid: connection not closed after Connection: close");
            }
        }
    }
}

// ---- Hostile connections ---------------------------------------------------------------

// Slowloris heads and slow bodies, a byte a second each, until the server answers 408.
void slow_worker(int heads, int bodies) {
    struct Slow {
        Client c;
        Tally* tally;
    };
    auto open = [](Tally& t) {
        Slow s{Client::tcp(g_port, 10s), &t};
        ++t.runs;
        const std::string start =
            &t == &g_stats.slowloris
                ? "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
                : "POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n{";
        if (!s.c.connected() || !s.c.send(start)) anomaly(t, "could not start");
        return s;
    };
    std::vector<Slow> conns;
    for (int i = 0; i < heads; ++i) conns.push_back(open(g_stats.slowloris));
    for (int i = 0; i < bodies; ++i) conns.push_back(open(g_stats.slow_body));
    while (running()) {
        std::this_thread::sleep_for(1s);
        for (Slow& s : conns) {
            if (s.c.readable_within(0ms)) {
                auto r = s.c.read_response();
                if (r && r->status == 408 && s.c.closed_by_peer(5s)) {
                    ++s.tally->expected;
                } else {
                    anomaly(*s.tally, r ? "got " + std::to_string(r->status) + " instead of 408"
                                        : "closed without 408: " + s.c.error());
                }
                s = open(*s.tally);
            } else {
                s.c.send("a");
            }
        }
    }
}

std::string garbage(std::mt19937& rng) {
    static const char* const pieces[] = {"GET ",
                                         "POST ",
                                         "/",
                                         " HTTP/1.1",
                                         "\r\n",
                                         "\n",
                                         "\r",
                                         ":",
                                         " ",
                                         "\t",
                                         "Host: x",
                                         "Content-Length: 5",
                                         "Transfer-Encoding: chunked",
                                         "0\r\n\r\n",
                                         "\0",
                                         "\x7f",
                                         "\xff",
                                         "%",
                                         "..",
                                         "HTTP/2.0"};
    std::string s;
    const int n = std::uniform_int_distribution<int>(1, 200)(rng);
    for (int i = 0; i < n; ++i) {
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
            s += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
        } else {
            const char* p = pieces[std::uniform_int_distribution<std::size_t>(
                0, sizeof pieces / sizeof *pieces - 1)(rng)];
            s.append(p, *p ? std::strlen(p) : 1);
        }
    }
    return s;
}

// Sends `bytes`, half-closes, and reads the responses until the server closes. Returns ""
// when it closed (or reset), else what went wrong ("timeout": left hanging, "malformed ...").
std::string send_and_drain(Client& c, const std::string& bytes, std::vector<HttpResponse>& got) {
    c.send(bytes);  // may fail once the server has answered and closed
    c.shutdown_write();
    for (;;) {  // each read waits at most the client's timeout
        auto r = c.read_response();
        if (!r) break;
        got.push_back(*r);
    }
    const std::string& e = c.error();
    const bool closed = e.rfind("eof", 0) == 0 || e == "reset" || e.rfind("recv", 0) == 0;
    return closed ? std::string() : e;
}

void garbage_worker(unsigned seed) {
    std::mt19937 rng(seed);
    while (running()) {
        Client c = Client::tcp(g_port, 10s);
        if (!c.connected()) continue;
        ++g_stats.garbage.runs;
        std::vector<HttpResponse> got;
        const std::string why = send_and_drain(c, garbage(rng), got);
        if (why.empty()) {
            ++g_stats.garbage.expected;
        } else {
            anomaly(g_stats.garbage, "after end of input: " + why);
        }
        std::this_thread::sleep_for(5ms);
    }
}

void oversize_worker(unsigned seed) {
    std::mt19937 rng(seed);
    while (running()) {
        Client c = Client::tcp(g_port, 10s);
        if (!c.connected()) continue;
        ++g_stats.oversize.runs;
        std::string req;
        int want = 431;
        switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
            case 0:
                req = "GET /" + std::string(20000, 'u') + " HTTP/1.1\r\nHost: x\r\n\r\n";
                want = 414;
                break;
            case 1:
                req = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " +
                      std::string(std::uniform_int_distribution<int>(17000, 60000)(rng), 'v') +
                      "\r\n\r\n";
                break;
            default:
                req = "GET / HTTP/1.1\r\nHost: x\r\n";
                for (int i = 0; i < 150; ++i) req += "X-" + std::to_string(i) + ": v\r\n";
                req += "\r\n";
                break;
        }
        c.send(req);
        auto r = c.read_response();
        if (r && r->status == want && c.closed_by_peer(5s)) {
            ++g_stats.oversize.expected;
        } else {
            anomaly(g_stats.oversize, r ? "got " + std::to_string(r->status) + ", wanted " +
                                              std::to_string(want) + " and a close"
                                        : "no answer: " + c.error());
        }
        std::this_thread::sleep_for(20ms);
    }
}

void smuggling_worker(unsigned seed) {
    std::mt19937 rng(seed);
    const std::string p = "POST /api/echo HTTP/1.1\r\nHost: x\r\n";
    const std::string attempts[] = {
        p + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\n",
        p + "Content-Length: 5\r\nContent-Length: 40\r\n\r\nhello",
        p + "Content-Length: 5, 40\r\n\r\nhello",
        p + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        p + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n",
        p + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
        "GET / HTTP/1.1\nHost: x\n\n",
        "POST /api/echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    };
    const std::string smuggled = "GET /users/SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n";
    while (running()) {
        Client c = Client::tcp(g_port, 10s);
        if (!c.connected()) continue;
        ++g_stats.smuggling.runs;
        const std::string& a =
            attempts[std::uniform_int_distribution<std::size_t>(0, std::size(attempts) - 1)(rng)];
        std::vector<HttpResponse> got;
        const std::string why = send_and_drain(c, a + smuggled, got);
        const bool closed = why.empty();
        bool answered_smuggled = false;
        for (const HttpResponse& r : got)
            answered_smuggled = answered_smuggled || r.body.find("SMUGGLED") != std::string::npos;
        if (closed && got.size() == 1 && got[0].status >= 400 && !answered_smuggled) {
            ++g_stats.smuggling.expected;
        } else {
            anomaly(g_stats.smuggling,
                    std::to_string(got.size()) + " responses" +
                        (got.empty() ? "" : ", first " + std::to_string(got[0].status)) +
                        (answered_smuggled ? ", smuggled request answered" : "") +
                        (closed ? "" : ", " + why) + " for: " + a.substr(0, 60));
        }
        std::this_thread::sleep_for(5ms);
    }
}

void open_close_worker(unsigned seed) {
    std::mt19937 rng(seed);
    while (running()) {
        int fd = vela::e2e::connect_loopback(g_port);
        if (fd < 0) continue;
        ++g_stats.open_close.runs;
        const int how = std::uniform_int_distribution<int>(0, 3)(rng);
        if (how == 1) {
            (void)!::send(fd, "GET /users/1 HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL);
        }
        if (how >= 2) {  // reset instead of a FIN
            linger l{1, 0};
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        ::close(fd);
        ++g_stats.open_close.expected;
        std::this_thread::sleep_for(10ms);
    }
}

// Pipelines requests without reading any response: the server must stop reading (bounded
// output) rather than buffer without limit. Each connection lives a few seconds, then resets.
void no_read_worker() {
    const std::string batch = [] {
        std::string b;
        for (int i = 0; i < 200; ++i)
            b += "GET /users/" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
        return b;
    }();
    while (running()) {
        Client c(vela::e2e::connect_loopback(g_port, 4096), 1s);
        if (!c.connected()) continue;
        ++g_stats.no_read.runs;
        const auto until = SteadyClock::now() + 4s;
        bool blocked = false;
        while (SteadyClock::now() < until && running()) {
            if (!c.send(batch)) {  // the send timed out: the server stopped reading
                blocked = true;
                break;
            }
        }
        if (blocked) ++g_stats.no_read_paused;
        ++g_stats.no_read.expected;
        if (blocked) std::this_thread::sleep_for(1s);  // stay paused a while
        linger l{1, 0};
        ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
}

// ---- Entry points ----------------------------------------------------------------------

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) < 0)
        return 1;
    std::printf("%u\n", ntohs(sa.sin_port));
    ::close(fd);
    return 0;
}

int probe() {
    Client c = Client::tcp(g_port, 5s);
    if (!c.connected() || !c.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")) return 1;
    auto r = c.read_response();
    return r && r->status == 200 && r->body == "Hello, World!" ? 0 : 1;
}

void print_tally(const Tally& t) {
    std::printf("  %-28s runs %8llu  as expected %8llu  anomalies %llu\n", t.name,
                static_cast<unsigned long long>(t.runs.load()),
                static_cast<unsigned long long>(t.expected.load()),
                static_cast<unsigned long long>(t.anomalies.load()));
}

}  // namespace

int main(int argc, char** argv) {
    int duration = 60, valid_threads = 4;
    unsigned seed = 1;
    bool want_probe = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--free-port") return free_port();
        if (a == "--probe") {
            want_probe = true;
            continue;
        }
        if (a == "--port") {
            g_port = static_cast<std::uint16_t>(std::atoi(v));
        } else if (a == "--duration") {
            duration = std::atoi(v);
        } else if (a == "--valid-threads") {
            valid_threads = std::atoi(v);
        } else if (a == "--seed") {
            seed = static_cast<unsigned>(std::atoi(v));
        } else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
        ++i;
    }
    if (g_port == 0) {
        std::fprintf(stderr, "--port is required\n");
        return 2;
    }
    if (want_probe) return probe();

    g_deadline = SteadyClock::now() + std::chrono::seconds(duration);
    const auto t0 = SteadyClock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < valid_threads; ++i) threads.emplace_back(valid_worker, seed * 100 + i);
    threads.emplace_back(slow_worker, 16, 8);
    threads.emplace_back(garbage_worker, seed * 100 + 50);
    threads.emplace_back(oversize_worker, seed * 100 + 51);
    threads.emplace_back(smuggling_worker, seed * 100 + 52);
    threads.emplace_back(open_close_worker, seed * 100 + 53);
    threads.emplace_back(no_read_worker);
    for (auto& t : threads) t.join();
    const double secs = std::chrono::duration<double>(SteadyClock::now() - t0).count();

    const Stats& s = g_stats;
    std::printf("soak client: %.1f s\n", secs);
    std::printf(
        "  valid requests %llu (%.0f/s) on %llu connections: ok %llu, wrong %llu, "
        "missing %llu, connect failures %llu\n",
        static_cast<unsigned long long>(s.valid_requests.load()),
        static_cast<double>(s.valid_requests.load()) / secs,
        static_cast<unsigned long long>(s.valid_connections.load()),
        static_cast<unsigned long long>(s.valid_ok.load()),
        static_cast<unsigned long long>(s.valid_wrong.load()),
        static_cast<unsigned long long>(s.valid_missing.load()),
        static_cast<unsigned long long>(s.connect_failures.load()));
    for (const Tally* t : {&s.slowloris, &s.slow_body, &s.garbage, &s.oversize, &s.smuggling,
                           &s.open_close, &s.no_read})
        print_tally(*t);
    std::printf("  pipelining clients the server paused: %llu\n",
                static_cast<unsigned long long>(s.no_read_paused.load()));
    for (const std::string& f : g_stats.failures) std::printf("  FAILURE %s\n", f.c_str());

    std::uint64_t anomalies = 0;
    for (const Tally* t : {&s.slowloris, &s.slow_body, &s.garbage, &s.oversize, &s.smuggling,
                           &s.open_close, &s.no_read})
        anomalies += t->anomalies;
    const bool ok = s.valid_wrong == 0 && s.valid_missing == 0 && s.connect_failures == 0 &&
                    anomalies == 0 && s.valid_ok > 0;
    return ok ? 0 : 1;
}
