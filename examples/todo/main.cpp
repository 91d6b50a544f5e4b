// A small but complete web app: accounts with sessions, a todo list as HTML forms and as a
// JSON API, file attachments, CORS for the API, security headers, a login rate limit, request
// ids and an access log. Accounts and todos live in a database (vela::db): an SQLite file
// under --data by default, PostgreSQL with --db postgres://... or MySQL/MariaDB with
// --db mysql://...; the schema comes from the numbered SQL files in --migrations (migrations/,
// or migrations-mysql/ in MariaDB's dialect for MySQL), applied at start. Attachments are
// files under --data.
// For operations it serves its OpenAPI document (/openapi.json) with Swagger UI (/docs),
// Prometheus metrics (/metrics, database pool included), liveness and readiness (/health,
// /ready: the database answers) and logs stalled handlers; a TOML file (--config, see
// examples/todo/todo.toml) and VELA_* variables set the server and the [todo] table.
//   todo [--config FILE] [--port N] [--threads N] [--data DIR] [--db URL] [--migrations DIR]
//        [--cors-origin ORIGIN] [--access-log FILE]
//
// Try it:
//   curl -c jar -d 'user=ann&password=correct-horse' localhost:8080/register
//   curl -b jar -d 'title=Buy milk' localhost:8080/todos
//   curl -b jar localhost:8080/api/todos
//   curl -b jar -F 'file=@notes.txt' localhost:8080/todos/1/attachment
//   curl localhost:8080/ready; curl localhost:8080/metrics; open http://localhost:8080/docs
// Exit codes: 0 after a graceful shutdown, 1 when the server cannot start (reason logged in
// one line), 2 for a bad command line.

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <vela/db/db.hpp>
#include <vela/pg_metrics.hpp>
#include <vela/reactor/blocking.hpp>
#include <vela/vela.hpp>

#include "cli.hpp"

// The migrations folder of the source tree (set by examples/CMakeLists.txt), so the binary
// finds it wherever it runs from.
#ifndef TODO_MIGRATIONS_DIR
#define TODO_MIGRATIONS_DIR "examples/todo/migrations"
#endif
// Its MariaDB version beside it, the default for MySQL: the portable files have TEXT keys,
// which MariaDB cannot index without a length.
#ifndef TODO_MYSQL_MIGRATIONS_DIR
#define TODO_MYSQL_MIGRATIONS_DIR TODO_MIGRATIONS_DIR "-mysql"
#endif

namespace {

constexpr std::string_view kUsage =
    "usage: todo [options]\n"
    "  --config FILE         a TOML file: vela's server, limits, timeouts, log sections and\n"
    "                        the [todo] table with the options below (examples/todo/todo.toml);\n"
    "                        VELA_* variables override it, the options below override both\n"
    "  --port N              HTTP port, 0 to 65535 (default 8080 unless the file lists\n"
    "                        listeners in server.listen; with them it adds one)\n"
    "  --threads N           event loops, 0 to 1024 (default 0: one per core)\n"
    "  --data DIR            attachments and the SQLite file todo.db (default ./todo-data;\n"
    "                        created)\n"
    "  --db URL              the database instead: sqlite:///abs/file.db, sqlite://rel.db,\n"
    "                        postgres://user:password@host:port/db,\n"
    "                        mysql://user:password@host:port/db (default: sqlite in --data)\n"
    "  --migrations DIR      the schema's SQL files (default: " TODO_MIGRATIONS_DIR
    ",\n"
    "                        for MySQL " TODO_MYSQL_MIGRATIONS_DIR
    ")\n"
    "  --cors-origin ORIGIN  an origin allowed to call /api with credentials\n"
    "                        (default http://localhost:5173)\n"
    "  --access-log FILE     access log file, rotated by size (default: standard output)\n"
    "  -h, --help            print this text and exit\n";

// The [todo] table of the configuration (VELA_TODO_DATA ... override it), then the command line.
struct Settings {
    std::string data = "todo-data";
    std::string db;          // empty: sqlite in `data`
    std::string migrations;  // empty: the backend's folder (TODO_MIGRATIONS_DIR or its -mysql)
    std::string cors_origin = "http://localhost:5173";
    std::string access_log;
    std::string title = "todo";  // the OpenAPI document's title
};
VELA_REFLECT(Settings, data, db, migrations, cors_origin, access_log, title)

struct Options {
    std::string config;  // empty: no file (the VELA_* variables alone)
    std::optional<std::uint16_t> port;
    std::optional<unsigned> threads;
    std::optional<std::string> data, db, migrations, cors_origin, access_log;
};

Options parse_args(int argc, char** argv) {
    example::CommandLine cl("todo", kUsage);
    Options o;
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--config")
            o.config = std::string(value());
        else if (arg == "--port")
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        else if (arg == "--threads")
            o.threads = cl.number(arg, value(), 1024);
        else if (arg == "--data")
            o.data = std::string(value());
        else if (arg == "--db")
            o.db = std::string(value());
        else if (arg == "--migrations")
            o.migrations = std::string(value());
        else if (arg == "--cors-origin")
            o.cors_origin = std::string(value());
        else if (arg == "--access-log")
            o.access_log = std::string(value());
        else
            return false;
        return true;
    });
    return o;
}

