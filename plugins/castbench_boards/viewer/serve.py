"""Serving a rendered page on loopback, for `castbench view --serve`: one page, no files."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["page_server"]


def page_server(html: str, port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server that answers `/` (and `/index.html`) with `html`; call `serve_forever()` on it.
    Port 0 picks a free port (read it from `server_address`)."""
    body = html.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            if self.path.split("#", 1)[0].split("?", 1)[0] not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the http.server API)
            return

    return ThreadingHTTPServer((host, port), Handler)
