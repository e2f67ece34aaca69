#!/usr/bin/env python3
"""Runs a build step of the release workflow here, as the workflow runs it: the step of
.github/workflows/release.yml whose `run` is `scripts/package WHAT`, with the environment the
workflow gives it (workflow, job and step `env`), plus the overrides given as NAME=VALUE
(what a machine without a registry must replace, the add-on's base for one).

    Tests/packaging/release_step.py addon CAST2MQTT_ADDON_BASE_IMAGE=localhost/...

scripts/lib/package-tests.sh builds the add-on's image this way, so the image the add-on tests run
is built by the same command, with the same settings, as the one a release publishes. Fails when
there is no such step, or its environment holds an expression (`${{ }}`) that only the workflow
can evaluate.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github/workflows/release.yml"


def release_step(what: str) -> tuple[dict[str, str], str]:
    """The environment and the command of the step that runs `scripts/package WHAT`."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    found = []
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("run", "")).strip() == f"scripts/package {what}":
                env = {**workflow.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                found.append(({k: str(v) for k, v in env.items()}, step["run"].strip()))
    if len(found) != 1:
        raise SystemExit(f"release_step: {len(found)} steps of {WORKFLOW} run `scripts/package {what}`")
    env, run = found[0]
    for name, value in env.items():
        if "${{" in value:
            raise SystemExit(f"release_step: {name} is {value!r}, which only the workflow can evaluate")
    return env, run


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    env, run = release_step(argv[1])
    overrides = dict(arg.split("=", 1) for arg in argv[2:])
    print(f"==> the release's step: {' '.join(f'{k}={v}' for k, v in env.items())} {run}"
          + (f" (here: {' '.join(f'{k}={v}' for k, v in overrides.items())})" if overrides else ""), file=sys.stderr)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", run], cwd=ROOT,
                          env={**os.environ, **env, **overrides}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
