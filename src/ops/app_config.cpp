// The App's side of configuration: an extension that holds the applied Config, hands it the
// server settings and listeners, and checks at start that every table was read.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "ops/config_schema.hpp"
#include "vela/ops/config.hpp"
#include "vela/web/app.hpp"

namespace vela {

namespace {

constexpr const char* kWhat = "the configuration";

class ConfigState final : public detail::Extension {
  public:
    std::unique_ptr<Config> config;
    std::vector<std::string> claimed;  // the user sections the application read

    void starting(App&, unsigned& threads) override {
        check_sections();
        if (threads == 0) threads = threads_;
    }

    void apply(App& app, Config c) {
        app.options() = c.server_options(std::move(app.options()));
        if (!c.listeners().empty()) {
            std::vector<detail::Listener> listeners;
            for (const Config::Listener& l : c.listeners())
                listeners.push_back(
                    {l.endpoint, l.tls ? std::make_shared<const TlsOptions>(*l.tls) : nullptr});
            detail::replace_listeners(app, listeners, kWhat);
        }
        if (const auto threads = c.threads()) threads_ = *threads;
        if (const auto level = c.log_level()) log::set_level(*level);
        if (const auto format = c.log_format()) log::set_format(*format);
        config = std::make_unique<Config>(std::move(c));
    }

  private:
    // A table that neither vela nor the application reads is most likely misspelt.
    void check_sections() const {
        if (!config) return;
        for (const auto& [name, where] : config->user_sections()) {
            if (std::find(claimed.begin(), claimed.end(), name) != claimed.end()) continue;
            std::string vela, app;
            for (const std::string_view s : config_schema::sections())
                vela.append(vela.empty() ? "" : ", ").append(s);
            for (const std::string& s : claimed) app.append(app.empty() ? "" : ", ").append(s);
            throw ConfigError(where + ": [" + name + "]: no section of that name is read (vela " +
                              "reads " + vela + "; the application read " +
                              (app.empty() ? "none" : app) + " with vela::config<T>())");
        }
    }

    unsigned threads_ = 0;  // server.threads, for run(0)/start(0)
};

}  // namespace

App& load_config(App& app, const std::string& path) {
    return apply_config(app, Config::load(path));
}

App& apply_config(App& app, Config config) {
    detail::extension<ConfigState>(app, kWhat).apply(app, std::move(config));
    return app;
}

const Config* config(const App& app) noexcept {
    const ConfigState* s = detail::find_extension<ConfigState>(app);
    return s ? s->config.get() : nullptr;
}

namespace detail {

// Without a file, the environment alone is the configuration (VELA_SERVER_... included).
const Config& claim_section(App& app, std::string_view section) {
    ConfigState& s = extension<ConfigState>(app, kWhat);
    if (!s.config) s.apply(app, Config::from_environment());
    if (std::find(s.claimed.begin(), s.claimed.end(), section) == s.claimed.end())
        s.claimed.emplace_back(section);
    return *s.config;
}

}  // namespace detail

}  // namespace vela
