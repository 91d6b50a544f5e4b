#pragma once
// A text-format PGresult as vela::db::ResultData: cells are read where libpq keeps them.
#include <libpq-fe.h>

#include "vela/db/db.hpp"

namespace vela::db::pg {

/// Owns a PGresult and reads its cells (integers, reals, booleans, bytea, timestamps).
class PgResultData final : public ResultData {
  public:
    /// Takes ownership of `r` (a PGRES_TUPLES_OK or PGRES_COMMAND_OK result, or null).
    explicit PgResultData(PGresult* r) noexcept : r_(r) {}
    ~PgResultData() override;
    PgResultData(const PgResultData&) = delete;
    PgResultData& operator=(const PgResultData&) = delete;

    std::size_t rows() const noexcept override;
    std::size_t columns() const noexcept override;
    std::string_view column_name(std::size_t c) const override;
    std::uint64_t affected() const noexcept override;
    bool is_null(std::size_t r, std::size_t c) const override;
    std::int64_t integer(std::size_t r, std::size_t c) const override;
    double real(std::size_t r, std::size_t c) const override;
    bool boolean(std::size_t r, std::size_t c) const override;
    std::string_view text(std::size_t r, std::size_t c) const override;
    std::string bytes(std::size_t r, std::size_t c) const override;
    TimePoint time(std::size_t r, std::size_t c) const override;

    /// The command tag ("INSERT 0 1", "COMMIT", "ROLLBACK" ...).
    std::string_view command_status() const noexcept { return r_ ? PQcmdStatus(r_) : ""; }

  private:
    [[noreturn]] void bad_cell(std::size_t r, std::size_t c, const char* what) const;
    PGresult* r_;
};

}  // namespace vela::db::pg
