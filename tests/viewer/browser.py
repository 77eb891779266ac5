"""Headless Chromium for page tests, driven by Playwright (the pip package) with the system's
Chromium, never a downloaded browser build. Skipped, saying how to install, when either is
missing: `apt-get install -y chromium` and `pip install playwright`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# As root with no network: no sandbox, and no background connections to Google's hosts.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class BrowserPage:
    page: Any
    errors: list[str] = field(default_factory=list)
    """Uncaught JavaScript errors and console errors."""
    external: list[str] = field(default_factory=list)
    """Requests the page made to anything but a local file or loopback (blocked)."""


def _chromium() -> str:
    executable = next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)
    if executable is None:
        pytest.skip("browser tests need a Chromium: apt-get install -y chromium")
    return executable


@pytest.fixture
def browser_page() -> Iterator[BrowserPage]:
    """A fresh browser per test: Playwright's sync API allows one instance at a time, and the
    page tests of several folders must not share (or fight over) one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need Playwright: pip install playwright (it drives the system chromium)")
    executable = _chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        wrapped = BrowserPage(page)
        page.on("pageerror", lambda error: wrapped.errors.append(str(error)))
        page.on("console", lambda message: message.type == "error" and wrapped.errors.append(message.text))

        def route(request_route: Any) -> None:
            url = request_route.request.url
            if url.startswith(("file:", "data:", "blob:", "http://127.0.0.1")):
                request_route.continue_()
            else:
                wrapped.external.append(url)
                request_route.abort()

        page.route("**/*", route)
        yield wrapped
        browser.close()
