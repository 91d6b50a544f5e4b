// permessage-deflate (RFC 7692): the offer parser and negotiation (section 7.1), and the
// message compressor and decompressor over zlib's raw deflate (section 7.2).
//
// zlib's state goes through a counting allocator, so memory() is the bytes zlib asked for
// (plus our 16-byte header per block), not a guess from zconf.h's table.
#include "vela/ws/deflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "vela/base/ascii.hpp"
#include "vela/base/field_cursor.hpp"

namespace vela::ws {

namespace {

// ---- the Sec-WebSocket-Extensions grammar (RFC 6455 9.1, RFC 9110 5.6) ----

using Cursor = ascii::FieldCursor;

// Reads one element `token *( OWS ";" OWS token [ "=" ( token / quoted-string ) ] )` and the
// comma after it, calling param(name, value or nullptr) for each parameter. False (the
// element skipped) when it does not follow the grammar.
template <class F>
bool read_extension(Cursor& c, std::string_view& name, F&& param) {
    name = c.token();
    for (bool ok = !name.empty(); ok;) {
        c.ows();
        if (c.end()) return true;
        if (c.at(',')) {
            ++c.i;
            return true;
        }
        if (!c.at(';')) break;
        ++c.i;
        c.ows();
        const std::string_view pname = c.token();
        if (pname.empty()) break;
        c.ows();
        if (!c.at('=')) {
            param(pname, nullptr);
            continue;
        }
        ++c.i;
        c.ows();
        std::string value;
        if (c.at('"')) {
            ok = c.quoted(&value);
        } else {
            value = c.token();
            ok = !value.empty();
        }
        if (ok) param(pname, &value);
    }
    c.skip_element();
    return false;
}

// A window size of 8-15 written without leading zeros (RFC 7692 7.1.2); 0 otherwise.
int window_bits(const std::string* v) noexcept {
    if (!v) return 0;
    if (v->size() == 1 && (*v)[0] >= '8' && (*v)[0] <= '9') return (*v)[0] - '0';
    if (v->size() == 2 && (*v)[0] == '1' && (*v)[1] >= '0' && (*v)[1] <= '5')
        return 10 + ((*v)[1] - '0');
    return 0;
}

// What one permessage-deflate offer asked for.
struct Offer {
    bool declined = false;
    unsigned seen = 0;  // one bit per parameter name, for repeats
    bool server_no_context_takeover = false;
    bool client_no_context_takeover = false;
    int server_max_window_bits = 0;  // 0: not offered
    bool client_max_window_bits = false;
    int client_window_hint = 0;  // client_max_window_bits' value; 0: none

