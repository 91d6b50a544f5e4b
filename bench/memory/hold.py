#!/usr/bin/python3
"""bench/memory/hold.py: opens N connections of one kind to a server, does one checked
exchange on each, prints "ready N" and holds them until stdin ends (EOF or a line) or a
SIGTERM/SIGINT comes; then closes them all and exits. bench/memory/run measures the
server's memory meanwhile.

  hold.py --kind KIND --port P [--host H] [-n N] [--parallel K] [--path PATH]
          [--timeout S]

Kinds:
  ws        WebSocket upgrade to PATH (default /ws/echo), one 16-byte text message, its echo
            checked (python3-websockets, no extension offered, no pings)
  sse       GET PATH (default /sse/idle): a 200 with Content-Type text/event-stream
  h1        GET PATH (default /) over HTTP/1.1 keep-alive: 200 and "Hello, World!"
  h2        the same over h2c with prior knowledge (python3-h2)
  h1-tls    h1 over TLS, ALPN http/1.1 (no certificate check)
  h2-tls    h2 over TLS, ALPN h2

Connections are opened concurrently, at most --parallel (default 200) at a time, so the
server's listen backlog is never overrun. Any wrong answer, refused or dropped connection
is an error: it is printed on stderr and the exit status is 1 (nothing is held then).
Stdlib plus python3-websockets and python3-h2 (Debian's packages: run it with
/usr/bin/python3).
"""

import argparse
import asyncio
import os
import resource
import signal
import ssl
import sys
import threading

BODY = b"Hello, World!"


def parse_head(head):
    """(status, {lower-case name: value}) of an HTTP/1.1 response head."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise RuntimeError(f"not an HTTP/1.1 response: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class Held:
    """One open connection: what close() needs."""

    def __init__(self, writer=None, ws=None):
        self.writer = writer
        self.ws = ws

    def close(self):
        if self.ws is not None:
            self.ws.transport.abort()
        elif self.writer is not None:
            self.writer.transport.abort()


TLS = {}  # ALPN protocol -> its one client context (making one loads the CA store: slow)


def tls_context(alpn):
    if alpn not in TLS:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols([alpn])
        TLS[alpn] = ctx
    return TLS[alpn]


async def open_stream(args, alpn):
    ctx = tls_context(alpn) if alpn else None
    reader, writer = await asyncio.open_connection(args.host, args.port, ssl=ctx, limit=1 << 16)
    if alpn:
        got = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        if got != alpn:
            writer.transport.abort()
            raise RuntimeError(f"ALPN {alpn} asked, {got} negotiated")
    return reader, writer


async def do_h1(args, alpn=None):
    reader, writer = await open_stream(args, alpn)
    writer.write(f"GET {args.path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status, headers = parse_head(head)
    body = await reader.readexactly(int(headers.get("content-length", "-1")))
    if status != 200 or body != BODY:
        writer.transport.abort()
        raise RuntimeError(f"GET {args.path}: status {status}, body {body[:40]!r}")
    return Held(writer=writer)


async def do_sse(args):
    reader, writer = await open_stream(args, None)
    writer.write(
        f"GET {args.path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status, headers = parse_head(head)
    if status != 200 or not headers.get("content-type", "").startswith("text/event-stream"):
        writer.transport.abort()
        raise RuntimeError(f"GET {args.path}: status {status}, type {headers.get('content-type')}")
    return Held(writer=writer)


async def do_h2(args, alpn=None):
    import h2.config
    import h2.connection
    import h2.events

    reader, writer = await open_stream(args, alpn)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    conn.send_headers(
        1,
        [
            (":method", "GET"),
            (":scheme", "https" if alpn else "http"),
            (":authority", f"{args.host}:{args.port}"),
            (":path", args.path),
        ],
        end_stream=True,
    )
    writer.write(conn.data_to_send())
    status, body, ended = None, b"", False
    while not ended:
        data = await reader.read(65536)
        if not data:
            writer.transport.abort()
            raise RuntimeError("h2: the server closed the connection")
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers).get(":status")
            elif isinstance(ev, h2.events.DataReceived):
                body += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                ended = True
            elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                writer.transport.abort()
                raise RuntimeError(f"h2: {ev}")
        out = conn.data_to_send()
        if out:
            writer.write(out)
    if status != "200" or body != BODY:
        writer.transport.abort()
        raise RuntimeError(f"h2 GET {args.path}: status {status}, body {body[:40]!r}")
    await writer.drain()
    return Held(writer=writer)


async def do_ws(args):
    import websockets.client

    ws = await websockets.client.connect(
        f"ws://{args.host}:{args.port}{args.path}",
        compression=None,
        ping_interval=None,
        close_timeout=1,
        open_timeout=args.timeout,
    )
    await ws.send("0123456789abcdef")
    echo = await ws.recv()
    if echo != "0123456789abcdef":
        ws.transport.abort()
        raise RuntimeError(f"WebSocket echo {echo!r}")
    return Held(ws=ws)


async def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", required=True, choices=["ws", "sse", "h1", "h2", "h1-tls", "h2-tls"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("--parallel", type=int, default=200)
    p.add_argument("--path")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    if args.path is None:
        args.path = {"ws": "/ws/echo", "sse": "/sse/idle"}.get(args.kind, "/")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.n + 100
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        if hard < want:
            print(f"hold.py: RLIMIT_NOFILE hard limit {hard} is below {want}", file=sys.stderr)
            return 1

    one = {
        "ws": lambda: do_ws(args),
        "sse": lambda: do_sse(args),
        "h1": lambda: do_h1(args),
        "h2": lambda: do_h2(args),
        "h1-tls": lambda: do_h1(args, "http/1.1"),
        "h2-tls": lambda: do_h2(args, "h2"),
    }[args.kind]
    sem = asyncio.Semaphore(args.parallel)
    held, errors = [], []

    async def open_one(i):
        async with sem:
            try:
                held.append(await asyncio.wait_for(one(), args.timeout))
            except Exception as e:  # noqa: BLE001: every failure is reported the same way
                errors.append(f"connection {i}: {type(e).__name__}: {e}")

    await asyncio.gather(*(open_one(i) for i in range(args.n)))
    if errors:
        for e in errors[:5]:
            print(f"hold.py: {e}", file=sys.stderr)
        print(f"hold.py: {len(errors)} of {args.n} {args.kind} connections failed", file=sys.stderr)
        for h in held:
            h.close()
        return 1

    print(f"ready {len(held)}", flush=True)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)

    def wait_stdin():  # a thread: stdin may be a file or /dev/null, which epoll refuses
        os.read(0, 1)  # a line or EOF; unbuffered, so no lock is left held at exit
        loop.call_soon_threadsafe(done.set)

    threading.Thread(target=wait_stdin, daemon=True).start()
    await done.wait()
    for h in held:
        h.close()
    await asyncio.sleep(0.1)  # the aborts reach the sockets
    print(f"closed {len(held)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
