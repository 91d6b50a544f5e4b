#pragma once
// Redis replies and errors (RESP2), independent of any socket.
//
// A Reply is one decoded reply: nil, integer, simple string ("OK"), bulk string (any bytes),
// array (nested replies) or error ("ERR ..."). Client::command() turns a top-level error reply
// into a redis::ServerError exception; inside arrays (EXEC, pipeline()) errors stay Replies
// of type error, so one failed command does not hide the others' results.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vela::redis {

/// One Redis reply (see above).
struct Reply {
    /// What the server sent.
    enum class Type : std::uint8_t { nil, integer, status, string, array, error };
    /// The kind of this reply.
    Type type = Type::nil;
    /// The value of an integer reply.
    std::int64_t integer = 0;
    /// The bytes of a bulk string, the text of a simple string or of an error.
    std::string str;
    /// The elements of an array reply.
    std::vector<Reply> elements;

    /// True for a nil reply (a missing key, a null array).
    bool is_nil() const noexcept { return type == Type::nil; }
    /// True for an error reply.
    bool is_error() const noexcept { return type == Type::error; }
    /// The bytes of a bulk or simple string; throws redis::Error for any other type.
    const std::string& as_string() const;
    /// The value of an integer reply; throws redis::Error for any other type.
    std::int64_t as_integer() const;
    /// The elements of an array reply; throws redis::Error for any other type.
    const std::vector<Reply>& as_array() const;
    /// A short description for messages and tests, e.g. `"OK"`, `(integer) 3`, `(nil)`.
    std::string to_debug_string() const;

    /// A nil reply.
    static Reply nil() { return {}; }
    /// An integer reply.
    static Reply of_integer(std::int64_t v) {
        Reply r;
        r.type = Type::integer;
        r.integer = v;
        return r;
    }
    /// A reply of `type` (status, string or error) carrying `s`.
    static Reply of_text(Type type, std::string s) {
        Reply r;
        r.type = type;
        r.str = std::move(s);
        return r;
    }
    /// Same type and contents.
    bool operator==(const Reply&) const = default;
};

/// The name of a reply type ("nil", "integer", "status", "string", "array", "error").
std::string_view type_name(Reply::Type t) noexcept;

/// Base of every error of the Redis client.
class Error : public std::runtime_error {
  public:
    /// `what` is one line meant for a person.
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// The server answered a command with an error reply ("WRONGTYPE Operation against a key ...").
class ServerError : public Error {
  public:
    /// `message` is the server's text; code() is its first word.
    explicit ServerError(const std::string& message);
    /// The error's first word ("ERR", "WRONGTYPE", "NOAUTH", ...).
    const std::string& code() const noexcept { return code_; }

  private:
    std::string code_;
};

/// The connection failed: could not connect, authenticate or select the database, or it was
/// lost with the command in flight (the command may or may not have run).
class ConnectionError : public Error {
  public:
    /// `what` names the server and the reason.
    explicit ConnectionError(const std::string& what) : Error(what) {}
};

/// No reply came within Options::command_timeout (the connection was dropped; the command
/// may or may not have run).
class TimeoutError : public Error {
  public:
    /// `what` names the server and the timeout.
    explicit TimeoutError(const std::string& what) : Error(what) {}
};

/// The server sent bytes that are not RESP (the connection was dropped).
class ProtocolError : public Error {
  public:
    /// `what` says what was wrong.
    explicit ProtocolError(const std::string& what) : Error(what) {}
};

}  // namespace vela::redis
