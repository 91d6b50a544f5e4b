#pragma once
// The python3 the end-to-end tests run their real clients with (websockets, h2, wsproto).

#include <unistd.h>

namespace vela::e2e {

/// Debian's /usr/bin/python3, which has python3-websockets, python3-h2 and python3-wsproto (a
/// pyenv python3 first on PATH may not), or python3 from PATH when it is missing.
inline const char* debian_python() {
    return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

}  // namespace vela::e2e
