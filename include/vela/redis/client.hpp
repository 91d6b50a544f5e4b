#pragma once
// An asynchronous Redis client on vela's event loops.
//
//     vela::redis::Client redis("redis://:secret@127.0.0.1:6379/2");   // once, at startup
//     ...                                                             // in a handler:
//     co_await redis.command("SET", "greeting", "hello", "EX", 30);
//     std::optional<std::string> v = co_await redis.get("greeting");
//     auto replies = co_await redis.pipeline(Command("INCR", "hits"), Command("GET", "greeting"));
//     auto sub = co_await redis.subscribe("news");
//     vela::redis::Message m = co_await sub.next();
//
// Threads and loops. One Client serves every loop of a process. Each loop that sends a command
// through it gets its own small pool of connections (up to Options::connections_per_loop),
// made lazily on that loop and used only by it, so commands take no lock beyond finding the
// loop's pool (one short mutex hold). All I/O runs on the loop: a non-blocking connect, then
// the socket is a stream handle of the loop's backend (it reads into our buffer, we write from
// ours). hiredis is used only as the RESP reply decoder; commands are encoded here.
//
// Pipelining. Commands issued on one loop while others are in flight are appended to the
// connection's output and written together once per loop iteration (Loop::defer); replies
// are matched to commands in order. pipeline() sends a batch in one write.
//
// Failures. An error reply throws redis::ServerError from command() and the convenience
// calls (pipeline() returns error Replies instead). A lost connection fails the commands in
// flight on it with redis::ConnectionError; the next command connects again, and failed
// connects are retried no sooner than a backoff that doubles from reconnect_min to
// reconnect_max. A command with no reply within command_timeout fails with
// redis::TimeoutError and its connection is dropped (later replies would be misassigned).
//
// Lifetime. The Client must outlive every use: destroy it after the loops that used it have
// stopped (or on a loop, once no command of any loop is in flight). Destroying it closes
// every connection without resuming commands still waiting. A Subscription belongs to the
// loop that made it and must be destroyed on that loop.
//
// GCC 12 rejects a braced list (std::initializer_list) inside a co_await expression ("array
// used as initializer"), hence the variadic forms: command(a, b), del(a, b), subscribe(a, b),
// pipeline(Command(...), Command(...)). A braced list built before the co_await is fine:
//     std::vector<Command> batch{{"INCR", "a"}, {"GET", "b"}};
//     auto replies = co_await redis.pipeline(std::move(batch));
//
// Host names are resolved once, when the Client is made (getaddrinfo blocks, so make the
// Client at startup, not in a handler). Not supported: Redis Cluster, Sentinel, TLS
// (rediss://), Unix sockets, RESP3, client-side caching, MULTI/EXEC across the pool (send
// MULTI ... EXEC as one pipeline()).

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/redis/reply.hpp"

namespace vela::redis {

/// Where the server is and how to log in, from `redis://[[user]:password@]host[:port][/db]`.
struct Url {
    /// Host name or address (IPv6 in brackets in the URL, without them here).
    std::string host = "127.0.0.1";
    /// TCP port.
    std::uint16_t port = 6379;
    /// ACL user name (Redis 6+); empty: AUTH with the password alone.
    std::string user;
    /// Password; empty: no AUTH.
    std::string password;
    /// Database number sent with SELECT (0: none sent).
    int db = 0;

    /// Parses a redis:// URL (user and password percent-decoded); throws std::invalid_argument
    /// with a message naming what is wrong.
    static Url parse(std::string_view url);
    /// "host:port" (IPv6 as "[addr]:port"), for messages; never shows the password.
    std::string address() const;
};

/// How a Client connects and waits.
struct Options {
    /// Connections each loop may open for commands (subscriptions have their own); the next
    /// one is opened once the open ones each have 32 commands in flight.
    std::size_t connections_per_loop = 2;
    /// A connect (TCP, AUTH, SELECT) taking longer fails with ConnectionError.
    std::chrono::milliseconds connect_timeout{2000};
    /// A command without a reply for this long fails with TimeoutError (0: wait forever).
    std::chrono::milliseconds command_timeout{5000};
    /// The first wait before connecting again after a failed connect.
    std::chrono::milliseconds reconnect_min{50};
    /// The longest wait between connect attempts (the wait doubles up to this).
    std::chrono::milliseconds reconnect_max{2000};
};

/// One argument of a command: text, bytes or a number (written in decimal).
class Arg {
  public:
    /// Text or bytes (binary-safe).
    Arg(std::string_view s) noexcept : p_(s.data()), n_(s.size()) {}  // NOLINT: implicit
    /// A C string.
    Arg(const char* s) noexcept : Arg(std::string_view(s)) {}  // NOLINT: implicit
    /// A string's bytes.
    Arg(const std::string& s) noexcept : Arg(std::string_view(s)) {}  // NOLINT: implicit
    /// Raw bytes.
    Arg(std::span<const std::byte> b) noexcept  // NOLINT: implicit
        : p_(reinterpret_cast<const char*>(b.data())), n_(b.size()) {}
    /// An integer, in decimal (bool is refused: say "1"/"0" or what the command expects).
    template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char>) Arg(I v)
    noexcept {  // NOLINT: implicit
        if constexpr (std::is_signed_v<I>)
            set_signed(static_cast<long long>(v));
        else
            set_unsigned(static_cast<unsigned long long>(v));
    }
    /// A floating-point number, in the shortest form that reads back the same.
    Arg(double v) noexcept;  // NOLINT: implicit
    /// The argument's bytes (valid while the Arg and what it refers to live).
    std::string_view view() const noexcept {
        return inline_ ? std::string_view(buf_, n_) : std::string_view(p_, n_);
    }
    /// Copies keep pointing at their own digits.
    Arg(const Arg& o) noexcept;
    Arg& operator=(const Arg& o) noexcept;

