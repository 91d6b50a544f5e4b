// WebSocket under load and across threads, over real sockets:
//   WebSocketLoad     a Hub broadcast reaching 10,000 sessions on 2 loops, rooms and `except`,
//                     clients that do not read meeting each SlowClient policy
//   WebSocketThreads  WsSender used from other threads (and past the App), Hub broadcasts
//                     while members join and leave; run under TSan with WebSocketLoad.Hub*

#include <sys/resource.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "vela/vela.hpp"
#include "ws/fanout_clients.hpp"
#include "ws/ws_client.hpp"

namespace vela::e2e {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif
#else
constexpr bool kTsan = false;
#endif

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the limit now in force.
rlim_t raise_fd_limit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
    if (lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::getrlimit(RLIMIT_NOFILE, &lim);
    }
    return lim.rlim_cur;
}

// Polls `done` every few milliseconds; true once it holds, false after `within`.
template <class F>
bool wait_until(F done, Ms within) {
    const auto deadline = SteadyClock::now() + within;
    while (!done()) {
        if (SteadyClock::now() >= deadline) return false;
        std::this_thread::sleep_for(Ms{5});
    }
    return true;
}

// A session of `path` with the client's timeout set (sanitizers are slow).
WsClient open_session(std::uint16_t port, std::string_view path, Ms timeout = Ms{10'000}) {
    WsClient c = WsClient::connect(port, timeout);
    if (c.connected()) c.handshake(path);
    return c;
}

// Reads one message and returns its text, or "<error>" for a missing one.
std::string next_text(WsClient& c) {
    auto m = c.read_message();
    return m ? m->payload : "<" + c.error() + ">";
}

// The client's half of a clean close: close frame, the server's answer, then the TCP end.
void close_session(WsClient& c) {
    EXPECT_TRUE(c.send_close());
    auto f = c.read_close();
    EXPECT_TRUE(f) << c.error();
    EXPECT_TRUE(c.closed_by_peer(Ms{5000}));
}

// A route that joins `room` and then only waits for the end of the session.
WsHandler join_and_listen(Hub::Room& room) {
    return [&room](WebSocket& ws, Request&) -> Task<void> {
        room.join(ws);
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
        }
    };
}

// Errors found on other threads, reported by the test thread.
class ThreadErrors {
  public:
    void add(std::string e) {
        std::lock_guard lock(mu_);
        errors_.push_back(std::move(e));
    }
    std::vector<std::string> take() {
        std::lock_guard lock(mu_);
        return std::move(errors_);
    }

  private:
    std::mutex mu_;
    std::vector<std::string> errors_;
};

// ---- Hub fan-out ----------------------------------------------------------------------------

