#pragma once
// The TechEmpower fortunes page, shared by the database bench (bench/db/app.cpp) and the
// template micro benchmark (bench/micro/template_bench.cpp): the row type, the page rendered
// and its mustache template (the standard HTML table, messages escaped).

#include <string>
#include <string_view>
#include <vector>

#include "vela/json/json.hpp"

namespace bench {

/// A Fortune row.
struct Fortune {
    int id = 0;
    std::string message;
};
VELA_REFLECT(Fortune, id, message)

/// What the fortunes template renders: the rows, sorted by message.
struct FortunesPage {
    std::vector<Fortune> fortunes;
};
VELA_REFLECT(FortunesPage, fortunes)

/// The fortunes page as a mustache template.
constexpr std::string_view kFortunes =
    "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
    "<tr><th>id</th><th>message</th></tr>"
    "{{#fortunes}}<tr><td>{{id}}</td><td>{{message}}</td></tr>{{/fortunes}}"
    "</table></body></html>";

}  // namespace bench
