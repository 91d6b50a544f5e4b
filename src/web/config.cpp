// Configuration loading: the TOML document (toml++, kept inside this file), the environment's
// overrides, vela's own keys checked and converted, user sections handed to the JSON reader.

#define TOML_HEADER_ONLY 1
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "vela/web/config.hpp"
#include "web/config_schema.hpp"

namespace vela {

using detail::ConfigKey;
using detail::ConfigKind;

struct Config::Impl {
    std::string name;
    std::string text;  // the file, read again for user sections (copied nodes lose their lines)
    toml::table doc;
    Environment env;
    std::vector<std::pair<const config::Key*, config::Value>> given;  // in document order
    std::vector<Listener> listeners;
    std::optional<unsigned> threads;
    std::optional<log::Level> level;
    std::optional<LogFormat> format;
};

namespace {

using config::Key;
using config::Kind;

// Nodes parsed from an environment variable carry its name, after a NUL that no file name
// can hold, as their source path.
std::string where(const std::string& file, const toml::source_region& src) {
    if (src.path && !src.path->empty() && (*src.path)[0] == '\0') return src.path->substr(1);
    if (src.begin.line == 0) return file;
    return file + ":" + std::to_string(src.begin.line);
}

std::string_view type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else
            out += c;
    }
    return out + '"';
}

// The value as a message shows it: strings quoted, numbers as written, else its type.
std::string shown(const toml::node& n) {
    if (const auto* s = n.as_string()) return quoted(s->get());
    if (const auto* i = n.as_integer()) return std::to_string(i->get());
    if (const auto* f = n.as_floating_point()) return fmt::format("{}", f->get());
    if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
    return std::string(type_name(n));
}

using Listener = Config::Listener;

class Loader {
  public:
    explicit Loader(Config::Impl& c) : c_(c) {}

    [[noreturn]] void fail(const toml::node& n, std::string_view key, std::string_view msg) const {
        throw ConfigError(where(c_.name, n.source()) + ": " + std::string(key) + ": " +
                          std::string(msg));
    }
    [[noreturn]] void fail_type(const toml::node& n, std::string_view key,
                                std::string_view expected) const {
        fail(n, key, "expected " + std::string(expected) + ", got " + std::string(type_name(n)));
    }