// ---- the data -------------------------------------------------------------------------------

struct Todo {
    std::int64_t id = 0;
    std::string title;
    bool done = false;
    std::optional<std::string> attachment;  // the uploaded file's name
};
VELA_REFLECT(Todo, id, title, done, attachment)

struct NewTodo {
    std::string title;
};
VELA_REFLECT(NewTodo, VELA_REQUIRED(title))

struct TodoPatch {
    std::optional<std::string> title;
    std::optional<bool> done;
};
VELA_REFLECT(TodoPatch, title, done)

struct Credentials {
    std::string user;
    std::string password;
};
VELA_REFLECT(Credentials, VELA_REQUIRED(user), VELA_REQUIRED(password))

// A row of the accounts table: a PHC string from vela::crypto::password_hash.
struct Account {
    std::string hash;
};
VELA_REFLECT(Account, VELA_REQUIRED(hash))

std::string to_hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

// Coroutines here take their arguments by reference to named objects of the caller and keep
// temporaries out of co_await expressions: GCC 12 miscompiles some non-trivial temporaries
// that live across a co_await (a closure holding strings passed to run_blocking is freed
// wrongly).

// A password hash (scrypt, tens of milliseconds of CPU) on the blocking pool, off the loop.
vela::Task<std::string> hash_off_loop(const std::string& password) {
    auto work = [password] { return vela::crypto::password_hash(password); };
    co_return co_await vela::run_blocking(std::move(work));
}

// password_verify on the blocking pool.
vela::Task<bool> verify_off_loop(const std::string& password, const std::string& hash) {
    auto work = [password, hash] { return vela::crypto::password_verify(password, hash); };
    co_return co_await vela::run_blocking(std::move(work));
}

// The data, in a vela::db::Database shared by every loop (SQLite file, PostgreSQL or MySQL).
// Attachments are files named after their todo: <files>/<hex(user)>-<id>.
class Store {
  public:
    Store(vela::db::Database& db, std::string files)
        : db_(db), files_(std::move(files)), mysql_(db.backend_name() == "mysql") {}

