#include "vela/base/html.hpp"

namespace vela {

void append_html_escaped(std::string& out, std::string_view text) {
    out.reserve(out.size() + text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
}

}  // namespace vela
