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
from playwright import sync_api  # the dev extra installs it

from tests.helpers.cli import everything_argv, served
from tests.helpers.paths import DEMO, MRTR_SERVER, ROOT
from tests.test_inspect_app import DEMO_TARGET, Running, running_inspector

CHROMIUM = os.environ.get("MCPKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "tests" / ".artifacts" / "inspect"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

if not os.path.exists(CHROMIUM):
    # Fail, never skip: .ci/run installs chromium; here we try the same script once.
    import subprocess

    done = subprocess.run(["bash", str(ROOT / "scripts" / "install_browser.sh")], capture_output=True, text=True)
    CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
    if done.returncode != 0 or not os.path.exists(CHROMIUM):
        pytest.fail(f"no chromium, and scripts/install_browser.sh could not install it:\n{done.stderr[-2000:]}",
                    pytrace=False)

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
    sync_api.expect(page.locator("#server-era")).to_have_text("modern")
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
    page.fill("#tpl-name", "gr")
    sync_api.expect(page.locator("#tpl-name-options option")).to_have_count(1)
    assert page.locator("#tpl-name-options option").get_attribute("value") == "groceries"
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


def open_page(page: Any, url: str) -> None:
    """Load the page and wait for its event stream (progress, questions, notifications)."""
    page.goto(url)
    sync_api.expect(page.locator("body[data-events='open']")).to_have_count(1)


def test_count_down_shows_progress_live(demo: Running, page: Any) -> None:
    open_page(page, demo.url)
    page.locator("#tools-list li[data-name='count_down']").click()
    page.fill("#arg-count_down-start", "3")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("liftoff")
    page.locator("#tool-result details", has_text="progress").click()
    sync_api.expect(page.locator("#tool-result .progress")).to_contain_text("3/3 0 to go")
    shot(page, "tool-progress")


def test_progress_arrives_while_the_call_runs(demo: Running, page: Any) -> None:
    seen: list[str] = []
    open_page(page, demo.url)
    page.expose_function("mcpkitSeen", lambda text: seen.append(text))
    page.evaluate("""() => new MutationObserver(() => {
        const el = document.getElementById('tool-progress-text'); if (el) window.mcpkitSeen(el.textContent);
      }).observe(document.body, {subtree: true, childList: true, characterData: true})""")
    page.locator("#tools-list li[data-name='count_down']").click()
    page.fill("#arg-count_down-start", "5")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("liftoff")
    assert any("to go" in text for text in seen), seen


def test_listen_sees_resources_updated_after_save_note(demo: Running, page: Any) -> None:
    open_page(page, demo.url)
    page.click("#tabs button[data-tab='listen']")
    page.fill("#listen-uris", "notes://ideas")
    page.click("#listen-start")
    sync_api.expect(page.locator("#listen-state")).to_contain_text("listening to notes://ideas")
    page.wait_for_timeout(300)  # the subscription is acknowledged before the change
    page.click("#tabs button[data-tab='tools']")
    page.locator("#tools-list li[data-name='save_note']").click()
    page.fill("#arg-save_note-name", "ideas")
    page.fill("#arg-save_note-text", "inspect in a browser")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("saved notes://ideas")
    page.click("#tabs button[data-tab='listen']")
    row = page.locator("#listen-log tr.notification", has_text="notifications/resources/updated")
    sync_api.expect(row.first).to_contain_text("notes://ideas")
    shot(page, "listen")
    page.click("#listen-stop")


@pytest.fixture(scope="module")
def mrtr() -> Iterator[Running]:
    with running_inspector(str(MRTR_SERVER)) as running:
        yield running


def test_elicitation_is_answered_in_the_page(mrtr: Running, page: Any) -> None:
    open_page(page, mrtr.url)
    page.locator("#tools-list li[data-name='greet']").click()
    page.click("#call-tool")
    sync_api.expect(page.locator("#input-message")).to_have_text("What is your name?")
    shot(page, "elicitation")
    page.fill("#elicit-name", "Ada")
    page.click("#input-accept")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("Hello, Ada!")
    assert page.locator("#input-panel").is_hidden()
    page.click("#tabs button[data-tab='history']")
    sync_api.expect(page.locator("#history")).to_contain_text("elicitation/create")


def test_a_running_call_is_cancelled_from_the_page(mrtr: Running, page: Any) -> None:
    open_page(page, mrtr.url)
    page.locator("#tools-list li[data-name='greet']").click()
    page.click("#call-tool")
    sync_api.expect(page.locator("#input-message")).to_have_text("What is your name?")
    page.click("#cancel-tool")
    sync_api.expect(page.locator("#tool-result.error")).to_contain_text("cancelled")
    sync_api.expect(page.locator("#input-panel")).to_be_hidden()  # the question went with the call


def test_sampling_is_answered_in_the_page(mrtr: Running, page: Any) -> None:
    open_page(page, mrtr.url)
    page.locator("#tools-list li[data-name='ask_sample']").click()
    page.fill("#arg-ask_sample-question", "What is 2+2?")
    page.click("#call-tool")
    sync_api.expect(page.locator("#input-panel")).to_contain_text("What is 2+2?")
    page.fill("#sampling-answer", "four")
    page.click("#input-accept")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("says: four")


def test_over_http(page: Any) -> None:
    with served(DEMO) as srv, running_inspector(srv.url) as running:
        page.goto(running.url)
        sync_api.expect(page.locator("#server-name")).to_have_text("mcpkit-demo")
        sync_api.expect(page.locator("#target")).to_contain_text("(http)")
        page.locator("#tools-list li[data-name='add']").click()
        page.fill("#arg-add-a", "2")
        page.fill("#arg-add-b", "3")
        page.click("#call-tool")
        sync_api.expect(page.locator("#tool-result .structured")).to_contain_text('"result": 5')
        shot(page, "http")


@pytest.fixture(scope="module")
def everything() -> Iterator[Running]:
    with running_inspector("--", *everything_argv(), timeout=60) as running:
        yield running


def test_server_everything_legacy(everything: Running, page: Any) -> None:
    page.goto(everything.url)
    sync_api.expect(page.locator("#server-era")).to_contain_text("legacy (2025-")
    sync_api.expect(page.locator("#tools-list li[data-name='echo']")).to_be_visible()
    page.locator("#tools-list li[data-name='echo']").click()
    page.fill("#arg-echo-message", "hi from the inspector")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("hi from the inspector")
    shot(page, "everything-legacy")
    page.locator("#tools-list li[data-name='get-tiny-image']").click()
    page.click("#call-tool")
    image = page.locator("#tool-result .block.image img")
    sync_api.expect(image).to_be_visible()
    assert page.evaluate("(img) => img.naturalWidth", image.element_handle()) > 0
    shot(page, "everything-image")


def test_legacy_elicitation_is_answered_in_the_page(everything: Running, page: Any) -> None:
    open_page(page, everything.url)
    page.locator("#tools-list li[data-name='trigger-elicitation-request']").click()
    page.click("#call-tool")
    sync_api.expect(page.locator("#input-panel")).to_be_visible()
    shot(page, "everything-elicitation")
    page.fill("#elicit-name", "Ada Lovelace")
    page.click("#input-accept")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("Ada Lovelace")
    assert page.locator("#input-panel").is_hidden()
    page.click("#call-tool")
    page.click("#input-decline")
    sync_api.expect(page.locator("#tool-result")).to_contain_text("decline")


def test_legacy_progress_arrives_live(everything: Running, page: Any) -> None:
    open_page(page, everything.url)
    page.locator("#tools-list li[data-name='trigger-long-running-operation']").click()
    page.fill("#arg-trigger-long-running-operation-duration", "2")
    page.fill("#arg-trigger-long-running-operation-steps", "4")
    page.click("#call-tool")
    sync_api.expect(page.locator("#tool-progress-text")).to_contain_text("/4")
    sync_api.expect(page.locator("#tool-result")).to_be_visible(timeout=15_000)


def test_the_page_without_the_token_is_refused(demo: Running, page: Any) -> None:
    response = page.goto(demo.base + "/")
    assert response is not None and response.status == 403
    assert "access token" in page.content()
    assert page.locator("#server-name").count() == 0


def test_the_file_the_browser_is_opened_with_lands_on_the_page(page: Any, tmp_path: Path) -> None:
    # What `mcpkit inspect` hands the browser (no token in it): a private file that redirects
    # with a one-time code, which the app exchanges for the page.
    import re

    from tests.security.test_inspect_token import inspector_with_browser

    with inspector_with_browser(tmp_path) as opened:
        assert opened.argv[-1].startswith("file://")
        page.goto(opened.argv[-1])
        page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:\d+/\?token="), timeout=15_000)
        assert opened.token in page.url
        sync_api.expect(page.locator("#server-name")).to_have_text("mcpkit-demo")
