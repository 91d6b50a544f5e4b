// Tests for vela::testing::Client (src/testing/): in process, the whole stack without
// sockets (sync and async handlers, middleware order, error mapping, cookies, streamed and
// file bodies, malformed requests); in loopback mode, the same API over a real connection
// (a server-sent event stream read as it arrives, WebSocket, keep-alive); and the reader of
// response bytes (src/testing/response_reader.cpp) as a table.
#include "vela/testing/client.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "testing/response_reader.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using testing::Client;
using testing::TestResponse;

struct Item {
    std::string name;
    int qty = 0;
};
VELA_REFLECT(Item, name, qty)

// A routing table with every kind of handler and an onion, a before and an after middleware
// that record the order they ran in.
void add_routes(App& app, std::string& trace) {
    app.use([&trace](Request& req, Next next) -> Task<Response> {
        trace += "onion-in ";
        Response r = co_await next();
        trace += "onion-out ";
        r.add_header("X-Onion", std::string(req.attribute("before").value_or("no")));
        co_return r;
    });
    app.use([&trace](Request& req) {
        trace += "before ";
        req.set_attribute("before", "yes");
    });
    app.use([&trace](Request&, Response& res) {
        trace += "after ";
        res.add_header("X-After", "1");
    });
    app.get("/sync", [&trace] {
        trace += "handler ";
        return "sync";
    });
    app.get("/async", [&trace](Request& r) -> Task<Response> {
        co_await vela::sleep(5ms);
        trace += "handler ";
        co_return "async " + r.query("n").value_or("?");
    });
    app.get("/items/{id:int}", [](Request& r) {
        return Item{"pen", static_cast<int>(*r.param_int("id"))};
    });
    app.post("/items", [](Json<Item> item) {
        Item out = *item;
        out.qty += 1;
        return out;
    });
    app.post("/form", [](Request& r) { return std::string(r.body()); });
    app.get("/headers", [](Request& r) {
        return std::string(r.header("X-Test")) + "|" + std::string(r.remote_ip()) + "|" +
               std::string(r.host());
    });
    app.get("/throw", [](Request&) -> Response { throw std::runtime_error("hidden detail"); });
    app.get("/throw-async", [](Request&) -> Task<Response> {
        co_await vela::sleep(1ms);
        throw std::runtime_error("hidden detail");
    });
    app.get("/teapot", []() -> Response { throw HttpError(Status::NotFound, "no teapot here"); });
    app.get("/login", [](Request&) {
        Response r = Response::text("in");
        r.set_cookie({.name = "sid", .value = "abc"});
        r.set_cookie({.name = "theme", .value = "dark"});
        return r;
    });
    app.get("/logout", [](Request&) {
        Response r = Response::text("out");
        r.clear_cookie("sid");
        return r;
    });
    app.get("/expire", [](Request&) {
        Response r = Response::text("expired");
        r.set_cookie({.name = "theme",
                      .value = "x",
                      .expires = std::chrono::system_clock::from_time_t(1000)});
        return r;
    });
    app.get("/whoami", [](Request& r) {
        return std::string(r.cookie("sid").value_or("nobody")) + "," +
               std::string(r.cookie("theme").value_or("-"));
    });
    app.get("/stream", [](Request&) {
        Response r;
        r.set_content_type("text/plain");
        return stream_body(std::move(r), [](BodyWriter& w) -> Task<void> {
            for (int i = 0; i < 3; ++i) {
                co_await vela::sleep(2ms);
                if (!co_await w.write("part" + std::to_string(i) + ";")) co_return;
            }
        });
    });
    app.get("/source", [](Request&) {
        Response r;
        auto n = std::make_shared<int>(0);
        r.set_body_source([n]() -> std::optional<std::string> {
            if (*n == 3) return std::nullopt;
            return std::string(1, static_cast<char>('a' + (*n)++));
        });
        return r;
    });
}

