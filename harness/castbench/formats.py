"""castbench's public API for run file formats: what a pack or plugin implements to read and
write runs in a format of its own (`castbench import FILE`, `castbench export --format NAME`),
registered under the `castbench.formats` entry point group (docs/api.md).

A module of its own, on top of the core: nothing in castbench imports it, so it imports what it
re-exports statically (the import contract sees each edge) and loads only when a format is used.
These names were in `castbench.domain` until 0.1.0; there they still resolve, with a
`DeprecationWarning`, until castbench 0.2.0.
"""

# ruff: noqa: F401  (each import is a public name)

from __future__ import annotations

from castbench import _public
from castbench._records.store.export import ArchiveError, ExportedRun, RunFormat

__all__, __getattr__, __dir__ = _public.names(globals())
