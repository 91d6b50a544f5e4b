// A small but complete web app: accounts with sessions, a todo list as HTML forms and as a
// JSON API, file attachments, CORS for the API, security headers, a login rate limit, request
// ids and an access log. Data lives in memory (lost on restart); attachments are files under
// --data.
//   todo [--port N] [--threads N] [--data DIR] [--cors-origin ORIGIN] [--access-log FILE]
//
// Try it:
//   curl -c jar -d 'user=ann&password=correct-horse' localhost:8080/register
//   curl -b jar -d 'title=Buy milk' localhost:8080/todos
//   curl -b jar localhost:8080/api/todos
//   curl -b jar -F 'file=@notes.txt' localhost:8080/todos/1/attachment
// Exit codes: 0 after a graceful shutdown, 1 when the server cannot start (reason logged in
// one line), 2 for a bad command line.

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <vela/vela.hpp>

#include "cli.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: todo [options]\n"
    "  --port N              HTTP port, 0 to 65535 (default 8080)\n"
    "  --threads N           event loops, 0 to 1024 (default 0: one per core)\n"
    "  --data DIR            where attachments are kept (default ./todo-data; created)\n"
    "  --cors-origin ORIGIN  an origin allowed to call /api with credentials\n"
    "                        (default http://localhost:5173)\n"
    "  --access-log FILE     access log file, rotated by size (default: standard output)\n"
    "  -h, --help            print this text and exit\n";

struct Options {
    std::uint16_t port = 8080;
    unsigned threads = 0;
    std::string data = "todo-data";
    std::string cors_origin = "http://localhost:5173";
    std::string access_log;
};

Options parse_args(int argc, char** argv) {
    example::CommandLine cl("todo", kUsage);
    Options o;
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--port")
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        else if (arg == "--threads")
            o.threads = cl.number(arg, value(), 1024);
        else if (arg == "--data")
            o.data = std::string(value());
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
    std::string attachment_path{};          // where it is kept (not part of the JSON)
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

struct Account {
    std::string salt;
    std::string hash;
    std::vector<Todo> todos;
    std::int64_t next_id = 1;
};

// PBKDF2-HMAC-SHA256. It runs on the loop thread and takes a few milliseconds, which is
// what sign-ins cost; a real service would pick a memory-hard hash (scrypt, Argon2) and tune
// it, and the rate limit on the sign-in routes keeps anyone from turning it into a DoS.
std::string hash_password(std::string_view password, std::string_view salt) {
    unsigned char out[32];
    PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                      reinterpret_cast<const unsigned char*>(salt.data()),
                      static_cast<int>(salt.size()), 20'000, EVP_sha256(), sizeof out, out);
    return std::string(reinterpret_cast<char*>(out), sizeof out);
}

// Every loop thread uses the store: one mutex (requests hold it for microseconds).
class Store {
  public:
    bool add_user(const Credentials& c) {
        Account a;
        a.salt = vela::crypto::random_bytes(16);
        a.hash = hash_password(c.password, a.salt);
        std::lock_guard lock(mu_);
        return accounts_.emplace(c.user, std::move(a)).second;
    }
    bool check(const Credentials& c) {
        std::string salt, hash;
        {
            std::lock_guard lock(mu_);
            auto it = accounts_.find(c.user);
            if (it == accounts_.end()) return false;
            salt = it->second.salt;
            hash = it->second.hash;
        }
        return vela::crypto::equal_constant_time(hash_password(c.password, salt), hash);
    }
    std::vector<Todo> list(const std::string& user) {
        std::lock_guard lock(mu_);
        return accounts_[user].todos;
    }
    Todo add(const std::string& user, std::string title) {
        std::lock_guard lock(mu_);
        Account& a = accounts_[user];
        Todo& t = a.todos.emplace_back();
        t.id = a.next_id++;
        t.title = std::move(title);
        return a.todos.back();
    }
    // Applies `f` to the todo `id` of `user`; false when there is none.
    template <class F>
    bool with(const std::string& user, std::int64_t id, F&& f) {
        std::lock_guard lock(mu_);
        for (Todo& t : accounts_[user].todos)
            if (t.id == id) return f(t), true;
        return false;
    }
    bool remove(const std::string& user, std::int64_t id) {
        std::lock_guard lock(mu_);
        auto& v = accounts_[user].todos;
        return std::erase_if(v, [&](const Todo& t) { return t.id == id; }) > 0;
    }

  private:
    std::mutex mu_;
    std::map<std::string, Account, std::less<>> accounts_;
};

// ---- pages ----------------------------------------------------------------------------------

std::string escape(std::string_view s) { return vela::html_escape(s); }

std::string page(std::string_view title, std::string_view body) {
    return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title) +
           "</title></head><body>\n" + std::string(body) + "</body></html>\n";
}

