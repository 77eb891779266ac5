"""Leaderboard definitions: `leaderboards/<board>.toml`, declarative and kept in git.

    title = "Scripted baselines"
    description = "..."
    domains = { retail = 1 }          # domain -> comparability number (the N of version N-X)
    split = "test"
    trials = 8                        # minimum trials per task; reruns use exactly this many
    metrics = ["pass^1", "pass^2", { metric = "pass^4", name = "pass^4 ★" }, "pass^8"]
    rank_by = "pass^4"                # default: the last metric
    allow_privileged = true           # rows whose policy or critic read the ground truth
    allow_unsandboxed = false         # rows whose import-path agents ran without the OS sandbox
    allowed_reads = ["/models"]       # what a sandboxed agent may declare: paths (and below),
    allowed_ports = [8000]            #   TCP and UDP ports,
    allowed_env = ["OPENAI_API_KEY"]  #   environment variables (default: none of each)
    require_rerun = false             # only rows this build re-created itself (`--rerun`)
    require_isolated_trials = false   # only rows whose trials could not carry memory between them
    allow_outside_castbench = true    # rows of agent services / A2A agents (marked either way)
    entries = [
      { name = "oracle", policy = "oracle", note = "replays the ground truth" },
    ]

Each entry names an exported run (`run`, default `results/<board>/<slug>.castbench.json.gz`)
and, when it can be re-created offline, how (`policy`, `critic`, `user`, `seed`). Without
`entries`, every export under `results/` is considered. Paths are relative to the folder that
holds `leaderboards/`.

Provenance. Every row says where its run came from: `re-run` when this build re-created it from
the entry's recipe (`castbench leaderboard build BOARD --rerun`), `submitted` when the build took
it from a file (whatever the file claims: an export cannot prove which agent produced it), and
per role where the agent ran (castbench built-in, sandboxed or unsandboxed worker, agent service,
model). Options:
- `require_rerun` (default false): only re-run rows. A declared entry taken from a file is an
  error naming it; discovered runs (always taken from files) are excluded with the reason.
- `allow_unsandboxed` (default false): runs whose import-path agents ran in workers without the
  OS sandbox (or before castbench had one) are refused unless the board opts in. castbench's
  built-in agents are its own code, not unsandboxed agents; `--in-process` runs are always refused.
- `allow_privileged` (default false): rows whose policy or critic read the ground truth (marked †).
- `allowed_reads`, `allowed_ports`, `allowed_env` (default empty): what a sandboxed agent may
  have declared (`sandbox_read`, `sandbox_connect`/`sandbox_udp`, `sandbox_env`); a row declaring
  anything else is refused naming it. A declaration that opens a resource whole (a read of `/`,
  more than 64 TCP ports, any UDP port) makes the row unsandboxed for it: refused unless
  `allow_unsandboxed`, whatever the lists say. Every declaration shows in the row's cell.
- `require_isolated_trials` (default false): only runs whose trial isolation is `process per
  trial` or `castbench's own agents` (`castbench._records.execution.TrialIsolation`): not agent
  services, A2A agents or `--in-process`, which can carry memory from one trial to the next. Every
  row shows its trial isolation.
- `allow_outside_castbench` (default true): rows whose agent ran outside castbench's sandbox (an
  agent service, A2A) are marked so; false refuses them.
Whatever the settings, a run with retries its agent could have caused (an infrastructure error
raised in castbench's process or by an agent service) is refused: a re-rolled trial is not an
independent one.

Private split. `tasks_file = "private/retail.json"` (relative to the folder that holds
`leaderboards/`) names a private split written by `castbench tasks generate`; `split` must be its
name, `private-<digest>`, and the board ranks runs of that split alone (a run of the public
split, or of another private one, is refused naming both). The file is read (and checked
against its digest) whenever the board is built or re-run, so its runs verify on its tasks; the
seed that drew it stays with whoever publishes the board.

Counterfactuals. `counterfactuals = true` adds the column "net saved / 100 verdicts": per critic
row, (trials its verdicts saved - trials they cost) per 100 verdicts, each verdict measured
against a branch with the other verdict played to the end, with its task-bootstrap interval
(docs/counterfactuals.md).

The CAST paper's critic columns. `paper_columns = true` adds, for each critic row, the four
confusion shares of all labelled verdicts (flag ∧ valid, pass ∧ valid, flag ∧ invalid,
pass ∧ invalid: they sum to 100%), and resistance and correction as the paper defines them
(resistance: rejections the policy kept its action through or insisted against, over every
rejection it answered; correction: corrected over the true flags it answered, a last-round flag
not being one it could correct), beside castbench's variants, each named (resistance over false
flags only; correction over every true flag, the board's "correction rate").

Reliability profile (`castbench_boards.profile`, docs/profile.md). `profile = { tool_faults = 0.2 }`
(also `fault_kinds`, `user`, `env` kinds and `seed`; by default every kind) adds profile columns:
disagreement, trajectory similarity, violations and unconfirmed changes per trial, Brier score
from each entry's run, and robustness (pass^1 under faults, user and environment perturbations
over clean) from `<entry>.profile.json`, which `--rerun` writes after running the perturbed runs.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from castbench._domain.private import PRIVATE_PREFIX, use_tasks_file
from castbench._domain.task import TaskFileError
from castbench._grading import GradingMode
from castbench._records.perturbations import (
    ENV_KINDS,
    FAULT_KINDS,
    USER_KINDS,
    Perturbations,
    parse_kinds,
    profile_conditions,
)
from castbench._records.store.export import EXPORT_SUFFIX
from castbench._results.compare.metric import parse_metric

__all__ = [
    "BoardError",
    "BoardMetric",
    "BoardProfile",
    "BoardSpec",
    "Entry",
    "board_path",
    "load_board",
    "slug",
    "use_private_split",
]


class BoardError(ValueError):
    """A board file that cannot be used, or a run that does not belong on its board."""


def slug(text: str) -> str:
    """`scripted:noisy p=0.05` -> `scripted-noisy-p-0-05`: a file name that says what it is."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "entry"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BoardMetric(_Strict):
    metric: str
    name: str = ""

    @field_validator("metric")
    @classmethod
    def _known(cls, value: str) -> str:
        return parse_metric(value).name

    @model_validator(mode="after")
    def _default_name(self) -> BoardMetric:
        self.name = self.name or self.metric
        return self


