// JWT bearer authentication end to end: a real App on loopback protects /api with
// jwt_auth(); curl sends `Authorization: Bearer ...` and the test checks the status, the
// WWW-Authenticate challenge (RFC 6750 3) and that the claims reach the handler.
//
// The keys are made by the openssl CLI, and tokens come from three independent signers as
// well as jwt::sign: PyJWT (Debian python3-jwt) for HS256, RS256 and ES256, and
// `openssl dgst -sha256 -sign` for RS256 (and for ES256, whose DER output must be refused:
// JWS wants r||s). PyJWT also verifies the tokens jwt::sign makes, so both directions are
// checked against another implementation.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "vela/crypto/crypto.hpp"
#include "vela/json/json.hpp"
#include "vela/middleware/jwt.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

using json::Value;

bool have_pyjwt() { return succeeds("/usr/bin/python3 -c 'import jwt, cryptography'"); }

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::int64_t now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

const std::string kSecret = "e2e-secret-0123456789-abcdefghijklmnop";

// Keys made by the openssl CLI in a temporary directory, shared by the tests of this file.
struct Keys {
    std::string dir;
    std::string rsa_key, rsa_pub, ec_key, ec_pub;  // file paths

    Keys() {
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vela-jwt-XXXXXX";
        if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
        dir = templ;
        rsa_key = dir + "/rsa.key";
        rsa_pub = dir + "/rsa.pub";
        ec_key = dir + "/ec.key";
        ec_pub = dir + "/ec.pub";
        const std::string cmd =
            "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + rsa_key +
            " 2>/dev/null && openssl pkey -in " + rsa_key + " -pubout -out " + rsa_pub +
            " && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + ec_key +
            " 2>/dev/null && openssl pkey -in " + ec_key + " -pubout -out " + ec_pub;
        if (run_command(cmd).status != 0) throw std::runtime_error("openssl genpkey failed");
    }
    ~Keys() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

const Keys& keys() {
    static const Keys k;
    return k;
}

// Runs a PyJWT script over `jobs`, one "ALG<TAB>ARG" line each (ARG: a kid to sign with, or
// a token to verify), and returns its output lines. One interpreter for the lot: starting
// Python with the cryptography module costs most of a second.
std::vector<std::string> pyjwt(const std::string& body, const std::string& claims,
                               const std::vector<std::pair<std::string, std::string>>& jobs) {
    const std::string script = keys().dir + "/pyjwt.py", input = keys().dir + "/jobs";
    write_file(script,
               "import sys, json, jwt\n"
               "claims = json.loads(open(sys.argv[1]).read())\n"
               "keys = {'HS256': ('" +
                   kSecret + "', '" + kSecret +
                   "'),\n"
                   "        'RS256': (open(sys.argv[2]).read(), open(sys.argv[3]).read()),\n"
                   "        'ES256': (open(sys.argv[4]).read(), open(sys.argv[5]).read())}\n"
                   "for line in open(sys.argv[6]).read().splitlines():\n"
                   "    alg, arg = line.split('\\t')\n"
                   "    private, public = keys[alg]\n" +
                   body);
    std::string lines;
    for (const auto& [alg, arg] : jobs) lines += alg + "\t" + arg + "\n";
    write_file(input, lines);
    write_file(keys().dir + "/claims.json", claims);
    Ran r = run_command("/usr/bin/python3 " + script + " " + keys().dir + "/claims.json " +
                        keys().rsa_key + " " + keys().rsa_pub + " " + keys().ec_key + " " +
                        keys().ec_pub + " " + input);
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    EXPECT_EQ(out.size(), jobs.size()) << r.out;
    out.resize(jobs.size());
    return out;
}

// Tokens signed by PyJWT with `claims` for each (alg, kid) (kid "" for none).
std::vector<std::string> pyjwt_sign(const std::string& claims,
                                    const std::vector<std::pair<std::string, std::string>>& jobs) {
    return pyjwt(
        "    print(jwt.encode(claims, private, algorithm=alg, "
        "headers={'kid': arg} if arg else None))\n",
        claims, jobs);
}

// PyJWT's reading of each (alg, token): the claims as JSON, or "ERROR: ...".
std::vector<std::string> pyjwt_verify(
    const std::vector<std::pair<std::string, std::string>>& jobs) {
    return pyjwt(
        "    try:\n"
        "        print(json.dumps(jwt.decode(arg, public, algorithms=[alg], "
        "audience='orders'), sort_keys=True))\n"
        "    except Exception as e:\n"
        "        print('ERROR: ' + repr(e))\n",
        "{}", jobs);
}

// An RS256 (or, with an EC key, DER-signed ES256) token made with `openssl dgst -sign`.
std::string openssl_sign(const std::string& header, const std::string& claims,
                         const std::string& key_file) {
    const std::string input = vela::base64url_encode(header) + "." + vela::base64url_encode(claims);
    const std::string in = keys().dir + "/input", sig = keys().dir + "/sig";
    write_file(in, input);
    Ran r = run_command("openssl dgst -sha256 -sign " + key_file + " -out " + sig + " " + in);
    EXPECT_EQ(r.status, 0);
    return input + "." + vela::base64url_encode(read_file(sig));
}

struct CurlReply {
    int exit = -1;
    int status = 0;
    std::string headers;
    std::string body;
    std::string header(std::string_view name) const {
        std::istringstream in(headers);
        std::string line;
        while (std::getline(in, line)) {
            const std::size_t colon = line.find(':');
            if (colon == std::string::npos ||
                !iequal(std::string_view(line).substr(0, colon), name))
                continue;
            std::string v = trim(line.substr(colon + 1));
            while (!v.empty() && v.front() == ' ') v.erase(0, 1);
            return v;
        }
        return {};
    }
};

class JwtE2e : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have("curl") || !have("openssl")) GTEST_SKIP() << "needs curl and openssl";
        JwtOptions o;
        o.keys = {JwtKey::hs256(kSecret, "hs"), JwtKey::rs256(read_file(keys().rsa_pub), "rs"),
                  JwtKey::es256(read_file(keys().ec_pub), "es"),
                  // The same keys without kid, for tokens that carry none.
                  JwtKey::hs256(kSecret), JwtKey::rs256(read_file(keys().rsa_pub)),
                  JwtKey::es256(read_file(keys().ec_pub))};
        o.issuers = {"https://auth.test"};
        o.audiences = {"orders"};
        o.realm = "orders";
        quick_options(app.options());
        app.get("/public", [] { return "open"; });
        auto api = app.group("/api");
        api.use(jwt_auth(o));
        api.get("/me", [](Request& req) {
            Value out = Value::object(
                {{"sub", std::string(jwt_subject(req))}, {"name", jwt_claims(req)["name"]}});
            return Response::json(json::write(out));
        });
        api.get("/claims", [](JwtClaims c) { return Response::json(json::write(c.payload)); });
        JwtOptions admin = o;
        admin.required_scopes = {"orders:admin"};
        auto adm = app.group("/admin");
        adm.use(jwt_auth(admin));
        adm.get("/stats",
                [](Request& req) { return "stats for " + std::string(jwt_subject(req)); });
        start_app(app);
        base = "http://127.0.0.1:" + std::to_string(app.port());
    }

    CurlReply curl(const std::string& path, const std::string& args = {}) {
        const std::string head = keys().dir + "/head", body = keys().dir + "/body";
        Ran r = run_command("timeout 20 curl -sS " + args + " -D '" + head + "' -o '" + body +
                            "' -w '%{http_code}' '" + base + path + "' 2>&1");
        CurlReply c;
        c.exit = r.status;
        c.status = std::atoi(r.out.c_str());
        c.headers = read_file(head);
        c.body = read_file(body);
        return c;
    }

    CurlReply with_token(const std::string& path, const std::string& token) {
        return curl(path, "-H 'Authorization: Bearer " + token + "'");
    }

    static std::string claims(const std::string& extra = {}) {
        return R"({"sub":"alice","name":"Alice","iss":"https://auth.test","aud":"orders",)"
               R"("iat":)" +
               std::to_string(now()) + R"(,"exp":)" + std::to_string(now() + 600) + extra + "}";
    }

    App app;
    std::string base;
};

