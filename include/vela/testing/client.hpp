#pragma once
// vela::testing::Client: requests to an App from a test, through the whole stack.
//
// Threads and loops first: a Client owns one vela Loop, which runs on the thread that uses
// the client (the test's thread). Nothing of it may be used from another thread.
//
// In-process mode (`Client client(app)`) uses no socket. Each request is written as HTTP/1.1
// bytes, read back by vela's own request parser (so a test sees the request production sees,
// and a malformed one gets the server's 400), handed to the App's HttpHandler on the client's
// loop (middleware, router, sync and async handlers, error mapping: 404/405, problem+json,
// an exception's 500), and the Response is written by the server's own response writer
// (Date, Content-Length, chunked framing, HEAD without a body, file bodies with their
// ranges and conditionals) and parsed back, so headers and bodies look as on the wire.
// Streamed bodies (BodySource, stream_body, sse) are pulled to their end, or piece by piece
// with open(). Requests appear to come from 127.0.0.1 (ClientOptions::remote_ip).
//
// Loopback mode (`Client::loopback(app)`) starts the App on 127.0.0.1 with an ephemeral port
// in a background thread (stopped by the client's destructor) and sends the same requests
// over a real TCP connection, read on the client's loop: for what needs the wire (streaming
// as it happens, server-sent events, WebSocket, keep-alive).
//
// Two ways to wait for an answer, same API:
//
//     // inside a coroutine (run by vela::testing::run, client.run, or a handler)
//     auto r = co_await client.get("/items/1");
//     EXPECT_EQ(r.status(), 200);
//     Item item = r.json<Item>();
//
//     // in a plain TEST body: .get() drives the client's loop until the answer is in
//     auto r = client.post_json("/items", Item{.name = "pen"}).get();
//     EXPECT_EQ(r.status(), 201);
//     EXPECT_EQ(r.json()["name"].as_string(), "pen");
//
// A request that gets no answer within ClientOptions::timeout throws std::runtime_error
// (a test fails instead of hanging). Cookies set by responses are kept in cookies() and sent
// with later requests, so a login followed by a session request works as in a browser.

#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/web/app.hpp"
#include "vela/ws/frame.hpp"

namespace vela::testing {

namespace detail {
struct ConnectionSlot;
}

/// Header fields to send: (name, value) pairs, in order.
using Headers = std::vector<std::pair<std::string, std::string>>;
/// Form fields to send as application/x-www-form-urlencoded: (name, value) pairs, in order.
using FormFields = std::vector<std::pair<std::string, std::string>>;

/// A response as the client received it (status line, every header field, the whole body).
class TestResponse {
  public:
    /// The status code (200, 404...).
    int status() const noexcept { return status_; }
    /// The reason phrase of the status line ("OK").
    const std::string& reason() const noexcept { return reason_; }
    /// The first header field named `name` (case-insensitive), empty if absent.
    std::string_view header(std::string_view name) const noexcept;
    /// Every value of the header fields named `name` (Set-Cookie comes several times).
    std::vector<std::string_view> header_values(std::string_view name) const;
    /// True when a header field named `name` is present.
    bool has_header(std::string_view name) const noexcept;
    /// All header fields as received (name case preserved), in order.
    const std::vector<std::pair<std::string, std::string>>& headers() const noexcept {
        return headers_;
    }
    /// The body (de-chunked; empty for HEAD, 204 and 304).
    const std::string& body() const noexcept { return body_; }
    /// The Content-Type value, empty if absent.
    std::string_view content_type() const noexcept { return header("Content-Type"); }
    /// True when the body came with Transfer-Encoding: chunked (a streamed body).
    bool chunked() const noexcept { return chunked_; }
    /// The body read as JSON into a T (json::Value by default); throws json::ParseError.
    template <class T = json::Value>
    T json() const {
        return json::parse<T>(body_);
    }

    // --- Filled by the client. ---
    /// Sets the status line's code and reason.
    void set_status(int code, std::string reason) {
        status_ = code;
        reason_ = std::move(reason);
    }
    /// Appends a header field.
    void add_header(std::string name, std::string value) {
        headers_.emplace_back(std::move(name), std::move(value));
    }
    /// The body, for the client to fill.
    std::string& mutable_body() noexcept { return body_; }
    /// Records that the body was chunked.
    void set_chunked(bool c) noexcept { chunked_ = c; }

