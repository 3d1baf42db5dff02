"""A hostile HTTP server on 127.0.0.1: endless bodies, a byte at a time, endless headers, scripted answers.

Raw sockets, so it can misbehave in ways http.server cannot: trickle the status line, never end a body.
Each request is recorded (method, path, headers) with how many bytes were sent back before the client
hung up. `mode` picks the behaviour for every request; `reply` scripts (status, headers, body) for
mode "reply". Every loop stops when the client closes, after `limit` bytes, or when the server stops.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    sent: int = 0  # bytes written back before the client went away (or the stub stopped)


Reply = tuple[int, dict[str, str], bytes]


@dataclass
class Hostile:
    """mode: reply | endless | trickle | trickle_head | huge_head."""

    mode: str = "reply"
    reply: Callable[[Seen], Reply] = field(default=lambda _seen: (200, {}, b"[]"))
    interval: float = 0.05  # seconds between bytes when trickling
    limit: int = 1 << 30  # bytes at most, whatever the mode
    seen: list[Seen] = field(default_factory=list)
    url: str = ""

    def __enter__(self) -> Hostile:
        stub = self
        self._stop = threading.Event()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                stub._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    # -- one connection ------------------------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        buffer = b""
        while True:
            try:
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
            except OSError:
                return
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            length = int(headers.get("content-length") or 0)
            while len(buffer) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            buffer = buffer[length:]
            seen = Seen(method, path, headers)
            self.seen.append(seen)
            if not self._answer(conn, seen):
                return

    def _send(self, conn: socket.socket, seen: Seen, data: bytes) -> bool:
        if self._stop.is_set() or seen.sent + len(data) > self.limit:
            return False
        try:
            conn.sendall(data)
        except OSError:
            return False
        seen.sent += len(data)
        return True

    def _answer(self, conn: socket.socket, seen: Seen) -> bool:
        """Answer one request; False when the connection is done."""
        if self.mode == "reply":
            status, headers, body = self.reply(seen)
            head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\ncontent-type: application/json\r\n"
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            return self._send(conn, seen, head.encode() + body)
        if self.mode == "endless":
            if not self._send(conn, seen, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n["):
                return False
            block = b"0," * 32768
            while self._send(conn, seen, block):
                pass
            return False
        if self.mode == "huge_head":
            if not self._send(conn, seen, b"HTTP/1.1 200 OK\r\n"):
                return False
            line = b"x-pad: " + b"a" * 1000 + b"\r\n"
            while self._send(conn, seen, line):
                pass
            return False
        whole = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n" + b" " * 100000 + b"[]"
        start = 0 if self.mode == "trickle_head" else whole.index(b"\r\n\r\n") + 4
        if not self._send(conn, seen, whole[:start]):
            return False
        for i in range(start, len(whole)):
            time.sleep(self.interval)
            if not self._send(conn, seen, whole[i:i + 1]):
                return False
        return False
