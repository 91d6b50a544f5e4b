// COPY FROM STDIN and COPY TO STDOUT (postgres.hpp, "COPY").
//
// A COPY takes a connection of the calling loop's pool for itself (pg_backend.hpp, Lease),
// takes it out of pipeline mode (Connection::begin_direct) and drives libpq from the socket's
// edges: PQputCopyData queues data, and once about kFlushAt bytes are queued PQflush writes
// them, waiting for an edge of either kind while the socket is full (reading what the server
// sends meanwhile keeps it reading), so at most one chunk more than that sits in memory;
// PQgetCopyData (async) hands out rows as PQconsumeInput reads them, waiting for readable
// edges when the socket is empty. Edges are edge-triggered: before waiting for one,
// ready_now() checks the socket has not been ready all along.
//
// Errors: the server's error (a bad row, an unknown table) fails the COPY; the rest of the
// data is still sent (libpq reports the error only once the COPY is ended) and discarded by
// the server; the result is read to the end, so the connection goes back to the pool usable. A lost
// connection, or a COPY abandoned midway (coroutine destroyed, source or sink threw), closes the
// connection.
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <coroutine>
#include <exception>

#include "pg_backend.hpp"
#include "pg_connection.hpp"
#include "vela/db/postgres.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::db::pg {
namespace {

constexpr std::size_t kSinkChunk = 64 * 1024;  // copy_out hands the sink about this much
constexpr std::size_t kFlushAt = 64 * 1024;    // copy_in writes out once this much is queued
constexpr std::size_t kMaxPut = 1 << 20;       // largest piece given to PQputCopyData

// One COPY on a leased connection, its steps awaited by the copy_in/copy_out coroutine.
class CopyRun final : public DirectUser {
  public:
    CopyRun(std::shared_ptr<Connection> conn, const char* what)
        : conn_(std::move(conn)), what_(what) {
        if (!conn_->begin_direct(*this))
            throw ConnectionError(fmt::format("{}: the PostgreSQL connection is not usable", what));
    }
    CopyRun(const CopyRun&) = delete;
    CopyRun& operator=(const CopyRun&) = delete;
    ~CopyRun() {
        waiter_ = {};  // a waiting coroutine is being destroyed
        if (lost_) return;
        if (idle_) {
            conn_->end_direct();
            return;
        }
        // Midway through the COPY protocol: the connection cannot be used again.
        Loop* l = Loop::current();
        if (l == &conn_->loop()) conn_->close(fmt::format("{} abandoned midway", what_));
    }

    // Sends `sql` and waits until the server is in the COPY direction `expect`
    // (PGRES_COPY_IN or PGRES_COPY_OUT). Throws the statement's error.
    Task<void> start(const std::string& sql, ExecStatusType expect) {
        idle_ = false;
        if (!PQsendQuery(pg(), sql.c_str())) fail_connection();
        co_await flush();
        bool wrong_way = false;
        for (;;) {
            co_await until_not_busy();
            PGresult* r = PQgetResult(pg());
            if (!r) break;
            const ExecStatusType st = PQresultStatus(r);
            if (st == expect) {
                PQclear(r);
                co_return;
            }
            keep(r);
            // The other direction: end it, then fail with an error of ours.
            if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT) wrong_way = true;
            if (st == PGRES_COPY_IN) co_await end("wrong COPY direction");
            if (st == PGRES_COPY_OUT) co_await read_out(nullptr);
        }
        idle_ = true;
        if (!wrong_way) throw_kept();
        throw Error(fmt::format("{}: the statement is not a COPY {} (\"{}\")", what_,
                                expect == PGRES_COPY_IN ? "FROM STDIN" : "TO STDOUT", sql));
    }

    // Queues `data` for the server. False when the server ended the COPY already (with an
    // error, which finish() throws).
    Task<bool> put(std::string_view data) {
        while (!data.empty()) {
            const std::size_t n = std::min(data.size(), kMaxPut);
            const int r = PQputCopyData(pg(), data.data(), static_cast<int>(n));
            if (r < 0) co_return copy_ended();
            if (r == 0) {  // libpq could not grow its buffer: write out, then once more
                co_await flush();
                if (PQputCopyData(pg(), data.data(), static_cast<int>(n)) != 1)
                    co_return copy_ended();
            }
            data.remove_prefix(n);
            queued_ += n;
            if (queued_ >= kFlushAt) {
                queued_ = 0;
                co_await flush();
                // Take in what the server sent meanwhile (notices; a lost connection shows).
                // An error is only parsed by libpq once the COPY is ended: the server
                // discards the rest of the data until then.
                if (ready_now(fd(), POLLIN) && !PQconsumeInput(pg())) fail_connection();
            }
        }
        co_return true;
    }

