#include "vela/http/request.hpp"

#include "vela/base/ascii.hpp"

namespace vela {

namespace {
int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
    out.clear();
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= in.size()) return false;
            int hi = hex_value(in[i + 1]);
            int lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) return false;
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return true;
}

void Request::reset() noexcept {
    method_ = Method::GET;
    method_name_ = target_ = path_ = query_ = host_ = body_ = {};
    version_ = 11;
    keep_alive_ = true;
    param_count_ = 0;
    attr_count_ = 0;
    headers_.clear();
    streamed_body_ = nullptr;
    whole_body_.reset();
    if (!owned_body_.empty()) [[unlikely]]
        std::string().swap(owned_body_);  // a pooled request does not keep a large body
    if (extras_) [[unlikely]]
        reset_extras();
}

const ConnectionInfo Request::kNoConnection{};

void Request::reset_extras() noexcept {
    extras_ = forwarded_ip_ = forwarded_scheme_ = false;
    protocol_ = {};
    locals_.clear();
}

void Request::set_forwarded(std::string_view client_ip, std::string_view scheme,
                            std::string_view host) {
    extras_ = true;
    if (!client_ip.empty()) {
        fwd_ip_.assign(client_ip);
        forwarded_ip_ = true;
    }
    if (!scheme.empty()) {
        fwd_scheme_.assign(scheme);
        forwarded_scheme_ = true;
    }
    if (!host.empty()) {
        fwd_host_.assign(host);
        host_ = fwd_host_;
    }
}

void Request::set_decoded_path(std::string decoded) {
    decoded_path_ = std::move(decoded);
    path_ = decoded_path_;
}

std::string_view Request::header(std::string_view name) const noexcept {
    for (const Header& h : headers_)
        if (ascii::iequals(h.name, name)) return h.value;
    return {};
}

bool Request::has_header(std::string_view name) const noexcept {
    for (const Header& h : headers_)
        if (ascii::iequals(h.name, name)) return true;
    return false;
}

std::optional<std::string> Request::query(std::string_view name) const {
    std::string_view q = query_;
    std::string key;
    while (!q.empty()) {
        std::size_t amp = q.find('&');
        std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
        std::size_t eq = pair.find('=');
        std::string_view k = pair.substr(0, eq);
        std::string_view v =
            eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        bool match = k == name;
        if (!match && k.find_first_of("%+") != std::string_view::npos) {
            match = percent_decode(k, key, true) && key == name;
        }
        if (match) {
            std::string out;
            if (!percent_decode(v, out, true)) return std::nullopt;
            return out;
        }
    }
    return std::nullopt;
}

std::string_view Request::param(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < param_count_; ++i)
        if (params_[i].name == name) return params_[i].value;
    return {};
}

std::optional<long long> Request::param_int(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < param_count_; ++i) {
        if (params_[i].name != name) continue;
        std::string_view v = params_[i].value;
        long long out = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
        if (ec != std::errc{} || p != v.data() + v.size() || v.empty()) return std::nullopt;
        return out;
    }
    return std::nullopt;
}

bool Request::add_param(std::string_view name, std::string_view value) noexcept {
    if (param_count_ >= kMaxParams) return false;
    params_[param_count_++] = Param{name, value};
    return true;
}

void Request::set_attribute(std::string_view key, std::string_view value) {
    for (std::size_t i = 0; i < attr_count_; ++i) {
        if (attributes_[i].key == key) {
            attributes_[i].value.assign(value);
            return;
        }
    }
    if (attr_count_ < attributes_.size()) {
        attributes_[attr_count_].key.assign(key);
        attributes_[attr_count_].value.assign(value);
    } else {
        attributes_.push_back(Attribute{std::string(key), std::string(value)});
    }
    ++attr_count_;
}

std::optional<std::string_view> Request::attribute(std::string_view key) const noexcept {
    for (std::size_t i = 0; i < attr_count_; ++i)
        if (attributes_[i].key == key) return std::string_view(attributes_[i].value);
    return std::nullopt;
}

void Request::rebase(const char* from, std::size_t len, const char* to) noexcept {
    const auto move = [&](std::string_view& v) {
        if (!v.empty() && v.data() >= from && v.data() < from + len)
            v = std::string_view(to + (v.data() - from), v.size());
    };
    move(method_name_);
    move(target_);
    move(path_);
    move(query_);
    move(host_);
    move(body_);
    move(protocol_);
    for (Header& h : headers_) {
        move(h.name);
        move(h.value);
    }
    for (std::uint8_t i = 0; i < param_count_; ++i) {
        move(params_[i].name);
        move(params_[i].value);
    }
}

}  // namespace vela
