"""A real headless Chromium for the browser tests: Debian's package, driven by Playwright.

Playwright's own browser download is not reachable from these machines, so the tests use the system
executable. When it is missing, `ensure_chromium` installs it (and a CJK font, or every Chinese
character in the screenshots is a box) with apt-get: the machines run as root with Debian's
packages reachable. Where that is impossible the tests fail with a message saying what to install;
they never skip, or a green run would say nothing about the page.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
PACKAGES = ("chromium", "fonts-wqy-microhei")
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
# Without the background-networking flags Chromium keeps dialling Google's hosts, which this
# machine's closed network refuses many times a second; the sandbox needs a non-root user.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
APT_TIMEOUT_S = 900


def ensure_chromium() -> Path:
    """The Chromium executable, installed with apt-get first if it is missing (reports the time)."""
    if CHROMIUM.exists() and CJK_FONT.exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.fail(
            f"the browser tests need {CHROMIUM} and a CJK font: run "
            f"`apt-get install -y {' '.join(PACKAGES)}` as root "
            "(or set CHROMIUM_PATH to a Chromium executable)",
            pytrace=False,
        )
    started = time.perf_counter()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Another worktree's test run may be installing at the same moment: wait for dpkg's lock.
    install = [apt, "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", *PACKAGES]
    done = _run(install, env)
    if done.returncode != 0:  # an empty or stale package list: refresh it once and try again
        _run([apt, "-o", "DPkg::Lock::Timeout=600", "update"], env)
        done = _run(install, env)
    if done.returncode != 0 or not CHROMIUM.exists():
        pytest.fail(
            f"could not install {' '.join(PACKAGES)} with apt-get (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}",
            pytrace=False,
        )
    seconds = time.perf_counter() - started
    if sys.__stderr__ is not None:  # past pytest's capture: an install of minutes deserves a line
        sys.__stderr__.write(f"\n[browser tests] installed {' '.join(PACKAGES)} in {seconds:.1f} s\n")
    return CHROMIUM


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=APT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(command)} took over {APT_TIMEOUT_S} s: {exc}", pytrace=False)
