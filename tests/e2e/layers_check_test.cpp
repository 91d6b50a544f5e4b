// scripts/check-layers, which CI runs: the tree passes, and a copy of it with a wrong-way
// include (a lower module including a higher one's header, or another module's private
// header) fails naming the file, the line and the module it would need.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/process.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kScript = std::string(VELA_SOURCE_DIR) + "/scripts/check-layers";

class LayersCheck : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have("python3")) GTEST_SKIP() << "python3 not installed";
        dir_ = fs::temp_directory_path() / ("vela-layers-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        const fs::path src(VELA_SOURCE_DIR);
        fs::copy_file(src / "CMakeLists.txt", dir_ / "CMakeLists.txt");
        fs::copy(src / "src", dir_ / "src", fs::copy_options::recursive);
        fs::copy(src / "include", dir_ / "include", fs::copy_options::recursive);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    // Appends `line` to the copy's `file`.
    void add_line(const std::string& file, const std::string& line) {
        std::ofstream(dir_ / file, std::ios::app) << line << "\n";
    }
    Ran check() { return run_command(kScript + " --root " + dir_.string() + " 2>&1"); }

    fs::path dir_;
};

TEST_F(LayersCheck, TheTreePasses) {
    const Ran r = run_command(kScript + " 2>&1");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(check().status, 0);  // and so does the copy, untouched
}

TEST_F(LayersCheck, ALowerModuleIncludingAHigherOneFails) {
    add_line("src/base/buffer.cpp", "#include \"vela/web/app.hpp\"");
    add_line("include/vela/http/request.hpp", "#include <vela/server/server.hpp>");
    const Ran r = check();
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("src/base/buffer.cpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("module base includes vela/web/app.hpp, but does not link vela_web"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("include/vela/http/request.hpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("does not link vela_server"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2 include(s) against the layering"), std::string::npos) << r.out;
}

// The App's core knows no middleware and no operations feature, and the two know nothing of
// each other: each is plugged into the App through the web module's interfaces.
TEST_F(LayersCheck, TheCoreIncludingMiddlewareOrOperationsFails) {
    add_line("src/web/app.cpp", "#include \"vela/middleware/request_id.hpp\"");
    add_line("include/vela/web/app.hpp", "#include \"vela/ops/config.hpp\"");
    add_line("src/middleware/cors.cpp", "#include <vela/ops/metrics.hpp>");
    add_line("src/ops/health.cpp", "#include \"ops/config_schema.hpp\"");  // its own: fine
    const Ran r = check();
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("src/web/app.cpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("module web includes vela/middleware/request_id.hpp, but does not "
                         "link vela_middleware"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("include/vela/web/app.hpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("module web includes vela/ops/config.hpp, but does not link vela_ops"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("module middleware includes vela/ops/metrics.hpp, but does not link "
                         "vela_ops"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("src/ops/health.cpp"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("3 include(s) against the layering"), std::string::npos) << r.out;
}

// Bridges and the umbrella join modules: a module reaching one (even one whose parts it
// links) is refused; only the umbrella target's own headers may include them.
TEST_F(LayersCheck, AModuleIncludingAnUmbrellaHeaderFails) {
    add_line("src/ops/metrics.cpp", "#include \"vela/pg_metrics.hpp\"");
    add_line("include/vela/middleware/session.hpp", "#include <vela/redis_store.hpp>");
    add_line("src/testing/client.cpp", "#include \"vela/vela.hpp\"");
    const Ran r = check();
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("src/ops/metrics.cpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("module ops includes vela/pg_metrics.hpp, an umbrella header (only "
                         "the vela target may)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("include/vela/middleware/session.hpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("module middleware includes vela/redis_store.hpp, an umbrella header"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("module testing includes vela/vela.hpp, an umbrella header"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("3 include(s) against the layering"), std::string::npos) << r.out;
}

TEST_F(LayersCheck, AnotherModulesPrivateHeaderFails) {
    add_line("src/testing/client.cpp", "#include \"server/worker.hpp\"");
    const Ran r = check();
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("src/testing/client.cpp:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("a private header of module server"), std::string::npos) << r.out;
}

TEST_F(LayersCheck, UmbrellaHeadersMayBridgeWhatTheUmbrellaLinks) {
    add_line("include/vela/vela.hpp", "#include <vela/db/postgres.hpp>");
    EXPECT_EQ(check().status, 0);
    add_line("include/vela/vela.hpp", "#include <vela/testing/client.hpp>");  // not in vela
    const Ran r = check();
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("module vela includes vela/testing/client.hpp"), std::string::npos)
        << r.out;
}

}  // namespace
}  // namespace vela::e2e
