#pragma once
// vela::db: one query API over PostgreSQL and SQLite (docs/data.md).
//
//     vela::db::Database db("sqlite:///var/lib/app/app.db");      // or postgres://user@host/db
//     auto users = co_await db.query_as<User>("SELECT id, name FROM users WHERE age > $1", 18);
//     co_await db.execute("UPDATE users SET name = $1 WHERE id = $2", name, id);
//     int n = co_await db.transaction([&](vela::db::Transaction& tx) -> vela::Task<int> {
//         co_await tx.execute("INSERT INTO log(msg) VALUES ($1)", "hi");
//         co_return 1;                                  // commit; an exception rolls back
//     });
//
// Parameters are written $1, $2 ... in both backends (SQLite also takes ?). Values bind from
// C++ types (to_param below: integers, floating point, bool, strings, Bytes, std::optional
// as NULL, system_clock time points, json::Value, db::Json<T>), rows are read by column index or
// name (Row::get<T>) and mapped straight into VELA_REFLECT structs by column name
// (Row::as<T>, Result::as<T>): a struct member with no column keeps its default unless it is
// VELA_REQUIRED; a NULL goes into std::optional members only.
//
// Errors are typed exceptions carrying the SQLSTATE (UniqueViolation, SerializationFailure,
// ...); SQLite's result codes are mapped to the same classes.
//
// Threads: a Database is created once and shared by every loop; each loop gets its own
// connections (PostgreSQL: a pool per loop; SQLite: a per-process pool of blocking threads
// that resume the awaiting loop). Queries must be awaited on a running vela::Loop. The
// Database must outlive every query in flight.
#include <array>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/json/json.hpp"

namespace vela::db {

// ---------------------------------------------------------------------------------------
// Errors

/// A database error: the server's (or SQLite's) message and the SQLSTATE ("" when none).
class Error : public std::runtime_error {
  public:
    /// An error with `message` and the five-character `sqlstate` (or "").
    explicit Error(const std::string& message, std::string sqlstate = {})
        : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}
    /// The SQLSTATE code, e.g. "23505"; "" when the error did not come with one.
    const std::string& sqlstate() const noexcept { return sqlstate_; }

  private:
    std::string sqlstate_;
};

/// Could not connect, or the connection was lost (SQLSTATE class 08, or no server answer).
class ConnectionError : public Error {
    using Error::Error;
};
/// A deadline passed: the query timeout (the query was cancelled, 57014) or the wait for a
/// free connection of an exhausted pool.
class TimeoutError : public Error {
    using Error::Error;
};
/// A constraint was violated (SQLSTATE class 23).
class ConstraintError : public Error {
    using Error::Error;
};
/// A unique or primary key constraint was violated (23505; SQLite: SQLITE_CONSTRAINT_UNIQUE).
class UniqueViolation : public ConstraintError {
    using ConstraintError::ConstraintError;
};
/// A foreign key constraint was violated (23503).
class ForeignKeyViolation : public ConstraintError {
    using ConstraintError::ConstraintError;
};
/// A NOT NULL constraint was violated (23502).
class NotNullViolation : public ConstraintError {
    using ConstraintError::ConstraintError;
};
/// A CHECK constraint was violated (23514).
class CheckViolation : public ConstraintError {
    using ConstraintError::ConstraintError;
};
/// A serializable transaction could not be serialized (40001): retry it.
class SerializationFailure : public Error {
    using Error::Error;
};
/// The transaction was chosen as a deadlock victim (40P01): retry it.
class DeadlockDetected : public Error {
    using Error::Error;
};
/// The statement is wrong: syntax error, unknown table or column, type mismatch (class 42).
class StatementError : public Error {
    using Error::Error;
};
/// A result could not be read as the C++ type asked for (NULL into a non-optional, text into
/// an integer, a missing column of a VELA_REQUIRED member, an out-of-range integer).
class MappingError : public Error {
    using Error::Error;
};
/// A statement that had to return a row returned none (Executor::query_single).
class NoRowError : public Error {
    using Error::Error;
};

/// Throws the Error subclass that matches `sqlstate` (Error itself for other codes).
[[noreturn]] void throw_error(const std::string& message, std::string_view sqlstate);

