// vela's HttpArena entry: every HTTP/1.1, HTTP/2, WebSocket and gateway profile vela can serve,
// written with vela's public API the way an application would be (arena/README.md).
//
//   vela_arena [--role all|server|edge] [--data DIR] [--certs DIR] [--threads N]
//              [--port N] [--upstream URL]
//
// --role all (the default, the isolated profiles' container):
//   8080  HTTP/1.1 (and WebSocket): /baseline11, /pipeline, /json, /json/{count}, /upload,
//         /static/*, /async-db, /crud/items[/{id}], /ws
//   8081  HTTPS, ALPN http/1.1 only (json-tls)
//   8443  HTTPS, ALPN h2 and http/1.1: /baseline2, /static/* ... (baseline-h2, static-h2)
//   8082  h2c with prior knowledge only: HTTP/1.1 is refused (baseline-h2c, json-h2c)
// --role server (behind an edge: gateway-h2, production-stack): plain HTTP/1.1 and h2c on
//   --port (default 8090), the dynamic routes plus /public/* and /api/* (which trust the
//   X-User-Id field the edge sets).
// --role edge (gateway-h2, production-stack): HTTPS with h2 on 8443, /static/* from disk,
//   everything else proxied to --upstream (default http://127.0.0.1:8090) over h2c. With
//   JWT_SECRET set, /api/* needs a bearer token signed with it (HS256), and its subject goes
//   upstream as X-User-Id.
//
// Environment: DATABASE_URL and DATABASE_MAX_CONN (the PostgreSQL pool, all loops together),
// REDIS_URL (--role server: the second cache tier of /api/*), JWT_SECRET (--role edge).
// Exit codes: 0 after a graceful stop, 1 when a port cannot be opened or a file is missing
// (one line says which), 2 for a bad command line.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <vela/db/db.hpp>
#include <vela/proxy/reverse_proxy.hpp>
#include <vela/redis/client.hpp>
#include <vela/vela.hpp>

#include "cache.hpp"
#include "cli.hpp"

namespace arena {

// One item of dataset.json.
struct Rating {
    std::int64_t score = 0;
    std::int64_t count = 0;
};
VELA_REFLECT(Rating, score, count)

struct Item {
    std::int64_t id = 0;
    std::string name;
    std::string category;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
    bool active = false;
    std::vector<std::string> tags;
    Rating rating;
};
VELA_REFLECT(Item, id, name, category, price, quantity, active, tags, rating)

// An item of /json's answer: the dataset's fields (not copied) and the computed total.
struct PricedItem {
    std::int64_t id = 0;
    std::string_view name;
    std::string_view category;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
    bool active = false;
    std::vector<std::string_view> tags;
    Rating rating;
    std::int64_t total = 0;
};
VELA_REFLECT(PricedItem, id, name, category, price, quantity, active, tags, rating, total)

struct PricedList {
    std::vector<PricedItem> items;
    std::size_t count = 0;
};
VELA_REFLECT(PricedList, items, count)

// A row of the items table, as selected.
struct ItemRow {
    std::int64_t id = 0;
    std::string name;
    std::string category;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
    bool active = false;
    vela::db::Json<std::vector<std::string>> tags;
    std::int64_t rating_score = 0;
    std::int64_t rating_count = 0;
};
VELA_REFLECT(ItemRow, id, name, category, price, quantity, active, tags, rating_score, rating_count)

// A row as the database profiles answer it: the rating columns as one object.
Item stored(ItemRow&& r) {
    return Item{r.id,
                std::move(r.name),
                std::move(r.category),
                r.price,
                r.quantity,
                r.active,
                std::move(r.tags.value),
                Rating{r.rating_score, r.rating_count}};
}

struct ItemList {
    std::vector<Item> items;
    std::size_t count = 0;
};
VELA_REFLECT(ItemList, items, count)

struct Page {
    std::vector<Item> items;
    std::size_t total = 0;
    std::int64_t page = 1;
    std::int64_t limit = 10;
};
VELA_REFLECT(Page, items, total, page, limit)

// POST /crud/items.
struct NewItem {
    std::int64_t id = 0;
    std::string name;
    std::string category;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
};
VELA_REFLECT(NewItem, VELA_REQUIRED(id), VELA_REQUIRED(name), VELA_REQUIRED(category),
             VELA_REQUIRED(price), VELA_REQUIRED(quantity))

// PUT /crud/items/{id}, POST /api/items/{id}.
struct ItemUpdate {
    std::string name;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
};
VELA_REFLECT(ItemUpdate, VELA_REQUIRED(name), VELA_REQUIRED(price), VELA_REQUIRED(quantity))

struct UpdatedItem {
    std::int64_t id = 0;
    std::string name;
    std::int64_t price = 0;
    std::int64_t quantity = 0;
};
VELA_REFLECT(UpdatedItem, id, name, price, quantity)

struct User {
    std::int64_t id = 0;
    std::string name;
    std::string email;
    std::string plan;
};
VELA_REFLECT(User, id, name, email, plan)

// The statements (an item's columns, as ItemRow reads them).
#define ARENA_ITEM_COLUMNS                                                                       \
    "SELECT id, name, category, price, quantity, active, tags, rating_score, rating_count FROM " \
    "items "
constexpr std::string_view kRangeSql = ARENA_ITEM_COLUMNS "WHERE price BETWEEN $1 AND $2 LIMIT $3";
constexpr std::string_view kPageSql =
    ARENA_ITEM_COLUMNS "WHERE category = $1 ORDER BY id LIMIT $2 OFFSET $3";
constexpr std::string_view kByIdSql = ARENA_ITEM_COLUMNS "WHERE id = $1";
#undef ARENA_ITEM_COLUMNS
constexpr std::string_view kUpdateSql =
    "UPDATE items SET name = $1, price = $2, quantity = $3 WHERE id = $4";

// A whole decimal number (an optional '-', digits, nothing else).
std::optional<std::int64_t> whole_number(std::string_view v) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size()) return std::nullopt;
    return n;
}