TEST_F(JwtE2e, TokensFromSignReachTheHandler) {
    const Value c = json::parse<Value>(claims());
    for (const JwtSigningKey& key : {JwtSigningKey::hs256(kSecret, "hs"),
                                     JwtSigningKey::rs256(read_file(keys().rsa_key), "rs"),
                                     JwtSigningKey::es256(read_file(keys().ec_key), "es"),
                                     JwtSigningKey::es256(read_file(keys().ec_key))}) {
        const CurlReply r = with_token("/api/me", jwt::sign(c, key));
        EXPECT_EQ(r.exit, 0);
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body, R"({"sub":"alice","name":"Alice"})");
    }
    const CurlReply r = with_token("/api/claims", jwt::sign(c, JwtSigningKey::hs256(kSecret)));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse<Value>(r.body), c);
    EXPECT_EQ(curl("/public").status, 200);
}

TEST_F(JwtE2e, MissingTokenIs401WithABareChallenge) {
    for (const std::string& args : {std::string(), std::string("-u alice:secret")}) {
        const CurlReply r = curl("/api/me", args);
        EXPECT_EQ(r.status, 401);
        EXPECT_EQ(r.header("WWW-Authenticate"), "Bearer realm=\"orders\"");
        EXPECT_EQ(r.header("Content-Type"), "application/problem+json");
        EXPECT_NE(r.body.find("\"status\":401"), std::string::npos) << r.body;
    }
}

