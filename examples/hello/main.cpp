// The smallest useful vela app: plaintext, a path parameter and an async route.
//   hello [--port N] [--threads N]

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include <vela/vela.hpp>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    unsigned port = 8080, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--port")) port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--threads"))
            threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    }

    vela::App app;
    app.get("/", [] { return "Hello, World!"; });
    app.get("/users/{id}", [](vela::Request& r) { return "User " + std::string(r.param("id")); });
    app.get("/slow", []() -> vela::Task<vela::Response> {
        co_await vela::sleep(10ms);
        co_return "done";
    });
    return app.listen(static_cast<std::uint16_t>(port)).run(threads);
}
