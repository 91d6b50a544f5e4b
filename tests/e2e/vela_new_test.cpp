// `vela new`: the command that writes a project (tools/vela), run as a process. Whether the
// written project builds against the installed packages is scripts/check-package's job.

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "e2e/process.hpp"

#ifdef VELA_CLI_BINARY

namespace {

namespace fs = std::filesystem;
using vela::e2e::run_command;

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
  public:
    TempDir() {
        std::string templ = (fs::temp_directory_path() / "vela-new-XXXXXX").string();
        if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// Runs `vela ARGS` with stderr folded into the output.
vela::e2e::Ran vela(const std::string& args) {
    return run_command(std::string(VELA_CLI_BINARY) + " " + args + " 2>&1");
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Every regular file below `dir`, relative to it.
std::set<std::string> files_below(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

TEST(VelaNew, WritesTheProjectWithItsName) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "shop";
    const auto r = vela("new shop --dir " + dir.string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("created shop"), std::string::npos) << r.out;

    const std::set<std::string> expected = {
        ".dockerignore", ".gitignore",          "CMakeLists.txt",    "Dockerfile",
        "README.md",     "deploy/shop.service", "shop.toml",         "src/app.cpp",
        "src/app.hpp",   "src/main.cpp",        "tests/app_test.cpp"};
    EXPECT_EQ(files_below(dir), expected);

    const std::string cmake = read(dir / "CMakeLists.txt");
    EXPECT_NE(cmake.find("project(shop "), std::string::npos);
    EXPECT_NE(cmake.find("find_package(vela 0.1 REQUIRED)"), std::string::npos);
    EXPECT_NE(cmake.find("vela::testing"), std::string::npos);
    EXPECT_NE(read(dir / "src/main.cpp").find("\"shop.toml\""), std::string::npos);
    EXPECT_NE(read(dir / "tests/app_test.cpp").find("vela::testing::Client client(app);"),
              std::string::npos);
    const std::string unit = read(dir / "deploy/shop.service");
    EXPECT_NE(unit.find("ExecStart=/usr/local/bin/shop /etc/shop/shop.toml"), std::string::npos);
    EXPECT_NE(unit.find("DynamicUser=yes"), std::string::npos);
    EXPECT_NE(read(dir / "Dockerfile").find("libvela0.1_*.deb"), std::string::npos);
    for (const std::string& f : expected) {
        const std::string text = read(dir / f);
        EXPECT_EQ(text.find("@NAME@"), std::string::npos) << f;
        EXPECT_EQ(text.find("@VELA_VERSION@"), std::string::npos) << f;
    }
}

// `text` with every `from` replaced by `to`.
std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    for (std::size_t at; (at = text.find(from)) != std::string_view::npos;) {
        out.append(text.substr(0, at)).append(to);
        text.remove_prefix(at + from.size());
    }
    return out.append(text);
}

// The program carries every template of the source tree as it is now (embedded when built).
TEST(VelaNew, WritesEachTemplateWithTheNameAndVersionPutIn) {
    TempDir tmp;
    ASSERT_EQ(vela("new x --dir " + (tmp.path() / "x").string()).status, 0);
    const fs::path templates = fs::path(VELA_SOURCE_DIR) / "tools/vela/templates";
    EXPECT_EQ(files_below(tmp.path() / "x").size(), files_below(templates).size());
    for (const char* f : {"Dockerfile", "CMakeLists.txt", "src/main.cpp"}) {
        std::string t = read(templates / (std::string(f) + (f[0] == 's' ? ".in" : "")));
        t = replaced(replaced(t, "@NAME@", "x"), "@VELA_VERSION@", "0.1");
        EXPECT_EQ(read(tmp.path() / "x" / f), t) << f;
    }
}

TEST(VelaNew, WritesIntoTheCurrentDirectoryByDefault) {
    TempDir tmp;
    const auto r =
        run_command("cd " + tmp.path().string() + " && " + VELA_CLI_BINARY + " new my-app_2 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(fs::exists(tmp.path() / "my-app_2/my-app_2.toml"));
    EXPECT_TRUE(fs::exists(tmp.path() / "my-app_2/deploy/my-app_2.service"));
}

TEST(VelaNew, AcceptsAnEmptyDirectory) {
    TempDir tmp;
    const auto r = vela("new api --dir=" + tmp.path().string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(fs::exists(tmp.path() / "CMakeLists.txt"));
}

TEST(VelaNew, RefusesANonEmptyDirectoryAndLeavesItAlone) {
    TempDir tmp;
    std::ofstream(tmp.path() / "notes.txt") << "mine";
    const auto r = vela("new api --dir " + tmp.path().string());
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(one_line(r.out)) << r.out;
    EXPECT_NE(r.out.find("is not empty"), std::string::npos) << r.out;
    EXPECT_EQ(files_below(tmp.path()), std::set<std::string>{"notes.txt"});
    EXPECT_EQ(read(tmp.path() / "notes.txt"), "mine");
}

TEST(VelaNew, RefusesAFileAsTheDirectory) {
    TempDir tmp;
    std::ofstream(tmp.path() / "f") << "x";
    const auto r = vela("new api --dir " + (tmp.path() / "f").string());
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(one_line(r.out)) << r.out;
    EXPECT_NE(r.out.find("is not a directory"), std::string::npos) << r.out;
}

TEST(VelaNew, RefusesBadNamesWithOneLine) {
    struct Case {
        std::string_view name;
        std::string_view says;
    };
    const Case cases[] = {
        {"Shop", "must start with a lowercase letter"},
        {"1shop", "must start with a lowercase letter"},
        {"_shop", "must start with a lowercase letter"},
        {"shop.api", "use lowercase letters, digits, '_' and '-' only"},
        {"shop/api", "use lowercase letters, digits, '_' and '-' only"},
        {"sh op", "use lowercase letters, digits, '_' and '-' only"},
        {"shOp", "use lowercase letters, digits, '_' and '-' only"},
        {"test", "CMake reserves it"},
        {"install", "CMake reserves it"},
        {std::string_view("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
         "longer than 64 characters"},
        {"", "the project name is empty"},
    };
    for (const Case& c : cases) {
        TempDir tmp;
        const auto r = vela("new '" + std::string(c.name) + "' --dir " + tmp.path().string());
        EXPECT_EQ(r.status, 2) << c.name;
        EXPECT_TRUE(one_line(r.out)) << c.name << ": " << r.out;
        EXPECT_NE(r.out.find(c.says), std::string::npos) << c.name << ": " << r.out;
        EXPECT_TRUE(fs::is_empty(tmp.path())) << c.name;
    }
}

TEST(VelaNew, AcceptsTheLongestName) {
    TempDir tmp;
    const std::string name(64, 'a');
    EXPECT_EQ(vela("new " + name + " --dir " + tmp.path().string()).status, 0);
}

TEST(VelaNew, CommandLineMistakesAreOneLine) {
    const char* lines[] = {"",          "frob",          "new",         "new a b",
                           "new --dir", "new a --bogus", "new a --dir="};
    for (const char* args : lines) {
        const auto r = vela(args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_TRUE(one_line(r.out)) << args << ": " << r.out;
        EXPECT_NE(r.out.find("see vela --help"), std::string::npos) << args << ": " << r.out;
    }
}

// The lines `vela new` prints after writing the project.
std::vector<std::string> lines_of(const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(VelaNew, ThePrintedBuildCommandNeedsNoPrefixFromABuildTree) {
    TempDir tmp;
    const auto r = vela("new shop --dir " + (tmp.path() / "shop").string());
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 3u) << r.out;
    EXPECT_EQ(lines[1], "  cd " + (tmp.path() / "shop").string() +
                            " && cmake -S . -B build -G Ninja && cmake --build build && ctest "
                            "--test-dir build");
    EXPECT_NE(lines[2].find("./build/shop"), std::string::npos) << r.out;
    EXPECT_NE(lines[2].find("http://localhost:8080/docs"), std::string::npos) << r.out;
}

// Installed under a prefix CMake does not search by itself: the command names it.
TEST(VelaNew, ThePrintedBuildCommandNamesTheInstallPrefix) {
    TempDir tmp;
    const fs::path prefix = tmp.path() / "opt dir/vela";
    fs::create_directories(prefix / "bin");
    fs::create_directories(prefix / "lib/cmake/vela");
    std::ofstream(prefix / "lib/cmake/vela/velaConfig.cmake") << "# installed\n";
    fs::copy_file(VELA_CLI_BINARY, prefix / "bin/vela");
    const auto r = run_command("cd " + tmp.path().string() + " && '" +
                               (prefix / "bin/vela").string() + "' new shop 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 3u) << r.out;
    EXPECT_EQ(lines[1], "  cd shop && cmake -S . -B build -G Ninja -DCMAKE_PREFIX_PATH='" +
                            prefix.string() + "' && cmake --build build && ctest --test-dir build");

    // Without its package config beside it, the directory is not a vela prefix.
    fs::remove(prefix / "lib/cmake/vela/velaConfig.cmake");
    const auto bare = run_command("cd " + tmp.path().string() + " && '" +
                                  (prefix / "bin/vela").string() + "' new other 2>&1");
    ASSERT_EQ(bare.status, 0) << bare.out;
    EXPECT_EQ(bare.out.find("CMAKE_PREFIX_PATH"), std::string::npos) << bare.out;
}

// A development default: the generated configuration listens on this machine only, and the
// production files set the address themselves.
TEST(VelaNew, ListensOnLoopbackUnlessProductionSaysOtherwise) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "shop";
    ASSERT_EQ(vela("new shop --dir " + dir.string()).status, 0);
    const std::string toml = read(dir / "shop.toml");
    EXPECT_NE(toml.find("\nlisten = [\"127.0.0.1:8080\"]\n"), std::string::npos) << toml;
    EXPECT_EQ(toml.find("\nlisten = [\"0.0.0.0"), std::string::npos) << toml;
    EXPECT_NE(read(dir / "src/main.cpp").find("app.listen(\"127.0.0.1:8080\");"),
              std::string::npos);
    EXPECT_NE(read(dir / "Dockerfile").find("ENV VELA_SERVER_LISTEN=0.0.0.0:8080"),
              std::string::npos);
    EXPECT_NE(read(dir / "deploy/shop.service").find("Environment=VELA_SERVER_LISTEN=0.0.0.0:8080"),
              std::string::npos);
    EXPECT_NE(read(dir / "README.md").find("VELA_SERVER_LISTEN=0.0.0.0:8080"), std::string::npos);
    // The operations endpoints and the access log, and tests for them.
    const std::string app = read(dir / "src/app.cpp");
    for (const char* call : {"vela::openapi_spec(app", "vela::openapi_ui(app, \"/docs\")",
                             "vela::health(app)", "vela::metrics(app)"})
        EXPECT_NE(app.find(call), std::string::npos) << call;
    EXPECT_NE(read(dir / "src/main.cpp").find("vela::access_log()"), std::string::npos);
    EXPECT_NE(toml.find("access_log = true"), std::string::npos);
    const std::string tests = read(dir / "tests/app_test.cpp");
    for (const char* path : {"/openapi.json", "/docs", "/health", "/ready", "/metrics"})
        EXPECT_NE(tests.find(std::string("client.get(\"") + path + "\")"), std::string::npos)
            << path;
}

TEST(VelaNew, HelpAndVersion) {
    for (const char* args : {"--help", "-h", "new --help"}) {
        const auto r = vela(args);
        EXPECT_EQ(r.status, 0) << args;
        EXPECT_EQ(r.out.rfind("usage: vela new NAME [--dir DIR]\n", 0), 0u) << args << r.out;
    }
    const auto v = vela("--version");
    EXPECT_EQ(v.status, 0);
    EXPECT_EQ(v.out.rfind("vela 0.1.", 0), 0u) << v.out;
}

}  // namespace

#endif
