#pragma once
// Listening sockets handed over at start (systemd's socket activation, or a predecessor's hot
// restart), readiness notices, and starting a successor with our sockets.
//
// The protocol is systemd's (sd_listen_fds(3)): LISTEN_PID is our pid, LISTEN_FDS counts the
// sockets, which are fds 3, 4, ...; LISTEN_FDNAMES (optional) names them, ':'-separated. A
// predecessor names its sockets "vela.<endpoint index>" so that an endpoint on port 0 gets
// its own socket back. VELA_RESTART_FD is a pipe the successor writes one byte to once it
// accepts; NOTIFY_SOCKET is systemd's sd_notify(3) datagram socket.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "vela/net/socket.hpp"

namespace vela::detail {

/// One listening socket handed over at start.
struct PassedSocket {
    /// The descriptor (close-on-exec set once taken).
    int fd = -1;
    /// Where it listens (from getsockname).
    net::Endpoint where;
    /// Its LISTEN_FDNAMES name; empty when none was given.
    std::string name;
};

/// The sockets passed to this process (LISTEN_FDS with LISTEN_PID == getpid()) that no server
/// took yet: read once (the variables are then removed, so a child gets none); a later call
/// gets what return_passed_sockets() gave back. Descriptors that are not listening stream
/// sockets are left alone and reported by one warning each.
std::vector<PassedSocket> take_passed_sockets();
/// Gives back the sockets a server did not want, for the next server of this process.
void return_passed_sockets(std::vector<PassedSocket> unused);

/// Whether `ep` (as configured, port 0 allowed) is where `s` listens: by its name
/// "vela.<index>" when it has one, else by kind, address and port.
bool passed_socket_matches(const PassedSocket& s, const net::Endpoint& ep, std::size_t index);

/// Tells whoever started us that we accept: writes to VELA_RESTART_FD (a predecessor; read at
/// the first take_passed_sockets()) and sends READY=1 (with MAINPID= after a hot restart) to
/// NOTIFY_SOCKET. Once per process; later calls do nothing.
void announce_ready();

/// Sends `state` ("STOPPING=1", ...) to NOTIFY_SOCKET; nothing without one.
void notify_service_manager(std::string_view state) noexcept;

/// Starts this program again (/proc/self/exe's path, the same arguments and environment)
/// with `fds` as its fds 3.. (LISTEN_FDS; `names` gives their LISTEN_FDNAMES) and `ready_fd`
/// as its VELA_RESTART_FD. Returns the child's pid; throws std::system_error when the fork
/// fails.
pid_t spawn_successor(const std::vector<int>& fds, const std::vector<std::string>& names,
                      int ready_fd);

}  // namespace vela::detail
