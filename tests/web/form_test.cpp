// application/x-www-form-urlencoded bodies (FormData, Form<T>) and the rule for required and
// defaulted members shared by Query<T>, Form<T> and JSON bodies.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vela/json/json.hpp"
#include "vela/web/extract.hpp"
#include "vela/web/handler_traits.hpp"

namespace form_test {

using namespace vela;
using Pairs = std::vector<std::pair<std::string, std::string>>;

enum class Sort { asc, desc };
VELA_ENUM(Sort, asc, desc)

// The defaults rule: `user` and `token` (JSON name "t") are required, the rest keep their
// value in Page{} when absent.
struct Page {
    int limit = 10;
    std::string sort = "id";
    bool flag = true;
    std::optional<int> after;
    std::optional<std::string> note;
    std::vector<int> ids;
    std::vector<int> preset = {1, 2};
    std::string user;
    std::string token;
};
VELA_REFLECT(Page, limit, sort, flag, after, note, ids, preset, VELA_REQUIRED(user),
             VELA_REQUIRED_AS(token, "t"))

// Every converter.
struct Kinds {
    bool b = false;
    int i = 0;
    std::uint8_t u8 = 0;
    double d = 0;
    std::string s;
    Sort sort = Sort::asc;
    std::chrono::sys_time<std::chrono::nanoseconds> when{};
    std::optional<bool> ob;
    std::vector<Sort> sorts;
};
VELA_REFLECT(Kinds, b, i, u8, d, s, sort, when, ob, sorts)

struct Odd {
    int x = 0;
};
VELA_REFLECT(Odd, VELA_REQUIRED_AS(x, "a/b~c"))

struct NeedsTag {
    std::vector<std::string> tag;
};
VELA_REFLECT(NeedsTag, VELA_REQUIRED(tag))

// Not default-constructible: every member that is not an optional stays required in JSON.
struct NoDefault {
    explicit NoDefault(int v) : a(v) {}
    int a;
    int b = 7;
    std::optional<int> c;
};
VELA_REFLECT(NoDefault, a, b, c)

struct Item {
    int a = 0;
    int b = -1;
};
VELA_REFLECT(Item, a, b)

// A request holding its header and body (the Request keeps views).
struct Req {
    std::string type;
    std::string body;
    std::string query;
    Request req;
    Req(std::string t, std::string b, std::string q = {})
        : type(std::move(t)), body(std::move(b)), query(std::move(q)) {
        req.set_method(Method::POST, "POST");
        req.set_target("/", "/", query);
        if (!type.empty()) req.mutable_headers().push_back(Header{"Content-Type", type});
        req.set_body(body);
    }
    Req(const Req&) = delete;
    Req& operator=(const Req&) = delete;
};

constexpr std::string_view kForm = "application/x-www-form-urlencoded";

json::Value problem(const Response& r) { return json::parse<json::Value>(r.body()); }

template <class T>
std::optional<T> form(std::string body, Response& error) {
    Req r(std::string(kForm), std::move(body));
    std::optional<Form<T>> f = Form<T>::from_request(r.req, error);
    if (!f) return std::nullopt;
    return std::move(**f);
}

template <class T>
std::optional<T> query(std::string q, Response& error) {
    Req r("", "", std::move(q));
    std::optional<Query<T>> f = Query<T>::from_request(r.req, error);
    if (!f) return std::nullopt;
    return std::move(**f);
}

// ---- The parser -------------------------------------------------------------------------

TEST(FormParse, Table) {
    struct Case {
        const char* body;
        Pairs pairs;
    };
    const Case cases[] = {
        {"", {}},
        {"a=", {{"a", ""}}},
        {"=b", {{"", "b"}}},
        {"a", {{"a", ""}}},
        {"a&&b", {{"a", ""}, {"b", ""}}},
        {"&&&", {}},
        {"+", {{" ", ""}}},
        {"a=%2B", {{"a", "+"}}},
        {"a=b+c%20d", {{"a", "b c d"}}},
        {"%61%3D=%26", {{"a=", "&"}}},
        {"a==b", {{"a", "=b"}}},
        {"a=1&a=2&b=3&a=4", {{"a", "1"}, {"a", "2"}, {"b", "3"}, {"a", "4"}}},
        {"euro=%E2%82%ac", {{"euro", "\xE2\x82\xAC"}}},
        {"nul=%00", {{"nul", std::string(1, '\0')}}},
        {"a=1&", {{"a", "1"}}},
        {"&a=1", {{"a", "1"}}},
    };
    for (const Case& c : cases) {
        std::string why;
        const std::optional<FormData> f = FormData::parse(c.body, why);
        ASSERT_TRUE(f) << c.body << ": " << why;
        EXPECT_EQ(Pairs(f->begin(), f->end()), c.pairs) << c.body;
        EXPECT_EQ(f->size(), c.pairs.size()) << c.body;
    }
}

TEST(FormParse, BadEscapesAreRefused) {
    for (const char* body :
         {"a=%", "a=%4", "a=%zz", "a=%%41", "%g0=1", "a=1&b=%2", "a%=1", "a=%+1", "a=% 1"}) {
        std::string why;
        EXPECT_FALSE(FormData::parse(body, why)) << body;
        EXPECT_EQ(why, "malformed percent-encoding in the form body") << body;
        EXPECT_THROW(FormData{body}, std::invalid_argument) << body;
    }
}

TEST(FormParse, PairLimit) {
    std::string body;
    for (int i = 0; i < 1000; ++i) body += "k=v&&";
    std::string why;
    EXPECT_EQ(FormData::parse(body, why)->size(), 1000u);  // empty pairs do not count
    body += "k=v";
    EXPECT_FALSE(FormData::parse(body, why));
    EXPECT_EQ(why, "more than 1000 form fields");
    EXPECT_EQ(FormData::parse("a&b&c", why, 3)->size(), 3u);
    EXPECT_FALSE(FormData::parse("a&b&c&d", why, 3));
    try {
        FormData f("a&b", 1);
        ADD_FAILURE();
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "FormData: more than 1 form fields");
    }

