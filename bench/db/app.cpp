// vela's side of the TechEmpower database scenarios (docs/benchmarks.md, "Databases"), run by
// bench/db/run against a local PostgreSQL and MariaDB:
//   vela_bench_db [--db postgres://...] [--mysql mysql://...] [--sqlite FILE] [--port N]
//                 [--threads N] [--host ADDR] [--pool N] [--no-pipeline]
// With --db (PostgreSQL, tables World and Fortune, filled by bench/db/run):
//   GET /db             one random World row (id 1..10000) as {"id":..,"randomNumber":..}
//   GET /queries?q=N    N random rows (N clamped to 1..500; missing or not a number is 1),
//                       issued together with vela::when_all, as a JSON array
//   GET /fortunes       every Fortune row plus one added at request time, sorted by message,
//                       rendered as the standard HTML table with the mustache engine (escaped)
//   GET /updates?q=N    N random rows read one by one (together), each given a new random
//                       number, written back in one UPDATE (PostgreSQL: unnest of two int[]
//                       parameters), the rows as written as a JSON array
// With --mysql (MySQL or MariaDB, tables world and fortune, filled by bench/db/run): the same
// four routes, same answers, under /my (/my/db, /my/queries?q=N, /my/fortunes,
// /my/updates?q=N) on a second Database with the same --pool; the UPDATE is
// `CASE id WHEN $1 THEN $2 ... END WHERE id IN ($1, ...)`, its text built once per row count.
// MySQL runs one statement at a time per connection: the N lookups of a request run on up
// to --pool connections at once.
// With --sqlite (a file holding the same World table):
//   GET /sqlite/db      the /db query on SQLite
// A bad command line prints one line on stderr and exits 2.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <vela/async/when_all.hpp>
#include <vela/db/db.hpp>
#include <vela/template/template.hpp>
#include <vela/vela.hpp>

#include "../fortunes.hpp"

namespace {

// A World row; the column randomnumber is read under its JSON name.
struct World {
    int id = 0;
    int randomNumber = 0;
};
VELA_REFLECT(World, id, randomNumber)

using bench::Fortune;
using bench::FortunesPage;

// The most rows a request reads (the q parameter's upper bound).
constexpr std::size_t kMaxQueries = 500;

// An UPDATE of several rows in one statement: its text and its parameters.
struct Batch {
    std::string_view sql;  // valid for the life of the calling thread
    std::vector<vela::db::Param> params;
};

// The statements of one database. `update` writes numbers[i] to row ids[i] (ids distinct and
// ascending, 1 to kMaxQueries of them).
struct Sql {
    std::string_view world_by_id;
    std::string_view all_fortunes;
    Batch (*update)(const std::vector<int>& ids, const std::vector<int>& numbers);
};

// "{a,b,c}": an int[] parameter in PostgreSQL's text form.
std::string int_array(const std::vector<int>& v) {
    std::string out = "{";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(v[i]);
    }
    out += '}';
    return out;
}

// PostgreSQL: one statement for any number of rows, the ids and the new numbers as two int[]
// parameters.
Batch pg_update(const std::vector<int>& ids, const std::vector<int>& numbers) {
    return {
        "UPDATE world SET randomnumber = v.r FROM unnest($1::int[], $2::int[]) AS v(id, r) "
        "WHERE world.id = v.id",
        vela::db::params(int_array(ids), int_array(numbers))};
}

// MySQL has no arrays: `UPDATE world SET randomnumber = CASE id WHEN $1 THEN $2 WHEN $3 THEN
// $4 ... END WHERE id IN ($1, $3, ...)` for n rows, built once per n and thread.
std::string_view my_update_sql(std::size_t n) {
    static thread_local std::array<std::string, kMaxQueries + 1> cache;
    std::string& sql = cache[n];
    if (sql.empty()) {
        sql = "UPDATE world SET randomnumber = CASE id";
        for (std::size_t i = 0; i < n; ++i)
            sql += " WHEN $" + std::to_string(2 * i + 1) + " THEN $" + std::to_string(2 * i + 2);
        sql += " END WHERE id IN (";
        for (std::size_t i = 0; i < n; ++i) sql += (i ? ", $" : "$") + std::to_string(2 * i + 1);
        sql += ')';
    }
    return sql;
}

// The parameters of my_update_sql: id, number, id, number ...
Batch my_update(const std::vector<int>& ids, const std::vector<int>& numbers) {
    std::vector<vela::db::Param> params;
    params.reserve(2 * ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        params.push_back(vela::db::to_param(ids[i]));
        params.push_back(vela::db::to_param(numbers[i]));
    }
    return {my_update_sql(ids.size()), std::move(params)};
}

// PostgreSQL (and SQLite, for its one SELECT): the column alias quoted to keep its case.
constexpr Sql kPgSql{"SELECT id, randomnumber AS \"randomNumber\" FROM world WHERE id = $1",
                     "SELECT id, message FROM fortune", pg_update};