  private:
    void set_signed(long long v) noexcept;
    void set_unsigned(unsigned long long v) noexcept;
    const char* p_ = nullptr;
    std::size_t n_ = 0;
    bool inline_ = false;
    char buf_[32];
};

/// One command, encoded (RESP) when it is built, so its arguments need not outlive it.
class Command {
  public:
    /// An empty command (add arguments with arg()).
    Command() = default;
    /// The command made of `args`, e.g. Command{"SET", key, value, "EX", 30}.
    Command(std::initializer_list<Arg> args);
    /// The same as a call, Command("SET", key, value): use this form inside a co_await
    /// expression (GCC 12 cannot keep a braced list's array alive across a suspension).
    template <class... A>
    requires(sizeof...(A) > 0 &&
             (std::convertible_to<const A&, Arg> && ...)) explicit Command(const A&... args) {
        (arg(Arg(args)), ...);
    }
    /// The command made of `args`.
    explicit Command(std::span<const Arg> args);
    /// The command made of `args` (e.g. built at run time).
    explicit Command(const std::vector<std::string>& args);
    /// Appends one argument.
    Command& arg(const Arg& a);
    /// Number of arguments (the command name counts).
    std::size_t size() const noexcept { return count_; }
    /// The encoded command: a RESP array of bulk strings.
    std::string encoded() const;
    /// Appends the encoded command to `out`.
    void encode_to(std::string& out) const;

  private:
    std::string body_;  // the bulk strings; the array header is written in front on sending
    std::size_t count_ = 0;
};

/// A condition and expiry for Client::set.
struct SetOptions {
    /// Expire after this long (0: no expiry; sent as PX).
    std::chrono::milliseconds ttl{0};
    /// Set only when the key is absent (NX).
    bool if_absent = false;
    /// Set only when the key exists (XX).
    bool if_present = false;
    /// Keep the key's current expiry (KEEPTTL, Redis 6+).
    bool keep_ttl = false;
};

/// One message received by a Subscription.
struct Message {
    /// The channel it was published to.
    std::string channel;
    /// The pattern that matched (psubscribe), empty for a plain subscription.
    std::string pattern;
    /// The published bytes.
    std::string payload;
};

namespace detail {
struct ClientImpl;
struct SubState;
}  // namespace detail

/// Messages of channels or patterns, read with next(); a connection of its own. Move-only;
/// closing or destroying it closes that connection, which ends the subscription on the server.
class Subscription {
  public:
    /// A closed subscription.
    Subscription() noexcept;
    /// Takes over `o` (which becomes closed).
    Subscription(Subscription&& o) noexcept;
    /// Closes this one, then takes over `o`.
    Subscription& operator=(Subscription&& o) noexcept;
    /// Closes it (on its loop).
    ~Subscription();

    /// The next message (waits for it; one next() at a time). Messages arriving meanwhile are
    /// queued; after a lost connection the queued ones come first, then ConnectionError; after
    /// close(), Error.
    Task<Message> next();
    /// Unsubscribes by closing the connection; a next() waiting fails with Error.
    void close() noexcept;
    /// True until close() or a lost connection.
    bool is_open() const noexcept;
    /// Adds `channels` (SUBSCRIBE on this connection; on its loop). Returns at once: messages
    /// published before the server has taken it are not received (see is_subscribed()).
    void subscribe_more(const std::vector<std::string>& channels);
    /// Drops `channels` (UNSUBSCRIBE; on its loop); messages already on their way still come.
    void unsubscribe(const std::vector<std::string>& channels);
    /// True once the server confirmed a subscription to `channel` (and no unsubscribe since).
    bool is_subscribed(std::string_view channel) const noexcept;
    /// Sends PING on this connection (on its loop), to find out whether it still works.
    void ping();
    /// PONGs received so far (one per ping() the server answered).
    std::uint64_t pongs() const noexcept;

