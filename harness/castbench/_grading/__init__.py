"""Grading: state diff against the expected state, required outputs, surface success, strict pass."""

from castbench._grading.grade import FailureCategory, Grade, PolicyBreak, SurfaceSignals, grade_trial
from castbench._grading.outputs import GRADING_MODES, GradingMode
from castbench._grading.state_diff import FieldDiff, state_diff

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