    bool boolean(const toml::node& n, std::string_view key) const {
        if (const auto* b = n.as_boolean()) return b->get();
        fail_type(n, key, "a boolean (true or false)");
    }
    std::string text(const toml::node& n, std::string_view key) const {
        if (const auto* s = n.as_string()) return s->get();
        fail_type(n, key, "a string");
    }
    std::uint64_t count(const toml::node& n, std::string_view key, std::uint64_t lo,
                        std::uint64_t hi) const {
        const auto* i = n.as_integer();
        if (!i) fail_type(n, key, "an integer");
        if (i->get() < 0 || static_cast<std::uint64_t>(i->get()) < lo ||
            static_cast<std::uint64_t>(i->get()) > hi)
            fail(n, key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, i->get()));
        return static_cast<std::uint64_t>(i->get());
    }
    std::uint64_t size(const toml::node& n, std::string_view key, std::uint64_t lo,
                       std::uint64_t hi) const {
        constexpr std::string_view expected = "a size (\"16KiB\", \"4MiB\" or bytes)";
        std::uint64_t v;
        if (const auto* i = n.as_integer()) {
            if (i->get() < 0) fail(n, key, fmt::format("expected a size >= 0, got {}", i->get()));
            v = static_cast<std::uint64_t>(i->get());
        } else if (const auto* s = n.as_string()) {
            const auto parsed = parse_size(s->get());
            if (!parsed) fail(n, key, fmt::format("expected {}, got {}", expected, shown(n)));
            v = *parsed;
        } else {
            fail_type(n, key, expected);
        }
        if (v < lo || v > hi)
            fail(n, key, fmt::format("expected a size in [{}, {}] bytes, got {}", lo, hi, v));
        return v;
    }
    std::uint64_t duration_ms(const toml::node& n, std::string_view key, std::uint64_t lo,
                              std::uint64_t hi) const {
        constexpr std::string_view expected =
            "a duration (\"250ms\", \"30s\", \"5m\", \"1h\" or "
            "milliseconds)";
        std::uint64_t v;
        if (const auto* i = n.as_integer()) {
            if (i->get() < 0)
                fail(n, key, fmt::format("expected a duration >= 0, got {}", i->get()));
            v = static_cast<std::uint64_t>(i->get());
        } else if (const auto* s = n.as_string()) {
            const auto parsed = parse_duration(s->get());
            if (!parsed) fail(n, key, fmt::format("expected {}, got {}", expected, shown(n)));
            v = static_cast<std::uint64_t>(parsed->count());
        } else {
            fail_type(n, key, expected);
        }
        if (v < lo || v > hi)
            fail(n, key, fmt::format("expected a duration in [{}ms, {}ms], got {}ms", lo, hi, v));
        return v;
    }
    std::string choice(const toml::node& n, std::string_view key, std::string_view choices) const {
        std::string s = text(n, key);
        std::string expected;
        for (std::string_view rest = choices; !rest.empty();) {
            const std::size_t sp = rest.find(' ');
            const std::string_view c = rest.substr(0, sp);
            if (c == s) return s;
            expected += (expected.empty() ? "" : ", ") + quoted(c);
            rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
        }
        fail(n, key, "expected one of " + expected + ", got " + quoted(s));
    }

    config::Value convert(const toml::node& n, const Key& k, std::string_view key) const {
        config::Value v;
        switch (k.kind) {
            case Kind::boolean:
                v.b = boolean(n, key);
                break;
            case Kind::count:
                v.n = count(n, key, k.lo, k.hi);
                break;
            case Kind::size:
                v.n = size(n, key, k.lo, k.hi);
                break;
            case Kind::duration:
                v.n = duration_ms(n, key, k.lo, k.hi);
                break;
            case Kind::choice:
                v.s = choice(n, key, k.choices);
                break;
            case Kind::text:
                v.s = text(n, key);
                break;
            case Kind::listen:
            case Kind::tls:
                break;
        }
        return v;
    }

    net::Endpoint endpoint(const toml::node& n, std::string_view key) const {
        if (const auto* i = n.as_integer()) {
            if (i->get() < 0 || i->get() > 65535)
                fail(n, key, fmt::format("expected a port in [0, 65535], got {}", i->get()));
            return net::Endpoint::any(static_cast<std::uint16_t>(i->get()));
        }
        const auto* s = n.as_string();
        if (!s) fail_type(n, key, "an endpoint (\"0.0.0.0:8080\", \"[::1]:8080\", \"unix:/path\")");
        if (s->get() == "unix:") fail(n, key, "expected a socket path after \"unix:\"");
        try {
            return net::Endpoint::parse(s->get());
        } catch (const std::invalid_argument& e) {
            fail(n, key, e.what());
        }
    }

    // server.listen: one endpoint or an array of them.
    void listen(const toml::node& n, std::string_view key) {
        if (const auto* a = n.as_array()) {
            for (std::size_t i = 0; i < a->size(); ++i)
                c_.listeners.push_back({endpoint(*a->get(i), fmt::format("{}[{}]", key, i)), {}});
        } else {
            c_.listeners.push_back({endpoint(n, key), {}});
        }
    }

    TlsCertificate certificate(const toml::table& t, std::string_view key) const {
        TlsCertificate cert;
        for (const auto& [k, v] : t) {
            const std::string full = fmt::format("{}.{}", key, k.str());
            if (k.str() == "cert")
                cert.cert_file = text(v, full);
            else if (k.str() == "key")
                cert.key_file = text(v, full);
            else if (k.str() == "ocsp_file")
                cert.ocsp_file = text(v, full);
            else
                fail(v, full, "unknown key (an SNI certificate has cert, key, ocsp_file)");
        }
        if (cert.cert_file.empty()) fail(t, key, "missing required key cert");
        if (cert.key_file.empty()) fail(t, key, "missing required key key");
        return cert;
    }

    Listener tls_listener(const toml::table& t, std::string_view key) const;

    // server.tls: a table or an array of tables, one TLS listener each.
    void tls(const toml::node& n, std::string_view key, std::vector<Listener>& out) const {
        if (const auto* t = n.as_table()) return out.push_back(tls_listener(*t, key));
        const auto* a = n.as_array();
        if (!a) fail_type(n, key, "an array of tables ([[server.tls]])");
        for (std::size_t i = 0; i < a->size(); ++i) {
            const std::string item = fmt::format("{}[{}]", key, i);
            const auto* t = a->get(i)->as_table();
            if (!t) fail_type(*a->get(i), item, "a table");
            out.push_back(tls_listener(*t, item));
        }
    }

    void section(const toml::table& t, const std::string& prefix, std::vector<Listener>& tls_out);

  private:
    Config::Impl& c_;
};

