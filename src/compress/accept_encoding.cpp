// Coding names and the Accept-Encoding field (RFC 9110 12.5.3), read with the list and
// parameter rules of 5.6.1 and 5.6.6 and the qvalue grammar of 12.4.2.
#include <optional>
#include <string_view>

#include "vela/base/ascii.hpp"
#include "vela/base/field_cursor.hpp"
#include "vela/compress/codec.hpp"

namespace vela::compress {

namespace {

using Cursor = ascii::FieldCursor;

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths (RFC 9110 12.4.2).
std::optional<int> parse_qvalue(std::string_view v) noexcept {
    if (v.empty() || v.size() > 5 || (v[0] != '0' && v[0] != '1')) return std::nullopt;
    int q = (v[0] - '0') * 1000;
    if (v.size() == 1) return q;
    if (v[1] != '.') return std::nullopt;
    int scale = 100;
    for (std::size_t k = 2; k < v.size(); ++k, scale /= 10) {
        if (v[k] < '0' || v[k] > '9' || (q == 1000 && v[k] != '0')) return std::nullopt;
        q += (v[k] - '0') * scale;
    }
    return q;
}

// Reads the parameters after a coding up to the end of its element (not the comma):
// `*( OWS ";" OWS [ name OWS "=" OWS ( token / quoted-string ) ] )`. The whitespace around "="
// is more than 5.6.6 allows, accepted because senders write it and it is unambiguous. Sets `q`
// from the first "q"; false when the element is malformed.
bool read_params(Cursor& c, int& q) noexcept {
    bool have_q = false;
    for (;;) {
        c.ows();
        if (c.end() || c.at(',')) return true;
        if (!c.at(';')) return false;
        ++c.i;
        c.ows();
        if (c.end() || c.at(',') || c.at(';')) continue;  // an empty parameter is allowed
        const std::string_view param = c.token();
        if (param.empty()) return false;
        c.ows();
        if (!c.at('=')) return false;
        ++c.i;
        c.ows();
        const bool is_q = ascii::iequals(param, "q");
        if (c.at('"')) {
            // weight is "q=" qvalue, never quoted; other parameters may be.
            if (!c.quoted() || (is_q && !have_q)) return false;
            continue;
        }
        const std::string_view value = c.token();
        if (value.empty()) return false;
        if (is_q && !have_q) {
            const auto v = parse_qvalue(value);
            if (!v) return false;
            q = *v;
            have_q = true;
        }
    }
}

constexpr int index(Coding c) noexcept { return static_cast<int>(c); }

}  // namespace

std::string_view name(Coding c) noexcept {
    switch (c) {
        case Coding::identity:
            return "identity";
        case Coding::gzip:
            return "gzip";
        case Coding::br:
            return "br";
        case Coding::zstd:
            return "zstd";
    }
    return "identity";
}

std::optional<Coding> parse_coding(std::string_view token) noexcept {
    // x-gzip: RFC 9110 8.4.1.3 asks recipients to treat it as gzip.
    if (ascii::iequals(token, "gzip") || ascii::iequals(token, "x-gzip")) return Coding::gzip;
    if (ascii::iequals(token, "br")) return Coding::br;
    if (ascii::iequals(token, "zstd")) return Coding::zstd;
    if (ascii::iequals(token, "identity")) return Coding::identity;
    return std::nullopt;
}

std::string_view file_suffix(Coding c) noexcept {
    switch (c) {
        case Coding::identity:
            return "";
        case Coding::gzip:
            return ".gz";
        case Coding::br:
            return ".br";
        case Coding::zstd:
            return ".zst";
    }
    return "";
}

AcceptEncoding::AcceptEncoding(std::string_view header, bool present) noexcept : present_(present) {
    if (!present) return;
    Cursor c{header};
    while (!c.end()) {
        c.ows();
        if (c.at(',')) {  // empty list elements are allowed (5.6.1)
            ++c.i;
            continue;
        }
        if (c.end()) break;
        const std::string_view coding = c.token();
        int q = 1000;
        if (coding.empty() || !read_params(c, q)) {
            c.skip_element();
            continue;
        }
        if (c.at(',')) ++c.i;
        if (coding == "*") {
            if (!has_star_) star_ = q;
            has_star_ = true;
        } else if (const auto known = parse_coding(coding)) {
            int& slot = q_[index(*known)];
            if (slot < 0) slot = q;
        }  // codings vela cannot produce are irrelevant to negotiation
    }
}

int AcceptEncoding::quality(Coding c) const noexcept {
    if (index(c) > index(Coding::zstd)) return 0;
    if (!present_) return 1000;
    if (q_[index(c)] >= 0) return q_[index(c)];
    // identity is acceptable unless refused by name or by "*;q=0" (12.5.3); "*" with a
    // non-zero q-value does not lower it.
    if (c == Coding::identity) return has_star_ && star_ == 0 ? 0 : 1000;
    return has_star_ ? star_ : 0;
}

Coding negotiate(const AcceptEncoding& accept, std::span<const Coding> preference) noexcept {
    if (!accept.present()) return Coding::identity;  // any coding is allowed; none is asked for
    Coding best = Coding::identity;
    int best_q = 0;
    for (const Coding c : preference) {
        const int q = accept.quality(c);
        if (q > best_q) {  // strictly greater: ties stay with the earlier preference
            best = c;
            best_q = q;
        }
    }
    return best;
}

}  // namespace vela::compress
