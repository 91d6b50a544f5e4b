// Reads arbitrary bytes as an application/x-www-form-urlencoded body: no crash; the pairs
// are bounded by the limit; encoding the decoded pairs again and decoding that gives the same
// pairs; Form<T> over a Request agrees with FormData::to<T>, and whatever fills the reflected
// struct also fills it from the same text as a query string (Query<T>).

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/web/extract.hpp"

namespace fuzz {

enum class Plan { free, pro };
VELA_ENUM(Plan, free, pro)

struct Signup {
    std::string user;
    int age = 18;
    std::uint8_t u8 = 0;
    std::int64_t i = 0;
    double ratio = 0.5;
    bool newsletter = false;
    Plan plan = Plan::free;
    std::chrono::system_clock::time_point when{};
    std::optional<std::string> referrer;
    std::optional<int> invited_by;
    std::optional<bool> flag;
    std::vector<std::string> tags;
    std::vector<Plan> plans;
};
VELA_REFLECT(Signup, VELA_REQUIRED(user), age, u8, i, ratio, newsletter, plan, when, referrer,
             invited_by, flag, VELA_AS(tags, "tags[]"), plans)

void check(bool ok) {
    if (!ok) __builtin_trap();
}

std::string encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '*') {
            out += static_cast<char>(c);
        } else if (c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vela;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    constexpr std::size_t max_fields = 64;
    std::string why;
    const std::optional<FormData> form = FormData::parse(text, why, max_fields);

    Request req;
    req.set_method(Method::POST, "POST");
    req.set_target("/", "/", text);
    req.mutable_headers().push_back(Header{"Content-Type", "application/x-www-form-urlencoded"});
    req.set_body(text);
    Response error;
    const std::optional<Form<fuzz::Signup, max_fields>> bound =
        Form<fuzz::Signup, max_fields>::from_request(req, error);

    if (!form) {
        fuzz::check(!why.empty() && !bound && error.status() == Status::BadRequest);
        return 0;
    }
    fuzz::check(form->size() <= max_fields);

    // Encode and decode again: the same pairs.
    std::string again;
    for (const auto& [name, value] : *form) {
        if (!again.empty()) again += '&';
        again += fuzz::encode(name) + "=" + fuzz::encode(value);
    }
    const std::optional<FormData> reparsed = FormData::parse(again, why, max_fields);
    fuzz::check(reparsed && reparsed->items() == form->items());
    for (const auto& [name, value] : *form) {
        const std::optional<std::string_view> first = form->get(name);
        fuzz::check(first.has_value());
        const std::vector<std::string_view> all = form->all(name);
        fuzz::check(!all.empty() && all.front() == *first);
    }

    Response error2;
    const std::optional<fuzz::Signup> direct = form->to<fuzz::Signup>(error2);
    fuzz::check(direct.has_value() == bound.has_value());
    if (!bound) {
        fuzz::check(error.status() == Status::BadRequest && error.body() == error2.body());
        return 0;
    }
    fuzz::check((*bound)->user == direct->user && (*bound)->tags == direct->tags &&
                (*bound)->when == direct->when);
    // The same text as a query string fills the same struct (no pair limit there).
    const std::optional<Query<fuzz::Signup>> q = Query<fuzz::Signup>::from_request(req, error);
    fuzz::check(q && (*q)->user == direct->user && (*q)->age == direct->age &&
                (*q)->plans == direct->plans && (*q)->invited_by == direct->invited_by);
    return 0;
}