Listener Loader::tls_listener(const toml::table& t, std::string_view key) const {
    Listener l;
    TlsOptions o;
    bool has_listen = false;
    for (const auto& [k, v] : t) {
        const std::string_view name = k.str();
        const std::string full = fmt::format("{}.{}", key, name);
        if (name == "listen") {
            l.endpoint = endpoint(v, full);
            has_listen = true;
        } else if (name == "cert") {
            o.cert = text(v, full);
        } else if (name == "key") {
            o.key = text(v, full);
        } else if (name == "ocsp_file") {
            o.ocsp_file = text(v, full);
        } else if (name == "http2") {
            o.http2 = boolean(v, full);
        } else if (name == "min_version") {
            o.min_version = choice(v, full, "1.2 1.3");
        } else if (name == "ciphers") {
            o.ciphers = text(v, full);
        } else if (name == "ciphersuites") {
            o.ciphersuites = text(v, full);
        } else if (name == "session_tickets") {
            o.session_tickets = boolean(v, full);
        } else if (name == "ticket_key_rotation") {
            o.ticket_key_rotation = std::chrono::seconds(
                duration_ms(v, full, 1000, std::uint64_t{86'400'000} * 7) / 1000);
        } else if (name == "sni") {
            const auto* a = v.as_array();
            if (!a) fail_type(v, full, "an array of tables ([[server.tls.sni]])");
            for (std::size_t i = 0; i < a->size(); ++i) {
                const std::string item = fmt::format("{}[{}]", full, i);
                const auto* s = a->get(i)->as_table();
                if (!s) fail_type(*a->get(i), item, "a table");
                o.sni.push_back(certificate(*s, item));
            }
        } else {
            fail(v, full, "unknown key");
        }
    }
    if (!has_listen) fail(t, key, "missing required key listen");
    if (o.cert.empty()) fail(t, key, "missing required key cert");
    if (o.key.empty()) fail(t, key, "missing required key key");
    if (l.endpoint.kind == net::Endpoint::Kind::unix_path)
        fail(t, key, "TLS listeners are TCP endpoints, not Unix sockets");
    l.tls = std::move(o);
    return l;
}

// Checks and converts every key of one of vela's tables (recursing into nested ones).
void Loader::section(const toml::table& t, const std::string& prefix,
                     std::vector<Listener>& tls_out) {
    for (const auto& [k, v] : t) {
        const std::string full = prefix + "." + std::string(k.str());
        const Key* key = config::find_key(full);
        if (!key) {
            if (config::is_table(full)) {
                if (const auto* sub = v.as_table()) {
                    section(*sub, full, tls_out);
                    continue;
                }
                fail_type(v, full, "a table");
            }
            fail(v, full, "unknown key");
        }
        if (key->kind == Kind::listen) {
            listen(v, full);
        } else if (key->kind == Kind::tls) {
            tls(v, full, tls_out);
        } else {
            config::Value value = convert(v, *key, full);
            if (full == "server.threads")
                c_.threads = static_cast<unsigned>(value.n);
            else if (full == "log.level")
                c_.level = config::log_level(value.s);
            else if (full == "log.format")
                c_.format = value.s == "json" ? LogFormat::json : LogFormat::text;
            else
                c_.given.emplace_back(key, std::move(value));
        }
    }
}

// ---- The environment --------------------------------------------------------------------

std::string env_name(std::string_view section, std::string_view path) {
    std::string name = "VELA_";
    for (std::string_view part : {section, std::string_view("."), path}) {
        if (part == "." && path.empty()) break;
        for (const char c : part) {
            if (c == '.' || c == '-')
                name += '_';
            else
                name += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        }
    }
    return name;
}

