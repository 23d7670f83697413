"""What a new user meets before any code runs: the README names the extras and the commands,
the wheel ships the LICENSE and names the project's URLs, there is a changelog, and the API
reference has a build script."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile

from tests.helpers.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_readme_install_and_quick_start_mention_the_extras():
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install"):readme.index("## Quick start")]
    assert "pip install 'mcpkit[http]'" in install and "pip install 'mcpkit[oauth]'" in install
    quick = readme[readme.index("## Quick start"):readme.index("## Writing a server")]
    assert ".[http]" in quick and "mcpkit call add a=2 b=3" in quick


def test_readme_documents_the_commands_and_the_client():
    readme = (ROOT / "README.md").read_text()
    for text in ("mcpkit call", "mcpkit list", "mcpkit read", "mcpkit prompt", "mcpkit scan", "mcpkit discover",
                 "--allowed-host", "--reload", "elicitation=", "sampling=", "roots=", "headers=", "bearer_token=",
                 "header_provider=", "progress=", "on_log=", "client.listen(", 'cache="refresh"', "task=True"):
        assert text in readme, text


def test_project_metadata():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert {"Homepage", "Source", "Issues", "Changelog", "Documentation"} <= set(project["urls"])
    assert "docs" in project["optional-dependencies"]
    assert project["scripts"]["mcpkit"] == "mcpkit.cli:main"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.startswith("# Changelog") and "## [Unreleased]" in changelog
    assert (ROOT / "scripts" / "build_docs.sh").stat().st_mode & 0o111
    assert "strict: true" in (ROOT / "mkdocs.yml").read_text()


def test_the_wheel_ships_the_license_and_the_urls(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("mcpkit-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
        assert "mcpkit/cli/__init__.py" in names and "mcpkit/cli.py" not in names
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
    assert "Project-URL: Changelog," in metadata


def test_python_m_build_makes_an_installable_wheel_and_sdist(tmp_path):
    """The published form, ready: ``python -m build`` (the dev extra has it) makes an sdist
    and a wheel; the sdist holds what a build needs and builds the same wheel again; the
    wheel installs into a fresh venv whose ``mcpkit`` command is that copy."""
    import importlib.util
    import tarfile

    import pytest

    if importlib.util.find_spec("build") is None:
        pytest.fail("the build frontend is not installed: pip install -e '.[dev]'", pytrace=False)
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (sdist,) = dist.glob("mcpkit-*.tar.gz")
    (wheel,) = dist.glob("mcpkit-*-py3-none-any.whl")
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
    top = sdist.name.removesuffix(".tar.gz")
    for needed in ("pyproject.toml", "README.md", "LICENSE", "mcpkit/__init__.py", "mcpkit/py.typed",
                   "mcpkit/cli/__init__.py", "mcpkit/inspect/static"):
        assert any(n == f"{top}/{needed}" or n.startswith(f"{top}/{needed}/") for n in names), needed
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
    assert "mcpkit/py.typed" in in_wheel and any(n.startswith("mcpkit/inspect/static/") for n in in_wheel)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                                "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=600,
                               env=clean_env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    version = subprocess.run([str(venv / "bin" / "mcpkit"), "--version"], capture_output=True, text=True, timeout=60,
                             cwd=tmp_path, env=clean_env)
    assert version.returncode == 0 and version.stdout == f"mcpkit {PYPROJECT['project']['version']}\n", version.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import mcpkit; print(mcpkit.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=clean_env)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the installed copy, not the checkout
