// End-to-end: the examples/todo app as a user runs it, driven with curl: register (a session
// cookie), add todos through the form and the JSON API, attach a file (multipart, streamed),
// download it, CORS preflight, problem+json for the API, rate-limited sign-in, access log
// lines with request ids. The data is in a database: an SQLite file under --data survives a
// restart, and the same visit runs against PostgreSQL and MySQL/MariaDB (--db; MySQL with its
// own migrations folder) when the test servers are there.
// Its operations endpoints (OpenAPI, Swagger UI, health, readiness, metrics) and its
// configuration file are checked the same way.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/servers.hpp"
#include "db/sqlite_support.hpp"
#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "e2e/process.hpp"
#include "vela/crypto/password.hpp"
#include "vela/db/db.hpp"
#include "vela/reactor/block_on.hpp"

#ifdef VELA_TODO_BINARY

namespace vela::e2e {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

class TodoApp : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("vela-todo-" + std::to_string(::getpid()) + "-" + std::to_string(free_port()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    // Starts the example on a new port with --data, --access-log and `extra` options.
    void start(std::initializer_list<std::string> extra = {}) {
        std::vector<std::string> args = {
            "--threads", "2", "--data", data(), "--access-log", (dir_ / "access.log").string()};
        args.insert(args.end(), extra);
        app_.start(VELA_TODO_BINARY, std::move(args));
    }
    // Stops it with SIGTERM; it must exit with 0 (a graceful shutdown).
    void stop() { app_.stop(); }
    std::string curl(const std::string& args) {
        return shell("curl -sS --max-time 10 -b " + jar() + " -c " + jar() + " " + args + " 2>&1");
    }
    // The status code of a curl request.
    std::string code(const std::string& args) {
        return curl("-o /dev/null -w '%{http_code}' " + args);
    }
    std::string url(std::string_view path) const { return app_.url(path); }
    std::string jar() const { return (dir_ / "jar").string(); }
    std::string data() const { return (dir_ / "data").string(); }

    void whole_visit();
    void operations();
    void restart_keeps_the_data(std::initializer_list<std::string> extra);
    // The same on a database server (PostgreSQL or MySQL), given its URL.
    void whole_visit_on(const std::string& server);
    void operations_report_the_pool(const std::string& server);
    void restart_keeps_the_data_on(const std::string& server);

    std::filesystem::path dir_;
    ExampleProcess app_;
};

void TodoApp::whole_visit() {
    // Not signed in: the sign-in page, and the API says 401 as problem+json.
    const std::string home = curl(url("/"));
    EXPECT_NE(home.find("<form method=\"post\" action=\"/login\">"), std::string::npos);
    // Its own stylesheet, linked from the page and served as CSS (no CDN).
    EXPECT_NE(home.find("<link rel=\"stylesheet\" href=\"/style.css\">"), std::string::npos)
        << home;
    const std::string css = curl("-i " + url("/style.css"));
    EXPECT_NE(css.find("HTTP/1.1 200"), std::string::npos) << css;
    EXPECT_NE(css.find("Content-Type: text/css; charset=utf-8"), std::string::npos) << css;
    EXPECT_NE(css.find("header {"), std::string::npos) << css;
    const std::string anon = curl("-i " + url("/api/todos"));
    EXPECT_NE(anon.find("HTTP/1.1 401"), std::string::npos) << anon;
    EXPECT_NE(anon.find("application/problem+json"), std::string::npos);
    EXPECT_NE(anon.find("\"detail\":\"sign in first\""), std::string::npos);

    // Register: a session cookie (HttpOnly, SameSite=Lax) and a redirect home.
    const std::string reg = curl("-i -d 'user=ann&password=correct-horse' " + url("/register"));
    EXPECT_NE(reg.find("HTTP/1.1 303"), std::string::npos) << reg;
    EXPECT_NE(reg.find("Set-Cookie: vela.sid="), std::string::npos);
    EXPECT_NE(reg.find("HttpOnly"), std::string::npos);
    EXPECT_NE(reg.find("X-Request-Id: "), std::string::npos);
    EXPECT_NE(reg.find("X-Content-Type-Options: nosniff"), std::string::npos);

    // A todo through the HTML form, one through the JSON API.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' --data-urlencode 'title=Buy milk & eggs' " +
                   url("/todos")),
              "303");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "
                   "'{\"title\":\"Write docs\"}' " +
                   url("/api/todos")),
              "201");
    EXPECT_EQ(curl(url("/api/todos")),
              "[{\"id\":1,\"title\":\"Buy milk & eggs\",\"done\":false},"
              "{\"id\":2,\"title\":\"Write docs\",\"done\":false}]");
    const std::string list = curl(url("/"));
    EXPECT_NE(list.find("Buy milk &amp; eggs"), std::string::npos);  // escaped
    EXPECT_NE(list.find("<link rel=\"stylesheet\" href=\"/style.css\">"), std::string::npos);

    // A JSON body without the required title: 400 problem+json naming it.
    const std::string bad =
        curl("-i -H 'Content-Type: application/json' -d '{}' " + url("/api/todos"));
    EXPECT_NE(bad.find("HTTP/1.1 400"), std::string::npos) << bad;
    EXPECT_NE(bad.find("title"), std::string::npos);

    // PATCH, then the toggle form.
    EXPECT_EQ(curl("-X PATCH -H 'Content-Type: application/json' -d '{\"done\":true}' " +
                   url("/api/todos/2")),
              "{\"id\":2,\"title\":\"Write docs\",\"done\":true}");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d '' " + url("/todos/1/toggle")), "303");

    // An attachment: 300 KiB streamed as multipart, then downloaded under its own name.
    const std::string upload = (dir_ / "notes.bin").string();
    {
        std::ofstream out(upload, std::ios::binary);
        for (unsigned i = 0; i < 300 * 1024; ++i) out.put(static_cast<char>((i * 7919u) % 251));
    }
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -F 'file=@" + upload + ";filename=notes.bin' " +
                   url("/todos/1/attachment")),
              "303");
    const std::string got = (dir_ / "got.bin").string();
    const std::string headers = curl("-D - -o " + got + " " + url("/todos/1/attachment"));
    EXPECT_NE(headers.find("filename=\"notes.bin\""), std::string::npos) << headers;
    EXPECT_EQ(slurp(got), slurp(upload));
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + url("/todos/9/attachment")), "404");

    // CORS preflight for the API from the configured origin, with credentials.
    const std::string pre = curl(
        "-i -X OPTIONS -H 'Origin: http://localhost:5173' -H "
        "'Access-Control-Request-Method: DELETE' " +
        url("/api/todos/1"));
    EXPECT_NE(pre.find("HTTP/1.1 204"), std::string::npos) << pre;
    EXPECT_NE(pre.find("Access-Control-Allow-Origin: http://localhost:5173"), std::string::npos);
    EXPECT_NE(pre.find("Access-Control-Allow-Credentials: true"), std::string::npos);
    const std::string other = curl("-i -H 'Origin: https://evil.example' " + url("/api/todos"));
    EXPECT_EQ(other.find("Access-Control-Allow-Origin"), std::string::npos) << other;

    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -X DELETE " + url("/api/todos/1")), "204");
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -X DELETE " + url("/api/todos/1")), "404");

    // Log out: the session is gone.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d '' " + url("/logout")), "303");
    EXPECT_NE(curl("-i " + url("/api/todos")).find("HTTP/1.1 401"), std::string::npos);

    // Log in again: the todos are still there.
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' -d 'user=ann&password=correct-horse' " +
                   url("/login")),
              "303");
    EXPECT_EQ(curl(url("/api/todos")), "[{\"id\":2,\"title\":\"Write docs\",\"done\":true}]");

    // Wrong passwords hit the rate limit of the sign-in routes (5 a minute per address; two
    // were spent above).
    std::string last;
    for (int i = 0; i < 4; ++i)
        last = curl("-o /dev/null -w '%{http_code}' -d 'user=ann&password=wrong-password' " +
                    url("/login"));
    EXPECT_EQ(last, "429");

    // Every request is in the access log, with its request id.
    stop();
    const std::string log = slurp((dir_ / "access.log").string());
    EXPECT_NE(log.find("\"POST /register HTTP/1.1\" 303"), std::string::npos) << log;
    EXPECT_NE(log.find("\"GET /api/todos HTTP/1.1\" 401"), std::string::npos);
    EXPECT_NE(log.find("\"POST /login HTTP/1.1\" 429"), std::string::npos);
}