    // Creates the account; false when the name is taken.
    vela::Task<bool> add_user(const Credentials& c) {
        const std::string hash = co_await hash_off_loop(c.password);
        try {
            co_await db_.execute("INSERT INTO accounts (name, hash) VALUES ($1, $2)", c.user, hash);
        } catch (const vela::db::UniqueViolation&) {
            co_return false;
        }
        co_return true;
    }
    // True when the user exists and the password is theirs. A hash made with a lower cost
    // than today's is replaced, now that the password is known.
    vela::Task<bool> check(const Credentials& c) {
        const std::optional<Account> a =
            co_await db_.query_one<Account>("SELECT hash FROM accounts WHERE name = $1", c.user);
        // An unknown name costs the same verification, so timing does not tell which exist.
        const std::string& hash = a ? a->hash : unknown_user_hash_;
        const bool ok = co_await verify_off_loop(c.password, hash);
        if (!ok || !a) co_return false;
        if (vela::crypto::needs_rehash(a->hash)) {
            const std::string fresh = co_await hash_off_loop(c.password);
            co_await db_.execute("UPDATE accounts SET hash = $2 WHERE name = $1", c.user, fresh);
        }
        co_return true;
    }
    vela::Task<std::vector<Todo>> list(const std::string& user) {
        return db_.query_as<Todo>(
            "SELECT id, title, done, attachment FROM todos WHERE account = $1 ORDER BY id", user);
    }
    // The new todo; nullopt when the account is gone.
    vela::Task<std::optional<Todo>> add(const std::string& user, const std::string& title) {
        // The account's counter and the insert commit together: ids are never reused.
        auto body = [&](vela::db::Transaction& tx) -> vela::Task<std::optional<Todo>> {
            const std::optional<std::int64_t> id = co_await take_id(tx, user);
            if (!id) co_return std::nullopt;
            if (!mysql_)
                co_return co_await tx.query_one<Todo>(
                    "INSERT INTO todos (account, id, title) VALUES ($1, $2, $3) "
                    "RETURNING id, title, done, attachment",
                    user, *id, title);
            // MySQL has no RETURNING (MariaDB only on INSERT and DELETE): insert, then read.
            co_await tx.execute("INSERT INTO todos (account, id, title) VALUES ($1, $2, $3)", user,
                                *id, title);
            co_return co_await tx.query_one<Todo>(
                "SELECT id, title, done, attachment FROM todos WHERE account = $1 AND id = $2",
                user, *id);
        };
        co_return co_await db_.transaction(body);
    }
    // False when there is no such todo.
    vela::Task<bool> toggle(const std::string& user, std::int64_t id) {
        const std::uint64_t n = co_await db_.execute(
            "UPDATE todos SET done = NOT done WHERE account = $1 AND id = $2", user, id);
        co_return n > 0;
    }
    // The changed todo; nullopt when there is none.
    vela::Task<std::optional<Todo>> update(const std::string& user, std::int64_t id,
                                           const TodoPatch& p) {
        if (!mysql_)
            co_return co_await db_.query_one<Todo>(
                "UPDATE todos SET title = COALESCE($3, title), done = COALESCE($4, done) "
                "WHERE account = $1 AND id = $2 RETURNING id, title, done, attachment",
                user, id, p.title, p.done);
        // MySQL: the UPDATE, then the row, in one transaction. affected() counts the rows
        // matched (CLIENT_FOUND_ROWS), so 0 means no such todo, even for an empty patch.
        auto body = [&](vela::db::Transaction& tx) -> vela::Task<std::optional<Todo>> {
            const std::uint64_t n = co_await tx.execute(
                "UPDATE todos SET title = COALESCE($3, title), done = COALESCE($4, done) "
                "WHERE account = $1 AND id = $2",
                user, id, p.title, p.done);
            if (n == 0) co_return std::nullopt;
            co_return co_await tx.query_one<Todo>(
                "SELECT id, title, done, attachment FROM todos WHERE account = $1 AND id = $2",
                user, id);
        };
        co_return co_await db_.transaction(body);
    }
    // False when there was no such todo.
    vela::Task<bool> remove(const std::string& user, std::int64_t id) {
        const std::uint64_t n =
            co_await db_.execute("DELETE FROM todos WHERE account = $1 AND id = $2", user, id);
        if (n == 0) co_return false;
        std::error_code ec;
        std::filesystem::remove(file_of(user, id), ec);  // none is fine
        co_return true;
    }
    // Keeps `f` as the attachment `name` of the todo; false when there is no such todo.
    vela::Task<bool> attach(const std::string& user, std::int64_t id, vela::UploadedFile& f,
                            const std::string& name) {
        const std::string path = file_of(user, id);
        f.move_to(path);  // replaces the previous one at once
        const std::uint64_t n = co_await db_.execute(
            "UPDATE todos SET attachment = $3 WHERE account = $1 AND id = $2", user, id, name);
        if (n > 0) co_return true;
        std::error_code ec;
        std::filesystem::remove(path, ec);
        co_return false;
    }
    // The attachment's name and file; nullopt when the todo has none.
    vela::Task<std::optional<std::pair<std::string, std::string>>> attachment(
        const std::string& user, std::int64_t id) {
        std::optional<std::optional<std::string>> name =
            co_await db_.query_one<std::optional<std::string>>(
                "SELECT attachment FROM todos WHERE account = $1 AND id = $2", user, id);
        if (!name || !*name) co_return std::nullopt;
        co_return std::pair{std::move(**name), file_of(user, id)};
    }