class Entry(_Strict):
    name: str
    note: str = ""
    """Shown with the row: say plainly what the entry is (a scripted baseline, a model, ...)."""
    run: str | None = None
    policy: str | None = None
    """With `policy`, the entry can be re-created offline (`castbench leaderboard build --rerun`)
    and its run must have used this policy."""
    critic: str = "none"
    user: str = "scripted"
    seed: int = 0

    def run_path(self, board: str) -> str:
        return self.run or f"results/{board}/{slug(self.name)}{EXPORT_SUFFIX}"

    def profile_path(self, board: str) -> str:
        """Where the entry's reliability profile lies: next to its run."""
        return self.run_path(board).removesuffix(EXPORT_SUFFIX) + ".profile.json"


class BoardProfile(_Strict):
    """The perturbed conditions of a board's reliability profile (each kind list: names or "all")."""

    tool_faults: float = Field(0.2, ge=0.0, le=1.0)
    fault_kinds: list[str] = Field(default_factory=lambda: sorted(FAULT_KINDS))
    user: list[str] = Field(default_factory=lambda: sorted(USER_KINDS))
    env: list[str] = Field(default_factory=lambda: sorted(ENV_KINDS))
    seed: int = 0

    @field_validator("fault_kinds", "user", "env", mode="before")
    @classmethod
    def _kinds(cls, value: object, info: ValidationInfo) -> object:
        name = info.field_name or ""
        known = {"fault_kinds": FAULT_KINDS, "user": USER_KINDS, "env": ENV_KINDS}[name]
        if isinstance(value, str):
            value = [value]
        return parse_kinds(",".join(map(str, value)), known, name) if isinstance(value, list) else value

    def conditions(self) -> dict[str, Perturbations]:
        return profile_conditions(self.tool_faults, self.fault_kinds, self.user, self.env, self.seed)


