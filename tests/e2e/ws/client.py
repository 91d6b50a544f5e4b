#!/usr/bin/env python3
"""A real WebSocket client (python3-websockets) for vela's end-to-end tests.

    client.py URI SCENARIO [CA_FILE]

Used by tests/e2e/websocket_test.cpp. It prints one "key=value" per line, which the C++
test parses and asserts on; nothing here decides pass or fail. CA_FILE (for wss://) is a
PEM file of the CA the client trusts.

Scenarios:
  echo        text, binary, 100 KB text, 2 MB binary, a fragmented text message, ping/pong
  deflate     the agreed extensions and a 1 MB compressible message round trip
  plain       the agreed extensions (the client offers deflate)
  close4001   the client closes with 4001 and a reason
  await_close the server closes: its code and reason
  subproto    offers "a, b": the subprotocol agreed
  noproto     offers no subprotocol: the handshake status
  tls_echo    one text message over wss
"""
import asyncio
import hashlib
import ssl
import sys

import websockets


def out(key, value):
    print(f"{key}={value}", flush=True)


def digest(data):
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()[:16]


def pattern(n):
    # Not periodic in a power of two, so a lost or repeated frame shows.
    return bytes((i % 251) for i in range(n))


async def roundtrip(ws, msg):
    await ws.send(msg)
    back = await ws.recv()
    return type(back) is type(msg) and back == msg


async def echo(ws):
    out("text", await roundtrip(ws, "hello, vela \u00e9\u4e2d"))
    out("binary", await roundtrip(ws, b"\x00\x01\x02\xff"))
    out("text_100k", await roundtrip(ws, "x" * 50_000 + "\u00e9" * 25_000))
    big = pattern(2 * 1024 * 1024)
    await ws.send(big)
    back = await ws.recv()
    out("binary_2m", back == big)
    out("binary_2m_len", len(back))
    # An iterable is sent as one fragmented message (one frame per item).
    await ws.send(["frag", "mented ", "message"])
    out("fragmented", await ws.recv() == "fragmented message")
    pong = await ws.ping(b"are you there")
    await asyncio.wait_for(pong, 3)
    out("pong", True)
    await ws.close()
    out("close_code", ws.close_code)


async def deflate(ws):
    out("extensions", ws.response_headers.get("Sec-WebSocket-Extensions", ""))
    msg = "vela compresses this line well. " * 32768  # 1 MiB
    await ws.send(msg)
    back = await ws.recv()
    out("deflate_1m", back == msg)
    out("deflate_1m_digest", digest(back) == digest(msg))
    await ws.close()


async def plain(ws):
    out("extensions", ws.response_headers.get("Sec-WebSocket-Extensions", ""))
    out("text", await roundtrip(ws, "y" * 1000))
    await ws.close()


async def close4001(ws):
    await ws.send("before close")
    await ws.recv()
    await ws.close(4001, "client says bye")
    out("close_code", ws.close_code)
    out("close_reason", ws.close_reason)


async def await_close(ws):
    try:
        msg = await asyncio.wait_for(ws.recv(), 3)
        out("unexpected", msg)
    except websockets.ConnectionClosed:
        pass
    await ws.wait_closed()
    out("close_code", ws.close_code)
    out("close_reason", ws.close_reason)


async def subproto(ws):
    out("subprotocol", ws.subprotocol)
    await ws.close()


async def tls_echo(ws):
    out("text", await roundtrip(ws, "over tls"))
    await ws.close()
    out("close_code", ws.close_code)


SCENARIOS = {
    "echo": (echo, {"max_size": 4 * 1024 * 1024}),
    "deflate": (deflate, {"max_size": 4 * 1024 * 1024}),
    "plain": (plain, {}),
    "close4001": (close4001, {}),
    "await_close": (await_close, {}),
    "subproto": (subproto, {"subprotocols": ["a", "b"]}),
    "noproto": (subproto, {}),
    "tls_echo": (tls_echo, {}),
}


async def main():
    uri, scenario = sys.argv[1], sys.argv[2]
    run, kwargs = SCENARIOS[scenario]
    kwargs = dict(kwargs, open_timeout=3, close_timeout=3)
    if len(sys.argv) > 3:
        kwargs["ssl"] = ssl.create_default_context(cafile=sys.argv[3])
    try:
        async with websockets.connect(uri, **kwargs) as ws:
            out("connected", True)
            await run(ws)
    except websockets.InvalidStatusCode as e:
        out("status", e.status_code)
    out("done", True)


if __name__ == "__main__":
    asyncio.run(main())