// An integer query parameter (the first of its name), or `fallback` when it is absent or not
// a whole number. A number needs no percent-decoding: the raw query string is read in place.
std::int64_t int_query(const vela::Request& req, std::string_view name, std::int64_t fallback) {
    std::string_view q = req.query_string();
    while (!q.empty()) {
        const std::size_t amp = q.find('&');
        const std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
        if (pair.size() > name.size() && pair.starts_with(name) && pair[name.size()] == '=')
            return whole_number(pair.substr(name.size() + 1)).value_or(fallback);
    }
    return fallback;
}

// A path parameter that must be a whole number: nullopt otherwise.
std::optional<std::int64_t> int_param(const vela::Request& req, std::string_view name) {
    return whole_number(req.param(name));
}

// The sum answer of /baseline11, /baseline2 and /public/baseline.
// A sum past 64 bits is refused (400), not wrapped.
vela::Response sum_answer(std::initializer_list<std::int64_t> terms) {
    std::int64_t sum = 0;
    for (std::int64_t t : terms)
        if (__builtin_add_overflow(sum, t, &sum))
            return vela::Response::text("the sum does not fit 64 bits\n", vela::Status::BadRequest);
    return vela::Response::text(std::to_string(sum));
}

struct Options {
    std::string role = "all";
    std::string data = "/data";
    std::string certs = "/certs";
    unsigned threads = 0;
    std::uint16_t port = 8090;
    std::string upstream = "http://127.0.0.1:8090";
};

// What every role shares: the dataset, the database, the caches.
class Service {
  public:
    explicit Service(const Options& o) {
        const std::string file = o.data + "/dataset.json";
        std::ifstream in(file, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in && !in.eof()) throw std::runtime_error("cannot read " + file + ": give --data DIR");
        if (text.empty()) throw std::runtime_error("cannot read " + file + ": give --data DIR");
        dataset_ = vela::json::parse<std::vector<Item>>(text);
        if (const char* url = std::getenv("DATABASE_URL"); url && *url) {
            vela::db::Options dbo;
            const unsigned loops = o.threads ? o.threads : std::thread::hardware_concurrency();
            const std::int64_t max_conn = std::max<std::int64_t>(1, [] {
                const char* m = std::getenv("DATABASE_MAX_CONN");
                return m ? std::atoll(m) : 256;
            }());
            // DATABASE_MAX_CONN is the server's limit; the pool is per loop. Keep a few
            // connections of it free for the server's own use.
            dbo.pool_size = static_cast<std::size_t>(
                std::max<std::int64_t>(1, (max_conn * 9 / 10) / std::max(1u, loops)));
            db_ = std::make_unique<vela::db::Database>(url, dbo);
        }
        if (const char* url = std::getenv("REDIS_URL"); url && *url && o.role == "server")
            redis_ = std::make_unique<vela::redis::Client>(url);
    }