class BoardSpec(_Strict):
    name: str
    title: str
    description: str = ""
    domains: dict[str, int] = Field(min_length=1)
    split: str = "test"
    trials: int = Field(8, ge=1)
    metrics: list[BoardMetric] = Field(min_length=1)
    rank_by: str | None = None
    allow_privileged: bool = False
    allow_unsandboxed: bool = False
    """Rank runs whose import-path agents ran in worker processes without the OS sandbox."""
    allowed_reads: list[str] = Field(default_factory=list)
    """Paths a sandboxed agent may declare it reads (each path and what lies below it)."""
    allowed_ports: list[int] = Field(default_factory=list)
    """TCP and UDP ports a sandboxed agent may declare (a model server's)."""
    allowed_env: list[str] = Field(default_factory=list)
    """Environment variables a sandboxed agent may declare (an API key)."""
    require_rerun: bool = False
    """Rank only runs this build re-created from their entries' recipes (`--rerun`)."""
    require_isolated_trials: bool = False
    """Rank only runs whose trials were isolated from each other (a fresh process per trial for
    import-path agents, or castbench's own agents): not agent services, A2A or `--in-process`."""
    allow_outside_castbench: bool = True
    """Rank runs whose agent ran outside castbench's sandbox (an agent service, A2A); their rows
    are marked "ran outside castbench's sandbox" either way."""
    user: str | None = None
    """When set, every entry must have used this user simulator."""
    grading: GradingMode | None = None
    """How the entries' runs are graded when re-created (`castbench eval --grading`): `tau` for a
    board that reports a published benchmark's own reward (the τ² board); None: eval's default."""
    entries: list[Entry] | None = None
    profile: BoardProfile | None = None
    """Reliability-profile columns (see the module's docstring)."""
    tasks_file: str | None = None
    """A private split's file: the board ranks runs of that split alone (see the module's docstring)."""
    paper_columns: bool = False
    """The CAST paper's critic columns beside castbench's (see the module's docstring)."""
    counterfactuals: bool = False
    """A column of net trials saved per 100 critic verdicts, from branches the build plays at every
    verdict of each critic row's trials (`castbench_analyses.counterfactual`): each trial costs its
    build several trials more (`bench/counterfactual_cost.py`), so a board asks for it."""

    @field_validator("metrics", mode="before")
    @classmethod
    def _metric_strings(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"metric": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BoardSpec:
        for item in self.metrics:
            if parse_metric(item.metric).k > self.trials:
                raise ValueError(f"metric {item.metric} needs more than the board's {self.trials} trials")
        if self.rank_by is not None:
            self.rank_by = parse_metric(self.rank_by).name
            if self.rank_by not in {item.metric for item in self.metrics}:
                raise ValueError(f"rank_by {self.rank_by} is not one of the board's metrics")
        if self.tasks_file is not None and not self.split.startswith(PRIVATE_PREFIX):
            raise ValueError(
                f"a board with a tasks_file ranks its private split: split must be {PRIVATE_PREFIX}<digest>"
            )
        if self.tasks_file is not None and len(self.domains) != 1:
            raise ValueError("a private split is of one domain: a board with a tasks_file names one domain")
        names = [entry.name for entry in self.entries or []]
        if len(set(map(slug, names))) != len(names):
            raise ValueError("entry names must differ (also after slugging): " + ", ".join(names))
        return self

    @property
    def ranking_metric(self) -> str:
        return self.rank_by or self.metrics[-1].metric


def use_private_split(spec: BoardSpec, root: Path) -> None:
    """Read and register the board's private split (none: nothing to do); `BoardError` when its
    file cannot be used or is not the split the board names."""
    if spec.tasks_file is None:
        return
    path = root / spec.tasks_file
    try:
        split = use_tasks_file(path)
    except TaskFileError as exc:
        raise BoardError(f"board {spec.name}: {exc}") from exc
    if split.split != spec.split or split.domain not in spec.domains:
        raise BoardError(
            f"board {spec.name}: {path} holds {split.domain} split {split.split}, the board ranks "
            f"{', '.join(spec.domains)} split {spec.split}"
        )


def board_path(board: str, root: Path) -> Path:
    """A board name (`scripted-baselines`) or a path to its TOML file. A name is looked up under
    `root/leaderboards/`, then among castbench's own boards (the `leaderboards/` of the checkout
    castbench runs from), so `eval --suite cast-paper` works from any directory."""
    candidate = Path(board)
    if candidate.suffix == ".toml":
        return candidate
    local = root / "leaderboards" / f"{board}.toml"
    shipped = _OWN_BOARDS / f"{board}.toml"
    return shipped if not local.is_file() and shipped.is_file() else local


_OWN_BOARDS = Path(__file__).resolve().parents[4] / "leaderboards"
"""castbench's own boards: `harness/castbench/_results/publish/board.py` -> the checkout's `leaderboards/`."""


def load_board(path: Path) -> BoardSpec:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise BoardError(f"{path}: not a TOML file (not UTF-8 text: byte {exc.start})") from exc
    except OSError as exc:
        raise BoardError(f"cannot read board {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BoardError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return BoardSpec.model_validate({"name": path.stem, **raw})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'board'}: {error['msg']}"
            for error in exc.errors()
        )
        raise BoardError(f"{path}: {problems}") from exc
