// The process-wide pool behind vela::run_blocking.
#include "vela/reactor/blocking.hpp"

#include <algorithm>
#include <thread>

namespace vela::detail {

namespace {

// Started on first use and never destroyed: its threads are detached and outlive static
// destruction (a job still running at exit must not find a destroyed queue).
class BlockingPool {
  public:
    BlockingPool() {
        const unsigned n = std::clamp(std::thread::hardware_concurrency(), 2u, 8u);
        for (unsigned i = 0; i < n; ++i)
            std::thread([this] {
                while (auto job = queue_.pop()) (*job)();
            }).detach();
    }
    void submit(UniqueFunction job) { queue_.push(std::move(job)); }

  private:
    WorkQueue<UniqueFunction> queue_;
};

}  // namespace

void submit_blocking(UniqueFunction job) {
    static BlockingPool* pool = new BlockingPool();  // NOLINT: deliberately leaked, see above
    pool->submit(std::move(job));
}

}  // namespace vela::detail
