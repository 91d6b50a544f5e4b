#pragma once
// The server the WebSocket end-to-end tests talk to: one App with every endpoint they use
// (echo with and without permessage-deflate, closing, subprotocols, origins, small limits,
// path parameters, middleware, short timers), started on 127.0.0.1:0 by a gtest fixture,
// and SeenClose, where a handler leaves the close it saw for the test thread.

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "e2e/client.hpp"
#include "e2e/ws/ws_client.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {

// What a handler saw when its session ended, for the test thread to wait on.
struct SeenClose {
    std::mutex mu;
    std::condition_variable cv;
    bool seen = false;
    std::uint16_t code = 0;
    std::string reason;

    void record(const WsMessage& m) {
        std::lock_guard lock(mu);
        seen = true;
        code = m.code;
        reason.assign(m.data);
        cv.notify_all();
    }
    bool wait(Ms within) {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, within, [this] { return seen; });
    }
};

// Echoes every message until the session ends; records the close in `seen` when given.
inline WsHandler echo_handler(SeenClose* seen = nullptr) {
    return [seen](WebSocket& ws, Request&) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) {
                if (seen) seen->record(m);
                co_return;
            }
            co_await ws.send(m.data, m.type);
        }
    };
}

// The same as a coroutine that takes no request (the session keeps none of it).
inline WsSessionHandler session_echo_handler() {
    return [](WebSocket& ws) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            co_await ws.send(m.data, m.type);
        }
    };
}

// Closes at once with `code`, then waits for the end of the session.
inline WsHandler closing_handler(std::uint16_t code, std::string reason) {
    return [code, reason](WebSocket& ws, Request&) -> Task<void> {
        ws.close(code, reason);
        while (!(co_await ws.receive()).is_close()) {
        }
    };
}

inline WsOptions with_limits(std::size_t max_frame, std::size_t max_message) {
    WsOptions o;
    o.max_frame = max_frame;
    o.max_message = max_message;
    return o;
}

inline constexpr std::size_t kBig = 4 * 1024 * 1024;
inline constexpr std::size_t kSmallFrame = 1024;
inline constexpr std::size_t kSmallMessage = 4096;
inline const std::string kOrigin = "https://good.example";

// One App with every endpoint the tests use, on 127.0.0.1:0 (plain) and, when asked, TLS.
class WsServer : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        add_basic_routes(app);
        app.ws("/echo", echo_handler(&seen), with_limits(kBig, kBig));
        WsOptions plain = with_limits(kBig, kBig);
        plain.deflate.enabled = false;
        app.ws("/plain", echo_handler(), plain);
        app.ws("/close3000", closing_handler(3000, "server done"));
        WsOptions proto;
        proto.subprotocols = {"b"};
        app.ws("/proto", echo_handler(), proto);
        app.ws("/session-proto", session_echo_handler(), proto);
        app.ws("/session-echo", session_echo_handler(), with_limits(kBig, kBig));
        proto.require_subprotocol = true;
        app.ws("/proto-required", echo_handler(), proto);
        WsOptions origin;
        origin.origins = {kOrigin};
        app.ws("/origin", echo_handler(), origin);
        app.ws("/small", echo_handler(), with_limits(kSmallFrame, kSmallMessage));
        app.ws("/rooms/{id}", [](WebSocket& ws, Request& req) -> Task<void> {
            const std::string hello = std::string(req.param("id")) + "|" +
                                      std::string(req.header("X-Test")) + "|" +
                                      req.query("q").value_or("?");
            co_await ws.send(hello);
            while (!(co_await ws.receive()).is_close()) {
            }
        });
        app.group("/private")
            .use([](Request& r) -> std::optional<Response> {
                if (r.header("Authorization") == "Bearer ok") return std::nullopt;
                return Response::text("no\n", Status::Unauthorized);
            })
            .ws("/ws", echo_handler());
        WsOptions timers;
        timers.ping_interval = Ms{200};
        timers.pong_timeout = Ms{200};
        app.ws("/timers", echo_handler(), timers);
        WsOptions slow_close;
        slow_close.close_timeout = Ms{300};
        app.ws("/close-timeout", closing_handler(1000, "bye"), slow_close);
        // Holds each message across a wait before echoing it (the view must stay valid, and
        // reading must resume at the next receive()).
        app.ws("/slow-echo", [](WebSocket& ws, Request&) -> Task<void> {
            for (;;) {
                WsMessage m = co_await ws.receive();
                if (m.is_close()) co_return;
                co_await vela::sleep(Ms{20});
                co_await ws.send(m.data, m.type);
            }
        });
        // Receives one message, keeps it and returns: the close must still complete at once.
        app.ws("/take-one", [](WebSocket& ws, Request&) -> Task<void> {
            WsMessage m = co_await ws.receive();
            co_await vela::sleep(Ms{20});
            (void)m;
        });
        listen();
        app.start(1);
    }

    // Before start(): options set later are not used.
    virtual void listen() { app.listen("127.0.0.1:0"); }

    // A raw client that completed the handshake on `path`.
    WsClient open(std::string_view path, std::string_view extra = {}) {
        WsClient c = WsClient::connect(app.port());
        auto r = c.handshake(path, extra);
        EXPECT_TRUE(r && c.open()) << path << ": " << c.error();
        return c;
    }

    // The response to a handshake request sent as is.
    HttpResponse refused(std::string_view request) {
        WsClient c = WsClient::connect(app.port());
        auto r = c.handshake_raw(request);
        EXPECT_TRUE(r) << c.error();
        EXPECT_FALSE(c.open());
        return r.value_or(HttpResponse{});
    }

    SeenClose seen;  // before the app: handlers still record into it while the app stops
    App app;
};

}  // namespace vela::e2e
