#!/usr/bin/env python3
"""Set everything up, then run the service or the tests: the README's two commands.

    python3 scripts/dev.py serve    # the service, on its offline embedded default
    python3 scripts/dev.py test     # ruff, the import contracts, mypy and the whole test suite

Needs only Python 3.11+ and the package registries. Creates .venv beside this
folder and installs the project into it (again only when pyproject.toml changed):
serve installs what the service needs, test adds the test tools (the ``test`` extra).
For the tests, installs the Debian packages espeak-ng and sox (the voice tests synthesise
speech with them), mariadb-server (the mysql data source's tests start a MariaDB of
their own), chromium and chromium-driver (the console's tests drive a real browser), and
nginx and caddy (the reverse-proxy configurations of docs/operations.md are run as written)
and tesseract-ocr (scanned PDFs and images are read by OCR) when they are missing and
this is a root shell with apt-get.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".ragchat-installed"
# the Debian packages the tests need, by a program each installs: the voice tests' speech
# synthesis and audio conversion, and the MariaDB server the mysql data source is tested on
TEST_PACKAGES = {
    "espeak-ng": "espeak-ng",
    "sox": "sox",
    "mariadbd": "mariadb-server",
    # the console's tests drive a real browser (no browser download: Debian's own)
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
    # the reverse-proxy configurations of docs/operations.md, run as written
    "nginx": "nginx",
    "caddy": "caddy",
    # OCR of scanned PDFs and images (with its English language data, a dependency)
    "tesseract": "tesseract-ocr",
    # a real documentation site the website crawler's tests serve on 127.0.0.1 (a file,
    # not a program: a path is looked for as it is)
    "/usr/share/doc/apache2-doc/manual/en/howto/index.html": "apache2-doc",
}
# mariadbd and nginx: not on a user's PATH
SBIN = os.pathsep.join(["/usr/local/sbin", "/usr/sbin", "/sbin"])


def step(*command: str | Path) -> None:
    print("+", " ".join(str(c) for c in command), flush=True)
    subprocess.run([str(c) for c in command], cwd=ROOT, check=True)


def to_install(stamp: str | None, wanted: str, tests: bool) -> str | None:
    """What to install (``.``: the service; ``.[test]``: with the test tools), or None
    when the venv already has it: ``stamp`` is what the last install recorded (None: no
    install yet), ``wanted`` the hash of pyproject.toml, ``tests`` whether the test tools
    are wanted. A venv with the test tools keeps them for serve (nothing is uninstalled);
    one without gets them for test."""
    hash_, _, installed = (stamp or "").strip().partition(" ")
    if not stamp or hash_ != wanted:
        return ".[test]" if tests else "."
    # a stamp of a hash alone was written by an install of .[test], before serve had its own
    has_tests = installed in ("", ".[test]")
    return ".[test]" if tests and not has_tests else None


def setup(tests: bool) -> None:
    """The venv, with the service (and the test tools for ``tests``) installed when
    pyproject.toml changed or what was installed lacks them."""
    if not (BIN / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    target = to_install(STAMP.read_text() if STAMP.exists() else None, wanted, tests)
    if target is None:
        return
    step(BIN / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip", "uv")
    step(BIN / "uv", "pip", "install", "--quiet", "--python", BIN / "python", "-e", target)
    STAMP.write_text(f"{wanted} {target}")


def test_packages() -> None:
    """espeak-ng, sox, mariadb-server, chromium, chromium-driver, nginx and caddy from Debian's
    packages, when missing and this can install them; otherwise say what the tests need
    and go on."""
    path = os.pathsep.join([os.environ.get("PATH", ""), SBIN])
    missing = [
        name
        for program, name in TEST_PACKAGES.items()
        if not (
            Path(program).exists() if program.startswith("/") else shutil.which(program, path=path)
        )
    ]
    if not missing:
        return
    names = " ".join(missing)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not root or shutil.which("apt-get") is None:
        print(
            f"the tests need the packages {names}; install them (Debian, Ubuntu: "
            f"apt-get install {names}) or the voice, mysql data source, console, "
            "reverse-proxy and OCR tests fail",
            flush=True,
        )
        return
    print(f"installing {names} for the tests", flush=True)
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # another apt-get on this machine may hold dpkg's lock a while: wait for it
    wait = ["-o", "DPkg::Lock::Timeout=300"]
    for command in (
        ["apt-get", *wait, "update"],
        ["apt-get", *wait, "install", "-y", "--no-install-recommends", *missing],
    ):
        print("+", " ".join(command), flush=True)
        if subprocess.run(command, env=environment).returncode:
            print(f"could not install {names}: the tests that need them will fail", flush=True)
            return


#: FreeDict's dictionaries the service translates questions with (DICTIONARY_DIR,
#: ragcore.chat.translation.DICTIONARIES): not needed to run, said when missing
DICTIONARY_PACKAGES = [
    f"dict-freedict-{code}-eng" for code in ("deu", "fra", "spa", "ita", "nld", "por")
]


def dictionaries_hint() -> None:
    """Say how to install the dictionaries that translate questions in other languages,
    when they are not where the service looks by default."""
    folder = Path("/usr/share/dictd")
    missing = [name for name in DICTIONARY_PACKAGES if not (folder / f"{name[5:]}.index").exists()]
    if missing:
        print(
            "questions in German, French, Spanish, Italian, Dutch and Portuguese are "
            "searched with their words' English translations once FreeDict's dictionaries "
            f"are installed (Debian, Ubuntu: apt-get install {' '.join(missing)})",
            flush=True,
        )


def main() -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - the point is to say so on an old Python
        print(f"ragchat needs Python 3.11 or newer; this is {sys.version.split()[0]}")
        return 2
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("serve", "test"):
        print(__doc__)
        return 2
    try:
        setup(tests=command == "test")
    except subprocess.CalledProcessError as failed:
        return failed.returncode or 1
    if command == "serve":
        dictionaries_hint()
        os.execv(  # noqa: S606 - replace this process with the service
            BIN / "ragchat", [str(BIN / "ragchat"), "serve", *sys.argv[2:]]
        )
    test_packages()
    for check in (["ruff", "check", "src", "tests", "scripts"], ["lint-imports"]):
        if subprocess.run([str(BIN / check[0]), *check[1:]], cwd=ROOT).returncode:
            return 1
    arguments = sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="ragchat-tests-") as scratch:
        if arguments:
            if subprocess.run([str(BIN / "mypy")], cwd=ROOT).returncode:
                return 1
            return run_pytest(arguments, f"{scratch}/pytest")
        return whole_suite(scratch)


def run_pytest(arguments: list[str], basetemp: str, **options: Any) -> int:
    """pytest with ``arguments``, in a folder of this run's own: pytest's default folders
    are shared, and another run on this machine deletes the oldest, the test database's
    among them."""
    if not any(a.startswith("--basetemp") for a in arguments):
        arguments = [f"--basetemp={basetemp}", *arguments]
    return subprocess.run([str(BIN / "pytest"), *arguments], cwd=ROOT, **options).returncode


def whole_suite(scratch: str) -> int:
    """Every test: one worker per core (pytest-xdist), each with its own embedded
    PostgreSQL, and beside them the tests that stream audio in real time (marked
    realtime). These wait on paced audio most of the time (about 75 s of CPU in their
    2.7 min), but another worker's load would bend their timing: the workers run at a
    lower priority (nice 10), so the paced tests get a core the moment they need one.
    A worker out of tests takes some of the other's (worksteal): a long test near the
    end no longer leaves one core idle. mypy runs beside them too, at their priority."""
    realtime_log = Path(scratch) / "realtime.log"
    typing_log = Path(scratch) / "mypy.log"
    with realtime_log.open("w") as log, typing_log.open("w") as typing:
        realtime = subprocess.Popen(
            [str(BIN / "pytest"), f"--basetemp={scratch}/realtime", "-m", "realtime"],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        # the type check (about 30 s of one core) beside the tests, at their priority: it
        # fills the moments the workers wait on a server or a timeout
        checking = subprocess.Popen(
            [str(BIN / "mypy")],
            cwd=ROOT,
            stdout=typing,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: os.nice(10),
        )
        try:
            others = run_pytest(
                ["-n", "auto", "--dist", "worksteal", "-m", "not realtime", "--durations=25"],
                f"{scratch}/pytest",
                preexec_fn=lambda: os.nice(10),  # a lower priority for the workers
            )
            paced = realtime.wait()
            typed = checking.wait()
        finally:
            for process in (realtime, checking):
                if process.poll() is None:
                    process.kill()
                    process.wait()
    print(realtime_log.read_text(), end="", flush=True)
    print(typing_log.read_text(), end="", flush=True)
    return others or paced or typed


if __name__ == "__main__":
    sys.exit(main())
