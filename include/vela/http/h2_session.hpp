#pragma once
// An HTTP/2 connection's state machine (RFC 9113), for both roles: pure, no sockets, no
// clock of its own. The driver (server or client) hands it the bytes it reads with receive()
// and writes what output() holds; the session calls the driver back through SessionHandler.
//
//   receive(bytes, now) -> frames are read (FrameReader), header blocks gathered across
//                          CONTINUATION frames and decoded (HPACK), fields checked by RFC 9113
//                          8.2 and 8.3 (requests in the server role, responses in the client
//                          role), stream states of 5.1 and flow control of 5.2 and 6.9 kept;
//                          events reach the handler as they happen
//   send_headers / send_data / reset / ping / shutdown -> frames appended to output()
//
// Stream errors reset the stream (RST_STREAM) and the connection goes on; connection errors
// append GOAWAY with the error, after which the session is over (closed()): the driver writes
// what output() holds and closes.
//
// Defences, each with its limit in SessionOptions: streams over our SETTINGS_MAX_CONCURRENT_
// STREAMS are refused (REFUSED_STREAM) until the peer acknowledged the limit, and end the
// connection after; a header block may span at most max_continuation_frames frames and its
// encoded size is bounded (4 times the header list limit, at least 64 KiB: CONTINUATION
// floods); the
// header list size is counted while decoding (HPACK bombs: the block's fields past the limit
// reach nobody and the stream is answered 431 by the server); control frames (SETTINGS, PING,
// PRIORITY, WINDOW_UPDATE, RST_STREAM, empty DATA, unknown types) between two requests are
// budgeted, and so are the SETTINGS entries per frame; resets of the peer's streams are rate
// limited (rapid reset: a token bucket); acknowledgements waiting in output() for a peer that
// does not read are bounded. Breaking a limit ends the connection with ENHANCE_YOUR_CALM.
// Closed streams are remembered in a fixed record (5.1 allows forgetting them after a while).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/h2_frame.hpp"
#include "vela/http/hpack.hpp"

namespace vela::h2 {

/// Which end of the connection this session is.
enum class Role : std::uint8_t { server, client };

/// What a session announces and enforces.
struct SessionOptions {
    Role role = Role::server;
    /// SETTINGS_MAX_CONCURRENT_STREAMS we announce: the peer's streams open at once.
    std::uint32_t max_concurrent_streams = 100;
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce: how much of a stream's body the peer may send
    /// before the driver consumes it.
    std::uint32_t initial_window_size = 1 << 20;
    /// Our connection receive window (raised from 65,535 by a WINDOW_UPDATE at start).
    std::uint32_t connection_window_size = 16 << 20;
    /// SETTINGS_MAX_FRAME_SIZE we announce (2^14 to 2^24-1).
    std::uint32_t max_frame_size = default_max_frame_size;
    /// SETTINGS_HEADER_TABLE_SIZE we announce (the decoder's dynamic table).
    std::uint32_t header_table_size = hpack::default_table_size;
    /// SETTINGS_MAX_HEADER_LIST_SIZE we announce and enforce.
    std::uint32_t max_header_list_size = 64 * 1024;
    /// The encoder's dynamic table, at most (the peer may allow more).
    std::uint32_t encoder_table_size = hpack::default_table_size;
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441), server role: extended CONNECT accepted.
    bool enable_connect_protocol = false;
    /// Control frames accepted between two requests (server role) before ENHANCE_YOUR_CALM.
    std::uint32_t max_control_frames = 1000;
    /// SETTINGS entries per frame.
    std::uint32_t max_settings_per_frame = 32;
    /// Frames (HEADERS or PUSH_PROMISE and CONTINUATION) one header block may span.
    std::uint32_t max_continuation_frames = 64;
    /// Resets of the peer's streams (by it or by us) allowed in a burst, then per second.
    std::uint32_t reset_burst = 1000;
    std::uint32_t resets_per_second = 33;
    /// Acknowledgements (SETTINGS, PING) waiting in output() at once.
    std::uint32_t max_queued_acks = 1000;
    /// Milliseconds the peer has to acknowledge our SETTINGS (6.5.3).
    std::uint32_t settings_timeout_ms = 10'000;
};

/// The state of a stream (5.1), as far as a live stream can be in.
enum class StreamState : std::uint8_t {
    open,
    half_closed_local,   // we sent END_STREAM
    half_closed_remote,  // the peer sent END_STREAM
};

