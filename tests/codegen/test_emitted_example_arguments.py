"""The emitted C examples (2D, 3D) check their arguments: a negative step count or size, garbage,
a number with trailing text, an overflowing number or a wrong argument count prints the usage and
exits 2 before any work (no example_fields.txt is written); good arguments run (exit 0).  (Sizes
that are whole numbers but do not run, e.g. 0, are refused by <prefix>_check, naming the rule:
tests/simulation/test_api.py.)"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import make_example
from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec

BAD_2D = [["-5"], ["abc"], ["10x"], ["1e3"], ["99999999999"], ["3", "16"], ["3", "16", "-64"],
          ["3", "16", "64", "1"]]
BAD_3D = [["-5"], ["abc"], ["2.5"], ["99999999999"], ["3", "8", "6"], ["3", "8", "6", "-16"],
          ["3", "8", "6", "16", "lidd"], ["3", "8", "6", "16", "lid", "1"], ["lid"]]


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted examples")
    out = {}
    for name, spec in (("2d", KernelSpec(layout="caosoa", vl=4)),
                       ("3d", KernelSpec(velocity_set="d3q19", layout="caosoa", vl=4))):
        folder = tmp_path_factory.mktemp(f"example{name}")
        emit(spec, folder)
        make_example(folder, spec)
        out[name] = folder
    return out


def _run(folder, args):
    (folder / "example_fields.txt").unlink(missing_ok=True)
    proc = subprocess.run(["./example", *args], cwd=folder, capture_output=True, text=True, timeout=120,
                          env={"OMP_NUM_THREADS": "1"})
    return proc, (folder / "example_fields.txt").exists()


@pytest.mark.parametrize("which, args", [("2d", a) for a in BAD_2D] + [("3d", a) for a in BAD_3D],
                         ids=[f"2d:{' '.join(a)}" for a in BAD_2D] + [f"3d:{' '.join(a)}" for a in BAD_3D])
def test_a_bad_argument_gets_the_usage_and_exit_2_before_any_work(examples, which, args):
    proc, wrote = _run(examples[which], args)
    assert proc.returncode == 2 and not wrote, (proc.returncode, proc.stderr)
    assert "usage: ./example" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("which, args", [("2d", []), ("2d", ["0"]), ("2d", ["2", "8", "16"]), ("3d", ["2"]),
                                         ("3d", ["2", "4", "4", "8", "lid"])])
def test_good_arguments_run(examples, which, args):
    proc, wrote = _run(examples[which], args)
    assert proc.returncode == 0 and wrote, proc.stderr


@pytest.fixture(scope="module")
def cuda_examples(tmp_path_factory):
    if shutil.which("make") is None or shutil.which("nvcc") is None:
        pytest.skip("make and nvcc are needed to build the emitted CUDA examples")
    out = {}
    for name, spec in (("2d", KernelSpec(backend="cuda")), ("3d", KernelSpec(backend="cuda", velocity_set="d3q19"))):
        folder = tmp_path_factory.mktemp(f"cuda_example{name}")
        emit(spec, folder)
        subprocess.run(["make", "-s"], cwd=folder, check=True, capture_output=True, timeout=900)
        out[name] = folder
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which, args", [("2d", ["-5"]), ("2d", ["abc"]), ("2d", ["3", "16"]), ("3d", ["-5"]),
                                         ("3d", ["3", "8", "6"]), ("3d", ["3", "8", "6", "x", "lid"])])
def test_the_cuda_examples_check_their_arguments_too(cuda_examples, which, args):
    """Before any CUDA call (so without a GPU too): usage and exit 2."""
    proc, wrote = _run(cuda_examples[which], args)
    assert proc.returncode == 2 and not wrote and "usage: ./example" in proc.stderr, (proc.returncode, proc.stderr)
