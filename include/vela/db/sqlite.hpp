#pragma once
// SQLite specifics of vela::db (docs/data.md, "SQLite"): how times are stored.
//
// A time parameter is bound as ISO-8601 text in UTC with microseconds,
// "YYYY-MM-DD HH:MM:SS.ffffff" (the shape of CURRENT_TIMESTAMP plus a fraction, so it sorts
// and compares as text and SQLite's date functions read it). A time column is read from such
// text (also with 'T', fewer fraction digits, a 'Z' or a ±HH:MM offset, or a bare date) or from
// an integer or real number of seconds since the Unix epoch (unixepoch(), strftime('%s')).
#include <optional>
#include <string>
#include <string_view>

#include "vela/db/db.hpp"

namespace vela::db::sqlite {

/// `t` as the text a time parameter is stored as: "YYYY-MM-DD HH:MM:SS.ffffff" (UTC).
std::string format_time(TimePoint t);
/// True when `micros` microseconds since the epoch fit TimePoint (about years 1678-2262).
bool in_range(std::int64_t micros) noexcept;
/// The time in ISO-8601 text as described above, or nullopt when it is not one (or is out of
/// TimePoint's range).
std::optional<TimePoint> parse_time(std::string_view text);

}  // namespace vela::db::sqlite
