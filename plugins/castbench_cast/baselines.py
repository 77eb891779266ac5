"""What a trained critic has to beat, judged on the very calls it judged.

A trained critic that only learned which tools tend to be wrong is a lookup table. So every
critic figure of the plugin (`bench/cast_learning.py`, `castbench cast paper`'s board) comes with
these baselines, each scored against the labeler on the same held-out proposals with the same
interval (95%, resampling tasks):

- `majority per tool`: the verdict most train calls of that tool had (unseen tools: the overall
  majority);
- `majority per (previous action, tool)`: the same, keyed by the agent's previous action too
  (a tool name, `reply`, or `start`): it knows whether the call follows a look-up or a question;
- `rules critic`: castbench's model-free rules (`castbench._agents.critics.checks`) on the visible
  conversation, no training at all;
- `bag of words`: a logistic regression on the words of exactly the critic's input (the user
  message `critic_messages` builds: the conversation's transcript, the proposed action, and the
  transcript's last line, each its own vocabulary; the system prompt, the same for every call,
  adds nothing), fitted on the same annotated train calls with balanced class weights. It is
  what lexical lookup over the critic's input gets: a trained critic that does not beat it has
  learned nothing a bag of words would not (`beats_bow`). scikit-learn's `LogisticRegression`
  when installed, else the same model (L2, C=1) fitted here by full-batch Newton steps in numpy:
  deterministic either way;
- the untrained base model, served like the trained critic (measured by the caller: it needs a
  server, these do not).

The lookup tables are learned from the annotations the critic was trained on: the same data,
no other information.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from pydantic import BaseModel

from castbench import CriticRecord, critic_intervals, critic_metrics
from castbench.agents import AgentTurn, ToolCallAction
from castbench.domain import TrialRecord, load_domain
from castbench_cast.annotations import Annotation, Key, annotated_moments, moment_key
from castbench_cast.trajectories import Moment, moments

__all__ = [
    "BASELINES",
    "BOW",
    "BagOfWords",
    "BaselineFigures",
    "Lookup",
    "critic_input_parts",
    "baseline_figures",
    "judged_calls",
    "previous_action",
]

BASELINES = ("majority per tool", "majority per (previous action, tool)", "rules critic", "bag of words")
BOW = BASELINES[3]

Verdict = Literal["flag", "pass"]


class BaselineFigures(BaseModel):
    """One critic (a baseline or the measured one) on the judged held-out calls."""

    name: str
    calls: int
    mcc: float | None
    mcc_ci: tuple[float, float] | None
    false_flag_rate: float | None
    false_flag_rate_ci: tuple[float, float] | None
    detection_rate: float | None
    flag_share_of_actions: float | None
    """Flagged valid calls / all judged calls: the paper's "flag ∧ valid" share (like for like)."""


def previous_action(moment: Moment) -> str:
    """The agent's previous action before `moment`: a tool's name, `reply`, or `start`."""
    for event in reversed(moment.history):
        if isinstance(event, AgentTurn):
            action = event.action
            return action.name if isinstance(action, ToolCallAction) else "reply"
    return "start"


def _keys(moment: Moment) -> dict[str, tuple[str, ...]]:
    action = moment.proposal.action
    tool = action.name if isinstance(action, ToolCallAction) else "reply"
    return {BASELINES[0]: (tool,), BASELINES[1]: (previous_action(moment), tool)}


class Lookup:
    """Majority verdicts per key, learned from annotated train moments."""

    def __init__(self, records: Iterable[TrialRecord], annotations: dict[Key, Annotation]) -> None:
        self.votes: dict[str, dict[tuple[str, ...], Counter[str]]] = {name: {} for name in BASELINES[:2]}
        overall: Counter[str] = Counter()
        for record, moment in annotated_moments(records):
            annotation = annotations.get(moment_key(record, moment))
            if annotation is None or annotation.parse_error is not None:
                continue
            overall[annotation.verdict] += 1
            for name, key in _keys(moment).items():
                self.votes[name].setdefault(key, Counter())[annotation.verdict] += 1
        self.default = _majority(overall)

    def verdict(self, name: str, moment: Moment) -> Verdict:
        votes = self.votes[name].get(_keys(moment)[name])
        return "flag" if (_majority(votes) if votes else self.default) == "invalid" else "pass"


