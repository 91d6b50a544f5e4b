#include "vela/backplane/redis_backplane.hpp"

#include <algorithm>
#include <charconv>
#include <coroutine>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "vela/base/log.hpp"
#include "vela/reactor/loop.hpp"
#include "wire.hpp"

namespace vela {
namespace detail {
namespace {

// KEYS[1]: a room's presence hash. ARGV[1]: the node key prefix, ARGV[2]: this node (left out:
// the caller adds its own count, which may be newer than what it wrote). Fields of nodes whose
// liveness key expired are removed.
constexpr std::string_view kCount = R"lua(
local f = redis.call('HGETALL', KEYS[1])
local total = 0
for i = 1, #f, 2 do
  if f[i] ~= ARGV[2] then
    if redis.call('EXISTS', ARGV[1] .. f[i]) == 1 then
      total = total + tonumber(f[i + 1])
    else
      redis.call('HDEL', KEYS[1], f[i])
    end
  end
end
return total
)lua";

std::string random_node_id() {
    std::random_device rd;
    std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(12, '0');
    for (char& c : s) {
        c = kHex[v & 15];
        v >>= 4;
    }
    return s;
}

// Each thread that publishes is one publisher: its messages go out in order on its loop's
// connection, numbered per room.
std::atomic<std::uint64_t> g_next_thread{1};
std::uint64_t thread_index() {
    thread_local const std::uint64_t index = g_next_thread.fetch_add(1);
    return index;
}

}  // namespace

// The figures, apart from the backplane: /metrics may read them after it is gone.
struct BackplaneCounters {
    std::atomic<std::uint64_t> published{0}, failed{0}, received{0}, lost{0}, reconnects{0};
};

class RedisBackplaneImpl final : public HubBackplane {
  public:
    RedisBackplaneImpl(Hub& h, const std::string& url, RedisBackplaneOptions o)
        : hub_(h), opt_(std::move(o)) {
        if (opt_.node_id.empty()) opt_.node_id = random_node_id();
        if (opt_.node_id.find('\n') != std::string::npos)
            throw std::invalid_argument("RedisBackplane: node_id must not contain a line feed");
        if (opt_.presence_interval.count() <= 0 || opt_.presence_flush.count() < 0 ||
            opt_.presence_ttl < 2 * opt_.presence_interval)
            throw std::invalid_argument(
                "RedisBackplane: presence_interval must be positive and presence_ttl at least "
                "twice it");
        if (opt_.reconnect_min.count() <= 0 || opt_.reconnect_max < opt_.reconnect_min)
            throw std::invalid_argument(
                "RedisBackplane: reconnect_min must be positive and at "
                "most reconnect_max");
        redis::Options ro;
        ro.connections_per_loop = 1;  // one connection per loop: a publisher's order is kept
        client_ = std::make_unique<redis::Client>(url, ro);
        // Numbers restart with the process: a restarted node (same node_id) is new publishers.
        publisher_prefix_ = random_node_id() + ".";
        room_prefix_ = opt_.prefix + "room:";
        presence_prefix_ = opt_.prefix + "presence:";
        node_prefix_ = opt_.prefix + "node:";
        node_key_ = node_prefix_ + opt_.node_id;
        thread_ = std::thread([this] {
            loop_.post([this] {
                sub_task_ = vela::start(subscription(),
                                        [this](std::exception_ptr) { sub_task_done_ = true; });
                heartbeat();
            });
            loop_.run();
        });
    }

    ~RedisBackplaneImpl() override { stop(); }

    // Withdraws this node's presence (bounded), ends every task of the loop and joins it.
    void stop() {
        if (!thread_.joinable()) return;
        loop_.post([this] { shut_down(); });
        thread_.join();
    }

    // ---- from the hub (any thread) --------------------------------------------------------

    void members_changed(Hub::Room& room) noexcept override {
        std::lock_guard lock(mu_);
        dirty_.insert(&room);
        if (flush_posted_ || stopping_) return;
        flush_posted_ = true;
        loop_.post([this] { loop_.call_after(opt_.presence_flush, [this] { flush_dirty(); }); });
    }