  private:
    int status_ = 0;
    bool chunked_ = false;
    std::string reason_;
    std::vector<std::pair<std::string, std::string>> headers_;
    std::string body_;
};

/// The cookies a Client keeps between requests: a name -> value store for the one host
/// the client talks to (Path and Domain are not matched: every cookie goes with every
/// request). A Set-Cookie with Max-Age <= 0 or an Expires in the past deletes its cookie.
class CookieJar {
  public:
    /// The cookie `name`, nullopt if the jar has none.
    std::optional<std::string> get(std::string_view name) const;
    /// Sets the cookie `name` (as if a response had set it).
    void set(std::string name, std::string value) { cookies_[std::move(name)] = std::move(value); }
    /// Removes the cookie `name`.
    void erase(std::string_view name);
    /// Removes every cookie.
    void clear() noexcept { cookies_.clear(); }
    /// True when the jar holds no cookie.
    bool empty() const noexcept { return cookies_.empty(); }
    /// Number of cookies held.
    std::size_t size() const noexcept { return cookies_.size(); }
    /// The Cookie header value for a request ("a=1; b=2"); empty when the jar is empty.
    std::string header_value() const;
    /// Applies every Set-Cookie field of `r`.
    void update(const TestResponse& r);

  private:
    std::map<std::string, std::string, std::less<>> cookies_;
};

class Client;

/// A request on its way: `co_await` it inside a coroutine, or call get() in a plain test.
template <class T>
class [[nodiscard]] Pending {
  public:
    /// Wraps `task`, run on `client`'s loop.
    Pending(Client& client, Task<T> task) noexcept : client_(&client), task_(std::move(task)) {}
    /// Runs the request from a coroutine on the client's loop (resumes with its result).
    auto operator co_await() && noexcept { return std::move(task_).operator co_await(); }
    /// Runs the client's loop on this thread until the result is in (not from a coroutine
    /// running on a loop: co_await there). Throws what the request threw.
    T get() &&;
    /// The task, to combine with others (when_all).
    Task<T> task() && noexcept { return std::move(task_); }

  private:
    Client* client_;
    Task<T> task_;
};

/// A response whose body is read piece by piece as it arrives (open()): for streamed bodies
/// and server-sent events that do not end. Move-only; closing it drops the stream.
class StreamedResponse {
  public:
    /// The body source behind a StreamedResponse (in-process or a socket).
    class Source {
      public:
        /// Destroys the source (the stream is dropped).
        virtual ~Source() = default;
        /// The next piece of the body; nullopt at its end.
        virtual Task<std::optional<std::string>> next() = 0;
    };

    /// An empty stream.
    StreamedResponse() = default;
    /// The head in `head` (its body empty), the rest from `source` (nullptr: no body).
    StreamedResponse(TestResponse head, std::unique_ptr<Source> source)
        : head_(std::move(head)), source_(std::move(source)) {}
    /// The status code.
    int status() const noexcept { return head_.status(); }
    /// The first header field named `name` (case-insensitive), empty if absent.
    std::string_view header(std::string_view name) const noexcept { return head_.header(name); }
    /// The status line and header fields (its body is empty).
    const TestResponse& head() const noexcept { return head_; }
    /// The next piece of the body as it arrives (a chunk, or what one read gave); nullopt at
    /// the end. Pieces are not guaranteed to match the producer's writes one to one.
    Task<std::optional<std::string>> next();
    /// Reads until `delimiter` has arrived and returns everything up to and including it
    /// (e.g. "\n\n" for one server-sent event); what follows is kept for the next call.
    /// nullopt when the body ends first.
    Task<std::optional<std::string>> read_until(std::string delimiter);
    /// Reads the body to its end and returns what was not yet read.
    Task<std::string> read_all();

  private:
    TestResponse head_;
    std::unique_ptr<Source> source_;
    std::string pending_;  // read past a delimiter
    bool ended_ = false;
};

/// A WebSocket connection opened by a loopback Client (Client::websocket).
class WebSocket {
  public:
    /// A message received: text or binary, or the close frame (code, reason in `data`).
    struct Message {
        /// ws::Opcode::text, binary or close.
        ws::Opcode opcode = ws::Opcode::text;
        /// The payload (a close frame's reason).
        std::string data;
        /// A close frame's code (0 for data messages).
        std::uint16_t close_code = 0;
    };