    // GET /json/{count}?m=M: the first `count` items with total = price * quantity * m.
    vela::Response json(std::size_t count, std::int64_t m) const {
        PricedList out;
        out.count = std::min(count, dataset_.size());
        out.items.reserve(out.count);
        for (std::size_t i = 0; i < out.count; ++i) {
            const Item& it = dataset_[i];
            std::int64_t total = 0;
            if (__builtin_mul_overflow(it.price, it.quantity, &total) ||
                __builtin_mul_overflow(total, m, &total))
                return vela::Response::text("m: the totals do not fit 64 bits\n",
                                            vela::Status::BadRequest);
            PricedItem p{it.id,     it.name, it.category, it.price, it.quantity,
                         it.active, {},      it.rating,   total};
            p.tags.assign(it.tags.begin(), it.tags.end());
            out.items.push_back(std::move(p));
        }
        return vela::json_response(out);
    }

    void add_json_routes(vela::Group& g) const {
        g.get("", [this](vela::Request& req) { return json(50, int_query(req, "m", 1)); });
        g.get("/{count}", [this](vela::Request& req) -> vela::Response {
            const std::optional<std::int64_t> n = int_param(req, "count");
            if (!n || *n < 0)
                return vela::Response::text("count: a whole number\n", vela::Status::BadRequest);
            return json(static_cast<std::size_t>(*n), int_query(req, "m", 1));
        });
    }

    // GET /async-db?min=&max=&limit=: a range scan; {"items":[],"count":0} when the database
    // cannot answer (the profile's rule: never an error status).
    vela::Task<vela::Response> async_db(vela::Request& req) const {
        ItemList out;
        if (db_) {
            const std::int64_t min = int_query(req, "min", 10), max = int_query(req, "max", 50);
            const std::int64_t limit = std::clamp<std::int64_t>(int_query(req, "limit", 50), 1, 50);
            try {
                std::vector<ItemRow> rows =
                    co_await db_->query_as<ItemRow>(kRangeSql, min, max, limit);
                out.items.reserve(rows.size());
                for (ItemRow& r : rows) out.items.push_back(stored(std::move(r)));
            } catch (const vela::db::Error& e) {
                vela::log::warn("async-db: {}", e.what());
                out.items.clear();
            }
        }
        out.count = out.items.size();
        co_return vela::json_response(out);
    }

    vela::db::Database& db(vela::Request&) const {
        if (!db_)
            throw vela::HttpError(vela::Status::ServiceUnavailable, "DATABASE_URL is not set");
        return *db_;
    }