    Response error;
    Req r(std::string(kForm), "a=1&b=2&c=3");
    EXPECT_FALSE((Form<Page, 2>::from_request(r.req, error)));
    EXPECT_EQ(error.status(), Status::BadRequest);
    EXPECT_EQ(problem(error)["detail"].as_string(), "more than 2 form fields");
    // A huge body of separators is walked, not stored.
    EXPECT_TRUE(FormData::parse(std::string(1 << 20, '&'), why)->empty());
}

TEST(FormData, MultimapView) {
    const FormData f("b=1&a=x&b=2&c&b=3");
    EXPECT_EQ(f.get("b"), "1");
    EXPECT_EQ(f.get("c"), "");
    EXPECT_EQ(f.get("zz"), std::nullopt);
    EXPECT_EQ(f.get("B"), std::nullopt);  // names are case-sensitive
    EXPECT_EQ(f.all("b"), (std::vector<std::string_view>{"1", "2", "3"}));
    EXPECT_TRUE(f.all("zz").empty());
    EXPECT_TRUE(f.contains("a"));
    EXPECT_FALSE(f.contains("d"));
    EXPECT_EQ(f.size(), 5u);
    std::string order;
    for (const auto& [name, value] : f) order += name + "=" + value + ";";
    EXPECT_EQ(order, "b=1;a=x;b=2;c=;b=3;");

    FormData built;  // as multipart's text fields fill it
    EXPECT_TRUE(built.empty());
    built.add("user", "ann");
    built.add("t", "tok");
    built.add("ids", "4");
    built.add("ids", "5");
    Response error;
    const std::optional<Page> p = built.to<Page>(error);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->user, "ann");
    EXPECT_EQ(p->ids, (std::vector<int>{4, 5}));
    EXPECT_EQ(p->limit, 10);
    FormData missing;
    EXPECT_FALSE(missing.to<Page>(error));
    EXPECT_EQ(problem(error)["detail"].as_string(),
              "form field 'user': missing required parameter");
}

// ---- Content-Type -----------------------------------------------------------------------

TEST(FormContentType, FormTypesAreRead) {
    for (const char* type :
         {"application/x-www-form-urlencoded", "Application/X-WWW-Form-Urlencoded",
          "application/x-www-form-urlencoded; charset=UTF-8",
          " application/x-www-form-urlencoded ;x=y"}) {
        Req r(type, "user=a&t=b&limit=3");
        Response error;
        std::optional<Form<Page>> f = Form<Page>::from_request(r.req, error);
        ASSERT_TRUE(f) << type << ": " << error.body();
        EXPECT_EQ((*f)->limit, 3);
        EXPECT_TRUE(FormData::from_request(r.req, error)) << type;
    }
}

