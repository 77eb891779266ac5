"""What a pack derives from its installed data, computed once per version and kept (`kept`).

A published task set's pack converts the package's tasks, classifies the broken ones and reads
settings off its environment at every start: seconds of CPU for the same answer each time (the τ
packs: 6 s before their first trial). `kept(name, versions, compute)` computes the text once per
(castbench's source, the pack's source, the data's `versions`) and keeps it in castbench's state
folder (`castbench._base.places.state_dir`), as the reference floors are kept; any change of either
source or of a version is a new key, so nothing stale is ever read back. A kept file that cannot
be read, or is not whole (its first line is its text's digest), is computed again; a state folder
that cannot be written only costs the next start the work again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import suppress
from functools import cache
from pathlib import Path

from castbench._base.places import state_dir
from castbench._base.version import PACKAGE_ROOT

__all__ = ["kept", "source_digest"]


@cache
def source_digest(root: Path) -> str:
    """The digest of every Python file under `root` (names and contents), read once per process:
    what `kept` keys on, and the kept figures' `castbench._results.report.digest.code_digest`."""
    hasher = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        hasher.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()


def kept(name: str, versions: Iterable[str], compute: Callable[[], str], code: Iterable[Path] = ()) -> str:
    """`compute()`, or the text it gave before for the same key: `name`, the data's `versions`,
    castbench's own source and that of the folders in `code` (the pack's). Best effort: written
    aside and renamed, whole or not at all."""
    hasher = hashlib.sha256(name.encode() + b"\0")
    for part in (*versions, source_digest(PACKAGE_ROOT), *(source_digest(Path(c)) for c in code)):
        hasher.update(part.encode() + b"\0")
    path = (
        state_dir()
        / "kept"
        / f"{''.join(c if c.isalnum() or c in '-_' else '_' for c in name)}-{hasher.hexdigest()[:32]}"
    )
    with suppress(OSError, UnicodeDecodeError, ValueError):
        check, text = path.read_text().split("\n", 1)
        if check == _check(text):  # whole: not cut short, not edited
            return text
    text = compute()
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        aside.write_text(f"{_check(text)}\n{text}")
        os.replace(aside, path)
    return text


def _check(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