    // Applies one parameter (RFC 7692 7.1); anything unknown, repeated or ill-valued
    // declines the offer (section 5: "MUST decline").
    void param(std::string_view name, const std::string* v) {
        static constexpr std::string_view names[] = {
            "server_no_context_takeover", "client_no_context_takeover", "server_max_window_bits",
            "client_max_window_bits"};
        unsigned k = 0;
        while (k < 4 && !ascii::iequals(name, names[k])) ++k;
        if (k == 4 || (seen & (1u << k))) {
            declined = true;
            return;
        }
        seen |= 1u << k;
        switch (k) {
            case 0:
                server_no_context_takeover = true;
                break;
            case 1:
                client_no_context_takeover = true;
                break;
            case 2:
                server_max_window_bits = window_bits(v);
                break;
            default:
                client_max_window_bits = true;
                client_window_hint = window_bits(v);
                declined = declined || (v && !client_window_hint);
                return;
        }
        declined = declined || (k < 2 ? v != nullptr : server_max_window_bits == 0);
    }
};

// The parameters and the answer for an acceptable offer (RFC 7692 7.1).
DeflateParams accept(const Offer& f, const DeflateOptions& o, std::string& answer) {
    DeflateParams p;
    p.server_no_context_takeover = o.server_no_context_takeover || f.server_no_context_takeover;
    p.client_no_context_takeover = f.client_no_context_takeover;
    // zlib's raw deflate has no 256-byte window and runs with 512 instead; its matches then
    // reach back at most 512 - 262 = 250 bytes, so a window-8 decompressor still reads it.
    const int server_bits = std::min(std::clamp(o.server_max_window_bits, 8, 15),
                                     f.server_max_window_bits ? f.server_max_window_bits : 15);
    p.server_max_window_bits = std::max(server_bits, 9);
    // Without the parameter the client may not be told a window and uses up to 15.
    int client_bits = 15;
    if (f.client_max_window_bits) {
        client_bits = std::clamp(o.client_max_window_bits, 8, 15);
        if (f.client_window_hint) client_bits = std::min(client_bits, f.client_window_hint);
    }
    p.client_max_window_bits = client_bits;

    answer = "permessage-deflate";
    if (p.server_no_context_takeover) answer += "; server_no_context_takeover";
    if (p.client_no_context_takeover) answer += "; client_no_context_takeover";
    if (f.server_max_window_bits)
        answer += "; server_max_window_bits=" + std::to_string(server_bits);
    if (client_bits < 15) answer += "; client_max_window_bits=" + std::to_string(client_bits);
    return p;
}

// ---- zlib with a byte count ----

constexpr std::size_t kHeader = alignof(std::max_align_t);  // keeps zlib's blocks aligned

// zalloc for zlib: remembers each block's size in front of it and adds it to *opaque.
voidpf counted_alloc(voidpf opaque, uInt items, uInt size) {
    const std::size_t n = std::size_t(items) * size + kHeader;
    void* p = std::malloc(n);
    if (!p) return Z_NULL;
    std::memcpy(p, &n, sizeof n);
    *static_cast<std::size_t*>(opaque) += n;
    return static_cast<char*>(p) + kHeader;
}

// zfree for zlib: the inverse of counted_alloc.
void counted_free(voidpf opaque, voidpf address) {
    if (!address) return;
    char* p = static_cast<char*>(address) - kHeader;
    std::size_t n;
    std::memcpy(&n, p, sizeof n);
    *static_cast<std::size_t*>(opaque) -= n;
    std::free(p);
}

// A z_stream whose allocations are counted in `bytes`.
struct CountedStream {
    z_stream z{};
    std::size_t bytes = 0;

    CountedStream() noexcept {
        z.zalloc = counted_alloc;
        z.zfree = counted_free;
        z.opaque = &bytes;
    }
    CountedStream(const CountedStream&) = delete;
    CountedStream& operator=(const CountedStream&) = delete;
};

// The tail a sender strips from every message (RFC 7692 7.2.1) and a receiver puts back.
constexpr char kTail[4] = {0x00, 0x00, char(0xFF), char(0xFF)};

// Output is made in steps: the first a guess from the input, doubling while it fills.
constexpr std::size_t kMinStep = 1024;
constexpr std::size_t kMaxStep = 1024 * 1024;

// zlib counts input and output in uInt; larger pieces go in slices.
constexpr std::size_t kMaxSlice = std::size_t{1} << 30;

Bytef* bytes_of(std::string_view s) {
    return reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
}

}  // namespace

std::optional<DeflateParams> negotiate_deflate(std::string_view offers, const DeflateOptions& o,
                                               std::string& answer) {
    if (!o.enabled) return std::nullopt;
    Cursor c{offers};
    while (true) {
        c.ows();
        if (c.end()) return std::nullopt;
        if (c.at(',')) {  // empty list elements are allowed (RFC 9110 5.6.1)
            ++c.i;
            continue;
        }
        Offer f;
        std::string_view name;
        const bool ok = read_extension(
            c, name, [&](std::string_view n, const std::string* v) { f.param(n, v); });
        if (ok && !f.declined && ascii::iequals(name, "permessage-deflate"))
            return accept(f, o, answer);
    }
}

// ---- Inflater ----

struct Inflater::State : CountedStream {
    bool open = false;        // inflateInit2 succeeded and inflateEnd is owed
    bool in_message = false;  // bytes of the current message were fed
    bool boundary = true;     // the last inflate() stopped between deflate blocks
    bool aligned = true;      // ... and on a byte boundary (no bits of the next block held)
    bool fresh = false;       // a final block ended the stream and nothing followed yet
    int window = 15;
    std::uint16_t error = 0;  // sticky: the inflater is unusable after it

