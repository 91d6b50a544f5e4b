// net::open_listeners: one SO_REUSEPORT group per TCP endpoint that no other process can
// join unless both sides set ListenOptions::share_port, opened without a race.

#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "vela/net/socket.hpp"

namespace vela::net {
namespace {

void close_all(std::vector<int>& fds) {
    for (int fd : fds) ::close(fd);
    fds.clear();
}

// std::exception's contract: copying an exception object must not throw.
static_assert(std::is_nothrow_copy_constructible_v<ListenError>);

TEST(OpenListeners, ListenErrorWhatIsTheLineVerbatim) {
    const ListenError e(std::make_error_code(std::errc::address_in_use), "cannot listen on x: y");
    EXPECT_STREQ(e.what(), "cannot listen on x: y");
    EXPECT_EQ(e.code(), std::errc::address_in_use);
    const std::runtime_error& base = e;  // catchable as runtime_error and as system_error
    EXPECT_STREQ(base.what(), "cannot listen on x: y");
}

TEST(OpenListeners, OneSocketPerLoopOnTheResolvedPort) {
    std::vector<int> fds = open_listeners(Endpoint::parse("127.0.0.1:0"), 3, {});
    ASSERT_EQ(fds.size(), 3u);
    const std::uint16_t port = local_port(fds[0]);
    EXPECT_NE(port, 0);
    for (int fd : fds) EXPECT_EQ(local_port(fd), port);
    close_all(fds);
}

TEST(OpenListeners, SecondGroupOnTheSamePortIsRefused) {
    for (std::size_t count : {1u, 2u}) {
        std::vector<int> first = open_listeners(Endpoint::parse("127.0.0.1:0"), count, {});
        const Endpoint same = Endpoint::parse("127.0.0.1:" + std::to_string(local_port(first[0])));
        EXPECT_THROW(open_listeners(same, 2, {}), ListenError) << count << " loops";
        EXPECT_THROW(open_listeners(same, 1, {}), ListenError) << count << " loops";
        close_all(first);
    }
}

TEST(OpenListeners, SharedWhenBothAsk) {
    ListenOptions share;
    share.share_port = true;
    std::vector<int> first = open_listeners(Endpoint::parse("127.0.0.1:0"), 2, share);
    const Endpoint same = Endpoint::parse("127.0.0.1:" + std::to_string(local_port(first[0])));
    std::vector<int> second;
    EXPECT_NO_THROW(second = open_listeners(same, 2, share));
    EXPECT_EQ(second.size(), 2u);
    close_all(second);
    EXPECT_THROW(open_listeners(same, 2, {}), ListenError) << "a non-sharing group got in";
    close_all(first);
}

// Two openers racing for one port never both get it (a check-then-bind probe would let both
// through now and then). Both may lose when they collide exactly: the loser's listen(2)
// shows its socket as listening for a moment, which the winner's siblings then trip over.
TEST(OpenListeners, RacingOpenersNeverBothWin) {
    int rounds_won = 0;
    for (int round = 0; round < 200; ++round) {
        std::vector<int> probe = open_listeners(Endpoint::parse("127.0.0.1:0"), 1, {});
        const Endpoint ep = Endpoint::parse("127.0.0.1:" + std::to_string(local_port(probe[0])));
        close_all(probe);
        std::atomic<int> ready{0};
        std::vector<int> got[2];
        auto opener = [&](int i) {
            ready.fetch_add(1);
            while (ready.load() < 2) {
            }
            try {
                got[i] = open_listeners(ep, 2, {});
            } catch (const ListenError&) {
            }
        };
        std::thread a(opener, 0), b(opener, 1);
        a.join();
        b.join();
        const int winners = int(!got[0].empty()) + int(!got[1].empty());
        ASSERT_LE(winners, 1) << "round " << round << ": both got the port";
        rounds_won += winners;
        close_all(got[0]);
        close_all(got[1]);
    }
    EXPECT_GT(rounds_won, 150) << "collisions should leave a winner almost always";
}

TEST(OpenListeners, UnixSocketIsSharedByDup) {
    const std::string path = "/tmp/vela-open-" + std::to_string(::getpid()) + ".sock";
    std::vector<int> fds = open_listeners(Endpoint::parse("unix:" + path), 3, {});
    ASSERT_EQ(fds.size(), 3u);
    EXPECT_NE(fds[0], fds[1]);
    close_all(fds);
    ::unlink(path.c_str());
}

}  // namespace
}  // namespace vela::net