  private:
    friend class Client;
    explicit Subscription(std::shared_ptr<detail::SubState> s) noexcept;
    std::shared_ptr<detail::SubState> st_;
};

/// The Redis client (see the top of this file).
class Client {
  public:
    /// A client for `url` (redis://...); throws std::invalid_argument for a bad URL and
    /// ConnectionError when the host name does not resolve. Connects lazily.
    explicit Client(std::string_view url, Options options = {});
    /// A client for `url`.
    explicit Client(Url url, Options options = {});
    /// Closes every connection (see Lifetime above).
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Sends one command, e.g. command("SET", key, value, "EX", 30); the reply, or
    /// ServerError for an error reply. Must run on a vela::Loop.
    template <class... A>
    Task<Reply> command(const A&... args) {
        return execute(Command(args...));
    }
    /// Sends a built command; as command().
    Task<Reply> execute(Command cmd);
    /// Sends `cmds` in one write on one connection; their replies in order (error replies
    /// are returned, not thrown; a lost connection throws).
    Task<std::vector<Reply>> pipeline(std::vector<Command> cmds);
    /// pipeline() of the commands given, e.g. pipeline(Command("INCR", a), Command("GET", b)).
    template <class... C>
    requires(std::same_as<C, Command>&&...) Task<std::vector<Reply>> pipeline(Command first,
                                                                              C... rest) {
        std::vector<Command> cmds;
        cmds.reserve(1 + sizeof...(C));
        cmds.push_back(std::move(first));
        (cmds.push_back(std::move(rest)), ...);
        return pipeline(std::move(cmds));
    }

    /// GET: the value, or nullopt when the key is absent.
    Task<std::optional<std::string>> get(std::string_view key);
    /// SET with `opts`; false when an NX/XX condition kept it from being set.
    Task<bool> set(std::string_view key, std::string_view value, SetOptions opts = {});
    /// DEL: how many of `keys` existed, e.g. del(a, b).
    template <class... K>
    requires(sizeof...(K) > 0 &&
             (std::convertible_to<const K&, Arg> && ...)) Task<std::int64_t> del(const K&... keys) {
        return integer_reply(execute(Command("DEL", keys...)));
    }
    /// INCRBY: the value after adding `by`.
    Task<std::int64_t> incr(std::string_view key, std::int64_t by = 1);
    /// EXPIRE (whole seconds): false when the key does not exist.
    Task<bool> expire(std::string_view key, std::chrono::seconds ttl);
    /// EXISTS: true when the key exists.
    Task<bool> exists(std::string_view key);
    /// PUBLISH: how many subscribers received the message.
    Task<std::int64_t> publish(std::string_view channel, std::string_view message);

    /// SUBSCRIBE to `channels` on a new connection of this loop; returns once the server has
    /// confirmed them (so a message published afterwards is received).
    Task<Subscription> subscribe(const std::vector<std::string>& channels);
    /// subscribe() to the channels given, e.g. subscribe("news", "sport").
    template <class... C>
    requires(sizeof...(C) > 0 && (std::convertible_to<const C&, std::string_view> &&
                                  ...)) Task<Subscription> subscribe(const C&... channels) {
        return subscribe(std::vector<std::string>{std::string(std::string_view(channels))...});
    }
    /// PSUBSCRIBE to glob `patterns` (e.g. "news.*"); as subscribe().
    Task<Subscription> psubscribe(const std::vector<std::string>& patterns);
    /// psubscribe() to the patterns given.
    template <class... C>
    requires(sizeof...(C) > 0 && (std::convertible_to<const C&, std::string_view> &&
                                  ...)) Task<Subscription> psubscribe(const C&... patterns) {
        return psubscribe(std::vector<std::string>{std::string(std::string_view(patterns))...});
    }

    /// The server this client talks to.
    const Url& url() const noexcept;
    /// The options it was made with.
    const Options& options() const noexcept;

  private:
    static Task<std::int64_t> integer_reply(Task<Reply> t);
    Task<Subscription> open_subscription(Command cmd, std::size_t confirmations);
    std::unique_ptr<detail::ClientImpl> impl_;
};

}  // namespace vela::redis