  private:
    // The account's next todo id, counted up in `tx`; nullopt when the account is gone.
    vela::Task<std::optional<std::int64_t>> take_id(vela::db::Transaction& tx,
                                                    const std::string& user) {
        if (!mysql_)
            co_return co_await tx.query_one<std::int64_t>(
                "UPDATE accounts SET next_todo = next_todo + 1 WHERE name = $1 "
                "RETURNING next_todo - 1",
                user);
        // MySQL: FOR UPDATE locks the account's row until the commit, so concurrent adds take
        // their ids one after another.
        const std::optional<std::int64_t> id = co_await tx.query_one<std::int64_t>(
            "SELECT next_todo FROM accounts WHERE name = $1 FOR UPDATE", user);
        if (id)
            co_await tx.execute("UPDATE accounts SET next_todo = next_todo + 1 WHERE name = $1",
                                user);
        co_return id;
    }
    std::string file_of(std::string_view user, std::int64_t id) const {
        return files_ + "/" + to_hex(user) + "-" + std::to_string(id);
    }

    vela::db::Database& db_;
    std::string files_;
    // MySQL and MariaDB have no UPDATE ... RETURNING: add() and update() take other
    // statements there (in the same transaction, so with the same outcome).
    const bool mysql_;
    // Checked against for names that do not exist: a hash of a random password.
    const std::string unknown_user_hash_ =
        vela::crypto::password_hash(vela::crypto::random_token());
};

// ---- pages ----------------------------------------------------------------------------------

std::string escape(std::string_view s) { return vela::html_escape(s); }

// The pages' stylesheet, served by the app itself at /style.css (no CDN, nothing to fetch).
constexpr std::string_view kStyle = R"css(:root { --ink: #1f2933; --muted: #697586; --line: #e3e8ef;
  --accent: #2563eb; --bg: #f5f7fa; font-family: system-ui, sans-serif; color: var(--ink); }
