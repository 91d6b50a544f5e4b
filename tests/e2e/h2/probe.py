#!/usr/bin/env python3
"""A raw HTTP/2 client for vela's end-to-end tests (tests/e2e/http2_test.cpp).

    probe.py PORT SCENARIO [ARGS...] [--tls=CA]

With --tls=CA the frames go over TLS (ALPN h2, the server's certificate checked against CA).

It writes frames by hand (struct.pack) and header blocks by hand (HPACK literals and
indexes, RFC 7541), because most scenarios are things a conforming client library refuses
to send: floods, bombs, bad pseudo-headers, DATA beyond the window. Server frames are read
and HEADERS are decoded with python3-hpack. It prints one "key=value" per line, which the
C++ test parses and asserts on; nothing here decides pass or fail.
"""
import hashlib
import os
import socket
import ssl
import struct
import sys
import time

from hpack import Decoder

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
INITIAL_WINDOW_SIZE = 0x4
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", ftype, flags, sid) + payload


def settings_frame(pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def window_update(sid, inc):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", inc))


# HPACK (RFC 7541): integers with an N-bit prefix, raw (non-Huffman) strings.
def hint(v, prefix, first=0):
    top = (1 << prefix) - 1
    if v < top:
        return bytes([first | v])
    out = [first | top]
    v -= top
    while v >= 128:
        out.append((v & 127) | 128)
        v >>= 7
    out.append(v)
    return bytes(out)


def hstr(b):
    return hint(len(b), 7) + b


def lit(name, value):  # 6.2.2 literal without indexing, new name
    return b"\x00" + hstr(name) + hstr(value)


def lit_indexed(name, value):  # 6.2.1 literal with incremental indexing, new name
    return b"\x40" + hstr(name) + hstr(value)


def idx(i):  # 6.1 indexed field
    return hint(i, 7, 0x80)


def request_block(method, path, extra=b""):
    return (lit(b":method", method) + idx(6) + lit(b":authority", b"localhost") +
            lit(b":path", path) + extra)


class Conn:
    def __init__(self, port, timeout=5.0, ca=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        if ca:
            ctx = ssl.create_default_context(cafile=ca)
            ctx.set_alpn_protocols(["h2"])
            self.sock = ctx.wrap_socket(self.sock, server_hostname="localhost")
            assert self.sock.selected_alpn_protocol() == "h2"
        self.sock.settimeout(timeout)
        self.buf = b""
        self.dec = Decoder()
        self.dec.max_header_list_size = 1 << 24
        self.dec.max_allowed_table_size = 1 << 16
        self.closed = False
        self.goaway = None  # (last stream id, error code)
        self.goaway_debug = ""
        self.closed_by = ""
        self.send_failed = False
        self.rst = {}
        self.rst_count = 0
        self.headers = {}
        self.body = {}
        self.ended = set()
        self.server_settings = {}
        self.got_settings = False
        self.settings_acked = False
        self.auto_window = True
        self.window_updates_sent = 0
        self.frames = {}
        # Send windows for our own DATA (RFC 9113 6.9).
        self.conn_win = 65535
        self.stream_win = {}
        self.initial_win = 65535

    def send(self, data):
        if self.closed or self.send_failed:
            return False
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError) as e:
            # Keep reading: a GOAWAY may still be waiting in the receive queue.
            self.send_failed = True
            self.closed_by = "send: " + type(e).__name__
            return False

    def recv_exact(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                return None
            except (ConnectionResetError, ssl.SSLError, OSError):
                self.closed = True
                self.closed_by += " recv: reset"
                return None
            if not chunk:
                self.closed = True
                self.closed_by += " recv: eof"
                return None
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self, deadline):
        head = self.recv_exact(9, deadline)
        if head is None:
            return None
        length = struct.unpack(">I", b"\0" + head[:3])[0]
        ftype, flags, sid = struct.unpack(">BBI", head[3:])
        payload = self.recv_exact(length, deadline)
        if payload is None:
            return None
        return ftype, flags, sid & 0x7FFFFFFF, payload

    def handle(self, f, deadline):
        ftype, flags, sid, payload = f
        if os.environ.get("H2DEBUG"):
            print(f"recv type={ftype} flags={flags} sid={sid} len={len(payload)}", file=sys.stderr)
        self.frames[ftype] = self.frames.get(ftype, 0) + 1
        if ftype == SETTINGS:
            if flags & ACK:
                self.settings_acked = True
            else:
                for i in range(0, len(payload), 6):
                    k, v = struct.unpack(">HI", payload[i:i + 6])
                    self.server_settings[k] = v
                    if k == INITIAL_WINDOW_SIZE:
                        for s in self.stream_win:
                            self.stream_win[s] += v - self.initial_win
                        self.initial_win = v
                self.got_settings = True
                self.send(frame(SETTINGS, ACK, 0))
        elif ftype == HEADERS:
            block = payload
            if flags & 0x8:  # PADDED
                block = block[1:len(block) - block[0]]
            if flags & 0x20:  # PRIORITY
                block = block[5:]
            end = flags
            while not end & END_HEADERS:
                c = self.read_frame(deadline)
                if c is None:
                    return
                block += c[3]
                end = c[1]
            fields = self.dec.decode(block, raw=True)
            self.headers.setdefault(sid, []).extend(
                (n.decode("latin-1"), v.decode("latin-1")) for n, v in fields)
            if flags & END_STREAM:
                self.ended.add(sid)
        elif ftype == DATA:
            data = payload
            if flags & 0x8:
                data = data[1:len(data) - data[0]]
            self.body.setdefault(sid, bytearray()).extend(data)
            if self.auto_window and len(payload) > 0:
                self.send(window_update(sid, len(payload)) + window_update(0, len(payload)))
                self.window_updates_sent += 2
            if flags & END_STREAM:
                self.ended.add(sid)
        elif ftype == RST_STREAM:
            self.rst[sid] = struct.unpack(">I", payload)[0]
            self.rst_count += 1
            self.ended.add(sid)
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = (last & 0x7FFFFFFF, code)
            self.goaway_debug = payload[8:].decode("latin-1")
        elif ftype == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload))
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
            if sid == 0:
                self.conn_win += inc
            else:
                self.stream_win[sid] = self.stream_win.get(sid, self.initial_win) + inc

    def pump(self, until=lambda: False, timeout=5.0):
        deadline = time.monotonic() + timeout
        while not until() and not self.closed:
            f = self.read_frame(deadline)
            if f is None:
                break
            self.handle(f, deadline)
        return until()

    def handshake(self, settings=(), preface=PREFACE):
        self.send(preface + settings_frame(settings))
        self.pump(lambda: self.got_settings and self.settings_acked)

    def send_headers(self, sid, block, end_stream=True, end_headers=True, max_frame=16384):
        self.stream_win.setdefault(sid, self.initial_win)
        first, rest = block[:max_frame], block[max_frame:]
        out = []
        flags = END_STREAM if end_stream else 0
        if not rest and end_headers:
            flags |= END_HEADERS
        out.append(frame(HEADERS, flags, sid, first))
        while rest:
            piece, rest = rest[:max_frame], rest[max_frame:]
            last = not rest and end_headers
            out.append(frame(CONTINUATION, END_HEADERS if last else 0, sid, piece))
        return self.send(b"".join(out))

    def send_body(self, sid, data, end_stream=True):
        """Sends DATA within the server's windows, reading its frames while waiting."""
        sent = 0
        while sent < len(data) or (end_stream and sent == len(data) == 0):
            if sid in self.ended or self.closed or self.send_failed:
                return sent
            room = min(self.conn_win, self.stream_win.get(sid, self.initial_win), 16384,
                       len(data) - sent)
            if room <= 0 and len(data) > 0:
                if not self.pump(lambda: min(self.conn_win, self.stream_win.get(
                        sid, self.initial_win)) > 0 or sid in self.ended, timeout=5):
                    return sent
                continue
            last = sent + room == len(data)
            chunk = data[sent:sent + room]
            if not self.send(frame(DATA, END_STREAM if last and end_stream else 0, sid, chunk)):
                return sent
            self.conn_win -= room
            self.stream_win[sid] = self.stream_win.get(sid, self.initial_win) - room
            sent += room
            if len(data) == 0:
                break
        return sent

    def status(self, sid):
        for n, v in self.headers.get(sid, []):
            if n == ":status":
                return v
        return "none"

    def report(self, sid, prefix=""):
        body = bytes(self.body.get(sid, b""))
        print(f"{prefix}status={self.status(sid)}")
        print(f"{prefix}rst={self.rst.get(sid, 'none')}")
        print(f"{prefix}body_len={len(body)}")
        print(f"{prefix}body_sha256={hashlib.sha256(body).hexdigest()}")
        if len(body) <= 512:
            text = body.decode("latin-1").replace("\n", " ")
            print(f"{prefix}body={text}")
        for n, v in self.headers.get(sid, []):
            print(f"{prefix}header.{n}={v}")

    def finish(self, wait=3.0):
        """Reads until the server sends GOAWAY and closes, or `wait` passes."""
        self.pump(lambda: False, timeout=wait)
        print("goaway=" + ("none" if self.goaway is None else str(self.goaway[1])))
        print("goaway_last=" + ("none" if self.goaway is None else str(self.goaway[0])))
        print(f"closed={1 if self.closed else 0}")
        print(f"goaway_debug={self.goaway_debug}")
        print(f"closed_by={self.closed_by.strip() or 'none'}")

    def second_request(self, sid):
        """Proves the connection still works: GET /hello on a new stream."""
        if self.closed or self.goaway is not None:
            print("second_status=none")
            return
        self.send_headers(sid, request_block(b"GET", b"/hello"))
        self.pump(lambda: sid in self.ended or self.goaway is not None)
        print(f"second_status={self.status(sid)}")


