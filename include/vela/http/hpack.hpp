#pragma once
// HPACK, the header compression of HTTP/2 (RFC 7541): a pure codec, no sockets.
//
// A connection owns one Decoder (for the header blocks it receives) and one Encoder (for the
// blocks it sends), both on its loop's thread; nothing here is thread-safe. The two sides are
// independent: each keeps its own dynamic table, in step with the peer's opposite side.
//
// Decoder: decode() takes a whole header block (HEADERS plus CONTINUATION payloads joined)
// and calls a sink once per field. The views it passes are valid until the next field (they
// point into the block, the static table, the dynamic table or the decoder's own buffers for
// Huffman-decoded strings), so decoding allocates nothing once the buffers have grown to the
// connection's field sizes. Limits are checked while decoding, not after: once the header
// list size (name + value + 32 per field, RFC 9113 10.5.1) passes the limit, the sink gets no
// more fields and the rest of the block is only read for its table changes (no field is
// copied anywhere), so a small block that expands into a huge list (the "HPACK bomb") costs
// no more than its own bytes; decode() then returns header_list_too_large, a stream error
// (the server answers 431) after which the decoder is still in step with the peer. Every
// other error is a COMPRESSION_ERROR (RFC 9113 4.3): the dynamic table is no longer in step
// with the peer's, so the connection must end; the decoder refuses further blocks.
//
// Encoder: encode() appends one block for a list of fields. It uses the static table for
// exact and name matches, adds to its dynamic table the fields that repeat between messages
// (not :path, content-length and the like, which change each time), emits the never-indexed
// representation for credentials (authorization, proxy-authorization, set-cookie, short
// cookies: RFC 7541 7.1.3) and for fields the caller marks, and Huffman-codes a string only
// when that is shorter.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vela::hpack {

/// Why a header block was refused (each is a COMPRESSION_ERROR, see error_message()).
enum class Error : std::uint8_t {
    none,
    truncated,                  // the block ends inside a representation
    integer_overflow,           // an integer over 2^32-1 or with too many continuation bytes
    index_zero,                 // index 0 in an indexed field (6.1)
    index_out_of_range,         // past the static and dynamic tables (2.3.3)
    string_too_long,            // a name or value over the decoder's max_string_length
    huffman_eos,                // the EOS symbol inside a Huffman string (5.2)
    huffman_padding,            // padding over 7 bits or not the most significant bits of EOS
    table_size_too_large,       // a size update over our SETTINGS_HEADER_TABLE_SIZE (6.3)
    table_size_update_late,     // a size update after the first field of a block (4.2)
    table_size_update_missing,  // we lowered the table size and the block did not confirm it
    header_list_too_large,      // name + value + 32 per field over max_header_list_size
};

/// One line of text for an error.
std::string_view error_message(Error e) noexcept;

/// Bytes each dynamic table entry counts beyond its name and value (4.1).
inline constexpr std::size_t entry_overhead = 32;
/// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 6.5.2).
inline constexpr std::uint32_t default_table_size = 4096;

/// Decodes an integer with a `prefix_bits`-bit prefix (5.1) at `p`, advancing `p`.
Error decode_integer(const std::uint8_t*& p, const std::uint8_t* end, unsigned prefix_bits,
                     std::uint32_t& value) noexcept;
/// Appends `value` with a `prefix_bits`-bit prefix; `first` holds the bits above the prefix.
void encode_integer(std::string& out, std::uint8_t first, unsigned prefix_bits,
                    std::uint32_t value);

/// Bytes of the Huffman coding of `s` (Appendix B), padding included.
std::size_t huffman_size(std::string_view s) noexcept;
/// Appends the Huffman coding of `s`.
void huffman_encode(std::string_view s, std::string& out);
/// Appends the Huffman coding of `s`, whose huffman_size() is `size`.
void huffman_encode(std::string_view s, std::size_t size, std::string& out);
/// Decodes the Huffman string `in` into `out`, which must have room for in.size() * 8 / 5
/// bytes; sets `n` to the bytes written. Refuses EOS and bad padding.
Error huffman_decode(std::string_view in, char* out, std::size_t& n) noexcept;
/// Decodes the Huffman string `in`, appending to `out`.
Error huffman_decode(std::string_view in, std::string& out);

/// A name and a value.
struct Field {
    std::string_view name;
    std::string_view value;
};

/// Number of entries in the static table (Appendix A).
inline constexpr std::size_t static_table_size = 61;
/// The static table entry at `index` (1 to static_table_size).
const Field& static_entry(std::size_t index) noexcept;
/// Index of the static entry with this name and value, else 0; `name_index` gets the first
/// static entry with this name, or 0.
std::size_t static_find(std::string_view name, std::string_view value,
                        std::size_t& name_index) noexcept;

