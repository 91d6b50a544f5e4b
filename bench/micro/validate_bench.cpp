// Declarative constraints (VELA_VALIDATE): the cost of json::validate per rule kind on a value
// that satisfies it (the common case), and of a value that breaks every rule (the 422 path:
// building the pointers and messages). BM_NoRules is the baseline: a type without rules, for
// which validate compiles to nothing.

#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vela/json/json.hpp"

namespace {

using namespace vela;

struct NoRules {
    std::string title = "A note about things";
    int rating = 3;
};
VELA_REFLECT(NoRules, title, rating)

struct LengthOnly {
    std::string title = "A note about things";
};
VELA_REFLECT(LengthOnly, title)
VELA_VALIDATE(LengthOnly, (title, rule::length(1, 200)))

struct LengthUtf8 {
    std::string title = "Zoë's café — notes";
};
VELA_REFLECT(LengthUtf8, title)
VELA_VALIDATE(LengthUtf8, (title, rule::length(1, 18)))

struct RangeOnly {
    int rating = 3;
};
VELA_REFLECT(RangeOnly, rating)
VELA_VALIDATE(RangeOnly, (rating, rule::range(0, 5)))

struct PatternOnly {
    std::string code = "ABC-1234";
};
VELA_REFLECT(PatternOnly, code)
VELA_VALIDATE(PatternOnly, (code, rule::pattern<"^[A-Z]{3}-[0-9]{4}$">))

struct EmailOnly {
    std::string email = "first.last@example.com";
};
VELA_REFLECT(EmailOnly, email)
VELA_VALIDATE(EmailOnly, (email, rule::email))

struct UriOnly {
    std::string link = "https://example.com/notes/42?tab=history";
};
VELA_REFLECT(UriOnly, link)
VELA_VALIDATE(UriOnly, (link, rule::uri))

struct UuidOnly {
    std::string id = "123e4567-e89b-12d3-a456-426614174000";
};
VELA_REFLECT(UuidOnly, id)
VELA_VALIDATE(UuidOnly, (id, rule::uuid))

struct OneOfOnly {
    std::string state = "published";
};
VELA_REFLECT(OneOfOnly, state)
VELA_VALIDATE(OneOfOnly, (state, rule::one_of("draft", "review", "published", "archived")))

struct ItemsEach {
    std::vector<std::string> tags = {"c++", "web", "http", "json", "fast"};
};
VELA_REFLECT(ItemsEach, tags)
VELA_VALIDATE(ItemsEach, (tags, rule::items(0, 10), rule::each(rule::length(1, 20))))

struct Unique {
    std::vector<int> ids = {1, 2, 3, 4, 5, 6, 7, 8};
};
VELA_REFLECT(Unique, ids)
VELA_VALIDATE(Unique, (ids, rule::unique_items))

struct Note {
    std::string title = "A note";
    std::string body = "Some text";
    int rating = 3;
    std::optional<std::string> email = "a@example.com";
    std::string state = "draft";
    std::vector<std::string> tags = {"a", "b"};
};
VELA_REFLECT(Note, title, body, rating, email, state, tags)
VELA_VALIDATE(Note, (title, rule::length(1, 200)), (body, rule::max_length(10000)),
              (rating, rule::range(0, 5)), (email, rule::email),
              (state, rule::one_of("draft", "published")),
              (tags, rule::max_items(10), rule::each(rule::length(1, 20))))

template <class T>
void run(benchmark::State& state, T value) {
    json::Violations v;
    for (auto _ : state) {
        benchmark::DoNotOptimize(value);  // read from memory each time, not folded
        benchmark::DoNotOptimize(json::validate(value, v));
        benchmark::ClobberMemory();
    }
    if (!v.empty()) state.SkipWithError("the value was expected to be valid");
}

void BM_NoRules(benchmark::State& s) { run(s, NoRules{}); }
void BM_Length(benchmark::State& s) { run(s, LengthOnly{}); }
void BM_LengthUtf8(benchmark::State& s) { run(s, LengthUtf8{}); }
void BM_Range(benchmark::State& s) { run(s, RangeOnly{}); }
void BM_Pattern(benchmark::State& s) { run(s, PatternOnly{}); }
void BM_Email(benchmark::State& s) { run(s, EmailOnly{}); }
void BM_Uri(benchmark::State& s) { run(s, UriOnly{}); }
void BM_Uuid(benchmark::State& s) { run(s, UuidOnly{}); }
void BM_OneOf(benchmark::State& s) { run(s, OneOfOnly{}); }
void BM_ItemsEachLength5(benchmark::State& s) { run(s, ItemsEach{}); }
void BM_UniqueItems8(benchmark::State& s) { run(s, Unique{}); }
void BM_NoteSixMembers(benchmark::State& s) { run(s, Note{}); }

// Every rule of Note broken: six violations with their pointers and messages.
void BM_NoteAllBroken(benchmark::State& state) {
    Note n;
    n.title = "";
    n.body = std::string(10001, 'x');
    n.rating = 9;
    n.email = "nobody";
    n.state = "gone";
    n.tags = {""};
    for (auto _ : state) {
        json::Violations v = json::validate(n);
        benchmark::DoNotOptimize(v);
    }
}

BENCHMARK(BM_NoRules);
BENCHMARK(BM_Length);
BENCHMARK(BM_LengthUtf8);
BENCHMARK(BM_Range);
BENCHMARK(BM_Pattern);
BENCHMARK(BM_Email);
BENCHMARK(BM_Uri);
BENCHMARK(BM_Uuid);
BENCHMARK(BM_OneOf);
BENCHMARK(BM_ItemsEachLength5);
BENCHMARK(BM_UniqueItems8);
BENCHMARK(BM_NoteSixMembers);
BENCHMARK(BM_NoteAllBroken);

}  // namespace
