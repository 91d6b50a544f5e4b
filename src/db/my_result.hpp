#pragma once
// The result of a MySQL/MariaDB statement: every cell as text in one arena (binary-protocol
// values are written as the text protocol would send them, so both protocols read alike).
// Readers convert: integers and reals from their decimal text (DECIMAL reads as a double, or
// as exact text through std::string), booleans from 0/1 (TINYINT(1), BIT(1)), times from
// DATETIME/TIMESTAMP/DATE text taken as UTC (the session time zone is +00:00).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vela/db/db.hpp"

namespace vela::db::my {

/// The cells of one statement's rows, owned.
class MyResult final : public ResultData {
  public:
    /// Adds a column named `name`; `binary` when its values are bytes (BLOB, BINARY, BIT).
    void add_column(std::string_view name, bool binary, bool bit);
    /// Starts a row.
    void begin_row() { ++rows_; }
    /// Appends a NULL cell to the current row.
    void add_null() { cells_.push_back({0, 0, true}); }
    /// Appends a cell holding `text` to the current row.
    void add_cell(std::string_view text);
    /// Appends a cell whose text the caller writes into the returned string (then calls
    /// end_cell()).
    std::string& cell_arena() { return arena_; }
    /// Ends a cell started at `start` (the arena's size before writing).
    void end_cell(std::size_t start) {
        cells_.push_back({static_cast<std::uint32_t>(start),
                          static_cast<std::uint32_t>(arena_.size() - start), false});
    }
    /// Sets affected().
    void set_affected(std::uint64_t n) noexcept { affected_ = n; }
    /// Sets last_insert_id().
    void set_last_insert_id(std::uint64_t id) noexcept { insert_id_ = id; }
    /// Reserves room for `rows` rows.
    void reserve(std::size_t rows) { cells_.reserve(rows * names_.size()); }

    /// See ResultData.
    std::size_t rows() const noexcept override { return rows_; }
    /// See ResultData.
    std::size_t columns() const noexcept override { return names_.size(); }
    /// See ResultData.
    std::string_view column_name(std::size_t c) const override;
    /// See ResultData.
    std::uint64_t affected() const noexcept override { return affected_; }
    /// See ResultData.
    std::uint64_t last_insert_id() const noexcept override { return insert_id_; }
    /// See ResultData.
    bool is_null(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    std::int64_t integer(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    double real(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    bool boolean(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    std::string_view text(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    std::string bytes(std::size_t r, std::size_t c) const override;
    /// See ResultData.
    TimePoint time(std::size_t r, std::size_t c) const override;

  private:
    struct Cell {
        std::uint32_t off = 0;
        std::uint32_t len = 0;
        bool null = false;
    };
    struct Column {
        std::string name;
        bool binary = false;
        bool bit = false;
    };
    const Cell& cell(std::size_t r, std::size_t c) const;
    [[noreturn]] void bad(std::size_t c, const char* what) const;

    std::vector<Column> names_;
    std::vector<Cell> cells_;
    std::string arena_;
    std::size_t rows_ = 0;
    std::uint64_t affected_ = 0;
    std::uint64_t insert_id_ = 0;
};

}  // namespace vela::db::my
