// Problem responses (RFC 9457) and the non-template parts of Json<T> and Query<T> (Form<T>
// and the urlencoded parser: form.cpp).

#include "vela/web/extract.hpp"

#include "vela/base/ascii.hpp"

namespace vela {

namespace {

struct ProblemItem {
    std::string detail;
    std::optional<std::string> pointer;    // RFC 9457's example: a JSON Pointer fragment
    std::optional<std::string> parameter;  // a query parameter's name
};
VELA_REFLECT(ProblemItem, detail, pointer, parameter)

// RFC 9457 section 3.1 members; "type" is about:blank, so "title" is the status phrase.
struct Problem {
    std::string_view type = "about:blank";
    std::string_view title;
    int status = 0;
    std::optional<std::string> detail;  // left out when there is nothing to say
    std::optional<std::vector<ProblemItem>> errors;
};
VELA_REFLECT(Problem, type, title, status, detail, errors)

Response to_response(const Problem& p) {
    json::WriteOptions lenient;
    lenient.replace_invalid_utf8 = true;  // details may quote bytes from the request
    lenient.skip_null_members = true;     // no "detail" or "errors" when there are none
    std::string body;
    (void)json::write_to(body, p, lenient);
    return Response::with_body(static_cast<Status>(p.status), std::move(body), mime::problem_json);
}

Problem make_problem(Status status, std::string detail) {
    Problem p;
    p.title = reason_phrase(status);
    p.status = code(status);
    if (!detail.empty()) p.detail = std::move(detail);
    return p;
}

}  // namespace

Response problem_response(Status status, std::string_view detail) {
    return to_response(make_problem(status, std::string(detail)));
}

Response problem_response(const json::Error& error) {
    Problem p = make_problem(Status::BadRequest, "invalid JSON body: " + error.to_string());
    p.errors.emplace().push_back(ProblemItem{error.message, "#" + error.pointer, std::nullopt});
    return to_response(p);
}

namespace detail {

// RFC 9110 section 8.3.1: media-type = type "/" subtype parameters, case-insensitive.
bool is_json_media_type(std::string_view content_type) noexcept {
    if (content_type == mime::json) return true;  // the usual spelling, in one comparison
    const std::string_view type = ascii::trim_ows(content_type.substr(0, content_type.find(';')));
    const std::size_t slash = type.find('/');
    if (slash == std::string_view::npos || slash == 0) return false;
    const std::string_view subtype = type.substr(slash + 1);
    if (ascii::iequals(type, "application/json")) return true;
    return subtype.size() > 5 && ascii::iequals(subtype.substr(subtype.size() - 5), "+json");
}

Response unsupported_json_media_type(std::string_view content_type) {
    std::string detail = "expected a JSON body (Content-Type: application/json), got ";
    if (content_type.empty())
        detail += "no Content-Type";
    else
        detail.append("'").append(content_type).append("'");
    Response r = problem_response(Status::UnsupportedMediaType, detail);
    r.add_header("Accept-Post", "application/json");  // RFC 9110 15.5.16 (pointers to formats)
    return r;
}

Response query_problem(std::string_view name, std::string_view message) {
    Problem p = make_problem(
        Status::BadRequest, "query parameter '" + std::string(name) + "': " + std::string(message));
    p.errors.emplace().push_back(
        ProblemItem{std::string(message), std::nullopt, std::string(name)});
    return to_response(p);
}

Response form_problem(std::string_view name, std::string_view message) {
    Problem p = make_problem(Status::BadRequest,
                             "form field '" + std::string(name) + "': " + std::string(message));
    std::string pointer = "#/";  // RFC 6901: '~' is ~0, '/' is ~1
    for (char c : name) c == '~' ? pointer += "~0" : c == '/' ? pointer += "~1" : pointer += c;
    p.errors.emplace().push_back(ProblemItem{std::string(message), pointer, std::nullopt});
    return to_response(p);
}

namespace {

// The parameter a query violation is about: the member named first ("/tag/2" is "tag").
std::string parameter_of(std::string_view pointer) {
    std::string name;
    const std::string_view first = pointer.substr(1, pointer.find('/', 1) - 1);
    for (std::size_t i = 0; i < first.size(); ++i) {  // RFC 6901's ~0 and ~1
        if (first[i] == '~' && i + 1 < first.size())
            name += first[++i] == '1' ? '/' : '~';
        else
            name += first[i];
    }
    return name;
}

}  // namespace

std::string violations_detail(const json::Violations& violations, ValueSource source) {
    std::string detail = source == ValueSource::json_body ? "the JSON body"
                         : source == ValueSource::query   ? "the query"
                                                          : "the form";
    detail += violations.size() == 1 ? " breaks a constraint: " : " breaks constraints: ";
    bool first = true;
    for (const json::Violation& v : violations) {
        if (!first) detail += "; ";
        first = false;
        if (v.pointer.empty())
            detail += "the value";
        else if (source == ValueSource::query)
            detail.append("'").append(parameter_of(v.pointer)).append("'");
        else
            detail += v.pointer;
        detail.append(" ").append(v.message);
    }
    return detail;
}

Response validation_problem(const json::Violations& violations, ValueSource source) {
    Problem p = make_problem(Status::UnprocessableContent, violations_detail(violations, source));
    auto& errors = p.errors.emplace();
    errors.reserve(violations.size());
    for (const json::Violation& v : violations) {
        if (source == ValueSource::query && !v.pointer.empty())
            errors.push_back(ProblemItem{v.message, std::nullopt, parameter_of(v.pointer)});
        else
            errors.push_back(ProblemItem{v.message, "#" + v.pointer, std::nullopt});
    }
    return to_response(p);
}

QueryParams::QueryParams(std::string_view q) {
    malformed = parse_urlencoded(q, items) != UrlencodedStatus::ok;
}

}  // namespace detail

}  // namespace vela