class InProcess : public ::testing::Test {
  protected:
    void SetUp() override { add_routes(app, trace); }
    std::string trace;
    App app;
};

TEST_F(InProcess, SyncHandlerInAPlainTest) {
    Client client(app);
    TestResponse r = client.get("/sync").get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "sync");
    EXPECT_EQ(r.content_type(), "text/plain; charset=utf-8");
    EXPECT_EQ(r.header("content-length"), "4");  // as the response writer framed it
    EXPECT_FALSE(r.header("Date").empty());
}

TEST_F(InProcess, MiddlewareRunInOrderAroundSyncAndAsyncHandlers) {
    Client client(app);
    TestResponse r = client.get("/sync").get();
    EXPECT_EQ(trace, "onion-in before handler after onion-out ");
    EXPECT_EQ(r.header("X-Onion"), "yes");
    EXPECT_EQ(r.header("X-After"), "1");
    trace.clear();
    r = client.get("/async?n=7").get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "async 7");
    EXPECT_EQ(trace, "onion-in before handler after onion-out ");
}

TEST_F(InProcess, CoroutineForm) {
    Client client(app);
    client.run([&]() -> Task<void> {
        TestResponse r = co_await client.get("/items/5");
        EXPECT_EQ(r.status(), 200);
        EXPECT_EQ(r.content_type(), "application/json");
        Item item = r.json<Item>();
        EXPECT_EQ(item.name, "pen");
        EXPECT_EQ(item.qty, 5);
        const Item cup{"cup", 1};  // (a temporary inside co_await: GCC 12 destroys it twice)
        r = co_await client.post_json("/items", cup);
        EXPECT_EQ(r.json<Item>().qty, 2);
        EXPECT_EQ(r.json()["name"].as_string(), "cup");
    }());
}

TEST_F(InProcess, JsonAndFormBodies) {
    Client client(app);
    TestResponse r = client.post_json("/items", Item{"ink", 9}).get();
    ASSERT_EQ(r.status(), 200) << r.body();
    EXPECT_EQ(r.json<Item>().qty, 10);
    r = client.post("/items", "{\"name\":\"x\"}").get();  // no Content-Type: the reader's 415
    EXPECT_EQ(r.status(), 415);
    r = client.post("/items", "{not json", {{"Content-Type", "application/json"}}).get();
    EXPECT_EQ(r.status(), 400);
    EXPECT_EQ(r.content_type(), "application/problem+json");
    r = client.post_form("/form", {{"a b", "c&d"}, {"e", "é"}}).get();
    EXPECT_EQ(r.body(), "a+b=c%26d&e=%C3%A9");
}

TEST_F(InProcess, ErrorMapping) {
    Client client(app);
    TestResponse r = client.get("/nope").get();
    EXPECT_EQ(r.status(), 404);
    r = client.post("/sync", "").get();
    EXPECT_EQ(r.status(), 405);
    EXPECT_EQ(r.header("Allow"), "GET, HEAD, OPTIONS");
    r = client.get("/teapot").get();
    EXPECT_EQ(r.status(), 404);
    EXPECT_NE(r.body().find("no teapot here"), std::string::npos) << r.body();
    r = client.request("BREW", "/sync").get();
    EXPECT_EQ(r.status(), 501);
}

TEST_F(InProcess, ExceptionsBecomeThe500OfTheWire) {
    app.error_pages({.format = ErrorFormat::problem_json});
    Client client(app);
    for (const char* path : {"/throw", "/throw-async"}) {
        TestResponse r = client.get(path).get();
        EXPECT_EQ(r.status(), 500) << path;
        EXPECT_EQ(r.content_type(), "application/problem+json") << path;
        EXPECT_EQ(r.json()["status"].as_int64(), 500) << path;
        EXPECT_EQ(r.body().find("hidden detail"), std::string::npos) << r.body();
        EXPECT_EQ(r.header("X-After"), "1") << "the after hook sees the 500 (" << path << ")";
    }
}