def blast(c, frames, seconds):
    """Writes `frames` without reading anything back, for at most `seconds`."""
    c.sock.setblocking(False)
    data = memoryview(b"".join(frames))
    deadline = time.monotonic() + seconds
    sent = 0
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += c.sock.send(data[sent:sent + 65536])
        except BlockingIOError:
            time.sleep(0.005)
        except (BrokenPipeError, ConnectionResetError, OSError) as e:
            c.send_failed = True
            c.closed_by = "send: " + type(e).__name__
            break
    c.sock.setblocking(True)
    print(f"sent_bytes={sent}")
    print(f"all_sent={1 if sent == len(data) else 0}")


def closed_stream(c, kind):
    """RFC 9113 5.1: DATA or HEADERS on stream 1 once it is closed, by KIND:
    ended-data|ended-headers (both sides ended it), client-reset-data|client-reset-headers
    (we sent RST_STREAM), server-reset (the server reset it after a 413: DATA and trailers
    that follow are to be ignored)."""
    c.handshake()
    what = kind.rsplit("-", 1)[1]
    late = (frame(DATA, END_STREAM, 1, b"late") if what == "data" else
            frame(HEADERS, END_STREAM | END_HEADERS, 1, lit(b"x-trailer", b"late")))
    if kind.startswith("ended"):
        c.send_headers(1, request_block(b"GET", b"/hello"))
        c.pump(lambda: 1 in c.ended)
    elif kind.startswith("client-reset"):
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        c.send(frame(RST_STREAM, 0, 1, struct.pack(">I", 8)))
        c.pump(lambda: False, timeout=0.2)  # the server has closed the stream by now
    else:  # server-reset
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        c.send_body(1, b"x" * 100000, end_stream=False)
        c.pump(lambda: 1 in c.rst, timeout=3)
        print(f"first_rst={c.rst.get(1, 'none')}")
        c.rst.pop(1, None)
        late = frame(DATA, 0, 1, b"late") + frame(HEADERS, END_STREAM | END_HEADERS, 1,
                                                  lit(b"x-trailer", b"late"))
    print(f"status={c.status(1)}")
    c.send(late)
    c.pump(lambda: 1 in c.rst or c.goaway is not None, timeout=1)
    print(f"rst={c.rst.get(1, 'none')}")
    c.second_request(3)
    c.finish(wait=0.5)


