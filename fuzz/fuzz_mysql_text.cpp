// Feeds arbitrary bytes to the MySQL text functions of src/db/my_text.hpp: the URL parser
// (a Database's only input before any connection) and the placeholder translator ($N -> ?).
// A URL parses or throws Error, nothing else; a translation keeps every byte outside the
// placeholders, has one ? per recorded parameter, and throws MappingError only.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../src/db/my_text.hpp"
#include "vela/db/db.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    using namespace vela::db::my;
    try {
        const ConnectParams p = parse_url(in);
        check(!p.host.empty() || !p.socket.empty());
        check(p.port >= 1 && p.port <= 65535);
        check(p.socket.empty() || p.socket[0] == '/');
        check(p.database.find('/') == std::string::npos);
    } catch (const vela::db::Error&) {
    }
    std::vector<std::uint16_t> order;
    try {
        const std::string out = translate_placeholders(in, order);
        std::size_t marks = 0;
        for (char c : out) marks += c == '?';
        // Each ? of the output is a ? of the input or a $N (whose digits were dropped).
        check(order.size() <= marks);
        check(out.size() <= in.size());
        check(marks <=
              order.size() + static_cast<std::size_t>(std::count(in.begin(), in.end(), '?')));
        for (std::uint16_t i : order) check(i < 65535);
    } catch (const vela::db::MappingError&) {
    }
    return 0;
}