TEST_F(InProcess, HeadersHostAndPeer) {
    testing::ClientOptions o;
    o.remote_ip = "10.1.2.3";
    o.host = "example.test";
    Client client(app, o);
    EXPECT_EQ(client.get("/headers", {{"X-Test", "t"}}).get().body(), "t|10.1.2.3|example.test");
    client.set_default_header("X-Test", "default");
    EXPECT_EQ(client.get("/headers").get().body(), "default|10.1.2.3|example.test");
    TestResponse h = client.head("/sync").get();
    EXPECT_EQ(h.status(), 200);
    EXPECT_EQ(h.body(), "");
    EXPECT_EQ(h.header("Content-Length"), "4");
}

TEST_F(InProcess, CookieJarKeepsCookiesAcrossRequests) {
    Client client(app);
    EXPECT_EQ(client.get("/whoami").get().body(), "nobody,-");
    TestResponse r = client.get("/login").get();
    EXPECT_EQ(r.header_values("Set-Cookie").size(), 2u);
    EXPECT_EQ(client.cookies().get("sid"), "abc");
    EXPECT_EQ(client.get("/whoami").get().body(), "abc,dark");
    EXPECT_EQ(client.get("/whoami", {{"Cookie", "extra=1"}}).get().body(), "abc,dark");
    client.get("/logout").get();  // Max-Age=0 deletes it
    EXPECT_FALSE(client.cookies().get("sid"));
    EXPECT_EQ(client.get("/whoami").get().body(), "nobody,dark");
    client.get("/expire").get();  // an Expires in the past deletes it too
    EXPECT_EQ(client.get("/whoami").get().body(), "nobody,-");
    EXPECT_TRUE(client.cookies().empty());
}

TEST_F(InProcess, SessionsSurviveBetweenRequests) {
    App sapp;
    sapp.use(sessions());
    sapp.post("/count", [](Request& req) {
        Session& s = session(req);
        const int n = s.get<int>("n").value_or(0) + 1;
        s.set("n", n);
        return std::to_string(n);
    });
    Client client(sapp);
    EXPECT_EQ(client.post("/count", "").get().body(), "1");
    EXPECT_EQ(client.post("/count", "").get().body(), "2");
    client.cookies().clear();  // a new visitor
    EXPECT_EQ(client.post("/count", "").get().body(), "1");
}

TEST_F(InProcess, StreamedBodiesArePulledToTheirEnd) {
    Client client(app);
    TestResponse r = client.get("/stream").get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_TRUE(r.chunked());
    EXPECT_EQ(r.body(), "part0;part1;part2;");
    EXPECT_EQ(client.get("/source").get().body(), "abc");
}

TEST_F(InProcess, StreamedBodyPieceByPiece) {
    Client client(app);
    client.run([&]() -> Task<void> {
        testing::StreamedResponse s = co_await client.open("GET", "/stream");
        EXPECT_EQ(s.status(), 200);
        std::optional<std::string> first = co_await s.read_until(";");
        EXPECT_EQ(first, "part0;");
        EXPECT_EQ(co_await s.read_all(), "part1;part2;");
    }());
}

TEST_F(InProcess, CompressionMiddlewareIsPartOfTheStack) {
    App capp;
    capp.use(compression());
    capp.get("/big", [] { return std::string(4000, 'z'); });
    Client client(capp);
    TestResponse r = client.get("/big", {{"Accept-Encoding", "gzip"}}).get();
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    EXPECT_LT(r.body().size(), 1000u);
    r = client.get("/big").get();
    EXPECT_TRUE(r.header("Content-Encoding").empty());
    EXPECT_EQ(r.body().size(), 4000u);
}