def lower_stream(c, kind):
    """RFC 9113 5.1.1: stream 5 is served, then KIND=headers opens stream 3 (lower, never
    used): PROTOCOL_ERROR; KIND=data sends DATA on stream 3 (closed implicitly by 5):
    STREAM_CLOSED."""
    c.handshake()
    c.send_headers(5, request_block(b"GET", b"/hello"))
    c.pump(lambda: 5 in c.ended)
    print(f"status5={c.status(5)}")
    if kind == "headers":
        c.send_headers(3, request_block(b"GET", b"/hello"))
    else:
        c.send(frame(DATA, END_STREAM, 3, b"late"))
    c.pump(lambda: 3 in c.ended or c.goaway is not None, timeout=2)
    print(f"status3={c.status(3)}")
    print(f"rst={c.rst.get(3, 'none')}")
    c.second_request(7)
    c.finish(wait=0.5)


def big_continuation(c, kind, size):
    """RFC 9113 4.2: a field block frame of SIZE bytes (the server advertised 16384), by KIND:
    request (HEADERS + CONTINUATION of SIZE), headers (HEADERS alone of SIZE), trailers
    (a request body's trailers: HEADERS + CONTINUATION of SIZE), ignored (the same trailers
    on a stream the server reset, whose block nghttp2 skips)."""
    c.handshake()
    print(f"max_frame={c.server_settings.get(5, 16384)}")
    def fill(total):  # literal fields "x-f" whose encoding is exactly `total` bytes
        out = b""
        while len(out) < total:
            left = total - len(out)
            if left > 8024:
                out += lit(b"x-f", b"v" * 8000)
                continue
            for h in (1, 2, 3):  # lit() is 5 bytes, the value's length prefix h, the value
                n = left - 5 - h
                if n >= 0 and len(hint(n, 7)) == h:
                    break
            out += lit(b"x-f", b"v" * n)
        return out
    block = fill(size)
    if kind == "headers":
        c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, request_block(b"GET", b"/hello") +
                     block))
    elif kind == "request":
        c.send(frame(HEADERS, END_STREAM, 1, request_block(b"GET", b"/hello")) +
               frame(CONTINUATION, END_HEADERS, 1, block))
    else:
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        if kind == "ignored":
            c.send_body(1, b"x" * 100000, end_stream=False)
            c.pump(lambda: 1 in c.rst, timeout=3)
            print(f"first_rst={c.rst.get(1, 'none')}")
        else:
            c.send(frame(DATA, 0, 1, b"body"))
        c.send(frame(HEADERS, END_STREAM, 1, lit(b"x-trailer", b"t")) +
               frame(CONTINUATION, END_HEADERS, 1, block))
    c.pump(lambda: (1 in c.ended and kind != "ignored") or c.goaway is not None, timeout=2)
    print(f"block_len={len(block)}")
    print(f"status={c.status(1)}")
    c.finish(wait=0.5)


