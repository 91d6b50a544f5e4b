#include "vela/middleware/compression.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <stdexcept>

#include "vela/base/ascii.hpp"
#include "vela/files/mime.hpp"
#include "vela/http/conditional.hpp"
#include "vela/server/stream.hpp"

namespace vela {

namespace {

using compress::Coding;

bool type_allowed(std::string_view content_type, const std::vector<std::string>& types) {
    if (types.empty()) return files::compressible(content_type);
    const std::string_view base = ascii::trim_ows(content_type.substr(0, content_type.find(';')));
    for (const std::string& t : types) {
        if (t.size() >= 2 && t.ends_with("/*")) {
            const std::string_view major(t.data(), t.size() - 1);  // "text/"
            if (base.size() > major.size() && ascii::iequals(base.substr(0, major.size()), major))
                return true;
        } else if (ascii::iequals(base, t)) {
            return true;
        }
    }
    return false;
}

int level_for(Coding c, const CompressionOptions& o) noexcept {
    switch (c) {
        case Coding::gzip:
            return o.gzip_level;
        case Coding::br:
            return o.br_level;
        case Coding::zstd:
            return o.zstd_level;
        default:
            return -1;
    }
}

// One encoder per coding per thread, reset between responses (a new zlib or zstd context
// per response would cost more than compressing a small body).
compress::Encoder& pooled_encoder(Coding c, int level) {
    thread_local std::unique_ptr<compress::Encoder> encoders[4];
    thread_local int levels[4];
    const auto i = static_cast<std::size_t>(c);
    if (!encoders[i] || levels[i] != level) {
        encoders[i] = compress::Encoder::create(c, level);
        levels[i] = level;
    } else {
        encoders[i]->reset();
    }
    return *encoders[i];
}

// "abc" -> "abc-gzip", W/"abc" -> W/"abc-gzip": the compressed variant is another
// representation and must not share the identity one's validator.
std::string variant_etag(std::string_view etag, Coding c) {
    if (etag.size() < 2 || etag.back() != '"') return std::string(etag);
    std::string out(etag.substr(0, etag.size() - 1));
    out.append("-").append(compress::name(c)).append("\"");
    return out;
}

bool read_all(const OpenFile& f, std::uint64_t offset, std::uint64_t length, std::string& out) {
    if (const std::string* mem = f.content()) {
        if (offset + length > mem->size()) return false;
        out.assign(*mem, static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
        return true;
    }
    out.resize(static_cast<std::size_t>(length));
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t n =
            ::pread(f.fd(), out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

std::function<void(Request&, Response&)> compression(CompressionOptions options) {
    // Levels are checked now, not at the first request.
    for (const auto* list : {&options.preference, &options.stream_preference})
        for (Coding c : *list)
            if (c != Coding::identity) (void)compress::Encoder::create(c, level_for(c, options));
    auto o = std::make_shared<const CompressionOptions>(std::move(options));
    return [o](Request& req, Response& res) {
        const int status = code(res.status());
        if (status < 200 || status == 204 || status == 206 || status == 304) return;
        if (!res.header("Content-Encoding").empty()) return;  // the handler's own coding wins
        const std::string_view type = res.content_type();
        if (type.empty() || !type_allowed(type, o->types)) return;
        if (ascii::list_has(res.header("Cache-Control"), "no-transform")) return;
        FileBody* fb = res.file_body();
        // A file body made by hand with several parts (or heads) is sent as it is.
        if (fb && (fb->parts.size() != 1 || !fb->parts.front().head.empty() || !fb->tail.empty()))
            return;
        const bool streamed = res.streaming();
        const std::uint64_t size = fb ? fb->length() : res.body().size();
        if (!streamed && size < o->min_size) return;
        // From here on, what is sent depends on Accept-Encoding.
        if (!ascii::list_has(res.header("Vary"), "Accept-Encoding"))
            res.add_header("Vary", "Accept-Encoding");
        const std::string_view accept = req.header("Accept-Encoding");
        if (accept.empty()) return;
        // Streams (also large files, compressed as a stream) hold their encoder for as long
        // as they last: they choose from the cheaper list.
        const bool as_stream = streamed || (fb && size > o->max_file_size);
        if (as_stream && o->stream_preference.empty()) return;
        const Coding c = compress::negotiate(compress::AcceptEncoding(accept),
                                             as_stream ? o->stream_preference : o->preference);
        if (c == Coding::identity) return;
        const int level = level_for(c, *o);

        std::string etag(fb ? fb->etag() : res.header("ETag"));
        if (!etag.empty()) {
            etag = variant_etag(etag, c);
            res.set_header("ETag", etag);
        }
        res.remove_header("Accept-Ranges");  // the compressed whole is sent, never a range
        res.add_header("Content-Encoding", compress::name(c));

        // The client revalidates the variant with the tag it got ("v1-gzip"), which neither
        // the handler nor the server's file semantics know: the variant's preconditions are
        // answered here, for 200s only (RFC 9110 13.2.1: a 404 page from a file stays a 404).
        if (status == 200 && !streamed && (fb ? fb->conditional : !etag.empty())) {
            std::optional<std::int64_t> modified;
            if (fb) {
                modified = fb->last_modified();
            } else if (const std::string_view lm = res.header("Last-Modified"); !lm.empty()) {
                modified = parse_http_date(lm);
            }
            if (answer_preconditions(req, res, etag, modified)) return;
        }
        if (fb) {
            std::shared_ptr<const OpenFile> file = fb->file;
            const std::uint64_t offset = fb->parts.empty() ? 0 : fb->parts.front().offset;
            const std::uint64_t length = fb->parts.empty() ? 0 : fb->parts.front().length;
            res.clear_file_body();
            if (length <= o->max_file_size) {
                std::string plain;
                if (!read_all(*file, offset, length, plain))
                    throw std::runtime_error("compression: the file ended early");
                std::string out;
                compress::Encoder& e = pooled_encoder(c, level);
                e.write(plain, out);
                e.finish(out);
                res.set_body(std::move(out));
                return;
            }
            // Large: read and compress 64 KiB at a time as the client takes it.
            struct FileStream {
                std::shared_ptr<const OpenFile> file;
                std::uint64_t at, end;
                std::unique_ptr<compress::Encoder> enc;
                bool finished = false;
            };
            auto st = std::make_shared<FileStream>(
                FileStream{file, offset, offset + length, compress::Encoder::create(c, level)});
            res.set_body_source([st]() -> std::optional<std::string> {
                std::string out, plain;
                while (out.empty()) {
                    if (st->finished) return std::nullopt;
                    if (st->at == st->end) {
                        st->enc->finish(out);
                        st->finished = true;
                        break;
                    }
                    const std::uint64_t n = std::min<std::uint64_t>(64 * 1024, st->end - st->at);
                    if (!read_all(*st->file, st->at, n, plain))
                        throw std::runtime_error("compression: the file ended early");
                    st->at += n;
                    st->enc->write(plain, out);
                }
                return out;
            });
            return;
        }
        if (streamed) {
            // Each piece is flushed, so an event or a log line reaches the client at once.
            std::shared_ptr<compress::Encoder> enc = compress::Encoder::create(c, level);
            res.set_body_source(
                transform_body(res.take_body_source(), [enc](std::string_view piece, bool last) {
                    std::string out;
                    if (last) {
                        enc->finish(out);
                    } else {
                        enc->write(piece, out, true);
                    }
                    return out;
                }));
            return;
        }
        std::string out = body_string(res.body().size() / 2 + 64);
        compress::Encoder& e = pooled_encoder(c, level);
        e.write(res.body(), out);
        e.finish(out);
        recycle_body(std::move(res.mutable_body()));
        res.set_body(std::move(out));
    };
}

std::function<std::optional<Response>(Request&)> request_decompression(
    RequestDecompressionOptions options) {
    auto o = std::make_shared<const RequestDecompressionOptions>(std::move(options));
    std::string accepted;
    for (Coding c : o->codings) {
        if (!accepted.empty()) accepted += ", ";
        accepted += compress::name(c);
    }
    return [o, accepted](Request& req) -> std::optional<Response> {
        const std::string_view ce = req.header("Content-Encoding");
        if (ce.empty() || req.body_streamed() || req.body().empty()) return std::nullopt;
        std::optional<Coding> coding;
        int count = 0;
        bool unsupported = false;
        ascii::for_each_list_item(ce, [&](std::string_view item) {
            const std::optional<Coding> c = compress::parse_coding(item);
            if (!c || (*c != Coding::identity &&
                       std::find(o->codings.begin(), o->codings.end(), *c) == o->codings.end())) {
                unsupported = true;
            } else if (*c != Coding::identity) {
                ++count;
                coding = c;
            }
        });
        if (unsupported || count > 1) {
            // RFC 9110 15.5.16: 415, naming what would have been understood.
            Response r =
                Response::text("Unsupported Content-Encoding", Status::UnsupportedMediaType);
            r.add_header("Accept-Encoding", accepted);
            return r;
        }
        if (!coding) return std::nullopt;
        std::string out;
        switch (compress::decompress(*coding, req.body(), out, o->max_size)) {
            case compress::DecodeResult::done: {
                req.set_owned_body(std::move(out));
                // The fields described the encoded body: a second decompression (or a handler
                // trusting Content-Length) must not see them.
                auto& fields = req.mutable_headers();
                std::erase_if(fields, [](const Header& h) {
                    return ascii::iequals(h.name, "Content-Encoding") ||
                           ascii::iequals(h.name, "Content-Length");
                });
                return std::nullopt;
            }
            case compress::DecodeResult::too_large:
                return Response::text("Payload Too Large: the decompressed body is over the limit",
                                      Status::PayloadTooLarge);
            default:
                return Response::text("Bad Request: the body is not valid " +
                                          std::string(compress::name(*coding)) + " data",
                                      Status::BadRequest);
        }
    };
}

}  // namespace vela
