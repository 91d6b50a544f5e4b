// The SQLite backend of vela::db (docs/data.md, "SQLite").
//
// Threads. SQLite calls block, so none runs on a loop. Each backend owns
// Options::sqlite_readers reader threads, each with its own connection (query_only), and ONE
// writer thread with the writer connection. A statement is prepared on a reader; if
// sqlite3_stmt_readonly() says it writes, it is handed to the writer's queue (and its text is
// remembered, so the next time it goes there directly). The awaiting coroutine is resumed on
// its own loop by a post (vela/reactor/blocking.hpp); if it was destroyed meanwhile, nothing
// is resumed.
//
// The writer queue. Every write and every transaction runs on the writer thread, one after
// the other, so writers from many loops never meet SQLITE_BUSY in this process. A
// transaction (BEGIN IMMEDIATE) holds the writer from begin() to commit()/rollback(): while it
// is open the writer runs only that transaction's statements, and other writes wait; one
// waiting longer than Options::sqlite_busy_timeout fails with TimeoutError, as a write
// blocked by another process would. Reads keep running on the readers (WAL).
//
// In-memory databases (sqlite::memory:) are one shared-cache database private to the backend;
// shared cache locks tables rather than using WAL, so a statement meeting SQLITE_LOCKED is
// retried until the busy timeout.
#include <fmt/format.h>
#include <sqlite3.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "db/sqlite_result.hpp"
#include "vela/db/db.hpp"
#include "vela/db/sqlite.hpp"
#include "vela/reactor/blocking.hpp"

namespace vela::db {

namespace {

using Clock = std::chrono::steady_clock;
using vela::detail::BlockingAwaiter;
using vela::detail::BlockingState;
using vela::detail::complete_with;

// ---------------------------------------------------------------------------------------
// Errors

// Throws the db.hpp error class for SQLite's extended result `code`.
[[noreturn]] void throw_sqlite(int code, const std::string& msg, bool preparing) {
    switch (code) {
        case SQLITE_CONSTRAINT_UNIQUE:
        case SQLITE_CONSTRAINT_PRIMARYKEY:
            throw_error(msg, "23505");
        case SQLITE_CONSTRAINT_FOREIGNKEY:
            throw_error(msg, "23503");
        case SQLITE_CONSTRAINT_NOTNULL:
            throw_error(msg, "23502");
        case SQLITE_CONSTRAINT_CHECK:
            throw_error(msg, "23514");
        default:
            break;
    }
    switch (code & 0xff) {
        case SQLITE_CONSTRAINT:
            throw_error(msg, "23000");
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            throw TimeoutError(msg + " (the database stayed locked past the busy timeout)",
                               "55P03");
        case SQLITE_INTERRUPT:
            throw TimeoutError(msg, "57014");
        case SQLITE_CANTOPEN:
        case SQLITE_NOTADB:
            throw ConnectionError(msg, "08001");
        case SQLITE_TOOBIG:
            throw_error(msg, "54000");
        case SQLITE_RANGE:
        case SQLITE_MISMATCH:
            throw_error(msg, "42804");
        case SQLITE_READONLY:
            throw_error(msg, "25006");
        case SQLITE_FULL:
            throw_error(msg, "53100");
        case SQLITE_IOERR:
            throw_error(msg, "58030");
        case SQLITE_ERROR: {
            std::string_view m = msg;
            if (m.starts_with("no such table")) throw_error(msg, "42P01");
            if (m.starts_with("no such column")) throw_error(msg, "42703");
            if (m.starts_with("no such function")) throw_error(msg, "42883");
            if (m.find("already exists") != m.npos) throw_error(msg, "42P07");
            if (m.find("syntax error") != m.npos || m.starts_with("incomplete input"))
                throw_error(msg, "42601");
            if (preparing) throw_error(msg, "42000");
            throw Error(msg);
        }
        default:
            throw Error(msg);
    }
}

[[noreturn]] void throw_last(sqlite3* db, bool preparing) {
    throw_sqlite(sqlite3_extended_errcode(db), sqlite3_errmsg(db), preparing);
}

// True when `sql` starts with a transaction control keyword (BEGIN, COMMIT ...): those go
// through begin()/commit()/rollback(), never a pooled connection.
bool is_transaction_control(std::string_view sql) {
    std::size_t i = 0;
    while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
    std::string word;
    for (; i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])); ++i)
        word += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
    return word == "BEGIN" || word == "COMMIT" || word == "END" || word == "ROLLBACK" ||
           word == "SAVEPOINT" || word == "RELEASE";
}