// Registers, adds todos and an attachment, restarts the example with the same options, and
// finds everything again. Sessions are kept in memory, so the user signs in again.
void TodoApp::restart_keeps_the_data(std::initializer_list<std::string> extra) {
    ASSERT_NO_FATAL_FAILURE(start(extra));
    ASSERT_EQ(code("-d 'user=bob&password=battery-staple' " + url("/register")), "303");
    for (const char* title : {"Water the plants", "Call mum", "Pay rent"})
        ASSERT_EQ(code("--data-urlencode 'title=" + std::string(title) + "' " + url("/todos")),
                  "303");
    EXPECT_EQ(code("-d '' " + url("/todos/2/toggle")), "303");
    EXPECT_EQ(code("-X DELETE " + url("/api/todos/3")), "204");
    const std::string upload = (dir_ / "plan.txt").string();
    std::ofstream(upload) << "water on Mondays\n";
    EXPECT_EQ(code("-F 'file=@" + upload + ";filename=plan.txt' " + url("/todos/1/attachment")),
              "303");
    const std::string before = curl(url("/api/todos"));
    EXPECT_EQ(
        before,
        "[{\"id\":1,\"title\":\"Water the plants\",\"done\":false,\"attachment\":\"plan.txt\"},"
        "{\"id\":2,\"title\":\"Call mum\",\"done\":true}]");

    stop();
    ASSERT_NO_FATAL_FAILURE(start(extra));
    EXPECT_EQ(code("-d 'user=bob&password=other-password' " + url("/register")), "409");
    EXPECT_EQ(code("-d 'user=bob&password=wrong-password' " + url("/login")), "401");
    ASSERT_EQ(code("-d 'user=bob&password=battery-staple' " + url("/login")), "303");
    EXPECT_EQ(curl(url("/api/todos")), before);
    EXPECT_EQ(curl(url("/todos/1/attachment")), "water on Mondays\n");
    // Ids are not reused: 3 was deleted before the restart.
    EXPECT_EQ(curl("-H 'Content-Type: application/json' -d '{\"title\":\"Buy stamps\"}' " +
                   url("/api/todos")),
              "{\"id\":4,\"title\":\"Buy stamps\",\"done\":false}");
    // Names are compared byte for byte on every backend: case and trailing spaces count (the
    // fifth sign-in request since the restart, the last one the rate limit lets through).
    for (const char* other : {"Bob", "bob%20"}) {
        EXPECT_EQ(code("-d 'user=" + std::string(other) + "&password=battery-staple' " +
                       url("/register")),
                  "303")
            << other;
        EXPECT_EQ(curl(url("/api/todos")), "[]") << other;
    }
    stop();
}

