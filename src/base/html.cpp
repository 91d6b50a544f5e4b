#include "vela/base/html.hpp"

namespace vela {

void append_html_escaped(std::string& out, std::string_view text) {
    // Runs of plain characters are appended whole: most text has few or no special ones.
    std::size_t run = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        std::string_view ref;
        switch (text[i]) {
            case '&':
                ref = "&amp;";
                break;
            case '<':
                ref = "&lt;";
                break;
            case '>':
                ref = "&gt;";
                break;
            case '"':
                ref = "&quot;";
                break;
            case '\'':
                ref = "&#39;";
                break;
            default:
                continue;
        }
        out.append(text.data() + run, i - run);
        out.append(ref);
        run = i + 1;
    }
    out.append(text.data() + run, text.size() - run);
}

}  // namespace vela
