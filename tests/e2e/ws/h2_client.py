#!/usr/bin/env python3
"""WebSocket over HTTP/2 (RFC 8441) for vela's end-to-end tests: python3-h2 speaks HTTP/2
(the extended CONNECT, flow control, END_STREAM and RST_STREAM) and python3-wsproto the
WebSocket protocol on the stream (masking, fragments, permessage-deflate, the closing
handshake).

    h2_client.py PORT SCENARIO PATH [--tls=CA]

Used by tests/e2e/websocket_h2_test.cpp. It prints one "key=value" per line, which the C++
test parses and asserts on; nothing here decides pass or fail.

Scenarios:
  settings      SETTINGS_ENABLE_CONNECT_PROTOCOL as the server announced it
  echo          text, binary, 200 KB text, 3 MB binary (past both windows), a fragmented
                message, ping/pong, then the client's close (1000): code back, how the
                stream ended
  deflate       permessage-deflate offered: the answer, a 1 MB text round trip, the bytes
                that crossed
  subproto      offers "a, b": the subprotocol agreed
  status        the extended CONNECT's :status only (a refusal)
  badproto      :protocol other than websocket: the :status
  noversion     no sec-websocket-version: the :status
  get           a plain GET over HTTP/2 to PATH: the :status
  server_close  the server closes: code, reason, whether its side stays open for our answer;
                we answer and end ours
  many          three sessions and a GET on one connection at once, messages interleaved
  reset         RST_STREAM CANCEL on a session, then a new session on the same connection
                (on /plain)
  end           END_STREAM without a closing frame: how the server ends the stream
  held          60 messages of 64 KB sent at once to a route that holds each a while
  unmasked      an unmasked client frame: the server's closing frame, its END_STREAM
  too_big       a 5000-byte message to a route that takes 4096
  early         a message sent with the extended CONNECT, before the answer
  idle          a session silent for IDLE_SECONDS (1.5) between two messages
  await_close   waits for the server's close (a graceful stop): code, reason
  hello         one text message, then waits for the server's close (a room)
"""
import hashlib
import os
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import (BytesMessage, CloseConnection, Message, Ping, Pong,
                            TextMessage)
from wsproto.extensions import PerMessageDeflate


def out(key, value):
    print(f"{key}={value}", flush=True)


def digest(data):
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()[:16]


def pattern(n):
    return bytes((i % 251) for i in range(n))


