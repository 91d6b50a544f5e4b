// The vela command.
//   vela new NAME [--dir DIR]   writes a project that builds against the installed vela
//   vela --help | --version
//
// The project's files are the templates of tools/vela/templates, compiled into this program
// (vela_templates.hpp), with @NAME@ replaced by the project's name and @VELA_VERSION@ by
// vela's MAJOR.MINOR version; in paths, a leading "dot." becomes "." and a trailing ".in" is
// dropped (so the repository's formatter and git ignore rules leave the templates alone).
//
// After writing, it prints the commands that build, test and run the project, with
// -DCMAKE_PREFIX_PATH=<prefix> when vela is installed in a prefix CMake does not search by
// itself (found from where this program runs: <prefix>/bin/vela).
//
// Exit codes: 0 done, 1 the files could not be written, 2 a bad command line, name or
// directory (one line on stderr).

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "vela_templates.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kUsage =
    "usage: vela new NAME [--dir DIR]\n"
    "  Writes a new vela project NAME into DIR (default: ./NAME), which must not exist or\n"
    "  be empty: CMakeLists.txt, src/ (one JSON route; /openapi.json, Swagger UI at /docs,\n"
    "  /health, /ready, /metrics; an access log), tests/ (GoogleTest with\n"
    "  vela::testing::Client), NAME.toml (listens on 127.0.0.1:8080), a Dockerfile and\n"
    "  deploy/NAME.service. Then prints the commands that build, test and run it.\n"
    "  NAME: a lowercase letter, then lowercase letters, digits, '_' or '-' (at most 64).\n"
    "options:\n"
    "  --dir DIR       where to write the project\n"
    "  -h, --help      print this text and exit\n"
    "  --version       print vela's version and exit\n";

// A mistake on the command line: one line on stderr, exit code 2.
[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "vela: %s (see vela --help)\n", message.c_str());
    std::exit(2);
}

// Names CMake reserves for its own targets (a project target of that name fails to configure).
constexpr std::array<std::string_view, 10> kReservedNames = {
    "all",  "clean",   "edit_cache",     "help",         "install", "list_install_components",
    "test", "package", "package_source", "rebuild_cache"};

// Why `name` cannot name a project (it becomes a CMake target, a file name, a systemd unit and
// a Docker image), or "" when it can.
std::string name_problem(std::string_view name) {
    if (name.empty()) return "the project name is empty";
    if (name.size() > 64) return "the project name is longer than 64 characters";
    if (name[0] < 'a' || name[0] > 'z')
        return "invalid project name '" + std::string(name) +
               "': it must start with a lowercase letter";
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok)
            return "invalid project name '" + std::string(name) +
                   "': use lowercase letters, digits, '_' and '-' only";
    }
    if (std::find(kReservedNames.begin(), kReservedNames.end(), name) != kReservedNames.end())
        return "invalid project name '" + std::string(name) + "': CMake reserves it for a target";
    return {};
}

// `text` with every `from` replaced by `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0;;) {
        const std::size_t hit = text.find(from, pos);
        if (hit == std::string_view::npos) {
            out.append(text.substr(pos));
            return out;
        }
        out.append(text.substr(pos, hit - pos)).append(to);
        pos = hit + from.size();
    }
}

// The project-relative path a template is written to.
std::string output_path(std::string_view template_path, std::string_view name) {
    std::string path = replace_all(template_path, "@NAME@", name);
    const std::size_t slash = path.rfind('/');
    const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
    if (path.compare(base, 4, "dot.") == 0) path.erase(base, 3);
    if (path.size() > 3 && path.ends_with(".in")) path.resize(path.size() - 3);
    return path;
}

struct Options {
    std::string name;
    std::string dir;
};

