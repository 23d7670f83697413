"""``mcpkit install HOST TARGET`` and ``mcpkit uninstall HOST NAME`` on temporary homes (HOME,
XDG_CONFIG_HOME and APPDATA pointed into tmp_path), for every host shape: the entry written,
the diff shown, the backup kept, other entries and settings left alone, a second run changing
nothing, --dry-run writing nothing, refusals worded in one line; and the installed entry
really starts the server (and ``mcpkit scan`` finds it)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit.cli import _goose
from mcpkit.cli._hosts import HOSTS
from mcpkit.cli._install import default_name
from tests.helpers.cli import mcpkit
from tests.helpers.paths import DEMO, subprocess_env


class Home:
    """A temporary home: ``run`` is ``mcpkit`` with HOME, XDG_CONFIG_HOME and APPDATA inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.xdg = root / ".config"
        self.appdata = root / "AppData"
        root.mkdir(parents=True, exist_ok=True)
        self.env = subprocess_env(HOME=str(root), XDG_CONFIG_HOME=str(self.xdg), APPDATA=str(self.appdata))

    def run(self, *args: str | Path) -> Any:
        return mcpkit(*args, cwd=self.root, env=self.env)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


def demo_entry(**extra: Any) -> dict[str, Any]:
    return {**extra, "command": sys.executable, "args": ["-m", "mcpkit", "serve", str(DEMO)]}


# ---------------------------------------------------------------- where each host keeps its config
def test_host_paths_follow_home_appdata_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    mac = tmp_path / "Library" / "Application Support"
    expected = {
        ("claude-desktop", "darwin"): mac / "Claude" / "claude_desktop_config.json",
        ("claude-desktop", "win32"): tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json",
        ("claude-desktop", "linux"): tmp_path / "xdg" / "Claude" / "claude_desktop_config.json",
        ("vscode", "darwin"): mac / "Code" / "User" / "mcp.json",
        ("vscode", "win32"): tmp_path / "Roaming" / "Code" / "User" / "mcp.json",
        ("vscode", "linux"): tmp_path / "xdg" / "Code" / "User" / "mcp.json",
        ("goose", "linux"): tmp_path / "xdg" / "goose" / "config.yaml",
        ("goose", "darwin"): tmp_path / "xdg" / "goose" / "config.yaml",
        ("goose", "win32"): tmp_path / "Roaming" / "Block" / "goose" / "config" / "config.yaml",
        ("claude-code", "linux"): tmp_path / ".claude.json",
        ("cursor", "win32"): tmp_path / ".cursor" / "mcp.json",
        ("gemini-cli", "darwin"): tmp_path / ".gemini" / "settings.json",
        ("windsurf", "linux"): tmp_path / ".codeium" / "windsurf" / "mcp_config.json",
    }
    for (host, platform), path in expected.items():
        assert HOSTS[host].config_path(platform) == str(path), (host, platform)
    assert HOSTS["mcp-json"].config_path("linux") is None
    # A config that exists wins over the platform's default (the one scan reads is the one written).
    existing = tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json"
    existing.parent.mkdir(parents=True)
    existing.write_text("{}")
    assert HOSTS["claude-desktop"].config_path("linux") == str(existing)


