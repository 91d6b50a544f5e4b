#!/usr/bin/env python3
"""The checks of HttpArena's profile pages ("validation" sections), run against a vela_arena
that arena/validate started. One line per check ("ok", "FAIL" or "skip"); the exit status is
the number of failures (0: every check passed).

    validate.py --data DIR GROUP...    GROUP: isolated (every profile of --role all),
                                       gateway (gateway-h2 through the edge),
                                       stack (production-stack through the edge)

Clients: raw sockets for HTTP/1.1 (byte-exact requests, fragmentation), Python's ssl for the
TLS and ALPN checks, curl for HTTP/2 and h2c, a raw-socket WebSocket client, gzip and brotli
for compressed bodies."""

import base64
import gzip
import hashlib
import hmac
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
FAILURES = []
DATA = None
DATASET = None

STATIC_FILES = ["reset.css", "layout.css", "theme.css", "components.css", "utilities.css",
                "analytics.js", "helpers.js", "app.js", "vendor.js", "router.js", "header.html",
                "footer.html", "regular.woff2", "bold.woff2", "logo.svg", "icon-sprite.svg",
                "hero.webp", "thumb1.webp", "thumb2.webp", "manifest.json"]


def check(profile, name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {profile}: {name}" + ("" if ok else f" ({detail})"),
          flush=True)
    if not ok:
        FAILURES.append(f"{profile}: {name}")


def guarded(profile, name, fn):
    """Runs one check; an exception (a refused connection, a timeout) is its failure."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error fails the check, named
        check(profile, name, False, f"{type(e).__name__}: {e}")


# ---------------------------------------------------------------- HTTP/1.1 over raw sockets

class H1Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        return self.headers.get(name.lower(), "")


def read_response(sock, head_only_method=False):
    """Reads one response from `sock` (Content-Length, chunked, or to EOF)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response head ({buf[:80]!r})")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if head_only_method or status in (101, 204, 304):
        return H1Response(status, headers, b""), rest
    def more():
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed inside a chunked body")
        return chunk

    if "chunked" in headers.get("transfer-encoding", ""):
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += more()
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                rest += more()
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                return H1Response(status, headers, body), rest
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed inside a body")
            rest += chunk
        return H1Response(status, headers, rest[:n]), rest[n:]
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return H1Response(status, headers, rest), b""
        rest += chunk


def connect(port, tls=False, alpn=None):
    sock = socket.create_connection((HOST, port), timeout=15)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if alpn:
            ctx.set_alpn_protocols(alpn)
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
    return sock


def request(method, path, port=8080, body=None, headers=None, tls=False, raw=None):
    """One request on a new connection (Connection: close)."""
    if raw is None:
        lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
    with connect(port, tls) as s:
        s.sendall(raw)
        r, _ = read_response(s, method == "HEAD")
        return r


def fragmented(pieces, port=8080):
    """Sends `pieces` in separate writes 30 ms apart; the response (the request closes)."""
    with connect(port) as s:
        for i, p in enumerate(pieces):
            if i:
                time.sleep(0.03)
            s.sendall(p)
        r, _ = read_response(s)
        return r


# ---------------------------------------------------------------- HTTP/2 through curl

class CurlResponse:
    def __init__(self, version, status, headers, body):
        self.version, self.status, self.headers, self.body = version, status, headers, body

    def header(self, name):
        return self.headers.get(name.lower(), "")