    /// Closes the socket (without a close handshake when none was made).
    ~WebSocket();
    /// Move-only.
    WebSocket(WebSocket&& o) noexcept;
    WebSocket& operator=(WebSocket&&) = delete;
    WebSocket(const WebSocket&) = delete;
    WebSocket& operator=(const WebSocket&) = delete;

    /// The 101 response of the handshake.
    const TestResponse& handshake() const noexcept { return handshake_; }
    /// Sends a text message.
    Task<void> send_text(std::string text);
    /// Sends a binary message.
    Task<void> send_binary(std::string data);
    /// The next message (pings are answered and skipped); a close frame is returned as a
    /// Message with opcode close. Throws std::runtime_error when the connection ends without one.
    Task<Message> receive();
    /// Sends a close frame with `code` and waits for the server's close.
    Task<Message> close(std::uint16_t code = ws::close_code::normal);

  private:
    friend class Client;
    WebSocket(int fd, TestResponse handshake, std::string unread);
    Task<void> send_frame(ws::Opcode op, std::string payload);
    int fd_;
    bool close_sent_ = false;
    TestResponse handshake_;
    std::string in_;  // received bytes not yet parsed
    std::unique_ptr<ws::ReaderOptions> options_;
    std::unique_ptr<ws::FrameReader> reader_;
    std::uint32_t mask_ = 0x1234abcd;
};

/// How a Client behaves.
struct ClientOptions {
    /// The longest a request may take before it throws std::runtime_error.
    std::chrono::milliseconds timeout{10000};
    /// The Host header sent with every request.
    std::string host = "localhost";
    /// Header fields sent with every request (before the request's own).
    Headers default_headers{};
    /// Keep the cookies responses set and send them back (cookies()).
    bool cookie_jar = true;
    /// In-process mode: the peer address requests appear to come from.
    std::string remote_ip = "127.0.0.1";
    /// Loopback mode: server loops to start the App with.
    unsigned threads = 1;
};

/// Sends requests to an App through the whole stack, in process or over loopback (see above).
class Client {
  public:
    /// In-process mode: requests go to `app`'s handler on this client's loop, without sockets.
    /// The app's routes and middleware are final from here on (as when it starts).
    explicit Client(App& app, ClientOptions options = {});
    /// Loopback mode: starts `app` on 127.0.0.1 with an ephemeral port; the destructor stops it.
    /// Throws net::ListenError when it cannot listen.
    static Client loopback(App& app, ClientOptions options = {});
    /// Stops a loopback app and waits for it; closes the client's connection.
    ~Client();
    /// Move-only (the App stays where it is).
    Client(Client&& o) noexcept;
    Client& operator=(Client&&) = delete;
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// GET `target` ("/items/1?x=2").
    Pending<TestResponse> get(std::string_view target, Headers headers = {}) {
        return request("GET", target, std::move(headers));
    }
    /// HEAD `target`.
    Pending<TestResponse> head(std::string_view target, Headers headers = {}) {
        return request("HEAD", target, std::move(headers));
    }
    /// DELETE `target`.
    Pending<TestResponse> del(std::string_view target, Headers headers = {}) {
        return request("DELETE", target, std::move(headers));
    }
    /// OPTIONS `target`.
    Pending<TestResponse> options(std::string_view target, Headers headers = {}) {
        return request("OPTIONS", target, std::move(headers));
    }
    /// POST `body` (Content-Type from `headers`, none by default).
    Pending<TestResponse> post(std::string_view target, std::string body, Headers headers = {}) {
        return request("POST", target, std::move(headers), std::move(body));
    }
    /// PUT `body`.
    Pending<TestResponse> put(std::string_view target, std::string body, Headers headers = {}) {
        return request("PUT", target, std::move(headers), std::move(body));
    }
    /// PATCH `body`.
    Pending<TestResponse> patch(std::string_view target, std::string body, Headers headers = {}) {
        return request("PATCH", target, std::move(headers), std::move(body));
    }
    /// POST `value` as JSON (Content-Type: application/json).
    template <class T>
    Pending<TestResponse> post_json(std::string_view target, const T& value, Headers headers = {}) {
        return with_json("POST", target, json::write(value), std::move(headers));
    }
    /// PUT `value` as JSON.
    template <class T>
    Pending<TestResponse> put_json(std::string_view target, const T& value, Headers headers = {}) {
        return with_json("PUT", target, json::write(value), std::move(headers));
    }
    /// PATCH `value` as JSON.
    template <class T>
    Pending<TestResponse> patch_json(std::string_view target, const T& value,
                                     Headers headers = {}) {
        return with_json("PATCH", target, json::write(value), std::move(headers));
    }
    /// POST `fields` as an HTML form (application/x-www-form-urlencoded, percent-encoded).
    Pending<TestResponse> post_form(std::string_view target, const FormFields& fields,
                                    Headers headers = {});
    /// Any method (a token: "GET", "PROPFIND"...) with header fields and a body; a body (or
    /// a method that carries one: POST, PUT, PATCH) gets a Content-Length.
    Pending<TestResponse> request(std::string_view method, std::string_view target,
                                  Headers headers = {}, std::string body = {});
    /// Sends `bytes` as they are (a whole request, malformed or not) and reads one response.
    Pending<TestResponse> raw(std::string bytes, bool head_request = false);
    /// As request(), but returns once the head is in; read the body with next()/read_until().
    Pending<StreamedResponse> open(std::string_view method, std::string_view target,
                                   Headers headers = {}, std::string body = {});
    /// Loopback mode: opens a WebSocket at `target` on a new connection (throws
    /// std::runtime_error when the server does not answer 101; std::logic_error in process).
    Pending<WebSocket> websocket(std::string_view target, Headers headers = {});