// The node an environment variable's text makes for a key of `kind` (see config.hpp).
toml::table env_value(const std::string& var, const std::string& text, ConfigKind kind,
                      std::string_view key) {
    const std::string source = std::string(1, '\0') + var;
    const auto parse = [&](const std::string& literal) -> std::optional<toml::table> {
        try {
            toml::table t = toml::parse("v = " + literal, source);
            if (t.size() == 1 && t.contains("v")) return t;
        } catch (const toml::parse_error&) {
        }
        return std::nullopt;
    };
    const auto reject = [&](std::string_view expected) -> toml::table {
        throw ConfigError(var + ": " + std::string(key) + ": expected " + std::string(expected) +
                          ", got " + quoted(text));
    };
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    switch (kind) {
        case ConfigKind::string:
            break;
        case ConfigKind::quantity:
            if (digits) return *parse(text);
            break;
        case ConfigKind::integer: {
            auto t = parse(text);
            if (!t || !t->get("v")->is_integer()) return reject("an integer");
            return std::move(*t);
        }
        case ConfigKind::floating: {
            auto t = parse(text);
            if (!t || !t->get("v")->is_number()) return reject("a number");
            return std::move(*t);
        }
        case ConfigKind::boolean: {
            auto t = parse(text);
            if (!t || !t->get("v")->is_boolean()) return reject("true or false");
            return std::move(*t);
        }
        case ConfigKind::table: {
            auto t = parse(text);
            if (!t || !t->get("v")->is_table()) return reject("a TOML inline table ({a = 1})");
            return std::move(*t);
        }
        case ConfigKind::toml:
            if (auto t = parse(text)) return std::move(*t);
            break;
    }
    auto t = parse(quoted(text));
    if (!t) return reject("valid UTF-8 text");
    return std::move(*t);
}

// Applies the VELA_<SECTION>_... variables of `env` to root[section].
void apply_env(const std::string& file, toml::table& root, std::string_view section,
               const std::vector<ConfigKey>& keys, const Environment& env) {
    const std::string prefix = env_name(section, {}) + "_";
    std::vector<std::pair<const ConfigKey*, const std::pair<std::string, std::string>*>> found;
    for (const auto& var : env) {
        if (var.first.compare(0, prefix.size(), prefix) != 0) continue;
        const ConfigKey* match = nullptr;
        for (const ConfigKey& k : keys) {
            if (env_name(section, k.path) != var.first) continue;
            if (match)
                throw ConfigError(fmt::format("{}: ambiguous: it names both {}.{} and {}.{}",
                                              var.first, section, match->path, section, k.path));
            match = &k;
        }
        if (!match)
            throw ConfigError(
                fmt::format("{}: [{}] has no key with this name (a key a.b of "
                            "[{}] is {}_A_B)",
                            var.first, section, section, env_name(section, {})));
        found.emplace_back(match, &var);
    }
    // A table before the keys inside it, so both apply.
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return std::count(a.first->path.begin(), a.first->path.end(), '.') <
               std::count(b.first->path.begin(), b.first->path.end(), '.');
    });
    for (const auto& [key, var] : found) {
        const std::string full = std::string(section) + "." + key->path;
        toml::table value = env_value(var->first, var->second, key->kind, full);
        toml::table* cur = &root;
        std::string_view rest = full;
        std::string walked;
        for (;;) {
            const std::size_t dot = rest.find('.');
            const std::string part(rest.substr(0, dot));
            if (dot == std::string_view::npos) {
                cur->insert_or_assign(part, std::move(*value.get("v")));
                break;
            }
            walked += (walked.empty() ? "" : ".") + part;
            rest.remove_prefix(dot + 1);
            toml::node* next = cur->get(part);
            if (!next) next = &cur->insert(part, toml::table{}).first->second;
            if (!next->is_table())
                throw ConfigError(fmt::format("{}: {}: cannot be set: {} is {} ({})", var->first,
                                              full, walked, type_name(*next),
                                              where(file, next->source())));
            cur = next->as_table();
        }
    }
}

// ---- User sections as JSON ---------------------------------------------------------------

