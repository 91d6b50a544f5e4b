// Differential HPACK fuzzing: the same header blocks go to our Decoder and to nghttp2's
// inflater, which must agree on every block's verdict (accept or refuse), on the fields of
// accepted blocks (never-indexed flag included) and on the dynamic table after each block.
// The fields decoded are then encoded by our Encoder, and a second nghttp2 inflater must read
// them back unchanged (with never-indexed kept).
//
// Input: one option byte, then blocks, each a length byte and that many bytes (the last one
// may be short). Option bits 0-1: the SETTINGS_HEADER_TABLE_SIZE announced to both decoders
// before the first block (4096, 256, 100 or 0: below 4096 the first block must start with a
// size update); bit 2: a header list limit of 300 bytes, bits 3-4: the encoder's table size.
//
// Where the two decoders differ by design, the comparison follows the RFC:
// - nghttp2's inflater has no header list limit (its session applies one after decoding): our
//   header_list_too_large must come exactly where nghttp2's fields, summed the same way, first
//   pass the limit, with the same fields before it, and the tables must agree after the block
//   (ours reads the rest of the block for its table changes and goes on with the next one).

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/hpack.hpp"

namespace {

using namespace vela::hpack;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

struct Got {
    std::string name;
    std::string value;
    bool never_indexed;
    bool operator==(const Got&) const = default;
};

class Inflater {
  public:
    Inflater() { nghttp2_hd_inflate_new(&p_); }
    ~Inflater() { nghttp2_hd_inflate_del(p_); }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;
    nghttp2_hd_inflater* get() { return p_; }

    bool inflate(std::string_view block, std::vector<Got>& got) {
        got.clear();
        const auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
        std::size_t left = block.size();
        for (;;) {
            nghttp2_nv nv;
            int flags = 0;
            const auto rv = nghttp2_hd_inflate_hd2(p_, &nv, &flags, in, left, 1);
            if (rv < 0) return false;
            in += rv;
            left -= static_cast<std::size_t>(rv);
            if (flags & NGHTTP2_HD_INFLATE_EMIT) {
                got.push_back({std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                               std::string(reinterpret_cast<char*>(nv.value), nv.valuelen),
                               (nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0});
            }
            if (flags & NGHTTP2_HD_INFLATE_FINAL) {
                nghttp2_hd_inflate_end_headers(p_);
                return true;
            }
            if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return false;
        }
    }

    // Same entries as `t`, newest first, after the 61 static ones.
    bool same_table(const DynamicTable& t) {
        if (nghttp2_hd_inflate_get_dynamic_table_size(p_) != t.size()) return false;
        if (nghttp2_hd_inflate_get_num_table_entries(p_) != static_table_size + t.count()) {
            return false;
        }
        for (std::size_t i = 0; i < t.count(); ++i) {
            const nghttp2_nv* nv =
                nghttp2_hd_inflate_get_table_entry(p_, static_table_size + 1 + i);
            const Field f = t.entry(i);
            if (std::string_view(reinterpret_cast<char*>(nv->name), nv->namelen) != f.name ||
                std::string_view(reinterpret_cast<char*>(nv->value), nv->valuelen) != f.value) {
                return false;
            }
        }
        return true;
    }

  private:
    nghttp2_hd_inflater* p_ = nullptr;
};

constexpr std::uint32_t kTableSizes[] = {4096, 256, 100, 0};
constexpr std::uint32_t kEncoderSizes[] = {4096, 256, 64, 0};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Longer inputs add nothing, and keep Huffman-decoded strings under the string limit.
    if (size < 1 || size > 16384) return 0;
    const std::uint8_t options = data[0];
    const std::uint32_t table_size = kTableSizes[options & 3];
    DecoderLimits limits;
    limits.max_header_list_size = (options & 4) ? 300 : 1 << 20;
    Decoder ours(limits);
    Inflater theirs;
    if (table_size != default_table_size) {
        ours.set_max_table_size(table_size);
        check(nghttp2_hd_inflate_change_table_size(theirs.get(), table_size) == 0);
    }
    Encoder encoder(kEncoderSizes[(options >> 3) & 3]);
    Inflater reader;

    std::size_t at = 1;
    std::vector<Got> got;
    std::vector<Got> want;
    std::vector<Got> back;
    std::vector<EncoderField> fields;
    while (at < size) {
        const std::size_t len = std::min<std::size_t>(data[at], size - at - 1);
        const std::string_view block(reinterpret_cast<const char*>(data) + at + 1, len);
        at += 1 + len;

        got.clear();
        const Error e = ours.decode(block, [&](const DecodedField& f) {
            got.push_back({std::string(f.name), std::string(f.value), f.never_indexed});
        });
        const bool accepted = theirs.inflate(block, want);
        if (e == Error::header_list_too_large) {
            // Our decoder read the whole block (any error in it would have been reported
            // instead): nghttp2 accepted it, its fields up to our stop are ours, and both
            // tables took the whole block's changes.
            check(accepted);
            std::size_t list = 0;
            std::size_t i = 0;
            for (; i < want.size(); ++i) {
                list += want[i].name.size() + want[i].value.size() + entry_overhead;
                if (list > limits.max_header_list_size) break;
            }
            check(i < want.size());
            check(i == got.size());
            check(std::equal(got.begin(), got.end(), want.begin()));
            check(theirs.same_table(ours.table()));
            continue;
        }
        check((e == Error::none) == accepted);
        if (!accepted) return 0;
        check(got == want);
        check(theirs.same_table(ours.table()));
        check(ours.header_list_size() >= got.size() * entry_overhead);

        // Our encoder's block for the same fields reads back the same through nghttp2.
        fields.clear();
        for (const Got& g : got) {
            fields.push_back(
                {g.name, g.value, g.never_indexed ? Indexing::never : Indexing::automatic});
        }
        std::string encoded;
        encoder.encode(fields, encoded);
        check(reader.inflate(encoded, back));
        check(back.size() == got.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            check(back[i].name == got[i].name && back[i].value == got[i].value);
            if (got[i].never_indexed) check(back[i].never_indexed);
        }
        check(reader.same_table(encoder.table()));
    }
    return 0;
}
