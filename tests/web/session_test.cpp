// Tests for src/middleware/session.cpp: the Session value API, SessionRecord encoding, MemoryStore
// (threads, bounds, expiry with an injected clock) and CookieStore (tampering, rotation,
// contexts). The middleware itself runs over real sockets in tests/e2e/session_e2e_test.cpp.
#include "vela/middleware/session.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "vela/crypto/crypto.hpp"
#include "vela/json/json.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;

struct Profile {
    std::string name;
    int age = 0;
    std::vector<std::string> roles;
};
VELA_REFLECT(Profile, name, age, roles)

// A clock the test moves by hand (shared by the store and the test).
struct FakeClock {
    std::shared_ptr<std::atomic<std::int64_t>> secs =
        std::make_shared<std::atomic<std::int64_t>>(1'700'000'000);
    SessionClock fn() const {
        return [s = secs] { return SysClock::time_point(std::chrono::seconds(s->load())); };
    }
    void advance(std::chrono::seconds d) { *secs += d.count(); }
    SessionTime now() const { return SessionTime(std::chrono::seconds(secs->load())); }
};

// Runs a task that completes without suspending (the memory store's) and returns its value.
template <class T>
T run_now(Task<T> t) {
    auto h = t.release();
    h.resume();
    EXPECT_TRUE(h.done());
    if constexpr (std::is_void_v<T>) {
        h.promise().take();
        h.destroy();
    } else {
        T v = h.promise().take();
        h.destroy();
        return v;
    }
}

SessionRecord record(std::string data, SessionTime t = SessionTime(1000s)) {
    SessionRecord r;
    r.data = std::move(data);
    r.created = t;
    r.accessed = t;
    return r;
}

std::string new_id() { return crypto::random_token(32); }

// ---- Session values ---------------------------------------------------------------------

TEST(Session, NewSessionIsEmptyAndUnchanged) {
    Session s(SessionTime(100s));
    EXPECT_TRUE(s.is_new());
    EXPECT_FALSE(s.changed());
    EXPECT_FALSE(s.contains("x"));
    EXPECT_FALSE(s.get<int>("x"));
    EXPECT_EQ(s.created(), SessionTime(100s));
    EXPECT_TRUE(s.values().is_object());
}

TEST(Session, ScalarsRoundTrip) {
    Session s(SessionTime(0s));
    s.set("n", 42);
    s.set("big", std::int64_t{1} << 40);
    s.set("u", 7u);
    s.set("b", true);
    s.set("d", 2.5);
    s.set("s", std::string("hello"));
    s.set("lit", "literal");
    EXPECT_EQ(s.get<int>("n"), 42);
    EXPECT_EQ(s.get<std::int64_t>("big"), std::int64_t{1} << 40);
    EXPECT_EQ(s.get<unsigned>("u"), 7u);
    EXPECT_EQ(s.get<bool>("b"), true);
    EXPECT_EQ(s.get<double>("d"), 2.5);
    EXPECT_EQ(s.get<std::string>("s"), "hello");
    EXPECT_EQ(s.get<std::string>("lit"), "literal");
    EXPECT_TRUE(s.changed());
}

TEST(Session, ReflectedStructsAndContainers) {
    Session s(SessionTime(0s));
    s.set("p", Profile{"alice", 30, {"admin", "dev"}});
    s.set("v", std::vector<int>{1, 2, 3});
    s.set("m", std::map<std::string, int>{{"a", 1}});
    std::optional<Profile> p = s.get<Profile>("p");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->name, "alice");
    EXPECT_EQ(p->age, 30);
    EXPECT_EQ(p->roles, (std::vector<std::string>{"admin", "dev"}));
    EXPECT_EQ(s.get<std::vector<int>>("v"), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ((s.get<std::map<std::string, int>>("m")->at("a")), 1);
    std::optional<json::Value> raw = s.get<json::Value>("p");
    ASSERT_TRUE(raw);
    EXPECT_EQ((*raw)["name"].as_string(), "alice");
}

TEST(Session, WrongShapeReadsAsNullopt) {
    Session s(SessionTime(0s));
    s.set("s", std::string("text"));
    s.set("n", 300);
    s.set("p", Profile{"bob", 1, {}});
    EXPECT_FALSE(s.get<int>("s"));
    EXPECT_FALSE(s.get<std::string>("n"));
    EXPECT_FALSE(s.get<std::uint8_t>("n"));  // out of range
    EXPECT_FALSE(s.get<Profile>("n"));
    EXPECT_FALSE(s.get<std::vector<int>>("p"));
    EXPECT_TRUE(s.get<Profile>("p"));
}

TEST(Session, NoOpEditsAreNotChanges) {
    Session t(SessionTime(0s));
    t.erase("missing");
    t.clear();
    EXPECT_FALSE(t.changed()) << "erasing a missing key or clearing an empty session";
}

TEST(Session, EraseClearContains) {
    Session s(SessionTime(0s));
    s.set("a", 1);
    s.set("b", 2);
    EXPECT_TRUE(s.contains("a"));
    EXPECT_TRUE(s.erase("a"));
    EXPECT_FALSE(s.erase("a"));
    EXPECT_FALSE(s.contains("a"));
    EXPECT_TRUE(s.contains("b"));
    s.clear();
    EXPECT_FALSE(s.contains("b"));
    EXPECT_EQ(s.values().size(), 0u);
}

TEST(Session, IdIsA256BitTokenMadeOnDemand) {
    Session s(SessionTime(0s));
    const std::string id = s.id();
    EXPECT_EQ(id.size(), 43u);
    EXPECT_EQ(vela::base64url_decode(id)->size(), 32u);
    EXPECT_EQ(s.id(), id);
    Session t(SessionTime(0s));
    EXPECT_NE(t.id(), id);
}

TEST(Session, DestroyEmptiesAndMarksNew) {
    Session s(SessionTime(5s));
    s.set("user", std::string("alice"));
    s.destroy();
    EXPECT_TRUE(s.is_new());
    EXPECT_TRUE(s.changed());
    EXPECT_FALSE(s.contains("user"));
}

TEST(Session, ThrowsWithoutMiddleware) {
    Request req;
    try {
        (void)session(req);
        FAIL() << "no exception";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("sessions("), std::string::npos) << e.what();
    }
}

