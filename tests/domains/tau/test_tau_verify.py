"""`castbench verify` on the τ packs: exported runs re-execute to the same trajectories."""

from __future__ import annotations

from pathlib import Path

from tests.support import invoke, sqlite_url


def test_an_exported_run_whose_tools_echo_their_arguments_verifies(tmp_path: Path) -> None:
    """τ's book_reservation returns its arguments as JSON in their given order, which an export
    does not keep: the re-executed result is the same JSON value, so the run verifies."""
    db = sqlite_url(tmp_path / "booking.db")
    out = tmp_path / "booking.castbench.json.gz"
    ran = invoke(
        "eval",
        "--domain",
        "tau-airline",
        "--tasks",
        "tau-airline-test-0",
        "--trials",
        "1",
        "--policy",
        "oracle",
        "--db",
        db,
    )
    assert ran.exit_code == 0, ran.output
    assert invoke("export", "latest", "--db", db, "--out", str(out)).exit_code == 0
    checked = invoke("verify", str(out))
    assert checked.exit_code == 0, checked.output