// ---------------------------------------------------------------------------------------
// Connections

// Prepared statements of one connection by SQL text, least recently used dropped.
class Statements {
  public:
    explicit Statements(std::size_t capacity) : capacity_(capacity ? capacity : 1) {}
    Statements(const Statements&) = delete;
    Statements& operator=(const Statements&) = delete;
    ~Statements() { clear(); }

    // The statement for `sql`, prepared on first use (throws the mapped error).
    sqlite3_stmt* get(sqlite3* db, std::string_view sql) {
        if (auto it = map_.find(sql); it != map_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            return it->second->second;
        }
        sqlite3_stmt* st = nullptr;
        const char* tail = nullptr;
        int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &st, &tail);
        if (rc != SQLITE_OK) throw_last(db, true);
        if (!st) throw StatementError("the statement is empty", "42601");
        for (const char* p = tail; p < sql.data() + sql.size(); ++p)
            if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';') {
                sqlite3_finalize(st);
                throw StatementError(
                    "run() takes one statement but the SQL holds more; use run_script() for a "
                    "script",
                    "42601");
            }
        lru_.emplace_front(std::string(sql), st);
        map_.emplace(lru_.front().first, lru_.begin());
        if (lru_.size() > capacity_) {
            map_.erase(lru_.back().first);
            sqlite3_finalize(lru_.back().second);
            lru_.pop_back();
        }
        return st;
    }
    void clear() noexcept {
        for (auto& e : lru_) sqlite3_finalize(e.second);
        lru_.clear();
        map_.clear();
    }

  private:
    using List = std::list<std::pair<std::string, sqlite3_stmt*>>;
    std::size_t capacity_;
    List lru_;
    std::unordered_map<std::string_view, List::iterator> map_;  // keys view lru_ strings
};

// One connection, used by one thread at a time.
struct Conn {
    sqlite3* db = nullptr;
    Statements statements;
    Clock::time_point deadline{};  // the query timeout of the statement running
    bool timed = false;

    explicit Conn(std::size_t cache) : statements(cache) {}
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;
    ~Conn() {
        statements.clear();
        sqlite3_close_v2(db);
    }
    // Arms the query timeout for one statement (0: none).
    void arm(std::chrono::milliseconds timeout) {
        timed = timeout.count() > 0;
        if (timed) deadline = Clock::now() + timeout;
    }
};

// Interrupts a statement past its query timeout (SQLite calls it every 1000 VM steps).
int progress(void* p) {
    auto* c = static_cast<Conn*>(p);
    return c->timed && Clock::now() > c->deadline ? 1 : 0;
}

struct Target {
    std::string filename;  // what sqlite3_open_v2 gets
    std::string shown;     // for messages
    bool memory = false;
};

// The file (or in-memory name) of a sqlite: URL.
Target parse_url(std::string_view url) {
    Target t;
    if (url == "sqlite::memory:") {
        static std::atomic<unsigned> counter{0};
        t.filename = fmt::format("file:vela-memory-{}-{}?mode=memory&cache=shared", ::getpid(),
                                 counter.fetch_add(1));
        t.shown = "sqlite::memory:";
        t.memory = true;
        return t;
    }
    if (!url.starts_with("sqlite://") || url.size() == 9 || url.find('?') != url.npos)
        throw Error(
            fmt::format("malformed SQLite URL '{}': use sqlite:///absolute/path.db, "
                        "sqlite://relative/path.db or sqlite::memory:",
                        url));
    t.filename = std::string(url.substr(9));  // "sqlite:///a" gives "/a"
    t.shown = t.filename;
    return t;
}