def rule_case(c, name):
    """One RFC 9113 rule: the bytes NAME sends after the handshake (stream 1 is the one
    watched), then what the server answered on stream 1 and whether stream 3 still works.
    A request of the table goes to /hello (GET) or /echo (POST)."""
    get, scheme = lit(b":method", b"GET"), idx(6)
    auth, path = lit(b":authority", b"localhost"), lit(b":path", b"/hello")
    post = lit(b":method", b"POST") + scheme + auth + lit(b":path", b"/echo")
    hello = get + scheme + auth + path

    def req(block, flags=END_STREAM | END_HEADERS, sid=1):
        return frame(HEADERS, flags, sid, block)

    def body_headers(extra=b""):
        return req(post + extra, END_HEADERS)

    cases = {
        # 4.1, 5.5: an unknown frame type is ignored; inside a field block it is not.
        "unknown-type": lambda: frame(0xEE, 0xFF, 1, b"abc") + req(hello),
        "unknown-in-block": lambda: req(get + scheme, END_STREAM) + frame(0xEE, 0, 1, b"x") +
        frame(CONTINUATION, END_HEADERS, 1, auth + path),
        # 4.2: DATA over the advertised SETTINGS_MAX_FRAME_SIZE.
        "data-too-big": lambda: body_headers() + frame(DATA, END_STREAM, 1, b"x" * 16385),
        # 4.3: a bad HPACK index; a table size update not at the start of a block, or above
        # SETTINGS_HEADER_TABLE_SIZE (4096).
        "hpack-bad-index": lambda: req(hello + idx(300)),
        "hpack-late-size-update": lambda: req(get + scheme + hint(0, 5, 0x20) + auth + path),
        "hpack-size-update-too-big": lambda: req(hint(8192, 5, 0x20) + hello),
        # 4.3, 6.10: another frame inside a field block; CONTINUATION of another stream, or
        # without a HEADERS before it.
        "interleaved-data": lambda: req(get + scheme, END_STREAM) + frame(DATA, 0, 1, b"x") +
        frame(CONTINUATION, END_HEADERS, 1, auth + path),
        "continuation-other-stream": lambda: req(get + scheme, END_STREAM) +
        frame(CONTINUATION, END_HEADERS, 3, auth + path),
        "continuation-alone": lambda: frame(CONTINUATION, END_HEADERS, 1, hello),
        "continuation-after-end": lambda: req(post, END_HEADERS) +
        frame(CONTINUATION, END_HEADERS, 1, lit(b"x-a", b"1")),
        # 5.1: frames on idle streams.
        "data-idle": lambda: frame(DATA, END_STREAM, 1, b"x"),
        "rst-idle": lambda: frame(RST_STREAM, 0, 1, struct.pack(">I", 8)),
        "wu-idle": lambda: window_update(1, 100),
        # 5.1: half-closed (remote): DATA or HEADERS after END_STREAM while the handler runs.
        "half-closed-data": lambda: req(get + scheme + auth + lit(b":path", b"/slow/300")) +
        frame(DATA, END_STREAM, 1, b"x"),
        "half-closed-headers": lambda: req(get + scheme + auth + lit(b":path", b"/slow/300")) +
        req(lit(b"x-t", b"1")),
        # 5.1: WINDOW_UPDATE, RST_STREAM and PRIORITY on a stream both ended: allowed.
        "closed-wu-rst": lambda: req(hello) + b"WAIT" + window_update(1, 100) +
        frame(RST_STREAM, 0, 1, struct.pack(">I", 8)),
        # 5.1.1: a client stream with an even id.
        "even-id": lambda: req(hello, sid=2),
        # 5.2, 6.9.1: windows above 2^31-1.
        "wu-overflow-conn": lambda: window_update(0, 0x7FFFFFFF) + req(hello),
        "wu-overflow-stream": lambda: body_headers() + window_update(1, 0x7FFFFFFF),
        # 6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE taking stream 1's window (65535 + WU) over
        # 2^31-1 by one (also with the frame split between reads), or to exactly 2^31-1.
        "settings-window-overflow": lambda: body_headers() + window_update(1, 0x7FFF0000) +
        settings_frame([(INITIAL_WINDOW_SIZE, 0x20000)]),
        "settings-window-split": lambda: body_headers() + window_update(1, 0x7FFF0000) +
        settings_frame([(INITIAL_WINDOW_SIZE, 0x20000)])[:12] + b"SPLIT" +
        settings_frame([(INITIAL_WINDOW_SIZE, 0x20000)])[12:],
        "settings-window-max": lambda: body_headers() + window_update(1, 0x7FFDFFFF) +
        settings_frame([(INITIAL_WINDOW_SIZE, 0x10000), (INITIAL_WINDOW_SIZE, 0x20000)]) +
        frame(DATA, END_STREAM, 1, b"max"),
        # 6.1, 6.2: DATA or HEADERS on stream 0; padding as long as the payload.
        "data-stream0": lambda: frame(DATA, 0, 0, b"x"),
        "headers-stream0": lambda: req(hello, sid=0),
        "data-bad-padding": lambda: body_headers() + frame(DATA, 0x8, 1, b"\x05abcd"),
        "headers-bad-padding": lambda: frame(HEADERS, END_STREAM | END_HEADERS | 0x8, 1,
                                             bytes([200]) + hello),
        # 6.4: RST_STREAM on stream 0, of a length other than 4.
        "rst-stream0": lambda: frame(RST_STREAM, 0, 0, struct.pack(">I", 8)),
        "rst-badlen": lambda: body_headers() + frame(RST_STREAM, 0, 1, b"\0\0\0\0\0"),
        # 6.5: SETTINGS on a stream, of a length not a multiple of 6, ACK with a payload;
        # 6.5.2: values out of range; an unknown setting is ignored.
        "settings-on-stream": lambda: frame(SETTINGS, 0, 1, b""),
        "settings-badlen": lambda: frame(SETTINGS, 0, 0, b"\0\x03\0\0\0\x64\0"),
        "settings-ack-payload": lambda: frame(SETTINGS, ACK, 0, b"\0\x03\0\0\0\x64"),
        "settings-enable-push-2": lambda: settings_frame([(2, 2)]),
        "settings-window-too-big": lambda: settings_frame([(INITIAL_WINDOW_SIZE, 0x80000000)]),
        "settings-frame-size-small": lambda: settings_frame([(5, 16383)]),
        "settings-frame-size-big": lambda: settings_frame([(5, 1 << 24)]),
        "settings-unknown": lambda: settings_frame([(0xBEEF, 7)]) + req(hello),
        # 6.6: PUSH_PROMISE from a client.
        "push-promise": lambda: body_headers() + frame(PUSH_PROMISE, END_HEADERS, 1,
                                                       struct.pack(">I", 2) + hello),
        # 6.7: PING of another length than 8, on a stream; a PING ACK is not answered.
        "ping-badlen": lambda: frame(PING, 0, 0, b"\0" * 7),
        "ping-on-stream": lambda: frame(PING, 0, 1, b"\0" * 8),
        # 6.8: GOAWAY on a stream.
        "goaway-on-stream": lambda: frame(GOAWAY, 0, 1, struct.pack(">II", 0, 0)),
        # 6.9: WINDOW_UPDATE of another length than 4.
        "wu-badlen": lambda: frame(WINDOW_UPDATE, 0, 0, b"\0\0\0\x01\0"),
        # 8.2, 8.3: malformed requests.
        "missing-method": lambda: req(scheme + auth + path),
        "missing-scheme": lambda: req(get + auth + path),
        "duplicate-path": lambda: req(hello + path),
        "status-in-request": lambda: req(hello + lit(b":status", b"200")),
        "empty-path": lambda: req(get + scheme + auth + lit(b":path", b"")),
        "asterisk-get": lambda: req(get + scheme + auth + lit(b":path", b"*")),
        "relative-path": lambda: req(get + scheme + auth + lit(b":path", b"hello")),
        "keep-alive": lambda: req(hello + lit(b"keep-alive", b"timeout=5")),
        "proxy-connection": lambda: req(hello + lit(b"proxy-connection", b"close")),
        "transfer-encoding": lambda: req(hello + lit(b"transfer-encoding", b"chunked")),
        "upgrade": lambda: req(hello + lit(b"upgrade", b"h2c")),
        "te-trailers-gzip": lambda: req(hello + lit(b"te", b"trailers, gzip")),
        "te-trailers": lambda: req(hello + lit(b"te", b"trailers")),
        "value-nul": lambda: req(hello + lit(b"x-a", b"a\0b")),
        "value-lf": lambda: req(hello + lit(b"x-a", b"a\nb")),
        "value-leading-space": lambda: req(hello + lit(b"x-a", b" a")),
        "value-trailing-tab": lambda: req(hello + lit(b"x-a", b"a\t")),
        "name-space": lambda: req(hello + lit(b"x a", b"1")),
        "name-colon": lambda: req(hello + lit(b"x:a", b"1")),
        "name-empty": lambda: req(hello + lit(b"", b"1")),
        "host-mismatch": lambda: req(hello + lit(b"host", b"evil.example")),
        "host-default-port": lambda: req(hello + lit(b"host", b"LocalHost:80")),
        "host-only": lambda: req(get + scheme + path + lit(b"host", b"localhost")),
        "no-authority": lambda: req(get + scheme + path),
        "content-length-short": lambda: body_headers(lit(b"content-length", b"10")) +
        frame(DATA, END_STREAM, 1, b"abc"),
        "content-length-long": lambda: body_headers(lit(b"content-length", b"2")) +
        frame(DATA, END_STREAM, 1, b"abc"),
        "content-length-no-data": lambda: req(post + lit(b"content-length", b"3")),
        "content-length-bad": lambda: body_headers(lit(b"content-length", b"3x")) +
        frame(DATA, END_STREAM, 1, b"abc"),
        "content-length-double": lambda: body_headers(lit(b"content-length", b"3") +
                                                      lit(b"content-length", b"4")) +
        frame(DATA, END_STREAM, 1, b"abc"),
        "trailers-pseudo": lambda: body_headers() + frame(DATA, 0, 1, b"abc") +
        req(lit(b":path", b"/x")),
        "trailers-no-end-stream": lambda: body_headers() + frame(DATA, 0, 1, b"abc") +
        req(lit(b"x-t", b"1"), END_HEADERS),
        "trailers-ok": lambda: body_headers() + frame(DATA, 0, 1, b"abc") + req(lit(b"x-t", b"1")),
        "connect": lambda: req(lit(b":method", b"CONNECT") + auth),
        "connect-with-path": lambda: req(lit(b":method", b"CONNECT") + auth + path),
        "connect-no-authority": lambda: req(lit(b":method", b"CONNECT")),
        "extended-connect": lambda: req(lit(b":method", b"CONNECT") + lit(b":protocol",
                                                                          b"websocket") +
                                        scheme + auth + path),
        "options-asterisk": lambda: req(lit(b":method", b"OPTIONS") + scheme + auth +
                                        lit(b":path", b"*")),
        "client-goaway": lambda: req(get + scheme + auth + lit(b":path", b"/slow/300")) +
        frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)),
    }
    c.handshake()
    for part in cases[name]().split(b"SPLIT"):  # a pause between reads
        for i, piece in enumerate(part.split(b"WAIT")):  # the response to stream 1 first
            if i:
                c.pump(lambda: 1 in c.ended, timeout=3)
            c.send(piece)
        time.sleep(0.05)
    c.pump(lambda: 1 in c.ended or c.goaway is not None, timeout=2)
    c.pump(lambda: False, timeout=0.05)  # a RST_STREAM after the response, a GOAWAY after that
    c.report(1)
    c.second_request(3)
    c.finish(wait=0.1 if c.goaway is None else 1)