    // Ends COPY FROM STDIN: done, or failed with `error` (the server then keeps nothing).
    Task<void> end(const char* error) {
        if (PQputCopyEnd(pg(), error) != 1) {
            copy_ended();  // a broken connection throws; otherwise finish() reads why
            co_return;
        }
        co_await flush();
    }

    // Reads COPY TO STDOUT data up to its end, handing it to `out` in chunks of about
    // kSinkChunk bytes (dropped when `out` is null).
    Task<void> read_out(const CopySink* out) {
        std::string buf;
        for (;;) {
            char* row = nullptr;
            const int n = PQgetCopyData(pg(), &row, 1);
            if (n > 0) {
                if (out) buf.append(row, static_cast<std::size_t>(n));
                PQfreemem(row);
                if (buf.size() >= kSinkChunk) {
                    co_await (*out)(buf);
                    check_lost();
                    buf.clear();
                }
            } else if (n == 0) {
                co_await input();
            } else if (n == -1) {
                break;  // the end: the statement's result follows
            } else {
                fail_connection();
            }
        }
        if (!buf.empty()) co_await (*out)(buf);
        check_lost();
    }

    // Reads the statement's results once its COPY ended; returns the rows copied and throws
    // the statement's error (`error_first` when set, e.g. a source that threw).
    Task<std::uint64_t> finish(std::exception_ptr error_first = nullptr) {
        std::uint64_t rows = 0;
        for (;;) {
            co_await until_not_busy();
            PGresult* r = PQgetResult(pg());
            if (!r) break;
            const ExecStatusType st = PQresultStatus(r);
            if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT) {
                PQclear(r);  // a second COPY in the same text: not ours to run
                conn_->close(fmt::format("{}: more than one COPY in the statement", what_));
                throw Error(fmt::format("{}: the SQL must be one COPY statement", what_));
            }
            if (st == PGRES_COMMAND_OK) {
                const char* t = PQcmdTuples(r);
                std::from_chars(t, t + std::char_traits<char>::length(t), rows);
            }
            keep(r);
        }
        idle_ = true;
        if (error_first) std::rethrow_exception(error_first);
        throw_kept();
        co_return rows;
    }

    // DirectUser
    void on_edge(bool readable) override {
        if (!waiter_ || (want_ == Want::readable && !readable)) return;
        // The coroutine may end the COPY and drop the last reference to the connection, whose
        // socket callback this is: the loop frees it once the callback has returned.
        conn_->loop().defer([keep = conn_] {});
        std::exchange(waiter_, {}).resume();
    }
    void on_lost(const std::string& why) override {
        lost_ = true;
        lost_why_ = why;
        if (waiter_) std::exchange(waiter_, {}).resume();
    }

  private:
    // The edges a wait is for.
    enum class Want : std::uint8_t { readable, either };
    // Suspends until the socket's next edge of the kind wanted (or the connection's end). An
    // edge of another kind is dropped: every wait first checks that its condition does not hold
    // already (libpq's state, then ready_now()), so a dropped edge loses nothing.
    struct Edge {
        CopyRun& run;
        Want want;
        bool await_ready() const noexcept { return run.lost_; }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            run.waiter_ = h;
            run.want_ = want;
        }
        void await_resume() const { run.check_lost(); }
    };

    PGconn* pg() {
        check_lost();
        return conn_->native();
    }
    int fd() { return PQsocket(pg()); }

    void check_lost() const {
        if (lost_) throw ConnectionError(lost_why_);
    }
    [[noreturn]] void fail_connection() {
        if (!lost_) conn_->close(one_line(PQerrorMessage(conn_->native())));
        throw ConnectionError(lost_why_.empty() ? std::string("PostgreSQL connection lost")
                                                : lost_why_);
    }
    // After a refused put: true when the server ended the COPY (its error is in the result);
    // a broken connection throws.
    bool copy_ended() {
        if (PQstatus(pg()) == CONNECTION_BAD) fail_connection();
        return false;
    }

    // Writes out what libpq holds. While the socket is full it waits for either edge, as
    // PQflush's documentation asks: the server may be blocked writing to us (a notice from a
    // trigger on every row) and read nothing more until we read, so with writable edges alone
    // both sides would wait for ever.
    Task<void> flush() {
        for (;;) {
            const int r = PQflush(pg());
            if (r == 0) co_return;
            if (r < 0) fail_connection();
            co_await Edge{*this, Want::either};
            if (ready_now(fd(), POLLIN) && !PQconsumeInput(pg())) fail_connection();
        }
    }
    // Reads what the socket holds, waiting for a readable edge when it holds nothing.
    Task<void> input() {
        if (!ready_now(fd(), POLLIN)) co_await Edge{*this, Want::readable};
        if (!PQconsumeInput(pg())) fail_connection();
    }
    Task<void> until_not_busy() {
        while (PQisBusy(pg())) co_await input();
    }

    // Keeps the first error of the statement's results.
    void keep(PGresult* r) {
        if (PQresultStatus(r) == PGRES_FATAL_ERROR && !has_error_) {
            has_error_ = true;
            if (const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE)) sqlstate_ = s;
            error_ = sqlstate_.empty() ? one_line(PQresultErrorMessage(r)) : server_message(r);
            // Which row and column of the data (e.g. "COPY t, line 3, column a: \"x\"").
            if (const char* c = PQresultErrorField(r, PG_DIAG_CONTEXT))
                error_.append(" [").append(one_line(c)).append("]");
        }
        PQclear(r);
    }
    void throw_kept() {
        if (!has_error_) return;
        if (sqlstate_.empty()) throw ConnectionError(error_);
        throw_error(error_, sqlstate_);
    }

    std::shared_ptr<Connection> conn_;
    const char* what_;
    std::coroutine_handle<> waiter_;
    Want want_ = Want::readable;
    bool lost_ = false;
    bool idle_ = true;  // libpq has no statement going: the pipeline can take over again
    std::string lost_why_;
    std::size_t queued_ = 0;
    bool has_error_ = false;
    std::string error_, sqlstate_;
};