TEST(FormContentType, OtherTypesAre415) {
    for (const char* type :
         {"", "text/plain", "application/json", "multipart/form-data; boundary=x",
          "application/x-www-form-urlencodedx", "x-www-form-urlencoded", "application/*"}) {
        Req r(type, "user=a&t=b");
        Response error;
        EXPECT_FALSE(Form<Page>::from_request(r.req, error)) << type;
        EXPECT_EQ(error.status(), Status::UnsupportedMediaType) << type;
        EXPECT_EQ(error.content_type(), "application/problem+json");
        EXPECT_EQ(error.header("Accept-Post"), "application/x-www-form-urlencoded");
        const std::string detail(problem(error)["detail"].as_string());
        EXPECT_EQ(detail.rfind("expected a form body (Content-Type: "
                               "application/x-www-form-urlencoded), got ",
                               0),
                  0u)
            << detail;
        Response error2;
        EXPECT_FALSE(FormData::from_request(r.req, error2));
        EXPECT_EQ(error2.status(), Status::UnsupportedMediaType);
    }
}

TEST(FormContentType, MalformedBodyIs400) {
    Req r(std::string(kForm), "user=a&t=%zz");
    Response error;
    EXPECT_FALSE(Form<Page>::from_request(r.req, error));
    EXPECT_EQ(error.status(), Status::BadRequest);
    EXPECT_EQ(problem(error)["detail"].as_string(), "malformed percent-encoding in the form body");
}

// ---- Converters -------------------------------------------------------------------------

TEST(FormConvert, EveryKind) {
    Response error;
    const std::optional<Kinds> k = form<Kinds>(
        "b=on&i=-12&u8=255&d=2.5e1&s=a+b%2Bc&sort=desc&when=2024-05-06T07:08:09.5%2B02:00"
        "&ob=no&sorts=desc&sorts=asc",
        error);
    ASSERT_TRUE(k) << error.body();
    EXPECT_TRUE(k->b);
    EXPECT_EQ(k->i, -12);
    EXPECT_EQ(k->u8, 255);
    EXPECT_EQ(k->d, 25.0);
    EXPECT_EQ(k->s, "a b+c");
    EXPECT_EQ(k->sort, Sort::desc);
    using namespace std::chrono;
    EXPECT_EQ(k->when, sys_days(2024y / 5 / 6) + 5h + 8min + 9s + 500ms);
    EXPECT_EQ(k->ob, false);
    EXPECT_EQ(k->sorts, (std::vector<Sort>{Sort::desc, Sort::asc}));
}

TEST(FormConvert, Bools) {
    for (const char* t : {"true", "1", "on", "yes"}) {
        Response error;
        EXPECT_TRUE(form<Kinds>(std::string("b=") + t, error)->b) << t;
    }
    for (const char* t : {"false", "0", "off", "no"}) {
        Response error;
        EXPECT_FALSE(form<Kinds>(std::string("b=") + t + "&ob=" + t, error)->ob.value()) << t;
    }
}

TEST(FormConvert, BadValuesName400) {
    struct Case {
        const char* body;
        const char* detail;
        const char* pointer;
    };
    const Case cases[] = {
        {"b=maybe", "form field 'b': expected a boolean (true or false)", "#/b"},
        {"b=", "form field 'b': expected a boolean (true or false)", "#/b"},
        {"i=ten", "form field 'i': expected integer", "#/i"},
        {"i=", "form field 'i': expected integer", "#/i"},
        {"i=1.5", "form field 'i': expected integer", "#/i"},
        {"u8=256", "form field 'u8': expected integer in [0, 255]", "#/u8"},
        {"u8=-1", "form field 'u8': expected integer", "#/u8"},
        {"d=nan", "form field 'd': expected number", "#/d"},
        {"d=1e999", "form field 'd': expected number", "#/d"},
        {"sort=up", R"(form field 'sort': expected one of "asc", "desc")", "#/sort"},
        {"sorts=asc&sorts=up", R"(form field 'sorts': expected one of "asc", "desc")", "#/sorts"},
        {"when=yesterday", "form field 'when': expected an RFC 3339 date-time", "#/when"},
        {"when=9999-12-31T23:59:59Z", "form field 'when': date-time out of range", "#/when"},
        {"when=0001-01-01T00:00:00Z", "form field 'when': date-time out of range", "#/when"},
        {"ob=2", "form field 'ob': expected a boolean (true or false)", "#/ob"},
    };
    for (const Case& c : cases) {
        Response error;
        EXPECT_FALSE(form<Kinds>(c.body, error)) << c.body;
        EXPECT_EQ(error.status(), Status::BadRequest) << c.body;
        EXPECT_EQ(error.content_type(), "application/problem+json");
        const json::Value p = problem(error);
        EXPECT_EQ(p["detail"].as_string(), c.detail) << c.body;
        EXPECT_EQ(p["errors"][0]["pointer"].as_string(), c.pointer) << c.body;
    }
    Response error;
    EXPECT_FALSE(form<Odd>("", error));
    EXPECT_EQ(problem(error)["errors"][0]["pointer"].as_string(), "#/a~1b~0c");
    EXPECT_EQ(form<Odd>("a%2Fb~c=4", error)->x, 4);
}

