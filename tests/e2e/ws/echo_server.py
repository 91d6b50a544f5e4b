#!/usr/bin/env python3
"""A real WebSocket server (python3-websockets) for vela's WebSocket client tests.

    echo_server.py PORT

Used by tests/e2e/websocket_client_test.cpp. Listens on 127.0.0.1:PORT, offers the
subprotocol "chat" and permessage-deflate (the library's defaults), and echoes every message,
except "fragments", answered with the text message "abcdef" sent in three fragments, and
"headers", answered with the request's X-Test header. Runs until killed.
"""
import asyncio
import sys

import websockets


async def echo(ws, path=None):
    async for msg in ws:
        if msg == "fragments":
            await ws.send(["ab", "cd", "ef"])
        elif msg == "headers":
            await ws.send(ws.request_headers.get("X-Test", ""))
        else:
            await ws.send(msg)


async def main(port):
    async with websockets.serve(echo, "127.0.0.1", port, subprotocols=["chat"],
                                max_size=8 * 1024 * 1024):
        await asyncio.Future()


asyncio.run(main(int(sys.argv[1])))
