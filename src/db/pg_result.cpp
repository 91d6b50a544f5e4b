// Reading text-format PostgreSQL results (see pg_result.hpp).
#include "pg_result.hpp"

#include <fmt/format.h>

#include "pg_text.hpp"

namespace vela::db::pg {

namespace {
constexpr Oid kBytea = 17;
}

PgResultData::~PgResultData() {
    if (r_) PQclear(r_);
}

std::size_t PgResultData::rows() const noexcept {
    return r_ ? static_cast<std::size_t>(PQntuples(r_)) : 0;
}

std::size_t PgResultData::columns() const noexcept {
    return r_ ? static_cast<std::size_t>(PQnfields(r_)) : 0;
}

std::string_view PgResultData::column_name(std::size_t c) const {
    const char* n = PQfname(r_, static_cast<int>(c));
    return n ? std::string_view(n) : std::string_view();
}

std::uint64_t PgResultData::affected() const noexcept {
    if (!r_) return 0;
    auto n = parse_integer(PQcmdTuples(r_));
    return n && *n > 0 ? static_cast<std::uint64_t>(*n) : 0;
}

bool PgResultData::is_null(std::size_t r, std::size_t c) const {
    return PQgetisnull(r_, static_cast<int>(r), static_cast<int>(c)) == 1;
}

std::string_view PgResultData::text(std::size_t r, std::size_t c) const {
    const int row = static_cast<int>(r), col = static_cast<int>(c);
    return {PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col))};
}

void PgResultData::bad_cell(std::size_t r, std::size_t c, const char* what) const {
    std::string_view t = text(r, c);
    if (t.size() > 40) t = t.substr(0, 40);
    throw MappingError(fmt::format("column '{}' holds '{}', not {}", column_name(c), t, what));
}

std::int64_t PgResultData::integer(std::size_t r, std::size_t c) const {
    if (auto v = parse_integer(text(r, c))) return *v;
    bad_cell(r, c, "an integer");
}

double PgResultData::real(std::size_t r, std::size_t c) const {
    if (auto v = parse_real(text(r, c))) return *v;
    bad_cell(r, c, "a number");
}

bool PgResultData::boolean(std::size_t r, std::size_t c) const {
    std::string_view t = text(r, c);
    if (t == "t") return true;
    if (t == "f") return false;
    bad_cell(r, c, "a boolean");
}

std::string PgResultData::bytes(std::size_t r, std::size_t c) const {
    if (PQftype(r_, static_cast<int>(c)) != kBytea) return std::string(text(r, c));
    if (auto v = decode_bytea(text(r, c))) return std::move(*v);
    bad_cell(r, c, "bytea");
}

TimePoint PgResultData::time(std::size_t r, std::size_t c) const {
    constexpr std::int64_t limit = INT64_MAX / 1000;  // system_clock counts nanoseconds
    if (auto us = parse_timestamp(text(r, c)); us && *us<limit&& * us> - limit)
        return TimePoint(
            std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds(*us)));
    bad_cell(r, c, "a time vela can read (a date or timestamp from year 1 on)");
}

}  // namespace vela::db::pg