TEST(Session, SessionsRejectsContradictoryOptions) {
    SessionOptions both;
    both.store = std::make_shared<MemoryStore>();
    both.cookie_store = std::make_shared<CookieStore>(std::vector{crypto::random_token()});
    EXPECT_THROW(sessions(both), std::invalid_argument);
    SessionOptions unnamed;
    unnamed.cookie_name = "";
    EXPECT_THROW(sessions(unnamed), std::invalid_argument);
    SessionOptions bad_name;
    bad_name.cookie_name = "a b";
    EXPECT_THROW(sessions(bad_name), std::invalid_argument);
    SessionOptions zero;
    zero.idle_timeout = 0s;
    EXPECT_THROW(sessions(zero), std::invalid_argument);
    EXPECT_NO_THROW(sessions());
}

// ---- SessionRecord ----------------------------------------------------------------------

TEST(SessionRecord, EncodeDecode) {
    SessionRecord r = record(R"({"user":"alice","n":[1,2]})", SessionTime(1'700'000'000s));
    r.accessed = SessionTime(1'700'000'123s);
    const std::string text = r.encode();
    EXPECT_EQ(text, R"({"c":1700000000,"a":1700000123,"d":{"user":"alice","n":[1,2]}})");
    std::optional<SessionRecord> back = SessionRecord::decode(text);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, r);
}

TEST(SessionRecord, DecodeRefusesOtherDocuments) {
    for (std::string_view bad : {"", "{", "[]", "{}", R"({"c":1,"a":2})", R"({"c":1,"a":2,"d":[]})",
                                 R"({"c":"1","a":2,"d":{}})", R"({"c":1.5,"a":2,"d":{}})",
                                 R"({"c":18446744073709551615,"a":2,"d":{}})"})
        EXPECT_FALSE(SessionRecord::decode(bad)) << bad;
}

// ---- MemoryStore ------------------------------------------------------------------------

TEST(MemoryStore, SaveLoadErase) {
    MemoryStore store;
    const std::string id = new_id();
    EXPECT_FALSE(store.find(id));
    store.put(id, record(R"({"a":1})"), 60s);
    ASSERT_TRUE(store.find(id));
    EXPECT_EQ(store.find(id)->data, R"({"a":1})");
    store.put(id, record(R"({"a":2})"), 60s);
    EXPECT_EQ(store.find(id)->data, R"({"a":2})");
    EXPECT_EQ(store.size(), 1u);
    EXPECT_TRUE(store.remove(id));
    EXPECT_FALSE(store.remove(id));
    EXPECT_FALSE(store.find(id));
    EXPECT_EQ(store.size(), 0u);
    EXPECT_EQ(store.bytes(), 0u);
}

// update() stores only while the id is held: a session erased by a logout running at the same
// time stays erased.
TEST(MemoryStore, UpdateOnlyWhilePresent) {
    MemoryStore store;
    SessionStore& s = store;
    const std::string id = new_id();
    EXPECT_FALSE(run_now(s.update(id, record(R"({"a":1})"), 60s)));
    EXPECT_FALSE(store.find(id));
    store.put(id, record(R"({"a":1})"), 60s);
    EXPECT_TRUE(run_now(s.update(id, record(R"({"a":2})"), 60s)));
    EXPECT_EQ(store.find(id)->data, R"({"a":2})");
    run_now(s.erase(id));
    EXPECT_FALSE(run_now(s.update(id, record(R"({"a":3})"), 60s)));
    EXPECT_FALSE(store.find(id));
    EXPECT_EQ(store.size(), 0u);
}

TEST(MemoryStore, TaskInterface) {
    MemoryStore store;
    SessionStore& s = store;
    const std::string id = new_id();
    EXPECT_FALSE(run_now(s.load(id)));
    run_now(s.save(id, record("{\"k\":true}"), 10s));
    std::optional<SessionRecord> r = run_now(s.load(id));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->data, "{\"k\":true}");
    run_now(s.erase(id));
    EXPECT_FALSE(run_now(s.load(id)));
}

TEST(MemoryStore, ExpiresAfterItsTimeToLive) {
    FakeClock clock;
    MemoryStore store({.clock = clock.fn()});
    const std::string a = new_id(), b = new_id();
    store.put(a, record("{}"), 60s);
    store.put(b, record("{}"), 120s);
    clock.advance(59s);
    EXPECT_TRUE(store.find(a));
    clock.advance(1s);
    EXPECT_FALSE(store.find(a)) << "expired at exactly its ttl";
    EXPECT_TRUE(store.find(b));
    store.put(b, record("{}"), 120s);  // a save renews the ttl
    clock.advance(100s);
    EXPECT_TRUE(store.find(b));
    clock.advance(20s);
    EXPECT_EQ(store.purge_expired(), 1u);
    EXPECT_EQ(store.size(), 0u);
}

TEST(MemoryStore, BoundedByCountEvictsLeastRecentlyUsed) {
    // One shard so the bound is exact and the LRU order observable.
    MemoryStore store({.max_sessions = 100, .shards = 1});
    std::vector<std::string> ids;
    for (int i = 0; i < 100; ++i) {
        ids.push_back(new_id());
        store.put(ids.back(), record("{}"), 3600s);
    }
    EXPECT_EQ(store.size(), 100u);
    EXPECT_TRUE(store.find(ids[0]));  // now the most recently used
    for (int i = 0; i < 10; ++i) store.put(new_id(), record("{}"), 3600s);
    EXPECT_EQ(store.size(), 100u);
    EXPECT_EQ(store.evictions(), 10u);
    EXPECT_TRUE(store.find(ids[0])) << "recently read: kept";
    for (int i = 1; i <= 10; ++i) EXPECT_FALSE(store.find(ids[i])) << i;
    for (int i = 11; i < 100; ++i) EXPECT_TRUE(store.find(ids[i])) << i;
}

TEST(MemoryStore, BoundedAcrossShards) {
    MemoryStore store({.max_sessions = 1000, .shards = 16});
    for (int i = 0; i < 20000; ++i) store.put(new_id(), record(R"({"n":1})"), 3600s);
    EXPECT_LE(store.size(), 1008u);  // per-shard bound: ceil(1000 / 16) * 16
    EXPECT_GE(store.size(), 900u);   // random ids fill the shards evenly
    EXPECT_EQ(store.evictions(), 20000u - store.size());
}

TEST(MemoryStore, BoundedByBytes) {
    MemoryStore store({.max_sessions = 0, .max_bytes = 64 * 1024, .shards = 1});
    const std::string big = R"({"blob":")" + std::string(1000, 'x') + R"("})";
    for (int i = 0; i < 500; ++i) store.put(new_id(), record(big), 3600s);
    EXPECT_LE(store.bytes(), 64u * 1024);
    EXPECT_GT(store.bytes(), 50u * 1024);
    EXPECT_GT(store.evictions(), 400u);
    EXPECT_THROW(store.put(new_id(), record(std::string(70 * 1024, ' ')), 60s), std::length_error);
}

TEST(MemoryStore, ExpiredSessionsGoBeforeLiveOnes) {
    FakeClock clock;
    MemoryStore store({.max_sessions = 10, .shards = 1, .clock = clock.fn()});
    for (int i = 0; i < 10; ++i) store.put(new_id(), record("{}"), 10s);
    clock.advance(11s);
    for (int i = 0; i < 10; ++i) store.put(new_id(), record("{}"), 10s);
    EXPECT_EQ(store.size(), 10u);
    EXPECT_EQ(store.evictions(), 0u) << "dropping expired sessions is not an eviction";
}

TEST(MemoryStore, GrowingASessionEvictsOthersNotItself) {
    MemoryStore store({.max_sessions = 0, .max_bytes = 8 * 1024, .shards = 1});
    const std::string me = new_id();
    for (int i = 0; i < 20; ++i) store.put(new_id(), record("{}"), 60s);
    store.put(me, record("{}"), 60s);
    store.put(me, record(R"({"x":")" + std::string(6000, 'y') + R"("})"), 60s);
    ASSERT_TRUE(store.find(me));
    EXPECT_LE(store.bytes(), 8u * 1024);
}

// Many threads on distinct ids and on a few shared ones: no lost entries, no torn records,
// and the counters stay consistent (TSan builds check the locking itself).
TEST(MemoryStore, ManyThreads) {
    MemoryStore store({.max_sessions = 1'000'000, .shards = 32});
    constexpr int kThreads = 8, kPerThread = 2000;
    std::vector<std::string> shared;
    for (int i = 0; i < 4; ++i) {
        shared.push_back(new_id());
        store.put(shared.back(), record(R"({"w":-1})"), 3600s);
    }
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    std::vector<std::vector<std::string>> mine(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                std::string id = new_id();
                const std::string data = "{\"w\":" + std::to_string(t) + "}";
                store.put(id, record(data), 3600s);
                std::optional<SessionRecord> r = store.find(id);
                if (!r || r->data != data) ++bad;
                if (i % 2 == 0) {
                    store.remove(id);
                } else {
                    mine[static_cast<std::size_t>(t)].push_back(std::move(id));
                }
                const std::string& s = shared[static_cast<std::size_t>(i) % shared.size()];
                store.put(s, record(data), 3600s);
                std::optional<SessionRecord> sr = store.find(s);
                if (!sr || sr->data.size() < 7 || sr->data.substr(0, 5) != "{\"w\":") ++bad;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(store.size(), kThreads * kPerThread / 2 + shared.size());
    for (const auto& ids : mine)
        for (const std::string& id : ids) ASSERT_TRUE(store.find(id));
    EXPECT_EQ(store.evictions(), 0u);
}

// ---- CookieStore ------------------------------------------------------------------------

TEST(CookieStore, SealOpen) {
    CookieStore cs({crypto::random_token()});
    const std::string id = new_id();
    SessionRecord r = record(R"({"user":"alice"})", SessionTime(1'700'000'000s));
    r.accessed = SessionTime(1'700'000'050s);
    const std::string value = cs.seal(id, r, "vela.sid");
    for (char c : value)
        ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << value;
    EXPECT_EQ(value.find("alice"), std::string::npos);
    std::optional<OpenedSession> o = cs.open(value, "vela.sid");
    ASSERT_TRUE(o);
    EXPECT_EQ(o->id, id);
    EXPECT_EQ(o->record, r);
    EXPECT_NE(cs.seal(id, r, "vela.sid"), value) << "a fresh nonce each time";
}

TEST(CookieStore, TamperedValuesDoNotOpen) {
    CookieStore cs({crypto::random_token()});
    const std::string value = cs.seal(new_id(), record(R"({"admin":false})"), "sid");
    const std::string raw = *vela::base64url_decode(value);
    for (std::size_t i = 0; i < raw.size(); ++i) {
        std::string flipped = raw;
        flipped[i] = static_cast<char>(flipped[i] ^ 0x01);
        EXPECT_FALSE(cs.open(vela::base64url_encode(flipped), "sid")) << "byte " << i;
    }
    EXPECT_FALSE(cs.open(value.substr(0, value.size() - 1), "sid"));
    EXPECT_FALSE(cs.open(value + "A", "sid"));
    EXPECT_FALSE(cs.open("", "sid"));
    EXPECT_FALSE(cs.open("not base64!", "sid"));
    EXPECT_FALSE(cs.open(std::string(20000, 'A'), "sid"));
    EXPECT_FALSE(cs.open(value, "other")) << "bound to its cookie name";
    EXPECT_TRUE(cs.open(value, "sid"));
}

TEST(CookieStore, KeyRotation) {
    const std::string k1 = crypto::random_token(), k2 = crypto::random_token(),
                      k3 = crypto::random_token();
    CookieStore old_store({k1});
    CookieStore rotated({k2, k1});
    CookieStore retired({k3, k2});
    const std::string id = new_id();
    const std::string by_old = old_store.seal(id, record("{}"));
    const std::string by_new = rotated.seal(id, record("{}"));
    EXPECT_TRUE(rotated.open(by_old)) << "old secret still opens";
    EXPECT_TRUE(rotated.open(by_new));
    EXPECT_FALSE(old_store.open(by_new)) << "the newest secret seals";
    EXPECT_FALSE(retired.open(by_old)) << "a dropped secret no longer opens";
    EXPECT_TRUE(retired.open(by_new));
}

TEST(CookieStore, RefusesWeakSecrets) {
    EXPECT_THROW(CookieStore({}), std::invalid_argument);
    EXPECT_THROW(CookieStore({"short"}), std::invalid_argument);
    EXPECT_THROW(CookieStore({crypto::random_token(), std::string(31, 'k')}),
                 std::invalid_argument);
}

TEST(CookieStore, SizeGrowsWithTheSession) {
    // What max_cookie_size guards: about 4/3 of the plaintext plus 60 bytes of framing.
    CookieStore cs({crypto::random_token()});
    const std::string small = cs.seal(new_id(), record("{}"));
    const std::string data = R"({"x":")" + std::string(3000, 'a') + R"("})";
    const std::string large = cs.seal(new_id(), record(data));
    EXPECT_LT(small.size(), 140u);
    EXPECT_GT(large.size(), 4000u);
}

}  // namespace
}  // namespace vela
