// The cells of a MySQL/MariaDB result (see my_result.hpp).
#include "my_result.hpp"

#include <fmt/format.h>

#include "pg_text.hpp"

namespace vela::db::my {

void MyResult::add_column(std::string_view name, bool binary, bool bit) {
    names_.push_back({std::string(name), binary, bit});
}

void MyResult::add_cell(std::string_view text) {
    const std::size_t start = arena_.size();
    arena_.append(text);
    end_cell(start);
}

std::string_view MyResult::column_name(std::size_t c) const {
    if (c >= names_.size()) throw MappingError(fmt::format("no column {}", c));
    return names_[c].name;
}

const MyResult::Cell& MyResult::cell(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= names_.size())
        throw MappingError(fmt::format("no cell at row {}, column {}", r, c));
    return cells_[r * names_.size() + c];
}

void MyResult::bad(std::size_t c, const char* what) const {
    throw MappingError(fmt::format("column '{}' is not {}", names_[c].name, what));
}

bool MyResult::is_null(std::size_t r, std::size_t c) const { return cell(r, c).null; }

std::string_view MyResult::text(std::size_t r, std::size_t c) const {
    const Cell& x = cell(r, c);
    return std::string_view(arena_).substr(x.off, x.len);
}

std::int64_t MyResult::integer(std::size_t r, std::size_t c) const {
    const std::string_view t = text(r, c);
    if (names_[c].bit) {
        // BIT(n): big-endian bytes.
        if (t.size() > 8) bad(c, "an integer of at most 64 bits");
        std::uint64_t v = 0;
        for (unsigned char b : t) v = (v << 8) | b;
        if (v > static_cast<std::uint64_t>(INT64_MAX)) detail::throw_out_of_range(*this, c, -1);
        return static_cast<std::int64_t>(v);
    }
    if (auto v = pg::parse_integer(t)) return *v;
    // An unsigned BIGINT above INT64_MAX, or not an integer at all.
    if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos)
        throw MappingError(
            fmt::format("column '{}' holds {}, above the int64 range", names_[c].name, t));
    bad(c, "an integer");
}

double MyResult::real(std::size_t r, std::size_t c) const {
    if (auto v = pg::parse_real(text(r, c))) return *v;
    bad(c, "a number");
}

bool MyResult::boolean(std::size_t r, std::size_t c) const {
    const std::string_view t = text(r, c);
    if (names_[c].bit) return t.find_first_not_of('\0') != std::string_view::npos;
    if (auto v = pg::parse_integer(t)) return *v != 0;
    if (t == "true") return true;  // a JSON boolean
    if (t == "false") return false;
    bad(c, "a boolean (0 or 1)");
}

std::string MyResult::bytes(std::size_t r, std::size_t c) const { return std::string(text(r, c)); }

TimePoint MyResult::time(std::size_t r, std::size_t c) const {
    if (auto us = pg::parse_timestamp(text(r, c)))
        return TimePoint(
            std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds(*us)));
    bad(c, "a date or time (DATETIME, TIMESTAMP or DATE; zero dates have no time point)");
}

}  // namespace vela::db::my