// ---------------------------------------------------------------------------------------
// Parameters

/// Binary data (PostgreSQL bytea, SQLite BLOB), as a parameter or a column value.
struct Bytes {
    /// The bytes.
    std::string data;
    /// True when both hold the same bytes.
    bool operator==(const Bytes&) const = default;
};

/// A JSON parameter or column made from / read into a C++ value with vela::json.
template <class T>
struct Json {
    /// The value.
    T value;
};

/// The time type parameters and columns use (UTC, microseconds in PostgreSQL).
using TimePoint = std::chrono::system_clock::time_point;

/// One bound parameter. Make them with to_param(); backends read the fields.
struct Param {
    /// What the parameter holds.
    enum class Kind : std::uint8_t { null, boolean, integer, real, text, bytes, time, json };
    /// The kind of value.
    Kind kind = Kind::null;
    /// boolean: the value.
    bool boolean = false;
    /// integer: the value; time: microseconds since the Unix epoch (UTC).
    std::int64_t integer = 0;
    /// real: the value.
    double real = 0;
    /// text, bytes, json: the bytes (json: the JSON text).
    std::string text;
};

/// NULL.
inline Param to_param(std::nullptr_t) { return {}; }
/// NULL.
inline Param to_param(std::nullopt_t) { return {}; }
/// A boolean.
inline Param to_param(bool v) {
    Param p;
    p.kind = Param::Kind::boolean;
    p.boolean = v;
    return p;
}
/// An integer (unsigned values above INT64_MAX throw MappingError).
template <std::integral I>
requires(!std::same_as<I, bool>) Param to_param(I v) {
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t))
        if (v > static_cast<I>(INT64_MAX)) throw MappingError("integer parameter above INT64_MAX");
    Param p;
    p.kind = Param::Kind::integer;
    p.integer = static_cast<std::int64_t>(v);
    return p;
}
/// A floating point number.
template <std::floating_point F>
Param to_param(F v) {
    Param p;
    p.kind = Param::Kind::real;
    p.real = static_cast<double>(v);
    return p;
}
/// Text.
inline Param to_param(std::string_view v) {
    Param p;
    p.kind = Param::Kind::text;
    p.text.assign(v);
    return p;
}
/// Text.
inline Param to_param(const std::string& v) { return to_param(std::string_view(v)); }
/// Text (a null pointer is NULL).
inline Param to_param(const char* v) { return v ? to_param(std::string_view(v)) : Param{}; }
/// Binary data.
inline Param to_param(const Bytes& v) {
    Param p;
    p.kind = Param::Kind::bytes;
    p.text = v.data;
    return p;
}
/// A point in time (stored with microsecond precision).
template <class D>
Param to_param(std::chrono::time_point<std::chrono::system_clock, D> t) {
    Param p;
    p.kind = Param::Kind::time;
    p.integer = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    return p;
}
/// A JSON document.
inline Param to_param(const json::Value& v) {
    Param p;
    p.kind = Param::Kind::json;
    p.text = json::write(v);
    return p;
}
/// A C++ value written as a JSON document.
template <class T>
Param to_param(const Json<T>& v) {
    Param p;
    p.kind = Param::Kind::json;
    p.text = json::write(v.value);
    return p;
}
/// The value, or NULL when empty.
template <class T>
Param to_param(const std::optional<T>& v) {
    return v ? to_param(*v) : Param{};
}
/// An already made parameter.
inline Param to_param(Param p) { return p; }

/// The parameters `args` as a vector, in order.
template <class... A>
std::vector<Param> params(const A&... args) {
    std::vector<Param> out;
    out.reserve(sizeof...(A));
    (out.push_back(to_param(args)), ...);
    return out;
}

// ---------------------------------------------------------------------------------------
// Results

