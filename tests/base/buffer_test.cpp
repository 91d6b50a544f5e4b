// Tests for src/base/buffer.cpp: cursors, compaction before growth, moves, and the pool.
#include "vela/base/buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace vela {
namespace {

TEST(Buffer, DefaultIsEmptyWithoutAllocation) {
    Buffer b;
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.size(), 0u);
    EXPECT_EQ(b.capacity(), 0u);
    EXPECT_EQ(b.view(), "");
}

TEST(Buffer, AppendingNothingToAnUnallocatedBufferIsANoOp) {
    Buffer b;
    b.append(nullptr, 0);
    b.append(std::string_view{});
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.capacity(), 0u);
}

TEST(Buffer, AppendGrowsAnEmptyBuffer) {
    Buffer b;
    b.append("hello");
    EXPECT_EQ(b.view(), "hello");
    EXPECT_GE(b.capacity(), 5u);
    b.append(" world", 6);
    EXPECT_EQ(b.view(), "hello world");
}

TEST(Buffer, WritePtrAndCommit) {
    Buffer b(32);
    EXPECT_EQ(b.capacity(), 32u);
    EXPECT_EQ(b.writable(), 32u);
    std::memcpy(b.write_ptr(), "abc", 3);
    b.commit(3);
    EXPECT_EQ(b.view(), "abc");
    EXPECT_EQ(b.writable(), 29u);
    EXPECT_EQ(b.data(), b.base());
}

TEST(Buffer, ConsumeMovesTheReadCursorAndResetsWhenEmpty) {
    Buffer b(16);
    b.append("0123456789");
    b.consume(4);
    EXPECT_EQ(b.view(), "456789");
    EXPECT_EQ(b.data(), b.base() + 4);
    b.consume(6);
    EXPECT_TRUE(b.empty());
    // Both cursors go back to the start, so the whole capacity is writable again.
    EXPECT_EQ(b.writable(), 16u);
    EXPECT_EQ(b.write_ptr(), b.base());
}

TEST(Buffer, EnsureWritableCompactsBeforeGrowing) {
    Buffer b(16);
    b.append("0123456789AB");
    b.consume(10);
    const char* base = b.base();
    b.ensure_writable(10);  // 4 free at the end, 14 after compaction
    EXPECT_EQ(b.capacity(), 16u);
    EXPECT_EQ(b.base(), base);
    EXPECT_EQ(b.view(), "AB");
    EXPECT_EQ(b.data(), b.base());
    EXPECT_GE(b.writable(), 10u);
}

TEST(Buffer, EnsureWritableGrowsAndKeepsContents) {
    Buffer b(8);
    b.append("abcdefgh");
    b.consume(2);
    b.ensure_writable(100);
    EXPECT_GE(b.writable(), 100u);
    EXPECT_EQ(b.view(), "cdefgh");
    std::string big(10000, 'z');
    b.append(big);
    EXPECT_EQ(b.size(), 6u + big.size());
    EXPECT_EQ(b.view().substr(0, 6), "cdefgh");
    EXPECT_EQ(b.view().substr(6), big);
}

TEST(Buffer, CompactMovesUnreadBytesToTheFront) {
    Buffer b(16);
    b.append("xxhello");
    b.consume(2);
    b.compact();
    EXPECT_EQ(b.data(), b.base());
    EXPECT_EQ(b.view(), "hello");
    b.compact();  // already at the front: no-op
    EXPECT_EQ(b.view(), "hello");
}

TEST(Buffer, MoveLeavesTheSourceEmpty) {
    Buffer a(64);
    a.append("data");
    const char* base = a.base();
    Buffer b(std::move(a));
    EXPECT_EQ(b.view(), "data");
    EXPECT_EQ(b.base(), base);
    EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): the state is specified
    EXPECT_TRUE(a.empty());
    Buffer c(8);
    c.append("old");
    c = std::move(b);
    EXPECT_EQ(c.view(), "data");
    EXPECT_EQ(b.capacity(), 0u);  // NOLINT(bugprone-use-after-move)
}

TEST(Buffer, ClearAndReset) {
    Buffer b(32);
    b.append("abc");
    b.clear();
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.capacity(), 32u);
    b.reset();
    EXPECT_EQ(b.capacity(), 0u);
    b.append("again");
    EXPECT_EQ(b.view(), "again");
}

TEST(Buffer, AdoptAndDisown) {
    Buffer a(32);
    a.append("x");
    char* p = a.disown();
    EXPECT_EQ(a.capacity(), 0u);
    EXPECT_TRUE(a.empty());
    Buffer b;
    b.adopt(p, 32);
    EXPECT_EQ(b.base(), p);
    EXPECT_EQ(b.capacity(), 32u);
    EXPECT_TRUE(b.empty());
    b.append("y");
    EXPECT_EQ(b.view(), "y");
}

TEST(BufferPool, AcquireGivesAnEmptyBufferOfTheConfiguredSize) {
    BufferPool pool(1024);
    Buffer b;
    pool.acquire(b);
    EXPECT_EQ(b.capacity(), 1024u);
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(pool.buffer_size(), 1024u);
    pool.release(b);
}

TEST(BufferPool, ReleasedBuffersAreReusedAndReleaseEmptiesTheBuffer) {
    BufferPool pool(256);
    Buffer b;
    pool.acquire(b);
    b.append("leftover");
    const char* base = b.base();
    pool.release(b);
    EXPECT_EQ(b.capacity(), 0u);
    EXPECT_EQ(pool.free_count(), 1u);
    Buffer c;
    pool.acquire(c);
    EXPECT_EQ(c.base(), base);
    EXPECT_TRUE(c.empty());  // the previous bytes are not visible
    EXPECT_EQ(pool.free_count(), 0u);
    pool.release(c);
}

TEST(BufferPool, GrownBuffersAreFreedNotPooled) {
    BufferPool pool(64);
    Buffer b;
    pool.acquire(b);
    b.append(std::string(1000, 'x'));
    ASSERT_GT(b.capacity(), 64u);
    pool.release(b);
    EXPECT_EQ(pool.free_count(), 0u);
    EXPECT_EQ(b.capacity(), 0u);
}

TEST(BufferPool, ManyBuffersRoundTrip) {
    BufferPool pool(128);
    std::vector<Buffer> held(200);
    for (auto& b : held) pool.acquire(b);
    for (auto& b : held) pool.release(b);
    EXPECT_EQ(pool.free_count(), 200u);
    for (auto& b : held) pool.acquire(b);
    EXPECT_EQ(pool.free_count(), 0u);
    for (auto& b : held) EXPECT_EQ(b.capacity(), 128u);
    for (auto& b : held) pool.release(b);
}

// "at most `max_free` are kept" (buffer.hpp): the pool must not hold more idle buffers than
// it was told to, whatever its free list's spare capacity.
TEST(BufferPool, KeepsAtMostMaxFreeBuffers) {
    BufferPool pool(64, 2);
    std::vector<Buffer> held(5);
    for (auto& b : held) pool.acquire(b);
    for (auto& b : held) pool.release(b);
    EXPECT_LE(pool.free_count(), 2u);
    BufferPool bigger(64, 100);
    std::vector<Buffer> more(150);
    for (auto& b : more) bigger.acquire(b);
    for (auto& b : more) bigger.release(b);
    EXPECT_LE(bigger.free_count(), 100u);
}

}  // namespace
}  // namespace vela
