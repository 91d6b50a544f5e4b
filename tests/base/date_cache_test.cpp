// Tests for src/base/date_cache.cpp: IMF-fixdate formatting (RFC 9110 5.6.7).
#include "vela/base/date_cache.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <string>

namespace vela {
namespace {

TEST(DateCache, FormatsTheRfcExample) {
    DateCache d;
    d.set(784111777);
    EXPECT_EQ(d.get(), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(DateCache, FormatsEpochAndSingleDigitFields) {
    DateCache d;
    d.set(0);
    EXPECT_EQ(d.get(), "Thu, 01 Jan 1970 00:00:00 GMT");
    d.set(951782400);  // leap day
    EXPECT_EQ(d.get(), "Tue, 29 Feb 2000 00:00:00 GMT");
    d.set(4102444799);  // last second of 2099
    EXPECT_EQ(d.get(), "Thu, 31 Dec 2099 23:59:59 GMT");
}

TEST(DateCache, GetIsAlwaysTwentyNineBytes) {
    DateCache d;
    EXPECT_EQ(d.get().size(), 29u);
    EXPECT_EQ(d.get().substr(25), " GMT");
}

TEST(DateCache, RefreshTracksTheWallClock) {
    DateCache d;
    d.set(784111777);
    d.refresh();
    // After refresh the text is the current time, not the value set before.
    std::time_t now = std::time(nullptr);
    DateCache expect_now;
    expect_now.set(now);
    DateCache expect_before;
    expect_before.set(now - 1);
    std::string got(d.get());
    EXPECT_TRUE(got == expect_now.get() || got == expect_before.get()) << got;
}

TEST(DateCache, ReformatsOnlyWhenTheSecondChanges) {
    DateCache d;
    d.set(784111777);
    d.set(784111778);
    EXPECT_EQ(d.get(), "Sun, 06 Nov 1994 08:49:38 GMT");
}

}  // namespace
}  // namespace vela