TEST_F(TodoApp, AWholeVisit) {
    ASSERT_NO_FATAL_FAILURE(start());
    whole_visit();
}

TEST_F(TodoApp, DataSurvivesARestart) {
    restart_keeps_the_data({});
    EXPECT_TRUE(std::filesystem::is_regular_file(data() + "/todo.db"));
    // The password is stored as a PHC scrypt string (salt and cost inside), nothing else.
    db::Database db("sqlite://" + data() + "/todo.db");
    const std::optional<std::string> hash =
        block_on(db.query_one<std::string>("SELECT hash FROM accounts WHERE name = 'bob'"));
    ASSERT_TRUE(hash);
    EXPECT_TRUE(hash->starts_with("$scrypt$ln=15,r=8,p=1$")) << *hash;
    EXPECT_TRUE(crypto::password_verify("battery-staple", *hash));
}

TEST_F(TodoApp, StartErrorsAreOneLine) {
    const std::string base = std::string(VELA_TODO_BINARY) + " --port 0 --data " + data();
    Ran bad_url = run_command(base + " --db oracle://db/todo 2>&1");
    EXPECT_EQ(bad_url.status, 2) << bad_url.out;
    EXPECT_NE(bad_url.out.find("database URL 'oracle'"), std::string::npos) << bad_url.out;
    Ran bad_port = run_command(base + " --db mysql://db:0/todo 2>&1");
    EXPECT_EQ(bad_port.status, 2) << bad_port.out;
    EXPECT_NE(bad_port.out.find("MySQL URL: the port '0'"), std::string::npos) << bad_port.out;
    Ran no_schema = run_command(base + " --migrations " + (dir_ / "none").string() + " 2>&1");
    EXPECT_EQ(no_schema.status, 1) << no_schema.out;
    EXPECT_NE(no_schema.out.find("migrations folder"), std::string::npos) << no_schema.out;
}

