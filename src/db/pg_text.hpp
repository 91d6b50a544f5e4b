#pragma once
// PostgreSQL's text formats, both ways: the values vela sends as text parameters and the
// cells it reads from text-format results (timestamps, bytea hex, integers, booleans).
// Pure functions on bytes (fuzzed by fuzz/fuzz_pg_text.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vela::db::pg {

/// Microseconds since the Unix epoch (UTC) of a date, timestamp or timestamptz cell
/// ("2024-05-01 12:30:00.25+02", "2024-05-01 12:30:00", "2024-05-01"); nullopt when it is not
/// one (infinity, BC dates, garbage). A timestamp without zone is taken as UTC.
std::optional<std::int64_t> parse_timestamp(std::string_view s) noexcept;
/// Appends `micros` since the epoch as timestamptz text in UTC ("2024-05-01 10:30:00.250000+00");
/// false (nothing appended) for times before year 1.
bool format_timestamp(std::int64_t micros, std::string& out);
/// The bytes of a bytea cell in hex output format ("\x00ff"); nullopt when malformed.
std::optional<std::string> decode_bytea(std::string_view s);
/// An integer cell; nullopt unless the whole text is a decimal integer that fits.
std::optional<std::int64_t> parse_integer(std::string_view s) noexcept;
/// A float4/float8/numeric cell (also NaN, Infinity, -Infinity); nullopt when not a number.
std::optional<double> parse_real(std::string_view s) noexcept;
/// Appends `v` as PostgreSQL float8 input text (shortest round-trip form, NaN, Infinity).
void format_real(double v, std::string& out);

}  // namespace vela::db::pg
