"""Bounded HTTP for the GitHub client: a total time per request and a cap on the bytes of an answer.

httpx's timeouts apply to each socket read, so a server that sends one byte a second never times out
and one that streams forever grows the process without end. `bounded_client` gives an httpx.Client
whose every socket operation is clipped to the current request's deadline (set by `Deadline.start`),
and `read_capped` reads a streamed answer's (decoded) body up to a byte cap.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpcore
import httpx


class TooLarge(Exception):
    """An answer's body passed the byte cap."""


class Deadline(threading.local):
    """The monotonic time by which the current thread's request must be done (None: no deadline)."""

    at: float | None = None

    def start(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def clear(self) -> None:
        self.at = None

    def clip(self, timeout: float | None, error: type[Exception]) -> float | None:
        """`timeout` shortened to the time left; `error` when none is left."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("the request ran past its total time")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.clip(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.clip(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, self._deadline.clip(timeout, httpcore.ConnectTimeout))
        return _Stream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """The sync socket backend with every connect, read and write clipped to the request's deadline."""

    def __init__(self, deadline: Deadline) -> None:
        self._inner, self._deadline = httpcore.SyncBackend(), deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = self._deadline.clip(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options), self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        timeout = self._deadline.clip(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options), self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_client(deadline: Deadline, **kw: Any) -> httpx.Client:
    """An httpx.Client (kw as for httpx.Client) whose transports, proxies included, honour `deadline`."""
    client = httpx.Client(**kw)
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]  # noqa: SLF001
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _Backend(deadline)  # noqa: SLF001 - httpcore has no public setter
    return client


def read_capped(resp: httpx.Response, max_bytes: int) -> bytes:
    """The decoded body of a streamed `resp`, or TooLarge once it passes `max_bytes` (nothing more is read)."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(f"the answer declares {int(declared)} bytes, more than the {max_bytes}-byte cap")
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"the answer passed the {max_bytes}-byte cap")
        chunks.append(chunk)
    return b"".join(chunks)
