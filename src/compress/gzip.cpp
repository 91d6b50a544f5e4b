// gzip (RFC 1952) through zlib: deflate/inflate with the gzip wrapper (windowBits 15 + 16).
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <stdexcept>

#include "compress/detail.hpp"

namespace vela::compress::detail {

namespace {

constexpr int kGzipWindow = 15 + 16;      // 32 KiB window; +16 selects the gzip wrapper
constexpr std::size_t kMaxIn = 1u << 30;  // zlib counts in uInt; larger inputs go in pieces
constexpr std::size_t kOutStep = 64 << 10;

class GzipEncoder final : public Encoder {
  public:
    explicit GzipEncoder(int level) {
        zs_.zalloc = &Meter::zlib_alloc;
        zs_.zfree = &Meter::c_free;
        zs_.opaque = &meter_;
        // memLevel 8 is zlib's default: 128 KiB of hash and 64 KiB of pending buffer.
        const int rc = deflateInit2(&zs_, level, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY);
        if (rc != Z_OK) throw std::runtime_error("vela::compress: deflateInit2 failed");
    }
    ~GzipEncoder() override { deflateEnd(&zs_); }
    GzipEncoder(const GzipEncoder&) = delete;
    GzipEncoder& operator=(const GzipEncoder&) = delete;

    void write(std::string_view in, std::string& out, bool flush) override {
        if (finished_) throw std::logic_error("vela::compress: write after finish");
        if (in.empty() && !flush) return;
        run(in, out, flush ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    }
    void finish(std::string& out) override {
        if (finished_) return;
        run({}, out, Z_FINISH);
        finished_ = true;
    }
    void reset() override {
        if (deflateReset(&zs_) != Z_OK) throw std::runtime_error("vela::compress: deflateReset");
        finished_ = false;
    }
    Coding coding() const noexcept override { return Coding::gzip; }
    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    // Feeds `in` with `mode` applied to its last piece; returns when zlib had output room to
    // spare after taking all input, which per zlib.h means nothing is held back.
    void run(std::string_view in, std::string& out, int mode) {
        for (;;) {
            if (zs_.avail_in == 0 && !in.empty()) {
                const std::size_t n = std::min(in.size(), kMaxIn);
                zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
                zs_.avail_in = uInt(n);
                in.remove_prefix(n);
            }
            const int m = in.empty() ? mode : Z_NO_FLUSH;
            const std::size_t start = out.size();
            std::size_t got = 0;
            char* room =
                open_room(out, std::min<std::size_t>(kOutStep, 64 + zs_.avail_in / 4), got);
            got = std::min<std::size_t>(got, UINT_MAX);
            zs_.next_out = reinterpret_cast<Bytef*>(room);
            zs_.avail_out = uInt(got);
            const int rc = deflate(&zs_, m);
            out.resize(start + (got - zs_.avail_out));
            // Z_BUF_ERROR is "no progress possible" (e.g. a second flush with nothing new).
            if (rc == Z_STREAM_ERROR) throw std::runtime_error("vela::compress: deflate failed");
            if (m == Z_FINISH) {
                if (rc == Z_STREAM_END) return;
                continue;
            }
            if (zs_.avail_in == 0 && in.empty() && zs_.avail_out != 0) return;
        }
    }

    Meter meter_;
    z_stream zs_{};
    bool finished_ = false;
};

class GzipDecoder final : public BoundedDecoder {
  public:
    GzipDecoder() {
        zs_.zalloc = &Meter::zlib_alloc;
        zs_.zfree = &Meter::c_free;
        zs_.opaque = &meter_;
        // gzip only: 15 + 32 would also take the zlib wrapper, which HTTP calls "deflate"
        // and vela does not offer.
        if (inflateInit2(&zs_, kGzipWindow) != Z_OK)
            throw std::runtime_error("vela::compress: inflateInit2 failed");
    }
    ~GzipDecoder() override { inflateEnd(&zs_); }
    GzipDecoder(const GzipDecoder&) = delete;
    GzipDecoder& operator=(const GzipDecoder&) = delete;

    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    Step step(Io& io) override {
        const std::size_t n = std::min(io.in_left, kMaxIn);
        zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(io.in));
        zs_.avail_in = uInt(n);
        zs_.next_out = reinterpret_cast<Bytef*>(io.out);
        zs_.avail_out = uInt(io.out_left);  // at most 64 KiB (BoundedDecoder)
        const int rc = inflate(&zs_, Z_NO_FLUSH);
        const std::size_t used = n - zs_.avail_in;
        io.in += used;
        io.in_left -= used;
        io.out += io.out_left - zs_.avail_out;
        io.out_left = zs_.avail_out;
        switch (rc) {
            case Z_STREAM_END:
                return Step::end;
            case Z_OK:
            case Z_BUF_ERROR:
                return zs_.avail_out == 0 ? Step::pending : Step::progress;
            case Z_MEM_ERROR:
                throw std::runtime_error("vela::compress: inflate out of memory");
            default:
                return Step::error;  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
        }
    }

    Meter meter_;
    z_stream zs_{};
};

}  // namespace

std::unique_ptr<Encoder> make_gzip_encoder(int level) {
    if (level == -1) level = 6;
    if (level < 1 || level > 9)
        throw std::invalid_argument("vela::compress: gzip level must be 1-9 or -1");
    return std::make_unique<GzipEncoder>(level);
}

std::unique_ptr<Decoder> make_gzip_decoder() { return std::make_unique<GzipDecoder>(); }

}  // namespace vela::compress::detail
