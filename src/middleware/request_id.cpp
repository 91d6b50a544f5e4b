#include "vela/middleware/request_id.hpp"

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "vela/crypto/crypto.hpp"

namespace vela {

namespace detail {
struct RequestIdState {
    RequestIdOptions options;
};
}  // namespace detail

namespace {

constexpr std::size_t kIdBytes = 12;  // 96 bits -> 16 base64url characters
constexpr std::size_t kIdChars = 16;
constexpr std::size_t kBatch = 4080;  // random bytes drawn per RAND_bytes call (340 ids)

bool id_char(char c) noexcept {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    switch (c) {
        case '-':
        case '.':
        case '_':
        case '~':
        case ':':
        case '+':
        case '/':
        case '=':
        case '@':
            return true;
        default:
            return false;
    }
}

bool token_char(char c) noexcept {  // RFC 9110 5.6.2 tchar
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A forked child must not hand out the ids its parent's buffer still holds.
std::atomic<unsigned> g_fork_generation{0};
void on_fork_child() noexcept { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

// Random bytes for ids, drawn from the CSPRNG in batches: one RAND_bytes call per 340 ids
// instead of one per id.
struct RandomPool {
    std::string bytes;
    std::size_t pos = 0;
    unsigned generation = 0;

    const unsigned char* take() {
        const unsigned gen = g_fork_generation.load(std::memory_order_relaxed);
        if (pos + kIdBytes > bytes.size() || gen != generation) {
            static const int registered = ::pthread_atfork(nullptr, nullptr, on_fork_child);
            (void)registered;
            bytes = crypto::random_bytes(kBatch);
            pos = 0;
            generation = gen;
        }
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + pos;
        pos += kIdBytes;
        return p;
    }
};

void fill_id(char* out) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    thread_local RandomPool pool;
    const unsigned char* in = pool.take();
    for (std::size_t i = 0; i < kIdBytes; i += 3, out += 4) {
        const unsigned v = (unsigned{in[i]} << 16) | (unsigned{in[i + 1]} << 8) | in[i + 2];
        out[0] = kAlphabet[(v >> 18) & 63];
        out[1] = kAlphabet[(v >> 12) & 63];
        out[2] = kAlphabet[(v >> 6) & 63];
        out[3] = kAlphabet[v & 63];
    }
}

}  // namespace

bool valid_request_id(std::string_view id, std::size_t max_length) noexcept {
    if (id.empty() || id.size() > max_length) return false;
    for (char c : id)
        if (!id_char(c)) return false;
    return true;
}

std::string generate_request_id() {
    std::string id(kIdChars, '\0');
    fill_id(id.data());
    return id;
}

RequestId::RequestId(RequestIdOptions options) {
    if (options.header.empty()) throw std::invalid_argument("request_id: the header name is empty");
    for (char c : options.header)
        if (!token_char(c))
            throw std::invalid_argument("request_id: '" + options.header +
                                        "' is not a valid header name");
    if (options.max_length < 1 || options.max_length > 1024)
        throw std::invalid_argument("request_id: max_length must be between 1 and 1024");
    state_ =
        std::make_shared<const detail::RequestIdState>(detail::RequestIdState{std::move(options)});
}

void RequestId::start(Request& req) const {
    const RequestIdOptions& o = state_->options;
    if (o.trust_incoming) {
        std::string_view in = req.header(o.header);
        if (valid_request_id(in, o.max_length)) {
            req.set_attribute(kRequestIdAttribute, in);
            return;
        }
    }
    if (o.generator) {
        std::string id = o.generator();
        if (!valid_request_id(id, 1024))
            throw std::runtime_error("request_id: the generator returned an invalid id");
        req.set_attribute(kRequestIdAttribute, id);
        return;
    }
    char id[kIdChars];
    fill_id(id);
    req.set_attribute(kRequestIdAttribute, std::string_view(id, kIdChars));
}

void RequestId::finish(const Request& req, Response& res) const {
    const RequestIdOptions& o = state_->options;
    if (!o.echo) return;
    std::string_view id = request_id(req);
    if (id.empty() || !res.header(o.header).empty()) return;
    res.add_header(o.header, id);
}

Task<Response> RequestId::around(Request& req, Next next) const {
    start(req);
    Response res = co_await next();
    finish(req, res);
    co_return res;
}

RequestId request_id(RequestIdOptions options) { return RequestId(std::move(options)); }

std::string_view request_id(const Request& req) noexcept {
    std::optional<std::string_view> id = req.attribute(kRequestIdAttribute);
    return id ? *id : std::string_view();
}

}  // namespace vela