/// The cells of one result, as a backend holds them (PostgreSQL: the PGresult; SQLite: the
/// values copied out of the statement). Readers throw MappingError when a cell cannot be read
/// as asked.
class ResultData {
  public:
    /// Virtual, as every result is a backend's derived class.
    virtual ~ResultData() = default;
    /// Number of rows.
    virtual std::size_t rows() const noexcept = 0;
    /// Number of columns.
    virtual std::size_t columns() const noexcept = 0;
    /// The name of column `c`.
    virtual std::string_view column_name(std::size_t c) const = 0;
    /// Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
    virtual std::uint64_t affected() const noexcept = 0;
    /// MySQL/MariaDB: the AUTO_INCREMENT value the statement generated (0: none; other
    /// backends return ids with RETURNING).
    virtual std::uint64_t last_insert_id() const noexcept { return 0; }
    /// True when the cell is NULL.
    virtual bool is_null(std::size_t r, std::size_t c) const = 0;
    /// The cell as an integer.
    virtual std::int64_t integer(std::size_t r, std::size_t c) const = 0;
    /// The cell as a floating point number.
    virtual double real(std::size_t r, std::size_t c) const = 0;
    /// The cell as a boolean.
    virtual bool boolean(std::size_t r, std::size_t c) const = 0;
    /// The cell's text (valid while the result lives).
    virtual std::string_view text(std::size_t r, std::size_t c) const = 0;
    /// The cell as binary data.
    virtual std::string bytes(std::size_t r, std::size_t c) const = 0;
    /// The cell as a point in time.
    virtual TimePoint time(std::size_t r, std::size_t c) const = 0;
};

class Row;

/// Reads one cell as T; specialize it to read your own types (see the ones below).
template <class T, class = void>
struct CellReader;

/// A column value as T from a row (see CellReader).
template <class T>
T read_cell(const ResultData& d, std::size_t r, std::size_t c);

namespace detail {
[[noreturn]] void throw_null_cell(const ResultData& d, std::size_t c, const char* type);
[[noreturn]] void throw_out_of_range(const ResultData& d, std::size_t c, std::int64_t v);
[[noreturn]] void throw_no_column(std::string_view name);
std::size_t column_index(const ResultData& d, std::string_view name);  // or SIZE_MAX
}  // namespace detail

template <class T>
T read_cell(const ResultData& d, std::size_t r, std::size_t c) {
    return CellReader<T>::read(d, r, c);
}

/// NULL reads as an empty optional.
template <class T>
struct CellReader<std::optional<T>> {
    static std::optional<T> read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) return std::nullopt;
        return read_cell<T>(d, r, c);
    }
};
/// Integers, range-checked.
template <std::integral I>
struct CellReader<I, std::enable_if_t<!std::is_same_v<I, bool>>> {
    static I read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "an integer");
        std::int64_t v = d.integer(r, c);
        if constexpr (std::is_unsigned_v<I>) {
            if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<I>::max())
                detail::throw_out_of_range(d, c, v);
        } else {
            if (v < std::numeric_limits<I>::min() || v > std::numeric_limits<I>::max())
                detail::throw_out_of_range(d, c, v);
        }
        return static_cast<I>(v);
    }
};
/// Booleans.
template <>
struct CellReader<bool> {
    static bool read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "a boolean");
        return d.boolean(r, c);
    }
};
/// Floating point.
template <std::floating_point F>
struct CellReader<F> {
    static F read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "a number");
        return static_cast<F>(d.real(r, c));
    }
};
/// Text, copied.
template <>
struct CellReader<std::string> {
    static std::string read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "a string");
        return std::string(d.text(r, c));
    }
};
/// Text, viewed in place (valid while the Result lives).
template <>
struct CellReader<std::string_view> {
    static std::string_view read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "a string");
        return d.text(r, c);
    }
};
/// Binary data.
template <>
struct CellReader<Bytes> {
    static Bytes read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "bytes");
        return Bytes{d.bytes(r, c)};
    }
};
/// Points in time, at the precision of the time point type.
template <class D>
struct CellReader<std::chrono::time_point<std::chrono::system_clock, D>> {
    static std::chrono::time_point<std::chrono::system_clock, D> read(const ResultData& d,
                                                                      std::size_t r,
                                                                      std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "a time");
        return std::chrono::time_point_cast<D>(d.time(r, c));
    }
};
/// A JSON column as a json::Value (a NULL cell reads as JSON null).
template <>
struct CellReader<json::Value> {
    static json::Value read(const ResultData& d, std::size_t r, std::size_t c);
};
/// A JSON column read into T with vela::json.
template <class T>
struct CellReader<Json<T>> {
    static Json<T> read(const ResultData& d, std::size_t r, std::size_t c) {
        if (d.is_null(r, c)) detail::throw_null_cell(d, c, "JSON");
        T v{};
        if (json::Error e = json::read(d.text(r, c), v))
            throw MappingError(std::string("column '") + std::string(d.column_name(c)) +
                               "' is not the JSON expected: " + e.message);
        return Json<T>{std::move(v)};
    }
};