/// The dynamic table (section 4): newest entry first, evicting the oldest to stay within its
/// maximum size. Its ring of entries grows with use, up to what `capacity` bytes can hold;
/// entries reuse the strings of the entries they replace.
class DynamicTable {
  public:
    /// A table whose maximum size can go up to `capacity` (our announced limit).
    explicit DynamicTable(std::uint32_t capacity);

    /// Bytes counted by 4.1 (each entry's name, value and 32).
    std::size_t size() const noexcept { return size_; }
    /// The maximum size now in force.
    std::uint32_t max_size() const noexcept { return max_size_; }
    /// The largest maximum size the table can take.
    std::uint32_t capacity() const noexcept { return capacity_; }
    /// Number of entries.
    std::size_t count() const noexcept { return count_; }
    /// The entry at `i` (0 is the newest); i < count().
    Field entry(std::size_t i) const noexcept {
        const Entry& e = ring_[slot(i)];
        return {e.name, e.value};
    }
    /// Sets the maximum size (at most capacity()), evicting entries to fit.
    void set_max_size(std::uint32_t max) noexcept;
    /// Raises the capacity (reallocates the entry ring; entries are kept).
    void set_capacity(std::uint32_t capacity);
    /// Adds an entry, evicting to make room; one larger than the maximum empties the table
    /// (4.4). `name` and `value` must not point into the table. `valid`: the field passed
    /// valid_field() (kept for the entry's later references).
    void insert(std::string_view name, std::string_view value, bool valid = false);
    /// Whether the entry at `i` passed valid_field() when it was added.
    bool entry_valid(std::size_t i) const noexcept { return ring_[slot(i)].valid; }
    /// Entries added since the table was made (an entry's number: inserted() right after
    /// its insert; it is at position inserted() - number while that is below count()).
    std::uint64_t inserted() const noexcept { return inserted_; }
    /// Position of an entry with this name and value (0 is the newest), else -1; `name_at` gets
    /// the newest entry with this name, or -1.
    long find(std::string_view name, std::string_view value, long& name_at) const noexcept;

  private:
    struct Entry {
        std::string name;
        std::string value;
        std::uint32_t name_key = 0;  // so find() compares only the names that may match
        bool valid = false;          // passed valid_field()
    };
    void evict_to(std::size_t limit) noexcept;
    void regrow(std::size_t slots);
    // Where entry i (0 is the newest) is: no division, the hot path asks this per field.
    std::size_t slot(std::size_t i) const noexcept {
        return head_ > i ? head_ - 1 - i : head_ + ring_.size() - 1 - i;
    }

    std::vector<Entry> ring_;  // a circle of entries; ring_[head_ - 1] is the newest
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    std::size_t size_ = 0;
    std::uint64_t inserted_ = 0;
    std::uint32_t max_size_;
    std::uint32_t capacity_;
};

/// The decoder's limits.
struct DecoderLimits {
    /// The SETTINGS_HEADER_TABLE_SIZE we announce: the largest size update we accept.
    std::uint32_t max_table_size = default_table_size;
    /// SETTINGS_MAX_HEADER_LIST_SIZE: name + value + 32 per field, counted while decoding.
    std::size_t max_header_list_size = 64 * 1024;
    /// The longest name or value, as sent and once Huffman-decoded.
    std::size_t max_string_length = 64 * 1024;
};

/// A decoded field: `never_indexed` when the sender used the never-indexed representation
/// (6.2.3), which a proxy must keep when it forwards the field; `valid` when the field is
/// known to pass valid_field() (a static entry, or a dynamic one checked when it was added),
/// so a connection need not check its characters again.
struct DecodedField {
    std::string_view name;
    std::string_view value;
    bool never_indexed = false;
    bool valid = false;
};

/// RFC 9113 8.2.1's characters: a name of lower-case visible ASCII without ':' (a leading
/// one aside: pseudo-fields), a value without NUL, CR or LF nor whitespace at either end.
bool valid_field(std::string_view name, std::string_view value) noexcept;
/// The name rule of valid_field() (the leading ':' of a pseudo-field excluded by the caller).
bool valid_name(std::string_view name) noexcept;
/// The value rule of valid_field().
bool valid_value(std::string_view value) noexcept;

/// Decodes header blocks (see the top of the file).
class Decoder {
  public:
    /// A decoder whose dynamic table starts at limits.max_table_size.
    explicit Decoder(const DecoderLimits& limits = {});

