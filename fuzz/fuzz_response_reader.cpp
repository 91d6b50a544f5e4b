// Feeds arbitrary bytes to vela::testing's response reader (src/testing/response_reader.cpp)
// whole and in pieces chosen by the input, and checks that it never crashes, that it ends in
// done or error at the end of input, and that both ways read the same status and body.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "testing/response_reader.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

struct Out {
    bool failed = false;
    int status = 0;
    std::string body;
};

// `step` bytes at a time (0: all at once); the first input byte chose HEAD or not.
Out read(std::string_view bytes, std::size_t step, bool head) {
    vela::testing::detail::ResponseReader r(head);
    Out o;
    std::size_t fed = 0;
    for (int guard = 0; guard < 1 << 20; ++guard) {
        const bool eof = fed == bytes.size();
        switch (r.next(eof)) {
            case vela::testing::detail::ResponseReader::Step::head:
                o.status = r.head().status();
                check(o.status >= 100 && o.status <= 999);
                break;
            case vela::testing::detail::ResponseReader::Step::piece:
                o.body += r.take_piece();
                break;
            case vela::testing::detail::ResponseReader::Step::done:
                return o;
            case vela::testing::detail::ResponseReader::Step::error:
                check(!r.error().empty());
                o.failed = true;
                return o;
            case vela::testing::detail::ResponseReader::Step::need_more: {
                check(!eof);  // at the end of input the reader must decide
                const std::size_t n = step ? std::min(step, bytes.size() - fed) : bytes.size();
                r.append(bytes.substr(fed, n));
                fed += n;
                break;
            }
        }
    }
    check(false);  // no progress
    return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const bool head = data[0] & 1;
    const std::size_t step = 1 + data[1] % 7;
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
    const Out whole = read(bytes, 0, head);
    const Out pieces = read(bytes, step, head);
    check(whole.failed == pieces.failed);
    if (!whole.failed) {
        check(whole.status == pieces.status);
        check(whole.body == pieces.body);
    }
    return 0;
}
