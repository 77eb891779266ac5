"""Whether code from outside castbench's own installation could have run in castbench's process
at its start-up (issue 56).

castbench's process holds the tasks, the ground truth and the results store, so it never runs
agent code: agents are imported only in the sandboxed workers, from the folders given with
`--agent-path` (`castbench._agents.paths`). What Python itself runs before `main()` is the gap:
a `sitecustomize.py`/`usercustomize.py` or a module named like one castbench imports (`rich.py`,
`typer.py`) in a folder on `PYTHONPATH`, an executable line of a `.pth` file that a distribution
outside castbench's requirements installed. `outside_code()` lists what it finds; the console
entry point (`castbench._cli.app.main`) refuses to start on any of it (exit code 5, one `error:`
line) unless the operator turned the sandbox off (`CASTBENCH_SANDBOX=off`: the run is then
recorded as unsandboxed anyway).

What counts as castbench's installation: the standard library, the environment's own
site-packages, castbench's package and, for an editable install, the checkout's `harness`,
`domains` and `plugins` folders (a `PYTHONPATH` entry of exactly the checkout's root is accepted:
the test suite names its agents from it). Everything else is outside, whatever it is called.

This is a check made after the fact by the process whose start it judges: code that ran can hide
itself (docs/sandbox.md says what holds). It closes the route in practice because agents no
longer need any of these ways in, and the agent's own folder is refused when it holds task
files, splits, stores or exports (`castbench._agents.sandbox`), what such code would copy there.
"""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig
from functools import cache
from pathlib import Path

__all__ = ["EXIT_CODE", "outside_code", "trusted_roots"]

EXIT_CODE = 5
"""`castbench` refused to start: code from outside its installation could have run in it."""

_SEEDS = {"pip", "setuptools", "wheel", "castbench"}
"""Distributions every environment holds whose `.pth` files castbench trusts (setuptools'
`distutils-precedence.pth`, castbench's own editable finder)."""


def _real(path: str) -> str:
    return os.path.realpath(path)


def _harness() -> str:
    return _real(os.path.dirname(os.path.dirname(__file__)))


def _checkout() -> str | None:
    harness = Path(_harness())
    if harness.parent.name == "harness" and (harness.parent.parent / "pyproject.toml").is_file():
        return str(harness.parent.parent)
    return None


def _site_packages() -> set[str]:
    """The environment's own site-packages: sysconfig's, and the virtual environment's of this
    interpreter (`pyvenv.cfg` beside its `bin`: under `python -S`, site never named it)."""
    paths = {sysconfig.get_path(name) for name in ("purelib", "platlib")}
    venv = Path(sys.executable).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        paths.update(str(venv / lib / version / "site-packages") for lib in ("lib", "lib64"))
    return {_real(path) for path in paths if path and os.path.isdir(path)}


@cache
def trusted_roots() -> tuple[str, ...]:
    """Folders whose modules are castbench's installation (real paths)."""
    roots = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib")}
    roots |= set(_site_packages())
    roots.add(_harness())
    roots.add(os.path.dirname(_harness()))  # the folder it is installed in (a wheel unpacked, --target)
    for prefix in {sys.base_prefix, sys.base_exec_prefix}:
        roots.add(os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}"))
    roots.add(os.path.dirname(os.__file__))  # the standard library, however it is laid out
    checkout = _checkout()
    if checkout:
        roots.update(os.path.join(checkout, part) for part in ("harness", "domains", "plugins"))
    return tuple(sorted({_real(root) for root in roots if root}))


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _initial_environment() -> dict[str, str]:
    """The process's environment as it started (`/proc/self/environ`, which code changing
    `os.environ` does not rewrite), with `os.environ` over it."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/environ", "rb") as handle:
            for entry in handle.read().split(b"\0"):
                key, sep, raw = entry.partition(b"=")
                if sep:
                    found[key.decode(errors="replace")] = raw.decode(errors="replace")
    except OSError:
        pass
    for variable in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONHOME"):
        if variable in os.environ:
            found.setdefault(variable, os.environ[variable])
    return found


def _module_file(module: object) -> str | None:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) if spec is not None else None
    file = getattr(module, "__file__", None) or origin
    if not isinstance(file, str) or not os.path.isabs(file):
        return None
    return file


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements_closure(requires: dict[str, list[str]]) -> set[str]:
    """castbench and every distribution it requires, with all its extras, transitively
    (`requires`: each installed distribution's requirements, by normalised name)."""
    names: set[str] = set()
    pending = ["castbench"]
    while pending:
        key = _key(pending.pop())
        if key in names:
            continue
        names.add(key)
        for requirement in requires.get(key, []):
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            if match:
                pending.append(match.group(1))
    return names


def _executable_pth(folder: str) -> list[str]:
    """The `.pth` files in `folder` with a line Python runs (`import ...`)."""
    found = []
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".pth"))
    except OSError:
        return []
    for name in names:
        try:
            text = Path(folder, name).read_text(errors="replace")
        except OSError:
            continue
        if any(line.startswith(("import ", "import\t")) for line in text.splitlines()):
            found.append(name)
    return found


