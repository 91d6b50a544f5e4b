#include "http1_request_body.hpp"

#include <algorithm>

#include "http1_connection.hpp"

namespace vela::detail {

void Http1RequestBody::start(const RequestParser& parser, Request& req) {
    Buffer& in = c_.t_.in;
    const ServerOptions& opt = c_.worker_.options();
    const std::size_t head = parser.head_size();
    head_.assign(in.data(), head);
    req.rebase(in.data(), head, head_.data());
    in.consume(head);
    chunked_ = parser.body_chunked();
    left_ = chunked_ ? 0 : parser.content_length();
    if (chunked_) {
        decoder_.reset(&opt.limits);
        decoder_.set_max_body(opt.limits.max_streamed_body);
    }
    done_ = !chunked_ && left_ == 0;
    error_ = Status::OK;
    hold_ = 0;
    received_ = 0;
    have_chunk_ = chunk_end_ = false;
    req.set_body_stream(this);
}

void Http1RequestBody::on_read(ssize_t n) {
    if (n <= 0 && !done_ && error_ == Status::OK)
        error_ = Status::BadRequest;  // the client went away mid-body
    arrived();
}

void Http1RequestBody::on_timeout() {
    if (!c_.t_.due(c_.deadline_ms_)) return;
    error_ = Status::RequestTimeout;
    arrived();
}

// Finds the next chunk (or the end, or an error) in the buffered bytes; false when more
// bytes must arrive first.
bool Http1RequestBody::extract() {
    if (have_chunk_) return true;
    Buffer& in = c_.t_.in;
    if (hold_) {
        in.consume(hold_);
        hold_ = 0;
    }
    if (error_ != Status::OK || done_) {
        chunk_ = {};
        chunk_end_ = true;
        have_chunk_ = true;
        return true;
    }
    if (!chunked_) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size()));
        if (n == 0) return false;
        chunk_ = std::string_view(in.data(), n);
        hold_ = n;
        left_ -= n;
        done_ = left_ == 0;
    } else {
        if (in.empty()) return false;
        const ChunkedDecoder::Result r = decoder_.feed(in.data(), in.size());
        if (r == ChunkedDecoder::Result::error) {
            error_ = decoder_.error();
            chunk_ = {};
            chunk_end_ = have_chunk_ = true;
            return true;
        }
        const std::size_t decoded = decoder_.decoded_size();
        const std::size_t raw = decoder_.raw_size();
        decoder_.drop();
        done_ = r == ChunkedDecoder::Result::done;
        if (decoded == 0 && !done_) {
            in.consume(raw);  // framing only so far
            return false;
        }
        chunk_ = std::string_view(in.data(), decoded);
        hold_ = raw;
    }
    received_ += chunk_.size();
    chunk_end_ = done_;
    have_chunk_ = true;
    return true;
}

BodyChunk Http1RequestBody::take() {
    have_chunk_ = false;
    // The chunk is a view into the input: nothing may be read into it until the next read().
    if (c_.t_.reading()) c_.t_.stop_reading();
    if (error_ != Status::OK) return BodyChunk{{}, true, error_};
    return BodyChunk{chunk_, chunk_end_, Status::OK};
}

void Http1RequestBody::wait(std::coroutine_handle<> h) {
    waiter_ = h;
    net::Transport& t = c_.t_;
    if (t.closed()) {
        error_ = Status::BadRequest;
        t.loop().defer([this] { arrived(); });
        return;
    }
    if (hold_) {  // the previous chunk's bytes go before reading more
        t.in.consume(hold_);
        hold_ = 0;
    }
    extend_deadline();
    t.arm(c_.deadline_ms_);
    // From the loop, not from here: a read at once would resume the handler inside its own
    // read(), one stack frame deeper per chunk.
    if (!t.reading() && !c_.peer_gone_) t.read_later([this] { return waiter_ && !c_.peer_gone_; });
}

// Bytes (or the end of the socket, or a timeout) for a handler waiting in read().
void Http1RequestBody::arrived() {
    extend_deadline();
    if (!waiter_ || !extract()) return;
    std::coroutine_handle<> h = std::exchange(waiter_, {});
    h.resume();
}

void Http1RequestBody::end(bool discard_input) noexcept {
    if (discard_input) {
        c_.t_.in.clear();
        hold_ = 0;
    }
    if (hold_) c_.t_.in.consume(hold_);
    hold_ = 0;
    waiter_ = {};
    have_chunk_ = false;
    std::string().swap(head_);
}

void Http1RequestBody::extend_deadline() noexcept {
    c_.deadline_ms_ = c_.t_.loop().now_ms() +
                      static_cast<std::uint64_t>(c_.worker_.options().body_timeout.count());
}

}  // namespace vela::detail