def curl(url, mode, headers=None, method=None, body=None):
    """mode: "h2" (TLS, ALPN h2), "h2c" (prior knowledge), "h1" (--http1.1)."""
    with tempfile.TemporaryDirectory() as d:
        hfile, bfile = os.path.join(d, "h"), os.path.join(d, "b")
        args = ["curl", "-sk", "--max-time", "15", "-D", hfile, "-o", bfile, "-w",
                "%{http_version} %{http_code}"]
        args += {"h2": ["--http2"], "h2c": ["--http2-prior-knowledge"], "h1": ["--http1.1"]}[mode]
        for k, v in (headers or {}).items():
            args += ["-H", f"{k}: {v}"]
        if method:
            args += ["-X", method]
        if body is not None:
            args += ["--data-binary", body]
        args.append(url)
        p = subprocess.run(args, capture_output=True, text=True)
        version, _, status = p.stdout.strip().partition(" ")
        hdrs = {}
        if os.path.exists(hfile):
            with open(hfile, "rb") as f:
                for line in f.read().decode("latin-1").split("\r\n")[1:]:
                    k, sep, v = line.partition(":")
                    if sep:
                        hdrs[k.strip().lower()] = v.strip()
        data = b""
        if os.path.exists(bfile):
            with open(bfile, "rb") as f:
                data = f.read()
        return CurlResponse(version, int(status or 0), hdrs, data)


# ---------------------------------------------------------------- answers

def decoded(body, encoding):
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "br":
        return subprocess.run(["brotli", "-d", "-c"], input=body, capture_output=True,
                              check=True).stdout
    return body


def check_json_totals(profile, name, body, count, m):
    """The /json answer: `count` items, the dataset's first ones, total = price*quantity*m."""
    doc = json.loads(body)
    items = doc.get("items", [])
    want = DATASET[:min(count, len(DATASET))]
    ok = doc.get("count") == len(want) and len(items) == len(want)
    detail = f"count {doc.get('count')}, {len(items)} items, want {len(want)}"
    for got, exp in zip(items, want):
        fields_ok = all(got.get(k) == exp[k] for k in exp)
        if not fields_ok or got.get("total") != exp["price"] * exp["quantity"] * m:
            ok, detail = False, f"item {exp['id']}: {got} (m={m})"
            break
    check(profile, name, ok, detail)


def check_db_items(profile, name, body, want_count=None, lo=1, hi=50):
    doc = json.loads(body)
    items = doc.get("items", [])
    ok = doc.get("count") == len(items)
    detail = f"count {doc.get('count')} for {len(items)} items"
    if want_count is not None and len(items) != want_count:
        ok, detail = False, f"{len(items)} items, want {want_count}"
    if want_count is None and not lo <= len(items) <= hi:
        ok, detail = False, f"{len(items)} items, want {lo} to {hi}"
    for it in items:
        if not (isinstance(it.get("rating"), dict) and "score" in it["rating"]
                and isinstance(it.get("tags"), list) and isinstance(it.get("active"), bool)
                and isinstance(it.get("price"), int)):
            ok, detail = False, f"item shape: {it}"
            break
    check(profile, name, ok, detail)


def is_javascript(ct):
    return ct.split(";")[0].strip() in ("application/javascript", "text/javascript")


# ---------------------------------------------------------------- profiles

def baseline(profile="baseline"):
    r = request("GET", "/baseline11?a=13&b=42")
    check(profile, "GET query sum", r.status == 200 and r.body == b"55", f"{r.status} {r.body!r}")
    check(profile, "Content-Type text/plain", r.header("content-type").startswith("text/plain"),
          r.header("content-type"))
    r = request("POST", "/baseline11?a=13&b=42", body=b"20",
                headers={"Content-Type": "text/plain"})
    check(profile, "POST Content-Length body", r.body == b"75", f"{r.status} {r.body!r}")
    raw = (b"POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
           b"Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n20\r\n0\r\n\r\n")
    r = request("POST", "", raw=raw)
    check(profile, "POST chunked body", r.body == b"75", f"{r.status} {r.body!r}")
    a, b = random.randint(100, 999), random.randint(100, 999)
    r = request("GET", f"/baseline11?a={a}&b={b}")
    check(profile, "randomized query", r.body == str(a + b).encode(), f"{r.body!r} != {a + b}")
    for _ in range(2):
        v = random.randint(100, 999)
        r = request("POST", "/baseline11?a=13&b=42", body=str(v).encode())
        check(profile, f"POST body {v} not cached", r.body == str(55 + v).encode(), r.body)
    r = request("GET", "/baseline11?a=9223372036854775807&b=1")
    check(profile, "a sum past 64 bits: 400, not a wrapped number", r.status == 400, r.status)
    r = request("GET", "/json/5?m=9223372036854775807")
    check(profile, "totals past 64 bits: 400", r.status == 400, r.status)
    r = request("GET", "/baseline11?a=1&b=2")
    check(profile, "still sound after those", r.body == b"3", r.body)
    head = (b"Host: localhost\r\n", b"User-Agent: arena-validate\r\n", b"Connection: close\r\n\r\n")
    r = fragmented([b"GET /baseli", b"ne11?a=13&b=42 HTTP/1.1\r\n" + b"".join(head)])
    check(profile, "fragmented: split request line", r.body == b"55", r.body)
    r = fragmented([b"GET /baseline11?a=13&b=42 HTTP/1.1\r\n", *head])
    check(profile, "fragmented: split before headers", r.body == b"55", r.body)
    post_head = (b"POST /baseline11?a=13&b=42 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                 b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n")
    r = fragmented([post_head, b"20"])
    check(profile, "fragmented: POST headers, then body", r.body == b"75", r.body)
    r = fragmented([post_head, b"2", b"0"])
    check(profile, "fragmented: POST body bytes one by one", r.body == b"75", r.body)