std::string login_page(std::string_view message = {}) {
    std::string b = "<h1>Todo</h1>\n";
    if (!message.empty()) b += "<p><strong>" + escape(message) + "</strong></p>\n";
    for (std::string_view action : {"login", "register"})
        b += "<form method=\"post\" action=\"/" + std::string(action) +
             "\"><input name=\"user\" placeholder=\"user\"> <input name=\"password\" "
             "type=\"password\" placeholder=\"password\"> <button>" +
             std::string(action) + "</button></form>\n";
    return page("Todo: sign in", b);
}

std::string list_page(const std::string& user, const std::vector<Todo>& todos) {
    std::string b = "<h1>" + escape(user) + "'s todos</h1>\n<ul>\n";
    for (const Todo& t : todos) {
        const std::string id = std::to_string(t.id);
        b += "<li>" + std::string(t.done ? "<s>" : "") + escape(t.title) + (t.done ? "</s>" : "") +
             " <form method=\"post\" action=\"/todos/" + id +
             "/toggle\" style=\"display:inline\"><button>" + (t.done ? "undo" : "done") +
             "</button></form>";
        if (t.attachment)
            b += " <a href=\"/todos/" + id + "/attachment\">" + escape(*t.attachment) + "</a>";
        b += " <form method=\"post\" action=\"/todos/" + id +
             "/attachment\" enctype=\"multipart/form-data\" style=\"display:inline\"><input "
             "type=\"file\" name=\"file\"><button>attach</button></form></li>\n";
    }
    b += "</ul>\n<form method=\"post\" action=\"/todos\"><input name=\"title\" "
         "placeholder=\"new todo\"> <button>add</button></form>\n"
         "<form method=\"post\" action=\"/logout\"><button>log out</button></form>\n";
    return page("Todo", b);
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

}  // namespace

