#pragma once
// Access log: one line per request (status, size, latency, request id...) in Common Log
// Format, Combined Log Format or JSON lines, written by a logging thread through spdlog.
//
//     vela::App app;
//     app.use(vela::request_id());                           // ids appear in the log
//     app.use(vela::access_log({.format = vela::AccessLogFormat::json,
//                               .path = "/var/log/myapp/access.log",  // rotated by size
//                               .max_file_size = 64 << 20,
//                               .max_files = 10}));
//
// An AccessLog converts to vela::Hooks: a before hook (which notes the start time) and an
// after hook (which formats the line), synchronous, so routes keep their allocation-free path.
// `app.use(log.onion())` installs it as one onion instead: a coroutine per request, but it
// also logs requests whose handler threw (as 500).
//
// The request's thread formats the line into a slot of a bounded lock-free queue and goes on;
// it never waits for the disk. When the queue is full the line is dropped and counted
// (dropped(); the count is also reported through vela::log at most every report_interval).
// The logging thread writes the queued lines in batches (one flush per batch), and the last
// copy of an AccessLog to go (or the end of the process) writes what is queued before it stops.
//
// Lines:
//   common:   127.0.0.1 - - [01/Dec/2026:16:12:39 +0000] "GET /a?b=1 HTTP/1.1" 200 13
//   combined: ... 200 13 "https://ref.example/" "curl/7.88.1"
//   (both followed by " <request id or -> <latency in µs>" unless extras is false)
//   json:     {"time":"2026-12-01T16:12:39.123Z","remote":"127.0.0.1","method":"GET",
//              "target":"/a?b=1","version":"HTTP/1.1","status":200,"bytes":13,
//              "latency_us":52,"request_id":"3q2-7wFy...","user_agent":"curl/7.88.1",
//              "referer":null}
//   automatic (the default): combined, or, once vela::log::set_format(Format::json) is in
//             force, json with "level":"info","logger":"vela.access" after "time", so the
//             access lines have the shape of the application's JSON log lines.
// Times are UTC. The remote address is Request::client_ip() (a trusted proxy's report when
// proxy handling is installed before the log). Bytes are the body's size as the response
// left the middleware ("-" / null when streamed; 0 for HEAD, 1xx, 204 and 304). In the text
// formats, '"', '\' and bytes outside printable ASCII are written as \", \\ and \xHH; in JSON,
// strings are escaped and bytes above 0x7E are written as \u00HH, so a client cannot forge
// lines or break the JSON.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/web/middleware.hpp"

namespace spdlog::sinks {
class sink;
}

namespace vela {

/// The shape of an access log line (see above).
enum class AccessLogFormat : std::uint8_t {
    /// Common Log Format (Apache's "common").
    common,
    /// Combined Log Format: common plus the Referer and User-Agent.
    combined,
    /// One JSON object per line.
    json,
    /// The default: `combined` while vela::log writes text, and `json` with "level":"info"
    /// and "logger":"vela.access" members while vela::log writes JSON lines
    /// (vela::log::set_format; config log.format), looked up for each line.
    automatic,
};

/// Where and how access_log() writes.
struct AccessLogOptions {
    /// The line format (automatic: follows vela::log::format(), see AccessLogFormat).
    AccessLogFormat format = AccessLogFormat::automatic;
    /// common / combined: append the request id and the latency in microseconds.
    bool extras = true;
    /// A file to write to, rotated by size (empty: standard output).
    std::string path{};
    /// Rotate the file before it grows past this many bytes.
    std::size_t max_file_size = 100 * 1024 * 1024;
    /// Rotated files kept (path.1 ... path.N, oldest dropped); 0: truncate path instead.
    std::size_t max_files = 5;
    /// Lines the queue holds (rounded up to a power of two, at least 2); more are dropped.
    std::size_t queue_size = 8192;
    /// How often a count of dropped lines is reported through vela::log (warn).
    std::chrono::milliseconds report_interval{60'000};
    /// Writes to this spdlog sink instead of path / standard output (its pattern is set to
    /// the bare line).
    std::shared_ptr<spdlog::sinks::sink> sink{};
    /// Hands each line (without newline) to this function instead, on the logging thread.
    std::function<void(std::string_view line)> writer{};
};

/// The fields of one access log line.
struct AccessLogEntry {
    /// When the response was ready.
    std::chrono::system_clock::time_point time{};
    /// The client's address (empty: "-").
    std::string_view remote{};
    /// The method token.
    std::string_view method{};
    /// The request target as received.
    std::string_view target{};
    /// HTTP version as major*10+minor (10, 11, 20).
    int version = 11;
    /// The status code.
    int status = 200;
    /// Body bytes; nullopt when not known (streamed).
    std::optional<std::uint64_t> bytes{};
    /// Time spent in the middleware chain and the handler, in microseconds.
    std::uint64_t latency_us = 0;
    /// The request id (empty: none).
    std::string_view request_id{};
    /// The User-Agent (empty: none).
    std::string_view user_agent{};
    /// The Referer (empty: none).
    std::string_view referer{};
};

/// Appends the line for `entry` in `format` to `out` (no newline); `extras` as in
/// AccessLogOptions.
void format_access_log(const AccessLogEntry& entry, AccessLogFormat format, bool extras,
                       std::string& out);

/// The body size an access log reports for `res` as the answer to `req` (see above).
std::optional<std::uint64_t> access_log_bytes(const Request& req, const Response& res) noexcept;

namespace detail {
class AccessLogState;
}

/// The access log middleware (see above). Copies share one queue and logging thread.
class AccessLog {
  public:
    /// Opens the destination and starts the logging thread. Throws std::invalid_argument for
    /// a bad option and std::runtime_error when the file cannot be opened.
    explicit AccessLog(AccessLogOptions options);

    /// Notes when `req` started (the before half).
    void start(Request& req) const;
    /// Queues the line for `req` and `res` (the after half).
    void finish(const Request& req, const Response& res) const;

    /// Both halves as one synchronous middleware (what App::use / Group::use install).
    operator Hooks() const {  // NOLINT: implicit on purpose (app.use(access_log()))
        return Hooks{[self = *this](Request& req) -> std::optional<Response> {
                         self.start(req);
                         return std::nullopt;
                     },
                     [self = *this](Request& req, Response& res) { self.finish(req, res); }};
    }
    /// The same work as one onion middleware (a coroutine per request), for app.use(). It also logs
    /// a request whose handler threw, as a 500 (with unknown size), which the hooks do not see.
    auto onion() const {
        return [self = *this](Request& req, Next next) { return self.around(req, next); };
    }

    /// Lines dropped because the queue was full.
    std::uint64_t dropped() const noexcept;
    /// Lines handed to the destination so far.
    std::uint64_t written() const noexcept;
    /// Waits until every line queued before the call has been written and flushed.
    void flush() const;

  private:
    Task<Response> around(Request& req, Next next) const;
    std::shared_ptr<detail::AccessLogState> state_;
};

/// The access log middleware with `options` (see above).
AccessLog access_log(AccessLogOptions options = {});

}  // namespace vela
