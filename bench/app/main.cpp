// vela's side of the benchmark scenarios (../shared/BENCH.md), with the payloads of the
// public C++ framework comparisons.
//   vela_bench_app [--port N] [--threads N]
//
// JSON is built and read by hand here until vela's JSON module exists; the work per request
// is real (serialized per request, the echo body is parsed field by field).

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <vela/vela.hpp>

namespace {

// One async middleware layer: sets a request attribute on the way in and adds a response
// header on the way out.
vela::Task<vela::Response> async_layer(vela::Request& req, vela::Next next) {
    req.set_attribute("layer", "async");
    vela::Response res = co_await next();
    res.add_header("X-Layer", "async");
    co_return res;
}

// Extracts the string or number value of "key" from a flat JSON object; false if absent.
bool json_field(std::string_view body, std::string_view key, std::string_view& out,
                bool& is_string) {
    std::size_t pos = 0;
    while ((pos = body.find('"', pos)) != std::string_view::npos) {
        std::size_t end = body.find('"', pos + 1);
        if (end == std::string_view::npos) return false;
        std::string_view k = body.substr(pos + 1, end - pos - 1);
        std::size_t colon = body.find(':', end);
        if (colon == std::string_view::npos) return false;
        std::size_t v = body.find_first_not_of(" \t\r\n", colon + 1);
        if (v == std::string_view::npos) return false;
        if (k == key) {
            if (body[v] == '"') {
                std::size_t ve = body.find('"', v + 1);
                if (ve == std::string_view::npos) return false;
                out = body.substr(v + 1, ve - v - 1);
                is_string = true;
            } else {
                std::size_t ve = body.find_first_of(",} \t\r\n", v);
                out = body.substr(v, ve - v);
                is_string = false;
            }
            return true;
        }
        pos = (body[v] == '"') ? body.find('"', v + 1) + 1 : v;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 8080, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--port")) port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--threads"))
            threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    }
    vela::log::set_level(vela::log::Level::warn);

    vela::App app;
    app.get("/", [] { return "Hello, World!"; });

    app.get("/api/status", [] {
        std::string body;
        body.reserve(48);
        body += "{\"status\":\"";
        body += "running";
        body += "\",\"framework\":\"";
        body += "vela";
        body += "\"}";
        return vela::Response::json(std::move(body));
    });

    app.post("/api/echo", [](vela::Request& req) {
        std::string_view name, age, email;
        bool s1 = false, s2 = false, s3 = false;
        if (!json_field(req.body(), "name", name, s1) || !json_field(req.body(), "age", age, s2) ||
            !json_field(req.body(), "email", email, s3) || !s1 || s2 || !s3)
            return vela::Response::text("bad json", vela::Status::BadRequest);
        int age_v = 0;
        std::from_chars(age.data(), age.data() + age.size(), age_v);
        std::string out;
        out.reserve(64 + req.body().size());
        out += "{\"name\":\"";
        out += name;
        out += "\",\"age\":";
        char num[16];
        auto [end, ec] = std::to_chars(num, num + sizeof num, age_v);
        (void)ec;
        out.append(num, end);
        out += ",\"email\":\"";
        out += email;
        out += "\"}";
        return vela::Response::json(std::move(out));
    });

    app.get("/users/{id}", [](vela::Request& req) {
        std::string_view id = req.param("id");
        std::string out;
        out.reserve(40 + 2 * id.size());
        out += "{\"userId\":\"";
        out += id;
        out += "\",\"name\":\"User ";
        out += id;
        out += "\"}";
        return vela::Response::json(std::move(out));
    });

    app.get("/middleware/0", [] { return vela::Response::json("{\"middleware_count\":0}"); });
    for (int n : {3, 10}) {
        auto g = app.group("/middleware/" + std::to_string(n));
        for (int i = 0; i < n; ++i) g.use(async_layer);
        std::string body = "{\"middleware_count\":" + std::to_string(n) + "}";
        g.get("", [body] { return vela::Response::json(body); });
    }
    for (int n : {3, 10}) {
        auto g = app.group("/sync-filter/" + std::to_string(n));
        for (int i = 0; i < n; ++i) {
            g.use([](vela::Request& req) { req.set_attribute("layer", "sync"); });
            g.use([](vela::Request&, vela::Response& res) { res.add_header("X-Layer", "sync"); });
        }
        std::string body = "{\"middleware_count\":" + std::to_string(n) + ",\"type\":\"sync\"}";
        g.get("", [body] { return vela::Response::json(body); });
    }

    return app.listen(static_cast<std::uint16_t>(port)).run(threads);
}
