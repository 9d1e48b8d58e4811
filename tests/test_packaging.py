"""The wheel ships templates/ and backends/ and works from outside the repository."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow       # subprocess builds and launches: CI=true or --slow

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(REPO)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{proc.stdout}\n{proc.stderr}")
    return next(out.glob("lbgen-*.whl"))


def test_wheel_ships_templates_and_backends(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("lbgen/templates/common.j2", "lbgen/templates/c/kernels.c.j2", "lbgen/templates/c/kernels.h.j2",
                   "lbgen/templates/c/example.c.j2", "lbgen/templates/c/Makefile.j2",
                   "lbgen/backends/__init__.py", "lbgen/backends/c/__init__.py", "lbgen/model/collision.py",
                   "lbgen/cli/main.py", "lbgen/backends/c/machine.c"):
        assert needed in names, needed
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "lbgen = lbgen.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_emits_and_runs_outside_the_repository(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run([sys.executable, "-c", "import lbgen, lbgen.templates; print(lbgen.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert str(site) in where, "the test must exercise the installed wheel, not the checkout"
    subprocess.run([sys.executable, "-m", "lbgen", "emit", "--layout", "caosoa", "--vl", "32"],
                   cwd=work, env=env, capture_output=True, text=True, check=True)
    assert (work / "generated" / "c" / "caosoa-vl32" / "lbgen_kernels.c").exists()
    info = subprocess.run([sys.executable, "-m", "lbgen", "info", "--json"], cwd=work, env=env,
                          capture_output=True, text=True, check=True).stdout
    assert json.loads(info)["velocity_set"]["Q"] == 37
    run = subprocess.run([sys.executable, "-m", "lbgen", "run", "--lx", "8", "--ly", "32", "--steps", "5",
                          "--no-progress"], cwd=work, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "MLUPS" in run.stdout
