#include "vela/middleware/security_headers.hpp"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "vela/base/ascii.hpp"

namespace vela {

namespace {

[[noreturn]] void refuse(std::string_view what) {
    throw std::invalid_argument("vela::security_headers: " + std::string(what));
}

// Printable ASCII, spaces and tabs: what these header values are made of.
bool printable(std::string_view s) noexcept {
    for (char c : s)
        if ((c < 0x20 && c != '\t') || c > 0x7e) return false;
    return true;
}

void check_one_of(std::string_view header, std::string_view value,
                  std::initializer_list<std::string_view> allowed) {
    for (std::string_view a : allowed)
        if (value == a) return;
    std::string list;
    for (std::string_view a : allowed) list.append(list.empty() ? "" : ", ").append(a);
    refuse(std::string(header) + " \"" + std::string(value) + "\" is not one of " + list);
}

// True when the policy has a frame-ancestors directive (directives are ';'-separated, their
// names case-insensitive; CSP 3, 2.2).
bool has_frame_ancestors(std::string_view policy) noexcept {
    while (!policy.empty()) {
        const std::size_t semi = policy.find(';');
        std::string_view d = ascii::trim_ows(policy.substr(0, semi));
        d = d.substr(0, d.find_first_of(" \t"));
        if (ascii::iequals(d, "frame-ancestors")) return true;
        if (semi == std::string_view::npos) break;
        policy.remove_prefix(semi + 1);
    }
    return false;
}

struct Entry {
    std::string name;
    std::string value;
    bool secure_only;  // HSTS
};

struct Headers {
    std::vector<Entry> entries;  // at most 32 (one bit each in the scan)
};

// Which of the entries' names the response already has (one pass over its header fields).
std::uint32_t present(const Headers& h, const Response& res) noexcept {
    std::uint32_t mask = 0;
    res.for_each_header([&](std::string_view name, std::string_view) {
        for (std::size_t i = 0; i < h.entries.size(); ++i)
            if (ascii::iequals(name, h.entries[i].name)) mask |= std::uint32_t{1} << i;
    });
    return mask;
}

}  // namespace

std::function<void(Request&, Response&)> security_headers(SecurityHeadersOptions o) {
    auto h = std::make_shared<Headers>();
    auto add = [&](std::string_view name, std::string value, bool secure_only = false) {
        h->entries.push_back(Entry{std::string(name), std::move(value), secure_only});
    };

    if (o.hsts) {
        if (o.hsts_max_age.count() < 0) refuse("hsts_max_age is negative");
        if (o.hsts_preload && (!o.hsts_include_subdomains || o.hsts_max_age.count() < 31536000))
            refuse("hsts_preload needs hsts_include_subdomains and hsts_max_age of a year or more");
        std::string v = "max-age=" + std::to_string(o.hsts_max_age.count());
        if (o.hsts_include_subdomains) v += "; includeSubDomains";
        if (o.hsts_preload) v += "; preload";
        add("Strict-Transport-Security", std::move(v), true);
    }
    if (o.nosniff) add("X-Content-Type-Options", "nosniff");

    std::string ancestors;
    switch (o.frame) {
        case FrameOptions::deny:
            add("X-Frame-Options", "DENY");
            ancestors = "frame-ancestors 'none'";
            break;
        case FrameOptions::same_origin:
            add("X-Frame-Options", "SAMEORIGIN");
            ancestors = "frame-ancestors 'self'";
            break;
        case FrameOptions::off:
            break;
    }

    std::string policy(ascii::trim_ows(o.content_security_policy));
    if (!printable(policy)) refuse("content_security_policy has a control or non-ASCII byte");
    while (!policy.empty() && (policy.back() == ';' || policy.back() == ' ')) policy.pop_back();
    if (policy.empty() && o.csp_report_only)
        refuse("csp_report_only is set but content_security_policy is empty");
    if (!policy.empty() && o.csp_report_only) {
        add("Content-Security-Policy-Report-Only", policy);
        if (!ancestors.empty()) add("Content-Security-Policy", ancestors);
    } else if (!policy.empty()) {
        if (!ancestors.empty() && !has_frame_ancestors(policy)) policy += "; " + ancestors;
        add("Content-Security-Policy", policy);
    } else if (!ancestors.empty()) {
        add("Content-Security-Policy", ancestors);
    }

    if (!o.referrer_policy.empty()) {
        ascii::for_each_list_item(o.referrer_policy, [](std::string_view t) {
            check_one_of(
                "referrer_policy", t,
                {"no-referrer", "no-referrer-when-downgrade", "origin", "origin-when-cross-origin",
                 "same-origin", "strict-origin", "strict-origin-when-cross-origin", "unsafe-url"});
        });
        if (!printable(o.referrer_policy) || ascii::trim_ows(o.referrer_policy).empty())
            refuse("referrer_policy is malformed");
        add("Referrer-Policy", std::string(ascii::trim_ows(o.referrer_policy)));
    }
    if (!o.cross_origin_opener_policy.empty()) {
        check_one_of(
            "cross_origin_opener_policy", o.cross_origin_opener_policy,
            {"same-origin", "same-origin-allow-popups", "noopener-allow-popups", "unsafe-none"});
        add("Cross-Origin-Opener-Policy", o.cross_origin_opener_policy);
    }
    if (!o.cross_origin_resource_policy.empty()) {
        check_one_of("cross_origin_resource_policy", o.cross_origin_resource_policy,
                     {"same-origin", "same-site", "cross-origin"});
        add("Cross-Origin-Resource-Policy", o.cross_origin_resource_policy);
    }
    if (!o.cross_origin_embedder_policy.empty()) {
        check_one_of("cross_origin_embedder_policy", o.cross_origin_embedder_policy,
                     {"require-corp", "credentialless", "unsafe-none"});
        add("Cross-Origin-Embedder-Policy", o.cross_origin_embedder_policy);
    }
    if (!o.permissions_policy.empty()) {
        if (!printable(o.permissions_policy))
            refuse("permissions_policy has a control or non-ASCII byte");
        add("Permissions-Policy", std::string(ascii::trim_ows(o.permissions_policy)));
    }

    return [h = std::shared_ptr<const Headers>(std::move(h))](Request& req, Response& res) {
        const std::uint32_t have = present(*h, res);
        const bool https = req.secure() || req.scheme() == "https";
        for (std::size_t i = 0; i < h->entries.size(); ++i) {
            const Entry& e = h->entries[i];
            if (have & (std::uint32_t{1} << i)) continue;
            if (e.secure_only && !https) continue;
            res.add_header(e.name, e.value);
        }
    };
}

}  // namespace vela
