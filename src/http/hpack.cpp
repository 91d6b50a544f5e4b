// HPACK (RFC 7541): integers, string literals, the tables and the field representations.
// The Huffman code is in hpack_huffman.cpp.

#include "vela/http/hpack.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace vela::hpack {
namespace {

// Appendix A; index 0 is unused.
constexpr Field kStatic[static_table_size + 1] = {
    {"", ""},
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
};

// Names of the static table in an open-addressing hash table built at compile time: slot ->
// the first index with that name (0 for an empty slot). Entries sharing a name are adjacent
// (:method, :path, :scheme, :status), so a lookup compares one name, then values.
constexpr std::size_t kNameSlots = 128;
constexpr std::size_t name_hash(std::string_view n) noexcept {
    if (n.empty()) return 0;
    const auto at = [&](std::size_t i) {
        return static_cast<std::size_t>(static_cast<unsigned char>(n[i]));
    };
    return (n.size() * 131 + at(0) * 7 + at(n.size() / 2) * 3 + at(n.size() - 1)) % kNameSlots;
}
using NameIndex = std::array<std::uint8_t, kNameSlots>;
constexpr NameIndex build_name_index() {
    NameIndex t{};
    for (std::size_t i = 1; i <= static_table_size; ++i) {
        if (kStatic[i].name == kStatic[i - 1].name) continue;
        std::size_t h = name_hash(kStatic[i].name);
        while (t[h] != 0) h = (h + 1) % kNameSlots;
        t[h] = static_cast<std::uint8_t>(i);
    }
    return t;
}
constexpr NameIndex kNameIndex = build_name_index();

// A filter for find(), not a hash of every byte: the length and three bytes tell apart most
// names a table holds, at the cost of four loads.
std::uint32_t name_key(std::string_view s) noexcept {
    if (s.empty()) return 0;
    const auto at = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i]));
    };
    return static_cast<std::uint32_t>(s.size()) ^ at(0) << 8 ^ at(s.size() / 2) << 16 ^
           at(s.size() - 1) << 24;
}

// Equality of two strings, inline: the tables' names and values are short, and a call to
// memcmp per comparison was a third of the encoder's time. Compares 8 bytes at a time (the
// last word overlapping the one before), or two overlapping 4-byte words below 8.
bool same(std::string_view a, std::string_view b) noexcept {
    const std::size_t n = a.size();
    if (n != b.size()) return false;
    const char* p = a.data();
    const char* q = b.data();
    const auto load8 = [](const char* x) {
        std::uint64_t v;
        std::memcpy(&v, x, 8);
        return v;
    };
    const auto load4 = [](const char* x) {
        std::uint32_t v;
        std::memcpy(&v, x, 4);
        return v;
    };
    if (n >= 8) {
        for (std::size_t i = 0; i + 8 < n; i += 8) {
            if (load8(p + i) != load8(q + i)) return false;
        }
        return load8(p + n - 8) == load8(q + n - 8);
    }
    if (n >= 4) return load4(p) == load4(q) && load4(p + n - 4) == load4(q + n - 4);
    for (std::size_t i = 0; i < n; ++i) {
        if (p[i] != q[i]) return false;
    }
    return true;
}

// Integers of 5.1 hold at most 2^32-1: five continuation bytes (7 bits each) suffice.
constexpr unsigned kMaxContinuation = 5;

}  // namespace

std::string_view error_message(Error e) noexcept {
    switch (e) {
        case Error::none:
            return "no error";
        case Error::truncated:
            return "header block ends inside a field";
        case Error::integer_overflow:
            return "integer too large";
        case Error::index_zero:
            return "indexed field with index 0";
        case Error::index_out_of_range:
            return "index past the static and dynamic tables";
        case Error::string_too_long:
            return "name or value too long";
        case Error::huffman_eos:
            return "EOS symbol in a Huffman string";
        case Error::huffman_padding:
            return "bad padding after a Huffman string";
        case Error::table_size_too_large:
            return "table size update over our setting";
        case Error::table_size_update_late:
            return "table size update after a field";
        case Error::table_size_update_missing:
            return "expected a table size update";
        case Error::header_list_too_large:
            return "header list too large";
    }
    return "unknown HPACK error";
}