[[noreturn]] void throw_open(const Target& t, const std::string& why) {
    throw ConnectionError(
        fmt::format("cannot open the SQLite database '{}': {} (check that the directory exists "
                    "and is writable by this process and that the file is a SQLite database, or "
                    "use another sqlite:// URL)",
                    t.shown, why),
        "08001");
}

std::unique_ptr<Conn> open_conn(const Target& t, const Options& o, bool writer) {
    auto c = std::make_unique<Conn>(o.statement_cache);
    const int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(t.filename.c_str(), &c->db, flags, nullptr);
    if (rc != SQLITE_OK) throw_open(t, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, static_cast<int>(o.sqlite_busy_timeout.count()));
    sqlite3_progress_handler(c->db, 1000, progress, c.get());
    std::string pragmas = "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;";
    if (writer && !t.memory) pragmas += "PRAGMA journal_mode=WAL;";
    if (!writer) pragmas += "PRAGMA query_only=1;";
    // Switching a new file to WAL takes a lock SQLite does not wait for (its busy handler is
    // skipped there to avoid deadlocks): another Database or process opening the same file at
    // that moment gets SQLITE_BUSY. The pragmas are idempotent: try again within the busy
    // timeout.
    const auto deadline = std::chrono::steady_clock::now() + o.sqlite_busy_timeout;
    for (;;) {
        char* err = nullptr;
        const int rc = sqlite3_exec(c->db, pragmas.c_str(), nullptr, nullptr, &err);
        if (rc == SQLITE_OK) break;
        std::string why = err ? err : sqlite3_errmsg(c->db);
        sqlite3_free(err);
        if ((rc & 0xff) == SQLITE_BUSY && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            continue;
        }
        throw_open(t, why);
    }
    return c;
}

// ---------------------------------------------------------------------------------------
// Workers

// Work for a thread of the backend. `c` is its connection, or nullptr when the job waited
// past the busy timeout for the writer (it must then fail).
struct Job {
    virtual ~Job() = default;
    virtual void run(Conn* c) = 0;
};
using JobPtr = std::unique_ptr<Job>;

template <class F>
struct FnJob final : Job {
    F f;
    explicit FnJob(F fn) : f(std::move(fn)) {}
    void run(Conn* c) override { f(c); }
};
template <class F>
JobPtr make_job(F f) {
    return std::make_unique<FnJob<F>>(std::move(f));
}

