#pragma once
// The compiled form of a template: a flat instruction list the renderer walks.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vela::tmpl::detail {

/// One instruction's operation.
enum class Op : std::uint8_t {
    text,      // append pool[a, a+b)
    escaped,   // append paths[a], HTML-escaped
    raw,       // append paths[a] as it is
    section,   // body is [this+1, b); b is the instruction after {{/name}}
    inverted,  // as section, rendered when paths[a] is falsy
    partial,   // render partials[a] with indentation pool[b, b+c) added
    indent,    // a source line starts: append the indentation of the enclosing partials
};

/// One instruction (16 bytes).
struct Instr {
    Op op;
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::uint32_t c = 0;
};

/// A name split at its dots; no parts is the implicit iterator ".".
struct Path {
    std::vector<std::string> parts;
};

/// A compiled template (immutable after compile, except the output size hint).
struct Program {
    std::string name;
    std::string pool;  // literal text and partial indentation
    std::vector<Instr> code;
    std::vector<Path> paths;
    std::vector<std::string> partials;  // distinct partial names
    std::size_t sections = 0;
    // The largest output seen, to reserve before the next render (relaxed: only a hint).
    mutable std::atomic<std::size_t> size_hint{0};
};

}  // namespace vela::tmpl::detail