# ---------------------------------------------------------------- the acceptance case, and the entry works
def test_install_claude_desktop_with_config_file_then_again_changes_nothing(home: Home, tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    first = home.run("install", "claude-desktop", DEMO, "--config", config)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"--- /dev/null\n+++ {config}\n")
    assert f"installed mcpkit-demo in Claude Desktop: {config}" in first.stdout
    data = json.loads(config.read_text())
    assert data == {"mcpServers": {"mcpkit-demo": demo_entry()}}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # a new config may come to hold tokens
    assert not Path(f"{config}.bak").exists()
    before = (config.read_bytes(), config.stat().st_mtime_ns)
    second = home.run("install", "claude-desktop", DEMO, "--config", config)
    assert second.returncode == 0, second.stderr
    assert second.stdout == f"mcpkit-demo is already installed in {config}; nothing changed\n"
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before
    assert not Path(f"{config}.bak").exists()
    # The entry as a host would run it.
    entry = data["mcpServers"]["mcpkit-demo"]
    listed = mcpkit("list", "tools", "--", entry["command"], *entry["args"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "add(a: integer, b: integer)" in listed.stdout


def test_scan_finds_what_install_wrote(home: Home) -> None:
    assert home.run("install", "cursor", DEMO, "--name", "demo").returncode == 0
    assert home.run("install", "gemini-cli", DEMO, "--name", "gem").returncode == 0
    scan = home.run("scan", "--json")
    assert scan.returncode == 0, scan.stderr
    rows = {r["name"]: r for r in json.loads(scan.stdout)["servers"]}
    assert set(rows) == {"demo", "gem"}
    assert rows["demo"]["error"] is None and rows["demo"]["tools"] == 4 and "Cursor" in rows["demo"]["source"]
    assert rows["gem"]["error"] is None and "Gemini CLI" in rows["gem"]["source"]


# ---------------------------------------------------------------- every JSON shape
@pytest.mark.parametrize(("host", "relpath", "block", "stdio", "http"), [
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers", {}, None),
    ("claude-code", ".claude.json", "mcpServers", {"type": "stdio"}, {"type": "http", "url": "URL"}),
    ("cursor", ".cursor/mcp.json", "mcpServers", {}, {"url": "URL"}),
    ("vscode", ".config/Code/User/mcp.json", "servers", {"type": "stdio"}, {"type": "http", "url": "URL"}),
    ("gemini-cli", ".gemini/settings.json", "mcpServers", {}, {"httpUrl": "URL"}),
    ("windsurf", ".codeium/windsurf/mcp_config.json", "mcpServers", {}, {"serverUrl": "URL"}),
])
def test_each_json_host_shape(home: Home, host: str, relpath: str, block: str, stdio: dict[str, Any],
                              http: dict[str, Any] | None) -> None:
    path = home.root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    other = {"command": "other-server", "args": ["--flag"]}
    original = {"theme": "dark", block: {"other": other}, "numbers": [1, 2.5]}
    path.write_text(json.dumps(original, indent=4) + "\n")
    os.chmod(path, 0o640)
    proc = home.run("install", host, DEMO, "-e", "TOKEN=abc", "--name", "demo")
    assert proc.returncode == 0, proc.stderr
    assert f"--- {path}\n+++ {path}\n" in proc.stdout and '+        "demo": {' in proc.stdout  # indent kept (4)
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data["numbers"] == [1, 2.5] and data[block]["other"] == other
    assert data[block]["demo"] == {**stdio, **demo_entry(), "env": {"TOKEN": "abc"}}
    assert json.loads(Path(f"{path}.bak").read_text()) == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    url = "https://mcp.example.com/mcp"
    remote = home.run("install", host, url, "-H", "Authorization: Bearer t0k")
    if http is None:
        assert remote.returncode == 1
        assert remote.stderr.strip().splitlines() == [
            f"mcpkit install: Claude Desktop reads only stdio servers from its config; add {url} as a connector "
            "in its settings, or install a stdio command"]
    else:
        assert remote.returncode == 0, remote.stderr
        written = json.loads(path.read_text())[block]["mcp.example.com"]
        assert written == {**{k: (url if v == "URL" else v) for k, v in http.items()},
                           "headers": {"Authorization": "Bearer t0k"}}
    gone = home.run("uninstall", host, "demo")
    assert gone.returncode == 0, gone.stderr
    assert '-        "demo": {' in gone.stdout and "removed demo from" in gone.stdout
    after = json.loads(path.read_text())
    assert "demo" not in after[block] and after[block]["other"] == other and after["theme"] == "dark"


def test_claude_code_keeps_its_state_and_project_servers(home: Home) -> None:
    path = home.root / ".claude.json"
    state = {"numStartups": 12, "projects": {"/p": {"mcpServers": {"local": {"command": "x"}}, "allowedTools": []}},
             "mcpServers": {}}
    path.write_text(json.dumps(state, indent=2))
    assert home.run("install", "claude-code", DEMO).returncode == 0
    data = json.loads(path.read_text())
    assert data["numStartups"] == 12 and data["projects"] == state["projects"]
    assert data["mcpServers"] == {"mcpkit-demo": {"type": "stdio", **demo_entry()}}
    assert not path.read_text().endswith("\n\n")


def test_dry_run_writes_nothing(home: Home) -> None:
    path = home.root / ".cursor" / "mcp.json"
    dry = home.run("install", "cursor", DEMO, "--dry-run")
    assert dry.returncode == 0 and "+++ " in dry.stdout and dry.stdout.endswith(f"dry run: {path} not changed\n")
    assert not path.exists()
    assert home.run("install", "cursor", DEMO).returncode == 0
    text = path.read_text()
    dry = home.run("uninstall", "cursor", "mcpkit-demo", "--dry-run")
    assert dry.returncode == 0 and '-    "mcpkit-demo": {' in dry.stdout
    assert path.read_text() == text and not Path(f"{path}.bak").exists()


def test_a_different_entry_of_the_same_name_is_not_clobbered(home: Home) -> None:
    path = home.root / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    mine = {"mcpServers": {"mcpkit-demo": {"command": "someone-elses"}}}
    path.write_text(json.dumps(mine))
    proc = home.run("install", "cursor", DEMO)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"mcpkit install: {path} already has a different 'mcpkit-demo' entry; pass --force to "
                           "replace it, or --name to install this one under another name\n")
    assert json.loads(path.read_text()) == mine
    forced = home.run("install", "cursor", DEMO, "--force")
    assert forced.returncode == 0 and "replaced mcpkit-demo in Cursor" in forced.stdout
    assert json.loads(path.read_text())["mcpServers"]["mcpkit-demo"] == demo_entry()
    assert json.loads(Path(f"{path}.bak").read_text()) == mine


def test_jsonc_and_broken_configs_are_refused_not_rewritten(home: Home) -> None:
    path = home.root / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    jsonc = '{\n  // my servers\n  "servers": {},\n}\n'
    path.write_text(jsonc)
    proc = home.run("install", "vscode", DEMO)
    assert proc.returncode == 1 and path.read_text() == jsonc
    assert proc.stderr == (f"mcpkit install: {path} has comments or trailing commas; mcpkit will not rewrite it "
                           "(add the entry under \"servers\" by hand)\n")
    path.write_text("{not json")
    proc = home.run("install", "vscode", DEMO)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1 and "is not valid JSON" in proc.stderr
    path.write_text('{"servers": []}')
    proc = home.run("install", "vscode", DEMO)
    assert proc.returncode == 1 and proc.stderr.endswith('"servers" is not an object; fix it first\n')


def test_a_symlinked_config_stays_a_symlink(home: Home, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}')
    link = home.root / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert home.run("install", "cursor", DEMO).returncode == 0
    assert link.is_symlink() and "mcpkit-demo" in json.loads(real.read_text())["mcpServers"]


def test_mcp_json_prints_the_entry_or_writes_config(home: Home, tmp_path: Path) -> None:
    proc = home.run("install", "mcp-json", "--", "npx", "-y", "@modelcontextprotocol/server-everything@2025.1.1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"mcpServers": {"server-everything": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2025.1.1"]}}}
    config = tmp_path / "project" / "mcp.json"
    proc = home.run("install", "mcp.json", "https://h.example/mcp", "--config", config, "--name", "h")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(config.read_text()) == {"mcpServers": {"h": {"url": "https://h.example/mcp"}}}
    assert home.run("uninstall", "mcp-json", "h").returncode == 2


