"""A run whose agent cannot work at all stops early instead of failing every trial the same way.

A wrong constructor signature, a `propose` that takes the wrong arguments or a parameter the agent
does not accept make every trial `agent_error` with the same message: running the other few
thousand trials tells nothing more. Once the first trials of an invocation all failed so, for one
reason, no further trial starts, and the run says that reason in one line.
"""

from __future__ import annotations

import re

from castbench._records.trial import TrialRecord

__all__ = ["BrokenAgentWatch"]

_NUMBERS = re.compile(r"\d+")


def _reason(error: str | None) -> str:
    """The first line of a trial's error: what failed, without the traceback that follows."""
    lines = (error or "").strip().splitlines()
    return lines[0].strip() if lines else "(no message)"


class BrokenAgentWatch:
    """Watches the trials one invocation stores. `broken` is the shared reason once `after`
    trials all ended `agent_error` for it (numbers aside: the step, an address), and no other
    trial ended otherwise; any other ending, or another reason, clears it for the rest of the run."""

    def __init__(self, after: int = 3) -> None:
        self.after = after
        self.seen = 0
        self._reason: str | None = None
        self._key: str | None = None
        self._mixed = False

    def see(self, record: TrialRecord) -> None:
        if self._mixed:
            return
        if record.end_reason != "agent_error" or record.status != "scored":  # an unscored one:
            self._mixed = True  # the team's user simulator failed, not the agent under test
            return
        reason = _reason(record.error)
        key = _NUMBERS.sub("#", reason)
        if self._key is None:
            self._reason, self._key = reason, key
        elif key != self._key:
            self._mixed = True
            return
        self.seen += 1

    @property
    def stop(self) -> bool:
        """Whether to start no further trial."""
        return not self._mixed and self.seen >= self.after

    @property
    def broken(self) -> str | None:
        """The one reason every trial seen failed for (None once any trial did otherwise)."""
        return None if self._mixed or not self.seen else self._reason