std::string pointer_token(std::string_view key) {
    std::string out;
    for (const char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string time_text(const toml::time& t) {
    std::string s = fmt::format("{:02}:{:02}:{:02}", t.hour, t.minute, t.second);
    if (t.nanosecond) s += fmt::format(".{:09}", t.nanosecond);
    return s;
}

std::string date_text(const toml::date& d) {
    return fmt::format("{:04}-{:02}-{:02}", d.year, d.month, d.day);
}

json::Value to_json(const std::string& file, const toml::node& n, const std::string& pointer,
                    const std::string& key, detail::SectionText& out) {
    const bool scalar = !n.is_table() && !n.is_array();
    out.origins.push_back({pointer, key, where(file, n.source()), std::string(type_name(n)),
                           scalar ? shown(n) : std::string()});
    switch (n.type()) {
        case toml::node_type::table: {
            json::Value obj = json::Value::object();
            for (const auto& [k, v] : *n.as_table())
                obj.set(k.str(), to_json(file, v, pointer + "/" + pointer_token(k.str()),
                                         key + "." + std::string(k.str()), out));
            return obj;
        }
        case toml::node_type::array: {
            json::Value arr = json::Value::array();
            const auto& a = *n.as_array();
            for (std::size_t i = 0; i < a.size(); ++i)
                arr.push_back(to_json(file, *a.get(i), pointer + "/" + std::to_string(i),
                                      fmt::format("{}[{}]", key, i), out));
            return arr;
        }
        case toml::node_type::string:
            return json::Value(n.as_string()->get());
        case toml::node_type::integer:
            return json::Value(n.as_integer()->get());
        case toml::node_type::floating_point: {
            const double d = n.as_floating_point()->get();
            if (!std::isfinite(d))
                throw ConfigError(where(file, n.source()) + ": " + key +
                                  ": expected a finite number, got " + shown(n));
            return json::Value(d);
        }
        case toml::node_type::boolean:
            return json::Value(n.as_boolean()->get());
        case toml::node_type::date:
            return json::Value(date_text(n.as_date()->get()));
        case toml::node_type::time:
            return json::Value(time_text(n.as_time()->get()));
        case toml::node_type::date_time: {
            const toml::date_time& dt = n.as_date_time()->get();
            std::string s = date_text(dt.date) + "T" + time_text(dt.time);
            if (dt.offset) {
                const int m = dt.offset->minutes;
                s += m == 0 ? std::string("Z")
                            : fmt::format("{}{:02}:{:02}", m < 0 ? '-' : '+', std::abs(m) / 60,
                                          std::abs(m) % 60);
            }
            return json::Value(std::move(s));
        }
        case toml::node_type::none:
            break;
    }
    return json::Value();
}

bool is_vela_section(std::string_view name) {
    const auto& s = config::sections();
    return std::find(s.begin(), s.end(), name) != s.end();
}

}  // namespace

// ---- Config ------------------------------------------------------------------------------

Config::Config(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

Config Config::load(const std::string& path) { return load(path, process_environment()); }

Config Config::load(const std::string& path, Environment env) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError(path + ": cannot read the configuration file: " +
                          std::generic_category().message(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw ConfigError(path + ": cannot read the configuration file");
    return parse(text.str(), path, std::move(env));
}

Config Config::from_environment(Environment env) {
    return parse({}, "<environment>", std::move(env));
}

Config Config::parse(std::string_view text, std::string name, Environment env) {
    auto c = std::make_unique<Impl>();
    c->name = std::move(name);
    c->env = std::move(env);
    c->text = std::string(text);
    try {
        c->doc = toml::parse(c->text, c->name);
    } catch (const toml::parse_error& e) {
        std::string what(e.description());
        std::replace(what.begin(), what.end(), '\n', ' ');
        throw ConfigError(where(c->name, e.source()) + ": " + what);
    }
    for (const std::string_view s : config::sections())
        apply_env(c->name, c->doc, s, config::env_keys(s), c->env);

    Loader load(*c);
    std::vector<Listener> tls;
    for (const auto& [k, v] : c->doc) {
        const std::string name(k.str());
        if (is_vela_section(name)) {
            const auto* t = v.as_table();
            if (!t) load.fail_type(v, name, "a table");
            load.section(*t, name, tls);
        } else if (!v.is_table()) {
            load.fail(v, name, "unknown key (settings go in a table: [server], [myapp], ...)");
        }
    }
    std::move(tls.begin(), tls.end(), std::back_inserter(c->listeners));
    return Config(std::move(c));
}

namespace {
// Writes every vela key the configuration sets into the three option structs.
void replay(const Config::Impl& c, ServerOptions& server, WsOptions& ws, SseOptions& sse) {
    config::Targets t{server, ws, sse};
    for (const auto& [key, value] : c.given) key->set(t, value);
}
}  // namespace

ServerOptions Config::server_options(ServerOptions base) const {
    WsOptions ws;
    SseOptions sse;
    replay(*impl_, base, ws, sse);
    return base;
}

WsOptions Config::websocket(WsOptions base) const {
    ServerOptions server;
    SseOptions sse;
    replay(*impl_, server, base, sse);
    return base;
}

SseOptions Config::sse(SseOptions base) const {
    ServerOptions server;
    WsOptions ws;
    replay(*impl_, server, ws, base);
    return base;
}

const std::vector<Config::Listener>& Config::listeners() const noexcept { return impl_->listeners; }
std::optional<unsigned> Config::threads() const noexcept { return impl_->threads; }
std::optional<log::Level> Config::log_level() const noexcept { return impl_->level; }
std::optional<LogFormat> Config::log_format() const noexcept { return impl_->format; }
const std::string& Config::name() const noexcept { return impl_->name; }

bool Config::has_section(std::string_view name) const noexcept { return impl_->doc.contains(name); }

std::vector<std::pair<std::string, std::string>> Config::user_sections() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : impl_->doc)
        if (!is_vela_section(k.str()))
            out.emplace_back(std::string(k.str()), where(impl_->name, v.source()));
    return out;
}

detail::SectionText Config::section_text(std::string_view name,
                                         const std::vector<ConfigKey>& keys) const {
    if (is_vela_section(name))
        throw ConfigError(
            fmt::format("{}: [{}] is vela's own section; read it with "
                        "Config::server_options() and the like",
                        impl_->name, name));
    toml::table doc = toml::parse(impl_->text, impl_->name);  // parsed before: cannot fail
    apply_env(impl_->name, doc, name, keys, impl_->env);
    detail::SectionText out;
    out.section = std::string(name);
    const toml::node* n = doc.get(name);
    out.where = n ? where(impl_->name, n->source()) : impl_->name;
    if (!n) {
        out.json = "{}";
        return out;
    }
    if (!n->is_table()) Loader(*impl_).fail_type(*n, name, "a table");
    out.json = json::write(to_json(impl_->name, *n, "", std::string(name), out));
    return out;
}

ConfigError Config::section_error(const detail::SectionText& text, const json::Error& e) {
    // The JSON reader names the place as a JSONPath below the section ("$.db.url").
    std::string key = text.section;
    if (e.path.size() > 1 && e.path[0] == '$') key += e.path.substr(1);
    std::string message = e.message;
    static constexpr std::pair<std::string_view, std::string_view> nouns[] = {
        {"expected boolean", "expected a boolean"},
        {"expected integer", "expected an integer"},
        {"expected number", "expected a number"},
        {"expected string", "expected a string"},
        {"expected object", "expected a table"},
        {"expected array", "expected an array"},
        {"unknown field", "unknown key"},
        {"missing required field", "missing required key"},
    };
    for (const auto& [from, to] : nouns) {
        if (message.compare(0, from.size(), from) == 0) {
            message = std::string(to) + message.substr(from.size());
            break;
        }
    }
    // The value itself, or (a missing key) the nearest table around it.
    const detail::SectionText::Origin* at = nullptr;
    for (const auto& o : text.origins) {
        if (o.pointer == e.pointer) {
            at = &o;
            break;
        }
        if (e.pointer.compare(0, o.pointer.size(), o.pointer) == 0 &&
            (!at || o.pointer.size() > at->pointer.size()))
            at = &o;
    }
    const bool exact = at && at->pointer == e.pointer;
    if (exact && message.rfind("expected ", 0) == 0) {
        const bool type_only = message.find(" in [") == std::string::npos &&
                               message.find("one of") == std::string::npos &&
                               message.find("(") == std::string::npos;
        message += ", got " + (type_only || at->text.empty() ? at->type : at->text);
    }
    return ConfigError((at ? at->where : text.where) + ": " + key + ": " + message);
}

}  // namespace vela