Options parse_new(int argc, char** argv) {
    Options o;
    bool have_name = false;
    for (int i = 2; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
            std::exit(0);
        } else if (arg == "--dir" || arg.starts_with("--dir=")) {
            if (arg != "--dir") {
                o.dir = std::string(arg.substr(6));
            } else if (i + 1 < argc) {
                o.dir = argv[++i];
            } else {
                usage_error("missing value for --dir");
            }
            if (o.dir.empty()) usage_error("--dir needs a directory");
        } else if (arg.starts_with("-") && arg != "-") {
            usage_error("unknown option '" + std::string(arg) + "'");
        } else if (have_name) {
            usage_error("one project name expected, got '" + o.name + "' and '" + std::string(arg) +
                        "'");
        } else {
            o.name = std::string(arg);
            have_name = true;
        }
    }
    if (!have_name) usage_error("vela new needs a project name");
    if (std::string problem = name_problem(o.name); !problem.empty()) usage_error(problem);
    if (o.dir.empty()) o.dir = o.name;
    return o;
}

// Refuses a directory that exists and is not empty, or a path that is not a directory.
void check_directory(const fs::path& dir) {
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (!fs::exists(st)) return;
    if (!fs::is_directory(st)) usage_error("'" + dir.string() + "' exists and is not a directory");
    if (!fs::is_empty(dir, ec) || ec)
        usage_error("directory '" + dir.string() + "' is not empty; choose another with --dir");
}

// Writes every template below `dir`; false (with the reason on stderr) when a file fails.
bool write_project(const Options& o) {
    const fs::path dir(o.dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        std::fprintf(stderr, "vela: cannot create '%s': %s\n", dir.c_str(), ec.message().c_str());
        return false;
    }
    for (const vela_cli::Template& t : vela_cli::templates) {
        const fs::path file = dir / output_path(t.path, o.name);
        fs::create_directories(file.parent_path(), ec);
        std::string text = replace_all(t.text, "@NAME@", o.name);
        text = replace_all(text, "@VELA_VERSION@", VELA_CLI_COMPAT_VERSION);
        std::ofstream out(file, std::ios::binary);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();
        if (ec || !out) {
            std::fprintf(stderr, "vela: cannot write '%s'\n", file.c_str());
            return false;
        }
    }
    return true;
}

// The prefix this program is installed in (<prefix>/bin/vela beside
// <prefix>/<libdir>/cmake/vela/velaConfig.cmake), or empty when it runs from elsewhere (a
// build tree).
fs::path install_prefix() {
    std::error_code ec;
    const fs::path exe = fs::canonical("/proc/self/exe", ec);
    if (ec) return {};
    fs::path prefix = exe.parent_path();
    for (const auto& part : fs::path(VELA_CLI_BINDIR)) {
        if (part.empty() || part == ".") continue;
        if (prefix.filename() != part) return {};
        prefix = prefix.parent_path();
    }
    for (const char* libdir : {VELA_CLI_LIBDIR, "lib", "lib64"})
        if (fs::exists(prefix / libdir / "cmake/vela/velaConfig.cmake", ec)) return prefix;
    return {};
}

// `s` as one shell word.
std::string shell_quote(const std::string& s) {
    const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("/._-+=:@,").find(c) != std::string_view::npos;
    });
    return plain ? s : "'" + replace_all(s, "'", "'\\''") + "'";
}

int run_new(int argc, char** argv) {
    const Options o = parse_new(argc, argv);
    check_directory(o.dir);
    if (!write_project(o)) return 1;
    // find_package(vela) looks in /usr and /usr/local by itself; another prefix is named.
    std::string configure = "cmake -S . -B build -G Ninja";
    const fs::path prefix = install_prefix();
    if (!prefix.empty() && prefix != "/usr" && prefix != "/usr/local")
        configure += " -DCMAKE_PREFIX_PATH=" + shell_quote(prefix.string());
    std::printf(
        "created %s in %s\n"
        "  cd %s && %s && cmake --build build && ctest --test-dir build\n"
        "  ./build/%s    (then: curl localhost:8080/hello/you; Swagger UI: "
        "http://localhost:8080/docs)\n",
        o.name.c_str(), o.dir.c_str(), shell_quote(o.dir).c_str(), configure.c_str(),
        o.name.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view command = argc > 1 ? argv[1] : "";
    if (command == "new") return run_new(argc, argv);
    if (command == "-h" || command == "--help") {
        std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
        return 0;
    }
    if (command == "--version") {
        std::printf("vela %s\n", VELA_CLI_VERSION);
        return 0;
    }
    if (command.empty()) usage_error("a command is needed: vela new NAME");
    usage_error("unknown command '" + std::string(command) + "'");
}
