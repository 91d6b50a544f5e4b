// SqliteResult: the cells of a SQLite statement, copied out row by row.
#include "db/sqlite_result.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <charconv>
#include <cmath>

#include "vela/db/sqlite.hpp"

namespace vela::db {

namespace {

const char* kind_name(int type) {
    switch (type) {
        case SQLITE_INTEGER:
            return "an integer";
        case SQLITE_FLOAT:
            return "a real number";
        case SQLITE_TEXT:
            return "text";
        case SQLITE_BLOB:
            return "a blob";
        default:
            return "NULL";
    }
}

}  // namespace

void SqliteResult::set_columns(sqlite3_stmt* st) {
    const int n = sqlite3_column_count(st);
    names_.reserve(static_cast<std::size_t>(n));
    for (int c = 0; c < n; ++c) {
        const char* name = sqlite3_column_name(st, c);
        names_.emplace_back(name ? name : "");
    }
}

void SqliteResult::add_row(sqlite3_stmt* st) {
    const int n = static_cast<int>(names_.size());
    for (int c = 0; c < n; ++c) {
        Cell cell;
        cell.type = sqlite3_column_type(st, c);
        switch (cell.type) {
            case SQLITE_INTEGER:
                cell.i = sqlite3_column_int64(st, c);
                break;
            case SQLITE_FLOAT:
                cell.d = sqlite3_column_double(st, c);
                break;
            case SQLITE_TEXT:
            case SQLITE_BLOB: {
                const void* p = cell.type == SQLITE_TEXT
                                    ? static_cast<const void*>(sqlite3_column_text(st, c))
                                    : sqlite3_column_blob(st, c);
                cell.len = static_cast<std::uint32_t>(sqlite3_column_bytes(st, c));
                cell.off = arena_.size();
                if (cell.len) arena_.append(static_cast<const char*>(p), cell.len);
                break;
            }
            default:
                break;
        }
        cells_.push_back(cell);
    }
    ++rows_;
}

void SqliteResult::clear_rows() noexcept {
    cells_.clear();
    arena_.clear();
    rows_ = 0;
}

const SqliteResult::Cell& SqliteResult::cell(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= names_.size())
        throw MappingError(
            fmt::format("no cell at row {}, column {} (the result has {} rows and {} columns)", r,
                        c, rows_, names_.size()));
    return cells_[r * names_.size() + c];
}

void SqliteResult::mismatch(std::size_t c, int type, const char* wanted) const {
    throw MappingError(fmt::format("column '{}' holds {} where {} was expected", names_[c],
                                   kind_name(type), wanted));
}

std::string_view SqliteResult::column_name(std::size_t c) const {
    if (c >= names_.size())
        throw MappingError(fmt::format("no column {} (the result has {})", c, names_.size()));
    return names_[c];
}

bool SqliteResult::is_null(std::size_t r, std::size_t c) const {
    return cell(r, c).type == SQLITE_NULL;
}

std::int64_t SqliteResult::integer(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    if (x.type == SQLITE_INTEGER) return x.i;
    if (x.type == SQLITE_FLOAT && std::trunc(x.d) == x.d && std::fabs(x.d) < 9.2e18)
        return static_cast<std::int64_t>(x.d);
    if (x.type == SQLITE_TEXT) {
        std::string_view s = text_of(x);
        std::int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && end == s.data() + s.size()) return v;
    }
    mismatch(c, x.type, "an integer");
}

double SqliteResult::real(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    if (x.type == SQLITE_FLOAT) return x.d;
    if (x.type == SQLITE_INTEGER) return static_cast<double>(x.i);
    if (x.type == SQLITE_TEXT) {
        std::string_view s = text_of(x);
        double v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && end == s.data() + s.size()) return v;
    }
    mismatch(c, x.type, "a number");
}

bool SqliteResult::boolean(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    if (x.type == SQLITE_INTEGER) return x.i != 0;
    if (x.type == SQLITE_FLOAT) return x.d != 0;
    if (x.type == SQLITE_TEXT) {
        std::string_view s = text_of(x);
        if (s == "1" || s == "true" || s == "t") return true;
        if (s == "0" || s == "false" || s == "f") return false;
    }
    mismatch(c, x.type, "a boolean (0 or 1)");
}

std::string_view SqliteResult::text(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    if (x.type == SQLITE_TEXT || x.type == SQLITE_BLOB) return text_of(x);
    if (x.type == SQLITE_INTEGER) return formatted_.emplace_back(fmt::format("{}", x.i));
    if (x.type == SQLITE_FLOAT) return formatted_.emplace_back(fmt::format("{}", x.d));
    mismatch(c, x.type, "text");
}

std::string SqliteResult::bytes(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    if (x.type == SQLITE_TEXT || x.type == SQLITE_BLOB) return std::string(text_of(x));
    mismatch(c, x.type, "bytes");
}

TimePoint SqliteResult::time(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    using std::chrono::duration_cast;
    if (x.type == SQLITE_INTEGER || x.type == SQLITE_FLOAT) {  // seconds since the epoch
        const double us = x.type == SQLITE_INTEGER ? static_cast<double>(x.i) * 1e6 : x.d * 1e6;
        if (!(std::fabs(us) < 9.2e15) || !sqlite::in_range(std::llround(us)))
            throw MappingError(fmt::format(
                "column '{}' holds {} seconds, out of the range of a time", names_[c], us / 1e6));
        // Whole seconds exactly (a double holds every microsecond count in range).
        const std::int64_t micros =
            x.type == SQLITE_INTEGER ? x.i * 1000000 : static_cast<std::int64_t>(std::llround(us));
        return TimePoint(duration_cast<TimePoint::duration>(std::chrono::microseconds(micros)));
    }
    if (x.type == SQLITE_TEXT) {
        if (auto t = sqlite::parse_time(text_of(x))) return *t;
        throw MappingError(fmt::format(
            "column '{}' holds '{}', which is not a time (expected ISO-8601 text such as "
            "'2024-05-01 12:30:00.000000' or seconds since the Unix epoch)",
            names_[c], text_of(x).substr(0, 64)));
    }
    mismatch(c, x.type, "a time");
}

}  // namespace vela::db