    /// Runs `task` on the client's loop on this thread until it ends; returns its result or
    /// rethrows its exception. Throws std::runtime_error after ClientOptions::timeout, and
    /// std::logic_error when called from a loop (co_await there instead).
    template <class T>
    T run(Task<T> task);

    /// The cookies kept between requests.
    CookieJar& cookies() noexcept { return cookies_; }
    /// Adds a header field sent with every later request.
    Client& set_default_header(std::string name, std::string value);
    /// The client's loop (handlers and the test's coroutines run on it).
    Loop& loop() noexcept { return *loop_; }
    /// True in loopback mode.
    bool is_loopback() const noexcept { return loopback_; }
    /// Loopback mode: the server's port (0 in process).
    std::uint16_t port() const noexcept;
    /// The app the client talks to.
    App& app() noexcept { return *app_; }

  private:
    struct Outgoing {
        std::string bytes;
        bool head = false;
    };
    Client(App& app, ClientOptions options, bool loopback);
    Pending<TestResponse> with_json(std::string_view method, std::string_view target,
                                    std::string body, Headers headers);
    Outgoing build(std::string_view method, std::string_view target, const Headers& headers,
                   const std::string& body) const;
    Task<TestResponse> exchange(Outgoing out);
    Task<StreamedResponse> exchange_streamed(Outgoing out);
    Task<StreamedResponse> in_process(Outgoing out);
    Task<StreamedResponse> over_socket(Outgoing out);
    Task<WebSocket> open_websocket(Outgoing out);
    void run_loop(bool& done);

    App* app_;
    ClientOptions options_;
    bool loopback_ = false;
    std::uint16_t port_ = 0;
    std::unique_ptr<Loop> loop_;
    std::shared_ptr<detail::ConnectionSlot> conns_;  // loopback: kept-alive connections
    CookieJar cookies_;
};

/// Runs `task` on `client`'s loop until it ends (as client.run(task)).
template <class T>
T run(Client& client, Task<T> task) {
    return client.run(std::move(task));
}

template <class T>
T Client::run(Task<T> task) {
    if (Loop::current())
        throw std::logic_error(
            "vela::testing: a blocking call (run, .get()) from inside a loop; co_await instead");
    bool done = false;
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
    std::coroutine_handle<> frame;
    loop_->post([&] {
        if constexpr (std::is_void_v<T>) {
            frame = vela::start(std::move(task), [&](std::exception_ptr e) {
                error = e;
                done = true;
                loop_->stop();
            });
        } else {
            frame = vela::start(std::move(task), [&](std::optional<T> v, std::exception_ptr e) {
                value = std::move(v);
                error = e;
                done = true;
                loop_->stop();
            });
        }
    });
    run_loop(done);
    if (!done) {
        if (frame) frame.destroy();  // abandons the task where it waits
        throw std::runtime_error("vela::testing: no answer within " +
                                 std::to_string(options_.timeout.count()) + " ms");
    }
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*value);
}

template <class T>
T Pending<T>::get() && {
    return client_->run(std::move(task_));
}

}  // namespace vela::testing
