"""A gate's verdict for people: a terminal panel, Markdown for a CI job summary or PR comment,
and JUnit XML so CI systems list each check as a test case."""

from __future__ import annotations

from xml.etree import ElementTree

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

from castbench._results.compare.gate import CheckResult, GateResult, UndecidedPolicy, Verdict

__all__ = ["RULE", "gate_junit", "gate_markdown", "gate_panel"]

RULE = (
    "FAIL if the interval's upper bound < −(allowed drop); PASS if its lower bound ≥ −(allowed drop); "
    "otherwise UNDECIDED (the run is too small to decide)."
)
_HEADLINE = {
    Verdict.PASS: "no check shows a drop beyond what is allowed",
    Verdict.FAIL: "the candidate is credibly worse than the baseline",
    Verdict.UNDECIDED: "the run is too small to decide",
}
_STYLE = {Verdict.PASS: "bold green", Verdict.FAIL: "bold red", Verdict.UNDECIDED: "bold yellow"}
_MARK = {Verdict.PASS: "✅", Verdict.FAIL: "❌", Verdict.UNDECIDED: "⚠️"}


def _interval(result: CheckResult) -> str:
    p = result.paired
    return f"{p.difference:+.3f} [{p.low:+.3f}, {p.high:+.3f}]"


def _undecided_note(result: GateResult, undecided: UndecidedPolicy) -> str | None:
    if result.verdict is not Verdict.UNDECIDED:
        return None
    return {
        UndecidedPolicy.UNDECIDED: "exit 3: cannot decide (use --undecided pass|fail to map it)",
        UndecidedPolicy.FAIL: "counted as a failure (--undecided fail)",
        UndecidedPolicy.PASS: "counted as a pass (--undecided pass)",
    }[undecided]


def gate_panel(result: GateResult, undecided: UndecidedPolicy) -> Panel:
    verdict = result.verdict
    lines: list[RenderableType] = [
        Text.assemble((f"{verdict.value}  ", _STYLE[verdict]), _HEADLINE[verdict]),
        Text(f"baseline  {result.baseline}\ncandidate {result.candidate}", style="dim"),
    ]
    for item in result.results:
        p = item.paired
        lines.append(
            Text.assemble(
                "\n",
                (f"{item.verdict.value:<10}", _STYLE[item.verdict]),
                (item.check.label, "bold"),
                f": {p.baseline:.3f} → {p.candidate:.3f}, allowed drop {item.check.max_drop:.3f}",
            )
        )
        interval = f"{p.confidence:.0%} CI [{p.low:+.3f}, {p.high:+.3f}]"
        detail = f"difference {p.difference:+.3f}, {interval}: {item.reason}"
        lines.append(Padding(Text(detail), (0, 0, 0, 10)))
    note = _undecided_note(result, undecided)
    if note:
        lines.append(Text(f"\n{note}", style="yellow"))
    lines += [Text(f"warning: {warning}", style="yellow") for warning in result.warnings]
    lines.append(Text(f"\nrule: {RULE}", style="dim"))
    return Panel(Group(*lines), title="castbench gate", title_align="left", border_style=_STYLE[verdict])


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def gate_markdown(result: GateResult, undecided: UndecidedPolicy) -> str:
    verdict = result.verdict
    lines = [
        f"## {_MARK[verdict]} castbench gate: {verdict.value} — {_HEADLINE[verdict]}",
        "",
        f"- baseline: `{result.baseline}`",
        f"- candidate: `{result.candidate}`",
        "",
        "| check | verdict | baseline → candidate | difference [CI] | confidence | allowed drop |",
        "|---|---|---|---|---|---|",
    ]
    for item in result.results:
        lines.append(
            f"| {_md(item.check.label)} | {_MARK[item.verdict]} {item.verdict.value} | "
            f"{item.paired.baseline:.3f} → {item.paired.candidate:.3f} | {_interval(item)} | "
            f"{item.paired.confidence:.0%} | {item.check.max_drop:.3f} |"
        )
    lines.append("")
    lines += [f"- **{_md(item.check.label)}**: {_md(item.reason)}" for item in result.results]
    note = _undecided_note(result, undecided)
    if note:
        lines.append(f"- {note}")
    lines += [f"- warning: {_md(warning)}" for warning in result.warnings]
    lines += ["", f"Decision rule (paired bootstrap over tasks of candidate − baseline): {RULE}", ""]
    return "\n".join(lines)


def gate_junit(result: GateResult, undecided: UndecidedPolicy) -> str:
    """One testcase per check. FAIL is a <failure>; UNDECIDED is an <error> (or a failure or
    pass when `--undecided` maps it), so CI shows it apart from a real regression."""
    cases = result.results
    kinds = [_junit_kind(item.verdict, undecided) for item in cases]
    suite_attrs = {
        "name": "castbench gate",
        "tests": str(len(cases)),
        "failures": str(kinds.count("failure")),
        "errors": str(kinds.count("error")),
        "skipped": "0",
    }
    root = ElementTree.Element("testsuites", suite_attrs)
    suite = ElementTree.SubElement(root, "testsuite", suite_attrs)
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in (("baseline", result.baseline), ("candidate", result.candidate)):
        ElementTree.SubElement(properties, "property", {"name": name, "value": value})
    for item, kind in zip(cases, kinds, strict=True):
        case = ElementTree.SubElement(
            suite,
            "testcase",
            {
                "classname": f"castbench.gate.{item.check.domain or 'overall'}",
                "name": f"{item.check.metric} max_drop={item.check.max_drop}",
            },
        )
        detail = (
            f"{item.verdict.value}: {item.paired.baseline:.3f} -> {item.paired.candidate:.3f}, "
            f"difference {_interval(item)} at {item.paired.confidence:.0%}; {item.reason}"
        )
        if kind == "pass":
            ElementTree.SubElement(case, "system-out").text = detail
        else:
            ElementTree.SubElement(
                case, kind, {"message": detail, "type": item.verdict.value.lower()}
            ).text = detail
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _junit_kind(verdict: Verdict, undecided: UndecidedPolicy) -> str:
    if verdict is Verdict.FAIL:
        return "failure"
    if verdict is Verdict.UNDECIDED:
        return {
            UndecidedPolicy.UNDECIDED: "error",
            UndecidedPolicy.FAIL: "failure",
            UndecidedPolicy.PASS: "pass",
        }[undecided]
    return "pass"
