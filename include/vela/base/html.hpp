#pragma once
// HTML escaping for text placed in HTML pages (error pages, directory listings, examples).

#include <string>
#include <string_view>

namespace vela {

/// Appends `text` to `out` with & < > " ' written as character references, so it is safe
/// in element content and in quoted attribute values.
void append_html_escaped(std::string& out, std::string_view text);

/// `text` escaped as append_html_escaped does.
inline std::string html_escape(std::string_view text) {
    std::string out;
    append_html_escaped(out, text);
    return out;
}

}  // namespace vela
