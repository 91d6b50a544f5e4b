// application/x-www-form-urlencoded: the pair parser shared by Query<T> and Form<T>, FormData,
// and the Content-Type check of Form<T>.

#include <stdexcept>

#include "vela/base/ascii.hpp"
#include "vela/web/extract.hpp"

namespace vela {

namespace detail {

UrlencodedStatus parse_urlencoded(std::string_view text, UrlPairs& out, std::size_t max_pairs) {
    std::size_t stored = 0;
    while (!text.empty()) {
        const std::size_t amp = text.find('&');
        const std::string_view pair = text.substr(0, amp);
        text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
        if (pair.empty()) continue;
        if (stored++ == max_pairs) return UrlencodedStatus::too_many;
        const std::size_t eq = pair.find('=');
        auto& [k, v] = out.emplace_back();
        const std::string_view raw_value =
            eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        if (!percent_decode(pair.substr(0, eq), k, true) || !percent_decode(raw_value, v, true))
            return UrlencodedStatus::malformed;
    }
    return UrlencodedStatus::ok;
}

bool is_form_media_type(std::string_view content_type) noexcept {
    const std::string_view type = ascii::trim_ows(content_type.substr(0, content_type.find(';')));
    return ascii::iequals(type, "application/x-www-form-urlencoded");
}

Response unsupported_form_media_type(std::string_view content_type) {
    std::string detail =
        "expected a form body (Content-Type: application/x-www-form-urlencoded), got ";
    if (content_type.empty())
        detail += "no Content-Type";
    else
        detail.append("'").append(content_type).append("'");
    Response r = problem_response(Status::UnsupportedMediaType, detail);
    r.add_header("Accept-Post", "application/x-www-form-urlencoded");
    return r;
}

namespace {

std::string parse_error(UrlencodedStatus s, std::size_t max_fields) {
    if (s == UrlencodedStatus::malformed) return "malformed percent-encoding in the form body";
    return "more than " + std::to_string(max_fields) + " form fields";
}

}  // namespace

}  // namespace detail

FormData::FormData(std::string_view urlencoded, std::size_t max_fields) {
    const detail::UrlencodedStatus s = detail::parse_urlencoded(urlencoded, items_, max_fields);
    if (s != detail::UrlencodedStatus::ok)
        throw std::invalid_argument("FormData: " + detail::parse_error(s, max_fields));
}

std::optional<FormData> FormData::parse(std::string_view urlencoded, std::string& why,
                                        std::size_t max_fields) {
    std::optional<FormData> out(std::in_place);
    const detail::UrlencodedStatus s =
        detail::parse_urlencoded(urlencoded, out->items_, max_fields);
    if (s == detail::UrlencodedStatus::ok) return out;
    why = detail::parse_error(s, max_fields);
    return std::nullopt;
}

std::optional<FormData> FormData::from_body(Request& req, Response& error, std::size_t max_fields) {
    const std::string_view type = req.header("Content-Type");
    if (!detail::is_form_media_type(type)) {
        error = detail::unsupported_form_media_type(type);
        return std::nullopt;
    }
    std::string why;
    std::optional<FormData> out = parse(req.body(), why, max_fields);
    if (!out) error = problem_response(Status::BadRequest, why);
    return out;
}

std::optional<std::string_view> FormData::get(std::string_view name) const noexcept {
    for (const auto& [k, v] : items_)
        if (k == name) return std::string_view(v);
    return std::nullopt;
}

std::vector<std::string_view> FormData::all(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const auto& [k, v] : items_)
        if (k == name) out.emplace_back(v);
    return out;
}

}  // namespace vela