TEST_F(InProcess, FileBodiesWithRanges) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("vela_testing_client_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "a.txt") << "0123456789";
    App fapp;
    fapp.static_files("/files", dir.string());
    Client client(fapp);
    TestResponse r = client.get("/files/a.txt").get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "0123456789");
    r = client.get("/files/a.txt", {{"Range", "bytes=2-4"}}).get();
    EXPECT_EQ(r.status(), 206);
    EXPECT_EQ(r.body(), "234");
    std::filesystem::remove_all(dir);
}

TEST_F(InProcess, MalformedRequestsGetTheServersAnswer) {
    Client client(app);
    TestResponse r = client.raw("GET /sync HTTP/1.1\r\n\r\n").get();  // no Host
    EXPECT_EQ(r.status(), 400);
    r = client.get("/a b").get();  // a raw space in the target
    EXPECT_EQ(r.status(), 400);
}

TEST_F(InProcess, AHandlerThatNeverAnswersTimesOut) {
    App sapp;
    sapp.get("/never", [](Request&) -> Task<Response> {
        co_await vela::sleep(std::chrono::hours(1));
        co_return "late";
    });
    testing::ClientOptions o;
    o.timeout = 50ms;
    Client client(sapp, o);
    EXPECT_THROW(client.get("/never").get(), std::runtime_error);
}

TEST_F(InProcess, BlockingCallInsideTheLoopIsRefused) {
    Client client(app);
    client.run([&]() -> Task<void> {
        EXPECT_THROW(client.get("/sync").get(), std::logic_error);
        co_return;
    }());
}

// ---- Loopback mode ---------------------------------------------------------------------------

TEST(Loopback, SameApiOverARealConnection) {
    std::string trace;
    App app;
    add_routes(app, trace);
    Client client = Client::loopback(app);
    ASSERT_NE(client.port(), 0);
    TestResponse r = client.get("/async?n=3").get();
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "async 3");
    EXPECT_EQ(r.header("X-Onion"), "yes");
    EXPECT_EQ(client.post_json("/items", Item{"x", 1}).get().json<Item>().qty, 2);
    EXPECT_EQ(client.get("/throw").get().status(), 500);
    client.get("/login").get();
    EXPECT_EQ(client.get("/whoami").get().body(), "abc,dark");
    EXPECT_EQ(client.get("/stream").get().body(), "part0;part1;part2;");
    EXPECT_EQ(client.head("/sync").get().body(), "");
    EXPECT_EQ(client.get("/sync").get().body(), "sync");  // the connection after a HEAD
}

TEST(Loopback, ServerSentEventsReadAsTheyArrive) {
    App app;
    app.get("/ping", [] { return "pong"; });
    app.get("/events", [](Request& req) {
        return sse(req, [](SseStream& s) -> Task<void> {
            for (int i = 0;; ++i) {
                if (!co_await s.send(SseEvent{.data = "tick " + std::to_string(i)})) co_return;
                co_await vela::sleep(5ms);
            }
        });
    });
    Client client = Client::loopback(app);
    client.run([&]() -> Task<void> {
        testing::StreamedResponse s = co_await client.open("GET", "/events");
        EXPECT_EQ(s.status(), 200);
        EXPECT_EQ(s.header("Content-Type"), "text/event-stream");
        for (int i = 0; i < 3; ++i) {
            std::optional<std::string> ev = co_await s.read_until("\n\n");
            if (!ev) {
                ADD_FAILURE() << "the stream ended";
                co_return;
            }
            EXPECT_EQ(*ev, "data: tick " + std::to_string(i) + "\n\n");
        }
    }());  // the stream never ends: dropping it closes its connection
    EXPECT_EQ(client.get("/ping").get().body(), "pong");  // on a connection of its own
}