// MySQL: aliases keep their case unquoted (and "..." is a string, not a name).
constexpr Sql kMySql{"SELECT id, randomnumber AS randomNumber FROM world WHERE id = $1",
                     "SELECT id, message FROM fortune", my_update};

// A random World id, 1 to 10000 (xorshift64* per thread, seeded once from random_device).
int random_id() {
    static thread_local std::uint64_t state = [] {
        std::random_device rd;
        std::uint64_t s = (std::uint64_t{rd()} << 32) ^ rd();
        return s ? s : 0x9e3779b97f4a7c15ULL;
    }();
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t x = state * 0x2545f4914f6cdd1dULL;
    return 1 + static_cast<int>(((x >> 32) * 10000) >> 32);
}

// The q parameter as the rules say: a number clamped to 1..500; missing or not a number is 1.
std::size_t query_count(const vela::Request& req) {
    const std::optional<std::string> q = req.query("q");
    if (!q) return 1;
    long long n = 0;
    auto [end, ec] = std::from_chars(q->data(), q->data() + q->size(), n);
    if (ec != std::errc{} || end != q->data() + q->size()) return 1;
    return static_cast<std::size_t>(std::clamp(n, 1LL, static_cast<long long>(kMaxQueries)));
}

vela::Task<World> find_world(vela::db::Database& db, const Sql& sql, int id) {
    std::optional<World> w = co_await db.query_one<World>(sql.world_by_id, id);
    if (!w) throw vela::db::Error("no World row with id " + std::to_string(id));
    co_return *w;
}

// `n` random rows, all issued before the first answer is awaited.
vela::Task<std::vector<World>> random_worlds(vela::db::Database& db, const Sql& sql,
                                             std::size_t n) {
    std::vector<vela::Task<World>> lookups;
    lookups.reserve(n);
    for (std::size_t i = 0; i < n; ++i) lookups.push_back(find_world(db, sql, random_id()));
    co_return co_await vela::when_all(std::move(lookups));
}

vela::Task<vela::Response> one_world(vela::db::Database& db, const Sql& sql) {
    co_return vela::json_response(co_await find_world(db, sql, random_id()));
}

vela::Task<vela::Response> queries(vela::db::Database& db, const Sql& sql, std::size_t n) {
    co_return vela::json_response(co_await random_worlds(db, sql, n));
}

vela::Task<vela::Response> updates(vela::db::Database& db, const Sql& sql, std::size_t n) {
    std::vector<World> worlds = co_await random_worlds(db, sql, n);
    for (World& w : worlds) w.randomNumber = random_id();
    // One entry per distinct id, in id order (concurrent batches then lock rows in the same
    // order); a row drawn twice is given one number so that the answer is what was written.
    std::vector<std::size_t> order(worlds.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return worlds[a].id < worlds[b].id; });
    std::vector<int> ids, numbers;
    ids.reserve(n);
    numbers.reserve(n);
    for (std::size_t i : order) {
        if (!ids.empty() && ids.back() == worlds[i].id) {
            worlds[i].randomNumber = numbers.back();
            continue;
        }
        ids.push_back(worlds[i].id);
        numbers.push_back(worlds[i].randomNumber);
    }
    const Batch batch = sql.update(ids, numbers);
    // Two batches touching the same rows can still deadlock (the server picks one victim):
    // the victim tries again.
    for (int attempt = 1;; ++attempt) {
        try {
            co_await db.run(batch.sql, batch.params);
            break;
        } catch (const vela::db::DeadlockDetected&) {
            if (attempt == 3) throw;
        }
    }
    co_return vela::json_response(worlds);
}

vela::Task<vela::Response> fortunes(vela::db::Database& db, const Sql& sql,
                                    const vela::tmpl::Template& page_template) {
    // Awaited into a variable first: GCC 12 destroys the temporary of a co_await inside a
    // brace initializer twice.
    std::vector<Fortune> rows = co_await db.query_as<Fortune>(sql.all_fortunes);
    FortunesPage page{std::move(rows)};
    page.fortunes.push_back(Fortune{0, "Additional fortune added at request time."});
    std::sort(page.fortunes.begin(), page.fortunes.end(),
              [](const Fortune& a, const Fortune& b) { return a.message < b.message; });
    co_return vela::Response::html(page_template.render(page));
}

// The four routes under `prefix` ("" or "/my"); `db`, `sql` and `page_template` outlive the
// app.
void add_routes(vela::App& app, const std::string& prefix, vela::db::Database& db, const Sql& sql,
                const vela::tmpl::Template& page_template) {
    vela::db::Database* d = &db;
    const Sql* s = &sql;
    const vela::tmpl::Template* t = &page_template;
    app.get(prefix + "/db", [d, s]() { return one_world(*d, *s); });
    app.get(prefix + "/queries",
            [d, s](vela::Request& req) { return queries(*d, *s, query_count(req)); });
    app.get(prefix + "/updates",
            [d, s](vela::Request& req) { return updates(*d, *s, query_count(req)); });
    app.get(prefix + "/fortunes", [d, s, t]() { return fortunes(*d, *s, *t); });
}