/// One row of a Result (valid while the Result lives).
class Row {
  public:
    /// Row `r` of `d`.
    Row(const ResultData* d, std::size_t r) noexcept : d_(d), r_(r) {}
    /// Number of columns.
    std::size_t size() const noexcept { return d_->columns(); }
    /// True when column `c` is NULL.
    bool is_null(std::size_t c) const { return d_->is_null(r_, c); }
    /// True when the column named `name` is NULL (MappingError when there is none).
    bool is_null(std::string_view name) const { return d_->is_null(r_, index(name)); }
    /// Column `c` as T.
    template <class T>
    T get(std::size_t c) const {
        return read_cell<T>(*d_, r_, c);
    }
    /// The column named `name` as T (MappingError when there is none).
    template <class T>
    T get(std::string_view name) const {
        return read_cell<T>(*d_, r_, index(name));
    }
    /// The row as a VELA_REFLECT struct, members matched to columns by (JSON) name.
    template <class T>
    requires json::Reflected<T> T as()
    const;
    /// The row index in its result.
    std::size_t index() const noexcept { return r_; }

  private:
    std::size_t index(std::string_view name) const {
        std::size_t c = detail::column_index(*d_, name);
        if (c == SIZE_MAX) detail::throw_no_column(name);
        return c;
    }
    const ResultData* d_;
    std::size_t r_;
};

namespace detail {
// Column index per reflected member of T (SIZE_MAX where there is no such column); checks
// the VELA_REQUIRED members have one.
template <class T>
auto member_columns(const ResultData& d) {
    constexpr auto fields = json::fields_of<T>;
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(fields)>>;
    std::array<std::size_t, n> cols{};
    std::apply(
        [&](const auto&... f) {
            std::size_t i = 0;
            ((cols[i] = column_index(d, f.name),
              (cols[i] == SIZE_MAX && json::detail::is_required(f)) ? throw_no_column(f.name)
                                                                    : void(),
              ++i),
             ...);
        },
        fields);
    return cols;
}
template <class T, class Cols>
T read_row(const ResultData& d, std::size_t r, const Cols& cols) {
    T out{};
    constexpr auto fields = json::fields_of<T>;
    std::apply(
        [&](const auto&... f) {
            std::size_t i = 0;
            ((cols[i] != SIZE_MAX
                  ? void(out.*(f.member) =
                             read_cell<typename std::remove_cvref_t<decltype(f)>::member_type>(
                                 d, r, cols[i]))
                  : void(),
              ++i),
             ...);
        },
        fields);
    return out;
}
}  // namespace detail

template <class T>
requires json::Reflected<T> T Row::as()
const { return detail::read_row<T>(*d_, r_, detail::member_columns<T>(*d_)); }