_WORD = re.compile(r"[a-z]+|[0-9]+|[^a-z0-9\s]")


def critic_input_parts(domain: str, moment: Moment) -> dict[str, str]:
    """The critic's input for `moment` in three parts: `transcript` (the conversation so far as
    the critic reads it), `action` (the proposed action as described to it) and `last` (the
    transcript's last line)."""
    from castbench.agents import critic_messages

    question = critic_messages("", moment.history, moment.proposal.action)[-1]["content"]
    conversation, _, action = question.partition("# Proposed action\n")
    lines = [line for line in conversation.strip().splitlines() if line.strip()]
    return {"transcript": conversation, "action": action, "last": lines[-1] if lines else ""}


def bow_features(parts: dict[str, str]) -> set[str]:
    """Each part's words (lower-cased letters, digit runs, punctuation) and word pairs, prefixed
    by the part's name: three vocabularies."""
    features: set[str] = set()
    for name, text in parts.items():
        words = _WORD.findall(text.lower())
        features.update(f"{name}:{word}" for word in words)
        features.update(f"{name}:{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    return features


class BagOfWords:
    """A logistic regression on `bow_features` of the critic's input (see the module's
    docstring), fitted on the annotated train calls; features seen in fewer than `min_count`
    train calls are dropped."""

    def __init__(
        self, records: Iterable[TrialRecord], annotations: dict[Key, Annotation], min_count: int = 2
    ) -> None:
        import numpy as np

        rows: list[set[str]] = []
        labels: list[int] = []
        for record, moment in annotated_moments(records):
            annotation = annotations.get(moment_key(record, moment))
            if annotation is None or annotation.parse_error is not None:
                continue
            rows.append(bow_features(critic_input_parts(record.domain, moment)))
            labels.append(int(annotation.verdict == "invalid"))
        counts = Counter(feature for row in rows for feature in row)
        self.vocabulary = {
            feature: index
            for index, feature in enumerate(sorted(f for f, n in counts.items() if n >= min_count))
        }
        self.examples = len(rows)
        self.backend = "numpy"
        y = np.array(labels, dtype=np.float64)
        x = self._matrix(rows)
        if len(set(labels)) < 2:  # one verdict only: always that verdict
            self.constant: int | None = labels[0] if labels else 0
            return
        self.constant = None
        try:
            from sklearn.linear_model import LogisticRegression  # type: ignore[import-not-found]
        except ImportError:
            self.weights, self.bias = _fit_logistic(x, y)
        else:
            model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
            model.fit(x, y)
            self.weights, self.bias = model.coef_[0], float(model.intercept_[0])
            self.backend = "scikit-learn"

    def _matrix(self, rows: list[set[str]]) -> Any:
        import numpy as np

        x = np.zeros((len(rows), len(self.vocabulary)), dtype=np.float64)
        for i, row in enumerate(rows):
            for feature in row:
                index = self.vocabulary.get(feature)
                if index is not None:
                    x[i, index] = 1.0
        return x

    def verdict(self, record: TrialRecord, moment: Moment) -> Verdict:
        if self.constant is not None:
            return "flag" if self.constant else "pass"
        x = self._matrix([bow_features(critic_input_parts(record.domain, moment))])
        return "flag" if float(x[0] @ self.weights + self.bias) > 0 else "pass"


def _fit_logistic(x: Any, y: Any, c: float = 1.0, iterations: int = 50) -> tuple[Any, float]:
    """L2-regularised logistic regression with balanced class weights (scikit-learn's objective
    with `C=c`, `class_weight="balanced"`, the bias unpenalised), by truncated Newton steps (the
    Hessian applied by products, conjugate gradients): exact to 1e-6 in the gradient, and
    deterministic."""
    import numpy as np

    n, d = x.shape
    positives = float(y.sum())
    sample = np.where(y == 1, n / (2 * positives), n / (2 * (n - positives)))
    theta = np.zeros(d + 1)
    penalty = np.full(d + 1, 1.0 / c)
    penalty[-1] = 0.0

    def forward(v: Any) -> Any:
        return x @ v[:-1] + v[-1]

    def backward(u: Any) -> Any:
        return np.concatenate([x.T @ u, [u.sum()]])

    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-forward(theta)))
        gradient = backward(sample * (p - y)) + penalty * theta
        if float(np.abs(gradient).max()) < 1e-6:
            break
        curvature = sample * p * (1 - p)
        # conjugate gradients on H step = gradient
        step = np.zeros(d + 1)
        residual = gradient.copy()
        direction = residual.copy()
        size = float(residual @ residual)
        for _ in range(100):
            applied = backward(curvature * forward(direction)) + (penalty + 1e-8) * direction
            alpha = size / float(direction @ applied)
            step += alpha * direction
            residual -= alpha * applied
            new_size = float(residual @ residual)
            if new_size < 1e-4 * float(gradient @ gradient):
                break
            direction = residual + (new_size / size) * direction
            size = new_size
        theta -= step
    return theta[:-1], float(theta[-1])


