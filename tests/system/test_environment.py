"""The suite passes whatever it was started from: a terminal, a background job, ``nohup``
(SIGINT and SIGHUP ignored), a CI runner without a terminal.  A process started with SIGINT
ignored inherits SIG_IGN, and Python then installs no KeyboardInterrupt handler; the run's
signal handling and the tests of it must work from there too."""
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ignore_int_and_hup():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_signal_tests_pass_with_sigint_ignored_and_no_terminal():
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
         "tests/run/test_trust_run.py", "-k", "signal"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        preexec_fn=_ignore_int_and_hup, start_new_session=True)         # no controlling terminal
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed.group(1)) >= 3 and "failed" not in out, out   # the signal tests ran, all passed


def _fake_ci(tmp_path, tests_exit: int, lint_exit: int):
    """.ci/run in a copy of the repository's script, with a stand-in python3 whose venv's
    pytest and ruff exit as told and leave a mark when they run."""
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text((ROOT / ".ci" / "run").read_text())
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    fake = bindir / "python3"
    fake.write_text(f"""#!/bin/sh
mkdir -p .venv/bin
printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/pip
printf '#!/bin/sh\\ntouch ran-tests\\nexit {tests_exit}\\n' > .venv/bin/python
printf '#!/bin/sh\\ntouch ran-lint\\nexit {lint_exit}\\n' > .venv/bin/ruff
chmod +x .venv/bin/pip .venv/bin/python .venv/bin/ruff
""")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", CI="true")
    proc = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, (tmp_path / "ran-tests").exists(), (tmp_path / "ran-lint").exists()


def test_ci_lints_when_the_tests_fail_and_fails_if_either_failed(tmp_path):
    for tests_exit, lint_exit, passes in [(1, 0, False), (0, 1, False), (1, 1, False), (0, 0, True)]:
        case = tmp_path / f"t{tests_exit}l{lint_exit}"
        case.mkdir()
        code, ran_tests, ran_lint = _fake_ci(case, tests_exit, lint_exit)
        assert ran_tests and ran_lint, (tests_exit, lint_exit)
        assert (code == 0) == passes, (tests_exit, lint_exit, code)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_fast_subset_says_how_many_slow_tests_it_left_out(workers):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(workers or ["-p", "no:xdist"]),
         "tests/system/test_readme_commands.py", "tests/system/test_environment.py::test_ci_lints_when_the_tests_fail_and_fails_if_either_failed"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lbgen: 3 slow tests left out" in proc.stdout and "--slow" in proc.stdout, proc.stdout


def _tiny_build(tag: str):
    from lbgen.backends.build import build_library
    return build_library("c", ("build-log-test", tag), {"tiny.c": f"int tiny_{tag}(void) {{ return 1; }}\n"},
                         lambda folder, out: ["gcc", "-shared", "-fPIC", "-o", out, folder / "tiny.c"],
                         "tiny.c", "gcc (tiny)", library="libtiny.so")


def test_the_build_log_records_each_compiler_run_and_the_test_that_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "build.log"
    monkeypatch.setenv("LBGEN_BUILD_LOG", str(log))
    _tiny_build("a")
    _tiny_build("a")                               # cached: no second compiler run
    _tiny_build("b")
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    assert len(lines) == 2 and all(parts[0] == "c" and float(parts[1]) >= 0 for parts in lines)
    assert all("test_the_build_log_records_each_compiler_run" in parts[5] for parts in lines)


def test_a_build_log_that_cannot_be_written_warns_and_the_build_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LBGEN_BUILD_LOG", str(tmp_path / "no-such-folder" / "build.log"))
    with pytest.warns(UserWarning, match="LBGEN_BUILD_LOG"):
        lib = _tiny_build("c")
    assert lib.exists()