/// The rows a statement returned (cheap to move; rows stay valid while it lives).
class Result {
  public:
    /// No rows.
    Result() = default;
    /// Wraps a backend's result.
    explicit Result(std::shared_ptr<const ResultData> d) : d_(std::move(d)) {}
    /// Number of rows.
    std::size_t size() const noexcept { return d_ ? d_->rows() : 0; }
    /// True when there are no rows.
    bool empty() const noexcept { return size() == 0; }
    /// Number of columns.
    std::size_t columns() const noexcept { return d_ ? d_->columns() : 0; }
    /// The name of column `c`.
    std::string_view column_name(std::size_t c) const { return d_->column_name(c); }
    /// Rows changed by an INSERT, UPDATE or DELETE.
    std::uint64_t affected() const noexcept { return d_ ? d_->affected() : 0; }
    /// MySQL/MariaDB: the AUTO_INCREMENT value an INSERT generated (0 when none).
    std::uint64_t last_insert_id() const noexcept { return d_ ? d_->last_insert_id() : 0; }
    /// Row `r` (r < size()).
    Row operator[](std::size_t r) const noexcept { return Row(d_.get(), r); }
    /// Iterates the rows.
    class iterator {
      public:
        /// Iterator traits.
        using value_type = Row;
        /// Iterator traits.
        using difference_type = std::ptrdiff_t;
        /// The row here.
        Row operator*() const noexcept { return Row(d_, r_); }
        /// Next row.
        iterator& operator++() noexcept {
            ++r_;
            return *this;
        }
        /// Next row.
        iterator operator++(int) noexcept {
            auto t = *this;
            ++r_;
            return t;
        }
        /// Same position.
        bool operator==(const iterator& o) const noexcept { return r_ == o.r_; }
        /// An iterator at row `r` of `d`.
        iterator(const ResultData* d, std::size_t r) noexcept : d_(d), r_(r) {}
        /// A singular iterator.
        iterator() = default;

      private:
        const ResultData* d_ = nullptr;
        std::size_t r_ = 0;
    };
    /// First row.
    iterator begin() const noexcept { return iterator(d_.get(), 0); }
    /// Past the last row.
    iterator end() const noexcept { return iterator(d_.get(), size()); }
    /// Every row as a VELA_REFLECT struct (see Row::as), or as a single-column value T.
    template <class T>
    std::vector<T> as() const {
        std::vector<T> out;
        const std::size_t n = size();
        out.reserve(n);
        if constexpr (json::Reflected<T>) {
            if (n == 0) return out;
            auto cols = detail::member_columns<T>(*d_);
            for (std::size_t r = 0; r < n; ++r) out.push_back(detail::read_row<T>(*d_, r, cols));
        } else {
            for (std::size_t r = 0; r < n; ++r) out.push_back(read_cell<T>(*d_, r, 0));
        }
        return out;
    }
    /// The first row as T (see as()), or nullopt when there is none.
    template <class T>
    std::optional<T> first_as() const {
        if (empty()) return std::nullopt;
        if constexpr (json::Reflected<T>)
            return (*this)[0].template as<T>();
        else
            return read_cell<T>(*d_, 0, 0);
    }
    /// The backend's data (for backend-specific readers).
    const ResultData* data() const noexcept { return d_.get(); }

  private:
    std::shared_ptr<const ResultData> d_;
};

// ---------------------------------------------------------------------------------------
// Running statements

/// Something statements run on: the Database (a pooled connection per statement) or a
/// Transaction (its own connection). The templates below bind and map; backends implement
/// run() and run_script().
class Executor {
  public:
    /// Virtual, as backends derive from it.
    virtual ~Executor() = default;
    /// Runs one statement with `params` ($1, $2 ...). `sql` must stay valid until the returned
    /// task ends (a literal, or a string kept alive by the caller that awaits at once).
    virtual Task<Result> run(std::string_view sql, std::vector<Param> params) = 0;
    /// Runs several statements separated by semicolons, without parameters (schema scripts,
    /// migrations).
    virtual Task<void> run_script(std::string_view sql) = 0;

    /// Runs a statement and returns its rows.
    template <class... A>
    Task<Result> query(std::string_view sql, const A&... args) {
        return run(sql, params(args...));
    }
    // The helpers bind their arguments at once (not coroutines themselves), so a task made
    // from temporaries may be awaited later.
    /// Runs a statement and returns the number of rows it changed.
    template <class... A>
    Task<std::uint64_t> execute(std::string_view sql, const A&... args) {
        return affected_of(run(sql, params(args...)));
    }
    /// Runs a query and maps every row to T (a VELA_REFLECT struct, or the first column).
    template <class T, class... A>
    Task<std::vector<T>> query_as(std::string_view sql, const A&... args) {
        return all_as<T>(run(sql, params(args...)));
    }
    /// Runs a query and maps its first row to T; nullopt when it returned no row.
    template <class T, class... A>
    Task<std::optional<T>> query_one(std::string_view sql, const A&... args) {
        return first_as<T>(run(sql, params(args...)));
    }
    /// Runs a statement that returns a row (`INSERT ... RETURNING`, a lookup that must find
    /// one) and maps its first row to T; throws NoRowError naming the statement when it
    /// returned none.
    template <class T, class... A>
    Task<T> query_single(std::string_view sql, const A&... args) {
        return single_as<T>(run(sql, params(args...)), sql);
    }