class H2:
    """One HTTP/2 connection with WebSocket sessions on its streams."""

    def __init__(self, port, ca=None):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if ca:
            ctx = ssl.create_default_context(cafile=ca)
            ctx.set_alpn_protocols(["h2"])
            sock = ctx.wrap_socket(sock, server_hostname="localhost")
            out("alpn", sock.selected_alpn_protocol())
        self.sock = sock
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.settings_seen = False
        self.streams = {}
        self.wait(lambda: self.settings_seen)

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.time()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        if not data:
            raise EOFError("the server closed the connection")
        for ev in self.conn.receive_data(data):
            self.on_event(ev)
        self.flush()

    def wait(self, cond, seconds=10.0):
        deadline = time.time() + seconds
        while not cond():
            if time.time() > deadline:
                raise TimeoutError("timed out")
            self.pump(deadline)

    def on_event(self, ev):
        if isinstance(ev, h2.events.RemoteSettingsChanged):
            self.settings_seen = True
            return
        sid = getattr(ev, "stream_id", None)
        s = self.streams.get(sid)
        if s is None:
            return
        if isinstance(ev, h2.events.ResponseReceived):
            s.headers = dict(ev.headers)
            s.status = int(s.headers[":status"])
            if ev.stream_ended:
                s.ended = True
        elif isinstance(ev, h2.events.DataReceived):
            s.wire += len(ev.data)
            self.conn.acknowledge_received_data(ev.flow_controlled_length, sid)
            if s.ws is None:
                s.early += ev.data  # came with the response's HEADERS
            elif s.ws.state != ConnectionState.CLOSED:
                s.ws.receive_data(ev.data)
                s.collect()
            if ev.stream_ended:
                s.ended = True
        elif isinstance(ev, h2.events.StreamEnded):
            s.ended = True
        elif isinstance(ev, h2.events.StreamReset):
            s.reset = ev.error_code
        elif isinstance(ev, h2.events.WindowUpdated):
            pass

    def open(self, path, protocol="websocket", version="13", extra=(), deflate=False,
             early=None):
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", "CONNECT"), (":protocol", protocol), (":scheme", "https"),
                   (":path", path), (":authority", "localhost")]
        if version:
            headers.append(("sec-websocket-version", version))
        ext = None
        if deflate:
            ext = PerMessageDeflate()
            offer = ext.offer()
            headers.append(("sec-websocket-extensions", "permessage-deflate" if offer is True
                            else "permessage-deflate; " + offer))
        headers.extend(extra)
        s = Session(self, sid, ext)
        self.streams[sid] = s
        self.conn.send_headers(sid, headers)
        if early:  # frames sent before the answer, in the same write as the HEADERS
            self.conn.send_data(sid, early)
        self.flush()
        self.wait(lambda: s.status is not None or s.reset is not None)
        if s.status == 200:
            exts = []
            answer = s.headers.get("sec-websocket-extensions")
            if ext is not None and answer:
                ext.finalize(answer)
                exts = [ext]
            s.ws = Connection(ConnectionType.CLIENT, extensions=exts)
            if s.early:
                s.ws.receive_data(bytes(s.early))
                s.collect()
        return s

    def get(self, path):
        sid = self.conn.get_next_available_stream_id()
        s = Session(self, sid, None)
        self.streams[sid] = s
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "https"), (":path", path),
                                     (":authority", "localhost")], end_stream=True)
        self.flush()
        return s


class Session:
    """A WebSocket session on one stream (or a plain request's stream)."""

    def __init__(self, h, sid, ext):
        self.h, self.sid, self.ext = h, sid, ext
        self.status = None
        self.headers = {}
        self.ws = None
        self.events = []
        self.ended = False
        self.reset = None
        self.wire = 0
        self.early = bytearray()

    def collect(self):
        self.events.extend(self.ws.events())

    def send(self, event):
        self.send_bytes(self.ws.send(event))

    def send_bytes(self, data, end=False):
        # As much as the windows allow at a time, reading meanwhile (the server's frames
        # keep coming while ours wait for WINDOW_UPDATE).
        conn = self.h.conn
        while data:
            room = min(conn.local_flow_control_window(self.sid), conn.max_outbound_frame_size)
            if room <= 0:
                self.h.pump(time.time() + 0.2)
                continue
            conn.send_data(self.sid, data[:room])
            data = data[room:]
            self.h.flush()
        if end:
            conn.end_stream(self.sid)
            self.h.flush()

    def next_event(self, seconds=10.0):
        self.h.wait(lambda: self.events or self.ended or self.reset is not None, seconds)
        return self.events.pop(0) if self.events else None

    def message(self, seconds=10.0):
        """The next whole message (fragments joined), or the event that came instead."""
        parts = []
        while True:
            ev = self.next_event(seconds)
            if isinstance(ev, Message):
                parts.append(ev.data)
                if ev.message_finished:
                    joined = "".join(parts) if isinstance(ev, TextMessage) else b"".join(parts)
                    return joined
            elif isinstance(ev, Pong):
                return ev
            elif isinstance(ev, Ping):
                self.send(ev.response())  # the server's keep-alive
                continue
            else:
                return ev

    def roundtrip(self, msg):
        self.send(TextMessage(data=msg) if isinstance(msg, str) else BytesMessage(data=msg))
        back = self.message()
        return type(back) is type(msg) and back == msg

    def close(self, code=1000, reason=""):
        self.send(CloseConnection(code=code, reason=reason))
        ev = self.next_event()
        return ev

    def report_end(self, prefix=""):
        # How the stream ended: END_STREAM (ended) and/or RST_STREAM (its code).
        try:
            self.h.wait(lambda: self.ended or self.reset is not None, 3.0)
        except TimeoutError:
            pass
        if self.reset is None and self.ended:
            try:  # a RST_STREAM NO_ERROR may follow our END_STREAM's absence
                self.h.wait(lambda: self.reset is not None, 0.3)
            except TimeoutError:
                pass
        out(prefix + "end_stream", int(self.ended))
        out(prefix + "reset", "none" if self.reset is None else int(self.reset))