// Operations: the example runs from its configuration file and serves its OpenAPI document
// (valid OpenAPI 3.1, the API routes with their summaries), Swagger UI, liveness, readiness
// against its database, and Prometheus metrics counting the requests by route template.
void TodoApp::operations() {
    EXPECT_EQ(curl(url("/health")), "{\"status\":\"alive\"}");
    const std::string ready = curl(url("/ready"));
    EXPECT_NE(ready.find("\"status\":\"ready\""), std::string::npos) << ready;
    EXPECT_NE(ready.find("\"database\":{\"ok\":true"), std::string::npos) << ready;

    const std::string doc = curl(url("/openapi.json"));
    EXPECT_NE(doc.find("\"openapi\":\"3.1.0\""), std::string::npos) << doc;
    EXPECT_NE(doc.find("\"/api/todos/{id}\""), std::string::npos) << doc;
    EXPECT_NE(doc.find("\"summary\":\"List your todos\""), std::string::npos) << doc;
    EXPECT_NE(doc.find("\"Todo\""), std::string::npos) << doc;  // a named component
    EXPECT_NE(doc.find("\"/api/todos\""), std::string::npos) << doc;
    // The HTML pages and their form routes are not the JSON API: left out.
    for (const char* page :
         {"\"/\"", "\"/style.css\"", "\"/login\"", "\"/register\"", "\"/logout\"", "\"/todos\"",
          "\"/todos/{id}/toggle\"", "\"/todos/{id}/attachment\""})
        EXPECT_EQ(doc.find(page), std::string::npos) << page << " in " << doc;
    const std::string file = (dir_ / "openapi.json").string();
    std::ofstream(file) << doc;
    Ran valid =
        run_command(std::string(VELA_SOURCE_DIR) + "/scripts/validate-openapi " + file + " 2>&1");
    EXPECT_EQ(valid.status, 0) << valid.out;

    const std::string page = curl(url("/docs"));
    EXPECT_NE(page.find("swagger-ui"), std::string::npos) << page;
    EXPECT_EQ(code(url("/docs/assets/swagger-ui-bundle.js")), "200");

    EXPECT_EQ(code(url("/api/todos")), "401");
    EXPECT_EQ(code(url("/api/todos")), "401");
    const std::string metrics = curl(url("/metrics"));
    EXPECT_NE(metrics.find(
                  "vela_http_requests_total{route=\"/api/todos\",method=\"GET\",status=\"401\"} 2"),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("vela_http_request_duration_seconds_bucket{route=\"/ready\""),
              std::string::npos)
        << metrics;
}

TEST_F(TodoApp, OperationsFromItsConfigurationFile) {
    ASSERT_NO_FATAL_FAILURE(
        start({"--config", std::string(VELA_SOURCE_DIR) + "/examples/todo/todo.toml"}));
    operations();
}

TEST_F(TodoApp, ConfigurationMistakesAreOneLine) {
    const std::string base = std::string(VELA_TODO_BINARY) + " --port 0 --data " + data();
    const std::string bad = (dir_ / "bad.toml").string();
    std::ofstream(bad) << "[server]\nthreads = \"two\"\n";
    Ran wrong_type = run_command(base + " --config " + bad + " 2>&1");
    EXPECT_EQ(wrong_type.status, 2) << wrong_type.out;
    EXPECT_EQ(wrong_type.out,
              "todo: " + bad + ":2: server.threads: expected an integer, got a string\n");
    const std::string typo = (dir_ / "typo.toml").string();
    std::ofstream(typo) << "[todo]\ncors_orgin = \"http://a.example\"\n";
    Ran unknown = run_command(base + " --config " + typo + " 2>&1");
    EXPECT_EQ(unknown.status, 2) << unknown.out;
    EXPECT_NE(unknown.out.find("cors_orgin"), std::string::npos) << unknown.out;
    Ran env = run_command("VELA_SERVER_THREADS=lots " + base + " 2>&1");
    EXPECT_EQ(env.status, 2) << env.out;
    EXPECT_NE(env.out.find("VELA_SERVER_THREADS"), std::string::npos) << env.out;
    Ran missing = run_command(base + " --config " + (dir_ / "none.toml").string() + " 2>&1");
    EXPECT_EQ(missing.status, 2) << missing.out;
    EXPECT_NE(missing.out.find("none.toml"), std::string::npos) << missing.out;
}

