"""Grading: state diff against the expected state, required outputs, surface success."""

from castbench.grading.grade import FailureCategory, Grade, SurfaceSignals, grade_trial
from castbench.grading.state_diff import FieldDiff, state_diff

__all__ = ["FailureCategory", "FieldDiff", "Grade", "SurfaceSignals", "grade_trial", "state_diff"]
