from __future__ import annotations

from tests.viewer.browser import browser_page  # noqa: F401 (fixture)
from tests.viewer.hostile import hostile_run  # noqa: F401 (fixture)
