// Templates: a folder of .mustache files compiled into one immutable set (see templates.hpp).

#include "vela/template/templates.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace vela::tmpl {

namespace fs = std::filesystem;

/// One compiled set; also the partial source of its own renders.
struct Templates::Set : PartialSource {
    struct Entry {
        Template tpl;
        fs::file_time_type mtime;
        std::uintmax_t size;
    };
    std::map<std::string, Entry, std::less<>> entries;

    const Template* find_partial(std::string_view name) const override {
        auto it = entries.find(name);
        return it == entries.end() ? nullptr : &it->second.tpl;
    }
};

namespace {

struct FileInfo {
    std::string name;
    fs::path path;
    fs::file_time_type mtime;
    std::uintmax_t size;
};

// Every template file under `dir`, by name.
std::map<std::string, FileInfo> scan(const fs::path& dir, std::string_view ext) {
    std::map<std::string, FileInfo> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec)
        throw TemplateNotFound(
            fmt::format("vela::tmpl::Templates: cannot read '{}': {}", dir.string(), ec.message()));
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const fs::directory_entry& e = *it;
        std::error_code fec;
        if (!e.is_regular_file(fec)) continue;
        std::string rel = e.path().lexically_relative(dir).generic_string();
        if (rel.size() <= ext.size() || !rel.ends_with(ext)) continue;
        rel.resize(rel.size() - ext.size());
        FileInfo f{rel, e.path(), e.last_write_time(fec), e.file_size(fec)};
        if (fec) continue;  // removed while we looked
        files.emplace(std::move(rel), std::move(f));
    }
    if (ec)
        throw TemplateNotFound(
            fmt::format("vela::tmpl::Templates: cannot read '{}': {}", dir.string(), ec.message()));
    return files;
}

std::string read_file(const fs::path& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    std::string text;
    char buf[16384];
    std::size_t n = 0;
    while (f && (n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
    if (!f || std::ferror(f.get()))
        throw TemplateNotFound(fmt::format("vela::tmpl::Templates: cannot read '{}': {}",
                                           path.string(), std::strerror(errno)));
    return text;
}

// True when `set` was built from exactly these files (same names, times and sizes).
template <class Entries>
bool same_files(const Entries& entries, const std::map<std::string, FileInfo>& files) {
    if (entries.size() != files.size()) return false;
    auto e = entries.begin();
    for (const auto& [name, f] : files) {
        if (e->first != name || e->second.mtime != f.mtime || e->second.size != f.size)
            return false;
        ++e;
    }
    return true;
}

}  // namespace

namespace {

// Compiles `files` into a set, reusing the unchanged templates of `old`.
template <class Set>
std::shared_ptr<const Set> build(const fs::path& dir, std::string_view ext,
                                 const std::map<std::string, FileInfo>& files, const Set* old) {
    auto set = std::make_shared<Set>();
    for (const auto& [name, f] : files) {
        if (old) {
            auto it = old->entries.find(name);
            if (it != old->entries.end() && it->second.mtime == f.mtime &&
                it->second.size == f.size) {
                set->entries.emplace(name, it->second);
                continue;
            }
        }
        set->entries.emplace(
            name, typename Set::Entry{Template::compile(read_file(f.path), name), f.mtime, f.size});
    }
    for (const auto& [name, e] : set->entries) {
        for (const std::string& partial : e.tpl.partial_names()) {
            if (!set->entries.count(partial))
                throw TemplateNotFound(fmt::format(
                    "vela::tmpl::Templates: template '{}' includes '{}', but there is no '{}{}' in "
                    "'{}'",
                    name, partial, partial, ext, dir.string()));
        }
    }
    return set;
}

}  // namespace

Templates::Templates(fs::path dir, TemplatesOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {
    std::error_code ec;
    if (!fs::is_directory(dir_, ec))
        throw TemplateNotFound(fmt::format(
            "vela::tmpl::Templates: '{}' is not a directory (from the current directory '{}')",
            dir_.string(), fs::current_path(ec).string()));
    set_ = build<Set>(dir_, options_.extension, scan(dir_, options_.extension), nullptr);
}

Templates::~Templates() = default;

std::shared_ptr<const Templates::Set> Templates::snapshot() const {
    std::lock_guard lock(mutex_);
    auto files = scan(dir_, options_.extension);
    if (!same_files(set_->entries, files))
        set_ = build<Set>(dir_, options_.extension, files, set_.get());
    return set_;
}

namespace {

template <class Set>
[[noreturn]] void not_found(const Set& set, std::string_view name, const fs::path& dir,
                            std::string_view ext) {
    std::string have;
    std::size_t n = 0;
    for (const auto& [key, e] : set.entries) {
        if (n++ == 10) {
            have += ", ...";
            break;
        }
        have += n == 1 ? "" : ", ";
        have += key;
    }
    throw TemplateNotFound(
        fmt::format("vela::tmpl::Templates: no template '{}' (no '{}{}' in '{}'; the set has: {})",
                    name, name, ext, dir.string(), have.empty() ? "nothing" : have));
}

}  // namespace

void Templates::render_ref(std::string& out, std::string_view name, ContextRef data) const {
    // Without reload set_ never changes after the constructor: no lock, no reference count.
    // (With reload set_ is read only under the mutex, inside snapshot().)
    std::shared_ptr<const Set> pinned = options_.reload ? snapshot() : nullptr;
    const Set* set = options_.reload ? pinned.get() : set_.get();
    auto it = set->entries.find(name);
    if (it == set->entries.end()) not_found(*set, name, dir_, options_.extension);
    it->second.tpl.render_ref(out, data, set);
}

Template Templates::get(std::string_view name) const {
    std::shared_ptr<const Set> set = options_.reload ? snapshot() : set_;
    auto it = set->entries.find(name);
    if (it == set->entries.end()) not_found(*set, name, dir_, options_.extension);
    return it->second.tpl;
}

std::vector<std::string> Templates::names() const {
    std::shared_ptr<const Set> set = options_.reload ? snapshot() : set_;
    std::vector<std::string> out;
    for (const auto& [name, e] : set->entries) out.push_back(name);
    return out;
}

}  // namespace vela::tmpl
