"""The release binary (dist/cast2mqtt from scripts/package binary): its shared libraries are only
the allowed ones (check_needed.sh), it is stripped, and it reports the version it was built as."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = ROOT / "dist/cast2mqtt"


def test_needed_libraries_are_allowed():
    out = subprocess.run([str(ROOT / "Tests/packaging/check_needed.sh"), str(BINARY)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert out.returncode == 0, out.stdout


def test_check_needed_refuses_other_libraries(tmp_path):
    # mosquitto's own binary needs libcap, libwrap, libsystemd ...: refused.
    out = subprocess.run([str(ROOT / "Tests/packaging/check_needed.sh"), "/usr/sbin/mosquitto"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert out.returncode == 1 and "REFUSED" in out.stdout, out.stdout


def test_stripped():
    sections = subprocess.run(["readelf", "-S", str(BINARY)], check=True, stdout=subprocess.PIPE, text=True).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections


def test_reports_its_version():
    version = (ROOT / "dist/VERSION").read_text().strip()
    out = subprocess.run([str(BINARY), "--version"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    assert out == version
