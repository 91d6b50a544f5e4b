#include "vela/backplane/redis_event_stream.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <coroutine>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "vela/base/log.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/redis/client.hpp"
#include "wire.hpp"

namespace vela {
namespace detail {
namespace {

struct StreamEvent {
    std::string id;
    EntryId key;
    std::string event, data;
};
using Batch = std::shared_ptr<const std::vector<StreamEvent>>;

// Entries of an XRANGE/XREAD reply: [[id, [field, value, ...]], ...].
std::vector<StreamEvent> parse_entries(const redis::Reply& r) {
    std::vector<StreamEvent> out;
    if (r.type != redis::Reply::Type::array) return out;
    for (const redis::Reply& e : r.elements) {
        if (e.type != redis::Reply::Type::array || e.elements.size() != 2) continue;
        StreamEvent ev;
        ev.id = e.elements[0].str;
        if (!parse_entry_id(ev.id, ev.key)) continue;
        const auto& f = e.elements[1].elements;
        for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
            if (f[i].str == "data")
                ev.data = f[i + 1].str;
            else if (f[i].str == "event")
                ev.event = f[i + 1].str;
        }
        out.push_back(std::move(ev));
    }
    return out;
}

}  // namespace

// One client's stream on its loop: the batches handed to it, and its producer waiting.
struct StreamClient {
    std::deque<Batch> pending;
    std::coroutine_handle<> waiter;
    std::uint64_t timer = 0;
};

// The clients of one loop (touched only on that loop) and how to reach it.
struct StreamLoop {
    LoopRef ref;
    std::vector<StreamClient*> clients;
};

class RedisEventStreamImpl : public std::enable_shared_from_this<RedisEventStreamImpl> {
  public:
    RedisEventStreamImpl(const std::string& url, std::string key, RedisEventStreamOptions o)
        : key_(std::move(key)), opt_(std::move(o)) {
        if (key_.empty()) throw std::invalid_argument("RedisEventStream: empty stream key");
        if (opt_.max_len == 0 || opt_.block.count() <= 0 || opt_.reconnect_min.count() <= 0 ||
            opt_.reconnect_max < opt_.reconnect_min)
            throw std::invalid_argument(
                "RedisEventStream: max_len, block and reconnect_min must be positive and "
                "reconnect_min at most reconnect_max");
        redis::Options ro;
        ro.command_timeout = opt_.block * 2 + std::chrono::seconds(5);  // XREAD BLOCK waits
        client_ = std::make_unique<redis::Client>(url, ro);
    }

    // Starts the reader and waits (at most a few seconds) until it knows where the stream
    // ends: an event published once the constructor returned is one the reader will see, so
    // no client served afterwards misses it.
    void start() {
        thread_ = std::thread([self = this] {
            self->loop_.post([self] {
                self->reader_ = vela::start(
                    self->read_loop(), [self](std::exception_ptr) { self->reader_done_ = true; });
            });
            self->loop_.run();
        });
        std::unique_lock lock(positioned_mu_);
        positioned_cv_.wait_for(lock, opt_.block + std::chrono::seconds(5),
                                [this] { return positioned_; });
    }

    ~RedisEventStreamImpl() { stop(); }

    // Ends the reader (abandoning the XREAD it waits on) and joins the loop's thread.
    void stop() {
        if (!thread_.joinable()) return;
        loop_.post([this] {
            stopping_ = true;
            if (!reader_done_) reader_.destroy();
            reader_done_ = true;
            loop_.stop();
        });
        thread_.join();
    }

    Task<std::string> publish(std::string data, std::string event) {
        Command c{"XADD", key_, "MAXLEN", "~", static_cast<long long>(opt_.max_len), "*"};
        if (!event.empty()) {
            c.arg("event");
            c.arg(event);
        }
        c.arg("data");
        c.arg(data);
        redis::Reply r = co_await client_->execute(std::move(c));
        co_return r.as_string();
    }

    Response serve(const Request& req) {
        std::shared_ptr<RedisEventStreamImpl> self = shared_from_this();
        return sse(
            req, [self](SseStream& s) -> Task<void> { co_await self->serve_one(s); }, opt_.sse);
    }