def rule_cases(port, ca, names):
    """Runs rule_case for each name on a connection of its own; its lines as NAME.key=value."""
    import contextlib
    import io
    for name in names:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rule_case(Conn(port, ca=ca), name)
        for line in out.getvalue().splitlines():
            print(f"{name}.{line}")


def main():
    port = int(sys.argv[1])
    scenario = sys.argv[2]
    args = [a for a in sys.argv[3:] if not a.startswith("--tls=")]
    ca = next((a[6:] for a in sys.argv[3:] if a.startswith("--tls=")), None)
    c = Conn(port, ca=ca)

    if scenario == "request":  # request METHOD PATH [name=value ...] [--body=N]
        extra = b""
        body = None
        for a in args[2:]:
            if a.startswith("--body="):
                body = bytes(i % 251 for i in range(int(a[7:])))
                continue
            n, v = a.split("=", 1)
            extra += lit(n.encode(), v.encode())
        c.handshake()
        c.send_headers(1, request_block(args[0].encode(), args[1].encode(), extra),
                       end_stream=body is None)
        if body is not None:
            c.send_body(1, body)
        c.pump(lambda: 1 in c.ended)
        c.report(1)
    elif scenario == "maxbody":  # maxbody SIZE
        c.handshake()
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        sent = c.send_body(1, b"x" * int(args[0]))
        c.pump(lambda: 1 in c.ended and 1 in c.rst, timeout=2)
        print(f"sent={sent}")
        c.report(1)
        c.second_request(3)
    elif scenario == "uploadreset":  # uploadreset PATH SIZE: part of a body, then RST_STREAM
        c.handshake()
        c.send_headers(1, request_block(b"POST", args[0].encode()), end_stream=False)
        sent = c.send_body(1, b"u" * int(args[1]), end_stream=False)
        c.pump(lambda: False, timeout=0.3)
        c.send(frame(RST_STREAM, 0, 1, struct.pack(">I", 8)))
        print(f"sent={sent}")
        c.second_request(3)
    elif scenario == "uploadstall":  # uploadstall PATH SIZE: part of a body, then silence
        c.handshake()
        c.send_headers(1, request_block(b"POST", args[0].encode()), end_stream=False)
        sent = c.send_body(1, b"u" * int(args[1]), end_stream=False)
        c.pump(lambda: 1 in c.ended, timeout=10)
        print(f"sent={sent}")
        c.report(1)
        c.second_request(3)
    elif scenario == "headerlist":  # headerlist COUNT SIZE
        c.handshake()
        extra = b"".join(lit(b"x-h%d" % i, b"v" * int(args[1])) for i in range(int(args[0])))
        c.send_headers(1, request_block(b"GET", b"/hello", extra))
        c.pump(lambda: 1 in c.ended or c.goaway is not None)
        c.report(1)
        c.second_request(3)
    elif scenario in ("concurrency", "concurrency-early"):  # concurrency N PATH
        # "-early": the streams go out with the preface, before the server's SETTINGS is
        # acknowledged (its limit is then still pending).
        if scenario == "concurrency":
            c.handshake()
        else:
            c.send(PREFACE + settings_frame([]))
        n = int(args[0])
        ids = [1 + 2 * i for i in range(n)]
        c.send(b"".join(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                              request_block(b"GET", args[1].encode())) for sid in ids))
        c.pump(lambda: all(s in c.ended for s in ids), timeout=8)
        print(f"ok={sum(1 for s in ids if c.status(s) == '200' and s not in c.rst)}")
        print(f"refused={sum(1 for s in ids if c.rst.get(s) == 7)}")
        print(f"unfinished={sum(1 for s in ids if s not in c.ended)}")
        print(f"max_concurrent={c.server_settings.get(3, 'none')}")
        c.finish(wait=0.2)
    elif scenario == "flow":  # flow WINDOW PATH
        c.handshake([(INITIAL_WINDOW_SIZE, int(args[0]))])
        c.send_headers(1, request_block(b"GET", args[1].encode()))
        c.pump(lambda: 1 in c.ended, timeout=15)
        c.report(1)
        print(f"window_updates={c.window_updates_sent}")
        print(f"data_frames={c.frames.get(DATA, 0)}")
    elif scenario == "rapidreset":  # rapidreset PAIRS
        c.handshake()
        pairs = []
        for i in range(int(args[0])):
            sid = 1 + 2 * i
            pairs.append(frame(HEADERS, END_STREAM | END_HEADERS, sid,
                               request_block(b"GET", b"/count")))
            pairs.append(frame(RST_STREAM, 0, sid, struct.pack(">I", 8)))
        blast(c, pairs, 5)
        c.finish()
    elif scenario == "continuation":  # continuation FRAMES
        c.handshake()
        piece = b"".join(lit(b"x-c", b"v" * 100) for _ in range(100))  # ~10 KB of fields
        frames = [frame(HEADERS, 0, 1, request_block(b"GET", b"/hello"))]
        frames += [frame(CONTINUATION, 0, 1, piece) for _ in range(int(args[0]))]
        blast(c, frames, 5)
        c.finish()
        print(f"status={c.status(1)}")
        print(f"rst={c.rst.get(1, 'none')}")
    elif scenario == "hpackbomb":  # hpackbomb REFS SIZE
        c.handshake()
        block = request_block(b"GET", b"/hello", lit_indexed(b"x-bomb", b"a" * int(args[1])) +
                              idx(62) * int(args[0]))
        c.send_headers(1, block)
        c.pump(lambda: 1 in c.ended or c.goaway is not None)
        c.finish(wait=0.5)
        print(f"decoded_bytes={int(args[0]) * int(args[1])}")
        c.report(1)
    elif scenario in ("settingsflood", "pingflood"):  # settingsflood N
        c.handshake()
        if scenario == "settingsflood":
            frames = [frame(SETTINGS, 0, 0)] * int(args[0])
        else:
            frames = [frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(int(args[0]))]
        blast(c, frames, 5)
        c.finish()
    elif scenario == "emptydata":  # emptydata N
        c.handshake()
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        blast(c, [frame(DATA, 0, 1)] * int(args[0]), 5)
        c.finish()
    elif scenario == "wu0":  # wu0 stream|connection
        c.handshake()
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        c.send(window_update(1 if args[0] == "stream" else 0, 0))
        c.pump(lambda: 1 in c.rst or c.goaway is not None, timeout=3)
        print(f"rst={c.rst.get(1, 'none')}")
        if args[0] == "stream":
            c.second_request(3)
        c.finish(wait=0.5 if args[0] == "stream" else 3)
    elif scenario == "backlog":  # backlog PINGS: a connection error with more input queued
        c.handshake()
        blast(c, [window_update(0, 0)] + [frame(PING, 0, 0, b"\0" * 8)] * int(args[0]), 3)
        time.sleep(0.3)  # the server has answered and closed by now
        c.finish()
    elif scenario == "stall":  # stall PATH
        c.auto_window = False
        c.handshake([(INITIAL_WINDOW_SIZE, 0)])
        t0 = time.monotonic()
        c.send_headers(1, request_block(b"GET", args[0].encode()))
        c.pump(lambda: 1 in c.ended, timeout=8)
        print(f"elapsed_ms={int((time.monotonic() - t0) * 1000)}")
        c.report(1)
        c.auto_window = True
        c.second_request(3)
    elif scenario == "badheaders":  # badheaders KIND
        kind = args[0]
        get, scheme = lit(b":method", b"GET"), idx(6)
        auth, path = lit(b":authority", b"localhost"), lit(b":path", b"/hello")
        block = {
            "missing-path": get + scheme + auth,
            "unknown-pseudo": get + scheme + auth + path + lit(b":foo", b"bar"),
            "uppercase": get + scheme + auth + path + lit(b"X-Upper", b"1"),
            "pseudo-after-regular": get + scheme + auth + lit(b"x-a", b"1") + path,
            "connection": get + scheme + auth + path + lit(b"connection", b"keep-alive"),
            "te-gzip": get + scheme + auth + path + lit(b"te", b"gzip"),
        }[kind]
        c.handshake()
        c.send_headers(1, block)
        c.pump(lambda: 1 in c.ended or c.goaway is not None, timeout=3)
        c.report(1)
        c.second_request(3)
        c.finish(wait=0.2)
    elif scenario == "dataoverwindow":  # dataoverwindow EXTRA
        c.handshake()
        win = c.server_settings.get(INITIAL_WINDOW_SIZE, 65535)
        print(f"server_window={win}")
        c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
        total = win + int(args[0])
        frames = []
        while total > 0:
            n = min(total, 16384)
            frames.append(frame(DATA, 0, 1, b"z" * n))
            total -= n
        blast(c, frames, 5)
        c.pump(lambda: 1 in c.rst or c.goaway is not None, timeout=3)
        print(f"rst={c.rst.get(1, 'none')}")
        c.finish(wait=0.5)
    elif scenario == "priority":  # priority valid|stream0|self|badlen|flood N
        # RFC 9113 5.3.2 deprecates RFC 7540 priorities, but PRIORITY frames are still parsed
        # and checked (6.3: stream 0 is PROTOCOL_ERROR, a length other than 5 FRAME_SIZE_ERROR;
        # 5.3.1: a stream cannot depend on itself) and may arrive for any stream state.
        def pri(sid, dep, weight=15):
            return frame(PRIORITY, 0, sid, struct.pack(">IB", dep, weight))
        c.handshake()
        kind = args[0]
        if kind == "valid":
            # Idle streams 5 and 7 get priorities before they exist; stream 3's HEADERS
            # carries a priority depending on stream 1, closed by then; stream 1 is
            # reprioritized after it closed; stream 5 then opens as a request.
            c.send(pri(5, 0) + pri(7, 5, 200))
            c.send_headers(1, request_block(b"GET", b"/hello"))
            c.pump(lambda: 1 in c.ended)
            c.send(frame(HEADERS, END_STREAM | END_HEADERS | 0x20, 3,
                         struct.pack(">IB", 1, 200) + request_block(b"GET", b"/hello")))
            c.pump(lambda: 3 in c.ended)
            c.send(pri(1, 3))
            c.send_headers(5, request_block(b"GET", b"/hello"))
            c.pump(lambda: 5 in c.ended)
            for sid in (1, 3, 5):
                print(f"status{sid}={c.status(sid)}")
            c.second_request(9)
            c.finish(wait=0.2)
        elif kind == "stream0":
            c.send(pri(0, 3))
            c.finish()
        elif kind == "self":
            c.send_headers(1, request_block(b"POST", b"/echo"), end_stream=False)
            c.send(pri(1, 1))
            c.pump(lambda: 1 in c.rst or c.goaway is not None, timeout=3)
            print(f"rst={c.rst.get(1, 'none')}")
            c.finish(wait=0.5)
        elif kind == "badlen":
            c.send(frame(PRIORITY, 0, 5, b"\0\0\0\0"))
            c.pump(lambda: 5 in c.rst or c.goaway is not None, timeout=3)
            print(f"rst={c.rst.get(5, 'none')}")
            c.finish(wait=0.5)
        else:  # flood N: PRIORITY frames for idle streams, never a request
            blast(c, [pri(1 + 2 * i, 0) for i in range(int(args[1]))], 5)
            c.finish()
    elif scenario == "preface":  # preface bad|nosettings
        if args[0] == "bad":
            c.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + settings_frame([]))
        else:
            c.send(PREFACE + frame(PING, 0, 0, b"\0" * 8))
        c.finish()
    elif scenario == "shutdown":  # shutdown PATH: prints "sent" once the request is out
        c.handshake()
        c.send_headers(1, request_block(b"GET", args[0].encode()))
        print("sent", flush=True)
        c.pump(lambda: 1 in c.ended and c.goaway is not None, timeout=8)
        c.report(1)
        c.finish(wait=2)
    elif scenario == "closed":  # closed KIND
        closed_stream(c, args[0])
    elif scenario == "lowerid":  # lowerid headers|data
        lower_stream(c, args[0])
    elif scenario == "rules":  # rules NAME...
        c.sock.close()
        rule_cases(port, ca, args)
    elif scenario == "bigcont":  # bigcont KIND SIZE
        big_continuation(c, args[0], int(args[1]))
    else:
        print(f"unknown scenario {scenario}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
