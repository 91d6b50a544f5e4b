// append_html_escaped: each special character, runs between them, and text without any.

#include <gtest/gtest.h>

#include "vela/base/html.hpp"

namespace html_test {

TEST(HtmlEscape, Table) {
    const struct {
        const char* in;
        const char* out;
    } cases[] = {
        {"", ""},
        {"plain text", "plain text"},
        {"&", "&amp;"},
        {"<>\"'", "&lt;&gt;&quot;&#39;"},
        {"a<b>c", "a&lt;b&gt;c"},
        {"<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"},
        {"end&", "end&amp;"},
        {"\u30d9&\u30d9", "\u30d9&amp;\u30d9"},
    };
    for (const auto& c : cases) {
        std::string out = "prefix:";
        vela::append_html_escaped(out, c.in);
        EXPECT_EQ(out, std::string("prefix:") + c.out) << c.in;
        EXPECT_EQ(vela::html_escape(c.in), c.out);
    }
}

}  // namespace html_test