TEST_F(JwtE2e, BadTokensAre401InvalidToken) {
    const auto hs = JwtSigningKey::hs256(kSecret);
    struct Case {
        std::string name, token, description;
    };
    const std::vector<Case> cases = {
        {"expired",
         jwt::sign(json::parse<Value>(R"({"sub":"a","iss":"https://auth.test","aud":"orders",)"
                                      R"("exp":)" +
                                      std::to_string(now() - 3600) + "}"),
                   hs),
         "token expired"},
        {"garbage", "not-a-token", "token is not three dot-separated parts"},
        {"alg none",
         vela::base64url_encode(R"({"alg":"none"})") + "." + vela::base64url_encode(claims()) + ".",
         "unsigned tokens (alg none) are refused"},
        {"signed by another secret",
         jwt::sign(json::parse<Value>(claims()),
                   JwtSigningKey::hs256("another-secret-0123456789-abcdefghij")),
         "signature does not verify"},
    };
    for (const Case& c : cases) {
        const CurlReply r = with_token("/api/me", c.token);
        EXPECT_EQ(r.status, 401) << c.name;
        EXPECT_EQ(r.header("WWW-Authenticate"),
                  "Bearer realm=\"orders\", error=\"invalid_token\", error_description=\"" +
                      c.description + "\"")
            << c.name;
        EXPECT_EQ(r.header("Content-Type"), "application/problem+json") << c.name;
    }
    // Audience and issuer from the configured lists.
    Value other_aud = json::parse<Value>(claims());
    other_aud.set("aud", Value::array({"billing"}));
    EXPECT_EQ(with_token("/api/me", jwt::sign(other_aud, hs)).status, 401);
    Value other_iss = json::parse<Value>(claims());
    other_iss.set("iss", "https://evil.test");
    EXPECT_EQ(with_token("/api/me", jwt::sign(other_iss, hs)).status, 401);
}

TEST_F(JwtE2e, MissingScopeIs403) {
    const auto hs = JwtSigningKey::hs256(kSecret);
    CurlReply r = with_token(
        "/admin/stats", jwt::sign(json::parse<Value>(claims(R"(,"scope":"orders:read")")), hs));
    EXPECT_EQ(r.status, 403);
    EXPECT_EQ(r.header("WWW-Authenticate"),
              "Bearer realm=\"orders\", error=\"insufficient_scope\", error_description=\"the "
              "token lacks a required scope\", scope=\"orders:admin\"");
    EXPECT_EQ(r.header("Content-Type"), "application/problem+json");
    r = with_token(
        "/admin/stats",
        jwt::sign(json::parse<Value>(claims(R"(,"scope":"orders:read orders:admin")")), hs));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "stats for alice");
    // No token at all on a scoped route is still a bare 401.
    EXPECT_EQ(curl("/admin/stats").status, 401);
}

