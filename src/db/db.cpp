// The backend-neutral part of vela::db: errors, cell helpers, the Database facade.
#include "vela/db/db.hpp"

#include <fmt/format.h>

namespace vela::db {

void throw_error(const std::string& message, std::string_view s) {
    std::string code(s);
    if (s == "23505") throw UniqueViolation(message, code);
    if (s == "23503") throw ForeignKeyViolation(message, code);
    if (s == "23502") throw NotNullViolation(message, code);
    if (s == "23514") throw CheckViolation(message, code);
    if (s == "40001") throw SerializationFailure(message, code);
    if (s == "40P01") throw DeadlockDetected(message, code);
    if (s == "57014") throw TimeoutError(message, code);
    if (s.size() == 5) {
        if (s.starts_with("23")) throw ConstraintError(message, code);
        if (s.starts_with("08") || s == "57P01" || s == "57P02" || s == "57P03")
            throw ConnectionError(message, code);  // connection exceptions, admin shutdown
        if (s.starts_with("42")) throw StatementError(message, code);
    }
    throw Error(message, code);
}

void Executor::throw_no_row(std::string_view sql) {
    constexpr std::size_t kShown = 200;  // enough to recognise the statement
    throw NoRowError(fmt::format("the statement returned no row (query_single expects one): {}{}",
                                 sql.substr(0, kShown), sql.size() > kShown ? "..." : ""));
}

namespace detail {

void throw_null_cell(const ResultData& d, std::size_t c, const char* type) {
    throw MappingError(
        fmt::format("column '{}' is NULL where {} was expected (read it into a std::optional)",
                    d.column_name(c), type));
}

void throw_out_of_range(const ResultData& d, std::size_t c, std::int64_t v) {
    throw MappingError(fmt::format(
        "column '{}' holds {}, out of range for the integer type asked for", d.column_name(c), v));
}

void throw_no_column(std::string_view name) {
    throw MappingError(fmt::format("the result has no column '{}'", name));
}

std::size_t column_index(const ResultData& d, std::string_view name) {
    const std::size_t n = d.columns();
    for (std::size_t c = 0; c < n; ++c)
        if (d.column_name(c) == name) return c;
    return SIZE_MAX;
}

}  // namespace detail

json::Value CellReader<json::Value>::read(const ResultData& d, std::size_t r, std::size_t c) {
    if (d.is_null(r, c)) return json::Value();
    json::Value v;
    if (json::Error e = json::read(d.text(r, c), v))
        throw MappingError(fmt::format("column '{}' is not JSON: {}", d.column_name(c), e.message));
    return v;
}

}  // namespace vela::db
