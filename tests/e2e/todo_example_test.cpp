// End-to-end: the examples/todo app as a user runs it, driven with curl: register (a session
// cookie), add todos through the form and the JSON API, attach a file (multipart, streamed),
// download it, CORS preflight, problem+json for the API, rate-limited sign-in, access log
// lines with request ids.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/process.hpp"

#ifdef VELA_TODO_BINARY

namespace vela::e2e {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A port nobody listens on right now.
std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    ::close(fd);
    return ntohs(sa.sin_port);
}

class TodoApp : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("vela-todo-" + std::to_string(::getpid()) + "-" + std::to_string(free_port()));
        std::filesystem::create_directories(dir_);
        port_ = free_port();
        const std::string log = (dir_ / "access.log").string();
        const std::string data = (dir_ / "data").string();
        const std::string port = std::to_string(port_);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 1);
            ::execl(VELA_TODO_BINARY, VELA_TODO_BINARY, "--port", port.c_str(), "--threads", "2",
                    "--data", data.c_str(), "--access-log", log.c_str(), nullptr);
            ::_exit(127);
        }
        for (int i = 0; i < 200; ++i) {  // up to 10 s
            Client c = Client::tcp(port_);
            if (c.connected()) return;
            std::this_thread::sleep_for(Ms{50});
        }
        FAIL() << "the todo example did not start";
    }
    void TearDown() override {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
        }
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::string curl(const std::string& args) {
        return shell("curl -sS --max-time 10 -b " + jar() + " -c " + jar() + " " + args + " 2>&1");
    }
    std::string url(std::string_view path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    std::string jar() const { return (dir_ / "jar").string(); }

    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

TEST_F(TodoApp, AWholeVisit) {
    // Not signed in: the sign-in page, and the API says 401 as problem+json.
    EXPECT_NE(curl(url("/")).find("<form method=\"post\" action=\"/login\">"), std::string::npos);
    const std::string anon = curl("-i " + url("/api/todos"));
    EXPECT_NE(anon.find("HTTP/1.1 401"), std::string::npos) << anon;
    EXPECT_NE(anon.find("application/problem+json"), std::string::npos);
    EXPECT_NE(anon.find("\"detail\":\"sign in first\""), std::string::npos);

    // Register: a session cookie (HttpOnly, SameSite=Lax) and a redirect home.
    const std::string reg = curl("-i -d 'user=ann&password=correct-horse' " + url("/register"));
    EXPECT_NE(reg.find("HTTP/1.1 303"), std::string::npos) << reg;
    EXPECT_NE(reg.find("Set-Cookie: vela.sid="), std::string::npos);
    EXPECT_NE(reg.find("HttpOnly"), std::string::npos);
    EXPECT_NE(reg.find("X-Request-Id: "), std::string::npos);
    EXPECT_NE(reg.find("X-Content-Type-Options: nosniff"), std::string::npos);

    // A todo through the HTML form, one through the JSON API.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' --data-urlencode 'title=Buy milk & eggs' " +
                   url("/todos")),
              "303");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "
                   "'{\"title\":\"Write docs\"}' " +
                   url("/api/todos")),
              "201");
    EXPECT_EQ(curl(url("/api/todos")),
              "[{\"id\":1,\"title\":\"Buy milk & eggs\",\"done\":false},"
              "{\"id\":2,\"title\":\"Write docs\",\"done\":false}]");
    EXPECT_NE(curl(url("/")).find("Buy milk &amp; eggs"), std::string::npos);  // escaped

    // A JSON body without the required title: 400 problem+json naming it.
    const std::string bad =
        curl("-i -H 'Content-Type: application/json' -d '{}' " + url("/api/todos"));
    EXPECT_NE(bad.find("HTTP/1.1 400"), std::string::npos) << bad;
    EXPECT_NE(bad.find("title"), std::string::npos);

    // PATCH, then the toggle form.
    EXPECT_EQ(curl("-X PATCH -H 'Content-Type: application/json' -d '{\"done\":true}' " +
                   url("/api/todos/2")),
              "{\"id\":2,\"title\":\"Write docs\",\"done\":true}");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d '' " + url("/todos/1/toggle")), "303");

    // An attachment: 300 KiB streamed as multipart, then downloaded under its own name.
    const std::string upload = (dir_ / "notes.bin").string();
    {
        std::ofstream out(upload, std::ios::binary);
        for (unsigned i = 0; i < 300 * 1024; ++i) out.put(static_cast<char>((i * 7919u) % 251));
    }
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -F 'file=@" + upload + ";filename=notes.bin' " +
                   url("/todos/1/attachment")),
              "303");
    const std::string got = (dir_ / "got.bin").string();
    const std::string headers = curl("-D - -o " + got + " " + url("/todos/1/attachment"));
    EXPECT_NE(headers.find("filename=\"notes.bin\""), std::string::npos) << headers;
    EXPECT_EQ(slurp(got), slurp(upload));
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + url("/todos/9/attachment")), "404");

    // CORS preflight for the API from the configured origin, with credentials.
    const std::string pre = curl(
        "-i -X OPTIONS -H 'Origin: http://localhost:5173' -H "
        "'Access-Control-Request-Method: DELETE' " +
        url("/api/todos/1"));
    EXPECT_NE(pre.find("HTTP/1.1 204"), std::string::npos) << pre;
    EXPECT_NE(pre.find("Access-Control-Allow-Origin: http://localhost:5173"), std::string::npos);
    EXPECT_NE(pre.find("Access-Control-Allow-Credentials: true"), std::string::npos);
    const std::string other = curl("-i -H 'Origin: https://evil.example' " + url("/api/todos"));
    EXPECT_EQ(other.find("Access-Control-Allow-Origin"), std::string::npos) << other;

    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -X DELETE " + url("/api/todos/1")), "204");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -X DELETE " + url("/api/todos/1")), "404");

    // Log out: the session is gone.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d '' " + url("/logout")), "303");
    EXPECT_NE(curl("-i " + url("/api/todos")).find("HTTP/1.1 401"), std::string::npos);

    // Log in again: the todos are still there.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d 'user=ann&password=correct-horse' " +
                   url("/login")),
              "303");
    EXPECT_EQ(curl(url("/api/todos")), "[{\"id\":2,\"title\":\"Write docs\",\"done\":true}]");

    // Wrong passwords hit the rate limit of the sign-in routes (5 a minute per address; two
    // were spent above).
    std::string last;
    for (int i = 0; i < 4; ++i)
        last = curl("-o /dev/null -w '%{http_code}' -d 'user=ann&password=wrong-password' " +
                    url("/login"));
    EXPECT_EQ(last, "429");

    // Every request is in the access log, with its request id.
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    const std::string log = slurp((dir_ / "access.log").string());
    EXPECT_NE(log.find("\"POST /register HTTP/1.1\" 303"), std::string::npos) << log;
    EXPECT_NE(log.find("\"GET /api/todos HTTP/1.1\" 401"), std::string::npos);
    EXPECT_NE(log.find("\"POST /login HTTP/1.1\" 429"), std::string::npos);
}

}  // namespace
}  // namespace vela::e2e

#endif  // VELA_TODO_BINARY
