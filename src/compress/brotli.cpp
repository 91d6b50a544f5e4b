// br (RFC 7932) through libbrotlienc's streaming API and libbrotlidec.
#include <brotli/decode.h>
#include <brotli/encode.h>

#include <algorithm>
#include <stdexcept>

#include "compress/detail.hpp"

namespace vela::compress::detail {

namespace {

// Quality 4 is the usual choice for on-the-fly responses: about gzip -6's speed with smaller
// output; 5 and up cost several times the CPU per byte for a few percent.
constexpr int kDefaultQuality = 4;
// Window: a streaming encoder holds about twice its window once the body is larger than it
// (measured: 9.2 MB at 2^22 after 1 MiB of flushed text, 1.9 MB at 2^19), so streams get
// 512 KiB, nginx's brotli default; a one-shot compress() gets brotli's default 4 MiB, since
// its ring buffer never outgrows the input it was told about and the memory is brief.
constexpr int kStreamWindowBits = 19;
constexpr int kOneShotWindowBits = 22;
constexpr std::size_t kOutStep = 64 << 10;

class BrotliEncoder final : public Encoder {
  public:
    BrotliEncoder(int quality, std::size_t size_hint)
        : quality_(quality),
          window_bits_(size_hint ? kOneShotWindowBits : kStreamWindowBits),
          size_hint_(size_hint) {
        open();
    }
    ~BrotliEncoder() override { BrotliEncoderDestroyInstance(st_); }
    BrotliEncoder(const BrotliEncoder&) = delete;
    BrotliEncoder& operator=(const BrotliEncoder&) = delete;

    void write(std::string_view in, std::string& out, bool flush) override {
        if (finished_) throw std::logic_error("vela::compress: write after finish");
        if (in.empty() && !flush) return;
        run(in, out, flush ? BROTLI_OPERATION_FLUSH : BROTLI_OPERATION_PROCESS);
    }
    void finish(std::string& out) override {
        if (finished_) return;
        run({}, out, BROTLI_OPERATION_FINISH);
        finished_ = true;
    }
    void reset() override {
        // libbrotlienc has no reset: a new instance with the same parameters.
        BrotliEncoderDestroyInstance(st_);
        st_ = nullptr;
        size_hint_ = 0;  // the hint described the first stream only
        open();
        finished_ = false;
    }
    Coding coding() const noexcept override { return Coding::br; }
    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    void open() {
        st_ = BrotliEncoderCreateInstance(&Meter::c_alloc, &Meter::c_free, &meter_);
        if (!st_) throw std::runtime_error("vela::compress: BrotliEncoderCreateInstance failed");
        BrotliEncoderSetParameter(st_, BROTLI_PARAM_QUALITY, std::uint32_t(quality_));
        BrotliEncoderSetParameter(st_, BROTLI_PARAM_LGWIN, std::uint32_t(window_bits_));
        if (size_hint_) {
            BrotliEncoderSetParameter(st_, BROTLI_PARAM_SIZE_HINT,
                                      std::uint32_t(std::min<std::size_t>(size_hint_, 1u << 30)));
        }
    }

    // Repeats `op` until brotli has taken all input and given all output (once an operation
    // starts it must be repeated until then, encode.h), or for FINISH until the stream ends.
    void run(std::string_view in, std::string& out, BrotliEncoderOperation op) {
        std::size_t avail_in = in.size();
        auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
        for (;;) {
            const std::size_t start = out.size();
            std::size_t got = 0;
            auto next_out = reinterpret_cast<std::uint8_t*>(
                open_room(out, std::min(kOutStep, 64 + avail_in / 4), got));
            std::size_t avail_out = got;
            const bool ok = BrotliEncoderCompressStream(st_, op, &avail_in, &next_in, &avail_out,
                                                        &next_out, nullptr);
            out.resize(start + (got - avail_out));
            if (!ok) throw std::runtime_error("vela::compress: brotli encoder failed");
            if (op == BROTLI_OPERATION_FINISH) {
                if (BrotliEncoderIsFinished(st_)) return;
            } else if (avail_in == 0 && !BrotliEncoderHasMoreOutput(st_)) {
                return;
            }
        }
    }

    Meter meter_;
    int quality_;
    int window_bits_;
    std::size_t size_hint_;
    BrotliEncoderState* st_ = nullptr;
    bool finished_ = false;
};

class BrotliDecoder final : public BoundedDecoder {
  public:
    BrotliDecoder() {
        st_ = BrotliDecoderCreateInstance(&Meter::c_alloc, &Meter::c_free, &meter_);
        if (!st_) throw std::runtime_error("vela::compress: BrotliDecoderCreateInstance failed");
    }
    ~BrotliDecoder() override { BrotliDecoderDestroyInstance(st_); }
    BrotliDecoder(const BrotliDecoder&) = delete;
    BrotliDecoder& operator=(const BrotliDecoder&) = delete;

    std::size_t memory() const noexcept override { return meter_.live(); }

  private:
    Step step(Io& io) override {
        std::size_t avail_in = io.in_left;
        auto next_in = reinterpret_cast<const std::uint8_t*>(io.in);
        std::size_t avail_out = io.out_left;
        auto next_out = reinterpret_cast<std::uint8_t*>(io.out);
        const BrotliDecoderResult r =
            BrotliDecoderDecompressStream(st_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
        io.in += io.in_left - avail_in;
        io.in_left = avail_in;
        io.out += io.out_left - avail_out;
        io.out_left = avail_out;
        switch (r) {
            case BROTLI_DECODER_RESULT_SUCCESS:
                return Step::end;
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                return Step::progress;
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                return Step::pending;
            case BROTLI_DECODER_RESULT_ERROR:
                break;
        }
        const int code = BrotliDecoderGetErrorCode(st_);
        // The ALLOC_* codes are the library failing, not the data.
        if (code <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
            code >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES)
            throw std::runtime_error("vela::compress: brotli decoder out of memory");
        return Step::error;
    }

    Meter meter_;
    BrotliDecoderState* st_ = nullptr;
};

}  // namespace

std::unique_ptr<Encoder> make_brotli_encoder(int level, std::size_t size_hint) {
    if (level == -1) level = kDefaultQuality;
    if (level < BROTLI_MIN_QUALITY || level > BROTLI_MAX_QUALITY)
        throw std::invalid_argument("vela::compress: br quality must be 0-11 or -1");
    return std::make_unique<BrotliEncoder>(level, size_hint);
}

std::unique_ptr<Decoder> make_brotli_decoder() { return std::make_unique<BrotliDecoder>(); }

}  // namespace vela::compress::detail
