"""A Debian chroot for the package tests: a cached mmdebstrap tarball unpacked into a fresh
directory. Every command runs under `unshare --mount` with /proc and /dev mounted in that private
mount namespace, so no mount outlives the command. Needs root."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def base_rootfs(name: str, *packages: str) -> pathlib.Path:
    """The cached tarball of scripts/lib/package.sh's base_rootfs (made once, then reused)."""
    script = f'set -euo pipefail; ROOT={ROOT}; DIST={ROOT}/dist; SCRATCH=; STAGE=; ' \
             f'CACHE="${{CAST2MQTT_CACHE:-$HOME/.cache/cast2mqtt}}"; source "$ROOT/scripts/lib/package.sh"; ' \
             f'base_rootfs {name} {" ".join(packages)}'
    out = subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.PIPE, text=True, timeout=1800)
    return pathlib.Path(out.stdout.strip().splitlines()[-1])


class Chroot:
    def __init__(self, tarball: pathlib.Path, path: pathlib.Path):
        self.path = path
        path.mkdir(parents=True)
        subprocess.run(["tar", "-xf", str(tarball), "-C", str(path)], check=True, timeout=600)
        # Name resolution for apt inside (the host's resolver).
        shutil.copyfile("/etc/resolv.conf", path / "etc/resolv.conf", follow_symlinks=True)
        # No service starts inside a chroot (what a Debian build chroot does).
        policy = path / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)

    def _argv(self, argv: list[str], user: str | None = None) -> list[str]:
        mounts = (f'mount -t proc proc "{self.path}/proc" && mount --rbind /dev "{self.path}/dev" && '
                  f'mount --make-rslave "{self.path}/dev" && ')
        chroot = ["chroot"] + ([f"--userspec={user}"] if user else []) + [str(self.path)]
        return ["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c",
                mounts + 'exec "$@"', "sh"] + chroot + argv

    def run(self, argv: list[str], check: bool = True, timeout: float = 600, user: str | None = None,
            env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive",
                    "LANG": "C.UTF-8", "HOME": "/root"}
        full_env.update(env or {})
        result = subprocess.run(self._argv(argv, user), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=timeout, env=full_env,
                                input=input if input is not None else "",
                                )
        if check and result.returncode != 0:
            raise AssertionError(f"in the chroot: {' '.join(argv)} exited {result.returncode}:\n{result.stdout}")
        return result

    def popen(self, argv: list[str], log: pathlib.Path, user: str | None = None,
              env: dict[str, str] | None = None) -> "ChrootProcess":
        return ChrootProcess(self._argv(argv, user), log, env)

    def files(self) -> set[str]:
        """Every path in the chroot (files, links and directories), relative, without /proc,
        /dev, /sys and /run."""
        found: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(self.path):
            rel = os.path.relpath(dirpath, self.path)
            if rel == ".":
                dirnames[:] = [d for d in dirnames if d not in ("proc", "dev", "sys", "run")]
                rel = ""
            for name in dirnames + filenames:
                found.add("/" + os.path.join(rel, name) if rel else "/" + name)
        return found

    def owned(self) -> set[str]:
        """Every path some installed package lists (dpkg's .list files)."""
        owned: set[str] = set()
        for lst in (self.path / "var/lib/dpkg/info").glob("*.list"):
            owned.update(line for line in lst.read_text(errors="replace").splitlines() if line)
        # Merged /usr: a package lists /lib/x86_64-linux-gnu/libfoo.so, the file is found
        # through /usr/lib/x86_64-linux-gnu.
        for top in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
            owned.update("/usr" + p for p in list(owned) if p.startswith(top))
        return owned

    def remove(self) -> None:
        # Nothing is mounted (each command had its own mount namespace); check before deleting.
        with open("/proc/self/mountinfo") as f:
            assert str(self.path) not in f.read(), f"something is still mounted under {self.path}"
        shutil.rmtree(self.path, ignore_errors=True)


class ChrootProcess:
    """A long-running command in the chroot: `unshare` → `sh` → (exec) `chroot` → (exec) the
    program. stop() sends the signal to the program itself (the child of unshare) by its PID."""

    def __init__(self, argv: list[str], log: pathlib.Path, env: dict[str, str] | None):
        self.log_path = log
        self._log = open(log, "ab")
        full_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=full_env)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def program_pid(self) -> int | None:
        try:
            children = pathlib.Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        if self.alive():
            pid = self.program_pid()
            try:
                os.kill(pid if pid else self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pid = self.program_pid()
                if pid:
                    os.kill(pid, signal.SIGKILL)
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
