// The logging facade: levels gate both writing and formatting.

#include "vela/base/log.hpp"

#include <gtest/gtest.h>

namespace {

int g_formatted = 0;

// Counts how often it is formatted.
struct Counted {};

}  // namespace

template <>
struct fmt::formatter<Counted> : fmt::formatter<std::string_view> {
    auto format(const Counted&, fmt::format_context& ctx) const {
        ++g_formatted;
        return fmt::formatter<std::string_view>::format("counted", ctx);
    }
};

namespace vela::log {
namespace {

TEST(Log, LevelsGateWritingAndFormatting) {
    set_level(Level::info);
    EXPECT_FALSE(enabled(Level::debug));
    EXPECT_TRUE(enabled(Level::info));
    EXPECT_TRUE(enabled(Level::error));
    g_formatted = 0;
    debug("not written: {}", Counted{});
    EXPECT_EQ(g_formatted, 0) << "a disabled level still formatted its message";

    set_level(Level::debug);
    EXPECT_TRUE(enabled(Level::debug));
    debug("written: {}", Counted{});
    EXPECT_EQ(g_formatted, 1);

    set_level(Level::off);
    EXPECT_FALSE(enabled(Level::error));
    error("not written: {}", Counted{});
    warn("not written: {}", Counted{});
    info("not written: {}", Counted{});
    EXPECT_EQ(g_formatted, 1);
    set_level(Level::info);
}

}  // namespace
}  // namespace vela::log
