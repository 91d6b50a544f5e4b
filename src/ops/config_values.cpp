// Durations, sizes and the process environment: the parts of configuration without TOML.

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <limits>

#include "vela/ops/config.hpp"

extern char** environ;  // NOLINT: POSIX declares it only with _GNU_SOURCE in <unistd.h>

namespace vela {

namespace {

// Splits "30s" into 30 and "s"; false when it does not start with digits or overflows.
bool split_number(std::string_view text, std::uint64_t& n, std::string_view& unit) noexcept {
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, n);
    if (ec != std::errc() || p == text.data()) return false;
    unit = std::string_view(p, static_cast<std::size_t>(end - p));
    return true;
}

bool multiply(std::uint64_t n, std::uint64_t by, std::uint64_t& out) noexcept {
    if (n > std::numeric_limits<std::uint64_t>::max() / by) return false;
    out = n * by;
    return true;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept {
    std::uint64_t n;
    std::string_view unit;
    if (!split_number(text, n, unit)) return std::nullopt;
    std::uint64_t per;
    if (unit == "ms")
        per = 1;
    else if (unit == "s")
        per = 1000;
    else if (unit == "m")
        per = 60'000;
    else if (unit == "h")
        per = 3'600'000;
    else
        return std::nullopt;
    std::uint64_t ms;
    if (!multiply(n, per, ms) ||
        ms > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return std::nullopt;
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::optional<std::uint64_t> parse_size(std::string_view text) noexcept {
    std::uint64_t n;
    std::string_view unit;
    if (!split_number(text, n, unit)) return std::nullopt;
    struct Unit {
        std::string_view name;
        std::uint64_t bytes;
    };
    static constexpr Unit units[] = {
        {"", 1},
        {"B", 1},
        {"KiB", 1ull << 10},
        {"MiB", 1ull << 20},
        {"GiB", 1ull << 30},
        {"TiB", 1ull << 40},
        {"kB", 1000},
        {"KB", 1000},
        {"MB", 1000 * 1000},
        {"GB", 1000 * 1000 * 1000},
        {"TB", 1000ull * 1000 * 1000 * 1000},
    };
    for (const Unit& u : units) {
        std::uint64_t bytes;
        if (u.name == unit)
            return multiply(n, u.bytes, bytes) ? std::optional(bytes) : std::nullopt;
    }
    return std::nullopt;
}

namespace {

// A JSON number or string through `parse`; false with the reader's error otherwise.
template <class T, class Parse>
bool read_quantity(json::Reader& r, T& out, Parse parse, std::string_view expected) {
    json::Kind k;
    if (!r.peek(k)) return false;
    if (k == json::Kind::number) {
        std::uint64_t n;
        if (!r.read_uint(n)) return false;
        if (auto v = parse(std::to_string(n))) {
            out = *v;
            return true;
        }
        return r.fail(expected);
    }
    if (k != json::Kind::string) return r.fail(expected);
    std::string_view s;
    if (!r.read_string(s)) return false;
    if (auto v = parse(s)) {
        out = *v;
        return true;
    }
    return r.fail(expected);
}

}  // namespace

bool vela_json_read(json::Reader& r, Duration& d) {
    // A bare number is milliseconds.
    const auto parse = [](std::string_view s) -> std::optional<std::chrono::milliseconds> {
        if (s.find_first_not_of("0123456789") == std::string_view::npos)
            return parse_duration(std::string(s) + "ms");
        return parse_duration(s);
    };
    return read_quantity(
        r, d.value, parse,
        "expected a duration (\"250ms\", \"30s\", \"5m\", \"1h\" or milliseconds)");
}

void vela_json_write(json::Writer& w, const Duration& d) {
    w.integer(std::int64_t{d.value.count()});
}

bool vela_json_read(json::Reader& r, ByteSize& s) {
    return read_quantity(r, s.value, parse_size, "expected a size (\"16KiB\", \"4MiB\" or bytes)");
}

void vela_json_write(json::Writer& w, const ByteSize& s) { w.integer(s.value); }

Environment process_environment() {
    Environment env;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view entry(*e);
        if (entry.substr(0, 5) != "VELA_") continue;
        const std::size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        env.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    return env;
}

}  // namespace vela
