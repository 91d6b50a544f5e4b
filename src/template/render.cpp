// Rendering: walks a Program's instructions against a stack of ContextRefs.
//
// The context stack holds borrowed views of the caller's data (no copies). A name is looked
// up from the top of the stack outwards; the parts after the first dot resolve only inside
// the value found before them (the spec's "dotted names" rule).

#include <fmt/format.h>

#include "template/program.hpp"
#include "vela/template/template.hpp"

namespace vela::tmpl {

using detail::Instr;
using detail::Op;
using detail::Program;

namespace {

// The context stack: inline for the usual depth, so a render allocates nothing for it.
class ContextStack {
  public:
    void push_back(ContextRef v) {
        if (n_ < kInline)
            inline_[n_] = v;
        else
            heap_.push_back(v);
        ++n_;
    }
    void pop_back() noexcept {
        if (n_ > kInline) heap_.pop_back();
        --n_;
    }
    std::size_t size() const noexcept { return n_; }
    ContextRef operator[](std::size_t i) const noexcept {
        return i < kInline ? inline_[i] : heap_[i - kInline];
    }
    ContextRef back() const noexcept { return (*this)[n_ - 1]; }

  private:
    static constexpr std::size_t kInline = 24;
    ContextRef inline_[kInline];
    std::vector<ContextRef> heap_;
    std::size_t n_ = 0;
};

}  // namespace

/// One render: the output, the context stack and the partial indentation.
struct Renderer {
    std::string& out;
    const PartialSource* partials;
    ContextStack stack{};
    std::string indent{};
    int depth = 0;

    ContextRef lookup(const detail::Path& path) const {
        if (path.parts.empty()) return stack.back();
        ContextRef v;
        bool found = false;
        for (std::size_t i = stack.size(); i-- > 0 && !found;) {
            const ContextRef c = stack[i];
            if (c.vtable()) found = c.vtable()->find(c.data(), path.parts[0], v);
        }
        if (!found) return {};
        for (std::size_t i = 1; i < path.parts.size(); ++i) {
            ContextRef next;
            if (!v.vtable() || !v.vtable()->find(v.data(), path.parts[i], next)) return {};
            v = next;
        }
        return v;
    }

    static bool truthy(ContextRef v) noexcept { return v.vtable() && v.vtable()->truthy(v.data()); }

    void run(const Program& p, std::size_t i, std::size_t end) {
        while (i < end) {
            const Instr& in = p.code[i];
            switch (in.op) {
                case Op::text:
                    out.append(p.pool, in.a, in.b);
                    break;
                case Op::indent:
                    out += indent;
                    break;
                case Op::escaped:
                case Op::raw: {
                    const ContextRef v = lookup(p.paths[in.a]);
                    if (v.vtable()) v.vtable()->write(v.data(), out, in.op == Op::escaped);
                    break;
                }
                case Op::section: {
                    const ContextRef v = lookup(p.paths[in.a]);
                    if (truthy(v)) section(p, i + 1, in.b, v);
                    i = in.b;
                    continue;
                }
                case Op::inverted:
                    if (!truthy(lookup(p.paths[in.a]))) run(p, i + 1, in.b);
                    i = in.b;
                    continue;
                case Op::partial:
                    partial(p, in);
                    break;
            }
            ++i;
        }
    }

    void section(const Program& p, std::size_t begin, std::size_t end, ContextRef v) {
        const Vtable& vt = *v.vtable();
        if (vt.kind(v.data()) == Kind::list) {
            const std::size_t n = vt.size(v.data());
            for (std::size_t k = 0; k < n; ++k) {
                stack.push_back(vt.at(v.data(), k));
                run(p, begin, end);
                stack.pop_back();
            }
        } else {
            stack.push_back(v);
            run(p, begin, end);
            stack.pop_back();
        }
    }

    void partial(const Program& p, const Instr& in) {
        const Template* t = partials ? partials->find_partial(p.partials[in.a]) : nullptr;
        if (!t) return;  // the spec: a missing partial renders as nothing
        if (depth >= Template::kMaxPartialDepth)
            throw RenderError(fmt::format(
                "template '{}': partials nested deeper than {} (does '{}' include itself?)", p.name,
                Template::kMaxPartialDepth, p.partials[in.a]));
        const std::size_t saved = indent.size();
        indent.append(p.pool, in.b, in.c);
        ++depth;
        const Program& q = *t->program_;
        run(q, 0, q.code.size());
        --depth;
        indent.resize(saved);
    }
};

void Template::render_ref(std::string& out, ContextRef data, const PartialSource* partials) const {
    const Program& p = *program_;
    const std::size_t start = out.size();
    const std::size_t hint = p.size_hint.load(std::memory_order_relaxed);
    if (hint) out.reserve(start + hint);
    Renderer r{out, partials};
    r.stack.push_back(data);
    r.run(p, 0, p.code.size());
    const std::size_t produced = out.size() - start;
    if (produced > hint) p.size_hint.store(produced, std::memory_order_relaxed);
}

PartialMap& PartialMap::add(std::string_view name, std::string_view source) {
    return add(name, Template::compile(source, name));
}

PartialMap& PartialMap::add(std::string_view name, Template tpl) {
    auto it = partials_.find(name);
    if (it != partials_.end())
        it->second = std::move(tpl);
    else
        partials_.emplace(std::string(name), std::move(tpl));
    return *this;
}

const Template* PartialMap::find_partial(std::string_view name) const {
    auto it = partials_.find(name);
    return it == partials_.end() ? nullptr : &it->second;
}

}  // namespace vela::tmpl
