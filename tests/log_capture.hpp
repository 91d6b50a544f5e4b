#pragma once
// Capturing vela::log's lines in a test: while a LogCapture lives, spdlog's default logger (the
// one vela::log writes to) writes to a string.

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "vela/base/log.hpp"

namespace vela::test {

/// Sends vela::log's lines, in `format`, to a string for its lifetime; then text on stdout again.
class LogCapture {
  public:
    /// Starts capturing in `format`.
    explicit LogCapture(log::Format format = log::Format::text) {
        log::set_format(format);
        log::set_sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(os_));
    }
    ~LogCapture() {
        log::set_format(log::Format::text);
        log::set_sink(nullptr);
    }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;

    /// Everything logged so far.
    std::string text() const { return os_.str(); }

    /// The lines logged so far, without their newlines (a line without one fails the test).
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        const std::string s = os_.str();
        std::size_t at = 0;
        while (at < s.size()) {
            const std::size_t nl = s.find('\n', at);
            EXPECT_NE(nl, std::string::npos) << "a line without its newline";
            if (nl == std::string::npos) break;
            out.push_back(s.substr(at, nl - at));
            at = nl + 1;
        }
        return out;
    }

  private:
    std::ostringstream os_;
};

}  // namespace vela::test