    // The CRUD profile's routes (/crud/items...): an in-process cache of 200 ms on reads.
    void add_crud_routes(vela::App& app) {
        app.get("/crud/items", [this](vela::Request& req) -> vela::Task<vela::Response> {
            vela::db::Database& d = db(req);
            Page p;
            const std::optional<std::string> category = req.query("category");
            // (past a billion pages the list is empty anyway; the offset stays in 64 bits)
            p.page = std::clamp<std::int64_t>(int_query(req, "page", 1), 1, 1'000'000'000);
            p.limit = std::clamp<std::int64_t>(int_query(req, "limit", 10), 1, 50);
            std::vector<ItemRow> rows = co_await d.query_as<ItemRow>(
                kPageSql, category.value_or("electronics"), p.limit, (p.page - 1) * p.limit);
            for (ItemRow& r : rows) p.items.push_back(stored(std::move(r)));
            p.total = p.items.size();
            co_return vela::json_response(p);
        });
        app.get("/crud/items/{id}", [this](vela::Request& req) -> vela::Task<vela::Response> {
            const std::optional<std::int64_t> id = int_param(req, "id");
            if (!id) co_return vela::Status::NotFound;
            if (std::optional<std::string> hit = crud_cache_.get(*id))
                co_return cached(std::move(*hit), "HIT");
            // (a write while the row is read makes the read's value too old to keep)
            const std::uint64_t generation = crud_cache_.generation(*id);
            std::optional<ItemRow> row = co_await db(req).query_one<ItemRow>(kByIdSql, *id);
            if (!row) co_return vela::Status::NotFound;
            std::string body = vela::json::write(stored(std::move(*row)));
            crud_cache_.put_if_unchanged(*id, body, generation);
            co_return cached(std::move(body), "MISS");
        });
        app.post(
            "/crud/items",
            [this](vela::Request& req, vela::Json<NewItem> item) -> vela::Task<vela::Response> {
                co_await db(req).execute(
                    "INSERT INTO items (id, name, category, price, quantity, active, tags, "
                    "rating_score, rating_count) VALUES ($1, $2, $3, $4, $5, true, '[]', 0, 0) "
                    "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, category = "
                    "EXCLUDED.category, price = EXCLUDED.price, quantity = EXCLUDED.quantity",
                    item->id, item->name, item->category, item->price, item->quantity);
                crud_cache_.erase(item->id);
                co_return vela::json_response(*item, vela::Status::Created);
            });
        app.put("/crud/items/{id}",
                [this](vela::Request& req, vela::Json<ItemUpdate> u) -> vela::Task<vela::Response> {
                    const std::optional<std::int64_t> id = int_param(req, "id");
                    if (!id) co_return vela::Status::NotFound;
                    const std::uint64_t n =
                        co_await db(req).execute(kUpdateSql, u->name, u->price, u->quantity, *id);
                    crud_cache_.erase(*id);
                    if (n == 0) co_return vela::Status::NotFound;
                    co_return vela::json_response(
                        UpdatedItem{*id, std::move(u->name), u->price, u->quantity});
                });
    }

    // The production stack's server routes: /public/* and /api/* (behind the edge, which
    // verified the token and says who the user is in X-User-Id). Reads are cache-aside: this
    // process (L1), then Redis (L2, when REDIS_URL is set), then PostgreSQL.
    void add_stack_routes(vela::App& app) {
        app.get("/public/baseline", [](vela::Request& req) {
            return sum_answer({int_query(req, "a", 0), int_query(req, "b", 0)});
        });
        auto pub = app.group("/public/json");
        add_json_routes(pub);
        app.get("/api/items/{id}", [this](vela::Request& req) -> vela::Task<vela::Response> {
            const std::optional<std::int64_t> id = int_param(req, "id");
            if (!id) co_return vela::Status::NotFound;
            Cached body = co_await tiered_get(
                item_cache_, "item:", *id, std::chrono::seconds(1),
                [&]() -> vela::Task<std::optional<std::string>> {
                    std::optional<ItemRow> row = co_await db(req).query_one<ItemRow>(kByIdSql, *id);
                    if (!row) co_return std::nullopt;
                    co_return vela::json::write(stored(std::move(*row)));
                });
            if (!body.body) co_return vela::Status::NotFound;
            co_return cached(std::move(*body.body), body.hit ? "HIT" : "MISS");
        });
        app.post(
            "/api/items/{id}",
            [this](vela::Request& req, vela::Json<ItemUpdate> u) -> vela::Task<vela::Response> {
                const std::optional<std::int64_t> id = int_param(req, "id");
                if (!id) co_return vela::Status::NotFound;
                const std::uint64_t n =
                    co_await db(req).execute(kUpdateSql, u->name, u->price, u->quantity, *id);
                co_await invalidate(item_cache_, "item:", *id);
                if (n == 0) co_return vela::Status::NotFound;
                co_return vela::Status::NoContent;
            });
        app.get("/api/me", [this](vela::Request& req) -> vela::Task<vela::Response> {
            const std::optional<std::int64_t> id = whole_number(req.header("x-user-id"));
            if (!id) co_return vela::Status::Unauthorized;
            Cached body = co_await tiered_get(
                user_cache_, "user:", *id, std::chrono::seconds(30),
                [&]() -> vela::Task<std::optional<std::string>> {
                    std::optional<User> u = co_await db(req).query_one<User>(
                        "SELECT id, name, email, plan FROM users WHERE id = $1", *id);
                    if (!u) co_return std::nullopt;
                    co_return vela::json::write(*u);
                });
            if (!body.body) co_return vela::Status::NotFound;
            co_return cached(std::move(*body.body), body.hit ? "HIT" : "MISS");
        });
    }

    const std::vector<Item>& dataset() const noexcept { return dataset_; }

  private:
    static vela::Response cached(std::string body, std::string_view state) {
        vela::Response r = vela::Response::json(std::move(body));
        r.add_header("X-Cache", state);
        return r;
    }

    // What a cache-aside read found: the body (none: no such row) and whether a cache had it.
    struct Cached {
        std::optional<std::string> body;
        bool hit = false;
    };

    // Cache-aside over two tiers: L1 in this process, L2 in Redis (when configured), then
    // `load`; what was loaded is put in both with `ttl`, unless a write invalidated the id
    // meanwhile (the value read may predate it).
    template <class Load>
    vela::Task<Cached> tiered_get(TtlCache& l1, std::string_view prefix, std::int64_t id,
                                  std::chrono::milliseconds ttl, Load load) {
        if (std::optional<std::string> hit = l1.get(id)) co_return Cached{std::move(hit), true};
        const std::uint64_t generation = l1.generation(id);
        std::string key(prefix);
        key += std::to_string(id);
        if (redis_) {
            try {
                if (std::optional<std::string> hit = co_await redis_->get(key)) {
                    l1.put_if_unchanged(id, *hit, ttl, generation);
                    co_return Cached{std::move(hit), true};
                }
            } catch (const std::exception& e) {
                vela::log::warn("redis: {}", e.what());
            }
        }
        std::optional<std::string> loaded = co_await load();
        if (!loaded) co_return Cached{};
        if (l1.put_if_unchanged(id, *loaded, ttl, generation) && redis_) {
            try {
                co_await redis_->set(key, *loaded, vela::redis::SetOptions{.ttl = ttl});
                // A write that came while the SET was on its way: its DEL may have gone first.
                if (l1.generation(id) != generation) co_await invalidate(l1, prefix, id);
            } catch (const std::exception& e) {
                vela::log::warn("redis: {}", e.what());
            }
        }
        co_return Cached{std::move(loaded), false};
    }

    // After a write: both tiers forget `id` (L1 again once Redis did, so a read that refilled
    // it from Redis meanwhile does not keep the old value). Redis failing is logged: the write
    // is done, and the entry expires within its time to live.
    vela::Task<void> invalidate(TtlCache& l1, std::string_view prefix, std::int64_t id) {
        l1.erase(id);
        if (!redis_) co_return;
        std::string key(prefix);
        key += std::to_string(id);
        try {
            co_await redis_->del(key);
        } catch (const std::exception& e) {
            vela::log::warn("redis: {}", e.what());
        }
        l1.erase(id);
    }

    std::vector<Item> dataset_;
    std::unique_ptr<vela::db::Database> db_;
    std::unique_ptr<vela::redis::Client> redis_;
    TtlCache crud_cache_{std::chrono::milliseconds(200)};
    TtlCache item_cache_{std::chrono::seconds(1)};
    TtlCache user_cache_{std::chrono::seconds(30)};
};

constexpr std::string_view kUsage =
    "usage: vela_arena [--role all|server|edge] [--data DIR] [--certs DIR] [--threads N]\n"
    "                  [--port N] [--upstream URL]\n"
    "  --role R        all: the isolated profiles on 8080, 8081, 8082 and 8443 (default);\n"
    "                  server: the dynamic routes behind an edge, on --port;\n"
    "                  edge: TLS and h2 on 8443, /static/* from disk, the rest to --upstream\n"
    "  --data DIR      dataset.json and static/ (default /data)\n"
    "  --certs DIR     server.crt and server.key (default /certs)\n"
    "  --threads N     event loops, 0 to 1024 (default 0: one per core)\n"
    "  --port N        --role server's port (default 8090)\n"
    "  --upstream URL  --role edge's upstream (default http://127.0.0.1:8090)\n"
    "  -h, --help      print this text and exit\n";

Options parse_args(int argc, char** argv) {
    Options o;
    const example::CommandLine cl("vela_arena", kUsage);
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--role") {
            o.role = std::string(value());
            if (o.role != "all" && o.role != "server" && o.role != "edge")
                cl.error("invalid value '" + o.role + "' for --role (all, server or edge)");
        } else if (arg == "--data") {
            o.data = std::string(value());
        } else if (arg == "--certs") {
            o.certs = std::string(value());
        } else if (arg == "--threads") {
            o.threads = cl.number(arg, value(), 1024);
        } else if (arg == "--port") {
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        } else if (arg == "--upstream") {
            o.upstream = std::string(value());
        } else {
            return false;
        }
        return true;
    });
    return o;
}

