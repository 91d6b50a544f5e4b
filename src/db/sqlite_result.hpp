#pragma once
// The result of a SQLite statement: every cell copied out of the statement (the statement is
// reset right after, so no read lock outlives the call). Readers convert as SQLite's loose
// typing needs: integers also from integral reals and integer text, booleans from 0/1, times
// from ISO-8601 text or Unix seconds (include/vela/db/sqlite.hpp).
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "vela/db/db.hpp"

struct sqlite3_stmt;

namespace vela::db {

/// The cells of one SQLite statement's rows, owned (not tied to the statement).
class SqliteResult final : public ResultData {
  public:
    /// Takes the column names of `st`.
    void set_columns(sqlite3_stmt* st);
    /// Copies the current row of `st`.
    void add_row(sqlite3_stmt* st);
    /// Drops the rows copied so far (a statement retried from the start).
    void clear_rows() noexcept;
    /// Sets affected().
    void set_affected(std::uint64_t n) noexcept { affected_ = n; }

    /// See ResultData.
    std::size_t rows() const noexcept override { return rows_; }
    /// See ResultData.
    std::size_t columns() const noexcept override { return names_.size(); }
    /// See ResultData.
    std::string_view column_name(std::size_t c) const override;
    /// See ResultData.
    std::uint64_t affected() const noexcept override { return affected_; }
    /// See ResultData.
    bool is_null(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    std::int64_t integer(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    double real(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    bool boolean(std::size_t r, std::size_t c) const override;
    /// See ResultData (numbers are formatted as text on demand).
    std::string_view text(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    std::string bytes(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    TimePoint time(std::size_t r, std::size_t c) const override;

  private:
    struct Cell {
        int type = 0;  // SQLITE_INTEGER ... SQLITE_NULL
        std::uint32_t len = 0;
        union {
            std::int64_t i = 0;
            double d;
            std::size_t off;  // text, blob: where in arena_
        };
    };
    const Cell& cell(std::size_t r, std::size_t c) const;
    std::string_view text_of(const Cell& x) const noexcept {
        return std::string_view(arena_).substr(x.off, x.len);
    }
    [[noreturn]] void mismatch(std::size_t c, int type, const char* wanted) const;

    std::vector<std::string> names_;
    std::vector<Cell> cells_;  // row-major
    std::string arena_;        // the bytes of text and blob cells
    std::size_t rows_ = 0;
    std::uint64_t affected_ = 0;
    mutable std::deque<std::string> formatted_;  // numbers read as text
};

}  // namespace vela::db