def _untrusted_pth(folder: str, names: list[str]) -> dict[str, str]:
    """Of these `.pth` files of the site-packages `folder`, those not installed by castbench or
    what it requires or a domain pack, with the distribution that installed each ('' when none did).
    Read from the `*.dist-info` folders beside them (RECORD, METADATA's `Requires-Dist`,
    `entry_points.txt`), no parsing of
    whole metadata: a few milliseconds."""
    owners = dict.fromkeys(names, "")
    requires: dict[str, list[str]] = {}
    packs: set[str] = set()
    try:
        infos = [entry for entry in os.listdir(folder) if entry.endswith(".dist-info")]
    except OSError:
        infos = []
    for info in infos:
        key = _key(info[: -len(".dist-info")].rpartition("-")[0] or info)
        base = os.path.join(folder, info)
        try:
            with open(os.path.join(base, "RECORD"), encoding="utf-8", errors="replace") as handle:
                record = handle.read()
        except OSError:
            record = ""
        for name in names:
            if not owners[name] and (record.startswith(name + ",") or f"\n{name}," in record):
                owners[name] = key
        try:
            with open(os.path.join(base, "METADATA"), encoding="utf-8", errors="replace") as handle:
                head = handle.read().partition("\n\n")[0]
        except OSError:
            head = ""
        requires[key] = [
            line[len("Requires-Dist:") :] for line in head.splitlines() if line.startswith("Requires-Dist:")
        ]
        try:
            with open(os.path.join(base, "entry_points.txt"), encoding="utf-8", errors="replace") as handle:
                if "[castbench.domains]" in handle.read():
                    packs.add(key)
        except OSError:
            pass
    if all(owner in _SEEDS for owner in owners.values()):
        return {}
    # a domain pack (a `castbench.domains` entry point) runs in castbench's process by design, its
    # tools and graders: its `.pth` (`pip install -e` of a pack `domains new` made) adds nothing
    trusted = _requirements_closure(requires) | _SEEDS | packs
    return {name: owner for name, owner in owners.items() if owner not in trusted}


