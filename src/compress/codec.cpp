// The factories, the one-shot helpers and the bounded decode loop the three decoders share.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "compress/detail.hpp"
#include "vela/compress/codec.hpp"

namespace vela::compress {

namespace {
constexpr std::size_t kMaxStep = std::size_t(64) << 10;  // output per library call, at most
constexpr int kMaxStalls = 32;  // calls in a row that neither read nor wrote: not a stream
}  // namespace

std::unique_ptr<Encoder> Encoder::create(Coding c, int level) {
    switch (c) {
        case Coding::gzip:
            return detail::make_gzip_encoder(level);
        case Coding::br:
            return detail::make_brotli_encoder(level, 0);
        case Coding::zstd:
            return detail::make_zstd_encoder(level, 0);
        case Coding::identity:
            break;
    }
    throw std::invalid_argument("vela::compress::Encoder: no encoder for identity");
}

std::unique_ptr<Decoder> Decoder::create(Coding c) {
    switch (c) {
        case Coding::gzip:
            return detail::make_gzip_decoder();
        case Coding::br:
            return detail::make_brotli_decoder();
        case Coding::zstd:
            return detail::make_zstd_decoder();
        case Coding::identity:
            break;
    }
    throw std::invalid_argument("vela::compress::Decoder: no decoder for identity");
}

std::string compress(Coding c, std::string_view in, int level) {
    if (c == Coding::identity) return std::string(in);
    std::unique_ptr<Encoder> e;
    if (c == Coding::gzip) e = detail::make_gzip_encoder(level);
    if (c == Coding::br) e = detail::make_brotli_encoder(level, in.size());
    if (c == Coding::zstd) e = detail::make_zstd_encoder(level, in.size());
    if (!e) throw std::invalid_argument("vela::compress::compress: unknown coding");
    std::string out;
    out.reserve(in.size() / 4 + 64);  // text usually shrinks at least this far; grows if not
    e->write(in, out);
    e->finish(out);
    return out;
}

DecodeResult decompress(Coding c, std::string_view in, std::string& out, std::size_t limit) {
    if (c == Coding::identity) {
        const std::size_t room = out.size() < limit ? limit - out.size() : 0;
        out.append(in.substr(0, room));
        return in.size() > room ? DecodeResult::too_large : DecodeResult::done;
    }
    const DecodeResult r = Decoder::create(c)->write(in, out, limit);
    return r == DecodeResult::more ? DecodeResult::corrupt : r;  // truncated
}

namespace detail {

DecodeResult BoundedDecoder::write(std::string_view in, std::string& out, std::size_t limit) {
    if (state_ == DecodeResult::done && !in.empty()) state_ = DecodeResult::corrupt;
    if (state_ != DecodeResult::more) return state_;
    Io io{in.data(), in.size(), nullptr, 0};
    // Small bodies get small steps (resize() zero-fills what it opens); steps double while
    // the output keeps filling them, up to kMaxStep.
    std::size_t chunk = std::clamp<std::size_t>(in.size() * 4, 1024, kMaxStep);
    int stalls = 0;
    for (;;) {
        const std::size_t room = out.size() < limit ? limit - out.size() : 0;
        const std::size_t start = out.size();
        char probe;
        std::size_t given = 1;
        if (room) {
            given = std::min(room, chunk);
            out.resize(start + given);
            io.out = out.data() + start;
        } else {
            io.out = &probe;  // at the limit: one byte tells whether more output remains
        }
        io.out_left = given;
        const std::size_t in_before = io.in_left;
        const Step s = step(io);
        const std::size_t made = given - io.out_left;
        if (room) out.resize(start + made);

        if (s == Step::error) return state_ = DecodeResult::corrupt;
        if (!room && (made || s == Step::pending)) return state_ = DecodeResult::too_large;
        if (s == Step::end) {
            // Bytes after the end of the stream are not part of it (see codec.hpp).
            return state_ = io.in_left ? DecodeResult::corrupt : DecodeResult::done;
        }
        // All input read and the output not filled: the library holds nothing back.
        if (s != Step::pending && io.in_left == 0 && io.out_left != 0) return DecodeResult::more;
        if (made == given) chunk = std::min(chunk * 2, kMaxStep);
        if (made == 0 && in_before == io.in_left) {
            if (++stalls == kMaxStalls) return state_ = DecodeResult::corrupt;
        } else {
            stalls = 0;
        }
    }
}

}  // namespace detail

}  // namespace vela::compress
