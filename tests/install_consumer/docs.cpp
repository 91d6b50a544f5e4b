// Serves Swagger UI from an installed vela (scripts/check-install): prints the directory its
// files were found in, then serves /openapi.json and /docs on 127.0.0.1:PORT until SIGTERM.
//   consumer_docs PORT
#include <cstdio>
#include <string>

#include <vela/vela.hpp>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    std::printf("swagger-ui: %s\n", vela::swagger_ui_dir().c_str());
    std::fflush(stdout);
    vela::App app;
    app.get("/", [] { return "installed"; });
    vela::openapi_spec(app, {.title = "consumer", .version = "1.0.0"});
    vela::openapi_ui(app, "/docs");
    return app.listen(std::string("127.0.0.1:") + argv[1]).run(1);
}