  private:
    static Task<std::uint64_t> affected_of(Task<Result> t) {
        Result r = co_await std::move(t);
        co_return r.affected();
    }
    template <class T>
    static Task<std::vector<T>> all_as(Task<Result> t) {
        Result r = co_await std::move(t);
        co_return r.as<T>();
    }
    template <class T>
    static Task<std::optional<T>> first_as(Task<Result> t) {
        Result r = co_await std::move(t);
        co_return r.first_as<T>();
    }
    template <class T>
    static Task<T> single_as(Task<Result> t, std::string_view sql) {
        Result r = co_await std::move(t);
        std::optional<T> row = r.first_as<T>();
        if (!row) throw_no_row(sql);
        co_return std::move(*row);
    }
    [[noreturn]] static void throw_no_row(std::string_view sql);
};

/// A transaction: statements on one connection between BEGIN and COMMIT/ROLLBACK.
class Transaction : public Executor {
  public:
    /// Commits (Database::transaction calls it when the body returns).
    virtual Task<void> commit() = 0;
    /// Rolls back (Database::transaction calls it when the body throws).
    virtual Task<void> rollback() = 0;
};

/// How a Database connects and bounds itself (defaults suit a web service).
struct Options {
    /// PostgreSQL, MySQL: connections per loop.
    std::size_t pool_size = 4;
    /// Connecting (TCP + authentication) gives up after this.
    std::chrono::milliseconds connect_timeout{5000};
    /// A statement not answered by then is cancelled and fails with TimeoutError (0: none).
    std::chrono::milliseconds query_timeout{30000};
    /// Waiting for a free connection of a busy pool fails with TimeoutError after this.
    std::chrono::milliseconds acquire_timeout{5000};
    /// A connection unused this long is closed (0: never).
    std::chrono::milliseconds idle_timeout{60000};
    /// A connection is replaced after this long (0: never).
    std::chrono::milliseconds max_lifetime{30 * 60 * 1000};
    /// An idle connection is checked with a trivial query before use after this long.
    std::chrono::milliseconds health_check_after{30000};
    /// After a lost connection, reconnects wait this long at first, doubling up to the max.
    std::chrono::milliseconds reconnect_backoff{100};
    /// The longest reconnect wait.
    std::chrono::milliseconds reconnect_backoff_max{5000};
    /// PostgreSQL: statements issued together on a loop share round trips (pipeline mode).
    bool pipeline = true;
    /// PostgreSQL, MySQL: statements are prepared once per connection and cached by their text.
    bool prepare = true;
    /// PostgreSQL, MySQL: prepared statements kept per connection (least recently used dropped).
    std::size_t statement_cache = 256;
    /// SQLite: reader threads (each with its own connection); writes go to one writer thread.
    std::size_t sqlite_readers = 4;
    /// SQLite: how long a statement waits on a lock held by another process.
    std::chrono::milliseconds sqlite_busy_timeout{5000};
};

class Backend;

/// What the calling loop's pool of a Database holds (PostgreSQL, MySQL; for monitoring and
/// tests).
struct PoolStats {
    /// Connections open or being opened.
    std::size_t connections = 0;
    /// Of those, being opened.
    std::size_t connecting = 0;
    /// Held by a transaction (or a script).
    std::size_t reserved = 0;
    /// Statements in flight on the pool's connections.
    std::size_t in_flight = 0;
    /// Connections in use: reserved, or with statements in flight.
    std::size_t busy = 0;
    /// Statements and transactions waiting for a connection.
    std::size_t waiting = 0;
    /// Loops that have a pool in this Database.
    std::size_t loops = 0;
};