def run(port, scenario, path, ca):
    h = H2(port, ca)
    if scenario == "settings":
        out("enable_connect_protocol", h.conn.remote_settings.enable_connect_protocol)
        return
    if scenario in ("status", "badproto", "noversion"):
        s = h.open(path, protocol="chat" if scenario == "badproto" else "websocket",
                   version="" if scenario == "noversion" else "13")
        out("status", s.status)
        if s.status != 200:
            h.wait(lambda: s.ended or s.reset is not None)
        # The connection is still sound: a GET on it.
        g = h.get("/hello")
        h.wait(lambda: g.status is not None and g.ended)
        out("after", g.status)
        return
    if scenario == "get":
        g = h.get(path)
        h.wait(lambda: g.status is not None and g.ended)
        out("status", g.status)
        return
    if scenario == "echo":
        s = h.open(path)
        out("status", s.status)
        out("accept_header", "sec-websocket-accept" in s.headers)
        out("text", s.roundtrip("hello, vela \u00e9\u4e2d"))
        out("binary", s.roundtrip(b"\x00\x01\x02\xff"))
        out("text_200k", s.roundtrip("x" * 100_000 + "\u00e9" * 50_000))
        big = pattern(3 * 1024 * 1024)
        s.send(BytesMessage(data=big))
        back = s.message(20.0)
        out("binary_3m", back == big)
        s.send(TextMessage(data="frag", message_finished=False))
        s.send(TextMessage(data="mented ", message_finished=False))
        s.send(TextMessage(data="message", message_finished=True))
        out("fragmented", s.message() == "fragmented message")
        s.send(Ping(payload=b"p1"))
        pong = s.message()
        out("pong", isinstance(pong, Pong) and pong.payload == b"p1")
        ev = s.close(1000, "bye")
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        s.report_end()
        return
    if scenario == "deflate":
        s = h.open(path, deflate=True)
        out("status", s.status)
        out("extensions", s.headers.get("sec-websocket-extensions", "none"))
        msg = "vela " * 200_000
        before = s.wire
        out("text_1m", s.roundtrip(msg))
        out("wire_smaller", s.wire - before < len(msg) // 10)
        ev = s.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    if scenario == "subproto":
        s = h.open(path, extra=[("sec-websocket-protocol", "a, b")])
        out("status", s.status)
        out("subprotocol", s.headers.get("sec-websocket-protocol", "none"))
        out("text", s.roundtrip("x"))
        return
    if scenario == "server_close":
        s = h.open(path)
        out("status", s.status)
        ev = s.next_event()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        out("close_reason", ev.reason if isinstance(ev, CloseConnection) else "")
        try:  # the server waits for our closing frame with its side open
            h.wait(lambda: s.ended or s.reset is not None, 0.3)
        except TimeoutError:
            pass
        out("server_ended", int(s.ended))
        out("reset_before_answer", "none" if s.reset is None else int(s.reset))
        s.send_bytes(s.ws.send(ev.response()), end=True)
        try:  # the server ends its side once both closing frames went
            h.wait(lambda: s.ended, 3.0)
        except TimeoutError:
            pass
        out("end_after_answer", int(s.ended))
        # The stream is closed both ways now: no RST_STREAM follows.
        try:
            h.wait(lambda: s.reset is not None, 0.5)
        except TimeoutError:
            pass
        out("reset", "none" if s.reset is None else int(s.reset))
        g = h.get("/hello")
        h.wait(lambda: g.status is not None and g.ended)
        out("after", g.status)
        return
    if scenario == "many":
        sessions = [h.open(path) for _ in range(3)]
        out("statuses", ",".join(str(s.status) for s in sessions))
        g = h.get("/hello")
        for i, s in enumerate(sessions):
            s.send(TextMessage(data=f"m{i}-" + "y" * (10_000 * (i + 1))))
        ok = 0
        for i, s in enumerate(sessions):
            if s.message() == f"m{i}-" + "y" * (10_000 * (i + 1)):
                ok += 1
        h.wait(lambda: g.status is not None and g.ended)
        out("echoed", ok)
        out("get", g.status)
        for s in sessions:
            s.close()
        return
    if scenario == "reset":
        s = h.open(path)
        out("first", s.roundtrip("one"))
        h.conn.reset_stream(s.sid, error_code=8)  # CANCEL
        h.flush()
        s2 = h.open("/plain")  # (another route: PATH's handler reports the first's end)
        out("second_status", s2.status)
        out("second", s2.roundtrip("two"))
        ev = s2.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    if scenario == "end":
        s = h.open(path)
        out("first", s.roundtrip("one"))
        h.conn.end_stream(s.sid)
        h.flush()
        s.report_end()
        g = h.get("/hello")
        h.wait(lambda: g.status is not None and g.ended)
        out("after", g.status)
        return
    if scenario == "held":
        s = h.open(path)
        msgs = [bytes([i]) * 65536 for i in range(60)]
        blob = b"".join(s.ws.send(BytesMessage(data=m)) for m in msgs)
        s.send_bytes(blob)
        ok = 0
        for m in msgs:
            if s.message(20.0) == m:
                ok += 1
        out("echoed", ok)
        ev = s.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    if scenario in ("unmasked", "too_big"):
        s = h.open(path)
        out("status", s.status)
        if scenario == "unmasked":
            s.send_bytes(b"\x81\x02hi")  # a client frame without a mask (RFC 6455 5.1)
        else:
            s.send(TextMessage(data="z" * 5000))
        ev = s.next_event()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        try:  # after a protocol error the server's side ends behind its closing frame
            h.wait(lambda: s.ended or s.reset is not None, 3.0)
        except TimeoutError:
            pass
        out("server_ended", int(s.ended))
        g = h.get("/hello")
        h.wait(lambda: g.status is not None and g.ended)
        out("after", g.status)
        return
    if scenario == "early":
        first = Connection(ConnectionType.CLIENT).send(TextMessage(data="early bird"))
        s = h.open(path, early=first)
        out("status", s.status)
        got = s.message()
        out("got", got if isinstance(got, str) else type(got).__name__)
        out("text", s.roundtrip("later"))
        ev = s.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    if scenario == "idle":
        s = h.open(path)
        out("status", s.status)
        out("before", s.roundtrip("before"))
        time.sleep(float(os.environ.get("IDLE_SECONDS", "1.5")))
        out("after", s.roundtrip("after"))
        ev = s.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    if scenario == "await_close":
        s = h.open(path)
        out("status", s.status)
        out("text", s.roundtrip("x"))
        ev = s.next_event(10.0)
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        out("close_reason", ev.reason if isinstance(ev, CloseConnection) else "")
        try:
            s.send_bytes(s.ws.send(ev.response()), end=True)
            out("answered", 1)
        except h2.exceptions.ProtocolError:
            # python3-h2 takes the GOAWAY of a graceful shutdown for the connection's end and
            # sends nothing more, even on the streams the GOAWAY lets finish.
            out("answered", 0)
        return
    if scenario == "hello":
        s = h.open(path)
        out("status", s.status)
        s.send(TextMessage(data="from-h2"))
        got = s.message()
        out("got", got if isinstance(got, str) else type(got).__name__)
        ev = s.close()
        out("close_code", ev.code if isinstance(ev, CloseConnection) else type(ev).__name__)
        return
    out("error", "unknown scenario " + scenario)


def main():
    port = int(sys.argv[1])
    scenario = sys.argv[2]
    path = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else "/echo"
    ca = next((a[6:] for a in sys.argv[3:] if a.startswith("--tls=")), None)
    try:
        run(port, scenario, path, ca)
    except Exception as e:  # printed for the test's failure message
        out("exception", f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