    /// Decodes one whole block, calling `sink(const DecodedField&)` per field; the views are
    /// valid until the sink returns. Stops at the first error, except header_list_too_large:
    /// the fields past the limit are decoded without reaching the sink, and the decoder stays
    /// usable.
    template <class Sink>
    Error decode(std::string_view block, Sink&& sink) {
        if (error_ != Error::none) return error_;
        const auto* p = reinterpret_cast<const std::uint8_t*>(block.data());
        const auto* end = p + block.size();
        Error e = begin_block(p, end);
        DecodedField f;
        bool over = false;
        while (e == Error::none && p != end) {
            e = next(p, end, f);
            if (e == Error::none) {
                if (!over) sink(static_cast<const DecodedField&>(f));
            } else if (e == Error::header_list_too_large) {
                over = true;
                e = Error::none;
            }
        }
        if (e != Error::none) {
            error_ = e;
            return e;
        }
        return over ? Error::header_list_too_large : Error::none;
    }

    /// Announces a new SETTINGS_HEADER_TABLE_SIZE (applies once the peer acknowledged it):
    /// the largest size update accepted from then on. A value below the table's maximum
    /// requires the next block to start with a size update at most that large.
    void set_max_table_size(std::uint32_t max);
    /// The header list size of the last block (name + value + 32 per field).
    std::size_t header_list_size() const noexcept { return list_size_; }
    /// The dynamic table (for tests and statistics).
    const DynamicTable& table() const noexcept { return table_; }
    /// The first error met, which every later decode() returns too.
    Error error() const noexcept { return error_; }

  private:
    Error begin_block(const std::uint8_t*& p, const std::uint8_t* end) noexcept;
    Error next(const std::uint8_t*& p, const std::uint8_t* end, DecodedField& f);
    Error read_string(const std::uint8_t*& p, const std::uint8_t* end, std::string& buf,
                      std::string_view& s);
    Error lookup(std::uint32_t index, Field& f) const noexcept;

    DynamicTable table_;
    DecoderLimits limits_;
    std::string name_buf_;   // Huffman-decoded names, and dynamic-table names being re-indexed
    std::string value_buf_;  // Huffman-decoded values
    std::size_t list_size_ = 0;
    std::uint32_t required_update_ = UINT32_MAX;  // a size update at most this is due
    Error error_ = Error::none;
};

/// How the encoder may treat a field.
enum class Indexing : std::uint8_t {
    automatic,  // by the encoder's policy (see Encoder)
    never,      // never-indexed: intermediaries must not index it either (6.2.3)
};

/// A field for the encoder.
struct EncoderField {
    std::string_view name;  // lower case (RFC 9113 8.2.1)
    std::string_view value;
    Indexing indexing = Indexing::automatic;
};

/// Fields a server sends on most responses, which the encoder keeps track of itself: no
/// table search for them (Encoder::add_known).
enum class Known : std::uint8_t { server, date, content_type };

/// Encodes header blocks (see the top of the file).
class Encoder {
  public:
    /// An encoder whose dynamic table uses at most `max_table_size` bytes, even when the peer
    /// allows more (a bigger table costs us memory and search time).
    explicit Encoder(std::uint32_t max_table_size = default_table_size);

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed: the next block starts with a size
    /// update (to the smaller of it and our own limit).
    void set_peer_max_table_size(std::uint32_t max);
    /// Appends one block holding `fields`.
    void encode(std::span<const EncoderField> fields, std::string& out);
    /// Appends any pending size update: call before the first add() of a block.
    void begin_block(std::string& out);
    /// Appends one field to the block begun with begin_block().
    void add(const EncoderField& f, std::string& out);
    /// Appends `:status` (a static entry for 200, 204, 206, 304, 400, 404 and 500).
    void add_status(int status, std::string& out);
    /// Appends a known field: the entry added for it the last time is referred to while it is
    /// in the table and has this value; otherwise the field is added again.
    void add_known(Known k, std::string_view value, std::string& out);
    /// Appends a field not worth indexing whose name is static entry `name_index`
    /// (content-length is 28).
    void add_unindexed(std::size_t name_index, std::string_view value, std::string& out);
    /// The dynamic table (for tests and statistics).
    const DynamicTable& table() const noexcept { return table_; }

  private:
    void literal(std::uint8_t first, unsigned prefix_bits, std::size_t name_index,
                 const EncoderField& f, std::string& out);

    void remember(std::string_view name, std::string_view value) noexcept;

    DynamicTable table_;
    std::uint64_t known_[3] = {};  // the entry number added for each Known field, 0: none
    // Where fields and names were added to the table: entry numbers (their low 32 bits; 0:
    // none) by a hash of the field and of the name, one per slot. A slot overwritten by
    // another field, or naming an evicted entry, only costs a repeated insert.
    static constexpr std::size_t kSlots = 64;
    std::uint32_t by_field_[kSlots] = {};
    std::uint32_t by_name_[kSlots] = {};
    std::uint32_t limit_;
    std::uint32_t pending_min_ = UINT32_MAX;  // the smallest size since the last block
    bool pending_update_ = false;
};

/// Appends `s` as a string literal (5.2), Huffman-coded when that is shorter.
void encode_string(std::string_view s, std::string& out);

}  // namespace vela::hpack