@pytest.mark.parametrize(("args", "message"), [
    (["nohost", "x.py"], "unknown HOST 'nohost' (choose from claude-desktop, claude-code, cursor, vscode, gemini-cli, "
                         "windsurf, goose, mcp-json)"),
    (["cursor"], "give a TARGET: FILE.py, an http(s) URL, or -- COMMAND [ARGS...]"),
    (["cursor", "missing.py"], "no such file: "),
    (["cursor", "notatarget"], "'notatarget' is not a TARGET"),
    (["cursor", "https://x.example/mcp", "-e", "A=1"], "-e sets a stdio server's environment; a URL takes --header"),
    (["cursor", str(DEMO), "-H", "A: 1"], "--header is for a URL; a stdio server takes -e KEY=VAL"),
    (["cursor", str(DEMO), "--name", "bad name"], "--name 'bad name': use letters, digits"),
    (["cursor", str(DEMO), "-e", "NOEQUALS"], "-e must look like KEY=VALUE"),
    (["cursor", "x.py", "--", "npx", "y"], "give a TARGET or -- COMMAND [ARGS...], not both"),
])
def test_bad_input_gets_one_line(home: Home, args: list[str], message: str) -> None:
    proc = home.run("install", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mcpkit install: {message}"), proc.stderr
    assert not (home.root / ".cursor").exists()


def test_uninstall_of_what_is_not_there(home: Home) -> None:
    path = home.root / ".cursor" / "mcp.json"
    proc = home.run("uninstall", "cursor", "nothing")
    assert proc.returncode == 1 and proc.stderr == f"mcpkit uninstall: {path} does not exist; nothing to remove\n"
    assert home.run("install", "cursor", DEMO).returncode == 0
    proc = home.run("uninstall", "cursor", "nothing")
    assert proc.returncode == 1 and proc.stderr == f"mcpkit uninstall: {path} has no 'nothing' entry (nothing changed)\n"


def test_default_names() -> None:
    assert default_name(file=str(DEMO)) == "mcpkit-demo"
    assert default_name(url="https://api.example.com:8443/mcp") == "api.example.com"
    assert default_name(argv=["npx", "-y", "@modelcontextprotocol/server-filesystem@1.2", "/tmp"]) == "server-filesystem"
    assert default_name(argv=["uvx", "mcp-server-time"]) == "mcp-server-time"
    assert default_name(argv=["node", "/srv/build/index.js"]) == "index"
    assert default_name(argv=["./my server"]) == "my-server"


# ---------------------------------------------------------------- Goose (YAML, edited without a YAML library)
GOOSE_AS_GOOSE_WRITES = """\
GOOSE_PROVIDER: anthropic
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  fs:
    args:
    - -y
    - '@modelcontextprotocol/server-filesystem'
    cmd: npx
    enabled: true
    envs: {}
    name: fs
    type: stdio
# search paths
GOOSE_SEARCH_PATHS:
- /usr/local/bin
"""


def test_goose_new_config(home: Home) -> None:
    path = home.xdg / "goose" / "config.yaml"
    proc = home.run("install", "goose", DEMO, "-e", "KEY=v")
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == (
        'extensions:\n  "mcpkit-demo":\n    name: "mcpkit-demo"\n    type: "stdio"\n    enabled: true\n'
        f'    cmd: {json.dumps(sys.executable)}\n    args: ["-m", "mcpkit", "serve", {json.dumps(str(DEMO))}]\n'
        '    envs: {"KEY": "v"}\n    timeout: 300\n')
    again = home.run("install", "goose", DEMO, "-e", "KEY=v")
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_goose_existing_config_keeps_everything_else(home: Home) -> None:
    path = home.xdg / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(GOOSE_AS_GOOSE_WRITES)
    proc = home.run("install", "goose", "https://remote.example/mcp", "--name", "remote", "-H", "X-Key: 1")
    assert proc.returncode == 0, proc.stderr
    text = path.read_text()
    lines = GOOSE_AS_GOOSE_WRITES.splitlines()
    at = lines.index("# search paths")
    assert text.splitlines() == [*lines[:at], '  "remote":', '    name: "remote"', '    type: "streamable_http"',
                                 "    enabled: true", '    uri: "https://remote.example/mcp"',
                                 '    headers: {"X-Key": "1"}', "    envs: {}", "    timeout: 300", *lines[at:]]
    assert Path(f"{path}.bak").read_text() == GOOSE_AS_GOOSE_WRITES
    assert _goose.names(text) == ["developer", "fs", "remote"]
    differs = home.run("install", "goose", DEMO, "--name", "fs")
    assert differs.returncode == 1 and "already has a different 'fs' entry" in differs.stderr
    gone = home.run("uninstall", "goose", "remote")
    assert gone.returncode == 0, gone.stderr
    assert path.read_text() == GOOSE_AS_GOOSE_WRITES


def test_goose_yaml_reads_back(home: Home) -> None:
    yaml = pytest.importorskip("yaml")  # a check of the output only: mcpkit itself has no YAML dependency
    path = home.xdg / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(GOOSE_AS_GOOSE_WRITES)
    assert home.run("install", "goose", DEMO, "--name", "demo", "-e", "Q=\"quoted\" ü: #x").returncode == 0
    data = yaml.safe_load(path.read_text())
    assert data["GOOSE_SEARCH_PATHS"] == ["/usr/local/bin"]
    assert set(data["extensions"]) == {"developer", "fs", "demo"}
    assert data["extensions"]["demo"] == {"name": "demo", "type": "stdio", "enabled": True, "cmd": sys.executable,
                                          "args": ["-m", "mcpkit", "serve", str(DEMO)],
                                          "envs": {"Q": "\"quoted\" ü: #x"}, "timeout": 300}
    assert data["extensions"]["fs"] == yaml.safe_load(GOOSE_AS_GOOSE_WRITES)["extensions"]["fs"]


@pytest.mark.parametrize(("text", "after"), [
    ("extensions: {}\n", 'extensions:\n  "x":\n    a: 1\n'),
    ("GOOSE_MODEL: m\n", 'GOOSE_MODEL: m\n\nextensions:\n  "x":\n    a: 1\n'),
    ("", 'extensions:\n  "x":\n    a: 1\n'),
    ("extensions:\n", 'extensions:\n  "x":\n    a: 1\n'),
    ("extensions:\n    y:\n        a: 2\n", 'extensions:\n    y:\n        a: 2\n    "x":\n        a: 1\n'),
])
def test_goose_forms_it_edits(text: str, after: str) -> None:
    new, status = _goose.add(text, "x", {"a": 1})
    assert (new, status) == (after, "added")
    assert _goose.add(new, "x", {"a": 1}) == (new, "same")
    removed = _goose.remove(new, "x")
    assert removed is not None and "x" not in _goose.names(removed)
    assert removed == (text if "y:" in text else "GOOSE_MODEL: m\n\nextensions: {}\n" if "GOOSE" in text
                       else "extensions: {}\n")


@pytest.mark.parametrize(("text", "reason"), [
    ("extensions:\n\tfoo:\n", "it indents with tabs"),
    ("extensions: {a: {type: stdio}}\n", "its extensions value is inline"),
    ("extensions:\n- type: stdio\n", "its extensions value is a sequence"),
    ("{extensions: {}}\n", "it is a flow mapping"),
    ("a: 1\n---\nextensions: {}\n", "it holds several YAML documents"),
    ('"extensions":\n  a:\n    b: 1\n', "its extensions key is quoted or complex"),
    ("extensions:\n  a:\n    b: 1\n  a:\n    b: 2\n", "extension 'a' is there twice"),
    ("extensions:\n    a:\n      b: 1\n  c: 2\n", "line 4 is indented less than the extensions above it"),
    ("extensions: {}\nextensions: {}\n", "it has two extensions keys"),
])
def test_goose_forms_it_refuses(home: Home, text: str, reason: str) -> None:
    with pytest.raises(_goose.Unsafe, match=reason):
        _goose.add(text, "x", {"a": 1})
    path = home.xdg / "goose" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    proc = home.run("install", "goose", DEMO)
    assert proc.returncode == 1 and path.read_text() == text
    assert proc.stderr.splitlines() == [f"mcpkit install: {path}: not edited, {reason}"
                                        + proc.stderr.split(reason, 1)[1].rstrip("\n")]
    assert proc.stderr.rstrip().endswith("add 'mcpkit-demo' under extensions: by hand")
