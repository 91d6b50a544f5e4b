// multipart/form-data parser (RFC 7578, RFC 2046 5.1): tables of valid bodies, each fed whole,
// byte by byte, split at every position and in random pieces (the same parts every time);
// malformed bodies (400) and limits (413); the Content-Type boundary, filename* (RFC 8187)
// and file name sanitizing; and random bodies checked against what built them.

#include "vela/http/multipart.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace vela {
namespace {

using namespace std::string_literals;

struct Part {
    std::string name;
    std::string filename;
    std::string content_type;
    bool is_file = false;
    std::string data;
    bool operator==(const Part&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Part& p) {
    return os << "{" << p.name << (p.is_file ? " file=" + p.filename : "") << " [" << p.content_type
              << "] " << p.data.size() << "B}";
}

// Records the events; checks that they come in order and data only inside a part.
struct Recorder final : MultipartHandler {
    std::vector<Part> parts;
    bool open = false;
    bool order_ok = true;
    std::size_t data_calls = 0;
    int refuse_at_begin = -1;  // refuse the part with this index

    bool on_part_begin(const MultipartPart& p) override {
        if (open) order_ok = false;
        if (static_cast<int>(parts.size()) == refuse_at_begin) return false;
        open = true;
        parts.push_back({p.name, p.filename, p.content_type, p.is_file, {}});
        return true;
    }
    bool on_part_data(std::string_view d) override {
        if (!open || d.empty()) order_ok = false;
        ++data_calls;
        if (open) parts.back().data.append(d);
        return true;
    }
    bool on_part_end() override {
        if (!open) order_ok = false;
        open = false;
        return true;
    }
};

struct Outcome {
    MultipartParser::Result result = MultipartParser::Result::need_more;
    Status status = Status::OK;
    std::string message;
    std::vector<Part> parts;
    bool order_ok = true;
};

// Feeds `body` cut at `cuts` (ascending positions), then finish().
Outcome run(std::string_view boundary, std::string_view body, const std::vector<std::size_t>& cuts,
            MultipartLimits limits = {}) {
    MultipartParser p(boundary, limits);
    Recorder r;
    Outcome o;
    std::size_t at = 0;
    auto feed = [&](std::size_t end) {
        if (o.result == MultipartParser::Result::error) return;
        o.result = p.feed(body.substr(at, end - at), r);
        at = end;
    };
    for (std::size_t c : cuts) feed(c);
    feed(body.size());
    if (o.result != MultipartParser::Result::error) o.result = p.finish();
    o.status = p.error();
    o.message = p.error_message();
    o.parts = std::move(r.parts);
    // A failed body may stop inside a part (no on_part_end); a complete one closes them all.
    o.order_ok = r.order_ok && (o.result == MultipartParser::Result::error || !r.open);
    return o;
}

Outcome run_whole(std::string_view boundary, std::string_view body, MultipartLimits limits = {}) {
    return run(boundary, body, {}, limits);
}

std::vector<std::size_t> every_byte(std::size_t n) {
    std::vector<std::size_t> v;
    for (std::size_t i = 1; i < n; ++i) v.push_back(i);
    return v;
}

std::vector<std::size_t> random_cuts(std::size_t n, std::mt19937& rng) {
    std::vector<std::size_t> v;
    std::uniform_int_distribution<std::size_t> step(1, 20);
    for (std::size_t i = step(rng); i < n; i += step(rng)) v.push_back(i);
    return v;
}

// ---- Valid bodies -------------------------------------------------------------------------

struct ValidRow {
    const char* name;
    std::string boundary;
    std::string body;
    std::vector<Part> parts;
};

const std::string kB = "XyZ";

std::vector<ValidRow> valid_rows() {
    const std::string d = "--" + kB;
    return {
        {"oneField",
         kB,
         d + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n" + d + "--\r\n",
         {{"a", "", "", false, "hello"}}},
        {"fieldsAndFile",
         kB,
         d + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nMy trip\r\n" + d +
             "\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nsea\r\n" + d +
             "\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"beach.jpg\"\r\n"
             "Content-Type: image/jpeg\r\n\r\n\xff\xd8\xff\xe0 JFIF\0\0\r\n\r\n"s +
             d + "--\r\n",
         {{"title", "", "", false, "My trip"},
          {"tags", "", "", false, "sea"},
          {"photo", "beach.jpg", "image/jpeg", true, "\xff\xd8\xff\xe0 JFIF\0\0\r\n"s}}},
        {"emptyValues",
         kB,
         d + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\r\n" + d +
             "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n\r\n" +
             d + "--",
         {{"a", "", "", false, ""}, {"f", "", "application/octet-stream", true, ""}}},
        {"noHeadersButDisposition",
         kB,
         d + "\r\ncontent-disposition:form-data;name=x\r\n\r\nv\r\n" + d + "--",
         {{"x", "", "", false, "v"}}},
        {"preambleAndEpilogue",
         kB,
         "This is the preamble.\r\nIt has --XyZ-ish text but no delimiter at a line start --XyZ"
         "\r\n" +
             d + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n" + d +
             "--\r\nThis is the epilogue.\r\n" + d + "\r\nignored\r\n",
         {{"a", "", "", false, "1"}}},
        {"emptyPreambleLine",
         kB,
         "\r\n" + d + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n" + d + "--",
         {{"a", "", "", false, "1"}}},
        {"transportPadding",
         kB,
         d + " \t \r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n" + d +
             "\t\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n2\r\n" + d + "--  \r\n",
         {{"a", "", "", false, "1"}, {"b", "", "", false, "2"}}},
        {"boundaryLikeData",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
             "--XyZ at the start\r\n-XyZ\r\n--xyz\r\n--XyY\r\n--Xy\n--XyZ\r--XyZ a--XyZ\r\r\n" +
             d + "\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n\r\n\r\n\r\r\n" + d + "--",
         {{"a", "", "", false,
           "--XyZ at the start\r\n-XyZ\r\n--xyz\r\n--XyY\r\n--Xy\n--XyZ\r--XyZ a--XyZ\r"},
          {"b", "", "", false, "\r\n\r\n\r"}}},
        {"bareLfAndCrInData",
         kB,
         d + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nline1\nline2\rline3\n\n\r\n" +
             d + "--",
         {{"a", "", "", false, "line1\nline2\rline3\n\n"}}},
        {"foldedHeader",
         kB,
         d +
             "\r\nContent-Disposition: form-data;\r\n name=\"a\";\r\n\tfilename=\"x.txt\"\r\n"
             "Content-Type: text/plain;\r\n charset=utf-8\r\n\r\nv\r\n" +
             d + "--",
         {{"a", "x.txt", "text/plain; charset=utf-8", true, "v"}}},
        {"otherHeadersIgnored",
         kB,
         d +
             "\r\nX-Custom: 1\r\nContent-Transfer-Encoding: binary\r\n"
             "Content-Disposition: FORM-DATA; NAME=\"a\"; size=12; Filename=\"f\"\r\n\r\nv\r\n" +
             d + "--",
         {{"a", "f", "", true, "v"}}},
        {"windowsPathFilename",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; "
             "filename=\"C:\\Users\\me\\report.pdf\"\r\n\r\n%PDF\r\n" +
             d + "--",
         {{"f", "report.pdf", "", true, "%PDF"}}},
        {"traversalFilename",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../../etc/passwd\"\r\n\r\n"
             "x\r\n" +
             d + "--",
         {{"f", "passwd", "", true, "x"}}},
        {"dotDotFilename",
         kB,
         d + "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"..\"\r\n\r\nx\r\n" + d +
             "--",
         {{"f", "", "", true, "x"}}},
        {"escapedQuoteFilename",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a \\\"b\\\".txt\"\r\n\r\n"
             "x\r\n" +
             d + "--",
         {{"f", "a \"b\".txt", "", true, "x"}}},
        {"utf8RawFilename",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"na\xc3\xafve.txt\"\r\n\r\n"
             "x\r\n" +
             d + "--",
         {{"f", "na\xc3\xafve.txt", "", true, "x"}}},
        {"filenameStarWins",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"EURO rates.txt\"; "
             "filename*=UTF-8''%e2%82%ac%20rates.txt\r\n\r\nx\r\n" +
             d + "--",
         {{"f", "\xe2\x82\xac rates.txt", "", true, "x"}}},
        {"filenameStarAlone",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; "
             "filename*=iso-8859-1'en'%A3%20rates.txt\r\n\r\nx\r\n" +
             d + "--",
         {{"f", "\xc2\xa3 rates.txt", "", true, "x"}}},
        {"filenameStarPath",
         kB,
         d +
             "\r\nContent-Disposition: form-data; name=\"f\"; "
             "filename*=UTF-8''..%2F..%2Fx%00y.txt\r\n\r\nx\r\n" +
             d + "--",
         {{"f", "xy.txt", "", true, "x"}}},
        {"binaryEveryByte",
         kB,
         [&] {
             std::string b = d +
                             "\r\nContent-Disposition: form-data; name=\"b\"; filename=\"b\"\r\n"
                             "\r\n";
             for (int i = 0; i < 256; ++i) b.push_back(static_cast<char>(i));
             return b + "\r\n" + d + "--";
         }(),
         {{"b", "b", "", true,
           [] {
               std::string s;
               for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
               return s;
           }()}}},
        {"longBoundary",
         std::string(70, 'b'),
         "--" + std::string(70, 'b') + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n" +
             "\r\n--" + std::string(69, 'b') + "\r\n--" + std::string(70, 'b') + "--",
         {{"a", "", "", false, "\r\n--" + std::string(69, 'b')}}},
        {"boundaryWithSpecials",
         "'()+_,-./:=? x",
         "--'()+_,-./:=? x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n"
         "--'()+_,-./:=? x--",
         {{"a", "", "", false, "v"}}},
        {"curlStyle",
         "------------------------d74496d66958873e",
         "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"person\"\r\n\r\nanonymous\r\n"
         "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"secret\"; filename=\"file.txt\"\r\n"
         "Content-Type: text/plain\r\n\r\ncontents of the file\n\r\n"
         "--------------------------d74496d66958873e--\r\n",
         {{"person", "", "", false, "anonymous"},
          {"secret", "file.txt", "text/plain", true, "contents of the file\n"}}},
    };
}

TEST(MultipartValid, WholeBody) {
    for (const ValidRow& row : valid_rows()) {
        SCOPED_TRACE(row.name);
        const Outcome o = run_whole(row.boundary, row.body);
        EXPECT_EQ(o.result, MultipartParser::Result::done) << o.message;
        EXPECT_EQ(o.parts, row.parts);
        EXPECT_TRUE(o.order_ok);
    }
}

TEST(MultipartValid, ByteByByte) {
    for (const ValidRow& row : valid_rows()) {
        SCOPED_TRACE(row.name);
        const Outcome o = run(row.boundary, row.body, every_byte(row.body.size()));
        EXPECT_EQ(o.result, MultipartParser::Result::done) << o.message;
        EXPECT_EQ(o.parts, row.parts);
        EXPECT_TRUE(o.order_ok);
    }
}

TEST(MultipartValid, EverySplitPosition) {
    for (const ValidRow& row : valid_rows()) {
        for (std::size_t cut = 0; cut <= row.body.size(); ++cut) {
            SCOPED_TRACE(std::string(row.name) + " cut at " + std::to_string(cut));
            const Outcome o = run(row.boundary, row.body, {cut});
            ASSERT_EQ(o.result, MultipartParser::Result::done) << o.message;
            ASSERT_EQ(o.parts, row.parts);
            ASSERT_TRUE(o.order_ok);
        }
    }
}

TEST(MultipartValid, EveryPairOfSplitPositions) {
    for (const ValidRow& row : valid_rows()) {
        if (row.body.size() > 110) continue;  // quadratic: the short rows are enough
        for (std::size_t a = 1; a < row.body.size(); ++a) {
            for (std::size_t b = a; b < row.body.size(); ++b) {
                const Outcome o = run(row.boundary, row.body, {a, b});
                ASSERT_EQ(o.parts, row.parts) << row.name << " cuts " << a << "," << b;
                ASSERT_EQ(o.result, MultipartParser::Result::done);
            }
        }
    }
}

TEST(MultipartValid, RandomPieces) {
    std::mt19937 rng(7);
    for (const ValidRow& row : valid_rows()) {
        for (int round = 0; round < 50; ++round) {
            SCOPED_TRACE(std::string(row.name) + " round " + std::to_string(round));
            const Outcome o = run(row.boundary, row.body, random_cuts(row.body.size(), rng));
            ASSERT_EQ(o.result, MultipartParser::Result::done) << o.message;
            ASSERT_EQ(o.parts, row.parts);
        }
    }
}

TEST(MultipartValid, DataIsNotBufferedWhole) {
    // A 1 MiB part fed in 4 KiB pieces arrives in pieces, not as one call at the end.
    std::string body = "--B\r\nContent-Disposition: form-data; name=f; filename=f\r\n\r\n";
    body += std::string(1 << 20, 'z') + "\r\n--B--";
    MultipartParser p("B");
    Recorder r;
    std::size_t calls_before_end = 0;
    for (std::size_t at = 0; at < body.size(); at += 4096) {
        ASSERT_NE(p.feed(std::string_view(body).substr(at, 4096), r),
                  MultipartParser::Result::error);
        if (r.open) calls_before_end = r.data_calls;
    }
    EXPECT_EQ(p.finish(), MultipartParser::Result::done);
    EXPECT_GT(calls_before_end, 200u);
    ASSERT_EQ(r.parts.size(), 1u);
    EXPECT_EQ(r.parts[0].data.size(), std::size_t{1} << 20);
}

TEST(MultipartValid, DoneThenEpilogueIgnored) {
    MultipartParser p("B");
    Recorder r;
    EXPECT_EQ(p.feed("--B\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--B--", r),
              MultipartParser::Result::done);
    EXPECT_TRUE(p.done());
    EXPECT_EQ(p.feed("\r\n--B\r\nContent-Disposition: form-data; name=b\r\n\r\nw\r\n--B--", r),
              MultipartParser::Result::done);
    EXPECT_EQ(p.finish(), MultipartParser::Result::done);
    EXPECT_EQ(r.parts.size(), 1u);
}

// ---- Malformed bodies -------------------------------------------------------------------

struct BadRow {
    const char* name;
    std::string body;
    std::string_view message;  // a substring of error_message()
};

std::vector<BadRow> bad_rows() {
    const std::string cd = "Content-Disposition: form-data; name=\"a\"\r\n";
    return {
        {"empty", "", "no multipart boundary"},
        {"noDelimiter", "just some text\r\n", "no multipart boundary"},
        {"noCloseDelimiter", "--B\r\n" + cd + "\r\nvalue", "truncated"},
        {"noCloseAfterCrlf", "--B\r\n" + cd + "\r\nvalue\r\n", "truncated"},
        {"closeDelimiterCut", "--B\r\n" + cd + "\r\nvalue\r\n--B-", "truncated"},
        {"endsAfterDelimiter", "--B\r\n" + cd + "\r\nvalue\r\n--B", "truncated"},
        {"endsInHeaders", "--B\r\n" + cd, "truncated"},
        {"endsAfterFirstDelimiterLine", "--B\r\n", "truncated"},
        {"textAfterDelimiter", "--Bx\r\n" + cd + "\r\nv\r\n--B--", "after a boundary"},
        {"longerBoundaryInData", "--B\r\n" + cd + "\r\nv\r\n--Bogus\r\n--B--", "after a boundary"},
        {"singleDashClose", "--B\r\n" + cd + "\r\nv\r\n--B-x", "after a boundary"},
        {"paddingThenText", "--B  x\r\n" + cd + "\r\nv\r\n--B--", "after a boundary"},
        {"delimiterLineBareCr", "--B\rx" + cd + "\r\nv\r\n--B--", "not ended by CRLF"},
        {"delimiterLineBareLf", "--B\n" + cd + "\r\nv\r\n--B--", "after a boundary"},
        {"headerBareLf", "--B\r\nContent-Disposition: form-data; name=a\n\r\nv\r\n--B--",
         "bare LF"},
        {"headerNoColon", "--B\r\n" + cd + "garbage line\r\n\r\nv\r\n--B--", "without a field"},
        {"headerEmptyName", "--B\r\n" + cd + ": x\r\n\r\nv\r\n--B--", "without a field"},
        {"headerSpaceInName", "--B\r\nContent-Disposition : form-data; name=a\r\n\r\nv\r\n--B--",
         "bad field name"},
        {"headerControlChar", "--B\r\n" + cd + "X: a\x01z\r\n\r\nv\r\n--B--", "control character"},
        {"headerNul", "--B\r\n" + cd + "X: a\0z\r\n\r\nv\r\n--B--"s, "control character"},
        {"headerBareCrInValue", "--B\r\n" + cd + "X: a\rz\r\n\r\nv\r\n--B--", "control character"},
        {"continuationFirst", "--B\r\n continued\r\n" + cd + "\r\nv\r\n--B--", "continuation"},
        {"noDisposition", "--B\r\nContent-Type: text/plain\r\n\r\nv\r\n--B--",
         "without Content-Disposition"},
        {"noHeadersAtAll", "--B\r\n\r\nv\r\n--B--", "without Content-Disposition"},
        {"attachment", "--B\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--B--",
         "not form-data"},
        {"noName", "--B\r\nContent-Disposition: form-data; filename=a\r\n\r\nv\r\n--B--",
         "no name"},
        {"twoNames", "--B\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\nv\r\n--B--",
         "repeated"},
        {"twoFilenames",
         "--B\r\nContent-Disposition: form-data; name=a; filename=x; filename=y\r\n\r\nv\r\n--B--",
         "repeated"},
        {"twoDispositions", "--B\r\n" + cd + cd + "\r\nv\r\n--B--", "two Content-Disposition"},
        {"twoContentTypes",
         "--B\r\n" + cd + "Content-Type: a/b\r\nContent-Type: c/d\r\n\r\nv\r\n--B--",
         "two Content-Type"},
        {"unterminatedQuote", "--B\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--B--",
         "malformed Content-Disposition"},
        {"paramWithoutValue", "--B\r\nContent-Disposition: form-data; name\r\n\r\nv\r\n--B--",
         "malformed Content-Disposition"},
        {"junkAfterParam", "--B\r\nContent-Disposition: form-data; name=a b\r\n\r\nv\r\n--B--",
         "malformed Content-Disposition"},
        {"filenameStarBadCharset",
         "--B\r\nContent-Disposition: form-data; name=a; filename*=KOI8-R''%c1\r\n\r\nv\r\n--B--",
         "filename*"},
        {"filenameStarBadEscape",
         "--B\r\nContent-Disposition: form-data; name=a; filename*=UTF-8''%zz\r\n\r\nv\r\n--B--",
         "filename*"},
        {"filenameStarCutEscape",
         "--B\r\nContent-Disposition: form-data; name=a; filename*=UTF-8''ab%4\r\n\r\nv\r\n--B--",
         "filename*"},
        {"filenameStarNoQuotes",
         "--B\r\nContent-Disposition: form-data; name=a; filename*=UTF-8%41\r\n\r\nv\r\n--B--",
         "filename*"},
        {"filenameStarBadUtf8",
         "--B\r\nContent-Disposition: form-data; name=a; filename*=UTF-8''%c3%28\r\n\r\nv\r\n--B--",
         "filename*"},
    };
}

TEST(MultipartMalformed, Table) {
    for (const BadRow& row : bad_rows()) {
        SCOPED_TRACE(row.name);
        for (const bool bytewise : {false, true}) {
            const Outcome o = run(
                "B", row.body, bytewise ? every_byte(row.body.size()) : std::vector<std::size_t>{});
            EXPECT_EQ(o.result, MultipartParser::Result::error);
            EXPECT_EQ(o.status, Status::BadRequest);
            EXPECT_NE(o.message.find(row.message), std::string::npos) << o.message;
            EXPECT_TRUE(o.order_ok);
        }
    }
}

TEST(MultipartMalformed, ErrorIsSticky) {
    MultipartParser p("B");
    Recorder r;
    EXPECT_EQ(p.feed("--Bx", r), MultipartParser::Result::error);
    EXPECT_EQ(p.feed("\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--B--", r),
              MultipartParser::Result::error);
    EXPECT_EQ(p.finish(), MultipartParser::Result::error);
    EXPECT_TRUE(r.parts.empty());
}

TEST(MultipartMalformed, HandlerRefusalStops) {
    MultipartParser p("B");
    Recorder r;
    r.refuse_at_begin = 1;
    EXPECT_EQ(p.feed("--B\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--B\r\n"
                     "Content-Disposition: form-data; name=b\r\n\r\n2\r\n--B--",
                     r),
              MultipartParser::Result::error);
    EXPECT_EQ(p.error(), Status::InternalServerError);
    EXPECT_EQ(r.parts.size(), 1u);
}

TEST(MultipartMalformed, InvalidBoundaryThrows) {
    EXPECT_THROW(MultipartParser(""), std::invalid_argument);
    EXPECT_THROW(MultipartParser(std::string(71, 'a')), std::invalid_argument);
    EXPECT_THROW(MultipartParser("a\r\nb"), std::invalid_argument);
    EXPECT_THROW(MultipartParser("ends with space "), std::invalid_argument);
    EXPECT_NO_THROW(MultipartParser(std::string(70, 'a')));
}

// ---- Limits -------------------------------------------------------------------------------

std::string field_part(std::string_view name, std::string_view value) {
    return "--B\r\nContent-Disposition: form-data; name=\"" + std::string(name) + "\"\r\n\r\n" +
           std::string(value) + "\r\n";
}

std::string file_part(std::string_view name, std::string_view value) {
    return "--B\r\nContent-Disposition: form-data; name=\"" + std::string(name) +
           "\"; filename=\"f.bin\"\r\n\r\n" + std::string(value) + "\r\n";
}

struct LimitRow {
    const char* name;
    MultipartLimits limits;
    std::string at_limit;    // passes
    std::string over_limit;  // 413
    std::string_view message;
};

std::vector<LimitRow> limit_rows() {
    const auto with = [](auto set) {
        MultipartLimits l;
        set(l);
        return l;
    };
    const std::string header = "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n";
    const std::size_t header_section = header.size() - 5;  // after "--B\r\n"
    const std::string small = field_part("a", std::string(40, 'x')) + "--B--";
    return {
        {"parts", with([](MultipartLimits& l) { l.max_parts = 3; }),
         field_part("a", "1") + field_part("b", "2") + file_part("c", "3") + "--B--",
         field_part("a", "1") + field_part("b", "2") + file_part("c", "3") + field_part("d", "") +
             "--B--",
         "more than 3 parts"},
        {"partHeaderBytes",
         with([&](MultipartLimits& l) { l.max_part_header_bytes = header_section; }),
         field_part("a", "v") + "--B--", field_part("ab", "v") + "--B--", "part headers larger"},
        {"fieldSize", with([](MultipartLimits& l) { l.max_field_size = 10; }),
         field_part("a", "0123456789") + file_part("f", std::string(100, 'x')) + "--B--",
         field_part("a", "0123456789a") + "--B--", "field 'a' is larger than 10"},
        {"fieldsTotal", with([](MultipartLimits& l) { l.max_fields_total_size = 10; }),
         field_part("a", "01234") + field_part("b", "56789") + file_part("f", "xxxxxxxxxxx") +
             "--B--",
         field_part("a", "01234") + field_part("b", "567890") + "--B--", "in total"},
        {"fileSize", with([](MultipartLimits& l) { l.max_file_size = 1000; }),
         file_part("f", std::string(1000, '\r')) + file_part("g", std::string(1000, 'y')) + "--B--",
         file_part("f", std::string(999, 'x')) + file_part("g", std::string(1001, '-')) + "--B--",
         "file 'g' is larger than 1000"},
        {"totalSize", with([&](MultipartLimits& l) { l.max_total_size = small.size(); }), small,
         field_part("a", std::string(41, 'x')) + "--B--", "multipart body larger"},
        {"totalCountsEpilogue",
         with([&](MultipartLimits& l) { l.max_total_size = small.size() + 10; }),
         small + std::string(10, 'e'), small + std::string(11, 'e'), "multipart body larger"},
    };
}

TEST(MultipartLimitsTest, AtAndOverEachLimit) {
    for (const LimitRow& row : limit_rows()) {
        SCOPED_TRACE(row.name);
        for (const bool bytewise : {false, true}) {
            const Outcome ok =
                run("B", row.at_limit,
                    bytewise ? every_byte(row.at_limit.size()) : std::vector<std::size_t>{},
                    row.limits);
            EXPECT_EQ(ok.result, MultipartParser::Result::done) << ok.message;
            const Outcome over =
                run("B", row.over_limit,
                    bytewise ? every_byte(row.over_limit.size()) : std::vector<std::size_t>{},
                    row.limits);
            EXPECT_EQ(over.result, MultipartParser::Result::error);
            EXPECT_EQ(over.status, Status::PayloadTooLarge);
            EXPECT_NE(over.message.find(row.message), std::string::npos) << over.message;
        }
    }
}

TEST(MultipartLimitsTest, TotalLimitOutcomeDoesNotDependOnSplitting) {
    // Bytes past max_total_size are refused only after the ones before them were parsed: a
    // body malformed before the limit is a 400 however it arrives, one malformed after it a
    // 413, and a long name truncated by the limit always ends the same way.
    const std::string early = "--Bx" + std::string(100, 'p');
    const std::string late = field_part("a", "1") + "--Bx" + std::string(100, 'p');
    MultipartLimits l;
    l.max_total_size = 50;
    for (const auto& [body, status] :
         {std::pair{early, Status::BadRequest}, std::pair{late, Status::PayloadTooLarge}}) {
        for (const std::vector<std::size_t>& cuts :
             {std::vector<std::size_t>{}, every_byte(body.size()), std::vector<std::size_t>{49},
              std::vector<std::size_t>{50}, std::vector<std::size_t>{51}}) {
            const Outcome o = run("B", body, cuts, l);
            EXPECT_EQ(o.result, MultipartParser::Result::error);
            EXPECT_EQ(o.status, status) << o.message;
        }
    }
}

TEST(MultipartLimitsTest, DefaultsAreDocumentedValues) {
    const MultipartLimits l;
    EXPECT_EQ(l.max_parts, 100u);
    EXPECT_EQ(l.max_part_header_bytes, 8u * 1024);
    EXPECT_EQ(l.max_field_size, 64u * 1024);
    EXPECT_EQ(l.max_fields_total_size, 1024u * 1024);
    EXPECT_EQ(l.max_file_size, std::uint64_t{128} << 20);
    EXPECT_EQ(l.max_total_size, std::uint64_t{256} << 20);
}

TEST(MultipartLimitsTest, HugeHeaderStopsEarly) {
    // A part header that never ends is refused once it passes the limit, not at the end.
    MultipartParser p("B");
    Recorder r;
    ASSERT_EQ(p.feed("--B\r\nX: ", r), MultipartParser::Result::need_more);
    const std::string chunk(1024, 'a');
    MultipartParser::Result res = MultipartParser::Result::need_more;
    int fed = 0;
    while (res == MultipartParser::Result::need_more && fed < 100) res = p.feed(chunk, r), ++fed;
    EXPECT_EQ(res, MultipartParser::Result::error);
    EXPECT_EQ(p.error(), Status::PayloadTooLarge);
    EXPECT_LE(fed, 9);
}

// ---- Content-Type -------------------------------------------------------------------------

struct TypeRow {
    std::string value;
    Status status;
    std::string boundary;  // on OK
};

TEST(MultipartContentType, Table) {
    const TypeRow rows[] = {
        {"multipart/form-data; boundary=abc", Status::OK, "abc"},
        {"Multipart/Form-Data; BOUNDARY=abc", Status::OK, "abc"},
        {"multipart/form-data;boundary=\"a b:c\"", Status::OK, "a b:c"},
        {"multipart/form-data; charset=utf-8; boundary=\"x\\\"y\"", Status::BadRequest, ""},
        {"multipart/form-data; boundary=----=_Part_0_1.2", Status::OK, "----=_Part_0_1.2"},
        {"multipart/form-data; boundary=abc ; charset=utf-8", Status::OK, "abc"},
        {"  multipart/form-data ; boundary=abc", Status::OK, "abc"},
        {"multipart/form-data; boundary=" + std::string(70, 'z'), Status::OK, std::string(70, 'z')},
        {"multipart/form-data; boundary=" + std::string(71, 'z'), Status::BadRequest, ""},
        {"multipart/form-data; boundary=\"\"", Status::BadRequest, ""},
        {"multipart/form-data; boundary=\"ends \"", Status::BadRequest, ""},
        {"multipart/form-data; boundary=a{b}", Status::BadRequest, ""},
        {"multipart/form-data", Status::BadRequest, ""},
        {"multipart/form-data; charset=utf-8", Status::BadRequest, ""},
        {"multipart/form-data; boundary=a; boundary=b", Status::BadRequest, ""},
        {"multipart/form-data; boundary=\"abc", Status::BadRequest, ""},
        {"multipart/form-data; =abc", Status::BadRequest, ""},
        {"multipart/form-data x; boundary=abc", Status::BadRequest, ""},
        {"", Status::UnsupportedMediaType, ""},
        {"application/x-www-form-urlencoded", Status::UnsupportedMediaType, ""},
        {"multipart/mixed; boundary=abc", Status::UnsupportedMediaType, ""},
        {"multipart/form-datax; boundary=abc", Status::UnsupportedMediaType, ""},
        {"multipart", Status::UnsupportedMediaType, ""},
        {"text/plain", Status::UnsupportedMediaType, ""},
    };
    for (const TypeRow& row : rows) {
        SCOPED_TRACE(std::string(row.value));
        std::string boundary, why;
        EXPECT_EQ(parse_multipart_content_type(row.value, boundary, why), row.status) << why;
        if (row.status == Status::OK)
            EXPECT_EQ(boundary, row.boundary);
        else
            EXPECT_FALSE(why.empty());
    }
}

// ---- File names ---------------------------------------------------------------------------

TEST(MultipartFilename, SanitizeTable) {
    const std::pair<std::string, std::string> rows[] = {
        {"report.pdf", "report.pdf"},
        {"/etc/passwd", "passwd"},
        {"../../../etc/passwd", "passwd"},
        {"..\\..\\boot.ini", "boot.ini"},
        {"C:\\Users\\me\\a.txt", "a.txt"},
        {"dir/", ""},
        {"..", ""},
        {".", ""},
        {"...", "..."},
        {".hidden", ".hidden"},
        {"  spaced name.txt  ", "spaced name.txt"},
        {"a\0b.txt"s, "ab.txt"},
        {"line\r\nbreak\t.txt", "linebreak.txt"},
        {"del\x7f.txt", "del.txt"},
        {"c1\xc2\x85.txt", "c1.txt"},                            // U+0085 NEL
        {"evil\xe2\x80\xaetxt.exe", "eviltxt.exe"},              // U+202E RLO
        {"bad\xff\xfe.txt", "bad\xef\xbf\xbd\xef\xbf\xbd.txt"},  // not UTF-8
        {"overlong\xc0\xaf.txt", "overlong\xef\xbf\xbd\xef\xbf\xbd.txt"},
        {"\xe2\x82\xac.txt", "\xe2\x82\xac.txt"},
        {"\xf0\x9f\x98\x80.png", "\xf0\x9f\x98\x80.png"},
        {"", ""},
        {std::string(300, 'a'), std::string(255, 'a')},
        {std::string(254, 'a') + "\xe2\x82\xac", std::string(254, 'a')},  // cut between bytes
        {std::string(254, 'a') + "  tail", std::string(254, 'a')},        // cut, then trimmed
    };
    for (const auto& [in, out] : rows) EXPECT_EQ(sanitize_filename(in), out) << in;
}

TEST(MultipartFilename, ExtValueTable) {
    const std::pair<std::string_view, std::string> ok[] = {
        {"UTF-8''%e2%82%ac%20rates", "\xe2\x82\xac rates"},
        {"utf-8'en'plain.txt", "plain.txt"},
        {"UTF-8''", ""},
        {"ISO-8859-1''%A3%FF", "\xc2\xa3\xc3\xbf"},
        {"UTF-8''a%2Fb", "a/b"},
    };
    for (const auto& [in, out] : ok) {
        std::string got;
        EXPECT_TRUE(decode_ext_value(in, got)) << in;
        EXPECT_EQ(got, out) << in;
    }
    for (std::string_view bad : {"UTF-8'%41", "%41", "US-ASCII''a", "UTF-8''%", "UTF-8''%4",
                                 "UTF-8''%g0", "UTF-8''%ff", "UTF-8''a b", "UTF-8''%ed%a0%80"}) {
        std::string got;
        EXPECT_FALSE(decode_ext_value(bad, got)) << bad;
    }
}

// ---- Random bodies ------------------------------------------------------------------------

// Bodies built from random parts whose data is full of near-delimiters, fed in random
// pieces: the parser gives back exactly the parts it was built from.
TEST(MultipartRandom, RoundTrip) {
    std::mt19937 rng(20240611);
    const std::string boundary = "q1-w2";
    const std::string near[] = {"\r",    "\n",         "\r\n",    "-",          "--",
                                "\r\n-", "\r\n--",     "\r\n--q", "\r\n--q1-w", "--q1-w2",
                                "q1-w2", "\r\r\n--q1", "x",       "\0"s};
    for (int round = 0; round < 300; ++round) {
        std::vector<Part> parts;
        std::string body = rng() % 2 ? "preamble \r\n--q1-w\r\n" : "";
        const std::size_t n = rng() % 5;  // no parts at all is a valid body too
        for (std::size_t i = 0; i < n; ++i) {
            Part p;
            p.name = "f";  // (not "f" + string: GCC 12 -O3 warns -Wrestrict there)
            p.name += std::to_string(i);
            p.is_file = rng() % 2;
            if (p.is_file) p.filename = std::string("n").append(std::to_string(i)).append(".bin");
            const std::size_t pieces = rng() % 30;
            for (std::size_t k = 0; k < pieces; ++k) p.data += near[rng() % std::size(near)];
            if (p.data.find("\r\n--" + boundary) != std::string::npos) p.data = "x";
            body += (body.empty() ? "--" : "\r\n--") + boundary +
                    "\r\nContent-Disposition: form-data; name=\"" + p.name + "\"" +
                    (p.is_file ? "; filename=\"" + p.filename + "\"" : "") + "\r\n\r\n" + p.data;
            parts.push_back(std::move(p));
        }
        body += (body.empty() ? "--" : "\r\n--") + boundary + "--";
        if (rng() % 2) body += "\r\nepilogue --q1-w2\r\n";
        const Outcome o = run(boundary, body, random_cuts(body.size(), rng));
        ASSERT_EQ(o.result, MultipartParser::Result::done) << o.message << " in " << body;
        ASSERT_EQ(o.parts, parts) << body;
        ASSERT_TRUE(o.order_ok);
    }
}

}  // namespace
}  // namespace vela
