"""``mcpkit inspect`` as an MCP Apps host (mcpkit/inspect/_apps.py, static/apps.js).

The API: a ui:// app opens under a one-time frame id, with the policy its resource asks for;
an app may call only tools whose visibility includes "app". Then in headless Chromium
(Playwright, as tests/test_inspect_browser.py): examples/apps_server.py's ``roll_dice`` is
called, its app renders in a sandboxed iframe, its button calls ``dice_stats`` through the
inspector, the result shows in the app and in the history; the app cannot reach the
inspector's page, token or API. The screenshot goes to tests/.artifacts/inspect/apps.png
(and, with MCPKIT_UPDATE_SCREENSHOTS=1, to docs/img/inspect-apps.png for the README).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import httpx
import pytest

from mcpkit.inspect._apps import allow_attribute, content_security_policy
from tests.helpers.paths import ROOT
from tests.test_inspect_app import Running, running_inspector

EXAMPLE = ROOT / "examples" / "apps_server.py"
BOARD = "ui://dice/board.html"


@pytest.fixture(scope="module")
def inspector() -> Iterator[Running]:
    with running_inspector("--", sys.executable, str(EXAMPLE)) as running:
        yield running


def test_policy_from_the_resource() -> None:
    default, dropped = content_security_policy(None)
    assert "default-src 'none'" in default and "connect-src 'none'" in default and "frame-src 'none'" in default
    assert "script-src 'self' 'unsafe-inline';" in default and "sandbox allow-scripts" in default
    assert "base-uri 'self'" in default and "object-src 'none'" in default and not dropped
    asked, dropped = content_security_policy({
        "connectDomains": ["https://api.example.com", "https://x.com; script-src *", "*"],
        "resourceDomains": ["https://*.cdn.example.com", "'unsafe-eval'"], "frameDomains": ["https://www.youtube.com"],
        "baseUriDomains": ["https://cdn.example.com"], "wasmUnsafeEval": True})
    assert "connect-src https://api.example.com;" in asked
    assert "script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval' https://*.cdn.example.com;" in asked
    assert "frame-src https://www.youtube.com" in asked and "base-uri https://cdn.example.com" in asked
    assert "unsafe-eval'" not in asked.replace("'wasm-unsafe-eval'", "") and "x.com" not in asked
    assert len(dropped) == 3  # a source that is not a plain origin is refused, never passed on
    assert allow_attribute({"camera": {}, "clipboardWrite": {}, "usb": {}}) == "camera; clipboard-write"


def test_api_opens_an_app_once_and_guards_app_calls(inspector: Running) -> None:
    opened = inspector.api("POST", "/api/app/open", json={"uri": BOARD, "tool": "roll_dice"}).json()
    assert opened["src"] == f"/frame/{opened['frameId']}" and opened["prefersBorder"] is True
    frame = httpx.get(inspector.base + opened["src"], timeout=10)  # no token: the one-time id is enough
    assert frame.status_code == 200 and frame.text.startswith("<!DOCTYPE html>")
    csp = frame.headers["content-security-policy"]
    assert "sandbox allow-scripts" in csp and "connect-src 'none'" in csp and "frame-ancestors http://127.0.0.1:" in csp
    assert inspector.token not in frame.text and "x-frame-options" not in frame.headers
    assert httpx.get(inspector.base + opened["src"], timeout=10).status_code == 404  # spent
    assert httpx.get(inspector.base + "/frame/guess", timeout=10).status_code == 404
    assert inspector.api("POST", "/api/app/open", json={"uri": "https://evil/app"}).status_code == 400
    called = inspector.api("POST", "/api/app/call", json={"frameId": opened["frameId"], "name": "dice_stats",
                                                          "arguments": {"rolls": [2, 4]}})
    assert called.status_code == 200, called.text
    assert called.json()["result"]["content"][0]["text"] == "total 6, mean 3.00, highest 4"
    assert inspector.api("POST", "/api/app/call", json={"frameId": "nope", "name": "dice_stats"}).status_code == 404
    history = inspector.api("GET", "/api/history").json()["items"]
    app_calls = [e for e in history if e.get("from") == "app"]
    assert app_calls and app_calls[-1]["method"] == "tools/call" and app_calls[-1]["app"] == BOARD
    # An app frame cannot use the API: its requests carry Origin: null and no token.
    assert httpx.get(inspector.base + "/api/card", headers={"Origin": "null"}, timeout=10).status_code == 403


# ---------------------------------------------------------------- in Chromium
def test_the_app_renders_and_calls_a_tool_through_the_inspector(inspector: Running) -> None:
    from playwright import sync_api

    from tests.test_inspect_browser import ARGS, CHROMIUM

    with tempfile.TemporaryDirectory(prefix="mcpkit-chromium-") as profile, sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                                                        viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(inspector.url)
            tool = page.locator("#tools-list li[data-name='roll_dice']")
            sync_api.expect(tool).to_contain_text("app")
            sync_api.expect(page.locator("#tools-list li[data-name='dice_stats']")).to_contain_text("app only")
            tool.click()
            page.fill("#arg-roll_dice-count", "4")
            page.click("#call-tool")
            sync_api.expect(page.locator("#tool-result")).to_contain_text("rolls")
            frame_el = page.locator("#app-frame")
            sync_api.expect(frame_el).to_be_visible()
            assert frame_el.get_attribute("sandbox") == "allow-scripts"
            assert frame_el.get_attribute("referrerpolicy") == "no-referrer"
            app = page.frame_locator("#app-frame")
            sync_api.expect(app.locator(".die")).to_have_count(4)
            dice = [int(d) for d in app.locator(".die").all_inner_texts()]
            assert all(1 <= d <= 6 for d in dice)
            app.locator("#stats-button").click()
            total = sum(dice)
            sync_api.expect(app.locator("#stats")).to_contain_text(f"total {total}")
            sync_api.expect(page.locator("#app-log")).to_contain_text("app called dice_stats")
            # The app's document is isolated: an opaque origin, no referrer, no way to the token.
            frame = next(f for f in page.frames if f.url.startswith(inspector.base + "/frame/"))
            probe = frame.evaluate("""async () => {
                let parentDom = "blocked", api = "blocked";
                try { parentDom = String(window.parent.document.title); } catch (e) {}
                try { const r = await fetch('/api/card'); api = String(r.status); } catch (e) {}
                return { origin: window.origin, referrer: document.referrer, parentDom, api,
                         cookie: (() => { try { return document.cookie; } catch (e) { return 'blocked'; } })() };
            }""")
            assert probe["origin"] == "null" and probe["referrer"] == "" and probe["parentDom"] == "blocked"
            assert probe["api"] == "blocked" and inspector.token not in str(probe)
            # The README screenshot names the example, not this machine's paths.
            page.evaluate("document.getElementById('target').textContent = 'python examples/apps_server.py (stdio)'")
            page.evaluate("window.scrollTo(0, 0)")
            out = ROOT / "tests" / ".artifacts" / "inspect"
            out.mkdir(parents=True, exist_ok=True)
            # A viewport as tall as the page (a full-page capture may miss the out-of-process frame).
            page.set_viewport_size({"width": 1280, "height": 1500})
            sync_api.expect(app.locator("#stats")).to_contain_text(f"total {total}")
            page.wait_for_timeout(300)
            page.screenshot(path=str(out / "apps.png"))
            if os.environ.get("MCPKIT_UPDATE_SCREENSHOTS"):  # refresh the README's picture on purpose only
                shutil.copyfile(out / "apps.png", ROOT / "docs" / "img" / "inspect-apps.png")
            page.click("#tabs button[data-tab='history']")
            page.click("#history-refresh")
            rows = page.locator("#history tbody tr")
            app_rows = rows.filter(has_text="app →").filter(has_text="tools/call")
            sync_api.expect(app_rows).not_to_have_count(0)  # newest first: this page's call
            assert "dice_stats" in app_rows.first.inner_text() or "dice_stats" in app_rows.first.inner_html()
            assert not errors, errors
        finally:
            context.close()


# ---------------------------------------------------------------- a 2025-11-25 server
def test_app_only_tool_through_the_inspector_on_a_legacy_server() -> None:
    """The inspector declares MCP Apps in ``initialize`` too, so a legacy-only server shows it
    the app-only tool, and the app's call to it goes through (tests/servers/legacy_only_apps.py
    refuses server/discover: only the initialize handshake works)."""
    from tests.helpers.servers import mcpkit_serve_argv, running_server

    with running_server(mcpkit_serve_argv(ROOT / "tests" / "servers" / "legacy_only_apps.py"), timeout=30) as url, \
            running_inspector(url) as inspector:
        card = inspector.api("GET", "/api/card").json()
        assert card["era"] == "legacy", card
        opened = inspector.api("POST", "/api/app/open", json={"uri": BOARD, "tool": "roll_dice"}).json()
        called = inspector.api("POST", "/api/app/call", json={"frameId": opened["frameId"], "name": "dice_stats",
                                                              "arguments": {"rolls": [5]}})
        assert called.status_code == 200, called.text
        assert called.json()["result"]["content"][0]["text"] == "total 5, mean 5.00, highest 5"
        refused = inspector.api("POST", "/api/app/call", json={"frameId": opened["frameId"], "name": "nope"})
        assert refused.status_code == 403