/// A database chosen by URL: `sqlite:///path/file.db` (`sqlite::memory:` for a private
/// in-memory one), `postgres://user:password@host:port/db?options` (also `postgresql://`) or
/// `mysql://user:password@host:port/db?options` (also `mariadb://`; see mysql.hpp).
class Database : public Executor {
  public:
    /// The SQLite file ./data/vela.db (the default when no database is configured).
    Database();
    /// Opens `url` with `options`; connections are made lazily, per loop (SQLite: the file and
    /// its directory are created at the first statement). Throws Error for an unknown scheme
    /// or a malformed URL.
    explicit Database(std::string_view url, Options options = {});
    /// Closes every idle connection (call once no query is in flight).
    ~Database() override;
    /// Not copyable (share it by reference or shared_ptr).
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    /// "postgres", "mysql" or "sqlite".
    std::string_view backend_name() const noexcept;
    /// The backend (for backend-specific calls, see postgres.hpp).
    Backend& backend() noexcept { return *backend_; }

    /// See Executor.
    Task<Result> run(std::string_view sql, std::vector<Param> params) override;
    /// See Executor.
    Task<void> run_script(std::string_view sql) override;
    /// Starts a transaction on a connection of its own.
    Task<std::unique_ptr<Transaction>> begin();

    /// Runs `body(tx)` in a transaction: committed when it returns, rolled back (and the
    /// exception rethrown) when it throws. `body` returns a Task.
    template <class F>
    auto transaction(F body) -> decltype(body(std::declval<Transaction&>())) {
        using TaskT = decltype(body(std::declval<Transaction&>()));
        using R = typename TaskT::value_type;
        std::unique_ptr<Transaction> tx = co_await begin();
        std::exception_ptr error;
        if constexpr (std::is_void_v<R>) {
            try {
                co_await body(*tx);
                co_await tx->commit();
                co_return;
            } catch (...) {
                error = std::current_exception();
            }
        } else {
            std::optional<R> out;
            try {
                out.emplace(co_await body(*tx));
                co_await tx->commit();
            } catch (...) {
                error = std::current_exception();
            }
            if (!error) co_return std::move(*out);
        }
        co_await tx->rollback();  // also when commit itself failed: a no-op then
        std::rethrow_exception(error);
    }

    /// Applies the migrations in `folder` not applied yet: files `NNN_name.sql` (NNN a
    /// number), in number order, each in its own transaction, recorded in the table
    /// vela_migrations. A changed file that was already applied is an Error; so is a folder
    /// that does not exist, before any statement runs (nothing is created). Returns how many
    /// were applied.
    Task<std::size_t> migrate(std::string folder);

  private:
    std::unique_ptr<Backend> backend_;
};

/// What a backend implements (PostgreSQL in postgres.cpp, MySQL in mysql.cpp, SQLite in
/// sqlite.cpp).
class Backend {
  public:
    /// Virtual, as every backend is a derived class.
    virtual ~Backend() = default;
    /// "postgres", "mysql" or "sqlite".
    virtual std::string_view name() const noexcept = 0;
    /// See Executor::run.
    virtual Task<Result> run(std::string_view sql, std::vector<Param> params) = 0;
    /// See Executor::run_script.
    virtual Task<void> run_script(std::string_view sql) = 0;
    /// See Database::begin.
    virtual Task<std::unique_ptr<Transaction>> begin() = 0;
    /// The calling loop's pool (nullopt for backends without one: SQLite).
    virtual std::optional<PoolStats> pool_stats() { return std::nullopt; }
};

/// The pool statistics of `db` on the calling loop (PostgreSQL, MySQL). Throws Error for
/// SQLite, or when the caller is on no running Loop.
PoolStats pool_stats(Database& db);

/// Makes the PostgreSQL backend for `url` (src/db/postgres.cpp).
std::unique_ptr<Backend> make_postgres(std::string_view url, const Options& options);
/// Makes the MySQL/MariaDB backend for `url` (src/db/mysql.cpp).
std::unique_ptr<Backend> make_mysql(std::string_view url, const Options& options);
/// Makes the SQLite backend for `url` (src/db/sqlite.cpp).
std::unique_ptr<Backend> make_sqlite(std::string_view url, const Options& options);

}  // namespace vela::db