/// A live stream. The session owns it; `user` is the driver's.
struct Stream {
    std::uint32_t id = 0;
    StreamState state = StreamState::open;
    void* user = nullptr;
    std::int64_t send_window = 0;  // what we may send (negative after a SETTINGS decrease)
    std::int64_t recv_window = 0;  // what the peer may still send
    std::uint32_t unacked = 0;     // consumed by the driver, not yet given back by WINDOW_UPDATE
    std::uint64_t held = 0;        // delivered by on_data, not yet consumed
    std::int64_t content_length = -1;  // the peer's content-length, if any
    std::uint64_t data_received = 0;
    bool headers_done = false;  // the first (final) header block arrived
    bool blocked = false;       // send_data() stopped on a window: on_writable() when it opens
    bool head_request = false;  // client role: a HEAD request (its response has no body)
    /// Server role: our END_STREAM half-closes a tunnel (RFC 8441 5, a WebSocket closing its
    /// side first) and the peer's end is awaited; otherwise a response that ends before the
    /// request resets it with NO_ERROR (RFC 9113 8.1).
    bool await_peer_end = false;
    /// Server role: the response ended before the request, whose small declared rest is let in
    /// instead of resetting the stream (Session::end_local); the driver bounds the wait.
    bool answered_early = false;
    /// The peer may still send.
    bool remote_open() const noexcept { return state != StreamState::half_closed_remote; }
    /// We may still send.
    bool local_open() const noexcept { return state != StreamState::half_closed_local; }
};

/// What ended a header block.
struct HeadersEnd {
    enum class Kind : std::uint8_t {
        headers,   // a request (server role) or a final response (client role)
        interim,   // client role: a 1xx response; more header blocks follow
        trailers,  // after the body
    };
    Kind kind = Kind::headers;
    bool end_stream = false;
    /// The header list passed SETTINGS_MAX_HEADER_LIST_SIZE: the fields past it were dropped
    /// (the server answers 431; a client treats the response as failed).
    bool list_too_large = false;
};

/// The session's calls into its driver.
class SessionHandler {
  public:
    virtual ~SessionHandler() = default;
    /// A header block begins on `s` (a new stream when s.headers_done is false).
    virtual void on_begin_headers(Stream& s) = 0;
    /// One field of the block, checked by RFC 9113 8.2 (pseudo-fields come first); the views
    /// are valid until the call returns.
    virtual void on_field(Stream& s, const hpack::DecodedField& f) = 0;
    /// The block ended and passed the checks of 8.3 (a malformed one resets the stream).
    virtual void on_headers(Stream& s, const HeadersEnd& end) = 0;
    /// Body bytes (padding excluded), a view into the bytes given to receive(). The driver
    /// gives them back to the peer's window with consume() once it has used them.
    virtual void on_data(Stream& s, std::string_view data, bool end_stream) = 0;
    /// The stream is gone: both sides ended it (code no_error, by_peer false), the peer reset
    /// it, or we did (a stream error, reset(), or a GOAWAY that left it unprocessed). No
    /// further call names it.
    virtual void on_close(Stream& s, ErrorCode code, bool by_peer) = 0;
    /// A stream whose send_data() stopped on a flow-control window may send again.
    virtual void on_writable(Stream& s) { (void)s; }
    /// The peer sent GOAWAY: streams above last_stream_id were not processed (they get
    /// on_close with refused_stream, and a client may retry them on a new connection).
    virtual void on_goaway(std::uint32_t last_stream_id, ErrorCode code, std::string_view debug) {
        (void)last_stream_id;
        (void)code;
        (void)debug;
    }
    /// The peer acknowledged a ping() of ours.
    virtual void on_ping_ack(std::string_view opaque) { (void)opaque; }
};

/// The settings the peer announced (6.5.2), as in force.
struct PeerSettings {
    std::uint32_t header_table_size = hpack::default_table_size;
    bool enable_push = true;
    std::uint32_t max_concurrent_streams = UINT32_MAX;
    std::uint32_t initial_window_size = default_initial_window_size;
    std::uint32_t max_frame_size = default_max_frame_size;
    std::uint32_t max_header_list_size = UINT32_MAX;
    bool enable_connect_protocol = false;
};

