"""castbench's version and the folder of its code, in a module of their own.

`castbench/__init__.py` re-exports the API on first use (`castbench.evaluate`), so a module
inside castbench that read `castbench.__version__` or `castbench.__file__` from the package
would close an import cycle through it (the API imports the records and reports that read
them). Modules inside castbench read them here; `castbench.__version__` is this one.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_ROOT", "__version__"]

__version__ = "0.1.0"

PACKAGE_ROOT = Path(__file__).parent.parent
"""The `castbench` package's folder, as `Path(castbench.__file__).parent` gives it."""
