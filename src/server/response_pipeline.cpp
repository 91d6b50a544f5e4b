#include "response_pipeline.hpp"

#include "vela/base/log.hpp"

namespace vela::detail {

void file_body_failed(const ConnectionInfo& peer, std::int32_t stream) {
    if (stream)
        log::warn(
            "a file body to {}:{} (HTTP/2 stream {}) ended early: the file changed while "
            "it was sent; the stream is reset",
            peer.ip_view(), peer.port, stream);
    else
        log::warn(
            "a file body to {}:{} ended early: the file changed while it was sent; the "
            "connection is closed",
            peer.ip_view(), peer.port);
}

}  // namespace vela::detail