def _majority(votes: Counter[str]) -> str:
    """The commoner verdict; a tie passes (flagging costs the agent a turn)."""
    return "invalid" if votes["invalid"] > votes["valid"] else "valid"


def judged_calls(records: Iterable[TrialRecord]) -> Iterator[tuple[TrialRecord, Moment]]:
    """Every proposed tool call a critic judged and the labeler labelled, in its context."""
    for record in records:
        if record.status != "scored":
            continue
        for moment in moments(record):
            proposal = moment.proposal
            if (
                isinstance(proposal.action, ToolCallAction)
                and proposal.verdict is not None
                and proposal.label is not None
                and proposal.label.label in ("valid", "invalid")
            ):
                yield record, moment


def _rules(record: TrialRecord, moment: Moment) -> Verdict:
    from castbench.agents import call_findings

    action = moment.proposal.action
    assert isinstance(action, ToolCallAction)
    return "flag" if call_findings(load_domain(record.domain), action, list(moment.history)) else "pass"


def _figures(name: str, judged: list[tuple[TrialRecord, Moment, Verdict]]) -> BaselineFigures:
    by_task: dict[tuple[str, str], list[CriticRecord]] = {}
    for record, moment, verdict in judged:
        label = moment.proposal.label
        assert label is not None
        by_task.setdefault((record.domain, record.task_id), []).append(
            CriticRecord(verdict, label.label, None)  # type: ignore[arg-type]
        )
    flat = [item for group in by_task.values() for item in group]
    metrics = critic_metrics(flat)
    intervals = critic_intervals(list(by_task.values()))
    flagged_valid = sum(item.verdict == "flag" and item.label == "valid" for item in flat)
    return BaselineFigures(
        name=name,
        calls=len(flat),
        mcc=metrics.mcc,
        mcc_ci=intervals.mcc,
        false_flag_rate=metrics.false_flag_rate,
        false_flag_rate_ci=intervals.false_flag_rate,
        detection_rate=metrics.detection_rate,
        flag_share_of_actions=flagged_valid / len(flat) if flat else None,
    )


def baseline_figures(
    held_out: Iterable[TrialRecord],
    lookup: Lookup,
    measured: str = "trained critic",
    bow: BagOfWords | None = None,
) -> list[BaselineFigures]:
    """The measured critic (its stored verdicts: an unreadable one counts as the pass it was
    recorded as) and each baseline, on the judged calls of `held_out`."""
    calls = list(judged_calls(held_out))
    deciders: dict[str, Callable[[TrialRecord, Moment], Verdict]] = {
        measured: lambda _, moment: (
            "flag" if moment.proposal.verdict and moment.proposal.verdict.flags else "pass"
        ),
        BASELINES[0]: lambda _, moment: lookup.verdict(BASELINES[0], moment),
        BASELINES[1]: lambda _, moment: lookup.verdict(BASELINES[1], moment),
        BASELINES[2]: _rules,
    }
    if bow is not None:
        deciders[BOW] = bow.verdict
    return [
        _figures(name, [(record, moment, decide(record, moment)) for record, moment in calls])
        for name, decide in deciders.items()
    ]
