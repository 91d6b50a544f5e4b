// Feeds arbitrary bytes to what the Redis backplane and event stream read from other nodes:
// a room message (parse_envelope) and a stream entry id (parse_entry_id). Whatever is accepted
// must write back to the same bytes (messages) or to the same numbers (ids); nothing may crash.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "backplane/wire.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    vela::detail::Envelope e;
    if (vela::detail::parse_envelope(in, e)) {
        check(e.node.find('\n') == std::string_view::npos);
        check(e.publisher.find('\n') == std::string_view::npos);
        std::string again;
        vela::detail::write_envelope(again, e.node, e.publisher, e.seq, e.type, e.data);
        vela::detail::Envelope f;
        check(vela::detail::parse_envelope(again, f));
        check(f.node == e.node && f.publisher == e.publisher && f.seq == e.seq &&
              f.type == e.type && f.data == e.data);
    }
    vela::detail::EntryId id;
    if (vela::detail::parse_entry_id(in, id)) {
        const std::string text = std::to_string(id.ms) + "-" + std::to_string(id.seq);
        vela::detail::EntryId back;
        check(vela::detail::parse_entry_id(text, back) && back == id);
    }
    return 0;
}
