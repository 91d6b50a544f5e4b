// Tests for the backend-neutral part of include/vela/db/db.hpp: parameters, errors, mapping.
#include <gtest/gtest.h>
#include <map>
#include "vela/db/db.hpp"
namespace vela::db {
namespace {
struct User {
    long id = 0;
    std::string name;
    std::optional<std::string> email;
    int score = 7;
};
VELA_REFLECT(User, id, name, email, score)
struct Need {
    int id = 0;
    int other;
};
VELA_REFLECT(Need, id, VELA_REQUIRED(other))
struct Fake : ResultData {
    std::vector<std::string> cols;
    std::vector<std::vector<std::optional<std::string>>> cells;
    size_t rows() const noexcept override { return cells.size(); }
    size_t columns() const noexcept override { return cols.size(); }
    std::string_view column_name(size_t c) const override { return cols[c]; }
    uint64_t affected() const noexcept override { return 3; }
    bool is_null(size_t r, size_t c) const override { return !cells[r][c]; }
    int64_t integer(size_t r, size_t c) const override { return std::stoll(*cells[r][c]); }
    double real(size_t r, size_t c) const override { return std::stod(*cells[r][c]); }
    bool boolean(size_t r, size_t c) const override { return *cells[r][c] == "t"; }
    std::string_view text(size_t r, size_t c) const override { return *cells[r][c]; }
    std::string bytes(size_t r, size_t c) const override { return *cells[r][c]; }
    TimePoint time(size_t, size_t) const override { return {}; }
};
TEST(DbCommon, Mapping) {
    auto f = std::make_shared<Fake>();
    f->cols = {"name", "id", "email", "extra"};
    f->cells = {{"ann", "1", std::nullopt, "x"}, {"bob", "99999999999", "b@x", "y"}};
    Result r(f);
    auto us = r.as<User>();
    ASSERT_EQ(us.size(), 2u);
    EXPECT_EQ(us[0].name, "ann");
    EXPECT_EQ(us[0].id, 1);
    EXPECT_FALSE(us[0].email);
    EXPECT_EQ(us[0].score, 7);
    EXPECT_EQ(*us[1].email, "b@x");
    EXPECT_THROW(r[1].get<int>("id"), MappingError);
    EXPECT_EQ(r[1].get<int64_t>("id"), 99999999999);
    EXPECT_THROW(r[0].get<std::string>("email"), MappingError);
    EXPECT_THROW(r.as<Need>(), MappingError);
    EXPECT_EQ(r.as<std::string>()[1], "bob");
    EXPECT_EQ(r.first_as<std::string>(), "ann");
    int n = 0;
    for (Row row : r) n += row.size();
    EXPECT_EQ(n, 8);
    auto p = params(1, "a", std::optional<int>{}, 2.5, true, Bytes{"\0x"},
                    std::chrono::system_clock::time_point{});
    EXPECT_EQ(p[2].kind, Param::Kind::null);
    EXPECT_THROW(throw_error("dup", "23505"), UniqueViolation);
    EXPECT_THROW(throw_error("x", "08006"), ConnectionError);
}
}  // namespace
}  // namespace vela::db