Error decode_integer(const std::uint8_t*& p, const std::uint8_t* end, unsigned prefix_bits,
                     std::uint32_t& value) noexcept {
    if (p == end) return Error::truncated;
    const std::uint32_t mask = (1u << prefix_bits) - 1;
    std::uint64_t v = *p++ & mask;
    if (v < mask) {
        value = static_cast<std::uint32_t>(v);
        return Error::none;
    }
    for (unsigned i = 0; i < kMaxContinuation; ++i) {
        if (p == end) return Error::truncated;
        const std::uint8_t b = *p++;
        v += static_cast<std::uint64_t>(b & 0x7F) << (7 * i);
        if (v > UINT32_MAX) return Error::integer_overflow;
        if ((b & 0x80) == 0) {
            value = static_cast<std::uint32_t>(v);
            return Error::none;
        }
    }
    return Error::integer_overflow;
}

void encode_integer(std::string& out, std::uint8_t first, unsigned prefix_bits,
                    std::uint32_t value) {
    const std::uint32_t mask = (1u << prefix_bits) - 1;
    if (value < mask) {
        out.push_back(static_cast<char>(first | value));
        return;
    }
    out.push_back(static_cast<char>(first | mask));
    value -= mask;
    while (value >= 0x80) {
        out.push_back(static_cast<char>(0x80 | (value & 0x7F)));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

void encode_string(std::string_view s, std::string& out) {
    const std::size_t huff = huffman_size(s);
    if (huff < s.size()) {
        encode_integer(out, 0x80, 7, static_cast<std::uint32_t>(huff));
        huffman_encode(s, huff, out);
    } else {
        encode_integer(out, 0, 7, static_cast<std::uint32_t>(s.size()));
        out.append(s);
    }
}

const Field& static_entry(std::size_t index) noexcept { return kStatic[index]; }

namespace {

// RFC 9113 8.2.1: visible ASCII but upper case and ':'.
constexpr std::array<bool, 256> kNameChar = [] {
    std::array<bool, 256> t{};
    for (int c = 0x21; c < 0x7f; ++c) t[c] = !(c >= 'A' && c <= 'Z') && c != ':';
    return t;
}();

// True when one of the 8 bytes of `x` is zero.
constexpr bool has_zero_byte(std::uint64_t x) noexcept {
    return ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) != 0;
}

}  // namespace

bool valid_name(std::string_view name) noexcept {
    if (name.empty()) return false;
    for (unsigned char c : name)
        if (!kNameChar[c]) return false;
    return true;
}

bool valid_value(std::string_view v) noexcept {
    if (v.empty()) return true;
    if (v.front() == ' ' || v.front() == '\t' || v.back() == ' ' || v.back() == '\t') return false;
    // NUL, LF or CR, eight bytes at a time.
    const char* p = v.data();
    std::size_t n = v.size();
    for (; n >= 8; p += 8, n -= 8) {
        std::uint64_t x;
        std::memcpy(&x, p, 8);
        if (has_zero_byte(x) || has_zero_byte(x ^ 0x0a0a0a0a0a0a0a0aull) ||
            has_zero_byte(x ^ 0x0d0d0d0d0d0d0d0dull)) {
            return false;
        }
    }
    for (; n > 0; ++p, --n)
        if (*p == 0 || *p == '\n' || *p == '\r') return false;
    return true;
}

bool valid_field(std::string_view name, std::string_view value) noexcept {
    if (!name.empty() && name[0] == ':') name.remove_prefix(1);
    return valid_name(name) && valid_value(value);
}

std::size_t static_find(std::string_view name, std::string_view value,
                        std::size_t& name_index) noexcept {
    name_index = 0;
    std::size_t h = name_hash(name);
    for (;;) {
        const std::size_t i = kNameIndex[h];
        if (i == 0) return 0;
        if (same(kStatic[i].name, name)) {
            name_index = i;
            break;
        }
        h = (h + 1) % kNameSlots;
    }
    for (std::size_t i = name_index; i <= static_table_size && same(kStatic[i].name, name); ++i) {
        if (same(kStatic[i].value, value)) return i;
    }
    return 0;
}

// ---- DynamicTable ----

DynamicTable::DynamicTable(std::uint32_t capacity) : max_size_(capacity), capacity_(capacity) {}

void DynamicTable::regrow(std::size_t slots) {
    std::vector<Entry> ring(slots);
    for (std::size_t i = 0; i < count_; ++i) ring[count_ - 1 - i] = std::move(ring_[slot(i)]);
    ring_ = std::move(ring);
    head_ = count_ % ring_.size();
}

void DynamicTable::set_capacity(std::uint32_t capacity) {
    capacity_ = std::max(capacity, capacity_);
}

void DynamicTable::evict_to(std::size_t limit) noexcept {
    while (size_ > limit) {
        const Entry& oldest = ring_[slot(count_ - 1)];
        size_ -= oldest.name.size() + oldest.value.size() + entry_overhead;
        --count_;
    }
}

void DynamicTable::set_max_size(std::uint32_t max) noexcept {
    max_size_ = std::min(max, capacity_);
    evict_to(max_size_);
}

void DynamicTable::insert(std::string_view name, std::string_view value, bool valid) {
    const std::size_t need = name.size() + value.size() + entry_overhead;
    if (need > max_size_) {
        evict_to(0);
        return;
    }
    evict_to(max_size_ - need);
    // Each entry takes at least 32 bytes: max_size / 32 of them at most.
    if (count_ == ring_.size())
        regrow(std::min<std::size_t>(std::max<std::size_t>(8, 2 * count_),
                                     capacity_ / entry_overhead + 1));
    Entry& e = ring_[head_];
    e.name.assign(name);
    e.value.assign(value);
    e.name_key = name_key(name);
    e.valid = valid;
    ++inserted_;
    head_ = (head_ + 1) % ring_.size();
    ++count_;
    size_ += need;
}

long DynamicTable::find(std::string_view name, std::string_view value,
                        long& name_at) const noexcept {
    name_at = -1;
    const std::uint32_t key = name_key(name);
    for (std::size_t i = 0; i < count_; ++i) {
        const Entry& e = ring_[slot(i)];
        if (e.name_key != key || !same(e.name, name)) continue;
        if (name_at < 0) name_at = static_cast<long>(i);
        if (same(e.value, value)) return static_cast<long>(i);
    }
    return -1;
}

// ---- Decoder ----

Decoder::Decoder(const DecoderLimits& limits) : table_(limits.max_table_size), limits_(limits) {}

void Decoder::set_max_table_size(std::uint32_t max) {
    table_.set_capacity(max);
    if (max < table_.max_size()) required_update_ = std::min(required_update_, max);
    limits_.max_table_size = max;
}

Error Decoder::begin_block(const std::uint8_t*& p, const std::uint8_t* end) noexcept {
    list_size_ = 0;
    // Size updates (6.3) may only open a block (4.2); several may (a decrease, then the
    // final size).
    bool first = true;
    while (p != end && (*p & 0xE0) == 0x20) {
        std::uint32_t size = 0;
        if (Error e = decode_integer(p, end, 5, size); e != Error::none) return e;
        if (size > limits_.max_table_size) return Error::table_size_too_large;
        if (first && required_update_ != UINT32_MAX) {
            if (size > required_update_) return Error::table_size_update_missing;
            required_update_ = UINT32_MAX;
        }
        first = false;
        table_.set_max_size(size);
    }
    if (required_update_ != UINT32_MAX) return Error::table_size_update_missing;
    return Error::none;
}

Error Decoder::lookup(std::uint32_t index, Field& f) const noexcept {
    if (index == 0) return Error::index_zero;
    if (index <= static_table_size) {
        f = kStatic[index];
        return Error::none;
    }
    const std::size_t i = index - static_table_size - 1;
    if (i >= table_.count()) return Error::index_out_of_range;
    f = table_.entry(i);
    return Error::none;
}

Error Decoder::read_string(const std::uint8_t*& p, const std::uint8_t* end, std::string& buf,
                           std::string_view& s) {
    if (p == end) return Error::truncated;
    const bool huffman = (*p & 0x80) != 0;
    std::uint32_t len = 0;
    if (Error e = decode_integer(p, end, 7, len); e != Error::none) return e;
    if (len > limits_.max_string_length) return Error::string_too_long;
    if (len > static_cast<std::size_t>(end - p)) return Error::truncated;
    const std::string_view raw(reinterpret_cast<const char*>(p), len);
    p += len;
    if (!huffman) {
        s = raw;
        return Error::none;
    }
    // Grows to the connection's longest string, then stays.
    const std::size_t room = std::size_t{len} * 8 / 5 + 1;
    if (buf.size() < room) buf.resize(std::max(room, 2 * buf.size()));
    std::size_t n = 0;
    if (Error e = huffman_decode(raw, buf.data(), n); e != Error::none) return e;
    if (n > limits_.max_string_length) return Error::string_too_long;
    s = std::string_view(buf.data(), n);
    return Error::none;
}

Error Decoder::next(const std::uint8_t*& p, const std::uint8_t* end, DecodedField& f) {
    const std::uint8_t b = *p;
    f.never_indexed = false;
    if (b & 0x80) {  // 6.1 indexed field
        std::uint32_t index = 0;
        if (Error e = decode_integer(p, end, 7, index); e != Error::none) return e;
        Field entry;
        if (Error e = lookup(index, entry); e != Error::none) return e;
        f.name = entry.name;
        f.value = entry.value;
        f.valid = index <= static_table_size || table_.entry_valid(index - static_table_size - 1);
    } else if ((b & 0xE0) == 0x20) {  // 6.3 after the first field
        return Error::table_size_update_late;
    } else {
        // 6.2.1 (01xxxxxx, 6-bit index), 6.2.2 (0000xxxx) and 6.2.3 (0001xxxx, 4-bit index)
        const bool indexing = (b & 0x40) != 0;
        const unsigned prefix = indexing ? 6 : 4;
        f.never_indexed = !indexing && (b & 0x10) != 0;
        f.valid = false;
        std::uint32_t index = 0;
        if (Error e = decode_integer(p, end, prefix, index); e != Error::none) return e;
        if (index == 0) {
            if (Error e = read_string(p, end, name_buf_, f.name); e != Error::none) return e;
        } else {
            Field entry;
            if (Error e = lookup(index, entry); e != Error::none) return e;
            f.name = entry.name;
        }
        if (Error e = read_string(p, end, value_buf_, f.value); e != Error::none) return e;
        if (indexing) {
            // Inserting may evict the entry the name came from (4.4): copy it out first.
            if (index > static_table_size) {
                name_buf_.assign(f.name);
                f.name = name_buf_;
            }
            f.valid = valid_field(f.name, f.value);
            table_.insert(f.name, f.value, f.valid);
        }
    }
    list_size_ += f.name.size() + f.value.size() + entry_overhead;
    if (list_size_ > limits_.max_header_list_size) return Error::header_list_too_large;
    return Error::none;
}

// ---- Encoder ----

namespace {

// Fields whose values change from message to message: indexing them would only evict the
// entries that do repeat. (location stays indexable: redirects tend to repeat their target.)
bool worth_indexing(std::string_view name) noexcept {
    static constexpr std::string_view kNot[] = {
        ":path",         "content-length",    "content-range", "etag",     "last-modified",
        "if-none-match", "if-modified-since", "age",           "if-range",
    };
    return std::find(std::begin(kNot), std::end(kNot), name) == std::end(kNot);
}

// Credentials: never indexed, here or by any intermediary (7.1.3). Short cookies too: a
// guess at a short value is cheap to confirm through the table's compression.
bool sensitive(std::string_view name, std::string_view value) noexcept {
    return name == "authorization" || name == "proxy-authorization" || name == "set-cookie" ||
           (name == "cookie" && value.size() < 20);
}

}  // namespace

Encoder::Encoder(std::uint32_t max_table_size)
    : table_(std::min(max_table_size, default_table_size)), limit_(max_table_size) {
    table_.set_capacity(max_table_size);
    // The peer's initial setting is 4096 (RFC 9113 6.5.2): a smaller limit of ours must be
    // announced in the first block.
    if (max_table_size < default_table_size) {
        pending_update_ = true;
        pending_min_ = max_table_size;
    }
}

void Encoder::set_peer_max_table_size(std::uint32_t max) {
    const std::uint32_t size = std::min(max, limit_);
    if (size == table_.max_size() && !pending_update_) return;
    pending_min_ = std::min(pending_min_, size);
    pending_update_ = true;
    table_.set_max_size(size);
}

void Encoder::begin_block(std::string& out) {
    if (!pending_update_) return;
    if (pending_min_ < table_.max_size()) encode_integer(out, 0x20, 5, pending_min_);
    encode_integer(out, 0x20, 5, table_.max_size());
    pending_update_ = false;
    pending_min_ = UINT32_MAX;
}

void Encoder::literal(std::uint8_t first, unsigned prefix_bits, std::size_t name_index,
                      const EncoderField& f, std::string& out) {
    encode_integer(out, first, prefix_bits, static_cast<std::uint32_t>(name_index));
    if (name_index == 0) encode_string(f.name, out);
    encode_string(f.value, out);
}

namespace {

// A quick hash of a string's length and first and last eight bytes (a match is confirmed by
// comparing, so a weak hash only costs a missed reference).
std::uint64_t quick_hash(std::string_view s, std::uint64_t seed) noexcept {
    std::uint64_t a = 0, b = 0;
    const std::size_t n = s.size();
    if (n >= 8) {
        std::memcpy(&a, s.data(), 8);
        std::memcpy(&b, s.data() + n - 8, 8);
    } else if (n > 0) {
        std::memcpy(&a, s.data(), n);
    }
    std::uint64_t h = (a ^ seed) * 0x9E3779B97F4A7C15ull;
    h ^= (b + n) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

std::size_t name_slot(std::string_view name) noexcept {
    return quick_hash(name, 0x51) >> 58;  // 64 slots
}

std::size_t field_slot(std::string_view name, std::string_view value) noexcept {
    return quick_hash(value, quick_hash(name, 0x51)) >> 58;
}

}  // namespace

void Encoder::remember(std::string_view name, std::string_view value) noexcept {
    const auto number = static_cast<std::uint32_t>(table_.inserted());
    by_field_[field_slot(name, value)] = number;
    by_name_[name_slot(name)] = number;
}

void Encoder::add(const EncoderField& f, std::string& out) {
    std::size_t name_index = 0;
    const bool never = f.indexing == Indexing::never || sensitive(f.name, f.value);
    if (!never) {
        if (std::size_t i = static_find(f.name, f.value, name_index); i != 0) {
            encode_integer(out, 0x80, 7, static_cast<std::uint32_t>(i));
            return;
        }
    } else {
        static_find(f.name, {}, name_index);
    }
    if (table_.count() > 0) {
        const auto now = static_cast<std::uint32_t>(table_.inserted());
        if (!never) {
            if (const std::uint32_t n = by_field_[field_slot(f.name, f.value)]; n != 0) {
                const std::uint32_t at = now - n;
                if (at < table_.count()) {
                    const Field e = table_.entry(at);
                    if (same(e.name, f.name) && same(e.value, f.value)) {
                        encode_integer(out, 0x80, 7,
                                       static_cast<std::uint32_t>(static_table_size + 1 + at));
                        return;
                    }
                }
            }
        }
        if (name_index == 0) {
            if (const std::uint32_t n = by_name_[name_slot(f.name)]; n != 0) {
                const std::uint32_t at = now - n;
                if (at < table_.count() && same(table_.entry(at).name, f.name)) {
                    name_index = static_table_size + 1 + at;
                }
            }
        }
    }
    if (never) {
        literal(0x10, 4, name_index, f, out);
        return;
    }
    const std::size_t entry = f.name.size() + f.value.size() + entry_overhead;
    if (worth_indexing(f.name) && entry <= table_.max_size() / 2) {
        literal(0x40, 6, name_index, f, out);
        table_.insert(f.name, f.value);
        remember(f.name, f.value);
        return;
    }
    literal(0x00, 4, name_index, f, out);
}

void Encoder::add_status(int status, std::string& out) {
    std::size_t index = 0;
    switch (status) {
        case 200:
            index = 8;
            break;
        case 204:
            index = 9;
            break;
        case 206:
            index = 10;
            break;
        case 304:
            index = 11;
            break;
        case 400:
            index = 12;
            break;
        case 404:
            index = 13;
            break;
        case 500:
            index = 14;
            break;
        default: {
            const char text[3] = {static_cast<char>('0' + status / 100 % 10),
                                  static_cast<char>('0' + status / 10 % 10),
                                  static_cast<char>('0' + status % 10)};
            add({":status", std::string_view(text, 3)}, out);
            return;
        }
    }
    out.push_back(static_cast<char>(0x80 | index));
}

void Encoder::add_known(Known k, std::string_view value, std::string& out) {
    // The static entries naming these fields (Appendix A).
    static constexpr std::uint8_t kNameIndex[] = {54, 33, 31};
    static constexpr std::string_view kName[] = {"server", "date", "content-type"};
    const auto slot = static_cast<std::size_t>(k);
    const std::uint64_t number = known_[slot];
    if (number != 0 && !pending_update_) {
        const std::uint64_t at = table_.inserted() - number;
        if (at < table_.count() && table_.entry(at).value == value) {
            encode_integer(out, 0x80, 7, static_cast<std::uint32_t>(static_table_size + 1 + at));
            return;
        }
    }
    const EncoderField f{kName[slot], value};
    if (kName[slot].size() + value.size() + entry_overhead > table_.max_size() / 2) {
        literal(0x00, 4, kNameIndex[slot], f, out);
        return;
    }
    literal(0x40, 6, kNameIndex[slot], f, out);
    table_.insert(f.name, f.value);
    known_[slot] = table_.inserted();
    remember(f.name, f.value);
}

void Encoder::add_unindexed(std::size_t name_index, std::string_view value, std::string& out) {
    encode_integer(out, 0x00, 4, static_cast<std::uint32_t>(name_index));
    encode_string(value, out);
}

void Encoder::encode(std::span<const EncoderField> fields, std::string& out) {
    begin_block(out);
    for (const EncoderField& f : fields) add(f, out);
}

}  // namespace vela::hpack
