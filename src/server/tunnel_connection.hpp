#pragma once
// The driver of a tunnel (vela/server/tunnel.hpp): two transports, each the IoSink of its own
// side, bytes read on one side appended to the other side's output.

#include <chrono>
#include <cstdint>
#include <memory>

#include "vela/net/transport.hpp"
#include "worker.hpp"

namespace vela::detail {

class TunnelConnection final : public Connection {
  public:
    /// Joins `client` (the server's connection after its 101) to `other`.
    TunnelConnection(ServerWorker& worker, net::Transport&& client,
                     std::unique_ptr<net::Transport> other, std::chrono::milliseconds idle,
                     std::shared_ptr<void> hold);
    ~TunnelConnection() override;
    /// Registers both sides and passes on the bytes each already holds.
    void start();
    void drain() override { close_both(); }
    void force_close() override { close_both(); }

  private:
    /// One direction's source: its transport, and the other side it feeds.
    struct Side final : tls::StreamOwner {
        Side(TunnelConnection& owner, net::Transport&& t) : owner(owner), t(std::move(t)) {}
        Buffer& read_buffer() override { return t.input(); }
        bool on_read(ssize_t n) override { return owner.side_read(*this, n); }
        void on_read_none() override { t.release_input_if_empty(); }
        void on_write_ready() override { owner.side_writable(*this); }
        bool on_handshake(std::string_view) override { return true; }

        TunnelConnection& owner;
        net::Transport t;
        Side* peer = nullptr;
        bool eof = false;     // this side ended its direction (FIN / close_notify)
        bool paused = false;  // reading stopped: the peer's output is over the high-water mark
        bool shut = false;    // our write direction toward this side is shut down
    };

    // The Connection (StreamOwner) role is only the list entry; the sides do the I/O.
    bool on_handshake(std::string_view) override { return true; }

    bool side_read(Side& from, ssize_t n);
    void side_writable(Side& to);
    void forward(Side& from);
    bool flush(Side& to);
    static bool tls_pending(const Side& side) noexcept;
    void close_both() noexcept;
    static void timer_fired(TimerWheel::Entry* e);
    void on_timer();

    ServerWorker& worker_;
    Side a_;  // the client
    Side b_;  // the upstream
    std::uint64_t idle_ms_;
    std::uint64_t last_ms_ = 0;
    bool closed_ = false;
    std::shared_ptr<void> hold_;  // vela::tunnel()'s, released with the tunnel
};

}  // namespace vela::detail
