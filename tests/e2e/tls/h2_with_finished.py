#!/usr/bin/python3
"""HTTP/2-over-TLS client for tests/e2e/tls_test.cpp.

usage: h2_with_finished.py together|apart PORT CA

Runs the TLS 1.3 handshake over memory BIOs so the client's Finished can be held back and
sent in one TCP segment with the HTTP/2 preface, SETTINGS and a request on stream 1
("together", as curl often does), or sent alone first ("apart"). Then asks again on stream 3
on the same connection. Prints "STREAM 1 OK|TIMEOUT" and "STREAM 3 OK|TIMEOUT".
"""
import socket, ssl, sys, time
mode, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
ctx.set_alpn_protocols(['h2'])
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname='localhost')
sock = socket.create_connection(('127.0.0.1', port), timeout=5)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        if out.pending:
            sock.sendall(out.read())
        d = sock.recv(65536)
        if not d:
            sys.exit('eof during handshake')
        inc.write(d)
assert tls.selected_alpn_protocol() == 'h2', tls.selected_alpn_protocol()
def frame(t, flags, sid, payload):
    return len(payload).to_bytes(3, 'big') + bytes([t, flags]) + sid.to_bytes(4, 'big') + payload
# :method GET, :scheme https, :path / (static table), :authority localhost (literal)
block = b'\x82\x87\x84\x41\x09localhost'
def request(sid):
    return frame(1, 0x05, sid, block)  # HEADERS, END_STREAM | END_HEADERS
finished = out.read()  # the client's Finished, held back
if mode == 'apart':
    sock.sendall(finished)
    time.sleep(0.2)
    finished = b''
tls.write(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' + frame(4, 0, 0, b'') + request(1))
sock.sendall(finished + out.read())
buf = b''
def wait_stream(sid, within):
    global buf
    deadline = time.time() + within
    while time.time() < deadline:
        while len(buf) >= 9:
            n = int.from_bytes(buf[:3], 'big')
            if len(buf) < 9 + n:
                break
            t, flags, fsid = buf[3], buf[4], int.from_bytes(buf[5:9], 'big') & 0x7fffffff
            buf = buf[9 + n:]
            if t == 4 and not flags & 1:
                tls.write(frame(4, 1, 0, b''))  # SETTINGS ACK
                sock.sendall(out.read())
            if t in (0, 1) and flags & 1 and fsid == sid:
                return True
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            d = sock.recv(65536)
        except socket.timeout:
            return False
        if not d:
            return False
        inc.write(d)
        try:
            while True:
                buf += tls.read(65536)
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
            pass
    return False
print('STREAM 1', 'OK' if wait_stream(1, 3) else 'TIMEOUT', flush=True)
tls.write(request(3))
sock.sendall(out.read())
print('STREAM 3', 'OK' if wait_stream(3, 2) else 'TIMEOUT', flush=True)
