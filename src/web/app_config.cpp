// App's side of configuration: applying a Config and checking that every table was read.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "vela/web/app.hpp"
#include "web/config_schema.hpp"

namespace vela {

App& App::load_config(const std::string& path) { return apply(Config::load(path)); }

App& App::apply(Config config) {
    check_not_started("the configuration");
    options_ = config.server_options(std::move(options_));
    if (!config.listeners().empty()) {
        listen_.clear();
        listen_tls_.clear();
        listen_error_.clear();
        for (const Config::Listener& l : config.listeners()) {
            listen_.push_back(l.endpoint);
            listen_tls_.push_back(l.tls ? std::make_shared<const TlsOptions>(*l.tls) : nullptr);
        }
    }
    if (const auto threads = config.threads()) threads_ = *threads;
    if (const auto level = config.log_level()) log::set_level(*level);
    if (const auto format = config.log_format()) log::set_format(*format);
    config_ = std::make_unique<Config>(std::move(config));
    return *this;
}

// Without a file, the environment alone is the configuration (VELA_SERVER_... included).
const Config& App::claim_section(std::string_view section) {
    if (!config_) apply(Config::from_environment());
    if (std::find(claimed_.begin(), claimed_.end(), section) == claimed_.end())
        claimed_.emplace_back(section);
    return *config_;
}

// A table that neither vela nor the application reads is most likely misspelt.
void App::check_sections() const {
    if (!config_) return;
    for (const auto& [name, where] : config_->user_sections()) {
        if (std::find(claimed_.begin(), claimed_.end(), name) != claimed_.end()) continue;
        std::string vela, app;
        for (const std::string_view s : config::sections())
            vela.append(vela.empty() ? "" : ", ").append(s);
        for (const std::string& s : claimed_) app.append(app.empty() ? "" : ", ").append(s);
        throw ConfigError(where + ": [" + name + "]: no section of that name is read (vela reads " +
                          vela + "; the application read " + (app.empty() ? "none" : app) +
                          " with app.config<T>())");
    }
}

}  // namespace vela
