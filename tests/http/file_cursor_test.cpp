// FileCursor: one walk over a file body for every driver (heads, file bytes from memory, pread
// or sendfile spans, tail), and its one failure signal.
#include "vela/http/file_cursor.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>

namespace {

using vela::FileBody;
using vela::FileCursor;
using vela::OpenFile;

// A temporary file with `bytes`, unlinked at once (the descriptor keeps it).
std::shared_ptr<OpenFile> temp_file(const std::string& bytes, bool in_memory) {
    char path[] = "/tmp/vela-cursor-XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::unlink(path);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    auto f = std::make_shared<OpenFile>(fd, bytes.size());
    if (in_memory) f->set_content(bytes);
    return f;
}

FileBody multipart(std::shared_ptr<OpenFile> f) {
    FileBody b;
    b.file = std::move(f);
    b.parts.push_back({"--B\r\n\r\n", 2, 3});      // "234"
    b.parts.push_back({"", 0, 0});                 // an empty stretch is skipped
    b.parts.push_back({"\r\n--B\r\n\r\n", 8, 2});  // "89"
    b.tail = "\r\n--B--\r\n";
    return b;
}

constexpr const char* kExpected = "--B\r\n\r\n234\r\n--B\r\n\r\n89\r\n--B--\r\n";

// Everything read() hands out, `step` bytes at a time.
std::string drain(FileCursor& c, std::size_t step) {
    std::string out;
    char buf[64];
    while (!c.done()) {
        const ssize_t n = c.read(buf, step);
        EXPECT_GT(n, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

TEST(FileCursor, ReadsHeadsFileBytesAndTailInOrderFromMemoryOrDisk) {
    for (bool mem : {true, false}) {
        for (std::size_t step : {1u, 3u, 64u}) {
            FileCursor c(multipart(temp_file("0123456789", mem)));
            EXPECT_EQ(drain(c, step), kExpected) << "memory " << mem << " step " << step;
            EXPECT_FALSE(c.failed());
            EXPECT_EQ(c.read(nullptr, 0), 0);
        }
    }
}

TEST(FileCursor, FillStopsWhereSendfileTakesOverAndAdvanceMovesPastIt) {
    FileCursor c(multipart(temp_file("0123456789", false)));
    vela::Buffer out;
    EXPECT_EQ(c.fill(out, 64), 7);  // the first head only
    EXPECT_EQ(out.view(), "--B\r\n\r\n");
    auto span = c.sendfile_span();
    ASSERT_TRUE(span);
    EXPECT_EQ(span->offset, 2u);
    EXPECT_EQ(span->length, 3u);
    c.advance(1);  // a short sendfile
    span = c.sendfile_span();
    ASSERT_TRUE(span);
    EXPECT_EQ(span->offset, 3u);
    EXPECT_EQ(span->length, 2u);
    c.advance(2);
    EXPECT_FALSE(c.sendfile_span());  // at the second head
    out.clear();
    EXPECT_EQ(c.fill(out, 64), 9);
    c.advance(c.sendfile_span()->length);
    out.clear();
    EXPECT_EQ(c.fill(out, 64), 9);  // the tail
    EXPECT_EQ(out.view(), "\r\n--B--\r\n");
    EXPECT_TRUE(c.done());
}

TEST(FileCursor, NoSendfileAndMemoryFilesAreCopied) {
    FileCursor disk(multipart(temp_file("0123456789", false)));
    disk.no_sendfile();
    vela::Buffer out;
    while (!disk.done()) ASSERT_GT(disk.fill(out, 5), 0);
    EXPECT_EQ(out.view(), kExpected);
    FileCursor mem(multipart(temp_file("0123456789", true)));
    EXPECT_FALSE(mem.sendfile_span());
}

TEST(FileCursor, AFileThatShrankFailsInsteadOfPadding) {
    auto f = temp_file("0123456789", false);
    FileBody b;
    b.file = f;
    b.parts.push_back({"", 0, 10});
    FileCursor c(std::move(b));
    ASSERT_EQ(::ftruncate(f->fd(), 4), 0);
    char buf[16];
    EXPECT_EQ(c.read(buf, 16), 4);  // what is left
    EXPECT_EQ(c.read(buf, 16), -1);
    EXPECT_TRUE(c.failed());
    EXPECT_FALSE(c.done());
    EXPECT_EQ(c.read(buf, 16), -1);  // stays failed
}

TEST(FileCursor, AnEmptyBodyIsDoneAtOnce) {
    FileBody b;
    b.file = temp_file("", false);
    b.parts.push_back({"", 0, 0});
    FileCursor c(std::move(b));
    EXPECT_TRUE(c.done());
    EXPECT_FALSE(c.sendfile_span());
}

}  // namespace
