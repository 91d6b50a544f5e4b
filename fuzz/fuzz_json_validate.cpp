// Reads arbitrary bytes into a reflected struct with every kind of constraint (VELA_VALIDATE)
// and checks it: no crash; every violation's pointer is a JSON Pointer into the document;
// checking twice gives the same answer; and the format checks hold what they promise (a
// UUID is 36 characters, a date 10, an e-mail address has one '@' before its domain).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/json/json.hpp"

namespace fuzz {

using namespace vela;

struct Leaf {
    std::string name;
    int n = 0;
};
VELA_REFLECT(Leaf, name, n)
VELA_VALIDATE(Leaf, (name, rule::length(1, 8)), (n, rule::multiple_of(3)))
void vela_json_validate(const Leaf& l, json::Violations& out) {
    if (l.n < 0 && l.name == "neg") out.add("/n", "must not be negative for neg");
}

struct Doc {
    std::string text;
    std::string mail;
    std::string link;
    std::string id;
    std::string day;
    std::string code;
    std::string state;
    std::int64_t count = 0;
    double ratio = 0;
    std::optional<std::string> nick;
    std::vector<std::string> words;
    std::vector<int> ids;
    std::vector<Leaf> leaves;
    std::map<std::string, int> scores;
    std::optional<Leaf> extra;
};
VELA_REFLECT(Doc, text, mail, link, id, day, code, state, count, ratio, nick, words, ids, leaves,
             scores, extra)
VELA_VALIDATE(Doc, (text, rule::length(0, 16)), (mail, rule::email), (link, rule::uri),
              (id, rule::uuid), (day, rule::date), (code, rule::pattern<"^[A-Z]{2,4}-[0-9]+$">),
              (state, rule::one_of("a", "b", "c")),
              (count, rule::range(-1000000000000LL, 1000000000000LL)),
              (ratio, rule::exclusive_minimum(0), rule::exclusive_maximum(1)),
              (nick, rule::min_length(2)),
              (words, rule::items(0, 4), rule::each(rule::max_length(5))),
              (ids, rule::unique_items, rule::each(rule::one_of(1, 2, 3, 5, 8))),
              (leaves, rule::max_items(3)),
              (scores, rule::max_items(3), rule::each(rule::range(0, 100))))

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vela;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    fuzz::Doc doc;
    if (json::read(text, doc)) return 0;
    const json::Violations v = json::validate(doc);
    for (const json::Violation& x : v) {
        fuzz::check(!x.pointer.empty() && x.pointer[0] == '/');
        fuzz::check(!x.message.empty());
    }
    const json::Violations again = json::validate(doc);
    fuzz::check(again.size() == v.size());
    const auto flagged = [&](std::string_view pointer) {
        for (const json::Violation& x : v)
            if (x.pointer == pointer) return true;
        return false;
    };
    if (!flagged("/id")) fuzz::check(doc.id.size() == 36);
    if (!flagged("/day")) fuzz::check(doc.day.size() == 10);
    if (!flagged("/mail")) {
        const std::size_t at = doc.mail.rfind('@');
        fuzz::check(at != std::string::npos && at > 0 &&
                    doc.mail.find('.', at) != std::string::npos);
    }
    if (!flagged("/link")) fuzz::check(doc.link.find(':') != std::string::npos);
    if (!flagged("/words")) fuzz::check(doc.words.size() <= 4);
    if (!flagged("/count"))
        fuzz::check(doc.count >= -1000000000000LL && doc.count <= 1000000000000LL);
    if (!flagged("/ratio")) fuzz::check(doc.ratio > 0 && doc.ratio < 1);
    return 0;
}