constexpr std::string_view kUsage =
    "usage: vela_bench_db [--db URL] [--mysql URL] [--sqlite FILE] [--port N] [--threads N]\n"
    "                     [--host ADDR] [--pool N] [--no-pipeline]\n"
    "  --db URL       PostgreSQL (postgres://user@host:port/db) with tables World and Fortune:\n"
    "                 serves /db, /queries?q=N, /fortunes and /updates?q=N\n"
    "  --mysql URL    MySQL or MariaDB (mysql://user:password@host:port/db) with tables world\n"
    "                 and fortune: serves /my/db, /my/queries?q=N, /my/fortunes, /my/updates?q=N\n"
    "  --sqlite FILE  SQLite file with table World: serves /sqlite/db\n"
    "  --port N       port, 0 to 65535 (default 8080)\n"
    "  --threads N    event loops, 0 to 1024 (default 0: one per core)\n"
    "  --host ADDR    numeric IPv4 address to listen on (default: all interfaces)\n"
    "  --pool N       PostgreSQL and MySQL connections per event loop (each), 1 to 1024\n"
    "                 (default 4)\n"
    "  --no-pipeline  PostgreSQL: one statement at a time per connection (to compare)\n"
    "  -h, --help     print this text and exit\n";

// A command-line mistake: one line on stderr, exit code 2.
[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "vela_bench_db: %s (see --help)\n", message.c_str());
    std::exit(2);
}

// A whole decimal number in [min, max]; a sign, spaces or trailing junk are refused.
unsigned parse_number(std::string_view option, std::string_view value, unsigned min, unsigned max) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || v < min ||
        v > max)
        usage_error("invalid value '" + std::string(value) + "' for " + std::string(option) +
                    " (expected " + std::to_string(min) + " to " + std::to_string(max) + ")");
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 8080, threads = 0, pool = 4;
    std::string host, pg_url, my_url, sqlite_file;
    bool pipeline = true;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage.data(), stdout);
            return 0;
        }
        if (arg == "--no-pipeline") {
            pipeline = false;
            continue;
        }
        if (arg != "--port" && arg != "--threads" && arg != "--host" && arg != "--db" &&
            arg != "--mysql" && arg != "--sqlite" && arg != "--pool")
            usage_error("unknown option '" + std::string(arg) + "'");
        if (i + 1 >= argc) usage_error("missing value for " + std::string(arg));
        const std::string_view value = argv[++i];
        if (arg == "--port") port = parse_number(arg, value, 0, 65535);
        if (arg == "--threads") threads = parse_number(arg, value, 0, 1024);
        if (arg == "--pool") pool = parse_number(arg, value, 1, 1024);
        if (arg == "--host" || arg == "--db" || arg == "--mysql" || arg == "--sqlite") {
            if (value.empty()) usage_error("empty value for " + std::string(arg));
            std::string& target = arg == "--host"    ? host
                                  : arg == "--db"    ? pg_url
                                  : arg == "--mysql" ? my_url
                                                     : sqlite_file;
            target = std::string(value);
        }
    }
    if (pg_url.empty() && my_url.empty() && sqlite_file.empty())
        usage_error("give at least one of --db URL, --mysql URL and --sqlite FILE");
    if (!pg_url.starts_with("postgres://") && !pg_url.starts_with("postgresql://") &&
        !pg_url.empty())
        usage_error("--db takes a postgres:// URL");
    if (!my_url.starts_with("mysql://") && !my_url.starts_with("mariadb://") && !my_url.empty())
        usage_error("--mysql takes a mysql:// URL");
    vela::log::set_level(vela::log::Level::warn);

    // Made before the app, so they outlive its loops.
    vela::db::Options options;
    options.pool_size = pool;
    options.pipeline = pipeline;
    std::unique_ptr<vela::db::Database> pg, my, sqlite;
    try {
        if (!pg_url.empty()) pg = std::make_unique<vela::db::Database>(pg_url, options);
        if (!my_url.empty()) my = std::make_unique<vela::db::Database>(my_url, options);
        if (!sqlite_file.empty())
            sqlite = std::make_unique<vela::db::Database>("sqlite://" + sqlite_file, options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vela_bench_db: %s\n", e.what());
        return 1;
    }
    const vela::tmpl::Template fortunes_page =
        vela::tmpl::Template::compile(bench::kFortunes, "fortunes");

    vela::App app;
    if (pg) add_routes(app, "", *pg, kPgSql, fortunes_page);
    if (my) add_routes(app, "/my", *my, kMySql, fortunes_page);
    if (sqlite) {
        vela::db::Database* db = sqlite.get();
        app.get("/sqlite/db", [db]() { return one_world(*db, kPgSql); });
    }

    if (host.empty()) {
        app.listen(static_cast<std::uint16_t>(port));
    } else {
        app.listen(host + ":" + std::to_string(port));
    }
    return app.run(threads);
}
