// vela_peer_httplib: the cpp-httplib peer for bench/run (see docs/benchmarks.md).
//
// It serves the same endpoints as vela's bench app, so the two can be
// measured side by side:
//
//   GET  /                  text/plain  Hello, World!
//   GET  /api/status        {"status":"running","framework":"vela"}   (serialized per request)
//   POST /api/echo          {"name":...,"age":...,"email":...} parsed and serialized back
//   GET  /users/{id}        {"userId":"42","name":"User 42"}
//   GET  /middleware/N      {"middleware_count":N}                  N = 0, 3, 10
//   GET  /sync-filter/N     {"middleware_count":N,"type":"sync"}    N = 3, 10
//
// cpp-httplib has no middleware. Both middleware routes are emulated with N
// calls to a function that sets a response header: /middleware/N nests the
// calls (each layer calls the next, like `co_await next()`), /sync-filter/N
// runs them one after another before the handler (like synchronous filters).
//
//   usage: vela_peer_httplib [--port N] [--threads N]
//
// --threads sets the size of httplib's thread pool. httplib serves one
// keep-alive connection per pool thread at a time, so it cannot run with a
// single thread the way an event loop can; 0 (the default) keeps httplib's own
// default pool size (max(8, hardware threads - 1)). Keep-alive settings are
// httplib's defaults too (5 requests per connection, 5 s idle timeout).
// TCP_NODELAY is switched on, as in every other server measured: without it
// httplib's separate header and body writes meet delayed ACKs (~40 ms each).

#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// ---- minimal JSON: write strings, read one flat object --------------------

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

// Reads a flat JSON object, keeping string values (unescaped) and the raw
// text of other scalar values. Nested objects and arrays are skipped. It is
// enough for the echo payload, not a general parser.
class FlatObjectReader {
  public:
    explicit FlatObjectReader(std::string_view text) : s_(text) {}

    // Returns false if the text is not a well-formed flat object.
    bool read(std::vector<std::pair<std::string, std::string>>& fields) {
        ws();
        if (!eat('{')) return false;
        ws();
        if (eat('}')) return trailing_ok();
        for (;;) {
            std::string key, value;
            ws();
            if (!string(key)) return false;
            ws();
            if (!eat(':')) return false;
            ws();
            if (!this->value(value)) return false;
            fields.emplace_back(std::move(key), std::move(value));
            ws();
            if (eat('}')) return trailing_ok();
            if (!eat(',')) return false;
        }
    }

  private:
    std::string_view s_;
    size_t i_ = 0;

    void ws() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    bool eat(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool trailing_ok() {
        ws();
        return i_ == s_.size();
    }

    bool string(std::string& out) {
        if (!eat('"')) return false;
        while (i_ < s_.size()) {
            char c = s_[i_++];
            if (c == '"') return true;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) return false;
            char e = s_[i_++];
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'u': {  // keep \uXXXX as written: enough for an echo benchmark
                    if (i_ + 4 > s_.size()) return false;
                    out += "\\u";
                    out.append(s_.substr(i_, 4));
                    i_ += 4;
                    break;
                }
                default:
                    return false;
            }
        }
        return false;
    }

    // A scalar (kept as raw text) or a nested object/array (skipped, kept raw).
    bool value(std::string& out) {
        if (i_ < s_.size() && s_[i_] == '"') return string(out);
        size_t start = i_;
        int depth = 0;
        bool in_str = false;
        for (; i_ < s_.size(); ++i_) {
            char c = s_[i_];
            if (in_str) {
                if (c == '\\')
                    ++i_;
                else if (c == '"')
                    in_str = false;
            } else if (c == '"') {
                in_str = true;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                if (depth == 0) break;
                --depth;
            } else if (c == ',' && depth == 0) {
                break;
            }
        }
        out.assign(s_.substr(start, i_ - start));
        while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\r' ||
                                out.back() == '\t'))
            out.pop_back();
        return !out.empty() && depth == 0;
    }
};

std::optional<std::string> field(const std::vector<std::pair<std::string, std::string>>& fields,
                                 std::string_view key) {
    for (const auto& [k, v] : fields)
        if (k == key) return v;
    return std::nullopt;
}

