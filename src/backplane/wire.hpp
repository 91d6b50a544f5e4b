#pragma once
// What the backplane and the event stream read from Redis, as plain functions (the fuzz target
// fuzz/fuzz_backplane_wire.cpp drives them).
//
// A room message on a channel: "<node>\n<publisher>\n<seq>\n<t|b><payload>": the node that
// published it, the publisher (a process and a thread of it), its number for the room, text
// or binary, then the bytes. A stream entry id: "<milliseconds>-<sequence>".

#include <charconv>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/server/websocket.hpp"

namespace vela::detail {

/// One room message as read from its channel (views into the message).
struct Envelope {
    std::string_view node, publisher;
    std::uint64_t seq = 0;
    WsType type = WsType::text;
    std::string_view data;
};

/// Appends the message's wire form to `out`.
inline void write_envelope(std::string& out, std::string_view node, std::string_view publisher,
                           std::uint64_t seq, WsType type, std::string_view data) {
    out.append(node).append(1, '\n').append(publisher).append(1, '\n');
    out.append(std::to_string(seq)).append(1, '\n');
    out.append(1, type == WsType::binary ? 'b' : 't').append(data);
}

/// Reads a message; false when `m` is not one (the node and publisher may not hold a line
/// feed, the number is decimal, the kind is t or b).
inline bool parse_envelope(std::string_view m, Envelope& e) {
    std::string_view parts[3];
    for (auto& p : parts) {
        const std::size_t nl = m.find('\n');
        if (nl == std::string_view::npos) return false;
        p = m.substr(0, nl);
        m.remove_prefix(nl + 1);
    }
    e.node = parts[0];
    e.publisher = parts[1];
    auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), e.seq);
    if (parts[2].empty() || ec != std::errc{} || end != parts[2].data() + parts[2].size() ||
        m.empty())
        return false;
    if (m[0] != 't' && m[0] != 'b') return false;
    e.type = m[0] == 'b' ? WsType::binary : WsType::text;
    e.data = m.substr(1);
    return true;
}

/// A stream entry id as two numbers (ids compare as such, not as text).
struct EntryId {
    std::uint64_t ms = 0, seq = 0;
    auto operator<=>(const EntryId&) const = default;
};

/// Reads "<ms>-<seq>"; false for anything else.
inline bool parse_entry_id(std::string_view s, EntryId& id) {
    const std::size_t dash = s.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 >= s.size()) return false;
    auto [p1, e1] = std::from_chars(s.data(), s.data() + dash, id.ms);
    auto [p2, e2] = std::from_chars(s.data() + dash + 1, s.data() + s.size(), id.seq);
    return e1 == std::errc{} && p1 == s.data() + dash && e2 == std::errc{} &&
           p2 == s.data() + s.size();
}

}  // namespace vela::detail
