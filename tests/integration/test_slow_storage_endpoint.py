"""A storage endpoint that accepts a request and then answers too slowly (its headers at once, then
a byte every few seconds: every byte restarts a read timeout) is found at the first step, within
seconds, as ``DELTA_DOWNGRADE_STORAGE_UNREACHABLE`` (exit 2), never after the 30 s whole-request
timeout as an unnamed storage error (exit 1). The endpoint is a tiny HTTP server on loopback."""

from __future__ import annotations

import socket
import threading
import time
from typing import Iterator

import pytest

from delta_downgrade.app.cli import main
from delta_downgrade.app.render.result import parse_result_lines

#: The README's promise: errors answer within seconds (the first step's listing is bounded at 10 s).
TIME_LIMIT_S = 20.0
TRICKLE_EVERY_S = 2.0


class TricklingServer:
    """Accepts every connection, answers each request with headers promising a long body, then
    sends one byte every :data:`TRICKLE_EVERY_S` seconds until the client goes away."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: 100000\r\n\r\n<")
                while not self.stopped.wait(TRICKLE_EVERY_S):
                    conn.sendall(b" ")
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture
def trickling_endpoint() -> Iterator[str]:
    server = TricklingServer()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


@pytest.mark.parametrize("command", [["inspect"], ["drop-feature", "{t}", "vacuumProtocolCheck"]])
def test_a_trickling_endpoint_is_unreachable_within_seconds(trickling_endpoint, capsys, command):
    table = "s3://bucket/t"
    argv = [w.format(t=table) for w in command] if len(command) > 1 else [command[0], table]
    options = ["--storage-option", f"AWS_ENDPOINT_URL={trickling_endpoint}", "--storage-option",
               "AWS_ALLOW_HTTP=true", "--storage-option", "AWS_REGION=us-east-1", "--storage-option",
               "AWS_ACCESS_KEY_ID=test", "--storage-option", "AWS_SECRET_ACCESS_KEY=trickle-secret-value"]
    started = time.monotonic()
    code = main([*argv, *options])
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    [result] = parse_result_lines(out)
    assert code == 2, (result, err)
    assert result["error_class"] == "DELTA_DOWNGRADE_STORAGE_UNREACHABLE", result
    assert took < TIME_LIMIT_S, f"answered after {took:.1f} s"
    assert "Traceback" not in err and "trickle-secret-value" not in out + err
