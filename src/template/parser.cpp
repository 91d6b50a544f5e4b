// Template::compile: mustache source to the instruction list of program.hpp.
//
// One left-to-right pass. Text between tags becomes text instructions, split at line starts
// so an `indent` instruction can add a partial's indentation to every source line (the
// spec's "each line of the partial is indented before rendering", done without recompiling
// the partial per indentation). Section tags remember their opening so {{/name}} can patch
// the jump and report a mismatch with both positions.

#include <fmt/format.h>
#include <algorithm>
#include <limits>

#include "template/program.hpp"
#include "vela/template/template.hpp"

namespace vela::tmpl {

TemplateError::TemplateError(std::string name, std::size_t line, std::size_t column,
                             const std::string& message)
    : std::runtime_error(
          name.empty()
              ? fmt::format("template line {}, column {}: {}", line, column, message)
              : fmt::format("template '{}', line {}, column {}: {}", name, line, column, message)),
      name_(std::move(name)),
      line_(line),
      column_(column) {}

namespace {

using detail::Instr;
using detail::Op;

bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }
bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

std::string shown(std::string_view s) {
    constexpr std::size_t kMax = 40;
    return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

class Parser {
  public:
    Parser(std::string_view src, detail::Program& p) : src_(src), p_(p) {}

    void run() {
        if (src_.size() > std::numeric_limits<std::uint32_t>::max() / 2)
            fail(0, "a template must be smaller than 2 GiB");
        while (pos_ < src_.size()) {
            const std::size_t o = src_.find(open_, pos_);
            if (o == std::string_view::npos) {
                emit_text(pos_, src_.size());
                break;
            }
            tag(o);
        }
        if (!open_sections_.empty()) {
            const auto& s = open_sections_.back();
            fail(s.at, fmt::format("section '{}' is never closed (no {}/{}{})", shown(s.name),
                                   open_, shown(s.name), close_));
        }
    }

  private:
    struct OpenSection {
        std::size_t instr;
        std::string name;
        std::size_t at;
    };

    [[noreturn]] void fail(std::size_t at, const std::string& message) const {
        std::size_t line = 1, line_start = 0;
        for (std::size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                line_start = i + 1;
            }
        }
        throw TemplateError(p_.name, line, at - line_start + 1, message);
    }

    bool line_start(std::size_t i) const noexcept { return i == 0 || src_[i - 1] == '\n'; }

    std::uint32_t pool(std::string_view s) {
        const auto at = static_cast<std::uint32_t>(p_.pool.size());
        p_.pool.append(s);
        return at;
    }

    // Text [a, b) of the source, with an indent instruction at each line start in it.
    void emit_text(std::size_t a, std::size_t b) {
        while (a < b) {
            if (line_start(a)) p_.code.push_back({Op::indent});
            const std::size_t nl = src_.find('\n', a);
            const std::size_t end = (nl == std::string_view::npos || nl >= b) ? b : nl + 1;
            p_.code.push_back(
                {Op::text, pool(src_.substr(a, end - a)), static_cast<std::uint32_t>(end - a)});
            a = end;
        }
    }

    // The tag whose opening delimiter starts at `o`.
    void tag(std::size_t o) {
        std::size_t cs = o + open_.size();
        const char type = cs < src_.size() ? src_[cs] : '\0';
        const bool sigil = type == '#' || type == '^' || type == '/' || type == '!' ||
                           type == '>' || type == '=' || type == '&' || type == '{' ||
                           type == '<' || type == '$';
        if (sigil) ++cs;
        std::string closing = close_;
        if (type == '=') closing = "=" + close_;
        if (type == '{') closing = "}" + close_;
        const std::size_t ce = src_.find(closing, cs);
        if (ce == std::string_view::npos)
            fail(o, fmt::format("unclosed tag: no '{}' after '{}'", closing, open_));
        const std::size_t end = ce + closing.size();
        const std::string_view content = trim(src_.substr(cs, ce - cs));

        // Standalone: the tag is alone on its line but for blanks; the line is dropped.
        const bool may_stand =
            type == '#' || type == '^' || type == '/' || type == '!' || type == '>' || type == '=';
        std::size_t ls = o;
        while (ls > pos_ && is_blank(src_[ls - 1])) --ls;
        std::size_t after = end;
        while (after < src_.size() && is_blank(src_[after])) ++after;
        std::size_t next = end;
        bool standalone = false;
        if (may_stand && line_start(ls) && ls >= pos_) {
            if (after == src_.size()) {
                standalone = true;
                next = after;
            } else if (src_[after] == '\n') {
                standalone = true;
                next = after + 1;
            } else if (src_[after] == '\r' && after + 1 < src_.size() && src_[after + 1] == '\n') {
                standalone = true;
                next = after + 2;
            }
        }
        if (standalone) {
            emit_text(pos_, ls);
        } else {
            emit_text(pos_, o);
            if (line_start(o)) p_.code.push_back({Op::indent});
        }
        pos_ = next;

        switch (type) {
            case '!':
                break;
            case '=':
                set_delimiters(o, content);
                break;
            case '#':
            case '^':
                if (open_sections_.size() >= Template::kMaxSectionDepth)
                    fail(o,
                         fmt::format("sections nested deeper than {}", Template::kMaxSectionDepth));
                open_sections_.push_back({p_.code.size(), std::string(name(o, content)), o});
                p_.code.push_back({type == '#' ? Op::section : Op::inverted, path(o, content)});
                ++p_.sections;
                break;
            case '/':
                close_section(o, content);
                break;
            case '>':
                partial(o, content, standalone ? src_.substr(ls, o - ls) : std::string_view());
                break;
            case '<':
            case '$':
                fail(o, fmt::format("template inheritance ({}<parent{} and {}$block{}) is not "
                                    "supported",
                                    open_, close_, open_, close_));
            case '&':
            case '{':
                p_.code.push_back({Op::raw, path(o, content)});
                break;
            default:
                p_.code.push_back({Op::escaped, path(o, content)});
        }
    }

    std::string_view name(std::size_t o, std::string_view content) const {
        if (content.empty()) fail(o, "empty tag: a name is expected");
        for (char c : content)
            if (is_space(c))
                fail(o, fmt::format("the name '{}' contains whitespace", shown(content)));
        return content;
    }

    std::uint32_t path(std::size_t o, std::string_view content) {
        const std::string_view n = name(o, content);
        detail::Path path;
        if (n != ".") {
            std::size_t a = 0;
            for (;;) {
                const std::size_t dot = n.find('.', a);
                const std::string_view part =
                    n.substr(a, dot == std::string_view::npos ? dot : dot - a);
                if (part.empty()) fail(o, fmt::format("the name '{}' has an empty part", shown(n)));
                path.parts.emplace_back(part);
                if (dot == std::string_view::npos) break;
                a = dot + 1;
            }
        }
        p_.paths.push_back(std::move(path));
        return static_cast<std::uint32_t>(p_.paths.size() - 1);
    }

    void close_section(std::size_t o, std::string_view content) {
        const std::string_view n = name(o, content);
        if (open_sections_.empty())
            fail(o, fmt::format("{}/{}{} closes no section", open_, shown(n), close_));
        const OpenSection& s = open_sections_.back();
        if (s.name != n) {
            std::size_t line = 1;
            for (std::size_t i = 0; i < s.at; ++i) line += src_[i] == '\n';
            fail(o, fmt::format("{}/{}{} does not close section '{}' (opened on line {})", open_,
                                shown(n), close_, shown(s.name), line));
        }
        p_.code[s.instr].b = static_cast<std::uint32_t>(p_.code.size());
        open_sections_.pop_back();
    }

    void partial(std::size_t o, std::string_view content, std::string_view indentation) {
        const std::string_view n = name(o, content);
        auto it = std::find(p_.partials.begin(), p_.partials.end(), n);
        if (it == p_.partials.end()) it = p_.partials.emplace(p_.partials.end(), n);
        const auto index = static_cast<std::uint32_t>(it - p_.partials.begin());
        p_.code.push_back({Op::partial, index, pool(indentation),
                           static_cast<std::uint32_t>(indentation.size())});
    }

    void set_delimiters(std::size_t o, std::string_view content) {
        const auto bad = [&] {
            fail(o, fmt::format("bad set-delimiter tag: expected {}=<open> <close>={}", open_,
                                close_));
        };
        std::size_t sp = 0;
        while (sp < content.size() && !is_space(content[sp])) ++sp;
        const std::string_view a = content.substr(0, sp);
        const std::string_view b = trim(content.substr(sp));
        if (a.empty() || b.empty()) bad();
        for (char c : b)
            if (is_space(c)) bad();
        if (a.find('=') != std::string_view::npos || b.find('=') != std::string_view::npos) bad();
        open_ = a;
        close_ = b;
    }

    std::string_view src_;
    detail::Program& p_;
    std::size_t pos_ = 0;
    std::string open_ = "{{";
    std::string close_ = "}}";
    std::vector<OpenSection> open_sections_;
};

}  // namespace

Template Template::compile(std::string_view source, std::string_view name) {
    auto p = std::make_shared<detail::Program>();
    p->name = name;
    Parser(source, *p).run();
    p->code.shrink_to_fit();
    return Template(std::move(p));
}

const std::string& Template::name() const noexcept { return program_->name; }

std::span<const std::string> Template::partial_names() const noexcept { return program_->partials; }

std::size_t Template::section_count() const noexcept { return program_->sections; }

}  // namespace vela::tmpl
