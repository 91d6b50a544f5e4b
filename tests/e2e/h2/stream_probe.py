#!/usr/bin/env python3
"""HTTP/2 scenarios for streamed bodies and server-sent events (tests/e2e/sse_test.cpp).

    stream_probe.py PORT SCENARIO PATH [ARGS...]

Built on probe.py's hand-written frames (Conn). Each scenario stops at a point the C++ test
wants to look at the server (a line "ready" on stdout), then waits until the test creates a
"go" file before going on, so the test decides the timing rather than a sleep here. It
prints "key=value" lines; the assertions are in the C++ test.
"""
import os
import struct
import sys
import time

from probe import (Conn, INITIAL_WINDOW_SIZE, RST_STREAM, frame, lit, request_block,
                   window_update)

CANCEL = 8


def ready():
    print("ready", flush=True)


def wait_for(path, seconds=15.0):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


def pattern(n):
    """Byte i is 'a' + (i % 251) % 26: the C++ producers write the same."""
    period = bytes(ord("a") + (i % 251) % 26 for i in range(251))
    return (period * (n // 251 + 1))[:n]


def body_len(c, sid):
    return len(c.body.get(sid, b""))


def report_end(c, sid):
    print(f"end_stream={1 if sid in c.ended and sid not in c.rst else 0}")
    print(f"rst={c.rst.get(sid, 'none')}")


def main():
    port, scenario, path = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
    args = sys.argv[4:]
    c = Conn(port)

    if scenario == "drain":  # drain PATH: "ready" after the first DATA; the test stops the app
        c.handshake()
        c.send_headers(1, request_block(b"GET", path))
        c.pump(lambda: body_len(c, 1) > 0 or 1 in c.ended)
        ready()
        t0 = time.monotonic()
        c.pump(lambda: 1 in c.ended and c.goaway is not None, timeout=10)
        print(f"end_ms={int((time.monotonic() - t0) * 1000)}")
        report_end(c, 1)
        c.report(1)
        c.finish(wait=2)
    elif scenario == "window":  # window PATH WINDOW GO: reads WINDOW bytes, then stops reading
        c.auto_window = False
        window = int(args[0])
        c.handshake([(INITIAL_WINDOW_SIZE, window)])
        c.send_headers(1, request_block(b"GET", path))
        c.pump(lambda: body_len(c, 1) >= window or 1 in c.ended)
        print(f"before_go={body_len(c, 1)}")
        ready()
        wait_for(args[1])
        # Open both windows far beyond the body: the rest flows without further updates.
        c.send(window_update(1, 1 << 30) + window_update(0, 1 << 30))
        c.pump(lambda: 1 in c.ended, timeout=30)
        body = bytes(c.body.get(1, b""))
        print(f"body_len={len(body)}")
        print(f"pattern_ok={1 if body == pattern(len(body)) else 0}")
        report_end(c, 1)
    elif scenario == "reset":  # reset PATH BYTES GO: RST_STREAM CANCEL after BYTES of body
        c.handshake()
        c.send_headers(1, request_block(b"GET", path))
        c.pump(lambda: body_len(c, 1) >= int(args[0]) or 1 in c.ended)
        c.send(frame(RST_STREAM, 0, 1, struct.pack(">I", CANCEL)))
        print(f"received={body_len(c, 1)}")
        ready()
        # Keep the connection (only the stream ended) and answer its frames meanwhile.
        deadline = time.monotonic() + 15
        while not os.path.exists(args[1]) and time.monotonic() < deadline and not c.closed:
            c.pump(lambda: False, timeout=0.02)
        c.second_request(3)
    elif scenario == "request":  # request PATH [name=value ...]: timed DATA frames
        extra = b"".join(lit(*a.encode().split(b"=", 1)) for a in args)
        c.handshake()
        t0 = time.monotonic()
        c.send_headers(1, request_block(b"GET", path, extra))
        seen = 0
        deadline = time.monotonic() + 10
        while 1 not in c.ended and not c.closed and time.monotonic() < deadline:
            c.pump(lambda: body_len(c, 1) > seen or 1 in c.ended, timeout=0.5)
            if body_len(c, 1) > seen:
                seen = body_len(c, 1)
                print(f"data_at_ms={int((time.monotonic() - t0) * 1000)}")
        report_end(c, 1)
        c.report(1)
    else:
        print(f"unknown scenario {scenario}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