    void publish(Hub::Room& room, std::string_view data, WsType type) noexcept override {
        try {
            std::uint64_t seq;
            const std::uint64_t publisher = thread_index();
            {
                std::lock_guard lock(mu_);
                if (stopping_) return;
                seq = ++seqs_[SeqKey{&room, publisher}];
            }
            std::string env;
            env.reserve(opt_.node_id.size() + data.size() + 64);
            write_envelope(env, opt_.node_id, publisher_prefix_ + std::to_string(publisher), seq,
                           type, data);
            counters_->published.fetch_add(1, std::memory_order_relaxed);
            std::string channel = room_prefix_ + room.name();
            if (Loop::current()) {
                vela::spawn(send(std::move(channel), std::move(env)));
            } else {
                std::lock_guard lock(mu_);  // the loop is there until stopping_ is set
                if (stopping_) return;
                loop_.post([this, c = std::move(channel), e = std::move(env)]() mutable {
                    vela::spawn(send(std::move(c), std::move(e)));
                });
            }
        } catch (...) {
            counters_->failed.fetch_add(1, std::memory_order_relaxed);
        }
    }

    // ---- the API --------------------------------------------------------------------------

    Task<std::size_t> count(std::string room) {
        const Hub::Room* found = hub_.find(room);  // a count makes no room
        const std::size_t here = found ? found->count() : 0;
        redis::Reply r = co_await client_->command("EVAL", kCount, "1", presence_prefix_ + room,
                                                   node_prefix_, opt_.node_id);
        const std::int64_t others = r.as_integer();
        co_return here + static_cast<std::size_t>(std::max<std::int64_t>(0, others));
    }

    const std::string& node_id() const noexcept { return opt_.node_id; }
    bool connected() const noexcept { return connected_.load(std::memory_order_relaxed); }

    const std::shared_ptr<BackplaneCounters> counters_ = std::make_shared<BackplaneCounters>();

  private:
    struct SeqKey {
        Hub::Room* room;
        std::uint64_t publisher;
        bool operator==(const SeqKey&) const = default;
    };
    struct SeqHash {
        std::size_t operator()(const SeqKey& k) const noexcept {
            return std::hash<const void*>()(k.room) ^ (k.publisher * 0x9e3779b97f4a7c15ULL);
        }
    };
    // What the backplane's loop knows of a room.
    struct RoomState {
        bool subscribed = false;
        std::size_t written = 0;                                  // the count Redis holds for us
        std::unordered_map<std::string, std::uint64_t> last_seq;  // per publisher "node/thread"
    };

    Task<void> send(std::string channel, std::string envelope) {
        try {
            co_await client_->command("PUBLISH", channel, envelope);
        } catch (const std::exception&) {
            counters_->failed.fetch_add(1, std::memory_order_relaxed);
        }
    }

    // The subscription, made again (with a backoff) whenever it is lost.
    Task<void> subscription() {
        std::chrono::milliseconds backoff = opt_.reconnect_min;
        bool was_connected = false;
        while (!stopping_flag_) {
            try {
                redis::Subscription s = co_await client_->subscribe(node_key_);
                if (stopping_flag_) break;
                sub_ = std::move(s);
                pings_ = 0;
                connected_.store(true, std::memory_order_relaxed);
                if (was_connected) log::info("hub backplane: Redis subscription made again");
                was_connected = true;
                backoff = opt_.reconnect_min;
                // Subscribed again from scratch; the publishers' last numbers stay, so what
                // was published meanwhile shows as a gap.
                for (auto& [room, st] : rooms_) {
                    st.subscribed = false;
                    st.written = static_cast<std::size_t>(-1);  // Redis may have lost it all
                }
                for (auto& [room, st] : rooms_) reconcile(*room, st);
                write_presence(true);
                for (;;) {
                    redis::Message m = co_await sub_.next();
                    deliver(m);
                }
            } catch (const std::exception& e) {
                if (stopping_flag_) break;
                if (connected_.exchange(false, std::memory_order_relaxed)) {
                    counters_->reconnects.fetch_add(1, std::memory_order_relaxed);
                    log::warn(
                        "hub backplane: lost the Redis subscription ({}); local delivery "
                        "goes on, reconnecting",
                        e.what());
                }
            }
            sub_.close();
            if (stopping_flag_) break;
            co_await vela::sleep(backoff);
            backoff = std::min(backoff * 2, opt_.reconnect_max);
        }
    }