    std::size_t clients() const noexcept { return clients_.load(std::memory_order_relaxed); }

    const std::string key_;
    // Apart from the stream: /metrics may read it after the stream is gone.
    const std::shared_ptr<std::atomic<std::uint64_t>> reconnects_ =
        std::make_shared<std::atomic<std::uint64_t>>(0);

  private:
    using Command = redis::Command;

    // Waits for a batch, or up to a second (the producer then looks whether its client is
    // still there: a stream without events must not hold a gone client, or a drain).
    struct NextAwaiter {
        StreamClient& c;
        Loop& loop;
        bool await_ready() const noexcept { return !c.pending.empty(); }
        void await_suspend(std::coroutine_handle<> h) {
            c.waiter = h;
            c.timer = loop.call_after(std::chrono::seconds(1), [cl = &c] {
                cl->timer = 0;
                if (cl->waiter) std::exchange(cl->waiter, {}).resume();
            });
        }
        void await_resume() noexcept {}
        ~NextAwaiter() {
            c.waiter = {};
            if (c.timer) loop.cancel(std::exchange(c.timer, 0));
        }
    };

    // Registered with its loop for its lifetime (the producer's frame holds it).
    struct Registration {
        RedisEventStreamImpl& impl;
        StreamLoop* slot;
        StreamClient* client;
        Registration(RedisEventStreamImpl& i, StreamClient* c) : impl(i), client(c) {
            slot = impl.slot_for(*Loop::current());
            slot->clients.push_back(client);
            impl.clients_.fetch_add(1, std::memory_order_relaxed);
        }
        ~Registration() {
            auto& v = slot->clients;
            v.erase(std::remove(v.begin(), v.end(), client), v.end());
            impl.clients_.fetch_sub(1, std::memory_order_relaxed);
        }
    };

    Task<void> serve_one(SseStream& s) {
        Loop& loop = *Loop::current();
        StreamClient me;
        Registration reg(*this, &me);  // live events are kept from here on
        EntryId sent;
        bool have_sent = false;
        if (!s.last_event_id().empty()) {
            EntryId from;
            if (parse_entry_id(s.last_event_id(), from)) {
                sent = from;
                have_sent = true;
                // The newest replay_max after it: XREVRANGE down to it, sent oldest first.
                std::string after(1, '(');  // exclusive: the events after it
                after.append(s.last_event_id());
                const auto count = static_cast<long long>(opt_.replay_max);
                redis::Reply r =
                    co_await client_->command("XREVRANGE", key_, "+", after, "COUNT", count);
                std::vector<StreamEvent> missed = parse_entries(r);
                std::reverse(missed.begin(), missed.end());
                for (const StreamEvent& e : missed) {
                    if (!co_await s.send({.data = e.data, .event = e.event, .id = e.id})) co_return;
                    sent = e.key;
                }
            }
        }
        while (s.open()) {
            co_await NextAwaiter{me, loop};
            while (!me.pending.empty()) {
                Batch b = std::move(me.pending.front());
                me.pending.pop_front();
                for (const StreamEvent& e : *b) {
                    if (have_sent && e.key <= sent) continue;  // replayed already
                    if (!co_await s.send({.data = e.data, .event = e.event, .id = e.id})) co_return;
                    sent = e.key;
                    have_sent = true;
                }
            }
        }
    }

    StreamLoop* slot_for(Loop& loop) {
        const LoopRef ref = loop.ref();
        std::lock_guard lock(mu_);
        for (auto& s : slots_)
            if (s->ref.same_loop(ref)) return s.get();
        slots_.push_back(std::make_shared<StreamLoop>(StreamLoop{ref, {}}));
        return slots_.back().get();
    }

    // Hands a batch to every loop with clients (one post each).
    // A resumed producer may end (and leave the list), so the waiters are resumed after.
    void dispatch(Batch b) {
        std::lock_guard lock(mu_);
        for (const std::shared_ptr<StreamLoop>& slot : slots_) {
            slot->ref.post([slot, b] {
                std::vector<std::coroutine_handle<>> wake;
                for (StreamClient* c : slot->clients) {
                    c->pending.push_back(b);
                    if (c->waiter) wake.push_back(std::exchange(c->waiter, {}));
                }
                for (std::coroutine_handle<> h : wake) h.resume();
            });
        }
    }