vela::TlsOptions tls_options(const Options& o, bool http2) {
    vela::TlsOptions t;
    t.cert = o.certs + "/server.crt";
    t.key = o.certs + "/server.key";
    t.http2 = http2;
    return t;
}

// The static files of every profile: /data/static, with its .br and .gz siblings.
void add_static(vela::App& app, const Options& o) {
    app.static_files("/static", o.data + "/static");
}

int run_edge(const Options& o) {
    vela::App app;
    add_static(app, o);
    vela::ReverseProxyOptions up;
    up.upstreams = {o.upstream};
    up.h2c = true;  // one multiplexed connection per loop to the server
    up.max_fails = 0;
    up.remove_request_headers = {"x-user-id"};  // only a verified token says who the user is
    const char* secret = std::getenv("JWT_SECRET");
    if (secret && *secret) {
        vela::JwtOptions jwt;
        try {
            jwt.keys = {vela::JwtKey::hs256(secret)};
        } catch (const std::exception& e) {
            std::fprintf(stderr, "vela_arena: JWT_SECRET: %s\n", e.what());
            return 2;
        }
        vela::ReverseProxyOptions auth = up;
        // Who the token says the user is goes upstream; the token itself does not.
        auth.remove_request_headers = {"authorization", "x-user-id"};
        auth.edit_request_headers = [](const vela::Request& req, auto& fields) {
            const vela::json::Value& sub = vela::jwt_claims(req)["sub"];
            fields.emplace_back("x-user-id",
                                sub.is_string() ? sub.as_string() : vela::json::write(sub));
        };
        auto g = app.group("/api");
        g.use(vela::jwt_auth(std::move(jwt)));
        vela::reverse_proxy(g, "/", std::move(auth));
    } else {
        // No secret, no way to tell who calls: the authenticated API is not served.
        for (vela::Method m : {vela::Method::GET, vela::Method::HEAD, vela::Method::POST,
                               vela::Method::PUT, vela::Method::PATCH, vela::Method::DELETE})
            app.route(m, "/api/{*rest}", [] {
                return vela::problem_response(vela::Status::Unauthorized,
                                              "JWT_SECRET is not set at the edge");
            });
    }
    vela::reverse_proxy(app, "/", std::move(up));
    app.listen_tls(8443, tls_options(o, true));
    return app.run(o.threads);
}

