"""The files `lbgen emit` writes besides the kernels (example, README, Makefile) come from one
template per file kind for any D (issue 34): the 2D and 3D texts branch on D inside it."""
from __future__ import annotations

import re

import pytest

from lbgen.codegen.render import emit_files
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.templating import templates_dir

EMITTED_KINDS = re.compile(r"^(example|README|Makefile)")


def test_no_example_readme_or_makefile_template_exists_twice_by_dimension():
    names = [p.relative_to(templates_dir()).as_posix() for p in templates_dir().rglob("*.j2")]
    twins = [n for n in names if EMITTED_KINDS.match(n.rsplit("/", 1)[-1]) and re.search(r"[23]d", n)]
    assert twins == []


@pytest.mark.parametrize("backend", ["c", "opencl", "cuda"])
def test_2d_and_3d_emit_the_same_files_besides_the_kernels(backend):
    two = emit_files(KernelSpec(backend=backend, velocity_set="d2q9", layout="soa"))
    three = emit_files(KernelSpec(backend=backend, velocity_set="d3q19", layout="soa"))
    extra = {n for n in two if not n.startswith("lbgen_kernels")}
    assert extra == {n for n in three if not n.startswith("lbgen_kernels")} and "README.md" in extra
    for name in extra - {"Makefile"}:       # one template, two texts: the branch on D is taken
        assert two[name] != three[name], name
    assert "3D" in three["README.md"] and "3D" not in two["README.md"].split("\n", 1)[0]