    void deliver(const redis::Message& m) {
        if (!std::string_view(m.channel).starts_with(room_prefix_)) return;
        Envelope e;
        if (!parse_envelope(m.payload, e) || e.node == opt_.node_id) return;
        Hub::Room* found = hub_.find(std::string_view(m.channel).substr(room_prefix_.size()));
        if (!found) return;
        Hub::Room& room = *found;
        auto sit = rooms_.find(&room);
        if (sit == rooms_.end() || !sit->second.subscribed) return;  // sent before UNSUBSCRIBE
        RoomState& st = sit->second;
        std::string publisher;
        publisher.reserve(e.node.size() + e.publisher.size() + 1);
        publisher.append(e.node).append(1, '/').append(e.publisher);
        auto [it, fresh] = st.last_seq.try_emplace(std::move(publisher), e.seq);
        if (!fresh) {
            if (e.seq > it->second + 1) counters_->lost.fetch_add(e.seq - it->second - 1);
            if (e.seq > it->second) it->second = e.seq;
        }
        counters_->received.fetch_add(1, std::memory_order_relaxed);
        room.deliver(e.data, e.type);
    }

    // Subscribed exactly while the room has members here.
    void reconcile(Hub::Room& room, RoomState& st) {
        const bool want = room.count() > 0;
        if (!want) st.last_seq.clear();  // whoever publishes next starts a new baseline
        if (!sub_.is_open() || want == st.subscribed) return;
        const std::string channel = room_prefix_ + room.name();
        if (want)
            sub_.subscribe_more({channel});
        else
            sub_.unsubscribe({channel});
        st.subscribed = want;
    }

    void flush_dirty() {
        if (stopping_flag_) return;
        std::unordered_set<Hub::Room*> dirty;
        {
            std::lock_guard lock(mu_);
            dirty.swap(dirty_);
            flush_posted_ = false;
        }
        for (Hub::Room* r : dirty) reconcile(*r, rooms_[r]);
        write_presence(false);
    }

    // Every presence_interval: the node is alive, and every room's figure is written again.
    // A subscription that stopped answering PING (a half-open connection: a partition, a
    // failover) is closed, so the subscription loop makes a new one.
    void heartbeat() {
        if (stopping_flag_) return;
        if (sub_.is_open()) {
            if (pings_ >= sub_.pongs() + 2) {
                log::warn("hub backplane: the Redis subscription stopped answering; reconnecting");
                sub_.close();
            } else {
                sub_.ping();
                ++pings_;
            }
        }
        for (auto& [room, st] : rooms_) reconcile(*room, st);
        write_presence(true);
        heartbeat_timer_ = loop_.call_after(opt_.presence_interval, [this] { heartbeat(); });
    }

    // Writes the counts that changed (all of them when `all`), once a room's subscription is
    // confirmed: a node that says it has members gets the messages sent to them.
    void write_presence(bool all) {
        if (!connected() || stopping_flag_) return;
        std::vector<redis::Command> cmds;
        const long long ttl = opt_.presence_ttl.count();
        cmds.emplace_back("SET", node_key_, "1", "PX", ttl);
        bool retry = false;
        for (auto& [room, st] : rooms_) {
            const std::size_t n = room->count();
            if (!all && n == st.written) continue;
            const std::string key = presence_prefix_ + room->name();
            if (n > 0 && !sub_.is_subscribed(room_prefix_ + room->name())) {
                retry = true;  // written once the confirmation came
                continue;
            }
            if (n == 0) {
                if (st.written != 0) cmds.emplace_back("HDEL", key, opt_.node_id);
            } else {
                cmds.emplace_back("HSET", key, opt_.node_id, static_cast<long long>(n));
                cmds.emplace_back("PEXPIRE", key, ttl);
            }
            st.written = n;
        }
        if (retry) {
            std::lock_guard lock(mu_);
            if (!flush_posted_ && !stopping_) {
                flush_posted_ = true;
                loop_.call_after(std::chrono::milliseconds(5), [this] { flush_dirty(); });
            }
        }
        vela::spawn(run_pipeline(std::move(cmds)));
    }

    Task<void> run_pipeline(std::vector<redis::Command> cmds) {
        try {
            co_await client_->pipeline(std::move(cmds));
        } catch (const std::exception&) {
            // Written again at the next heartbeat (the subscription notices a lost Redis).
        }
    }