/// One HTTP/2 connection's state (see the top of the file).
class Session {
  public:
    Session(SessionHandler& handler, const SessionOptions& options = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// Appends what the connection starts with: the client preface (client role), our
    /// SETTINGS and the connection window's WINDOW_UPDATE.
    void start(std::uint64_t now_ms = 0);
    /// Server role, after "Upgrade: h2c" (3.2, RFC 7540): applies the client's
    /// HTTP2-Settings payload and opens stream 1 half-closed (remote) for the upgraded
    /// request's response; false (and closed()) when the settings are invalid.
    bool start_upgraded(std::string_view http2_settings, std::uint64_t now_ms = 0);
    /// Processes bytes read from the peer; returns how many were used (the rest is an
    /// incomplete frame: keep it and add to it). Stops when the session ends.
    std::size_t receive(std::string_view bytes, std::uint64_t now_ms = 0);
    /// Checks time-based rules (the SETTINGS acknowledgement); false when the session ended.
    bool tick(std::uint64_t now_ms);

    /// The bytes to write. The driver removes what it wrote (or clears it).
    std::string& output() noexcept { return out_; }
    /// The session is over (a connection error, or a GOAWAY exchange finished): write
    /// output() and close.
    bool closed() const noexcept { return closed_; }
    /// Shutdown began (GOAWAY sent or received) and no stream is left.
    bool drained() const noexcept { return (goaway_sent_ || goaway_received_) && streams_.empty(); }
    /// The error a connection error ended the session with (no_error otherwise).
    ErrorCode error() const noexcept { return error_; }
    /// Why, in one line.
    std::string_view error_reason() const noexcept { return reason_; }

    /// Client role: opens a stream with a request's fields (pseudo-fields first); returns it,
    /// or nullptr when the peer's concurrency limit, a GOAWAY or the stream ids rule it out.
    Stream* open_stream(std::span<const hpack::EncoderField> fields, bool end_stream,
                        void* user = nullptr);
    /// Sends a header block (a response, interim response or trailers) on `s`.
    void send_headers(Stream& s, std::span<const hpack::EncoderField> fields, bool end_stream);
    /// The encoder and a scratch block, for drivers that encode fields as they produce them:
    /// begin_headers(), then hpack::Encoder::add() per field into the returned string, then
    /// end_headers().
    std::string& begin_headers();
    hpack::Encoder& encoder() noexcept { return encoder_; }
    void end_headers(Stream& s, bool end_stream);
    /// Sends as much of `data` as the windows and the peer's frame size allow (end_stream
    /// only with the last byte); returns the bytes sent. Short of all: `s.blocked` is set and
    /// on_writable() follows when a window opens.
    std::size_t send_data(Stream& s, std::string_view data, bool end_stream);
    /// What send_data() could send now on `s`.
    std::size_t send_window(const Stream& s) const noexcept;
    /// The driver used `n` bytes of `s`'s body: the peer may send them again (WINDOW_UPDATE
    /// once half the window is used).
    void consume(Stream& s, std::size_t n);
    /// Resets `s` (RST_STREAM); on_close follows.
    void reset(Stream& s, ErrorCode code);
    /// Sends a PING (8 bytes); on_ping_ack follows.
    void ping(std::string_view opaque8);
    /// Graceful shutdown: GOAWAY NO_ERROR naming the last stream the peer opened; streams in
    /// flight finish, newer ones are refused. drained() tells when none is left.
    void shutdown();
    /// Ends the connection now with GOAWAY `code` (closed() becomes true).
    void terminate(ErrorCode code, std::string_view reason);

    /// The stream with this id, if live.
    Stream* find(std::uint32_t id) noexcept;
    /// Live streams.
    std::size_t stream_count() const noexcept { return streams_.size(); }
    /// The peer's settings in force.
    const PeerSettings& peer_settings() const noexcept { return peer_; }
    /// True once the peer's first SETTINGS frame arrived (its limits are known).
    bool peer_settings_received() const noexcept { return peer_settings_seen_; }
    /// Our connection window for sending.
    std::int64_t connection_send_window() const noexcept { return conn_send_window_; }
    /// The highest stream id the peer used.
    std::uint32_t last_peer_stream() const noexcept { return last_peer_stream_; }
    /// The highest stream of the peer's handed to the driver (what GOAWAY names).
    std::uint32_t last_processed_stream() const noexcept { return last_processed_; }
    /// The options.
    const SessionOptions& options() const noexcept { return opt_; }

  private:
    enum class ClosedHow : std::uint8_t { unknown, ended, reset_by_peer, reset_by_us };

    bool on_frame(const Frame& f, std::uint64_t now_ms);
    bool on_headers_frame(const Frame& f);
    bool on_header_block(std::uint32_t id, std::string_view block, bool end_stream,
                         bool priority_self);
    void discard_block(std::string_view block);
    bool deliver_block(Stream& s, std::string_view block, bool end_stream);
    bool on_data_frame(const Frame& f);
    bool on_settings_frame(const Frame& f);
    bool on_window_update(const Frame& f);
    bool on_rst_stream(const Frame& f, std::uint64_t now_ms);
    bool on_goaway_frame(const Frame& f);
    bool stream_error(std::uint32_t id, ErrorCode code);
    bool frame_on_closed(std::uint32_t id, FrameType type);
    bool connection_error(ErrorCode code, std::string_view reason);
    bool count_control();
    bool take_reset_token(std::uint64_t now_ms);
    bool queue_ack();
    Stream* open_peer_stream(std::uint32_t id);
    Stream* new_stream(std::uint32_t id);
    void close_stream(Stream& s, ErrorCode code, bool by_peer, ClosedHow how);
    bool small_rest_of_body(const Stream& s) const noexcept;
    void end_local(Stream& s);
    void remote_ended(std::uint32_t id);
    void remember(std::uint32_t id, ClosedHow how) noexcept;
    ClosedHow closed_how(std::uint32_t id) const noexcept;
    void apply_local_settings();
    void give_back(std::uint64_t n);
    bool idle_peer_id(std::uint32_t id) const noexcept;
    bool idle_local_id(std::uint32_t id) const noexcept;
    bool past_goaway(std::uint32_t id) const noexcept;
    bool peer_initiated(std::uint32_t id) const noexcept;
    std::size_t max_block_size() const noexcept;

    SessionHandler& handler_;
    SessionOptions opt_;
    FrameReader reader_;
    hpack::Decoder decoder_;
    hpack::Encoder encoder_;
    PeerSettings peer_;
    std::string out_;
    std::string block_;             // a header block being gathered across CONTINUATION frames
    std::string scratch_;           // a header block being encoded
    std::vector<Stream*> streams_;  // live streams, by increasing id
    std::vector<Stream*> spare_;    // freed stream objects, reused
    // The header block being received.
    std::uint32_t block_stream_ = 0;
    std::uint32_t block_frames_ = 0;
    bool block_end_stream_ = false;
    bool block_priority_self_ = false;
    // Connection-level flow control.
    std::int64_t conn_send_window_ = default_initial_window_size;
    std::int64_t conn_recv_window_ = default_initial_window_size;
    std::uint32_t conn_unacked_ = 0;
    std::uint32_t conn_recv_target_ = default_initial_window_size;
    // Our settings: in force (applied when acknowledged) and waiting for the acknowledgement.
    std::uint32_t local_initial_window_ = default_initial_window_size;
    std::uint32_t settings_unacked_ = 0;
    std::uint64_t settings_sent_ms_ = 0;
    // Stream ids.
    std::uint32_t last_peer_stream_ = 0;  // the highest id the peer used (idle below it)
    std::uint32_t last_processed_ = 0;    // the highest peer stream handed to the driver
    std::uint32_t next_local_stream_;
    std::uint32_t goaway_last_ = 0x7fffffffu;  // streams above this (ours) the peer refused
    // Defences.
    std::uint32_t control_frames_ = 0;
    std::uint32_t queued_acks_ = 0;
    double reset_tokens_;
    std::uint64_t reset_refill_ms_ = 0;
    std::uint64_t now_ms_ = 0;  // as of the last receive() or tick()
    // Closed streams: recent ones and how they closed (a fixed record).
    static constexpr std::size_t kClosed = 64;
    struct ClosedEntry {
        std::uint32_t id = 0;
        ClosedHow how = ClosedHow::unknown;
    };
    ClosedEntry closed_streams_[kClosed] = {};
    std::uint32_t closed_next_ = 0;
    ErrorCode error_ = ErrorCode::no_error;
    std::string_view reason_;
    bool started_ = false;
    std::uint8_t preface_left_ = 0;       // server role: bytes of the client preface still due
    bool connect_protocol_seen_ = false;  // the peer announced ENABLE_CONNECT_PROTOCOL 1
    bool peer_settings_seen_ = false;
    bool goaway_sent_ = false;
    bool goaway_received_ = false;
    bool closed_ = false;
};

}  // namespace vela::h2
