// Uploads (vela/web/upload.hpp): read_multipart on a buffered body and on a body streamed in
// pieces, the temporary files (mode, names, removal, move_to within and across file
// systems), the errors as HttpError statuses with nothing left behind, and bind<T>.

#include "vela/web/upload.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "vela/http/body_reader.hpp"

namespace vela {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

// A body handed out in the given pieces (every read is ready at once), optionally ending
// with an error instead of the end.
class PiecesReader final : public BodyReader {
  public:
    PiecesReader(std::vector<std::string> pieces, Status error = Status::OK)
        : pieces_(std::move(pieces)), error_(error) {}
    std::uint64_t received() const noexcept override { return received_; }

  protected:
    bool ready() override { return true; }
    void wait(std::coroutine_handle<> h) override { h.resume(); }
    BodyChunk take() override {
        if (next_ < pieces_.size()) {
            const std::string& p = pieces_[next_++];
            received_ += p.size();
            const bool last = next_ == pieces_.size() && error_ == Status::OK;
            return {p, last, Status::OK};
        }
        if (error_ != Status::OK) return {{}, true, error_};
        return {{}, true, Status::OK};
    }

  private:
    std::vector<std::string> pieces_;
    Status error_;
    std::size_t next_ = 0;
    std::uint64_t received_ = 0;
};

// A Request with a Content-Type and a body (buffered, or streamed in `pieces`).
struct TestRequest {
    std::string type;
    std::string body;
    std::optional<PiecesReader> reader;
    Request req;

    TestRequest(std::string content_type, std::string b) : type(std::move(content_type)) {
        body = std::move(b);
        req.mutable_headers().push_back(Header{"Content-Type", type});
        req.set_body(body);
    }
    void stream(std::vector<std::size_t> cuts, Status error = Status::OK) {
        std::vector<std::string> pieces;
        std::size_t at = 0;
        for (std::size_t c : cuts) pieces.push_back(body.substr(at, c - at)), at = c;
        pieces.push_back(body.substr(at));
        reader.emplace(std::move(pieces), error);
        req.set_body({});
        req.set_body_stream(&*reader);
    }
};

struct Result {
    std::optional<MultipartForm> form;
    Status status = Status::OK;  // of the HttpError
    std::string message;
};

// Runs read_multipart to the end (the test readers never suspend).
Result read(Request& req, UploadOptions options) {
    Result out;
    bool finished = false;
    start(read_multipart(req, std::move(options)),
          [&](std::optional<MultipartForm> v, std::exception_ptr e) {
              finished = true;
              if (v) out.form.emplace(std::move(*v));
              if (!e) return;
              try {
                  std::rethrow_exception(e);
              } catch (const HttpError& h) {
                  out.status = h.status();
                  out.message = h.what();
              } catch (const std::exception& x) {
                  out.status = Status::NotImplemented;  // not expected
                  out.message = x.what();
              }
          });
    EXPECT_TRUE(finished);
    return out;
}

class Upload : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vela-upload-test-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        options_.temp_dir = dir_;
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::size_t files_in_dir() const {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++n;
        return n;
    }

    std::string dir_;
    UploadOptions options_;
};

const std::string kType = "multipart/form-data; boundary=\"bnd 42\"";

std::string field(std::string_view name, std::string_view value) {
    return "--bnd 42\r\nContent-Disposition: form-data; name=\"" + std::string(name) +
           "\"\r\n\r\n" + std::string(value) + "\r\n";
}

std::string file(std::string_view name, std::string_view filename, std::string_view data,
                 std::string_view type = "") {
    std::string s = "--bnd 42\r\nContent-Disposition: form-data; name=\"" + std::string(name) +
                    "\"; filename=\"" + std::string(filename) + "\"\r\n";
    if (!type.empty()) s += "Content-Type: " + std::string(type) + "\r\n";
    return s + "\r\n" + std::string(data) + "\r\n";
}

const std::string kEnd = "--bnd 42--\r\n";

std::string sample_body() {
    std::string big;
    for (int i = 0; i < 100000; ++i) big.push_back(static_cast<char>(i * 7 % 256));
    return field("title", "Holiday") + field("tag", "sea") + field("tag", "sun") +
           file("photo", "../../beach.jpg", big, "image/jpeg") + field("count", "3") +
           file("notes", "notes.txt",
                "--bnd 4 is not the boundary\r\n--bnd 4\r\n-bnd 42 \r--bnd 42") +
           kEnd;
}

