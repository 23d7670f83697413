"""``mcpkit inspect`` in a real browser: headless Chromium (Debian's ``chromium``, installed
by ``scripts/install_browser.sh``) driven by Playwright for Python (the ``browser`` extra).
The page is opened against ``examples/demo.py`` over stdio; screenshots of each panel go to
``tests/.artifacts/inspect/``. Skipped when Playwright or Chromium is missing."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import ROOT
from tests.test_inspect_app import DEMO_TARGET, Running, running_inspector

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("MCPKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "tests" / ".artifacts" / "inspect"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

if not os.path.exists(CHROMIUM):
    pytest.skip("no chromium (scripts/install_browser.sh installs it)", allow_module_level=True)

TOOLS = ("convert_temperature", "add", "count_down", "save_note")


@pytest.fixture(scope="module")
def demo() -> Iterator[Running]:
    with running_inspector(*DEMO_TARGET) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with tempfile.TemporaryDirectory(prefix="mcpkit-chromium-") as profile, sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                        viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.close()
    assert not errors, errors


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_the_page_shows_the_server_and_every_tool(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    sync_api.expect(page.locator("#server-name")).to_have_text("mcpkit-demo")
    sync_api.expect(page.locator("#server-era")).to_have_text("dual")
    for name in TOOLS:
        sync_api.expect(page.locator(f"#tools-list li[data-name='{name}']")).to_be_visible()
    sync_api.expect(page.locator("#card")).to_contain_text("60000")
    sync_api.expect(page.locator("#card")).to_contain_text("public")
    shot(page, "server-and-tools")


def test_call_add_through_the_generated_form(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    page.locator("#tools-list li[data-name='add']").click()
    page.fill("#arg-add-a", "2")
    page.fill("#arg-add-b", "3")
    page.click("#call-tool")
    result = page.locator("#tool-result")
    sync_api.expect(result).to_contain_text("5")
    assert "error" not in (result.get_attribute("class") or "")
    assert page.locator("#tool-result .structured pre").inner_text().strip() == '{\n  "result": 5\n}'
    shot(page, "tool-add")


def test_the_form_checks_required_fields_and_types_before_calling(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    page.locator("#tools-list li[data-name='add']").click()
    page.fill("#arg-add-a", "2.5")
    page.click("#call-tool")
    sync_api.expect(page.locator("[data-field='a'] .field-error")).to_have_text("must be an integer")
    sync_api.expect(page.locator("[data-field='b'] .field-error")).to_have_text("required")
    assert page.locator("#tool-result").count() == 0


def test_enum_default_and_is_error(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    page.locator("#tools-list li[data-name='convert_temperature']").click()
    assert page.locator("#arg-convert_temperature-to option:checked").inner_text() == '"celsius"'
    page.fill("#arg-convert_temperature-value", "212")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("100")
    page.locator("#tools-list li[data-name='count_down']").click()
    page.fill("#arg-count_down-start", "500")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result.error")).to_contain_text("start must be between 0 and 100")
    shot(page, "tool-error")


def test_read_a_resource_and_a_template_and_get_a_prompt(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    page.click("#tabs button[data-tab='resources']")
    page.locator("#templates-list li[data-name='notes://{name}']").click()
    page.fill("#tpl-name", "groceries")
    page.click("#read-template")
    sync_api.expect(page.locator("#resource-result")).to_contain_text("eggs, milk, coffee")
    shot(page, "resources")
    page.click("#tabs button[data-tab='prompts']")
    page.locator("#prompts-list li").first.click()
    for field in page.locator("#prompt-detail [data-field]").all():
        field.locator("input").fill("x")
    page.click("#get-prompt")
    sync_api.expect(page.locator("#prompt-result")).to_contain_text("Messages")
    shot(page, "prompts")


def test_history_lists_the_calls(demo: Running, page: Any) -> None:
    page.goto(demo.url)
    page.click("#tabs button[data-tab='history']")
    sync_api.expect(page.locator("#history tbody tr").first).to_be_visible()
    sync_api.expect(page.locator("#history")).to_contain_text("tools/call")
    sync_api.expect(page.locator("#history")).to_contain_text("server/discover")
    shot(page, "history")


def test_the_page_without_the_token_is_refused(demo: Running, page: Any) -> None:
    response = page.goto(demo.base + "/")
    assert response is not None and response.status == 403
    assert "access token" in page.content()
    assert page.locator("#server-name").count() == 0