    // On the loop: withdraw this node's presence (best effort, at most 500 ms), then end the
    // subscription task and stop the loop (nothing left suspended).
    void shut_down() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        stopping_flag_ = true;
        loop_.cancel(heartbeat_timer_);
        const bool was_connected = connected_.exchange(false);
        if (!sub_task_done_) sub_task_.destroy();
        sub_task_done_ = true;
        sub_.close();
        if (!was_connected) {
            loop_.stop();
            return;
        }
        std::vector<redis::Command> cmds;
        cmds.emplace_back("DEL", node_key_);
        for (auto& [room, st] : rooms_)
            if (st.written > 0 && st.written != static_cast<std::size_t>(-1))
                cmds.emplace_back("HDEL", presence_prefix_ + room->name(), opt_.node_id);
        auto task = [](RedisBackplaneImpl* self, std::vector<redis::Command> c) -> Task<void> {
            try {
                co_await self->client_->pipeline(std::move(c));
            } catch (const std::exception&) {
            }
        };
        withdraw_ = vela::start(task(this, std::move(cmds)), [this](std::exception_ptr) {
            withdraw_done_ = true;
            loop_.cancel(withdraw_timer_);
            loop_.stop();
        });
        if (withdraw_done_) return;
        withdraw_timer_ = loop_.call_after(std::chrono::milliseconds(500), [this] {
            if (!withdraw_done_) withdraw_.destroy();  // Redis too slow: leave it to the expiry
            withdraw_done_ = true;
            loop_.stop();
        });
    }

    Hub& hub_;
    RedisBackplaneOptions opt_;
    std::unique_ptr<redis::Client> client_;
    std::string publisher_prefix_, room_prefix_, presence_prefix_, node_prefix_, node_key_;
    Loop loop_;
    std::thread thread_;
    std::atomic<bool> connected_{false};

    // Shared with the hub's threads.
    std::mutex mu_;
    std::unordered_set<Hub::Room*> dirty_;
    bool flush_posted_ = false;
    bool stopping_ = false;
    std::unordered_map<SeqKey, std::uint64_t, SeqHash> seqs_;

    // The backplane's loop only.
    bool stopping_flag_ = false;
    std::coroutine_handle<> sub_task_, withdraw_;
    bool sub_task_done_ = false, withdraw_done_ = false;
    std::uint64_t heartbeat_timer_ = 0, withdraw_timer_ = 0;
    std::uint64_t pings_ = 0;
    redis::Subscription sub_;
    std::unordered_map<Hub::Room*, RoomState> rooms_;
};

}  // namespace detail

RedisBackplane::RedisBackplane(Hub& hub, const std::string& url, RedisBackplaneOptions options)
    : impl_(std::make_shared<detail::RedisBackplaneImpl>(hub, url, std::move(options))) {
    hub.set_backplane(impl_.get());
    hub_ = &hub;
}

RedisBackplane::~RedisBackplane() {
    hub_->set_backplane(nullptr);
    impl_->stop();
}

Task<std::size_t> RedisBackplane::count(std::string room) { return impl_->count(std::move(room)); }
const std::string& RedisBackplane::node_id() const noexcept { return impl_->node_id(); }
bool RedisBackplane::connected() const noexcept { return impl_->connected(); }
std::uint64_t RedisBackplane::published() const noexcept {
    return impl_->counters_->published.load();
}
std::uint64_t RedisBackplane::publish_failed() const noexcept {
    return impl_->counters_->failed.load();
}
std::uint64_t RedisBackplane::received() const noexcept {
    return impl_->counters_->received.load();
}
std::uint64_t RedisBackplane::lost() const noexcept { return impl_->counters_->lost.load(); }
std::uint64_t RedisBackplane::reconnects() const noexcept {
    return impl_->counters_->reconnects.load();
}

std::vector<CounterSource> RedisBackplane::counters() const {
    std::shared_ptr<detail::BackplaneCounters> c = impl_->counters_;  // not the backplane
    using C = detail::BackplaneCounters;
    auto of = [c](std::atomic<std::uint64_t> C::*f) {
        return [c, f] { return ((*c).*f).load(std::memory_order_relaxed); };
    };
    return {
        {"vela_hub_backplane_published_total", "Room messages this node published to Redis.", "",
         "", of(&C::published)},
        {"vela_hub_backplane_publish_failed_total",
         "Room messages this node could not publish (Redis unreachable).", "", "", of(&C::failed)},
        {"vela_hub_backplane_received_total", "Room messages received from other nodes.", "", "",
         of(&C::received)},
        {"vela_hub_backplane_lost_total",
         "Room messages of other nodes this node missed (sequence gaps).", "", "", of(&C::lost)},
        {"vela_hub_backplane_reconnects_total", "Times the Redis subscription was lost.", "", "",
         of(&C::reconnects)},
    };
}

}  // namespace vela
