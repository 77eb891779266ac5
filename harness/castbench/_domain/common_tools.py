"""Tools most domains offer in the same form: a safe calculator and a hand-off to a human.

A domain lists them in its toolkit like its own tools. The calculator never hands model output
to Python's `eval`: the expression is parsed, only numbers and + - * / ( ) are allowed, and
`simpleeval` computes it.
"""

from __future__ import annotations

import ast

from simpleeval import SimpleEval

from castbench._domain.database import Database
from castbench._domain.tools import ToolError, read_tool

__all__ = ["calculate", "evaluate_arithmetic", "transfer_to_human_agents"]

_ARITHMETIC = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.USub,
    ast.UAdd,
)


def evaluate_arithmetic(expression: str) -> float:
    """The value of an arithmetic expression; `ToolError` for anything else."""
    text = expression.strip()
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # a lone surrogate, NUL,
        # an integer of thousands of digits, parentheses nested too deep: the agent's, not a crash
        raise ToolError(f"'{expression}' is not an arithmetic expression") from exc
    for node in ast.walk(tree):
        bad_constant = isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, int | float)
        )
        if not isinstance(node, _ARITHMETIC) or bad_constant:
            raise ToolError(f"'{expression}' is not an arithmetic expression (numbers and + - * / only)")
    try:
        return float(SimpleEval(functions={}, names={}).eval(text))
    except ZeroDivisionError as exc:
        raise ToolError("division by zero") from exc
    except Exception as exc:  # simpleeval's own refusals (too large a number, ...)
        raise ToolError(f"cannot evaluate '{expression}': {exc}") from exc


@read_tool(public=True)
def calculate(db: Database, expression: str) -> str:
    """Evaluate an arithmetic expression; the result is rounded to 2 decimal places.

    Args:
        expression: Numbers with +, -, *, / and parentheses, e.g. '(49.99 + 12.5) * 2'.
    """
    return f"{round(evaluate_arithmetic(expression) + 0.0, 2):.2f}"


@read_tool(ends_conversation=True, public=True)
def transfer_to_human_agents(db: Database, summary: str) -> str:
    """Hand the customer over to a human agent; only for requests the policy does not let you handle.

    Args:
        summary: A short summary of the customer's request for the human agent.
    """
    return "Transfer successful: a human agent will take over this conversation."
