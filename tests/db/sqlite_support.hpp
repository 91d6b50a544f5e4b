#pragma once
// Support for the SQLite and migration tests: loops to await queries on, and scratch
// directories for database files.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::test {

/// Runs `body(i)` on each of `n` loops (one thread each) at once, and returns when all ended;
/// the first exception any of them threw is rethrown.
inline void on_loops(std::size_t n, const std::function<Task<void>(std::size_t)>& body) {
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            Loop loop;
            loop.post([&] {
                start(body(i), [&](std::exception_ptr e) {
                    errors[i] = e;
                    loop.stop();
                });
            });
            loop.run();
        });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

/// Runs `body` on one loop until it ends (rethrows what it threw).
inline void on_loop(const std::function<Task<void>()>& body) {
    on_loops(1, [&](std::size_t) { return body(); });
}

/// A fresh directory under /tmp, removed with its contents at the end of the scope.
class ScratchDir {
  public:
    ScratchDir() {
        std::string tmpl = "/tmp/vela-sqlite.XXXXXX";
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    /// The directory.
    const std::string& path() const { return path_; }
    /// The sqlite:/// URL of `file` in it.
    std::string url(const std::string& file = "test.db") const {
        return "sqlite://" + path_ + "/" + file;
    }

  private:
    std::string path_;
};

}  // namespace vela::test
