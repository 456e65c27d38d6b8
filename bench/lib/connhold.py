#!/usr/bin/python3
"""Holds many connections to a server on 127.0.0.1 (issue 12's figures).

    connhold.py MODE HOST:PORT N SECONDS STATUS.json [INTERVAL_S]

MODE slowloris: N connections, each sends the start of a request
("GET /v2/health/live HTTP/1.1", Host, and the name of one more header)
and then one byte of that header's value every INTERVAL_S seconds (default
5; the connections' sends are spread over the interval), never ending the
header. A connection the server closes is counted, with the status line of
any answer it sent first (408, 431, ...), and opened again, so that N stay
open or on their way.

MODE grpc-idle: N HTTP/2 connections (prior knowledge, as gRPC), each sends
the preface, SETTINGS and one ServerLive call, acknowledges the server's
SETTINGS and PINGs, and stays idle once the call is answered. One closed
by the server is counted, not reopened.

At most 256 connects are outstanding at once (the listen backlog must not
overflow). Runs until SECONDS pass or SIGTERM / SIGINT; prints
"holding N" once all N are open (and, for grpc-idle, answered), and writes
STATUS.json then and when it stops: target, open, answered, opened in all,
closed by the server, the answers' status lines, connect errors and the
first error. The descriptor limit is raised to the hard limit first.
Standard library only (selectors: epoll).
"""
import collections
import errno
import json
import resource
import selectors
import signal
import socket
import struct
import sys
import time

WINDOW = 256
stop = False


def on_signal(signum, frame):
    global stop
    stop = True


def hpack_lit(name, value):
    """Literal header field without indexing, new name, no Huffman (short)."""
    n, v = name.encode(), value.encode()
    assert len(n) < 127 and len(v) < 127
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def grpc_live_request(authority):
    block = b"".join(hpack_lit(k, v) for k, v in (
        (":method", "POST"), (":scheme", "http"),
        (":path", "/inference.GRPCInferenceService/ServerLive"),
        (":authority", authority), ("content-type", "application/grpc"), ("te", "trailers")))
    return (PREFACE + frame(4, 0, 0) + frame(1, 0x4, 1, block) +
            frame(0, 0x1, 1, b"\x00\x00\x00\x00\x00"))


class Conn:
    __slots__ = ("sock", "state", "buf", "answered", "due")

    def __init__(self, sock):
        self.sock = sock
        self.state = "connecting"
        self.buf = b""
        self.answered = False
        self.due = 0.0


