#include "vela/base/log.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

namespace vela::log {

namespace {
std::atomic<Level> g_level{Level::info};

spdlog::level::level_enum to_spd(Level l) {
    switch (l) {
        case Level::debug:
            return spdlog::level::debug;
        case Level::info:
            return spdlog::level::info;
        case Level::warn:
            return spdlog::level::warn;
        case Level::error:
            return spdlog::level::err;
        case Level::off:
            return spdlog::level::off;
    }
    return spdlog::level::info;
}
}  // namespace

void write(Level level, std::string_view message) { spdlog::log(to_spd(level), "{}", message); }

void set_level(Level level) {
    g_level.store(level, std::memory_order_relaxed);
    spdlog::set_level(to_spd(level));
}

bool enabled(Level level) noexcept {
    return static_cast<int>(level) >= static_cast<int>(g_level.load(std::memory_order_relaxed));
}

}  // namespace vela::log
