"""A shared Postgres results store on the same machine (trust authentication, as the project's own
test server uses): an agent reaches it neither through its TCP port, even declared, nor through
its unix socket; and a record overwritten in it fails `castbench verify`."""

from __future__ import annotations

import glob
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from castbench._records.store import ResultsStore
from castbench._run.api import evaluate
from castbench.domain import load_domain
from tests.postgres import PostgresUnavailable, new_database, postgres_server
from tests.sandbox.probing import first_reply, kernel_support
from tests.support import invoke

pytestmark = pytest.mark.skipif(
    not kernel_support().available, reason=f"no sandbox here: {kernel_support().reason}"
)

AGENT = '''
import socket

from castbench._base.conversation import ReplyAction


class StoreProbe:
    """Declares the store's port and tries it, then the server's unix socket."""

    sandbox_connect = (PORT,)

    def __init__(self, briefing, route="tcp", arg=""):
        self.route, self.arg = route, arg

    def propose(self, view):
        try:
            if self.route == "tcp":
                with socket.create_connection(("127.0.0.1", PORT), timeout=5) as conn:
                    conn.sendall(b"\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f")  # SSLRequest
                    return ReplyAction(text=f"GOT {conn.recv(1)!r}")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(self.arg)
                sock.sendall(b"\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f")
                return ReplyAction(text=f"GOT {sock.recv(1)!r}")
        except Exception as exc:
            return ReplyAction(text=f"DENIED {exc!r}")
'''


pytestmark = pytest.mark.extra("postgres")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    try:
        with postgres_server() as admin:
            yield admin
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))


def test_the_store_is_out_of_reach_by_its_port_and_its_socket(server: str, tmp_path: Path) -> None:
    url = new_database(server)
    ResultsStore(url).runs()  # opened, as an eval with --db URL does
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    (tmp_path / "sbx_pg.py").write_text(AGENT.replace("PORT", str(port)))
    sockets = glob.glob(f"/tmp/castbench-pg-*/.s.PGSQL.{port}")
    assert sockets, "the test server's unix socket"
    sys.path.insert(0, str(tmp_path))
    try:
        by_port = first_reply("sbx_pg:StoreProbe")
        by_socket = first_reply(f"sbx_pg:StoreProbe?route=unix&arg={sockets[0]}")
    finally:
        sys.path.remove(str(tmp_path))
    assert by_port.startswith("DENIED"), by_port
    assert by_socket.startswith("DENIED"), by_socket


def test_an_overwritten_record_in_a_shared_store_fails_verify(server: str) -> None:
    url = new_database(server)
    task = next(task.id for task in load_domain("retail").tasks("test") if task.outcome == "change")
    failing = evaluate(domains="retail", policy="scripted:lookup-refuse", trials=1, tasks=[task], db=url)
    passing = evaluate(domains="retail", policy="oracle", trials=1, tasks=[task], db=url)
    store = ResultsStore(url)
    with store.db.transaction() as execute:
        record, reward = execute(
            "SELECT record_json, reward FROM trial WHERE run_id = :run", {"run": passing.outcome.run_id}
        ).fetchone()
        execute(
            "UPDATE trial SET record_json = :record, reward = :reward WHERE run_id = :run",
            {"record": record, "reward": reward, "run": failing.outcome.run_id},
        )
    result = invoke("verify", failing.outcome.run_id, "--db", url)
    assert result.exit_code == 1 and "differ from the digest castbench kept" in result.output, result.output