int main(int argc, char** argv) {
    const Options opts = parse_args(argc, argv);
    std::error_code ec;
    std::filesystem::create_directories(opts.data, ec);
    if (ec) {
        std::fprintf(stderr, "todo: cannot create the data directory %s: %s\n", opts.data.c_str(),
                     ec.message().c_str());
        return 1;
    }
    const std::string files_dir = std::filesystem::absolute(opts.data).string();
    auto store = std::make_shared<Store>();

    vela::App app;
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

    // Pages.
    app.get("/", [store](vela::Request& req) -> vela::Response {
        const std::optional<std::string> user = user_of(req);
        if (!user) return vela::Response::html(login_page());
        return vela::Response::html(list_page(*user, store->list(*user)));
    });
    // Sign-in routes: five attempts per minute per client address.
    auto auth = app.group("/");
    auth.use(vela::rate_limit({.rate = 5, .period = std::chrono::minutes(1)}));
    auth.post("/register", [store](vela::Request& req, vela::Form<Credentials> c) {
        if (c->user.empty() || c->password.size() < 8)
            return vela::Response::html(login_page("pick a user name and 8+ characters"),
                                        vela::Status::BadRequest);
        if (!store->add_user(*c))
            return vela::Response::html(login_page("that name is taken"), vela::Status::Conflict);
        vela::Session& s = vela::session(req);
        s.regenerate();
        s.set("user", c->user);
        return see_other("/");
    });
    auth.post("/login", [store](vela::Request& req, vela::Form<Credentials> c) {
        if (!store->check(*c))
            return vela::Response::html(login_page("wrong user or password"),
                                        vela::Status::Unauthorized);
        vela::Session& s = vela::session(req);
        s.regenerate();  // a new id on privilege change: no session fixation
        s.set("user", c->user);
        return see_other("/");
    });
    app.post("/logout", [](vela::Request& req) {
        vela::session(req).destroy();
        return see_other("/");
    });
    app.post("/todos", [store](vela::Request& req, vela::Form<NewTodo> t) -> vela::Response {
        const std::optional<std::string> user = user_of(req);
        if (!user) return see_other("/");
        if (!t->title.empty()) store->add(*user, t->title);
        return see_other("/");
    });
    app.post("/todos/{id:int}/toggle", [store](vela::Request& req) -> vela::Response {
        const std::optional<std::string> user = user_of(req);
        if (!user) return see_other("/");
        if (!store->with(*user, *req.param_int("id"), [](Todo& t) { t.done = !t.done; }))
            return vela::Status::NotFound;
        return see_other("/");
    });
    // Attachments: the body streams to a temporary file, then moves under --data.
    app.streaming(vela::Method::POST, "/todos/{id:int}/attachment",
                  [store, files_dir](vela::Request& req) -> vela::Task<vela::Response> {
                      const std::optional<std::string> user = user_of(req);
                      if (!user) co_return vela::Status::Unauthorized;
                      const std::int64_t id = *req.param_int("id");
                      vela::UploadOptions up;
                      up.limits.max_file_size = 10 * 1024 * 1024;
                      vela::MultipartForm form = co_await vela::read_multipart(req, up);
                      vela::UploadedFile* f = form.file("file");
                      if (!f) throw vela::HttpError(vela::Status::BadRequest, "no file field");
                      const std::string name = f->filename.empty() ? "attachment" : f->filename;
                      const std::string dest = files_dir + "/" + vela::crypto::random_token(12);
                      bool found = store->with(*user, id, [&](Todo& t) {
                          f->move_to(dest);
                          if (!t.attachment_path.empty())
                              std::filesystem::remove(t.attachment_path);
                          t.attachment = name;
                          t.attachment_path = dest;
                      });
                      if (!found) co_return vela::Status::NotFound;
                      co_return see_other("/");
                  });
    app.get("/todos/{id:int}/attachment", [store](vela::Request& req) -> vela::Response {
        const std::optional<std::string> user = user_of(req);
        if (!user) return vela::Status::Unauthorized;
        std::string name, path;
        store->with(*user, *req.param_int("id"), [&](Todo& t) {
            name = t.attachment.value_or("");
            path = t.attachment_path;
        });
        if (path.empty()) return vela::Status::NotFound;
        return vela::Response::file(path, {.download_name = name});
    });

    // The JSON API, for a front end on another origin (cookies included).
    auto api = app.group("/api");
    api.use(vela::cors({.origins = {opts.cors_origin}, .credentials = true}));
    api.get("/todos", [store](vela::Request& req) { return store->list(api_user(req)); });
    api.post("/todos", [store](vela::Request& req, vela::Json<NewTodo> t) {
        return vela::json_response(store->add(api_user(req), t->title), vela::Status::Created);
    });
    api.patch("/todos/{id:int}", [store](vela::Request& req, vela::Json<TodoPatch> p) {
        Todo out;
        if (!store->with(api_user(req), *req.param_int("id"), [&](Todo& t) {
                if (p->title) t.title = *p->title;
                if (p->done) t.done = *p->done;
                out = t;
            }))
            throw vela::HttpError(vela::Status::NotFound, "no such todo");
        return out;
    });
    api.del("/todos/{id:int}", [store](vela::Request& req) {
        if (!store->remove(api_user(req), *req.param_int("id")))
            throw vela::HttpError(vela::Status::NotFound, "no such todo");
        return vela::Response(vela::Status::NoContent);
    });

    app.listen(opts.port);
    return app.run(opts.threads);
}