// The writer thread's queue: a general lane (writes, BEGIN, scripts), served when no
// transaction is open, and a transaction lane, served first. Jobs of a transaction that has
// ended find active() changed and fail (or do nothing, for a rollback).
class Writer {
  public:
    void start(Conn* conn, std::chrono::milliseconds wait_limit) {
        conn_ = conn;
        wait_limit_ = wait_limit;
        thread_ = std::thread([this] { loop(); });
    }
    void stop() {
        {
            std::lock_guard lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    // Queues `job` on the general lane (tx == 0) or the lane of transaction `tx`.
    void push(std::uint64_t tx, JobPtr job) {
        {
            std::lock_guard lk(mu_);
            if (tx)
                tx_.push_back(std::move(job));
            else
                general_.push_back({Clock::now(), std::move(job)});
        }
        cv_.notify_one();
    }
    // The open transaction (0: none). Writer thread only.
    std::uint64_t active() const noexcept { return active_; }
    // Opens (id) or ends (0) the writer's transaction. Writer thread only.
    void set_active(std::uint64_t id) {
        std::lock_guard lk(mu_);
        active_ = id;
    }

  private:
    struct Queued {
        Clock::time_point since;
        JobPtr job;
    };
    void loop() {
        for (;;) {
            JobPtr job;
            bool expired = false;
            {
                std::unique_lock lk(mu_);
                for (;;) {
                    if (!tx_.empty()) {
                        job = std::move(tx_.front());
                        tx_.pop_front();
                        break;
                    }
                    if (!general_.empty()) {
                        if (active_ == 0) {
                            job = std::move(general_.front().job);
                            general_.pop_front();
                            break;
                        }
                        const auto due = general_.front().since + wait_limit_;
                        if (Clock::now() >= due) {
                            job = std::move(general_.front().job);
                            general_.pop_front();
                            expired = true;
                            break;
                        }
                        cv_.wait_until(lk, due);
                        continue;
                    }
                    if (stop_) return;
                    cv_.wait(lk);
                }
            }
            job->run(expired ? nullptr : conn_);
        }
    }

    Conn* conn_ = nullptr;
    std::chrono::milliseconds wait_limit_{};
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Queued> general_;
    std::deque<JobPtr> tx_;
    std::uint64_t active_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

// ---------------------------------------------------------------------------------------
// The backend

class SqliteBackend;

// A transaction: its statements go to the writer's transaction lane.
class SqliteTransaction final : public Transaction {
  public:
    SqliteTransaction(SqliteBackend& be, std::uint64_t id) : be_(be), id_(id) {}
    ~SqliteTransaction() override;
    Task<Result> run(std::string_view sql, std::vector<Param> params) override;
    Task<void> run_script(std::string_view sql) override;
    Task<void> commit() override;
    Task<void> rollback() override;

  private:
    void check_open() const {
        if (ended_) throw Error("the transaction has already been committed or rolled back");
    }
    SqliteBackend& be_;
    std::uint64_t id_;
    bool ended_ = false;
};

class SqliteBackend final : public Backend {
    // Awaits `work(conn)` on the writer thread, in transaction `tx` (or 0).
    template <class T, class F>
    auto on_writer(std::uint64_t tx, F work) {
        auto submit = [this, tx,
                       work = std::move(work)](std::shared_ptr<BlockingState<T>> s) mutable {
            writer_.push(
                tx, make_job([this, s = std::move(s), work = std::move(work)](Conn* c) mutable {
                    complete_with(std::move(s), [&]() -> T {
                        if (!c) throw_writer_timeout();
                        return work(*c);
                    });
                }));
        };
        return BlockingAwaiter<T, decltype(submit)>(std::move(submit));
    }

  public:
    // The URL is checked here, a relative path made absolute (the working directory of now);
    // the file is opened by the first statement (open()).
    SqliteBackend(std::string_view url, const Options& o) : options_(o), target_(parse_url(url)) {
        std::error_code ec;
        if (!target_.memory)
            if (auto abs = std::filesystem::absolute(target_.filename, ec); !ec)
                target_.filename = abs.string();
    }
    ~SqliteBackend() override {
        readers_.close();  // readers drain their queue (and may still hand jobs to the writer)
        for (auto& t : reader_threads_) t.join();
        writer_.stop();
    }

    std::string_view name() const noexcept override { return "sqlite"; }

    Task<Result> run(std::string_view sql, std::vector<Param> params) override {
        open();
        if (is_transaction_control(sql))
            throw StatementError(
                "transaction statements (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) cannot run on the "
                "database's shared connections: use Database::begin() or transaction()",
                "25000");
        co_return co_await statement(sql, std::move(params), 0);
    }
    Task<void> run_script(std::string_view sql) override {
        open();
        co_await script(sql, 0);
    }
    Task<std::unique_ptr<Transaction>> begin() override {
        open();
        const std::uint64_t id = next_tx_.fetch_add(1) + 1;
        auto work = [this, id](Conn& c) {
            execute(c, c.statements.get(c.db, "BEGIN IMMEDIATE"), {});
            writer_.set_active(id);
            // Made here, so that if the awaiting coroutine is gone its destruction (with the
            // state) queues the rollback that frees the writer.
            return std::unique_ptr<Transaction>(new SqliteTransaction(*this, id));
        };
        // Named, not a temporary of the co_await: GCC 12 destroys such temporaries twice.
        auto done = on_writer<std::unique_ptr<Transaction>>(0, std::move(work));
        co_return co_await done;
    }

    // Runs a statement: on a reader unless it writes or belongs to transaction `tx`.
    Task<Result> statement(std::string_view sql, std::vector<Param> params, std::uint64_t tx) {
        auto submit = [&](std::shared_ptr<BlockingState<Result>> s) {
            std::string text(sql);
            if (tx || reader_conns_.empty() || known_write(text))
                writer_.push(
                    tx, writer_statement(std::move(s), std::move(text), std::move(params), tx));
            else
                readers_.push(reader_statement(std::move(s), std::move(text), std::move(params)));
        };
        BlockingAwaiter<Result, decltype(submit)> done(std::move(submit));
        co_return co_await done;
    }
    // Runs a script on the writer (in transaction `tx`, or 0).
    Task<void> script(std::string_view sql, std::uint64_t tx) {
        auto work = [this, text = std::string(sql), tx](Conn& c) {
            check_tx(tx);
            c.arm(options_.query_timeout);
            char* err = nullptr;
            const int rc = sqlite3_exec(c.db, text.c_str(), nullptr, nullptr, &err);
            c.timed = false;
            if (rc != SQLITE_OK) {
                std::string msg = err ? err : sqlite3_errmsg(c.db);
                sqlite3_free(err);
                throw_sqlite(sqlite3_extended_errcode(c.db), msg, true);
            }
        };
        auto done = on_writer<void>(tx, std::move(work));
        co_await done;
    }
    // Commits or rolls back transaction `tx`.
    Task<void> end(std::uint64_t tx, bool commit) {
        auto done = on_writer<void>(tx, [this, tx, commit](Conn& c) { finish_tx(c, tx, commit); });
        co_await done;
    }
    // Rolls back transaction `tx` without waiting (a Transaction dropped while open).
    void abandon(std::uint64_t tx) {
        writer_.push(
            tx, make_job([this, tx](Conn* c) {
                try {
                    finish_tx(*c, tx, false);
                } catch (...) {  // nobody to tell; the rollback failing leaves nothing open
                }
            }));
    }

  private:
    // Creates the file's directory, opens the connections and starts their threads, once, at
    // the first statement: a Database whose first task fails before any (Database::migrate
    // with a missing folder) leaves nothing on disk. Throws Error when the file cannot be
    // opened; the next statement tries again.
    void open() {
        if (opened_.load(std::memory_order_acquire)) return;
        std::lock_guard lock(open_mu_);
        if (opened_.load(std::memory_order_relaxed)) return;
        const Target& t = target_;
        if (!t.memory) {
            const std::filesystem::path parent = std::filesystem::path(t.filename).parent_path();
            std::error_code ec;
            if (!parent.empty()) std::filesystem::create_directories(parent, ec);
            if (ec)
                throw_open(t, fmt::format("cannot create the directory '{}': {}", parent.string(),
                                          ec.message()));
        }
        std::unique_ptr<Conn> writer = open_conn(t, options_, true);
        std::vector<std::unique_ptr<Conn>> readers;
        for (std::size_t i = 0; i < options_.sqlite_readers; ++i)
            readers.push_back(open_conn(t, options_, false));
        writer_conn_ = std::move(writer);
        reader_conns_ = std::move(readers);
        writer_.start(writer_conn_.get(), options_.sqlite_busy_timeout);
        for (auto& c : reader_conns_)
            reader_threads_.emplace_back([this, conn = c.get()] {
                while (auto job = readers_.pop()) (*job)->run(conn);
            });
        opened_.store(true, std::memory_order_release);
    }

    JobPtr writer_statement(std::shared_ptr<BlockingState<Result>> s, std::string sql,
                            std::vector<Param> params, std::uint64_t tx) {
        return make_job([this, s = std::move(s), sql = std::move(sql), params = std::move(params),
                         tx](Conn* c) mutable {
            complete_with(std::move(s), [&] {
                if (!c) throw_writer_timeout();
                check_tx(tx);
                return execute(*c, c->statements.get(c->db, sql), params);
            });
        });
    }
    JobPtr reader_statement(std::shared_ptr<BlockingState<Result>> s, std::string sql,
                            std::vector<Param> params) {
        return make_job([this, s = std::move(s), sql = std::move(sql),
                         params = std::move(params)](Conn* c) mutable {
            sqlite3_stmt* st = nullptr;
            try {
                st = c->statements.get(c->db, sql);
            } catch (...) {
                s->error = std::current_exception();
                BlockingState<Result>::complete(std::move(s));
                return;
            }
            if (!sqlite3_stmt_readonly(st)) {  // a write: the writer runs it
                remember_write(sql);
                writer_.push(0,
                             writer_statement(std::move(s), std::move(sql), std::move(params), 0));
                return;
            }
            complete_with(std::move(s), [&] { return execute(*c, st, params); });
        });
    }

    void check_tx(std::uint64_t tx) const {
        if (tx && writer_.active() != tx)
            throw Error("the transaction has already been committed or rolled back");
    }
    void finish_tx(Conn& c, std::uint64_t tx, bool commit) {
        if (writer_.active() != tx) {
            if (commit) check_tx(tx);
            return;  // a rollback of an ended transaction: nothing to do
        }
        if (!commit) {
            if (!sqlite3_get_autocommit(c.db)) execute(c, c.statements.get(c.db, "ROLLBACK"), {});
            writer_.set_active(0);
            return;
        }
        try {
            execute(c, c.statements.get(c.db, "COMMIT"), {});
        } catch (...) {
            // A failed COMMIT may leave the transaction open: rollback() ends it then.
            if (sqlite3_get_autocommit(c.db)) writer_.set_active(0);
            throw;
        }
        writer_.set_active(0);
    }
    [[noreturn]] void throw_writer_timeout() const {
        throw TimeoutError(
            fmt::format("the SQLite writer stayed busy for {} ms (an open transaction holds it; "
                        "keep transactions short, and do not write through the Database inside "
                        "a transaction of the same database)",
                        options_.sqlite_busy_timeout.count()),
            "55P03");
    }

    bool known_write(const std::string& sql) {
        std::lock_guard lk(writes_mu_);
        return writes_.contains(sql);
    }
    void remember_write(const std::string& sql) {
        std::lock_guard lk(writes_mu_);
        if (writes_.size() < 4096) writes_.insert(sql);
    }

    // Binds `params` to `st` by number: $N (or ?N) takes params[N-1], a bare ? the next one.
    static void bind(sqlite3_stmt* st, const std::vector<Param>& params) {
        const int n = sqlite3_bind_parameter_count(st);
        std::size_t highest = 0;
        for (int i = 1; i <= n; ++i) {
            const char* name = sqlite3_bind_parameter_name(st, i);
            std::size_t k = static_cast<std::size_t>(i);
            if (name) {
                std::string_view v(name);
                k = 0;
                bool ok = (v[0] == '$' || v[0] == '?') && v.size() > 1 && v.size() < 8;
                for (std::size_t j = 1; ok && j < v.size(); ++j) {
                    ok = v[j] >= '0' && v[j] <= '9';
                    k = k * 10 + static_cast<std::size_t>(v[j] - '0');
                }
                if (!ok)
                    throw StatementError(
                        fmt::format("parameter '{}': write parameters as $1, $2 ... (or ?)", v),
                        "42P02");
            }
            if (k == 0 || k > params.size())
                throw StatementError(
                    fmt::format("the statement uses parameter ${} but {} were given", k,
                                params.size()),
                    "42P02");
            highest = std::max(highest, k);
            bind_one(st, i, params[k - 1]);
        }
        if (highest != params.size())
            throw StatementError(fmt::format("{} parameters were given but the statement uses {}",
                                             params.size(), highest),
                                 "42P02");
    }
    static void bind_one(sqlite3_stmt* st, int i, const Param& p) {
        int rc = SQLITE_OK;
        switch (p.kind) {
            case Param::Kind::null:
                rc = sqlite3_bind_null(st, i);
                break;
            case Param::Kind::boolean:
                rc = sqlite3_bind_int(st, i, p.boolean ? 1 : 0);
                break;
            case Param::Kind::integer:
                rc = sqlite3_bind_int64(st, i, p.integer);
                break;
            case Param::Kind::real:
                rc = sqlite3_bind_double(st, i, p.real);
                break;
            case Param::Kind::text:
            case Param::Kind::json:
                rc = sqlite3_bind_text64(st, i, p.text.data(), p.text.size(), SQLITE_STATIC,
                                         SQLITE_UTF8);
                break;
            case Param::Kind::bytes:
                rc = p.text.empty()
                         ? sqlite3_bind_zeroblob(st, i, 0)
                         : sqlite3_bind_blob64(st, i, p.text.data(), p.text.size(), SQLITE_STATIC);
                break;
            case Param::Kind::time: {
                const std::string s =
                    sqlite::format_time(TimePoint(std::chrono::microseconds(p.integer)));
                rc = sqlite3_bind_text64(st, i, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
                break;
            }
        }
        if (rc != SQLITE_OK) throw_last(sqlite3_db_handle(st), true);
    }

    // Runs the prepared `st` with `params` on `c` and copies its rows out.
    Result execute(Conn& c, sqlite3_stmt* st, const std::vector<Param>& params) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        bind(st, params);
        auto res = std::make_shared<SqliteResult>();
        res->set_columns(st);
        const sqlite3_int64 before = sqlite3_total_changes64(c.db);
        const auto locked_until = Clock::now() + options_.sqlite_busy_timeout;
        c.arm(options_.query_timeout);
        for (;;) {
            const int rc = sqlite3_step(st);
            if (rc == SQLITE_ROW) {
                res->add_row(st);
                continue;
            }
            if (rc == SQLITE_DONE) break;
            const int code = sqlite3_extended_errcode(c.db);
            if ((code & 0xff) == SQLITE_LOCKED && Clock::now() < locked_until) {
                // Shared cache (in-memory databases): another connection holds the table.
                sqlite3_reset(st);
                res->clear_rows();
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                continue;
            }
            const std::string msg = sqlite3_errmsg(c.db);
            c.timed = false;
            sqlite3_reset(st);
            if ((code & 0xff) == SQLITE_INTERRUPT)
                throw TimeoutError(
                    fmt::format("the statement ran longer than the query timeout of {} ms",
                                options_.query_timeout.count()),
                    "57014");
            throw_sqlite(code, msg, false);
        }
        c.timed = false;
        if (sqlite3_total_changes64(c.db) != before)
            res->set_affected(static_cast<std::uint64_t>(sqlite3_changes64(c.db)));
        sqlite3_reset(st);  // ends the statement's read transaction now
        return Result(std::move(res));
    }

    Options options_;
    Target target_;
    std::mutex open_mu_;
    std::atomic<bool> opened_{false};
    std::unique_ptr<Conn> writer_conn_;
    std::vector<std::unique_ptr<Conn>> reader_conns_;
    Writer writer_;
    WorkQueue<JobPtr> readers_;
    std::vector<std::thread> reader_threads_;
    std::atomic<std::uint64_t> next_tx_{0};
    std::mutex writes_mu_;
    std::unordered_set<std::string> writes_;  // SQL texts known to write
};

SqliteTransaction::~SqliteTransaction() {
    if (!ended_) be_.abandon(id_);
}

Task<Result> SqliteTransaction::run(std::string_view sql, std::vector<Param> params) {
    check_open();
    co_return co_await be_.statement(sql, std::move(params), id_);
}

Task<void> SqliteTransaction::run_script(std::string_view sql) {
    check_open();
    co_await be_.script(sql, id_);
}

Task<void> SqliteTransaction::commit() {
    check_open();
    co_await be_.end(id_, true);
    ended_ = true;
}

Task<void> SqliteTransaction::rollback() {
    if (ended_) co_return;
    co_await be_.end(id_, false);
    ended_ = true;
}

}  // namespace

std::unique_ptr<Backend> make_sqlite(std::string_view url, const Options& options) {
    return std::make_unique<SqliteBackend>(url, options);
}

}  // namespace vela::db
