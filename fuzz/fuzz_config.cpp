// Reads arbitrary bytes as a configuration file (with a few VELA_ variables over it): vela's
// keys into the option structs, and a user table into a reflected struct. Every input either
// loads or is refused with one ConfigError line; nothing else may escape, crash or leak, and a
// message never spans two lines.

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/ops/config.hpp"

namespace fuzz {

enum class Mode { fast, safe };
VELA_ENUM(Mode, fast, safe)

struct Pool {
    int size = 4;
    vela::Duration timeout;
    std::vector<std::string> hosts;
};
VELA_REFLECT(Pool, size, timeout, hosts)

struct App {
    std::string name = "x";
    vela::ByteSize limit;
    double ratio = 0;
    bool on = false;
    Mode mode = Mode::safe;
    std::optional<std::uint16_t> port;
    std::map<std::string, int> quotas;
    std::vector<Pool> pools;
    Pool pool;
};
VELA_REFLECT(App, VELA_REQUIRED(name), limit, ratio, on, mode, port, quotas, pools, pool)

void check_line(const vela::ConfigError& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) std::abort();
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // The environment takes its values from the input's first line, so the fuzzer reaches the
    // conversions of variables too.
    const std::string first(text.substr(0, text.find('\n')));
    const vela::Environment env = {{"VELA_APP_POOL_SIZE", first}, {"VELA_SERVER_THREADS", first}};
    try {
        const vela::Config c =
            vela::Config::parse(text, "fuzz.toml", size % 2 ? env : vela::Environment{});
        (void)c.server_options();
        (void)c.websocket();
        (void)c.sse();
        try {
            (void)c.section<fuzz::App>("app");
        } catch (const vela::ConfigError& e) {
            fuzz::check_line(e);
        }
    } catch (const vela::ConfigError& e) {
        fuzz::check_line(e);
    }
    return 0;
}