bool is_integer(std::string_view s) {
    if (!s.empty() && s[0] == '-') s.remove_prefix(1);
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// ---- handlers -------------------------------------------------------------

void send_json(httplib::Response& res, std::string body) {
    res.set_content(std::move(body), "application/json");
}

void status(const httplib::Request&, httplib::Response& res) {
    std::string out = "{";
    append_json_string(out, "status");
    out += ':';
    append_json_string(out, "running");
    out += ',';
    append_json_string(out, "framework");
    out += ':';
    append_json_string(out, "vela");
    out += '}';
    send_json(res, std::move(out));
}

void echo(const httplib::Request& req, httplib::Response& res) {
    std::vector<std::pair<std::string, std::string>> fields;
    auto name = std::optional<std::string>{};
    auto age = std::optional<std::string>{};
    auto email = std::optional<std::string>{};
    if (FlatObjectReader(req.body).read(fields)) {
        name = field(fields, "name");
        age = field(fields, "age");
        email = field(fields, "email");
    }
    if (!name || !age || !email || !is_integer(*age)) {
        res.status = 400;
        send_json(res,
                  R"({"error":"expected {\"name\":string,\"age\":integer,\"email\":string}"})");
        return;
    }
    std::string out = "{";
    append_json_string(out, "name");
    out += ':';
    append_json_string(out, *name);
    out += ',';
    append_json_string(out, "age");
    out += ':';
    out += *age;
    out += ',';
    append_json_string(out, "email");
    out += ':';
    append_json_string(out, *email);
    out += '}';
    send_json(res, std::move(out));
}

void user(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    std::string out = "{";
    append_json_string(out, "userId");
    out += ':';
    append_json_string(out, id);
    out += ',';
    append_json_string(out, "name");
    out += ':';
    append_json_string(out, "User " + id);
    out += '}';
    send_json(res, std::move(out));
}

// ---- middleware emulation (httplib has none) --------------------------------

// The work one emulated middleware does: (re)set one response header, so the
// response stays the same size whatever the depth.
void middleware_step(httplib::Response& res, int depth) {
    res.headers.erase("X-Middleware");
    res.set_header("X-Middleware", std::to_string(depth));
}

int route_count(const httplib::Request& req) { return std::atoi(req.matches[1].str().c_str()); }

// Nested ("async", co_await next()) chain: layer i does its step, then calls layer i + 1.
void nested_chain(httplib::Response& res, int layer, int count, int& ran) {
    if (layer == count) return;
    middleware_step(res, layer + 1);
    ++ran;
    nested_chain(res, layer + 1, count, ran);
}

void middleware(const httplib::Request& req, httplib::Response& res) {
    const int count = route_count(req);
    int ran = 0;
    nested_chain(res, 0, count, ran);
    send_json(res, "{\"middleware_count\":" + std::to_string(ran) + "}");
}

void sync_filter(const httplib::Request& req, httplib::Response& res) {
    const int count = route_count(req);
    int ran = 0;
    for (int i = 0; i < count; ++i) {  // synchronous filters: one after another
        middleware_step(res, i + 1);
        ++ran;
    }
    send_json(res, "{\"middleware_count\":" + std::to_string(ran) + ",\"type\":\"sync\"}");
}

[[noreturn]] void usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s [--port N] [--threads N]\n", argv0);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    int port = 8080;
    long threads = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = std::atol(argv[++i]);
        } else {
            usage(argv[0]);
        }
    }

    httplib::Server server;
    server.set_tcp_nodelay(true);
    if (threads > 0) {
        server.new_task_queue = [threads] {
            return new httplib::ThreadPool(static_cast<size_t>(threads));
        };
    }

    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("Hello, World!", "text/plain");
    });
    server.Get("/api/status", status);
    server.Post("/api/echo", echo);
    server.Get(R"(/users/([^/]+))", user);
    server.Get(R"(/middleware/(0|3|10))", middleware);
    server.Get(R"(/sync-filter/(3|10))", sync_filter);

    std::fprintf(stderr, "vela_peer_httplib listening on port %d (%s threads)\n", port,
                 threads > 0 ? std::to_string(threads).c_str() : "default");
    if (!server.listen("0.0.0.0", port)) {
        std::perror("listen");
        return 1;
    }
    return 0;
}
