// HPACK: vela's codec vs nghttp2's deflater and inflater, in one binary, on a browser-like
// request and a typical response.
//
// Decoding, two blocks per message, both made by vela's encoder on one connection: the first
// (every field a literal, Huffman-coded, most of them added to the dynamic table) and the
// second (the same message again: indexed fields, and literals for what changes each time,
// like :path and content-length). The first is decoded again and again into the same table,
// so each pass adds and evicts entries as a long connection does; the second changes nothing.
// Encoding is the steady state: the same message on one connection, block after block.

#include <benchmark/benchmark.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vela/http/hpack.hpp"

namespace {

using vela::hpack::EncoderField;

const std::vector<EncoderField> kRequest = {
    {":method", "GET"},
    {":scheme", "https"},
    {":path", "/assets/app.js?v=3"},
    {":authority", "www.example.com"},
    {"user-agent",
     "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/120.0.0.0 Safari/537.36"},
    {"accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
    {"accept-encoding", "gzip, deflate, br"},
    {"accept-language", "en-US,en;q=0.9"},
    {"cookie", "session=3f2a9c1e7b5d4a60b8e1f0c2d3a4b5c6; theme=dark"},
};
const std::vector<EncoderField> kResponse = {
    {":status", "200"},         {"content-type", "text/html; charset=utf-8"},
    {"content-length", "1234"}, {"date", "Sat, 05 Dec 2026 16:00:00 GMT"},
    {"server", "vela"},
};

struct Blocks {
    std::string first;
    std::string second;
};

Blocks blocks_of(const std::vector<EncoderField>& fields) {
    vela::hpack::Encoder e;
    Blocks b;
    e.encode(fields, b.first);
    e.encode(fields, b.second);
    return b;
}

std::size_t message_bytes(const std::vector<EncoderField>& fields) {
    std::size_t n = 0;
    for (const EncoderField& f : fields) n += f.name.size() + f.value.size();
    return n;
}

void decode_vela(benchmark::State& s, const std::vector<EncoderField>& fields, bool first) {
    const Blocks b = blocks_of(fields);
    vela::hpack::Decoder d;
    std::size_t total = 0;
    if (d.decode(b.first, [](const auto&) {}) != vela::hpack::Error::none) std::abort();
    for (auto _ : s) {
        const auto e =
            d.decode(first ? b.first : b.second, [&](const vela::hpack::DecodedField& f) {
                total += f.value.size();
                benchmark::DoNotOptimize(f.name.data());
            });
        if (e != vela::hpack::Error::none) std::abort();
    }
    benchmark::DoNotOptimize(total);
    s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * message_bytes(fields)));
}

bool inflate(nghttp2_hd_inflater* p, const std::string& block, std::size_t& total) {
    const auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
    std::size_t left = block.size();
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        const auto rv = nghttp2_hd_inflate_hd2(p, &nv, &flags, in, left, 1);
        if (rv < 0) return false;
        in += rv;
        left -= static_cast<std::size_t>(rv);
        if (flags & NGHTTP2_HD_INFLATE_EMIT) {
            total += nv.valuelen;
            benchmark::DoNotOptimize(nv.name);
        }
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(p);
            return true;
        }
        if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return false;
    }
}

void decode_nghttp2(benchmark::State& s, const std::vector<EncoderField>& fields, bool first) {
    const Blocks b = blocks_of(fields);
    nghttp2_hd_inflater* p = nullptr;
    nghttp2_hd_inflate_new(&p);
    std::size_t total = 0;
    if (!inflate(p, b.first, total)) std::abort();
    for (auto _ : s) {
        if (!inflate(p, first ? b.first : b.second, total)) std::abort();
    }
    benchmark::DoNotOptimize(total);
    nghttp2_hd_inflate_del(p);
    s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * message_bytes(fields)));
}

void encode_vela(benchmark::State& s, const std::vector<EncoderField>& fields) {
    vela::hpack::Encoder e;
    std::string out;
    for (auto _ : s) {
        out.clear();
        e.encode(fields, out);
        benchmark::DoNotOptimize(out.data());
    }
    s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * message_bytes(fields)));
}

void encode_nghttp2(benchmark::State& s, const std::vector<EncoderField>& fields) {
    std::vector<nghttp2_nv> nva;
    for (const EncoderField& f : fields) {
        nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.name.data())),
                       reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.value.data())),
                       f.name.size(), f.value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_hd_deflater* p = nullptr;
    nghttp2_hd_deflate_new(&p, 4096);
    std::vector<std::uint8_t> out(nghttp2_hd_deflate_bound(p, nva.data(), nva.size()));
    for (auto _ : s) {
        const auto n = nghttp2_hd_deflate_hd(p, out.data(), out.size(), nva.data(), nva.size());
        if (n < 0) std::abort();
        benchmark::DoNotOptimize(out.data());
    }
    nghttp2_hd_deflate_del(p);
    s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * message_bytes(fields)));
}

void BM_DecodeRequestFirst_vela(benchmark::State& s) { decode_vela(s, kRequest, true); }
void BM_DecodeRequestFirst_nghttp2(benchmark::State& s) { decode_nghttp2(s, kRequest, true); }
void BM_DecodeRequestRepeat_vela(benchmark::State& s) { decode_vela(s, kRequest, false); }
void BM_DecodeRequestRepeat_nghttp2(benchmark::State& s) { decode_nghttp2(s, kRequest, false); }
void BM_DecodeResponseFirst_vela(benchmark::State& s) { decode_vela(s, kResponse, true); }
void BM_DecodeResponseFirst_nghttp2(benchmark::State& s) { decode_nghttp2(s, kResponse, true); }
void BM_DecodeResponseRepeat_vela(benchmark::State& s) { decode_vela(s, kResponse, false); }
void BM_DecodeResponseRepeat_nghttp2(benchmark::State& s) { decode_nghttp2(s, kResponse, false); }
void BM_EncodeRequest_vela(benchmark::State& s) { encode_vela(s, kRequest); }
void BM_EncodeRequest_nghttp2(benchmark::State& s) { encode_nghttp2(s, kRequest); }
void BM_EncodeResponse_vela(benchmark::State& s) { encode_vela(s, kResponse); }
void BM_EncodeResponse_nghttp2(benchmark::State& s) { encode_nghttp2(s, kResponse); }

BENCHMARK(BM_DecodeRequestFirst_vela);
BENCHMARK(BM_DecodeRequestFirst_nghttp2);
BENCHMARK(BM_DecodeRequestRepeat_vela);
BENCHMARK(BM_DecodeRequestRepeat_nghttp2);
BENCHMARK(BM_DecodeResponseFirst_vela);
BENCHMARK(BM_DecodeResponseFirst_nghttp2);
BENCHMARK(BM_DecodeResponseRepeat_vela);
BENCHMARK(BM_DecodeResponseRepeat_nghttp2);
BENCHMARK(BM_EncodeRequest_vela);
BENCHMARK(BM_EncodeRequest_nghttp2);
BENCHMARK(BM_EncodeResponse_vela);
BENCHMARK(BM_EncodeResponse_nghttp2);

}  // namespace
