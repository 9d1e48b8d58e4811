"""Every command the README shows runs as written, from the README's own set-up (its venv),
in a fresh folder: the bash blocks in order (the main job, MPI, movie and plot of the main
job's folder, emit + make + the example, the 3D cavity), the backticked ``.venv/bin/...``
commands in its prose, and its Python blocks.  Long runs are shortened by one rule: every
step count (--steps, --output-every, --checkpoint-every, --step) is divided by SHORTEN, so
the events keep their places; a run without --steps (the Taylor-Green vortex to its own end, 20 t_c:
7056 steps at 64^3, the suite's slowest part when run whole) is given UNSTEPPED_RUN steps.  The venv
set-up commands themselves are what CI runs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
VENV_BIN = Path(sys.executable).parent
SHORTEN = 100
STEP_OPTIONS = r"--(?:steps|output-every|checkpoint-every|step)"
UNSTEPPED_RUN = 70

pytestmark = pytest.mark.slow


def _shorten(command: str) -> str:
    def scaled(m):
        n = int(m.group(2))
        return f"{m.group(1)} {max(1, n // SHORTEN) if n >= SHORTEN else n}"
    command = re.sub(rf"({STEP_OPTIONS}) (\d+)", scaled, command)
    if re.search(r"\blbgen run ", command) and not re.search(r"--steps\b", command):
        command += f" --steps {UNSTEPPED_RUN}"
    return command


def _as_here(command: str) -> str:
    """The README's command with its venv's paths pointing at this test's venv."""
    return _shorten(command.replace(".venv/bin/", f"{VENV_BIN}/"))


def readme_commands():
    """The shell commands of the README's bash blocks and prose, in reading order, without the
    two set-up commands' install steps (their lbgen run is kept)."""
    commands = []
    for m in re.finditer(r"```bash\n(.*?)```|`(\.venv/bin/[^`]+)`", README, re.S):
        if m.group(1) is not None:
            for line in m.group(1).strip().splitlines():
                line = line.split("  #")[0].strip()
                if "python3 -m venv" in line:
                    parts = [p.strip() for p in line.split("&&")]
                    line = " && ".join(p for p in parts if p.startswith(".venv/bin/lbgen"))
                if line:
                    commands.append(line)
        else:
            commands.append(" ".join(m.group(2).split()))
    return commands


def test_the_readme_commands_are_found():
    commands = readme_commands()
    assert commands[0].startswith(".venv/bin/lbgen run rayleigh-taylor")         # the main job, kept
    assert any(c.startswith(".venv/bin/mpiexec ") for c in commands)
    assert any("cd mykernels && make" in c for c in commands)
    assert not any("pytest" in c for c in commands)


def test_every_readme_command_runs_as_written(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for command in readme_commands():
        proc = subprocess.run(["bash", "-c", _as_here(command)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"{command}\n-> {_as_here(command)}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    rt = tmp_path / "runs" / "rt"
    assert (rt / "manifest.json").exists() and list((rt / "checkpoints").iterdir())
    assert (tmp_path / "rt.mp4").stat().st_size > 0
    assert list((tmp_path / "runs" / "cavity" / "checkpoints").iterdir()), "the README promises checkpoints"
    assert (tmp_path / "runs" / "tg4" / "manifest.json").exists()
    assert (tmp_path / "runs" / "tg1600" / "dissipation.png").stat().st_size > 0, "the README promises the picture"


def test_the_readme_python_blocks_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks
    for block in blocks:
        code = re.sub(r"\.run\((\d+)\)", lambda m: f".run({max(1, int(m.group(1)) // 10)})", block)
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                              timeout=900, env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, f"{block}\n{proc.stderr[-3000:]}"