def main(argv):
    if len(argv) < 6 or argv[1] not in ("slowloris", "grpc-idle"):
        sys.stderr.write(__doc__)
        return 2
    mode, target = argv[1], argv[2]
    host, _, port = target.rpartition(":")
    port = int(port)
    n, seconds, status_path = int(argv[3]), float(argv[4]), argv[5]
    interval = float(argv[6]) if len(argv) > 6 else 5.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    sel = selectors.DefaultSelector()
    st = {"mode": mode, "target": n, "open": 0, "answered": 0, "opened": 0,
          "closed_by_server": 0, "answers": {}, "connect_errors": 0, "first_error": None,
          "interval_s": interval, "held_s": 0.0}
    conns = set()
    trickle = collections.deque()  # slowloris: (due, conn), due times in order
    prefix = (f"GET /v2/health/live HTTP/1.1\r\nHost: {host}\r\nX-Slow: ").encode()
    h2_first = grpc_live_request(target)
    t0 = time.monotonic()
    end = t0 + seconds
    connecting = 0
    to_open = n
    holding_since = None

    def error(msg):
        if st["first_error"] is None:
            st["first_error"] = msg

    def write_status():
        st["open"] = len(conns)
        st["held_s"] = round(time.monotonic() - holding_since, 1) if holding_since else 0.0
        with open(status_path, "w") as f:
            json.dump(st, f, indent=1)

    def drop(c, by_server):
        nonlocal connecting, to_open
        if c.state == "connecting":
            connecting -= 1
        try:
            sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        conns.discard(c)
        c.state = "closed"
        if by_server:
            st["closed_by_server"] += 1
            if mode == "slowloris":
                to_open += 1

    def open_one():
        nonlocal connecting
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((host, port))
        if rc not in (0, errno.EINPROGRESS):
            st["connect_errors"] += 1
            error(f"connect: {errno.errorcode.get(rc, rc)}")
            s.close()
            return False
        c = Conn(s)
        conns.add(c)
        connecting += 1
        st["opened"] += 1
        sel.register(s, selectors.EVENT_WRITE, c)
        return True

    def on_connected(c):
        nonlocal connecting
        connecting -= 1
        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            st["connect_errors"] += 1
            error(f"connect: {errno.errorcode.get(err, err)}")
            drop(c, False)
            return
        c.state = "open"
        try:
            c.sock.send(prefix if mode == "slowloris" else h2_first)
        except OSError as e:
            error(f"send: {e}")
            drop(c, True)
            return
        sel.modify(c.sock, selectors.EVENT_READ, c)
        if mode == "slowloris":
            c.due = time.monotonic() + interval * (len(trickle) % 97 + 1) / 97
            trickle.append((c.due, c))

    def on_readable(c):
        try:
            data = c.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        except BlockingIOError:
            return
        if not data:
            drop(c, True)
            return
        if mode == "slowloris":
            if not c.buf:
                line = data.split(b"\r\n", 1)[0][:40].decode("latin-1")
                st["answers"][line] = st["answers"].get(line, 0) + 1
            c.buf = b"x"  # counted once
            return
        c.buf += data
        out = b""
        while len(c.buf) >= 9:
            ln = int.from_bytes(c.buf[:3], "big")
            if len(c.buf) < 9 + ln:
                break
            ftype, flags = c.buf[3], c.buf[4]
            sid = int.from_bytes(c.buf[5:9], "big") & 0x7FFFFFFF
            payload, c.buf = c.buf[9:9 + ln], c.buf[9 + ln:]
            if ftype == 4 and not flags & 1:
                out += frame(4, 1, 0)
            elif ftype == 6 and not flags & 1:
                out += frame(6, 1, 0, payload)
            elif ftype == 7:
                code = struct.unpack(">I", payload[4:8])[0]
                key = f"GOAWAY {code}"
                st["answers"][key] = st["answers"].get(key, 0) + 1
            elif ftype in (1, 0, 3) and sid == 1 and (flags & 1 or ftype == 3) and not c.answered:
                c.answered = True
                st["answered"] += 1
        if out:
            try:
                c.sock.send(out)
            except OSError:
                pass

    while not stop and time.monotonic() < end:
        while to_open > 0 and connecting < WINDOW and not stop:
            to_open -= 1
            if not open_one():
                time.sleep(0.01)
                break
        # Slowloris: 10 ms ticks, so that each tick's sends are few and
        # short (the load core is shared with the measuring client).
        timeout = 0.01 if mode == "slowloris" else 0.1
        for key, ev in sel.select(timeout):
            c = key.data
            if c.state == "connecting":
                if ev & selectors.EVENT_WRITE:
                    on_connected(c)
            elif ev & selectors.EVENT_READ:
                on_readable(c)
        now = time.monotonic()
        while trickle and trickle[0][0] <= now:
            due, c = trickle.popleft()
            if c.state != "open":
                continue
            try:
                c.sock.send(b"a")
            except BlockingIOError:
                pass
            except OSError:
                drop(c, True)
                continue
            c.due = now + interval
            trickle.append((c.due, c))
        ready = len(conns) >= n and connecting == 0 and (
            mode == "slowloris" or st["answered"] >= n)
        if ready and holding_since is None:
            holding_since = now
            write_status()
            print(f"holding {len(conns)}", flush=True)
    write_status()
    print(f"stopped: {json.dumps(st)}", flush=True)
    for c in list(conns):
        c.sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