int run(const Options& o) {
    vela::block_signals();  // before the database's and Redis's threads start
    std::unique_ptr<Service> svc;
    try {
        svc = std::make_unique<Service>(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vela_arena: %s\n", e.what());
        return 1;
    }
    vela::App app;
    app.get("/baseline11", [](vela::Request& req) {
        return sum_answer({int_query(req, "a", 0), int_query(req, "b", 0)});
    });
    app.post("/baseline11", [](vela::Request& req) -> vela::Response {
        const std::optional<std::int64_t> body = whole_number(req.body());
        if (!body)
            return vela::Response::text("the body: a whole number\n", vela::Status::BadRequest);
        return sum_answer({int_query(req, "a", 0), int_query(req, "b", 0), *body});
    });
    app.get("/baseline2", [](vela::Request& req) {
        return sum_answer({int_query(req, "a", 0), int_query(req, "b", 0)});
    });
    app.get("/pipeline", [] { return vela::Response::text("ok"); });
    // JSON, compressed when the client asks (json-comp), per response.
    auto json = app.group("/json");
    json.use(vela::compression());
    svc->add_json_routes(json);
    // The byte count of the body, read as it arrives (up to 4 GiB, in bounded memory).
    app.streaming(vela::Method::POST, "/upload",
                  [](vela::Request& req) -> vela::Task<vela::Response> {
                      std::uint64_t n = 0;
                      for (;;) {
                          vela::BodyChunk c = co_await req.body_stream().read();
                          if (c.error != vela::Status::OK) co_return c.error;
                          n += c.data.size();
                          if (c.end) break;
                      }
                      co_return vela::Response::text(std::to_string(n));
                  });
    app.get("/async-db", [&svc](vela::Request& req) { return svc->async_db(req); });
    vela::WsOptions ws;
    ws.deflate.enabled = false;
    app.ws(
        "/ws",
        [](vela::WebSocket& s) -> vela::Task<void> {
            for (;;) {
                vela::WsMessage m = co_await s.receive();
                if (m.is_close()) co_return;
                co_await s.send(m.data, m.type);
            }
        },
        ws);
    if (o.role == "server") {
        svc->add_stack_routes(app);
        app.listen("127.0.0.1:" + std::to_string(o.port));  // the edge's only: it trusts X-User-Id
    } else {
        add_static(app, o);
        svc->add_crud_routes(app);
        app.listen(8080);
        app.listen_tls(8081, tls_options(o, false));
        app.listen_tls(8443, tls_options(o, true));
        app.listen_h2c(8082);
    }
    return app.run(o.threads);
}

}  // namespace arena

int main(int argc, char** argv) {
    const arena::Options o = arena::parse_args(argc, argv);
    try {
        return o.role == "edge" ? arena::run_edge(o) : arena::run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vela_arena: %s\n", e.what());
        return 1;
    }
}