TEST_F(JwtE2e, PyJwtTokensAreAccepted) {
    if (!have_pyjwt()) GTEST_SKIP() << "needs Debian python3-jwt and python3-cryptography";
    std::vector<std::pair<std::string, std::string>> jobs;
    for (const std::string alg : {"HS256", "RS256", "ES256"})
        for (const std::string kid : {"", "hs", "rs", "es"}) jobs.emplace_back(alg, kid);
    const std::vector<std::string> tokens = pyjwt_sign(claims(), jobs);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const auto& [alg, kid] = jobs[i];
        const bool matching = kid.empty() || (kid == "hs" && alg == "HS256") ||
                              (kid == "rs" && alg == "RS256") || (kid == "es" && alg == "ES256");
        const CurlReply r = with_token("/api/me", tokens[i]);
        EXPECT_EQ(r.status, matching ? 200 : 401) << alg << " kid=" << kid << " " << r.body;
        if (matching) {
            EXPECT_EQ(r.body, R"({"sub":"alice","name":"Alice"})");
        }
    }
}

TEST_F(JwtE2e, PyJwtVerifiesTokensFromSign) {
    if (!have_pyjwt()) GTEST_SKIP() << "needs Debian python3-jwt and python3-cryptography";
    const Value c = json::parse<Value>(claims());
    std::vector<std::pair<std::string, std::string>> jobs = {
        {"HS256", jwt::sign(c, JwtSigningKey::hs256(kSecret))},
        {"RS256", jwt::sign(c, JwtSigningKey::rs256(read_file(keys().rsa_key)))},
    };
    for (int i = 0; i < 8; ++i)  // some r or s with a leading zero byte, now and then
        jobs.emplace_back("ES256", jwt::sign(c, JwtSigningKey::es256(read_file(keys().ec_key))));
    // A forged one, so the checks are not vacuous.
    jobs.emplace_back("HS256",
                      jwt::sign(c, JwtSigningKey::hs256("another-secret-0123456789-abcdefg")));
    const std::vector<std::string> out = pyjwt_verify(jobs);
    for (std::size_t i = 0; i + 1 < jobs.size(); ++i)
        EXPECT_NE(out[i].find(R"("sub": "alice")"), std::string::npos)
            << jobs[i].first << ": " << out[i];
    EXPECT_NE(out.back().find("ERROR"), std::string::npos) << out.back();
}

TEST_F(JwtE2e, OpensslCliRs256TokenIsAcceptedAndDerEs256Refused) {
    const std::string rs = openssl_sign(R"({"alg":"RS256","typ":"JWT"})", claims(), keys().rsa_key);
    CurlReply r = with_token("/api/me", rs);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, R"({"sub":"alice","name":"Alice"})");
    // `openssl dgst` makes DER ECDSA signatures; JWS ES256 is r||s, so this must fail.
    const std::string der = openssl_sign(R"({"alg":"ES256"})", claims(), keys().ec_key);
    r = with_token("/api/me", der);
    EXPECT_EQ(r.status, 401);
    EXPECT_NE(r.header("WWW-Authenticate").find("signature does not verify"), std::string::npos);
    // Algorithm confusion over the wire: HS256 keyed with the RSA public key PEM, sent to a
    // route whose only key for the kid "rs" is that RSA key.
    const std::string input = vela::base64url_encode(R"({"alg":"HS256","kid":"rs"})") + "." +
                              vela::base64url_encode(claims());
    const crypto::Digest mac = crypto::hmac_sha256(read_file(keys().rsa_pub), input);
    const std::string forged = input + "." +
                               vela::base64url_encode(std::string_view(
                                   reinterpret_cast<const char*>(mac.data()), mac.size()));
    r = with_token("/api/me", forged);
    EXPECT_EQ(r.status, 401);
    EXPECT_NE(r.header("WWW-Authenticate").find("not accepted for this key"), std::string::npos)
        << r.header("WWW-Authenticate");
}

TEST_F(JwtE2e, Http2CarriesTheTokenToo) {
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    const std::string token =
        jwt::sign(json::parse<Value>(claims()), JwtSigningKey::hs256(kSecret));
    CurlReply r =
        curl("/api/me", "--http2-prior-knowledge -H 'authorization: bearer " + token + "'");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, R"({"sub":"alice","name":"Alice"})");
    r = curl("/api/me", "--http2-prior-knowledge");
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.header("www-authenticate"), "Bearer realm=\"orders\"");
}

}  // namespace
}  // namespace vela::e2e
