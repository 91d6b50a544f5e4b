#pragma once
// Running a command line from an end-to-end test (curl, openssl, python3) and reading its
// standard output.

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace vela::e2e {

/// What a command printed and how it exited.
struct Ran {
    /// Exit status (-1: it did not exit normally or could not start).
    int status = -1;
    /// Its standard output.
    std::string out;
};

/// Runs `cmd` with /bin/sh and returns its exit status and standard output.
inline Ran run_command(const std::string& cmd) {
    Ran r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[16 * 1024];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

/// The standard output of `cmd`.
inline std::string shell(const std::string& cmd) { return run_command(cmd).out; }

/// Whether `cmd` (run by /bin/sh, its output discarded) exits with status 0.
inline bool succeeds(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

/// Whether curl is installed with HTTP/2 support.
inline bool have_curl_h2() { return succeeds("curl --version 2>/dev/null | grep -q HTTP2"); }

/// Whether `tool` is a command on PATH (or an executable path).
inline bool have(const std::string& tool) {
    return succeeds(std::string("command -v ").append(tool));
}

/// `s` as one shell word: 'text', each ' written as '\''.
inline std::string shell_quote(std::string_view s) {
    std::string q = "'";
    for (char c : s) c == '\'' ? q += "'\\''" : q += c;
    return q + "'";
}

/// Runs curl with `args` on `url`: the HTTP status (0 when curl printed none) and the body
/// (with curl's own error message, if any); `curl_ok` is false when curl itself failed.
inline std::pair<int, std::string> curl_status(const std::string& args, const std::string& url,
                                               bool* curl_ok = nullptr) {
    const Ran r = run_command("timeout 20 curl -sS --max-time 10 -w '\\n%{http_code}' " + args +
                              " " + shell_quote(url) + " 2>&1");
    if (curl_ok) *curl_ok = r.status == 0;
    const std::size_t nl = r.out.rfind('\n');
    if (nl == std::string::npos) return {0, r.out};
    return {std::atoi(r.out.c_str() + nl + 1), r.out.substr(0, nl)};
}

}  // namespace vela::e2e