// The todo tables of one test on a database server, so runs and other tests on the same
// server do not meet. PostgreSQL: a schema of its own, dropped at the end. MySQL: the test user
// has one database, so the todo tables and their rows in vela_migrations are removed before
// and after (the data tests never run at the same time).
class ServerTables {
  public:
    explicit ServerTables(std::string url)
        : url_(std::move(url)),
          mysql_(url_.starts_with("mysql://") || url_.starts_with("mariadb://")),
          name_("todo_e2e_" + std::to_string(::getpid()) + "_" + std::to_string(free_port())) {
        if (mysql_)
            clean_mysql();
        else
            run("CREATE SCHEMA " + name_);
    }
    ~ServerTables() {
        try {
            if (mysql_)
                clean_mysql();
            else
                run("DROP SCHEMA " + name_ + " CASCADE");
        } catch (const std::exception& e) {
            ADD_FAILURE() << "cleaning up " << (mysql_ ? "the todo tables" : "schema " + name_)
                          << ": " << e.what();
        }
    }
    ServerTables(const ServerTables&) = delete;
    ServerTables& operator=(const ServerTables&) = delete;
    // The URL for the example: on PostgreSQL with this schema first on the search path.
    std::string url() const {
        if (mysql_) return url_;
        return url_ + (url_.find('?') == std::string::npos ? "?" : "&") +
               "options=-c%20search_path%3D" + name_;
    }

  private:
    void run(const std::string& sql) {
        db::Database db(url_);
        test::on_loop([&]() -> Task<void> { co_await db.run_script(sql); });
    }
    // The tables of examples/todo/migrations-mysql and their versions (1 to 3).
    void clean_mysql() {
        db::Database db(url_);
        test::on_loop([&]() -> Task<void> {
            co_await db.run_script("DROP TABLE IF EXISTS todos; DROP TABLE IF EXISTS accounts");
            const std::optional<std::int64_t> recorded = co_await db.query_one<std::int64_t>(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() "
                "AND table_name = 'vela_migrations'");
            if (recorded && *recorded > 0)
                co_await db.execute("DELETE FROM vela_migrations WHERE version IN (1, 2, 3)");
        });
    }
    std::string url_;
    bool mysql_;
    std::string name_;
};

void TodoApp::whole_visit_on(const std::string& server) {
    ServerTables tables(server);
    ASSERT_NO_FATAL_FAILURE(start({"--db", tables.url()}));
    whole_visit();
    stop();
}

void TodoApp::operations_report_the_pool(const std::string& server) {
    ServerTables tables(server);
    ASSERT_NO_FATAL_FAILURE(start({"--db", tables.url()}));
    operations();
    // The pool's figures arrive with each loop's next lag tick.
    std::string metrics;
    for (int i = 0; i < 40 && metrics.find("vela_db_pool") == std::string::npos; ++i) {
        std::this_thread::sleep_for(Ms{100});
        metrics = curl(url("/metrics"));
    }
    EXPECT_NE(metrics.find("pool=\"todo\""), std::string::npos) << metrics;
    stop();  // before the tables go
}

void TodoApp::restart_keeps_the_data_on(const std::string& server) {
    ServerTables tables(server);
    restart_keeps_the_data({"--db", tables.url()});
    EXPECT_FALSE(std::filesystem::exists(data() + "/todo.db"));  // not SQLite
}

TEST_F(TodoApp, AWholeVisitOnPostgres) {
    VELA_NEED_PG(pg);
    whole_visit_on(pg);
}

TEST_F(TodoApp, OperationsOnPostgresReportThePool) {
    VELA_NEED_PG(pg);
    operations_report_the_pool(pg);
}

TEST_F(TodoApp, DataSurvivesARestartOnPostgres) {
    VELA_NEED_PG(pg);
    restart_keeps_the_data_on(pg);
}

// MySQL/MariaDB: the example picks examples/todo/migrations-mysql by itself (no --migrations).
TEST_F(TodoApp, AWholeVisitOnMysql) {
    VELA_NEED_MYSQL(my);
    whole_visit_on(my);
}

TEST_F(TodoApp, OperationsOnMysqlReportThePool) {
    VELA_NEED_MYSQL(my);
    operations_report_the_pool(my);
}

TEST_F(TodoApp, DataSurvivesARestartOnMysql) {
    VELA_NEED_MYSQL(my);
    restart_keeps_the_data_on(my);
}

}  // namespace
}  // namespace vela::e2e

#endif  // VELA_TODO_BINARY
