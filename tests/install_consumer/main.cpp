// Builds against the installed headers and libraries and answers one request in-process.
#include <vela/net/socket.hpp>
#include <vela/vela.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

int main() {
    vela::App app;
    app.get("/", [] { return "installed"; });
    app.listen("127.0.0.1:0");
    app.start(1);
    int fd = vela::net::connect_tcp("127.0.0.1", app.port());
    const char req[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (fd < 0 || ::send(fd, req, sizeof req - 1, 0) < 0) return 1;
    std::string got;
    char buf[1024];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        got.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    app.stop();
    app.wait();
    return got.find("\r\n\r\ninstalled") != std::string::npos ? 0 : 1;
}
