#include "vela/base/log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <ctime>
#include <string>

namespace vela::log {

namespace {
std::atomic<Level> g_level{Level::info};
std::atomic<Format> g_format{Format::text};

// Marks a payload that already holds the JSON members of a line (write() with fields in JSON
// mode): the formatter compares this pointer, never the text.
constexpr const char* kMembersMark = "vela.log.members";

spdlog::level::level_enum to_spd(Level l) {
    switch (l) {
        case Level::debug:
            return spdlog::level::debug;
        case Level::info:
            return spdlog::level::info;
        case Level::warn:
            return spdlog::level::warn;
        case Level::error:
            return spdlog::level::err;
        case Level::off:
            return spdlog::level::off;
    }
    return spdlog::level::info;
}

std::string_view level_name(spdlog::level::level_enum l) {
    switch (l) {
        case spdlog::level::trace:
            return "trace";
        case spdlog::level::debug:
            return "debug";
        case spdlog::level::info:
            return "info";
        case spdlog::level::warn:
            return "warn";
        case spdlog::level::err:
            return "error";
        case spdlog::level::critical:
            return "critical";
        default:
            return "off";
    }
}

// Length of a valid UTF-8 sequence starting at s[0] (RFC 3629 section 4: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
std::size_t utf8_sequence(const unsigned char* s, std::size_t n) noexcept {
    const unsigned c = s[0];
    auto cont = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
        return i < n && s[i] >= lo && s[i] <= hi;
    };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

template <class Out>
void json_string(Out& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    out.push_back('"');
    std::size_t plain = 0;  // start of the run of bytes copied as they are
    auto flush = [&](std::size_t end) { out.append(s.data() + plain, s.data() + end); };
    for (std::size_t i = 0; i < n;) {
        const unsigned c = p[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            ++i;
            continue;
        }
        if (c >= 0x80) {
            if (const std::size_t len = utf8_sequence(p + i, n - i)) {
                i += len;  // valid UTF-8 stays as it is
                continue;
            }
        }
        flush(i);
        switch (c) {
            case '"':
                out.append(std::string_view("\\\""));
                break;
            case '\\':
                out.append(std::string_view("\\\\"));
                break;
            case '\n':
                out.append(std::string_view("\\n"));
                break;
            case '\r':
                out.append(std::string_view("\\r"));
                break;
            case '\t':
                out.append(std::string_view("\\t"));
                break;
            case '\b':
                out.append(std::string_view("\\b"));
                break;
            case '\f':
                out.append(std::string_view("\\f"));
                break;
            default:
                if (c >= 0x80) {
                    out.append(std::string_view("\\ufffd"));  // a byte of invalid UTF-8
                } else {
                    const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
                    out.append(esc, esc + 6);
                }
        }
        plain = ++i;
    }
    flush(n);
    out.push_back('"');
}

// std::string and spdlog's memory buffer behind one append interface.
struct StringOut {
    std::string& s;
    void push_back(char c) { s.push_back(c); }
    void append(const char* b, const char* e) { s.append(b, e); }
    void append(std::string_view v) { s.append(v); }
};
struct BufOut {
    spdlog::memory_buf_t& b;
    void push_back(char c) { b.push_back(c); }
    void append(const char* from, const char* to) { b.append(from, to); }
    void append(std::string_view v) { b.append(v.data(), v.data() + v.size()); }
};

// The RFC 3339 time of a line ("2026-12-01T16:12:39.123Z"), the date part formatted once per
// second per thread.
void append_time(spdlog::memory_buf_t& out, spdlog::log_clock::time_point t) {
    struct Cache {
        std::int64_t second = INT64_MIN;
        char text[20] = {};
    };
    thread_local Cache cache;
    const auto ms = std::chrono::floor<std::chrono::milliseconds>(t).time_since_epoch().count();
    const std::int64_t second = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    const int millis = static_cast<int>(ms - second * 1000);
    if (cache.second != second) {
        const auto tt = static_cast<std::time_t>(second);
        std::tm tm{};
        ::gmtime_r(&tt, &tm);
        fmt::format_to_n(cache.text, sizeof cache.text - 1, "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec);
        cache.second = second;
    }
    out.append(cache.text, cache.text + 19);
    const char frac[5] = {'.', static_cast<char>('0' + millis / 100),
                          static_cast<char>('0' + millis / 10 % 10),
                          static_cast<char>('0' + millis % 10), 'Z'};
    out.append(frac, frac + 5);
}

// One JSON object per line: time, level, logger, then the message (or the members write()
// rendered with fields).
class JsonFormatter final : public spdlog::formatter {
  public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        BufOut out{dest};
        out.append(std::string_view("{\"time\":\""));
        append_time(dest, msg.time);
        out.append(std::string_view("\",\"level\":\""));
        out.append(level_name(msg.level));
        out.append(std::string_view("\",\"logger\":"));
        const std::string_view name(msg.logger_name.data(), msg.logger_name.size());
        json_string(out, name.empty() ? std::string_view("vela") : name);
        const std::string_view payload(msg.payload.data(), msg.payload.size());
        if (msg.source.funcname == kMembersMark) {
            out.push_back(',');
            out.append(payload);
        } else {
            out.append(std::string_view(",\"message\":"));
            json_string(out, payload);
        }
        out.append(std::string_view("}\n"));
    }
    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<JsonFormatter>();
    }
};

void apply_format(spdlog::logger& logger, Format f) {
    if (f == Format::json)
        logger.set_formatter(std::make_unique<JsonFormatter>());
    else
        logger.set_formatter(std::make_unique<spdlog::pattern_formatter>());
}

void append_json_value(std::string& out, const FieldValue& v) {
    switch (v.kind()) {
        case FieldValue::Kind::string:
            append_json_string(out, v.string());
            return;
        case FieldValue::Kind::int64:
            fmt::format_to(std::back_inserter(out), "{}", v.int64());
            return;
        case FieldValue::Kind::uint64:
            fmt::format_to(std::back_inserter(out), "{}", v.uint64());
            return;
        case FieldValue::Kind::real:
            if (std::isfinite(v.real()))
                fmt::format_to(std::back_inserter(out), "{}", v.real());
            else
                out += "null";
            return;
        case FieldValue::Kind::boolean:
            out += v.boolean() ? "true" : "false";
            return;
        case FieldValue::Kind::null:
            out += "null";
            return;
    }
}

// key=value as logfmt writes it: a string with a space, quote, '=' or a control byte (or an
// empty one) is quoted, with \" \\ \n \r \t and \xHH inside.
void append_text_value(std::string& out, const FieldValue& v) {
    if (v.kind() != FieldValue::Kind::string) {
        append_json_value(out, v);  // numbers, true, false, null read the same in both
        return;
    }
    const std::string_view s = v.string();
    bool quote = s.empty();
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c <= 0x20 || c == 0x7F || c == '"' || c == '=' || c == '\\') quote = true;
    }
    if (!quote) {
        out += s;
        return;
    }
    out += '"';
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
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
                if (c < 0x20 || c == 0x7F)
                    fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
                else
                    out += ch;
        }
    }
    out += '"';
}

}  // namespace