void expect_sample(const MultipartForm& form, const std::string& dir) {
    EXPECT_EQ(form.get("title"), "Holiday");
    EXPECT_EQ(form.get("tag"), "sea");
    EXPECT_EQ(form.all("tag"), (std::vector<std::string_view>{"sea", "sun"}));
    EXPECT_EQ(form.get("count"), "3");
    EXPECT_FALSE(form.get("photo"));  // a file is not a text field
    EXPECT_EQ(form.fields.size(), 4u);
    ASSERT_EQ(form.files.size(), 2u);
    const UploadedFile* photo = form.file("photo");
    ASSERT_NE(photo, nullptr);
    EXPECT_EQ(photo->field, "photo");
    EXPECT_EQ(photo->filename, "beach.jpg");
    EXPECT_EQ(photo->content_type, "image/jpeg");
    EXPECT_EQ(photo->size, 100000u);
    std::string big;
    for (int i = 0; i < 100000; ++i) big.push_back(static_cast<char>(i * 7 % 256));
    EXPECT_EQ(photo->read(), big);
    EXPECT_EQ(fs::path(photo->path()).parent_path(), fs::path(dir));
    EXPECT_EQ(fs::path(photo->path()).filename().string().rfind("vela-upload-", 0), 0u);
    struct stat st {};
    ASSERT_EQ(::stat(photo->path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const UploadedFile* notes = form.file("notes");
    ASSERT_NE(notes, nullptr);
    EXPECT_EQ(notes->content_type, "application/octet-stream");  // none sent
    EXPECT_EQ(notes->read(), "--bnd 4 is not the boundary\r\n--bnd 4\r\n-bnd 42 \r--bnd 42");
    EXPECT_NE(photo->path(), notes->path());
    EXPECT_EQ(form.file("title"), nullptr);
}

TEST_F(Upload, BufferedBody) {
    TestRequest t(kType, sample_body());
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    expect_sample(*r.form, dir_);
    EXPECT_EQ(files_in_dir(), 2u);
    r.form.reset();  // the end of the request: the files go
    EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(Upload, StreamedInPieces) {
    std::mt19937 rng(11);
    const std::string body = sample_body();
    for (const std::size_t step :
         {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{0}}) {
        SCOPED_TRACE("step " + std::to_string(step));
        TestRequest t(kType, body);
        std::vector<std::size_t> cuts;
        if (step == 0) {  // random pieces
            for (std::size_t at = rng() % 3000; at < body.size(); at += 1 + rng() % 3000)
                cuts.push_back(at);
        } else {
            for (std::size_t at = step; at < body.size(); at += step) cuts.push_back(at);
        }
        t.stream(cuts);
        Result r = read(t.req, options_);
        ASSERT_TRUE(r.form) << r.message;
        expect_sample(*r.form, dir_);
    }
    EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(Upload, EmptyFileInput) {
    TestRequest t(kType, field("a", "1") + file("f", "", "", "application/octet-stream") + kEnd);
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    ASSERT_EQ(r.form->files.size(), 1u);
    EXPECT_EQ(r.form->files[0].filename, "");
    EXPECT_EQ(r.form->files[0].size, 0u);
    EXPECT_EQ(r.form->files[0].read(), "");
}

TEST_F(Upload, DefaultTempDirIsTmpdir) {
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    ::setenv("TMPDIR", dir_.c_str(), 1);
    EXPECT_EQ(default_temp_dir(), dir_);
    TestRequest t(kType, file("f", "a.txt", "x") + kEnd);
    Result r = read(t.req, {});
    ASSERT_TRUE(r.form) << r.message;
    EXPECT_EQ(fs::path(r.form->files[0].path()).parent_path(), fs::path(dir_));
    ::unsetenv("TMPDIR");
    EXPECT_EQ(default_temp_dir(), "/tmp");
    if (old) ::setenv("TMPDIR", saved.c_str(), 1);
}

// ---- Keeping files ------------------------------------------------------------------------

TEST_F(Upload, MoveToKeepsTheFile) {
    TestRequest t(kType, file("a", "a.txt", "first") + file("b", "b.txt", "second") + kEnd);
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    const std::string dest = dir_ + "/kept-a.txt";
    const std::string temp = r.form->files[0].path();
    r.form->files[0].move_to(dest);
    EXPECT_TRUE(r.form->files[0].moved());
    EXPECT_EQ(r.form->files[0].path(), dest);
    EXPECT_FALSE(fs::exists(temp));
    EXPECT_THROW(r.form->files[0].move_to(dest + "2"), std::system_error);  // moved already
    r.form.reset();
    EXPECT_EQ(files_in_dir(), 1u);  // b's temporary file went, a stayed where it was moved
    std::ifstream in(dest);
    std::string got((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(got, "first");
}

TEST_F(Upload, MoveToAcrossFileSystems) {
    struct stat a {
    }, b{};
    if (::stat(dir_.c_str(), &a) != 0 || ::stat("/dev/shm", &b) != 0 || a.st_dev == b.st_dev)
        GTEST_SKIP() << "/dev/shm is not another file system here";
    std::string data(300000, 'q');
    TestRequest t(kType, file("a", "a.bin", data) + kEnd);
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    const std::string dest = "/dev/shm/vela-upload-test-" + std::to_string(::getpid());
    const std::string temp = r.form->files[0].path();
    r.form->files[0].move_to(dest);  // rename fails with EXDEV: copied, then removed
    EXPECT_FALSE(fs::exists(temp));
    r.form.reset();
    EXPECT_EQ(fs::file_size(dest), data.size());
    fs::remove(dest);
    EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(Upload, MoveToFailureLeavesTheTemporaryFile) {
    TestRequest t(kType, file("a", "a.txt", "x") + kEnd);
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    try {
        r.form->files[0].move_to(dir_ + "/no/such/dir/a.txt");
        FAIL() << "no exception";
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("move_to"), std::string::npos);
    }
    EXPECT_FALSE(r.form->files[0].moved());
    EXPECT_TRUE(fs::exists(r.form->files[0].path()));
    r.form.reset();
    EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(Upload, UploadedFileMoves) {
    const std::string p1 = dir_ + "/one", p2 = dir_ + "/two";
    std::ofstream(p1) << "1";
    std::ofstream(p2) << "2";
    std::vector<UploadedFile> v;
    v.emplace_back(p1);
    UploadedFile other(p2);
    UploadedFile moved(std::move(v[0]));  // v[0] no longer owns a file
    EXPECT_EQ(moved.path(), p1);
    EXPECT_TRUE(v[0].path().empty());
    v.clear();
    EXPECT_TRUE(fs::exists(p1));
    moved = std::move(other);  // p1 goes, p2 is now owned by `moved`
    EXPECT_FALSE(fs::exists(p1));
    EXPECT_TRUE(fs::exists(p2));
    EXPECT_EQ(moved.read(), "2");
}

// ---- Errors: HttpError with the status, and no files left ---------------------------------

struct ErrorRow {
    const char* name;
    std::string type;
    std::string body;
    Status status;
    std::string_view message;
};

TEST_F(Upload, Errors) {
    const std::string ok = file("a", "a.txt", "x") + field("b", "y");
    const ErrorRow rows[] = {
        {"noType", "", ok + kEnd, Status::UnsupportedMediaType, "multipart/form-data"},
        {"json", "application/json", "{}", Status::UnsupportedMediaType, "application/json"},
        {"urlencoded", "application/x-www-form-urlencoded", "a=1", Status::UnsupportedMediaType,
         "multipart/form-data"},
        {"noBoundary", "multipart/form-data", ok + kEnd, Status::BadRequest, "without a boundary"},
        {"badBoundary", "multipart/form-data; boundary=\"a\x01\"", ok + kEnd, Status::BadRequest,
         "boundary"},
        {"truncated", kType, ok, Status::BadRequest, "truncated"},
        {"truncatedInFile", kType, ok + file("c", "c.txt", "partial").substr(0, 80),
         Status::BadRequest, "truncated"},
        {"notMultipartBody", kType, "hello", Status::BadRequest, "no multipart boundary"},
        {"malformedHeaders", kType, ok + "--bnd 42\r\nno colon\r\n\r\nx\r\n" + kEnd,
         Status::BadRequest, "without a field name"},
        {"fileTooLarge", kType, ok + file("big", "big.bin", std::string(2000, 'b')) + kEnd,
         Status::PayloadTooLarge, "larger than 1000"},
        {"fieldTooLarge", kType, ok + field("long", std::string(101, 'l')) + kEnd,
         Status::PayloadTooLarge, "larger than 100"},
        {"tooManyParts", kType, ok + field("c", "") + field("d", "") + field("e", "") + kEnd,
         Status::PayloadTooLarge, "more than 4 parts"},
    };
    options_.limits.max_file_size = 1000;
    options_.limits.max_field_size = 100;
    options_.limits.max_parts = 4;
    for (const ErrorRow& row : rows) {
        for (const bool streamed : {false, true}) {
            SCOPED_TRACE(std::string(row.name) + (streamed ? " streamed" : " buffered"));
            TestRequest t(row.type, row.body);
            if (streamed) {
                std::vector<std::size_t> cuts;
                for (std::size_t at = 3; at < row.body.size(); at += 3) cuts.push_back(at);
                t.stream(cuts);
            }
            Result r = read(t.req, options_);
            EXPECT_FALSE(r.form);
            EXPECT_EQ(r.status, row.status);
            EXPECT_NE(r.message.find(row.message), std::string::npos) << r.message;
            EXPECT_EQ(files_in_dir(), 0u);
        }
    }
}

TEST_F(Upload, BodyStreamErrorsKeepTheirStatus) {
    for (const Status s : {Status::PayloadTooLarge, Status::RequestTimeout, Status::BadRequest}) {
        TestRequest t(kType, file("a", "a.txt", std::string(5000, 'a')) + kEnd);
        t.reader.emplace(std::vector<std::string>{t.body.substr(0, 100), t.body.substr(100, 3000)},
                         s);  // then the error instead of the rest
        t.req.set_body({});
        t.req.set_body_stream(&*t.reader);
        Result r = read(t.req, options_);
        EXPECT_FALSE(r.form);
        EXPECT_EQ(r.status, s);
        EXPECT_FALSE(r.message.empty());
        EXPECT_EQ(files_in_dir(), 0u);
    }
}

TEST_F(Upload, UnwritableTempDirIs500WithoutThePath) {
    options_.temp_dir = dir_ + "/missing";
    TestRequest t(kType, field("a", "1") + file("f", "f.txt", "x") + kEnd);
    Result r = read(t.req, options_);
    EXPECT_FALSE(r.form);
    EXPECT_EQ(r.status, Status::InternalServerError);
    EXPECT_EQ(r.message.find(dir_), std::string::npos) << r.message;
    // Fields only: no file is written, so the directory does not matter.
    TestRequest fields_only(kType, field("a", "1") + kEnd);
    Result f = read(fields_only.req, options_);
    ASSERT_TRUE(f.form) << f.message;
    EXPECT_EQ(f.form->get("a"), "1");
}

// ---- bind<T> ------------------------------------------------------------------------------

struct Trip {
    std::string title;
    int nights = 7;
    std::optional<double> budget;
    std::vector<std::string> tag;
    bool public_ = false;
};
VELA_REFLECT(Trip, VELA_REQUIRED(title), nights, budget, tag, VELA_AS(public_, "public"))

TEST_F(Upload, Bind) {
    TestRequest t(kType, field("title", "Alps") + field("tag", "snow") + field("tag", "ski") +
                             field("public", "on") + file("photo", "p.jpg", "jpeg") + kEnd);
    Result r = read(t.req, options_);
    ASSERT_TRUE(r.form) << r.message;
    const Trip trip = r.form->bind<Trip>();
    EXPECT_EQ(trip.title, "Alps");
    EXPECT_EQ(trip.nights, 7);  // absent: keeps its default
    EXPECT_FALSE(trip.budget);
    EXPECT_EQ(trip.tag, (std::vector<std::string>{"snow", "ski"}));
    EXPECT_TRUE(trip.public_);
}

TEST_F(Upload, BindErrorsAre400NamingTheField) {
    const std::pair<std::string, std::string> rows[] = {
        {field("nights", "3") + kEnd, "form field 'title': missing required"},
        {field("title", "x") + field("nights", "many") + kEnd,
         "form field 'nights': expected integer"},
        {field("title", "x") + field("budget", "lots") + kEnd,
         "form field 'budget': expected number"},
        {file("title", "t.txt", "a file is not a field") + kEnd, "'title': missing required"},
    };
    for (const auto& [body, message] : rows) {
        TestRequest t(kType, body);
        Result r = read(t.req, options_);
        ASSERT_TRUE(r.form) << r.message;
        try {
            (void)r.form->bind<Trip>();
            ADD_FAILURE() << "no exception for " << message;
        } catch (const HttpError& e) {
            EXPECT_EQ(e.status(), Status::BadRequest);
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
        Response error;
        EXPECT_FALSE(r.form->fields.to<Trip>(error));  // the same without an exception
        EXPECT_EQ(error.status(), Status::BadRequest);
    }
}

}  // namespace
}  // namespace vela