def pipelined():
    r = request("GET", "/pipeline")
    check("pipelined", "GET /pipeline is ok", r.status == 200 and r.body == b"ok", r.body)
    with connect(8080) as s:
        s.sendall(b"GET /pipeline HTTP/1.1\r\nHost: localhost\r\n\r\n" * 16)
        rest, bodies = b"", []
        for _ in range(16):
            s.settimeout(10)
            # read_response reads from the socket; feed the leftover by a small wrapper
            r, rest = read_from(s, rest)
            bodies.append(r.body)
    check("pipelined", "16 pipelined requests, 16 answers in order", bodies == [b"ok"] * 16,
          bodies)


def read_from(sock, pending):
    """read_response() that starts with bytes already read (pipelined answers)."""
    class Prefixed:
        def __init__(self):
            self.pending = pending

        def recv(self, n):
            if self.pending:
                out, self.pending = self.pending[:n], self.pending[n:]
                return out
            return sock.recv(n)
    return read_response(Prefixed())


def limited_conn():
    # The load closes each connection after 10 requests: 10 on one keep-alive connection,
    # then the client's close.
    with connect(8080) as s:
        rest, ok = b"", True
        for i in range(10):
            s.sendall(f"GET /baseline11?a={i}&b=1 HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            r, rest = read_from(s, rest)
            ok = ok and r.body == str(i + 1).encode() and r.header("connection") != "close"
    check("limited-conn", "10 requests on one connection, kept alive", ok)


def json_profile():
    for n in (12, 22, 31, 50):
        r = request("GET", f"/json/{n}")
        check_json_totals("json", f"/json/{n}: {n} items, total = price * quantity", r.body, n, 1)
    for n, m in ((1, 3), (5, 7), (10, 2), (15, 5), (25, 4), (40, 8), (50, 6)):
        r = request("GET", f"/json/{n}?m={m}")
        check_json_totals("json", f"/json/{n}?m={m}", r.body, n, m)
    r = request("GET", "/json/50")
    check("json", "Content-Type application/json",
          r.header("content-type").startswith("application/json"), r.header("content-type"))


def json_comp():
    ae = {"Accept-Encoding": "gzip, br"}
    r = request("GET", "/json/50?m=1", headers=ae)
    ce = r.header("content-encoding")
    check("json-comp", "Content-Encoding with Accept-Encoding: gzip, br", ce in ("gzip", "br"), ce)
    for n, m in ((25, 3), (40, 7), (50, 2)):
        r = request("GET", f"/json/{n}?m={m}", headers=ae)
        ce = r.header("content-encoding")
        check_json_totals("json-comp", f"/json/{n}?m={m} compressed ({ce})",
                          decoded(r.body, ce), n, m)
    r = request("GET", "/json/50?m=1")
    check("json-comp", "no Content-Encoding without Accept-Encoding",
          not r.header("content-encoding"), r.header("content-encoding"))


def json_tls():
    with connect(8081, tls=True, alpn=["h2", "http/1.1"]) as s:
        proto = s.selected_alpn_protocol()
    check("json-tls", "ALPN picks http/1.1 on 8081 (even when h2 is offered)",
          proto == "http/1.1", proto)
    c = curl("https://localhost:8081/json/1?m=1", "h1")
    check("json-tls", "curl --http1.1: HTTP/1.1", c.version == "1.1", c.version)
    for n, m in ((7, 2), (23, 11), (50, 1)):
        r = request("GET", f"/json/{n}?m={m}", port=8081, tls=True)
        check_json_totals("json-tls", f"/json/{n}?m={m} over TLS", r.body, n, m)
    r = request("GET", "/json/1?m=1", port=8081, tls=True)
    check("json-tls", "Content-Type application/json",
          "application/json" in r.header("content-type"), r.header("content-type"))


def upload():
    body = b"Hello, HttpArena!"
    r = request("POST", "/upload", body=body, headers={"Content-Type": "application/octet-stream"})
    check("upload", "17-byte body", r.body == b"17", r.body)
    body = base64.b64encode(os.urandom(64))[:48]
    r = request("POST", "/upload", body=body, headers={"Content-Type": "application/octet-stream"})
    check("upload", "random 48-byte body", r.body == str(len(body)).encode(), r.body)
    for size in (500 * 1024, 2 * 1024 * 1024, 10 * 1024 * 1024, 20 * 1024 * 1024):
        body = os.urandom(size)
        r = request("POST", "/upload", body=body,
                    headers={"Content-Type": "application/octet-stream"})
        check("upload", f"{size} bytes", r.body == str(size).encode(), r.body)
    raw = (b"POST /upload HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\n, w\r\n0\r\n\r\n")
    r = request("POST", "", raw=raw)
    check("upload", "chunked body: the bytes, not a header", r.body == b"8", r.body)


def static_checks(profile, fetch):
    """fetch(path, headers) -> response with status, header(), body."""
    for name, want in (("reset.css", "text/css"), ("app.js", None),
                       ("manifest.json", "application/json")):
        ct = fetch(f"/static/{name}", {}).header("content-type")
        ok = is_javascript(ct) if want is None else ct.split(";")[0].strip() == want
        check(profile, f"{name}: Content-Type", ok, ct)
    r = fetch("/static/nonexistent.txt", {})
    check(profile, "404 for a file that does not exist", r.status == 404, r.status)


def static_profile():
    fetch = lambda p, h: request("GET", p, headers=h)  # noqa: E731
    static_checks("static", fetch)
    sizes_ok, compressed, comp_ok = [], 0, []
    for name in STATIC_FILES:
        with open(os.path.join(DATA, "static", name), "rb") as f:
            disk = f.read()
        r = fetch(f"/static/{name}", {})
        if r.body != disk or r.header("content-encoding"):
            sizes_ok.append(name)
        r = fetch(f"/static/{name}", {"Accept-Encoding": "br;q=1, gzip;q=0.8"})
        ce = r.header("content-encoding")
        if ce:
            compressed += 1
            if decoded(r.body, ce) != disk:
                comp_ok.append(name)
    check("static", "20 files uncompressed, as on disk", not sizes_ok, sizes_ok)
    check("static", f"compressed answers decompress to the file ({compressed} compressed)",
          compressed > 0 and not comp_ok, comp_ok)


def async_db(profile="async-db", port=8080):
    for lo, hi, lim in ((5, 80, 7), (20, 150, 18), (100, 400, 33), (10, 50, 50)):
        r = request("GET", f"/async-db?min={lo}&max={hi}&limit={lim}", port=port)
        check_db_items(profile, f"min={lo} max={hi} limit={lim}", r.body, want_count=lim)
    r = request("GET", "/async-db?min=10&max=50&limit=50", port=port)
    check(profile, "Content-Type application/json",
          r.header("content-type").startswith("application/json"), r.header("content-type"))
    r = request("GET", "/async-db?min=9999&max=9999&limit=50", port=port)
    check(profile, "empty range: count 0", json.loads(r.body).get("count") == 0, r.body)


def crud():
    r = request("GET", "/crud/items?category=electronics&page=1&limit=5")
    doc = json.loads(r.body)
    check("crud", "list: 5 items, total, page 1, ratings",
          len(doc.get("items", [])) == 5 and doc.get("total", 0) > 0 and doc.get("page") == 1
          and all(isinstance(i.get("rating"), dict) for i in doc["items"]), r.body[:200])
    r = request("GET", "/crud/items/1")
    check("crud", "read id 1", r.status == 200 and json.loads(r.body).get("id") == 1, r.body[:200])
    time.sleep(0.25)  # past the 200 ms of any earlier read of 42
    with connect(8080) as s:  # one connection: the two reads come well within the 200 ms
        s.sendall(b"GET /crud/items/42 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        first, rest = read_response(s)
        s.sendall(b"GET /crud/items/42 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        second, _ = read_from(s, rest)
    check("crud", "X-Cache: MISS, then HIT",
          (first.header("x-cache"), second.header("x-cache")) == ("MISS", "HIT"),
          (first.header("x-cache"), second.header("x-cache")))
    time.sleep(0.25)
    check("crud", "HIT expires after 200 ms", request("GET", "/crud/items/42").header("x-cache")
          == "MISS")
    r = request("GET", "/crud/items/999999")
    check("crud", "404 for an id that does not exist", r.status == 404, r.status)
    body = b'{"id":200001,"name":"Bench Test","category":"test","price":25,"quantity":10}'
    r = request("POST", "/crud/items", body=body, headers={"Content-Type": "application/json"})
    check("crud", "create: 201", r.status == 201, f"{r.status} {r.body[:200]!r}")
    r = request("GET", "/crud/items/200001")
    check("crud", "read back the created item",
          r.status == 200 and json.loads(r.body).get("id") == 200001, r.body[:200])
    request("GET", "/crud/items/200001")
    up = b'{"name":"Updated","category":"test","price":30,"quantity":5}'
    r = request("PUT", "/crud/items/200001", body=up, headers={"Content-Type": "application/json"})
    check("crud", "update: 200", r.status == 200, f"{r.status} {r.body[:200]!r}")
    r = request("GET", "/crud/items/200001")
    check("crud", "update invalidates: X-Cache MISS with the new name",
          r.header("x-cache") == "MISS" and json.loads(r.body).get("name") == "Updated",
          (r.header("x-cache"), r.body[:200]))
    r = request("PUT", "/crud/items/999999", body=up, headers={"Content-Type": "application/json"})
    check("crud", "update of an id that does not exist: 404", r.status == 404, r.status)


def api_mix(profile):
    r = request("GET", "/json")
    check_json_totals(profile, "GET /json: 50 items", r.body, 50, 1)
    r = request("GET", "/baseline11?a=1&b=2")
    check(profile, "GET /baseline11?a=1&b=2", r.body == b"3", r.body)
    r = request("GET", "/async-db?min=10&max=50")
    check_db_items(profile, "GET /async-db?min=10&max=50 (limit 50 by default)", r.body,
                   want_count=50)


def baseline_h2():
    c = curl("https://localhost:8443/baseline2?a=1&b=1", "h2")
    check("baseline-h2", "ALPN h2", c.version == "2", c.version)
    c = curl("https://localhost:8443/baseline2?a=13&b=42", "h2")
    check("baseline-h2", "sum over h2", c.body == b"55", c.body)
    a, b = random.randint(100, 999), random.randint(100, 999)
    c = curl(f"https://localhost:8443/baseline2?a={a}&b={b}", "h2")
    check("baseline-h2", "randomized query", c.body == str(a + b).encode(), c.body)


def static_h2():
    fetch = lambda p, h: curl(f"https://localhost:8443{p}", "h2", h)  # noqa: E731
    static_checks("static-h2", fetch)
    c = fetch("/static/reset.css", {})
    check("static-h2", "reset.css has a body", c.version == "2" and len(c.body) > 0, len(c.body))


def baseline_h2c():
    c = curl("http://localhost:8082/baseline2?a=1&b=1", "h2c")
    check("baseline-h2c", "prior knowledge: HTTP/2", c.version == "2", c.version)
    c = curl("http://localhost:8082/baseline2?a=1&b=1", "h1")
    check("baseline-h2c", "HTTP/1.1 refused on the h2c port",
          c.status != 200 and c.version != "1.1", f"{c.version} {c.status}")
    with connect(8082) as s:
        s.sendall(b"GET /baseline2?a=1&b=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""  # a reset ends the connection too
            if not chunk:
                break
            got += chunk
    check("baseline-h2c", "a raw HTTP/1.1 request: no HTTP/1.1 answer, the connection ends",
          not got.startswith(b"HTTP/1.1"), got[:60])
    c = curl("http://localhost:8082/baseline2?a=13&b=42", "h2c")
    check("baseline-h2c", "sum over h2c", c.body == b"55", c.body)
    a, b = random.randint(100, 999), random.randint(100, 999)
    c = curl(f"http://localhost:8082/baseline2?a={a}&b={b}", "h2c")
    check("baseline-h2c", "randomized query", c.body == str(a + b).encode(), c.body)
    check("baseline-h2c", "Content-Type text/plain",
          c.header("content-type").startswith("text/plain"), c.header("content-type"))
    # The server still answers after an HTTP/1.1 client was turned away.
    c = curl("http://localhost:8082/baseline2?a=2&b=2", "h2c")
    check("baseline-h2c", "still serving h2c", c.body == b"4", c.body)


def json_h2c():
    c = curl("http://localhost:8082/json/1?m=1", "h2c")
    check("json-h2c", "/json over h2c: HTTP/2", c.version == "2", c.version)
    check("json-h2c", "Content-Type application/json",
          c.header("content-type").startswith("application/json"), c.header("content-type"))
    for n, m in ((12, 3), (22, 7), (31, 2), (50, 5)):
        c = curl(f"http://localhost:8082/json/{n}?m={m}", "h2c")
        check_json_totals("json-h2c", f"/json/{n}?m={m}", c.body, n, m)


# ---------------------------------------------------------------- WebSocket

def ws_frame(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_read(sock, pending):
    def need(n):
        nonlocal pending
        while len(pending) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed inside a frame")
            pending += chunk
    need(2)
    opcode, n = pending[0] & 0x0F, pending[1] & 0x7F
    off = 2
    if n == 126:
        need(4)
        n, off = int.from_bytes(pending[2:4], "big"), 4
    elif n == 127:
        need(10)
        n, off = int.from_bytes(pending[2:10], "big"), 10
    need(off + n)
    payload, pending = pending[off:off + n], pending[off + n:]
    return opcode, payload, pending


def ws_open(port=8080):
    key = base64.b64encode(os.urandom(16)).decode()
    s = connect(port)
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: localhost:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
    r, rest = read_response(s)
    return s, r, key, rest


def echo_ws():
    s, r, key, rest = ws_open()
    with s:
        check("echo-ws", "upgrade: 101", r.status == 101, r.status)
        # RFC 6455 4.2.2's GUID (the profile page misspells its last group).
        want = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        check("echo-ws", "Sec-WebSocket-Accept", r.header("sec-websocket-accept") == want,
              r.header("sec-websocket-accept"))
        text = f"HttpArena-validate-{os.urandom(4).hex()}".encode()
        s.sendall(ws_frame(1, text))
        op, payload, rest = ws_read(s, rest)
        check("echo-ws", "text echo", (op, payload) == (1, text), (op, payload))
        blob = os.urandom(256)
        s.sendall(ws_frame(2, blob))
        op, payload, rest = ws_read(s, rest)
        check("echo-ws", "binary echo", (op, payload) == (2, blob), op)
        msgs = [f"burst-{i}-{os.urandom(3).hex()}".encode() for i in range(5)]
        s.sendall(b"".join(ws_frame(1, m) for m in msgs))
        got = []
        for _ in msgs:
            op, payload, rest = ws_read(s, rest)
            got.append(payload)
        check("echo-ws", "5 messages in a burst, echoed in order", got == msgs, got)
        s.sendall(ws_frame(8, (1000).to_bytes(2, "big") + b"validate done"))
        op, payload, rest = ws_read(s, rest)
        check("echo-ws", "clean close: 1000 back",
              op == 8 and int.from_bytes(payload[:2], "big") == 1000, (op, payload))
    r = request("GET", "/ws")
    check("echo-ws", "a plain GET /ws: 4xx", 400 <= r.status < 500, r.status)
    s, r, key, rest = ws_open()
    with s:
        s.sendall(ws_frame(1, b"health"))
        op, payload, rest = ws_read(s, rest)
        s.sendall(ws_frame(8, (1000).to_bytes(2, "big")))
        op2, _, _ = ws_read(s, rest)
    check("echo-ws", "health check after the rest", (op, payload, op2) == (1, b"health", 8))


# ---------------------------------------------------------------- gateway, production stack

def edge_static(profile):
    c = curl("https://localhost:8443/static/reset.css", "h2")
    check(profile, "h2 at the edge", c.version == "2", c.version)
    check(profile, "reset.css: text/css", c.header("content-type").startswith("text/css"),
          c.header("content-type"))
    c = curl("https://localhost:8443/static/app.js", "h2")
    check(profile, "app.js: JavaScript, a body", is_javascript(c.header("content-type"))
          and len(c.body) > 0, c.header("content-type"))


def gateway():
    p = "gateway-h2"
    edge_static(p)
    c = curl("https://localhost:8443/static/nonexistent.txt", "h2")
    check(p, "404 through the edge", c.status == 404, c.status)
    c = curl("https://localhost:8443/json", "h2")
    check_json_totals(p, "/json: 50 items", c.body, 50, 1)
    check(p, "/json: application/json", c.header("content-type").startswith("application/json"))
    for n in (1, 5, 10, 15, 25, 40, 50):
        c = curl(f"https://localhost:8443/json/{n}", "h2")
        check_json_totals(p, f"/json/{n}", c.body, n, 1)
    c = curl("https://localhost:8443/async-db?min=10&max=50", "h2")
    check_db_items(p, "/async-db?min=10&max=50", c.body, lo=1, hi=50)
    check(p, "/async-db: application/json",
          c.header("content-type").startswith("application/json"))
    c = curl("https://localhost:8443/async-db?min=9999&max=9999", "h2")
    check(p, "/async-db empty range: count 0", json.loads(c.body).get("count") == 0, c.body)
    c = curl("https://localhost:8443/baseline2?a=13&b=42", "h2")
    check(p, "/baseline2 through the edge", c.body == b"55", c.body)
    a, b = random.randint(100, 999), random.randint(100, 999)
    c = curl(f"https://localhost:8443/baseline2?a={a}&b={b}", "h2")
    check(p, "/baseline2 randomized", c.body == str(a + b).encode(), c.body)


def jwt(secret, claims):
    enc = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")  # noqa: E731
    head = enc(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = enc(json.dumps(claims).encode())
    sig = enc(hmac.new(secret.encode(), head + b"." + body, hashlib.sha256).digest())
    return (head + b"." + body + b"." + sig).decode()


def stack(secret):
    p = "production-stack"
    edge_static(p)
    c = curl("https://localhost:8443/public/baseline?a=13&b=42", "h2")
    check(p, "/public/baseline", c.body == b"55", c.body)
    a, b = random.randint(100, 999), random.randint(100, 999)
    c = curl(f"https://localhost:8443/public/baseline?a={a}&b={b}", "h2")
    check(p, "/public/baseline randomized", c.body == str(a + b).encode(), c.body)
    c = curl("https://localhost:8443/public/json/25", "h2")
    check_json_totals(p, "/public/json/25", c.body, 25, 1)
    bad = {"Authorization": "Bearer invalid.token.here"}
    for method, hdrs, what in (("GET", {}, "no token"), ("GET", bad, "a bad token"),
                               ("POST", {}, "no token"), ("POST", bad, "a bad token")):
        c = curl("https://localhost:8443/api/items/1", "h2", hdrs, method,
                 '{"name":"x","price":1,"quantity":1}' if method == "POST" else None)
        check(p, f"{method} /api/items/1 with {what}: 401", c.status == 401, c.status)
    forged = jwt("not-the-secret-but-long-enough-for-hs256!", {"sub": "42", "exp": 4102444800})
    c = curl("https://localhost:8443/api/me", "h2", {"Authorization": f"Bearer {forged}"})
    check(p, "a token signed with another secret: 401", c.status == 401, c.status)
    auth = {"Authorization": "Bearer " + jwt(secret, {"sub": "42", "name": "Alice Chen",
                                                      "exp": int(time.time()) + 3600})}
    c = curl("https://localhost:8443/api/items/1", "h2", auth)
    check(p, "GET /api/items/1", c.status == 200 and json.loads(c.body).get("id") == 1,
          f"{c.status} {c.body[:200]!r}")
    time.sleep(1.1)  # past the 1 s of any earlier read of 7
    c1 = curl("https://localhost:8443/api/items/7", "h2", auth)
    c2 = curl("https://localhost:8443/api/items/7", "h2", auth)
    check(p, "cache-aside: MISS, then HIT", (c1.header("x-cache"), c2.header("x-cache"))
          == ("MISS", "HIT"), (c1.header("x-cache"), c2.header("x-cache")))
    body = '{"name":"bench-updated","price":250,"quantity":10}'
    c = curl("https://localhost:8443/api/items/2", "h2", {**auth, "Content-Type":
             "application/json"}, "POST", body)
    check(p, "POST /api/items/2: 204", c.status == 204, f"{c.status} {c.body[:200]!r}")
    curl("https://localhost:8443/api/items/3", "h2", auth)
    c = curl("https://localhost:8443/api/items/3", "h2", {**auth, "Content-Type":
             "application/json"}, "POST", body)
    c = curl("https://localhost:8443/api/items/3", "h2", auth)
    check(p, "POST invalidates: the next GET is a MISS", c.header("x-cache") == "MISS"
          and json.loads(c.body).get("name") == "bench-updated", (c.header("x-cache"), c.body))
    c = curl("https://localhost:8443/api/me", "h2", auth)
    check(p, "GET /api/me: user 42", c.status == 200 and json.loads(c.body).get("id") == 42,
          f"{c.status} {c.body[:200]!r}")
    c = curl("https://localhost:8443/api/me", "h2", {**auth, "X-User-Id": "1"})
    check(p, "a client's own X-User-Id is not believed",
          c.status == 200 and json.loads(c.body).get("id") == 42, c.body[:200])


def main():
    global DATA, DATASET
    args = sys.argv[1:]
    if len(args) < 3 or args[0] != "--data":
        sys.exit(__doc__)
    DATA = args[1]
    with open(os.path.join(DATA, "dataset.json")) as f:
        DATASET = json.load(f)
    for group in args[2:]:
        if group == "isolated":
            steps = [("baseline", baseline), ("pipelined", pipelined),
                     ("limited-conn", limited_conn), ("json", json_profile),
                     ("json-comp", json_comp), ("json-tls", json_tls), ("upload", upload),
                     ("static", static_profile), ("async-db", async_db), ("crud", crud),
                     ("api-4", lambda: api_mix("api-4")), ("api-16", lambda: api_mix("api-16")),
                     ("baseline-h2", baseline_h2), ("static-h2", static_h2),
                     ("baseline-h2c", baseline_h2c), ("json-h2c", json_h2c),
                     ("echo-ws", echo_ws)]
        elif group == "gateway":
            steps = [("gateway-h2", gateway)]
        elif group == "stack":
            secret = os.environ.get("JWT_SECRET", "")
            steps = [("production-stack", lambda: stack(secret))]
        else:
            sys.exit(f"validate.py: unknown group '{group}'")
        for name, fn in steps:
            guarded(name, "the profile's checks ran", fn)
    print(f"{len(FAILURES)} check(s) failed" if FAILURES else "every check passed")
    sys.exit(min(len(FAILURES), 100))


if __name__ == "__main__":
    main()
