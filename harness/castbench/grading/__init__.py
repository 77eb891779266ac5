"""Grading: state diff against the expected state, required outputs, surface success, strict pass."""

from castbench.grading.grade import FailureCategory, Grade, PolicyBreak, SurfaceSignals, grade_trial
from castbench.grading.outputs import GRADING_MODES, GradingMode
from castbench.grading.state_diff import FieldDiff, state_diff

__all__ = [
    "GRADING_MODES",
    "FailureCategory",
    "FieldDiff",
    "Grade",
    "GradingMode",
    "PolicyBreak",
    "SurfaceSignals",
    "grade_trial",
    "state_diff",
]