TEST(FormConvert, RepeatedScalarKeepsTheLast) {
    Response error;
    EXPECT_EQ(form<Kinds>("i=1&i=2&i=3", error)->i, 3);
    // An HTML checkbox after its hidden fallback: checked sends both.
    EXPECT_TRUE(form<Kinds>("b=false&b=true", error)->b);
    EXPECT_FALSE(form<Kinds>("b=false", error)->b);
}

// ---- Required or defaulted: Query, Form and JSON alike -----------------------------------

TEST(FormDefaults, IsRequiredIsVisibleAtCompileTime) {
    constexpr auto& f = json::fields_of<Page>;
    static_assert(!json::detail::is_required(std::get<0>(f)));  // limit
    static_assert(json::detail::is_required(std::get<7>(f)));   // user
    static_assert(json::detail::is_required(std::get<8>(f)));   // token
    static_assert(std::get<8>(f).name == "t" && std::get<8>(f).key == ",\"t\":");
    static_assert(!std::get<1>(json::fields_of<Kinds>).required);
    EXPECT_EQ(json::write(Page{}),
              R"({"limit":10,"sort":"id","flag":true,"ids":[],"preset":[1,2],"user":"","t":""})");
}

void expect_defaults(const Page& p) {
    EXPECT_EQ(p.limit, 10);
    EXPECT_EQ(p.sort, "id");
    EXPECT_TRUE(p.flag);
    EXPECT_EQ(p.after, std::nullopt);
    EXPECT_EQ(p.note, std::nullopt);
    EXPECT_TRUE(p.ids.empty());
    EXPECT_EQ(p.preset, (std::vector<int>{1, 2}));
}

TEST(FormDefaults, AbsentMembersKeepTheirDefaults) {
    Response error;
    std::optional<Page> q = query<Page>("user=ann&t=x", error);
    ASSERT_TRUE(q) << error.body();
    expect_defaults(*q);
    std::optional<Page> f = form<Page>("user=ann&t=x", error);
    ASSERT_TRUE(f) << error.body();
    expect_defaults(*f);
    Page j;
    ASSERT_FALSE(json::read(R"({"user":"ann","t":"x"})", j));
    expect_defaults(j);
    EXPECT_EQ(j.user, "ann");
    EXPECT_EQ(j.token, "x");
}

TEST(FormDefaults, PresentMembersAreParsed) {
    const std::string text =
        "limit=25&sort=name&flag=off&after=3&note=hi&ids=1&ids=2&preset=9"
        "&user=ann&t=x";
    Response error;
    for (std::optional<Page> p : {query<Page>(text, error), form<Page>(text, error)}) {
        ASSERT_TRUE(p) << error.body();
        EXPECT_EQ(p->limit, 25);
        EXPECT_EQ(p->sort, "name");
        EXPECT_FALSE(p->flag);
        EXPECT_EQ(p->after, 3);
        EXPECT_EQ(p->note, "hi");
        EXPECT_EQ(p->ids, (std::vector<int>{1, 2}));
        EXPECT_EQ(p->preset, (std::vector<int>{9}));
    }
    Page j;
    ASSERT_FALSE(json::read(R"({"limit":25,"after":3,"preset":[],"user":"a","t":"x"})", j));
    EXPECT_EQ(j.limit, 25);
    EXPECT_EQ(j.after, 3);
    EXPECT_TRUE(j.preset.empty());
}

