// zstd (RFC 8878, as an HTTP coding RFC 9659) through libzstd's streaming API.
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_customMem: the library allocates through our Meter
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "compress/detail.hpp"

namespace vela::compress::detail {

namespace {

constexpr int kDefaultLevel = 3;  // ZSTD_CLEVEL_DEFAULT
// RFC 9659 section 3: HTTP decoders need not accept windows over 8 MiB; zstd's levels up to 19
// stay within it, and the decoder refuses more so a client cannot make it allocate more.
constexpr int kMaxWindowLog = 23;
constexpr std::size_t kOutStep = 64 << 10;
// A streaming encoder allocates its whole window and tables up front (3.7 MB at level 3 with
// zstd's 2 MiB window for unknown sizes; 2.1 MB at 512 KiB), so streams keep the window at
// 2^19 like br. compress() knows the size and leaves the level's own choice.
constexpr unsigned kStreamWindowLog = 19;

ZSTD_customMem custom_mem(Meter& m) { return {&Meter::c_alloc, &Meter::c_free, &m}; }

class ZstdEncoder final : public Encoder {
  public:
    ZstdEncoder(int level, std::size_t size_hint) {
        cctx_ = ZSTD_createCCtx_advanced(custom_mem(meter_));
        if (!cctx_) throw std::runtime_error("vela::compress: ZSTD_createCCtx failed");
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
        // Four bytes per frame buy an end-to-end check of the decoded body.
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
        // An exact size (one-shot compression) picks smaller tables for small inputs and puts
        // the size in the frame header.
        if (size_hint) {
            ZSTD_CCtx_setPledgedSrcSize(cctx_, size_hint);
        } else if (ZSTD_getCParams(level, ZSTD_CONTENTSIZE_UNKNOWN, 0).windowLog >
                   kStreamWindowLog) {
            ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, int(kStreamWindowLog));
        }
    }
    ~ZstdEncoder() override { ZSTD_freeCCtx(cctx_); }
    ZstdEncoder(const ZstdEncoder&) = delete;
    ZstdEncoder& operator=(const ZstdEncoder&) = delete;

    void write(std::string_view in, std::string& out, bool flush) override {
        if (finished_) throw std::logic_error("vela::compress: write after finish");
        if (in.empty() && !flush) return;
        run(in, out, flush ? ZSTD_e_flush : ZSTD_e_continue);
    }
    void finish(std::string& out) override {
        if (finished_) return;
        run({}, out, ZSTD_e_end);
        finished_ = true;
    }
    void reset() override {
        // Keeps the parameters and the allocated tables; drops the pledged size.
        const std::size_t rc = ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
        if (ZSTD_isError(rc)) throw std::runtime_error("vela::compress: ZSTD_CCtx_reset failed");
        finished_ = false;
    }
    Coding coding() const noexcept override { return Coding::zstd; }
    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    // ZSTD_e_continue returns once all input is taken or the output is full; flush and end
    // return 0 once everything is out (zstd.h).
    void run(std::string_view in, std::string& out, ZSTD_EndDirective mode) {
        ZSTD_inBuffer ib{in.data(), in.size(), 0};
        for (;;) {
            const std::size_t start = out.size();
            std::size_t got = 0;
            char* room = open_room(out, std::min(kOutStep, 64 + (ib.size - ib.pos) / 4), got);
            ZSTD_outBuffer ob{room, got, 0};
            const std::size_t rc = ZSTD_compressStream2(cctx_, &ob, &ib, mode);
            out.resize(start + ob.pos);
            if (ZSTD_isError(rc)) {
                throw std::runtime_error(std::string("vela::compress: zstd: ") +
                                         ZSTD_getErrorName(rc));
            }
            if (mode == ZSTD_e_continue ? ib.pos == ib.size && ob.pos < ob.size : rc == 0) return;
        }
    }

    Meter meter_;
    ZSTD_CCtx* cctx_ = nullptr;
    bool finished_ = false;
};

class ZstdDecoder final : public BoundedDecoder {
  public:
    ZstdDecoder() {
        dctx_ = ZSTD_createDCtx_advanced(custom_mem(meter_));
        if (!dctx_) throw std::runtime_error("vela::compress: ZSTD_createDCtx failed");
        ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, kMaxWindowLog);
    }
    ~ZstdDecoder() override { ZSTD_freeDCtx(dctx_); }
    ZstdDecoder(const ZstdDecoder&) = delete;
    ZstdDecoder& operator=(const ZstdDecoder&) = delete;

    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    Step step(Io& io) override {
        // libzstd decodes a frame in one shot, skipping its block-by-block checks, when the
        // call that completes the frame header also holds the whole frame (zstd_decompress.c,
        // "single-pass mode"). The two disagree: in 1.5.4 block by block refuses an RLE block
        // whose content byte exceeds the frame's window (RFC 8878 3.1.1.2, Block_Maximum_Size)
        // and one shot accepts it, so the answer depended on how the body was split. Handing
        // the header over one byte at a time means that call never holds a whole frame: every
        // split decodes block by block.
        const std::size_t give =
            header_complete() ? io.in_left : std::min<std::size_t>(io.in_left, 1);
        ZSTD_inBuffer ib{io.in, give, 0};
        ZSTD_outBuffer ob{io.out, io.out_left, 0};
        const std::size_t rc = ZSTD_decompressStream(dctx_, &ob, &ib);
        // The frame header's first bytes, to check its declared content size at the end.
        const std::size_t keep = std::min(ib.pos, sizeof head_ - head_len_);
        std::memcpy(head_ + head_len_, io.in, keep);
        head_len_ += keep;
        produced_ += ob.pos;
        io.in += ib.pos;
        io.in_left -= ib.pos;
        io.out += ob.pos;
        io.out_left -= ob.pos;
        if (ZSTD_isError(rc)) {
            if (ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
                throw std::runtime_error("vela::compress: zstd decoder out of memory");
            return Step::error;
        }
        // 0: the frame is decoded and flushed; it stops there even with input left.
        if (rc == 0) {
            // libzstd's streaming decoder (1.5.4) accepts a frame whose content is shorter than
            // the size its header declares (its one-shot path refuses it): refuse it too, so a
            // body decodes the same however its bytes arrive.
            const unsigned long long declared = ZSTD_getFrameContentSize(head_, head_len_);
            if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR &&
                declared != produced_)
                return Step::error;
            return Step::end;
        }
        return ob.pos == ob.size ? Step::pending : Step::progress;
    }

    // True once head_ holds the whole frame header (magic, descriptor and the fields it names).
    bool header_complete() const noexcept {
        if (head_len_ < ZSTD_FRAMEHEADERSIZE_PREFIX(ZSTD_f_zstd1)) return false;
        const std::size_t need = ZSTD_frameHeaderSize(head_, head_len_);
        return !ZSTD_isError(need) && need <= head_len_;
    }

    Meter meter_;
    ZSTD_DCtx* dctx_ = nullptr;
    unsigned char head_[18] = {};  // a frame header is at most 18 bytes (RFC 8878 3.1.1)
    std::size_t head_len_ = 0;
    std::uint64_t produced_ = 0;
};

}  // namespace

std::unique_ptr<Encoder> make_zstd_encoder(int level, std::size_t size_hint) {
    if (level == -1) level = kDefaultLevel;
    if (level < 1 || level > 19)
        throw std::invalid_argument("vela::compress: zstd level must be 1-19 or -1");
    return std::make_unique<ZstdEncoder>(level, size_hint);
}

std::unique_ptr<Decoder> make_zstd_decoder() { return std::make_unique<ZstdDecoder>(); }

}  // namespace vela::compress::detail
