from __future__ import annotations

from tests.publish.exports import exports  # noqa: F401 (fixture)
from tests.viewer.browser import browser_page  # noqa: F401 (fixture)