TEST(Loopback, WebSocketSendAndReceive) {
    App app;
    app.ws("/echo", [](WebSocket& ws, Request&) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            const std::string reply = "echo: " + std::string(m.data);
            co_await ws.send(reply);
        }
    });
    Client client = Client::loopback(app);
    client.run([&]() -> Task<void> {
        testing::WebSocket ws = co_await client.websocket("/echo");
        EXPECT_EQ(ws.handshake().status(), 101);
        co_await ws.send_text("hi");
        testing::WebSocket::Message m = co_await ws.receive();
        EXPECT_EQ(m.opcode, ws::Opcode::text);
        EXPECT_EQ(m.data, "echo: hi");
        testing::WebSocket::Message c = co_await ws.close();
        EXPECT_EQ(c.opcode, ws::Opcode::close);
        EXPECT_EQ(c.close_code, ws::close_code::normal);
    }());
}

TEST(Loopback, WebSocketInProcessIsRefusedClearly) {
    App app;
    app.get("/x", [] { return "x"; });
    Client client(app);
    EXPECT_THROW((void)client.websocket("/x"), std::logic_error);
}

// ---- The reader of response bytes ------------------------------------------------------------

TEST(ResponseReader, Table) {
    using testing::detail::ResponseReader;
    struct Case {
        const char* name;
        std::string bytes;
        bool head;
        int status;  // 0: an error is expected
        const char* body;
    };
    const std::vector<Case> cases = {
        {"length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", false, 200, "abc"},
        {"chunked",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
         false, 200, "abc"},
        {"to eof", "HTTP/1.0 200 OK\r\n\r\nall of it", false, 200, "all of it"},
        {"head", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true, 200, ""},
        {"204", "HTTP/1.1 204 No Content\r\n\r\n", false, 204, ""},
        {"no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, 200, ""},
        {"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", false, 0, ""},
        {"not http", "HTTX/1.1 200 OK\r\n\r\n", false, 0, ""},
        {"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
         false, 0, ""},
        // RFC 9110 8.6: a repeat of one value is the same length.
        {"one length twice", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na",
         false, 200, "a"},
        {"lf endings", "HTTP/1.1 200 OK\nContent-Length: 1\n\na", false, 200, "a"},
        {"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", false, 0, ""},
        {"length and chunked",
         "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", false, 0,
         ""},
        {"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, 0, ""},
        {"short body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", false, 0, ""},
        {"space before colon", "HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", false, 0, ""},
        {"head cut short", "HTTP/1.1 200 OK\r\nContent-Len", false, 0, ""},
        {"nothing", "", false, 0, ""},
        {"chunk size cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r", false,
         0, ""},
    };
    for (const Case& c : cases) {
        // Whole, and one byte at a time: the same answer.
        for (const bool bytewise : {false, true}) {
            ResponseReader r(c.head);
            std::string body;
            int status = 0;
            bool failed = false;
            std::size_t fed = 0;
            for (;;) {
                if (!bytewise && fed == 0) {
                    r.append(c.bytes);
                    fed = c.bytes.size();
                }
                const bool eof = fed == c.bytes.size();
                const ResponseReader::Step s = r.next(eof);
                if (s == ResponseReader::Step::head) {
                    status = r.head().status();
                } else if (s == ResponseReader::Step::piece) {
                    body += r.take_piece();
                } else if (s == ResponseReader::Step::done) {
                    break;
                } else if (s == ResponseReader::Step::error) {
                    failed = true;
                    break;
                } else if (!eof) {
                    r.append(std::string_view(c.bytes).substr(fed, 1));
                    ++fed;
                } else {
                    failed = true;  // need_more at eof is a reader bug
                    ADD_FAILURE() << c.name << ": need_more at eof";
                    break;
                }
            }
            if (c.status == 0) {
                EXPECT_TRUE(failed) << c.name << (bytewise ? " (bytewise)" : "");
            } else {
                EXPECT_FALSE(failed) << c.name << ": " << r.error();
                EXPECT_EQ(status, c.status) << c.name;
                EXPECT_EQ(body, c.body) << c.name << (bytewise ? " (bytewise)" : "");
            }
        }
    }
}

}  // namespace
}  // namespace vela