void write(Level level, std::string_view message) { spdlog::log(to_spd(level), "{}", message); }

void write(Level level, std::string_view message, std::initializer_list<Field> fields) {
    if (!enabled(level)) return;
    std::string line;
    if (format() == Format::json) {
        line = "\"message\":";
        append_json_string(line, message);
        for (const Field& f : fields) {
            line += ',';
            append_json_string(line, f.key);
            line += ':';
            append_json_value(line, f.value);
        }
        spdlog::default_logger_raw()->log(spdlog::source_loc{"", 0, kMembersMark}, to_spd(level),
                                          spdlog::string_view_t(line.data(), line.size()));
        return;
    }
    line = message;
    for (const Field& f : fields) {
        line += ' ';
        line += f.key;
        line += '=';
        append_text_value(line, f.value);
    }
    write(level, line);
}

void set_level(Level level) {
    g_level.store(level, std::memory_order_relaxed);
    spdlog::set_level(to_spd(level));
}

bool enabled(Level level) noexcept {
    return static_cast<int>(level) >= static_cast<int>(g_level.load(std::memory_order_relaxed));
}

void set_format(Format f) {
    g_format.store(f, std::memory_order_relaxed);
    apply_format(*spdlog::default_logger(), f);
}

Format format() noexcept { return g_format.load(std::memory_order_relaxed); }

void set_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
    if (!sink) sink = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("", std::move(sink));
    logger->set_level(to_spd(g_level.load(std::memory_order_relaxed)));
    apply_format(*logger, format());
    spdlog::set_default_logger(std::move(logger));
}

std::optional<Level> parse_level(std::string_view name) noexcept {
    if (name == "debug") return Level::debug;
    if (name == "info") return Level::info;
    if (name == "warn") return Level::warn;
    if (name == "error") return Level::error;
    if (name == "off") return Level::off;
    return std::nullopt;
}

std::optional<Format> parse_format(std::string_view name) noexcept {
    if (name == "text") return Format::text;
    if (name == "json") return Format::json;
    return std::nullopt;
}

void append_json_string(std::string& out, std::string_view s) {
    StringOut o{out};
    json_string(o, s);
}

}  // namespace vela::log