    // The reader has its first position, or could not reach Redis for it (start() waits).
    void mark_positioned() {
        {
            std::lock_guard lock(positioned_mu_);
            if (positioned_) return;
            positioned_ = true;
        }
        positioned_cv_.notify_all();
    }

    // The node's one reader: from the stream's end at start, then from the last id seen, so a
    // lost connection loses nothing Redis still holds.
    Task<void> read_loop() {
        std::chrono::milliseconds backoff = opt_.reconnect_min;
        std::string last;
        bool down = false;
        while (!stopping_) {
            try {
                if (last.empty()) {
                    redis::Reply r =
                        co_await client_->command("XREVRANGE", key_, "+", "-", "COUNT", "1");
                    std::vector<StreamEvent> e = parse_entries(r);
                    last = e.empty() ? "0-0" : e.front().id;
                    mark_positioned();
                }
                const auto block = static_cast<long long>(opt_.block.count());
                redis::Reply r = co_await client_->command("XREAD", "COUNT", "1000", "BLOCK", block,
                                                           "STREAMS", key_, last);
                if (down) {
                    down = false;
                    log::info("event stream {}: reading again", key_);
                }
                backoff = opt_.reconnect_min;
                if (r.is_nil() || r.type != redis::Reply::Type::array || r.elements.empty())
                    continue;
                const redis::Reply& stream = r.elements[0];
                if (stream.elements.size() != 2) continue;
                auto batch =
                    std::make_shared<std::vector<StreamEvent>>(parse_entries(stream.elements[1]));
                if (batch->empty()) continue;
                last = batch->back().id;
                dispatch(std::move(batch));
                continue;
            } catch (const std::exception& e) {
                mark_positioned();  // (Redis is down: start() does not wait for it)
                if (stopping_) co_return;
                if (!down) {
                    down = true;
                    reconnects_->fetch_add(1, std::memory_order_relaxed);
                    log::warn("event stream {}: reading failed ({}); trying again", key_, e.what());
                }
            }
            co_await vela::sleep(backoff);
            backoff = std::min(backoff * 2, opt_.reconnect_max);
        }
    }

    RedisEventStreamOptions opt_;
    std::unique_ptr<redis::Client> client_;
    std::mutex mu_;
    std::vector<std::shared_ptr<StreamLoop>> slots_;  // a post may outlive us
    std::atomic<std::size_t> clients_{0};
    Loop loop_;
    std::thread thread_;
    std::coroutine_handle<> reader_;
    bool reader_done_ = false;
    bool stopping_ = false;
    std::mutex positioned_mu_;
    std::condition_variable positioned_cv_;
    bool positioned_ = false;
};

}  // namespace detail

RedisEventStream::RedisEventStream(const std::string& url, std::string key,
                                   RedisEventStreamOptions options)
    : impl_(
          std::make_shared<detail::RedisEventStreamImpl>(url, std::move(key), std::move(options))) {
    impl_->start();
}

RedisEventStream::~RedisEventStream() { impl_->stop(); }

Task<std::string> RedisEventStream::publish(std::string data, std::string event) {
    return impl_->publish(std::move(data), std::move(event));
}

Response RedisEventStream::serve(const Request& req) { return impl_->serve(req); }

std::size_t RedisEventStream::clients() const noexcept { return impl_->clients(); }

std::uint64_t RedisEventStream::reconnects() const noexcept { return impl_->reconnects_->load(); }

CounterSource RedisEventStream::counter() const {
    std::shared_ptr<std::atomic<std::uint64_t>> n = impl_->reconnects_;  // not the stream
    return CounterSource{"vela_event_stream_reconnects_total",
                         "Times a Redis event stream's reader lost its connection.", "stream",
                         impl_->key_, [n] { return n->load(std::memory_order_relaxed); }};
}

}  // namespace vela
