// Feeds arbitrary bytes to redis::Url::parse. Whatever it accepts must be sane (a host, a
// port from 1 to 65535, a database >= 0, a password whenever there is a user) and must read
// back the same from the URL rebuilt out of its parts (user and password percent-encoded);
// whatever it refuses must be refused with std::invalid_argument, never another exception.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "vela/redis/client.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

std::string pct(std::string_view s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        out += '%';
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    vela::redis::Url u;
    try {
        u = vela::redis::Url::parse(in);
    } catch (const std::invalid_argument&) {
        return 0;
    }
    check(!u.host.empty());
    check(u.port >= 1);
    check(u.db >= 0);
    check(u.user.empty() || !u.password.empty());

    std::string again = "redis://";
    if (!u.password.empty()) again += pct(u.user) + ":" + pct(u.password) + "@";
    again += u.address();
    again += "/" + std::to_string(u.db);
    const vela::redis::Url v = vela::redis::Url::parse(again);
    check(v.host == u.host && v.port == u.port && v.user == u.user && v.password == u.password &&
          v.db == u.db);
    return 0;
}