body { margin: 0; background: var(--bg); }
header { background: var(--ink); color: #fff; }
header div { max-width: 40rem; margin: auto; padding: .8rem 1rem; display: flex;
  align-items: center; gap: 1rem; }
header strong { font-size: 1.2rem; flex: 1; }
header span { color: #cbd2d9; }
main { max-width: 40rem; margin: 1.5rem auto; padding: 0 1rem; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 1.2rem; margin-bottom: 1rem; box-shadow: 0 1px 2px rgb(0 0 0 / 5%); }
h1, h2 { margin: 0 0 .8rem; font-size: 1.1rem; }
p.note { color: var(--muted); margin: 0 0 .8rem; }
p.error { color: #b42318; background: #fef3f2; border-radius: 6px; padding: .5rem .8rem; }
form { display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; margin: 0; }
input { flex: 1; min-width: 8rem; padding: .5rem .6rem; border: 1px solid #cdd5df;
  border-radius: 6px; font: inherit; }
input[type=file] { flex: none; width: 13rem; border: 0; padding: 0; font-size: .8rem; }
button { padding: .5rem .9rem; border: 0; border-radius: 6px; background: var(--accent);
  color: #fff; font: inherit; cursor: pointer; }
button.quiet { background: #e3e8ef; color: var(--ink); }
header button { background: transparent; border: 1px solid #52606d; }
ul.todos { list-style: none; margin: 0 0 1rem; padding: 0; }
ul.todos li { display: flex; align-items: center; gap: .6rem; flex-wrap: wrap;
  padding: .6rem 0; border-bottom: 1px solid var(--line); }
ul.todos li .title { flex: 1; }
ul.todos li.done .title { color: var(--muted); text-decoration: line-through; }
ul.todos form { flex: none; }
a { color: var(--accent); }
.empty { color: var(--muted); }
)css";

// A page: the app's header (with the signed-in user and a log-out button) over `body`.
std::string page(std::string_view title, std::string_view body, std::string_view user = {}) {
    std::string head = "<header><div><strong>Todo</strong>";
    if (!user.empty())
        head += "<span>" + escape(user) +
                "</span><form method=\"post\" action=\"/logout\"><button>log out</button></form>";
    head += "</div></header>\n";
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
           escape(title) + "</title><link rel=\"stylesheet\" href=\"/style.css\"></head><body>\n" +
           head + "<main>\n" + std::string(body) + "</main></body></html>\n";
}

std::string login_page(std::string_view message = {}) {
    std::string b;
    if (!message.empty()) b += "<p class=\"error\">" + escape(message) + "</p>\n";
    const std::pair<std::string_view, std::string_view> forms[] = {
        {"login", "Sign in"}, {"register", "New here? Create an account"}};
    for (const auto& [action, heading] : forms)
        b += "<section class=\"card\"><h2>" + std::string(heading) +
             "</h2><form method=\"post\" action=\"/" + std::string(action) +
             "\"><input name=\"user\" placeholder=\"user\" autocomplete=\"username\"> <input "
             "name=\"password\" type=\"password\" placeholder=\"password\"> <button>" +
             std::string(action) + "</button></form></section>\n";
    return page("Todo: sign in", b);
}

std::string list_page(const std::string& user, const std::vector<Todo>& todos) {
    std::string b = "<section class=\"card\"><h1>Your todos</h1>\n";
    if (todos.empty()) b += "<p class=\"empty\">Nothing to do yet: add something below.</p>\n";
    b += "<ul class=\"todos\">\n";
    for (const Todo& t : todos) {
        const std::string id = std::to_string(t.id);
        b += "<li" + std::string(t.done ? " class=\"done\"" : "") + "><span class=\"title\">" +
             escape(t.title) + "</span><form method=\"post\" action=\"/todos/" + id +
             "/toggle\"><button class=\"quiet\">" + (t.done ? "undo" : "done") + "</button></form>";
        if (t.attachment)
            b += " <a href=\"/todos/" + id + "/attachment\">" + escape(*t.attachment) + "</a>";
        b += " <form method=\"post\" action=\"/todos/" + id +
             "/attachment\" enctype=\"multipart/form-data\"><input type=\"file\" "
             "name=\"file\"><button class=\"quiet\">attach</button></form></li>\n";
    }
    b += "</ul>\n<form method=\"post\" action=\"/todos\"><input name=\"title\" "
         "placeholder=\"new todo\"> <button>add</button></form></section>\n";
    return page("Todo", b, user);
}

vela::Response see_other(std::string_view location) {
    vela::Response r(vela::Status::SeeOther);
    r.add_header("Location", location);
    return r;
}

// The signed-in user, or nullopt.
std::optional<std::string> user_of(vela::Request& req) {
    return vela::session(req).get<std::string>("user");
}

// The signed-in user of an API request; 401 otherwise.
std::string api_user(vela::Request& req) {
    std::optional<std::string> u = user_of(req);
    if (!u) throw vela::HttpError(vela::Status::Unauthorized, "sign in first");
    return *u;
}

// The configuration file (or the VELA_* variables alone) and the [todo] table with the command
// line over it. A mistake is one line naming the file, line and key.
std::optional<vela::Config> load_config(const Options& o, Settings& settings) {
    try {
        vela::Config cfg =
            o.config.empty() ? vela::Config::from_environment() : vela::Config::load(o.config);
        settings = cfg.section<Settings>("todo");
        if (o.data) settings.data = *o.data;
        if (o.db) settings.db = *o.db;
        if (o.migrations) settings.migrations = *o.migrations;
        if (o.cors_origin) settings.cors_origin = *o.cors_origin;
        if (o.access_log) settings.access_log = *o.access_log;
        return cfg;
    } catch (const vela::ConfigError& e) {
        std::fprintf(stderr, "todo: %s\n", e.what());
        return std::nullopt;
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options cl = parse_args(argc, argv);
    Settings opts;
    std::optional<vela::Config> config = load_config(cl, opts);
    if (!config) return 2;
    // Before the database starts its threads (SQLite workers, the blocking pool): they inherit
    // the mask, so SIGTERM reaches the app's graceful shutdown instead of killing a worker.
    vela::block_signals();
    std::error_code ec;
    std::filesystem::create_directories(opts.data, ec);
    if (ec) {
        std::fprintf(stderr, "todo: cannot create the data directory %s: %s\n", opts.data.c_str(),
                     ec.message().c_str());
        return 1;
    }
    const std::string files_dir = std::filesystem::absolute(opts.data).string();
    const std::string url = opts.db.empty() ? "sqlite://" + files_dir + "/todo.db" : opts.db;

    // Made before the app, so it outlives every request (locals are destroyed in reverse order).
    std::optional<vela::db::Database> db;
    try {
        db.emplace(url);
    } catch (const vela::db::Error& e) {
        std::fprintf(stderr, "todo: %s (see --help)\n", e.what());
        return 2;
    }
    // Unless given: the portable SQL files, or their MariaDB dialect for MySQL.
    if (opts.migrations.empty())
        opts.migrations = db->backend_name() == std::string_view("mysql")
                              ? TODO_MYSQL_MIGRATIONS_DIR
                              : TODO_MIGRATIONS_DIR;
    try {
        // Before the server starts, on a loop of its own.
        const std::size_t n = vela::block_on(db->migrate(opts.migrations));
        vela::log::info("todo: {} database ready ({} new migrations applied from {})",
                        db->backend_name(), n, opts.migrations);
    } catch (const std::exception& e) {
        vela::log::error("todo: cannot prepare the database: {}", e.what());
        return 1;
    }
    Store store(*db, files_dir);

    vela::App app;
    // The file's server, limits, timeouts and log settings, and its listeners (when it names
    // any); the [todo] table was read above and is claimed here so run() knows it is used.
    const bool file_listeners = !config->listeners().empty();
    vela::apply_config(app, std::move(*config));
    vela::config<Settings>(app, "todo");
    // Operations: the OpenAPI document and Swagger UI, metrics with the database pool,
    // liveness and readiness, and a log line for any handler that holds its loop over 200 ms.
    vela::openapi_spec(
        app, {.title = opts.title,
              .version = "1.0.0",
              .description = "The todo example's JSON API: sign in through /login first."});
    // Swagger UI is optional here: without its files the example serves no /docs (openapi_ui
    // would refuse to start, saying what to install).
    if (!vela::swagger_ui_dir().empty()) {
        vela::openapi_ui(app, "/docs");
    } else {
        vela::log::warn("todo: no /docs: Swagger UI's files were not found (scripts/install-npm)");
    }
    vela::MetricsOptions metrics;
    const std::string_view backend = db->backend_name();
    if (backend == "postgres" || backend == "mysql")
        metrics.pools.push_back(vela::db_pool_source("todo", *db));
    vela::metrics(app, std::move(metrics));
    vela::stall_watchdog(app, {.threshold = std::chrono::milliseconds(200)});
    vela::health(app);
    vela::ready_check(app, "database", [&db]() -> vela::Task<bool> {
        co_await db->query("SELECT 1");
        co_return true;
    });
    // API errors as problem+json, page errors as a small HTML page.
    app.error_pages(
        {.format = vela::ErrorFormat::html,
         .render = [](const vela::Request* req, vela::Response& r, std::string_view detail) {
             if (!req || !req->path().starts_with("/api/")) return;  // html
             vela::Response p = vela::problem_response(r.status(), detail);
             r.set_body(std::move(p.mutable_body()));
             r.set_content_type(vela::mime::problem_json);
         }});
    app.use(vela::request_id());
    vela::AccessLogOptions log;
    log.path = opts.access_log;
    app.use(vela::access_log(log));
    app.use(vela::security_headers());
    app.use(vela::sessions());

    // Pages: HTML forms for a browser, hidden from the OpenAPI document (the JSON API under
    // /api is what it describes).
    app.get("/",
            [&store](vela::Request& req) -> vela::Task<vela::Response> {
                const std::optional<std::string> user = user_of(req);
                if (!user) co_return vela::Response::html(login_page());
                const std::vector<Todo> todos = co_await store.list(*user);
                co_return vela::Response::html(list_page(*user, todos));
            })
        .hidden();
    app.get("/style.css",
            [] {
                vela::Response r = vela::Response::with_body(vela::Status::OK, std::string(kStyle),
                                                             "text/css; charset=utf-8");
                r.add_header("Cache-Control", "public, max-age=3600");
                return r;
            })
        .hidden();
    // Sign-in routes: five attempts per minute per client address.
    auto auth = app.group("/");
    auth.use(vela::rate_limit({.rate = 5, .period = std::chrono::minutes(1)}));
    auth.post(
            "/register",
            [&store](vela::Request& req, vela::Form<Credentials> c) -> vela::Task<vela::Response> {
                if (c->user.empty() || c->user.size() > 64 || c->password.size() < 8)
                    co_return vela::Response::html(
                        login_page("pick a user name (up to 64 bytes) and 8+ characters"),
                        vela::Status::BadRequest);
                const bool added = co_await store.add_user(*c);
                if (!added)
                    co_return vela::Response::html(login_page("that name is taken"),
                                                   vela::Status::Conflict);
                vela::Session& s = vela::session(req);
                s.regenerate();
                s.set("user", c->user);
                co_return see_other("/");
            })
        .hidden();
    auth.post(
            "/login",
            [&store](vela::Request& req, vela::Form<Credentials> c) -> vela::Task<vela::Response> {
                const bool ok = co_await store.check(*c);
                if (!ok)
                    co_return vela::Response::html(login_page("wrong user or password"),
                                                   vela::Status::Unauthorized);
                vela::Session& s = vela::session(req);
                s.regenerate();  // a new id on privilege change: no session fixation
                s.set("user", c->user);
                co_return see_other("/");
            })
        .hidden();
    app.post("/logout",
             [](vela::Request& req) {
                 vela::session(req).destroy();
                 return see_other("/");
             })
        .hidden();
    app.post("/todos",
             [&store](vela::Request& req, vela::Form<NewTodo> t) -> vela::Task<vela::Response> {
                 const std::optional<std::string> user = user_of(req);
                 if (!user) co_return see_other("/");
                 if (!t->title.empty()) co_await store.add(*user, t->title);
                 co_return see_other("/");
             })
        .hidden();
    app.post("/todos/{id:int}/toggle",
             [&store](vela::Request& req) -> vela::Task<vela::Response> {
                 const std::optional<std::string> user = user_of(req);
                 if (!user) co_return see_other("/");
                 const bool found = co_await store.toggle(*user, *req.param_int("id"));
                 if (!found) co_return vela::Status::NotFound;
                 co_return see_other("/");
             })
        .hidden();
    // Attachments: the body streams to a temporary file, then moves under --data.
    app.streaming(vela::Method::POST, "/todos/{id:int}/attachment",
                  [&store](vela::Request& req) -> vela::Task<vela::Response> {
                      const std::optional<std::string> user = user_of(req);
                      if (!user) co_return vela::Status::Unauthorized;
                      const std::int64_t id = *req.param_int("id");
                      vela::UploadOptions up;
                      up.limits.max_file_size = 10 * 1024 * 1024;
                      vela::MultipartForm form = co_await vela::read_multipart(req, up);
                      vela::UploadedFile* f = form.file("file");
                      if (!f) throw vela::HttpError(vela::Status::BadRequest, "no file field");
                      const std::string name = f->filename.empty() ? "attachment" : f->filename;
                      const bool found = co_await store.attach(*user, id, *f, name);
                      if (!found) co_return vela::Status::NotFound;
                      co_return see_other("/");
                  })
        .hidden();
    app.get("/todos/{id:int}/attachment",
            [&store](vela::Request& req) -> vela::Task<vela::Response> {
                const std::optional<std::string> user = user_of(req);
                if (!user) co_return vela::Status::Unauthorized;
                auto a = co_await store.attachment(*user, *req.param_int("id"));
                if (!a) co_return vela::Status::NotFound;
                co_return vela::Response::file(a->second, {.download_name = a->first});
            })
        .hidden();

    // The JSON API, for a front end on another origin (cookies included).
    auto api = app.group("/api");
    api.use(vela::cors({.origins = {opts.cors_origin}, .credentials = true}));
    api.get("/todos",
            [&store](vela::Request& req) -> vela::Task<std::vector<Todo>> {
                const std::string user = api_user(req);
                co_return co_await store.list(user);
            })
        .summary("List your todos")
        .tag("todos")
        .security_cookie("vela.sid")
        .response(401, "Not signed in");
    api.post("/todos",
             [&store](vela::Request& req, vela::Json<NewTodo> t) -> vela::Task<vela::Response> {
                 const std::string user = api_user(req);
                 std::optional<Todo> todo = co_await store.add(user, t->title);
                 if (!todo) throw vela::HttpError(vela::Status::Unauthorized, "sign in first");
                 co_return vela::json_response(*todo, vela::Status::Created);
             })
        .summary("Add a todo")
        .tag("todos")
        .security_cookie("vela.sid")
        .response<Todo>(201, "The new todo")
        .response(401, "Not signed in");
    api.patch("/todos/{id:int}",
              [&store](vela::Request& req, vela::Json<TodoPatch> p) -> vela::Task<Todo> {
                  const std::string user = api_user(req);
                  std::optional<Todo> t = co_await store.update(user, *req.param_int("id"), *p);
                  if (!t) throw vela::HttpError(vela::Status::NotFound, "no such todo");
                  co_return std::move(*t);
              })
        .summary("Change a todo's title or state")
        .tag("todos")
        .security_cookie("vela.sid")
        .response(401, "Not signed in");
    api.del("/todos/{id:int}",
            [&store](vela::Request& req) -> vela::Task<vela::Response> {
                const std::string user = api_user(req);
                const bool found = co_await store.remove(user, *req.param_int("id"));
                if (!found) throw vela::HttpError(vela::Status::NotFound, "no such todo");
                co_return vela::Response(vela::Status::NoContent);
            })
        .summary("Delete a todo")
        .tag("todos")
        .security_cookie("vela.sid")
        .response(204, "Deleted")
        .response(401, "Not signed in");

    if (cl.port || !file_listeners) app.listen(cl.port.value_or(8080));
    return app.run(cl.threads.value_or(0));
}