    ~State() { close(); }
    void close() noexcept {
        if (open) inflateEnd(&z);
        open = false;
    }
    std::uint16_t fail(std::uint16_t code) noexcept {
        close();  // no window is held for a connection that is closing
        error = code;
        return code;
    }
    // Starts a new deflate stream after a final block, keeping the window: later blocks may
    // refer back across it. (inflateResetKeep is zlib's own, declared in zlib.h since 1.2.8;
    // copying the window out and back in would cost 32 KB per 2-byte final block.)
    void restart() noexcept { inflateResetKeep(&z); }
    std::uint16_t feed(std::string_view in, std::string& out, std::size_t limit);
};

// Inflates `in` into `out`, never letting out grow past limit + 1 bytes: the room given to
// zlib is cut to one byte over the limit, so a bomb stops within a byte of crossing it.
// Room is zero-filled once and kept across calls, which may each write only a few bytes.
std::uint16_t Inflater::State::feed(std::string_view in, std::string& out, std::size_t limit) {
    struct Trim {  // on every way out, `out` ends at the last byte written
        std::string& out;
        std::size_t used;
        ~Trim() { out.resize(used); }
    } t{out, out.size()};
    const std::size_t start = out.size();
    std::size_t step = std::clamp(in.size() * 4, kMinStep, kMaxStep);
    bool full = false;  // the last call filled its room: zlib may hold more output
    while (!in.empty() || z.avail_in || full) {
        if (!z.avail_in) {
            const std::size_t n = std::min(in.size(), kMaxSlice);
            z.next_in = bytes_of(in);
            z.avail_in = uInt(n);
            in.remove_prefix(n);
        }
        if (out.size() == t.used) {
            const std::size_t room = limit > t.used ? limit - t.used : 0;
            out.resize(t.used + std::min(step, room + 1));
        }
        z.next_out = reinterpret_cast<Bytef*>(out.data() + t.used);
        z.avail_out = uInt(out.size() - t.used);
        const uInt had = z.avail_in;
        const int rc = ::inflate(&z, Z_NO_FLUSH);
        t.used = out.size() - z.avail_out;
        if (t.used > std::max(limit, start)) return close_code::message_too_big;
        if (z.avail_in != had) fresh = false;
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END)
            return close_code::invalid_payload;
        if (rc != Z_BUF_ERROR) {  // (a call without progress leaves the state as it was)
            boundary = rc == Z_STREAM_END || (z.data_type & 128) != 0;
            aligned = (z.data_type & 7) == 0;  // zlib: the unused bits of the last byte
        }
        if (rc == Z_STREAM_END) {
            restart();
            fresh = true;
        }
        full = z.avail_out == 0;
        if (full) step = std::min(step * 2, kMaxStep);
        // No progress with room to write: zlib wants input, so it must have none left.
        if (rc == Z_BUF_ERROR && !full && z.avail_in) return close_code::invalid_payload;
    }
    return 0;
}

Inflater::Inflater(const DeflateParams& p) noexcept : params_(p) {}

Inflater::~Inflater() = default;

