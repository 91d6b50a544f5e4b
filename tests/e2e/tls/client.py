#!/usr/bin/python3
"""TLS client for tests/e2e/tls_test.cpp: close_notify, half records, timeouts.

usage: client.py MODE PORT CA
  close    one request with Connection: close, then read to the end
  idle     one keep-alive request, print READY, then read until the server ends it
  half     finish the handshake, send half a TLS record on the raw socket, vanish
  partial  send half a request head and read whatever the server answers until it ends

Prints CLEAN when the stream ended with close_notify (recv returned b''), UNCLEAN when it
ended without one (suppress_ragged_eofs is off and OP_IGNORE_UNEXPECTED_EOF, which Debian's
Python sets by default, is cleared, so a bare TCP close raises), then STATUS and the status line.
"""
import os, socket, ssl, sys
mode, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
ctx.options &= ~getattr(ssl, 'OP_IGNORE_UNEXPECTED_EOF', 0)  # a missing close_notify must show
s = ctx.wrap_socket(socket.create_connection(('127.0.0.1', port), timeout=8),
                    server_hostname='localhost', suppress_ragged_eofs=False)
if mode == 'half':
    raw = socket.socket(fileno=os.dup(s.fileno()))
    raw.sendall(b'\x17\x03\x03\x01\x00' + b'\x42' * 40)
    print('SENT', flush=True)
    os._exit(0)
conn = 'close' if mode == 'close' else 'keep-alive'
if mode == 'partial':
    s.sendall(b'GET / HTTP/1.1\r\nHost: local')
else:
    s.sendall(b'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: ' + conn.encode() + b'\r\n\r\n')
data = b''
try:
    while True:
        d = s.recv(65536)
        if not d:
            print('CLEAN', flush=True)
            break
        data += d
        if mode == 'idle' and data.endswith(b'Hello, World!'):
            print('READY', data.split(b'\r\n')[0].decode(), flush=True)
except (ssl.SSLEOFError, ssl.SSLError) as e:  # UNEXPECTED_EOF_WHILE_READING is an SSLError
    print('UNCLEAN', e, flush=True)
except Exception as e:
    print('ERROR', type(e).__name__, e, flush=True)
print('STATUS', data.split(b'\r\n')[0].decode(), flush=True)