TEST(WebSocketLoad, HubFanout) {
    const int kSessions = kTsan ? 1000 : 10'000;
    constexpr int kMessages = 5;
    // The clients run in a child process (ws/fanout_clients.hpp), so each side needs a
    // descriptor per session, plus a margin for the loops, pipes and listeners.
    const rlim_t limit = raise_fd_limit();
    if (limit != RLIM_INFINITY && limit < static_cast<rlim_t>(kSessions + 500))
        GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << limit << " is below the " << kSessions + 500
                     << " descriptors " << kSessions
                     << " sessions need per process (raise it: ulimit -Hn)";

    Hub hub;  // outlives the server
    Hub::Room& room = hub.room("all");
    App app;
    quick_options(app.options());
    app.options().header_timeout = Ms{60'000};
    WsOptions opt;
    opt.ping_interval = Ms{0};  // the sessions receive nothing but the broadcasts
    app.ws("/hub", join_and_listen(room), opt);

    ChildProcess child([&](ChildProcess& self) {
        const std::string port = self.read_line(Ms{60'000});
        if (!port.starts_with("port ")) return 2;
        FanoutClients clients(static_cast<std::uint16_t>(std::stoi(port.substr(5))), kMessages);
        std::string err = clients.open("/hub", kSessions, SteadyClock::now() + Ms{120'000});
        self.write_line(err.empty() ? "open" : "error " + err);
        if (!err.empty()) return 1;
        err = clients.receive(SteadyClock::now() + Ms{120'000});
        self.write_line(err.empty() ? "received" : "error " + err);
        if (!err.empty()) return 1;
        if (self.read_line(Ms{120'000}) != "close") return 1;
        clients.close_all();
        return 0;
    });
    ASSERT_TRUE(child.started()) << std::strerror(errno);
    start_app(app, 2);

    const auto t_open = SteadyClock::now();
    ASSERT_TRUE(child.write_line("port " + std::to_string(app.port())));
    ASSERT_EQ(child.read_line(Ms{120'000}), "open");
    ASSERT_TRUE(wait_until([&] { return room.count() == std::size_t(kSessions); }, Ms{30'000}))
        << room.count() << " of " << kSessions << " sessions joined";
    const long long open_ms = ms_since(t_open);

    // From the test thread: no loop's thread, so every loop gets the broadcasts by post.
    const auto t_send = SteadyClock::now();
    for (int i = 0; i < kMessages; ++i)
        EXPECT_EQ(room.broadcast(broadcast_text(i)), std::size_t(kSessions));
    ASSERT_EQ(child.read_line(Ms{120'000}), "received");
    const long long fanout_ms = ms_since(t_send);
    std::printf(
        "[ hub      ] %d sessions on 2 loops: opened and joined in %lld ms; %d "
        "broadcasts reached every one, in order, in %lld ms\n",
        kSessions, open_ms, kMessages, fanout_ms);
    EXPECT_LT(fanout_ms, 30'000);

    ASSERT_TRUE(child.write_line("close"));
    EXPECT_EQ(child.wait_exit(Ms{60'000}), 0);
    EXPECT_TRUE(wait_until([&] { return room.count() == 0; }, Ms{30'000}))
        << room.count() << " sessions still in the room after every client closed";
}

TEST(WebSocketLoad, HubRoomsSkipTheSender) {
    Hub hub;
    App app;
    quick_options(app.options());
    // Each session joins the room in its path; what it sends goes to the others there.
    app.ws("/room/{name}", [&hub](WebSocket& ws, Request& req) -> Task<void> {
        Hub::Room& room = hub.room(req.param("name"));
        room.join(ws);
        co_await ws.send("joined");
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            room.broadcast(m.data, m.type, &ws);
        }
    });
    start_app(app, 2);

    const std::vector<std::string> rooms = {"a", "a", "b", "a", "b"};
    std::vector<WsClient> clients;
    for (const std::string& r : rooms) {
        clients.push_back(open_session(app.port(), "/room/" + r));
        ASSERT_TRUE(clients.back().open()) << clients.back().error();
        ASSERT_EQ(next_text(clients.back()), "joined");
    }
    EXPECT_EQ(hub.count("a"), 3u);
    EXPECT_EQ(hub.count("b"), 2u);

    // Each one speaks in turn; everyone else in its room hears it.
    for (std::size_t from = 0; from < clients.size(); ++from) {
        const std::string text = "from " + std::to_string(from);
        ASSERT_TRUE(clients[from].send_text(text));
        for (std::size_t to = 0; to < clients.size(); ++to) {
            if (to != from && rooms[to] == rooms[from]) {
                EXPECT_EQ(next_text(clients[to]), text) << "client " << to;
            }
        }
    }
    // A last broadcast to both rooms, queued behind anything sent before it on each loop:
    // it comes next only when nobody got its own message or the other room's.
    hub.broadcast("a", "end");
    hub.broadcast("b", "end");
    for (std::size_t i = 0; i < clients.size(); ++i)
        EXPECT_EQ(next_text(clients[i]), "end") << "client " << i << " in room " << rooms[i];

    for (WsClient& c : clients) close_session(c);
    EXPECT_TRUE(wait_until([&] { return hub.count("a") + hub.count("b") == 0; }, Ms{5000}));
}

// A Hub outlives the server (websocket.hpp): one room serves `apps` one-loop Apps in turn,
// each with a member that must get the room's broadcast.
void hub_across_apps(int apps) {
    Hub hub;
    Hub::Room& room = hub.room("r");
    for (int round = 0; round < apps; ++round) {
        App app;
        quick_options(app.options());
        app.ws("/r", join_and_listen(room));
        start_app(app, 1);
        WsClient c = open_session(app.port(), "/r");
        ASSERT_TRUE(c.open()) << c.error();
        ASSERT_TRUE(wait_until([&] { return room.count() == 1; }, Ms{5000})) << "App " << round;
        const std::string text = "App " + std::to_string(round);
        room.broadcast(text);
        EXPECT_EQ(next_text(c), text);
        close_session(c);
        ASSERT_TRUE(wait_until([&] { return room.count() == 0; }, Ms{5000}));
    }
}

// Regression (fixed in 46db572): the next App's loop at the last one's address was taken
// for it, and broadcasts to its members were lost.
TEST(WebSocketLoad, HubServesTheNextApp) { hub_across_apps(3); }

TEST(WebSocketLoad, HubServesManyAppsInTurn) { hub_across_apps(260); }

// ---- Clients that do not read ----------------------------------------------------------------

constexpr std::size_t kSlowSize = 4096;
constexpr std::size_t kQueueMax = 64 * 1024;

// At least 1000 messages, and more than the kernel holds for a client that reads nothing:
// the server's send buffer grows up to tcp_wmem's maximum (4 MiB here, ~960 messages).
int slow_message_count() {
    unsigned long low = 0, initial = 0, max = 4ul << 20;
    if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_wmem", "r")) {
        if (std::fscanf(f, "%lu %lu %lu", &low, &initial, &max) != 3) max = 4ul << 20;
        std::fclose(f);
    }
    return static_cast<int>(std::max<unsigned long>(1000, (max + (1ul << 20)) / kSlowSize));
}
const int kSlowMessages = slow_message_count();

// Message `i` of the slow-reader tests: its number, padded to kSlowSize.
std::string numbered(int i) {
    std::string s = std::to_string(i) + ' ';
    s.resize(kSlowSize, 'x');
    return s;
}

// The number a numbered() message starts with, -1 for anything else.
int number_of(std::string_view s) {
    int v = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc{} && s.size() == kSlowSize && end != s.data() + s.size() ? v : -1;
}

// What the sending route saw, read by the test thread.
struct SlowSends {
    std::atomic<int> attempted{0};  // sends started
    std::atomic<int> queued{0};     // sends that returned true
    std::atomic<int> refused{0};    // sends that returned false
    std::atomic<std::size_t> max_backlog{0};
    std::atomic<bool> done{false};  // all sends made
    std::mutex mu;
    std::vector<int> accepted;  // numbers of the queued messages, in order
};

// Sends kSlowMessages numbered messages, recording each outcome and the largest backlog,
// then echoes what the client sends (which shows the session is still open).
WsHandler send_to_slow_client(SlowSends& st) {
    return [&st](WebSocket& ws, Request&) -> Task<void> {
        std::string msg;
        for (int i = 0; i < kSlowMessages; ++i) {
            msg = numbered(i);
            st.attempted.store(i + 1);
            const bool ok = co_await ws.send(msg, WsType::binary);
            st.max_backlog.store(std::max(st.max_backlog.load(), ws.queued()));
            if (ok) {
                std::lock_guard lock(st.mu);
                st.accepted.push_back(i);
                ++st.queued;
            } else {
                ++st.refused;
            }
        }
        st.done.store(true);
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            co_await ws.send(m.data, m.type);
        }
    };
}

WsOptions slow_options(SlowClient policy) {
    WsOptions o;
    o.send_queue_max = kQueueMax;
    o.slow_client = policy;
    o.ping_interval = Ms{0};
    return o;
}

// A session at /slow with `policy`, whose client reads nothing yet: its receive buffer is
// locked small (the kernel would otherwise grow it and swallow megabytes before the
// server's queue fills).
struct SlowReader {
    SlowSends sends;  // what the route saw
    App app;
    WsClient client;

    explicit SlowReader(SlowClient policy) {
        quick_options(app.options());
        app.ws("/slow", send_to_slow_client(sends), slow_options(policy));
        start_app(app, 1);
        client = WsClient::connect(app.port(), Ms{10'000});
        const int rcvbuf = 16 * 1024;
        ::setsockopt(client.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        client.handshake("/slow");
    }
    // True once the route made all its sends.
    bool wait_done() {
        return wait_until([&] { return sends.done.load(); }, Ms{10'000});
    }
    // The numbers of the messages the route queued, in order.
    std::vector<int> accepted() {
        std::lock_guard lock(sends.mu);
        return sends.accepted;
    }
};

// The session still answers (the route echoes once its sends are made); then it closes.
void expect_echo_then_close(WsClient& c) {
    ASSERT_TRUE(c.send_text("still open"));
    EXPECT_EQ(next_text(c), "still open");
    close_session(c);
}

// Reads messages while they are numbered `expected`; returns how many came. Stops at the
// first other frame or failure (see c.error(), c.last_close()).
int read_numbered(WsClient& c, const std::vector<int>& expected) {
    int n = 0;
    for (int want : expected) {
        auto m = c.read_message();
        if (!m) break;
        EXPECT_EQ(number_of(m->payload), want) << "message " << n;
        if (number_of(m->payload) != want) break;
        ++n;
    }
    return n;
}

std::vector<int> all_numbers() {
    std::vector<int> v(kSlowMessages);
    for (int i = 0; i < kSlowMessages; ++i) v[static_cast<std::size_t>(i)] = i;
    return v;
}

TEST(WebSocketLoad, SlowReaderWaitSuspendsTheSender) {
    SlowReader slow(SlowClient::wait);
    SlowSends& st = slow.sends;
    WsClient& c = slow.client;
    ASSERT_TRUE(c.open()) << c.error();

    // The route's sends stop: it is suspended in send() while the queue is full.
    int last = -1;
    ASSERT_TRUE(wait_until(
        [&] {
            const int now = st.attempted.load();
            if (now == last) return true;
            last = now;
            std::this_thread::sleep_for(Ms{300});
            return false;
        },
        Ms{10'000}));
    std::printf("[ wait     ] the route stopped at send %d of %d\n", last, kSlowMessages);
    EXPECT_LT(last, kSlowMessages) << "every send completed for a client that reads nothing";
    EXPECT_FALSE(st.done.load());
    EXPECT_LE(st.max_backlog.load(), kQueueMax + kSlowSize + ws::kMaxHeader);

    // Reading lets it go on, and everything arrives in order.
    EXPECT_EQ(read_numbered(c, all_numbers()), kSlowMessages) << c.error();
    EXPECT_TRUE(wait_until([&] { return st.done.load(); }, Ms{5000}));
    EXPECT_EQ(st.queued.load(), kSlowMessages);
    EXPECT_EQ(st.refused.load(), 0);
    EXPECT_LE(st.max_backlog.load(), kQueueMax + kSlowSize + ws::kMaxHeader);
    expect_echo_then_close(c);
}

TEST(WebSocketLoad, SlowReaderDropRefusesSendsAndStaysOpen) {
    SlowReader slow(SlowClient::drop);
    SlowSends& st = slow.sends;
    WsClient& c = slow.client;
    ASSERT_TRUE(c.open()) << c.error();

    ASSERT_TRUE(slow.wait_done());
    EXPECT_GT(st.refused.load(), 0);
    EXPECT_GT(st.queued.load(), 0);
    EXPECT_LE(st.max_backlog.load(), kQueueMax + kSlowSize + ws::kMaxHeader);
    const std::vector<int> accepted = slow.accepted();
    std::printf("[ drop     ] %zu of %d sends queued, %d refused\n", accepted.size(), kSlowMessages,
                st.refused.load());

    // Exactly the queued ones arrive, in order, and then the session answers as before.
    EXPECT_EQ(read_numbered(c, accepted), static_cast<int>(accepted.size())) << c.error();
    expect_echo_then_close(c);
}

TEST(WebSocketLoad, SlowReaderCloseEndsWith1008) {
    SlowReader slow(SlowClient::close);
    WsClient& c = slow.client;
    ASSERT_TRUE(c.open()) << c.error();

    ASSERT_TRUE(slow.wait_done());
    EXPECT_GT(slow.sends.refused.load(), 0);
    const std::vector<int> queued = slow.accepted();
    std::printf("[ close    ] %zu of %d sends queued before the close\n", queued.size(),
                kSlowMessages);

    // What was queued before the policy closed the session comes first, then the close.
    EXPECT_EQ(read_numbered(c, queued), static_cast<int>(queued.size())) << c.error();
    auto close = c.read_close();
    ASSERT_TRUE(close) << c.error();
    EXPECT_EQ(close->close_code(), ws::close_code::policy_violation);
    EXPECT_TRUE(c.send_close(ws::close_code::policy_violation));
    EXPECT_TRUE(c.closed_by_peer(Ms{5000}));
}

// ---- Other threads --------------------------------------------------------------------------

// A route that hands its session's sender to the test, then waits for the end.
WsHandler hand_out_sender(std::promise<WsSender>& out) {
    return [&out](WebSocket& ws, Request&) -> Task<void> {
        out.set_value(ws.sender());
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
        }
    };
}

TEST(WebSocketThreads, SenderFromFourThreads) {
    constexpr int kThreads = 4;
    const int kPerThread = kTsan ? 300 : 1000;
    std::promise<WsSender> handed;
    App app;
    quick_options(app.options());
    app.ws("/s", hand_out_sender(handed));
    start_app(app, 2);
    WsClient c = open_session(app.port(), "/s");
    ASSERT_TRUE(c.open()) << c.error();
    auto fut = handed.get_future();
    ASSERT_EQ(fut.wait_for(Ms{5000}), std::future_status::ready);
    const WsSender sender = fut.get();

    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i)
                if (!sender.send(std::to_string(t) + ":" + std::to_string(i))) ++refused;
        });
    // Read while they send: every thread's messages arrive, each thread's in order.
    std::vector<int> next(kThreads, 0);
    int got = 0;
    for (; got < kThreads * kPerThread; ++got) {
        auto m = c.read_message();
        if (!m) break;
        int t = -1, i = -1;
        const std::string& p = m->payload;
        const auto colon = p.find(':');
        std::from_chars(p.data(), p.data() + colon, t);
        std::from_chars(p.data() + colon + 1, p.data() + p.size(), i);
        if (t < 0 || t >= kThreads || i != next[static_cast<std::size_t>(t)]) {
            ADD_FAILURE() << "message " << got << " is '" << p << "': out of order";
            break;
        }
        ++next[static_cast<std::size_t>(t)];
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(got, kThreads * kPerThread) << c.error();
    EXPECT_EQ(refused.load(), 0);

    close_session(c);
    ASSERT_TRUE(wait_until([&] { return !sender.open(); }, Ms{5000}));
    EXPECT_FALSE(sender.send("after the close"));
    sender.close();  // harmless
}

// The part other threads reach is made by the first sender(): one made after messages went
// both ways, and one made after the session ended, carry the session's state.
TEST(WebSocketThreads, SenderMadeLateKnowsTheSessionState) {
    std::promise<WsSender> during, after;
    App app;
    quick_options(app.options());
    app.ws("/late", [&during, &after](WebSocket& ws) -> Task<void> {
        WsMessage m = co_await ws.receive();
        co_await ws.send(m.data, m.type);
        during.set_value(ws.sender());
        for (;;) {
            m = co_await ws.receive();
            if (m.is_close()) break;
        }
        after.set_value(ws.sender());
    });
    start_app(app, 1);
    WsClient c = open_session(app.port(), "/late");
    ASSERT_TRUE(c.open()) << c.error();
    ASSERT_TRUE(c.send_text("one"));
    auto echo = c.read_message();
    ASSERT_TRUE(echo);
    EXPECT_EQ(echo->payload, "one");
    auto f = during.get_future();
    ASSERT_EQ(f.wait_for(Ms{5000}), std::future_status::ready);
    const WsSender sender = f.get();
    EXPECT_TRUE(sender.open());
    std::thread([&] { EXPECT_TRUE(sender.send("from a thread")); }).join();
    auto pushed = c.read_message();
    ASSERT_TRUE(pushed) << c.error();
    EXPECT_EQ(pushed->payload, "from a thread");

    close_session(c);
    auto g = after.get_future();
    ASSERT_EQ(g.wait_for(Ms{5000}), std::future_status::ready);
    const WsSender late = g.get();
    EXPECT_FALSE(late.open());
    EXPECT_FALSE(late.send("after the close"));
    ASSERT_TRUE(wait_until([&] { return !sender.open(); }, Ms{5000}));
    app.stop();
    EXPECT_EQ(app.wait(), 0);
}

TEST(WebSocketThreads, SendersRacingTheCloseAndTheApp) {
    WsSender kept;
    std::atomic<bool> stop{false};
    std::atomic<long> accepted{0};
    std::vector<std::thread> pushers;
    {
        WsClient c;  // destroyed after the App: the session is open when the App goes
        std::promise<WsSender> handed;
        App app;
        quick_options(app.options());
        WsOptions opt;
        opt.close_timeout = Ms{200};  // the client never answers the shutdown's close
        app.ws("/s", hand_out_sender(handed), opt);
        start_app(app, 2);
        c = open_session(app.port(), "/s");
        ASSERT_TRUE(c.open()) << c.error();
        auto fut = handed.get_future();
        ASSERT_EQ(fut.wait_for(Ms{5000}), std::future_status::ready);
        kept = fut.get();
        // Two threads send (the client reads nothing: the queue fills, then sends fail)
        // while the App shuts down under them.
        for (int t = 0; t < 2; ++t)
            pushers.emplace_back([&] {
                while (!stop.load()) {
                    if (kept.send("x"))
                        ++accepted;
                    else
                        std::this_thread::yield();
                }
            });
        std::this_thread::sleep_for(Ms{50});
    }
    EXPECT_FALSE(kept.open());
    EXPECT_FALSE(kept.send("after the App"));
    kept.close();  // posts to a loop that is gone: nothing happens
    stop.store(true);
    for (std::thread& t : pushers) t.join();
    EXPECT_GT(accepted.load(), 0);
}

TEST(WebSocketThreads, HubBroadcastWhileMembersJoinAndLeave) {
    const int kChurners = 4;
    const int kCycles = kTsan ? 10 : 30;
    Hub hub;
    Hub::Room& room = hub.room("churn");
    App app;
    quick_options(app.options());
    app.ws("/churn", [&room](WebSocket& ws, Request&) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            if (m.data == "join") {
                room.join(ws);
                co_await ws.send("joined");
            } else if (m.data == "leave") {
                room.leave(ws);
                co_await ws.send("left");
            }
        }
    });
    start_app(app, 2);

    // One member stays throughout and must get every broadcast, in order.
    WsClient stable = open_session(app.port(), "/churn");
    ASSERT_TRUE(stable.open()) << stable.error();
    ASSERT_TRUE(stable.send_text("join"));
    ASSERT_EQ(next_text(stable), "joined");

    std::atomic<bool> churning{true};
    std::atomic<int> sent{0};
    std::thread broadcaster([&] {
        while (churning.load()) {
            room.broadcast(std::to_string(sent.load()));
            ++sent;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        room.broadcast("end");
    });
    std::vector<std::string> received;
    std::thread reader([&] {
        for (;;) {
            std::string t = next_text(stable);
            received.push_back(t);
            if (t == "end" || t.starts_with("<")) return;
        }
    });

    // Others join, hear some broadcasts in order, and leave or just go away.
    ThreadErrors errors;
    std::vector<std::thread> churners;
    for (int k = 0; k < kChurners; ++k)
        churners.emplace_back([&, k] {
            for (int cycle = 0; cycle < kCycles; ++cycle) {
                WsClient c = open_session(app.port(), "/churn");
                if (!c.open() || !c.send_text("join")) return errors.add("open: " + c.error());
                std::string t;
                while ((t = next_text(c)) != "joined")
                    if (t.starts_with("<")) return errors.add("join: " + t);
                int last = -1;
                for (int i = 0; i < 5; ++i) {  // broadcasts heard while a member
                    t = next_text(c);
                    const int n = t == "end" ? last + 1 : std::atoi(t.c_str());
                    if (t.starts_with("<") || n <= last) return errors.add("heard " + t);
                    last = n;
                }
                if ((cycle + k) % 2 == 0) {
                    if (!c.send_text("leave")) return errors.add("leave: " + c.error());
                    while ((t = next_text(c)) != "left")
                        if (t.starts_with("<")) return errors.add("leave: " + t);
                }
            }  // else the session ends still a member
        });
    for (std::thread& t : churners) t.join();
    churning.store(false);
    broadcaster.join();
    reader.join();
    for (const std::string& e : errors.take()) ADD_FAILURE() << e;

    ASSERT_FALSE(received.empty());
    EXPECT_EQ(received.back(), "end");
    ASSERT_EQ(received.size(), std::size_t(sent.load()) + 1);
    for (int i = 0; i < sent.load(); ++i)
        ASSERT_EQ(received[static_cast<std::size_t>(i)], std::to_string(i));
    std::printf("[ churn    ] %d broadcasts during %d joins by %d clients\n", sent.load(),
                kChurners * kCycles, kChurners);

    EXPECT_TRUE(wait_until([&] { return room.count() == 1; }, Ms{5000}))
        << room.count() << " members; only the stable one should be left";
    close_session(stable);
    EXPECT_TRUE(wait_until([&] { return room.count() == 0; }, Ms{5000}));
}

}  // namespace
}  // namespace vela::e2e
