#include "vela/http/chunked_decoder.hpp"

#include <cstring>

#include "vela/http/char_class.hpp"

namespace vela {

namespace {
unsigned hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return unsigned(c - '0');
    if (c >= 'a' && c <= 'f') return unsigned(c - 'a' + 10);
    return unsigned(c - 'A' + 10);
}
}  // namespace

void ChunkedDecoder::reset(const ParserLimits* limits) noexcept {
    limits_ = limits;
    state_ = State::size;
    error_ = Status::BadRequest;
    read_ = write_ = 0;
    dropped_ = 0;
    max_body_ = limits->max_body;
    chunk_left_ = 0;
    line_len_ = trailer_bytes_ = trailer_count_ = 0;
    digits_ = 0;
}

ChunkedDecoder::Result ChunkedDecoder::feed(char* body, std::size_t n) noexcept {
    while (read_ < n) {
        if (state_ == State::data) {
            // Bulk move of chunk data down over the framing already read.
            std::size_t take = n - read_;
            if (take > chunk_left_) take = static_cast<std::size_t>(chunk_left_);
            if (write_ != read_) std::memmove(body + write_, body + read_, take);
            write_ += take;
            read_ += take;
            chunk_left_ -= take;
            if (chunk_left_ == 0) state_ = State::data_cr;
            continue;
        }
        const char c = body[read_++];
        const auto uc = static_cast<unsigned char>(c);
        const State before = state_;
        switch (state_) {
            case State::size:  // chunk-size = 1*HEXDIG
                if (http::is_hex(uc)) {
                    if (chunk_left_ > (UINT64_MAX >> 4)) return fail(Status::BadRequest);
                    chunk_left_ = (chunk_left_ << 4) | hex_digit(c);
                    ++digits_;
                } else if (digits_ == 0) {
                    return fail(Status::BadRequest);
                } else if (c == ';') {
                    state_ = State::ext;  // chunk-ext, syntax-checked loosely after the ';'
                } else if (c == ' ' || c == '\t') {
                    state_ = State::ext_bws;
                } else if (c == '\r') {
                    state_ = State::size_lf;
                } else {
                    return fail(Status::BadRequest);
                }
                if (c != '\r' && ++line_len_ > limits_->max_chunk_line)
                    return fail(Status::BadRequest);
                break;
            case State::ext_bws:  // chunk-ext = *( BWS ";" ... ): only ';' may end the BWS
                if (c == ';') {
                    state_ = State::ext;
                } else if (c != ' ' && c != '\t') {
                    return fail(Status::BadRequest);
                }
                if (++line_len_ > limits_->max_chunk_line) return fail(Status::BadRequest);
                break;
            case State::ext:
                if (c == '\r') {
                    state_ = State::size_lf;
                } else if (!http::is_field_char(uc)) {
                    return fail(Status::BadRequest);  // CTL, bare LF, NUL
                }
                if (c != '\r' && ++line_len_ > limits_->max_chunk_line)
                    return fail(Status::BadRequest);
                break;
            case State::size_lf:
                if (c != '\n') return fail(Status::BadRequest);
                line_len_ = 0;
                digits_ = 0;
                if (chunk_left_ == 0) {
                    state_ = State::trailer_start;  // last-chunk
                } else {
                    if (chunk_left_ > max_body_ - dropped_ - write_)
                        return fail(Status::PayloadTooLarge);
                    state_ = State::data;
                }
                break;
            case State::data_cr:
                if (c != '\r') return fail(Status::BadRequest);
                state_ = State::data_lf;
                break;
            case State::data_lf:
                if (c != '\n') return fail(Status::BadRequest);
                state_ = State::size;
                break;
            case State::trailer_start:
                if (c == '\r') {
                    state_ = State::final_lf;
                } else if (http::is_tchar(uc)) {
                    if (++trailer_count_ > limits_->max_headers) {
                        return fail(Status::RequestHeaderFieldsTooLarge);
                    }
                    state_ = State::trailer_name;
                } else {
                    return fail(Status::BadRequest);  // obs-fold, empty name, bad byte
                }
                break;
            case State::trailer_name:
                if (c == ':') {
                    state_ = State::trailer_value;
                } else if (!http::is_tchar(uc)) {
                    return fail(Status::BadRequest);
                }
                break;
            case State::trailer_value:
                if (c == '\r') {
                    state_ = State::trailer_lf;
                } else if (!http::is_field_char(uc)) {
                    return fail(Status::BadRequest);
                }
                break;
            case State::trailer_lf:
                if (c != '\n') return fail(Status::BadRequest);
                state_ = State::trailer_start;
                break;
            case State::final_lf:
                if (c != '\n') return fail(Status::BadRequest);
                state_ = State::done;
                return Result::done;
            case State::data:
            case State::done:
                break;
        }
        // Only the bytes of trailer field lines count against the header-section limit.
        const bool trailer_byte = before == State::trailer_name || before == State::trailer_value ||
                                  before == State::trailer_lf ||
                                  (before == State::trailer_start && c != '\r');
        if (trailer_byte) {
            if (++trailer_bytes_ > limits_->max_header_bytes)
                return fail(Status::RequestHeaderFieldsTooLarge);
            if (trailers_ && c != '\n') trailers_->push_back(c == '\r' ? '\n' : c);
        }
    }
    return state_ == State::done ? Result::done : Result::need_more;
}

}  // namespace vela