std::uint16_t Inflater::inflate(std::string_view in, bool last, std::string& out,
                                std::size_t limit) {
    if (z_ && z_->error) return z_->error;
    if (!z_ && in.empty()) return 0;  // nothing to inflate yet: no state needed
    if (!z_) {
        auto s = std::make_unique<State>();
        // A peer told to use 8 may well deflate with 9 (zlib before 1.2.9 did): read 9.
        s->window = std::clamp(params_.client_max_window_bits, 9, 15);
        const int rc = inflateInit2(&s->z, -s->window);
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        if (rc != Z_OK) return close_code::internal_error;
        s->open = true;
        z_ = std::move(s);
    }
    State& s = *z_;
    std::uint16_t rc = 0;
    try {
        if (!in.empty()) {
            s.in_message = true;
            rc = s.feed(in, out, limit);
        }
        // RFC 7692 7.2.2: the stripped empty block goes back on. A message that must end
        // between blocks and does not was cut short. A compressed message of no bytes at
        // all is taken as empty, and one that ended with a final block (7.2.3.4) without
        // the extra 0x00 the RFC's example has needs no tail. Nor does one whose sender
        // kept the 00 00 ff ff (its empty stored block already ended it, on a byte
        // boundary): our tail would be read as a block of its own, cut short.
        if (!rc && last && s.in_message && !s.fresh && !(s.boundary && s.aligned)) {
            rc = s.feed({kTail, sizeof kTail}, out, limit);
            if (!rc && !s.boundary) rc = close_code::invalid_payload;
        }
    } catch (...) {
        s.fail(close_code::internal_error);
        throw;
    }
    if (rc) return s.fail(rc);
    if (last) {
        s.in_message = false;
        if (params_.client_no_context_takeover) z_.reset();  // an idle connection holds none
    }
    return 0;
}

std::size_t Inflater::memory() const noexcept { return z_ ? z_->bytes : 0; }

// ---- Deflater ----

struct Deflater::State : CountedStream {
    ~State() { deflateEnd(&z); }
};

Deflater::Deflater(const DeflateParams& p, const DeflateOptions& o) noexcept
    : params_(p), level_(std::clamp(o.level, 0, 9)), mem_level_(std::clamp(o.mem_level, 1, 9)) {}

Deflater::~Deflater() = default;

void Deflater::compress(std::string_view msg, std::string& out) {
    // RFC 7692 7.2.3.6: an empty message is one empty stored block's first byte. zlib would
    // write nothing for it after a flush, and the stream stays at a block boundary.
    if (msg.empty()) {
        out.push_back('\0');
        return;
    }
    if (!z_) {
        auto s = std::make_unique<State>();
        const int bits = std::clamp(params_.server_max_window_bits, 9, 15);
        if (deflateInit2(&s->z, level_, Z_DEFLATED, -bits, mem_level_, Z_DEFAULT_STRATEGY) != Z_OK)
            throw std::bad_alloc();  // zlib already freed what it had (deflateEnd is a no-op)
        z_ = std::move(s);
    }
    z_stream& z = z_->z;
    const std::size_t start = out.size();
    try {
        std::size_t step = deflateBound(&z, uLong(std::min(msg.size(), kMaxSlice))) + 16;
        do {
            const std::size_t n = std::min(msg.size(), kMaxSlice);
            z.next_in = bytes_of(msg);
            z.avail_in = uInt(n);
            msg.remove_prefix(n);
            const int flush = msg.empty() ? Z_SYNC_FLUSH : Z_NO_FLUSH;
            do {  // a call that leaves output room has taken all input (and flushed)
                const std::size_t old = out.size();
                out.resize(old + step);
                z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
                z.avail_out = uInt(step);
                ::deflate(&z, flush);
                out.resize(old + step - z.avail_out);
                if (!z.avail_out) step = std::max(step, std::min(step * 2, kMaxStep));
            } while (!z.avail_out);
        } while (!msg.empty());
    } catch (...) {
        deflateReset(&z);  // half a message must not stay in the shared compressor
        out.resize(start);
        throw;
    }
    // RFC 7692 7.2.1: a sync flush ends in an empty stored block, whose LEN/NLEN go.
    out.resize(out.size() - sizeof kTail);
    if (params_.server_no_context_takeover) deflateReset(&z);
}

std::size_t Deflater::memory() const noexcept { return z_ ? z_->bytes : 0; }

}  // namespace vela::ws
