"""`radar serve`: preview a built site with the standard library's HTTP server on 127.0.0.1 only."""

from __future__ import annotations

import functools
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..errors import NotFoundError

HOST = "127.0.0.1"  # a preview is for this machine; never listen on other interfaces


def make_server(folder: Path, port: int) -> ThreadingHTTPServer:
    """A server for `folder` on 127.0.0.1:`port` (0 picks a free port)."""
    if not (folder / "index.html").is_file():
        raise NotFoundError(f"{folder} holds no site (run `radar site build {folder}` first)")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    return ThreadingHTTPServer((HOST, port), handler)


def serve_site(folder: Path, port: int, announce: Callable[[str], None]) -> None:
    """Serve until interrupted."""
    server = make_server(folder, port)
    announce(f"http://{HOST}:{server.server_address[1]}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