TEST(FormDefaults, RequiredMembersAbsentAre400) {
    struct Case {
        const char* text;
        const char* name;
    };
    for (const Case& c :
         {Case{"t=x", "user"}, Case{"user=a", "t"}, Case{"", "user"}, Case{"User=a&t=x", "user"}}) {
        Response error;
        EXPECT_FALSE(query<Page>(c.text, error)) << c.text;
        EXPECT_EQ(error.status(), Status::BadRequest);
        EXPECT_EQ(problem(error)["detail"].as_string(),
                  "query parameter '" + std::string(c.name) + "': missing required parameter");
        EXPECT_EQ(problem(error)["errors"][0]["parameter"].as_string(), c.name);
        EXPECT_FALSE(form<Page>(c.text, error)) << c.text;
        EXPECT_EQ(error.status(), Status::BadRequest);
        EXPECT_EQ(problem(error)["detail"].as_string(),
                  "form field '" + std::string(c.name) + "': missing required parameter");
    }
    Page j;
    EXPECT_EQ(json::read(R"({"t":"x"})", j).to_string(), "$.user: missing required field");
    EXPECT_EQ(json::read(R"({"user":"a"})", j).to_string(), "$.t: missing required field");
    // Present but empty is present.
    Response error;
    EXPECT_EQ(form<Page>("user=&t", error)->user, "");
    // A required vector needs one value at least.
    EXPECT_FALSE(form<NeedsTag>("x=1", error));
    EXPECT_EQ(problem(error)["detail"].as_string(), "form field 'tag': missing required parameter");
    EXPECT_EQ(form<NeedsTag>("tag=a&tag=", error)->tag, (std::vector<std::string>{"a", ""}));
}

TEST(FormDefaults, EmptyValueOfAnOptionalNumberIsNullopt) {
    Response error;
    for (std::optional<Page> p : {query<Page>("after=&note=&user=a&t=x", error),
                                  form<Page>("after=&note=&user=a&t=x", error)}) {
        ASSERT_TRUE(p) << error.body();
        EXPECT_EQ(p->after, std::nullopt);  // an empty number field of an HTML form
        EXPECT_EQ(p->note, "");             // a string is present and empty
    }
    EXPECT_FALSE(form<Page>("limit=&user=a&t=x", error));  // not optional: still an error
    EXPECT_EQ(problem(error)["detail"].as_string(), "form field 'limit': expected integer");
}

TEST(FormDefaults, JsonBodyOverJsonT) {
    Req r("application/json", R"({"user":"a","t":"b","ids":[3]})");
    Response error;
    std::optional<Json<Page>> p = Json<Page>::from_request(r.req, error);
    ASSERT_TRUE(p) << error.body();
    EXPECT_EQ((*p)->limit, 10);
    EXPECT_EQ((*p)->ids, (std::vector<int>{3}));
    Req bad("application/json", R"({"t":"b"})");
    EXPECT_FALSE(Json<Page>::from_request(bad.req, error));
    EXPECT_EQ(error.status(), Status::BadRequest);
    EXPECT_EQ(problem(error)["detail"].as_string(),
              "invalid JSON body: $.user: missing required field");
}

TEST(FormDefaults, JsonReadIntoAnExistingObjectResetsAbsentMembers) {
    Page p;
    p.limit = 99;
    p.after = 5;
    p.ids = {7};
    p.preset.clear();
    ASSERT_FALSE(json::read(R"({"user":"a","t":"b"})", p));
    expect_defaults(p);  // as a fresh Page would be

    // Vectors read into their elements in place: an absent member does not leak from the
    // element that was there before.
    std::vector<Item> items;
    ASSERT_FALSE(json::read(R"([{"a":1,"b":2},{"a":3,"b":4}])", items));
    ASSERT_FALSE(json::read(R"([{"a":5},{"b":6}])", items));
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].a, 5);
    EXPECT_EQ(items[0].b, -1);
    EXPECT_EQ(items[1].a, 0);
    EXPECT_EQ(items[1].b, 6);
}

TEST(FormDefaults, NotDefaultConstructibleKeepsEveryNonOptionalRequired) {
    NoDefault n(1);
    n.c = 3;
    EXPECT_EQ(json::read(R"({"a":2})", n).to_string(), "$.b: missing required field");
    ASSERT_FALSE(json::read(R"({"a":2,"b":4})", n));
    EXPECT_EQ(n.a, 2);
    EXPECT_EQ(n.b, 4);
    EXPECT_EQ(n.c, std::nullopt);
}

TEST(FormDefaults, HandlerParameters) {
    // FormData and Form<T> are handler parameters like Query<T>.
    static_assert(requires(Request & r, Response & e) {
        { FormData::from_request(r, e) } -> std::same_as<std::optional<FormData>>;
        { Form<Page>::from_request(r, e) } -> std::same_as<std::optional<Form<Page>>>;
    });
}

}  // namespace form_test