def _cached_untrusted(folder: str, names: list[str]) -> dict[str, str]:
    """`_untrusted_pth`, kept in castbench's state folder (no agent reaches it) and worked out
    again when the folder's listing or one of these files changed (a distribution installed or
    removed changes the folder's modification time): reading every distribution's RECORD is most
    of the check's time (about 70 ms of a resume's CPU, #59)."""
    import hashlib
    import json

    from castbench._base.places import state_dir

    try:
        marks: list[object] = [os.stat(folder).st_mtime_ns]
        for name in names:
            status = os.stat(os.path.join(folder, name))
            marks.append((name, status.st_mtime_ns, status.st_size))
    except OSError:
        return _untrusted_pth(folder, names)
    key = hashlib.sha256(json.dumps([folder, marks]).encode()).hexdigest()
    # one file per site-packages folder: environments side by side (a checkout's worktrees, each
    # with its own) would otherwise take turns to throw each other's answer away
    place = hashlib.sha256(folder.encode()).hexdigest()[:16]
    cache = os.path.join(state_dir(), f"startup-check-{place}.json")
    try:
        with open(cache, encoding="utf-8") as handle:
            kept = json.load(handle)
        if kept.get("key") == key:
            return dict(kept["untrusted"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    untrusted = _untrusted_pth(folder, names)
    try:
        with open(cache + ".tmp", "w", encoding="utf-8") as handle:
            json.dump({"key": key, "untrusted": untrusted}, handle)
        os.replace(cache + ".tmp", cache)
    except OSError:
        pass
    return untrusted


_HOOKS = ("sitecustomize", "usercustomize")
"""The modules Python itself runs at start-up by name, wherever they are on the path."""


def _install_target(folder: str) -> bool:
    """A folder `pip install --target` made (a pack installed beside castbench): every entry in it
    installed by a distribution recorded there, none of Python's start-up hooks or `.pth` files,
    and no top-level name found anywhere else on the path (so nothing castbench imports, now or
    later, comes from it instead: packs and plugins castbench finds through their entry points)."""
    from importlib.machinery import PathFinder

    try:
        entries = os.listdir(folder)
    except OSError:
        return False
    recorded: set[str] = set()
    for info in (entry for entry in entries if entry.endswith(".dist-info")):
        try:
            with open(os.path.join(folder, info, "RECORD"), encoding="utf-8", errors="replace") as handle:
                recorded.update(line.partition(",")[0].split("/")[0] for line in handle if line.strip())
        except OSError:
            return False
    others = [p for p in sys.path if p and _real(p) != folder]
    for entry in entries:
        if entry in ("__pycache__", "bin") or entry.endswith((".dist-info", ".egg-info")):
            continue
        name = entry.removesuffix(".py")
        if entry not in recorded or entry.endswith(".pth") or name in _HOOKS:
            return False
        if name in sys.modules or name in sys.stdlib_module_names or PathFinder.find_spec(name, others):
            return False
    return bool(recorded)


def outside_code() -> list[str]:
    """What could have brought code from outside castbench's installation into this process at
    its start-up, one line each; empty when nothing did."""
    roots = trusted_roots()
    checkout = _checkout()
    findings: list[str] = []
    env = _initial_environment()
    for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
        real = _real(entry)
        if real == checkout or _under(real, roots) or _install_target(real):
            continue
        findings.append(
            f"PYTHONPATH names {entry}, outside castbench's installation (Python imports from it "
            "before castbench starts): give agent folders with --agent-path"
        )
    for name in ("PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE"):
        if env.get(name):
            findings.append(f"{name} is set ({env[name]}): it changes what Python runs at start-up")
    folders: dict[str, bool] = {}  # a module's folder, resolved once: whether it is castbench's
    for name, module in list(sys.modules.items()):
        file = _module_file(module)
        if file is None or name == "__main__":
            continue
        folder = os.path.dirname(file)
        if folder not in folders:
            folders[folder] = _under(_real(folder), roots)
        inside = folders[folder] and not os.path.islink(file)
        if not inside and not _under(_real(file), roots):
            findings.append(
                f"the module '{name}' was imported at start-up from {file}, outside castbench's installation"
            )
    for name in ("sitecustomize", "usercustomize"):
        found = sys.modules.get(name)
        file = _module_file(found) if found is not None else None
        if file is not None and not _under(_real(file), tuple(_site_packages()) + roots):
            findings.append(f"{name} was run at start-up from {file}")
    site_dirs = _site_packages()
    if sys.flags.no_site:  # `python -S`: Python ran no .pth file and no sitecustomize
        return findings
    others = list(site.getsitepackages())  # site folders whose .pth files Python ran
    if site.ENABLE_USER_SITE:
        others.append(site.getusersitepackages())
    for folder in others:
        if _real(folder) not in site_dirs:
            findings.extend(
                f"{os.path.join(folder, pth)} runs code at start-up (outside the environment's site-packages)"
                for pth in _executable_pth(folder)
            )
    for folder in sorted(site_dirs):
        pending = _executable_pth(folder)
        for pth, owner in (_cached_untrusted(folder, pending) if pending else {}).items():
            who = f"the distribution '{owner}'" if owner else "no distribution on record"
            findings.append(
                f"{pth} in site-packages runs code at start-up and comes from {who}, not castbench "
                "or what it requires: install agents in an environment of their own (--agent-path)"
            )
    return findings
