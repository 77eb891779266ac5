"""Why each trial failed and whose fault it was: rule-based attribution, near-misses among
passes, simulator faults, per-run shares, and an optional LLM judge."""

from castbench._results.attribution.model import Attribution, Evidence, NearMiss, Party, UserFault, party_of
from castbench._results.attribution.rules import attribute, near_miss
from castbench._results.attribution.user_faults import user_faults

__all__ = [
    "Attribution",
    "Evidence",
    "NearMiss",
    "Party",
    "UserFault",
    "attribute",
    "near_miss",
    "party_of",
    "user_faults",
]
