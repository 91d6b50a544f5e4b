#pragma once
// The examples' command lines: "--name value" or "--name=value", strict numbers, one-line
// errors on stderr with exit code 2 (the usual "usage error"), --help printing the usage.

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace example {

/// Parses argv for `program`: calls `option(name, value)` for each option, where value()
/// fetches the option's value (an error when missing); `option` returns false for a name
/// it does not know.
class CommandLine {
  public:
    /// A parser for `program`, printing `usage` for -h/--help.
    CommandLine(std::string_view program, std::string_view usage)
        : program_(program), usage_(usage) {}

    /// A command-line mistake: one line on stderr, exit code 2.
    [[noreturn]] void error(const std::string& message) const {
        std::fprintf(stderr, "%.*s: %s (see --help)\n", static_cast<int>(program_.size()),
                     program_.data(), message.c_str());
        std::exit(2);
    }

    /// A whole decimal number in [0, max]; a sign, spaces or trailing junk are refused.
    unsigned number(std::string_view option, std::string_view value, unsigned max) const {
        unsigned v = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || v > max)
            error("invalid value '" + std::string(value) + "' for " + std::string(option) +
                  " (expected 0 to " + std::to_string(max) + ")");
        return v;
    }

    /// Walks argv; `option(name, value)` handles one option and returns false if unknown.
    void parse(int argc, char** argv,
               const std::function<bool(std::string_view,
                                        const std::function<std::string_view()>&)>& option) const {
        for (int i = 1; i < argc; ++i) {
            std::string_view arg = argv[i];
            if (arg == "-h" || arg == "--help") {
                std::fwrite(usage_.data(), 1, usage_.size(), stdout);
                std::exit(0);
            }
            std::optional<std::string_view> inline_value;
            if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
                inline_value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
            }
            const std::function<std::string_view()> value = [&]() -> std::string_view {
                if (inline_value) return *inline_value;
                if (i + 1 >= argc) error("missing value for " + std::string(arg));
                return argv[++i];
            };
            if (!option(arg, value)) error("unknown option '" + std::string(argv[i]) + "'");
        }
    }

  private:
    std::string_view program_;
    std::string_view usage_;
};

/// The TLS options the example servers share: --tls-cert FILE, --tls-key FILE, --tls-port N.
struct TlsArgs {
    /// Certificate chain file (PEM); empty: no TLS.
    std::string cert;
    /// Private key file (PEM).
    std::string key;
    /// The HTTPS port.
    std::uint16_t port = 8443;

    /// Takes `arg` if it is one of the TLS options; false otherwise.
    template <class Value>
    bool take(const CommandLine& cl, std::string_view arg, const Value& value) {
        if (arg == "--tls-port") {
            port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        } else if (arg == "--tls-cert" || arg == "--tls-key") {
            std::string_view v = value();
            if (v.empty()) cl.error("empty file name for " + std::string(arg));
            (arg == "--tls-cert" ? cert : key) = std::string(v);
        } else {
            return false;
        }
        return true;
    }
    /// Refuses a certificate without a key or the reverse.
    void check(const CommandLine& cl) const {
        if (cert.empty() != key.empty())
            cl.error(cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
    }
};

}  // namespace example