Task<std::uint64_t> run_copy_in(Database& db, std::string sql, CopySource source,
                                std::vector<std::string>* chunks) {
    Lease lease = co_await pg::lease(db, "pg::copy_in");
    CopyRun run(lease.conn, "pg::copy_in");
    co_await run.start(sql, PGRES_COPY_IN);
    std::exception_ptr source_error;
    std::size_t next_chunk = 0;
    for (;;) {
        std::optional<std::string> chunk;
        if (chunks) {
            if (next_chunk == chunks->size()) break;
            chunk = std::move((*chunks)[next_chunk++]);
        } else {
            try {
                chunk = co_await source();
            } catch (...) {
                source_error = std::current_exception();
                break;
            }
            if (!chunk) break;
        }
        if (!co_await run.put(*chunk)) break;
    }
    std::string why;
    if (source_error) {
        try {
            std::rethrow_exception(source_error);
        } catch (const std::exception& e) {
            why = fmt::format("COPY aborted by the client: {}", e.what());
        } catch (...) {
            why = "COPY aborted by the client";
        }
    }
    co_await run.end(source_error ? why.c_str() : nullptr);
    co_return co_await run.finish(source_error);
}

Task<std::uint64_t> run_copy_out(Database& db, std::string sql, CopySink sink) {
    Lease lease = co_await pg::lease(db, "pg::copy_out");
    CopyRun run(lease.conn, "pg::copy_out");
    co_await run.start(sql, PGRES_COPY_OUT);
    co_await run.read_out(&sink);
    co_return co_await run.finish();
}

}  // namespace

Task<std::uint64_t> copy_in(Database& db, std::string sql, std::vector<std::string> chunks) {
    // (A coroutine of its own, so the chunks live in its frame until it ends.)
    co_return co_await run_copy_in(db, std::move(sql), nullptr, &chunks);
}

Task<std::uint64_t> copy_in(Database& db, std::string sql, CopySource source) {
    if (!source) throw Error("pg::copy_in: the source is empty");
    return run_copy_in(db, std::move(sql), std::move(source), nullptr);
}

Task<std::string> copy_out(Database& db, std::string sql) {
    std::string all;
    CopySink append = [&all](std::string_view chunk) -> Task<void> {
        all.append(chunk);
        co_return;
    };
    co_await run_copy_out(db, std::move(sql), std::move(append));
    co_return all;
}

Task<std::uint64_t> copy_out(Database& db, std::string sql, CopySink sink) {
    if (!sink) throw Error("pg::copy_out: the sink is empty");
    return run_copy_out(db, std::move(sql), std::move(sink));
}

}  // namespace vela::db::pg
