// Feeds arbitrary bytes to the WebSocket FrameReader, whole and in pieces chosen by the
// input, the way a connection does (append what arrived, call next() until it needs more,
// drop the consumed bytes), and checks that both give the same events, that every call
// reads only the bytes it was given (each call sees an exact-size heap copy), that bytes
// it does not consume are left as they were, and that what it hands out keeps the rules
// (limits, UTF-8, close codes). Small limits, so the 1009 paths are reached.
//
// Input: flags, max_frame, max_message, piece seed, then the client's bytes. Flag bit 0:
// frames need not be masked (so unmasked frames get past the header); bit 1: a fake
// inflater is set, so RSV1 is allowed.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vela/ws/frame.hpp"

namespace {

using vela::ws::Event;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// "Inflates" each byte b to (b & 3) copies of itself and refuses 0xFE, so the output does not
// depend on how the compressed bytes were split; keeps to the limit as the real one must.
class FakeInflater final : public vela::ws::MessageInflater {
  public:
    std::uint16_t inflate(std::string_view in, bool, std::string& out, std::size_t limit) override {
        std::size_t added = 0;
        for (char c : in) {
            const auto b = static_cast<unsigned char>(c);
            if (b == 0xFE) return vela::ws::close_code::invalid_payload;
            added += b & 3;
            if (added > limit) return vela::ws::close_code::message_too_big;
            out.append(b & 3, c);
        }
        return 0;
    }
};

struct Got {
    Event::Kind kind;
    vela::ws::Opcode opcode;
    std::string payload;
    std::uint16_t code;
    bool operator==(const Got&) const = default;
};

void check_event(const Event& e, const vela::ws::ReaderOptions& o) {
    using Kind = Event::Kind;
    switch (e.kind) {
        case Kind::message:
            check(e.payload.size() <= o.max_message);
            check(e.opcode == vela::ws::Opcode::text || e.opcode == vela::ws::Opcode::binary);
            if (e.opcode == vela::ws::Opcode::text) check(vela::ws::utf8_valid(e.payload));
            break;
        case Kind::ping:
        case Kind::pong:
            check(e.payload.size() <= 125 && e.payload.size() <= o.max_frame);
            break;
        case Kind::close:
            check(e.code == vela::ws::close_code::no_status || vela::ws::close_code_valid(e.code));
            check(e.payload.size() <= 123 && vela::ws::utf8_valid(e.payload));
            break;
        case Kind::error:
            check(e.code == 1002 || e.code == 1007 || e.code == 1009);
            break;
        case Kind::need_more:
            break;
    }
}

// Reads `in`, arriving in pieces of 1..max_piece bytes drawn from `seed` (0: all at once).
std::vector<Got> read(std::string_view in, const vela::ws::ReaderOptions& o, bool inflate,
                      unsigned seed, unsigned max_piece) {
    FakeInflater inflater;
    vela::ws::FrameReader r(o);
    if (inflate) r.set_inflater(&inflater);
    std::vector<Got> events;
    std::string buf;
    std::size_t given = 0;
    while (given < in.size() || given == 0) {
        seed = seed * 1103515245u + 12345u;
        const std::size_t piece = max_piece ? 1 + (seed >> 16) % max_piece : in.size();
        const std::size_t n = std::min(piece, in.size() - given);
        buf.append(in.substr(given, n));
        given += n;
        for (;;) {
            const std::size_t size = buf.size();
            std::unique_ptr<char[]> exact(new char[size ? size : 1]);
            if (size) std::memcpy(exact.get(), buf.data(), size);
            std::size_t consumed = 0;
            const Event e = r.next(exact.get(), size, consumed);
            check(consumed <= size);
            // Bytes the caller keeps are read again next time: they must be untouched.
            check(size == 0 ||
                  std::memcmp(exact.get() + consumed, buf.data() + consumed, size - consumed) == 0);
            check_event(e, o);
            if (e.kind != Event::Kind::need_more)
                events.push_back({e.kind, e.opcode, std::string(e.payload), e.code});
            buf.erase(0, consumed);
            if (e.kind == Event::Kind::error || e.kind == Event::Kind::close) {
                // Later calls: the same error, or nothing after a close.
                const Event again = r.next(buf.data(), buf.size(), consumed);
                check(consumed == 0);
                check(e.kind == Event::Kind::error ? again.code == e.code
                                                   : again.kind == Event::Kind::need_more);
                return events;
            }
            if (e.kind == Event::Kind::need_more) break;
        }
        if (in.empty()) break;
    }
    return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    vela::ws::ReaderOptions o;
    o.require_mask = (data[0] & 1) == 0;
    const bool inflate = (data[0] & 2) != 0;
    o.max_frame = 1 + data[1];
    o.max_message = 1 + 2 * std::size_t{data[2]};
    const std::string_view in(reinterpret_cast<const char*>(data) + 4, size - 4);

    const std::vector<Got> whole = read(in, o, inflate, 0, 0);
    check(read(in, o, inflate, data[3], 1 + data[3] % 23) == whole);
    check(read(in, o, inflate, 0, 1) == whole);

    // The incremental UTF-8 check agrees with the whole-string one at any split.
    vela::ws::Utf8Validator v;
    const std::size_t k = in.empty() ? 0 : data[3] % (in.size() + 1);
    const bool head = v.feed(in.data(), k);
    const bool tail = v.feed(in.data() + k, in.size() - k);
    check((head && tail && v.complete()) == vela::ws::utf8_valid(in));

    // Messages written back as client frames read back the same.
    for (const Got& g : whole) {
        if (g.kind != Event::Kind::message) continue;
        std::string frame;
        vela::ws::append_client_frame(frame, g.opcode, g.payload, 0x01020304u * data[3]);
        vela::ws::ReaderOptions big;
        vela::ws::FrameReader r(big);
        std::size_t consumed = 0;
        const Event e = r.next(frame.data(), frame.size(), consumed);
        check(e.kind == Event::Kind::message && e.payload == g.payload && consumed == frame.size());
    }
    return 0;
}
