#include "vela/async/task.hpp"

#include "vela/base/log.hpp"

namespace vela::detail {

void report_detached_exception(std::exception_ptr e) noexcept {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        log::error("unhandled exception in spawned task: {}", ex.what());
    } catch (...) {
        log::error("unhandled non-standard exception in spawned task");
    }
}

}  // namespace vela::detail
