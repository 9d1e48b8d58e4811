"""Docs that compile: every `lbgen_xxx` identifier of the emitted API named in README.md, docs/*.md
and the emitted READMEs is declared by a freshly emitted header (2D or 3D; CUDA's launch wrappers
by the CUDA header, GPU kernels by their source), and every ```c block there compiles against an emitted header
(gcc -fsyntax-only; statement snippets are wrapped in a function that declares the host code's
usual variables).  A stale API name (the v1 `const lbgen_walls *`, `walls->bottom`) fails here."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lbgen.codegen.render import emit_files
from lbgen.codegen.spec import KernelSpec

REPO = Path(__file__).resolve().parents[2]

#: the emitted variants whose headers the docs may refer to (2D with and without walls, both
#: operators; 3D; the GPU backends)
SPECS = {
    "c2d-walls": KernelSpec(layout="caosoa", vl=8, walls=True),
    "c2d-walls-regularized": KernelSpec(layout="soa", collision="regularized", walls=True),
    "c2d": KernelSpec(layout="caosoa", vl=8),
    "c3d": KernelSpec(velocity_set="d3q19"),
    "c3d-regularized": KernelSpec(velocity_set="d3q19", collision="regularized"),
    "cuda2d": KernelSpec(backend="cuda", walls=True),
    "cuda3d": KernelSpec(backend="cuda", velocity_set="d3q19"),
    "opencl2d": KernelSpec(backend="opencl", walls=True),
}
C_HEADERS = ("c2d-walls", "c2d-walls-regularized", "c2d", "c3d", "c3d-regularized")

#: names that are not API entry points, each with where it must exist instead
NOT_API = {
    "lbgen_kernels": "file",              # the files' stem: lbgen_kernels.c, .h, .cu, .cuh, .cl
    "lbgen_collide_site": "source",       # the static per-site collision inside the .c (performance notes)
    "lbgen_adapter": "example",           # examples/production/lbgen_adapter.h: a host code's file, not emitted
}

NAME = re.compile(r"\blbgen_[a-z][a-z0-9_]*")
C_BLOCK = re.compile(r"```c\n(.*?)```", re.S)

#: what a statement snippet may use without declaring it (a host code's usual variables)
PREAMBLE = """
    int lx = 16, ly = 64, lz = 16, rank_y = 0, nranks_y = 1;
    double g = 1e-5;
    lbgen_real *prv = 0, *nxt = 0, *f = 0;
    (void)lx; (void)ly; (void)lz; (void)rank_y; (void)nranks_y; (void)g; (void)prv; (void)nxt; (void)f;
"""


def _code(text: str) -> str:
    """C text without its comments (the names a header declares, not the ones it talks about)."""
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


@pytest.fixture(scope="module")
def emitted():
    return {name: emit_files(spec) for name, spec in SPECS.items()}


def _header(files):
    return next(text for name, text in files.items() if name.endswith((".h", ".cuh")) or name.endswith(".cl"))


def _documents(emitted):
    docs = {str(p.relative_to(REPO)): p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
    for name, files in emitted.items():
        docs[f"emitted {name} README.md"] = files["README.md"]
    return docs


def test_every_api_name_in_the_docs_is_declared_by_an_emitted_header(emitted):
    declared = set()
    for name, files in emitted.items():
        declared |= set(NAME.findall(_code(_header(files))))
        if not name.startswith("c"):            # a GPU source is its own API: the kernels it defines
            declared |= {n for f, t in files.items() if f.endswith((".cu", ".cl")) for n in NAME.findall(_code(t))}
    sources = "".join(t for files in emitted.values() for n, t in files.items() if n.endswith((".c", ".cu")))
    missing, checked = [], 0
    for doc, text in _documents(emitted).items():
        for m in NAME.finditer(text):
            name, after = m.group(0), text[m.end():m.end() + 1]
            checked += 1
            if NOT_API.get(name) == "file":
                if after != ".":
                    missing.append((doc, name))
            elif NOT_API.get(name) == "example":
                if after != "." or not list((REPO / "examples").rglob(f"{name}.h")):
                    missing.append((doc, name))
            elif NOT_API.get(name) == "source":
                if not re.search(rf"\b{name}\(", _code(sources)):
                    missing.append((doc, name))
            elif after in "<*" or name.endswith("_"):     # a family: lbgen_launch_<kernel>, lbgen_launch_*
                if not any(d.startswith(name) for d in declared):
                    missing.append((doc, name + "<...>"))
            elif name not in declared:
                missing.append((doc, name))
    assert checked > 20                         # the docs do name the API
    assert not missing, f"names in the docs that no emitted header declares: {sorted(set(missing))}"


def test_the_emitted_c_headers_name_only_the_current_api_in_their_comments(emitted):
    for name in C_HEADERS:
        header = emitted[name]["lbgen_kernels.h"]
        declared = set(NAME.findall(_code(header)))
        talked_about = {n for n in NAME.findall(header) if n != "lbgen_kernels" and not n.endswith("_")}
        assert talked_about <= declared, (name, sorted(talked_about - declared))
        assert "walls->" not in header and "lbgen_walls" not in header, name      # the v1 record


def _compiles(snippet: str, folder: Path, header: str) -> subprocess.CompletedProcess:
    (folder / "lbgen_kernels.h").write_text(header)
    top_level = re.search(r"^\s*(#include|[A-Za-z_][\w \*]*\([^;]*\)\s*\{)", snippet, re.M)
    body = snippet if top_level else f"void doc_snippet_(void)\n{{\n{PREAMBLE}\n{snippet}\n}}\n"
    (folder / "snippet.c").write_text('#include <stddef.h>\n#include "lbgen_kernels.h"\n' + body)
    return subprocess.run(["gcc", "-std=c11", "-fsyntax-only", "-Werror=implicit-function-declaration",
                           "-Werror=incompatible-pointer-types", "-Werror=int-conversion", "snippet.c"],
                          cwd=folder, capture_output=True, text=True)


def _compiles_against_some_header(snippet, folder, emitted):
    results = [_compiles(snippet, folder, emitted[name]["lbgen_kernels.h"]) for name in C_HEADERS]
    return any(r.returncode == 0 for r in results), results


def test_the_c_snippets_in_the_docs_compile_against_an_emitted_header(emitted, tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to compile the snippets")
    snippets = [(doc, block) for doc, text in _documents(emitted).items() for block in C_BLOCK.findall(text)]
    assert snippets                              # docs/embedding.md has one at least
    for doc, block in snippets:
        ok, results = _compiles_against_some_header(block, tmp_path, emitted)
        assert ok, f"a C snippet in {doc} compiles against no emitted header:\n{block}\n{results[0].stderr}"
    # and the check tells: the v1 API does not compile
    stale = "lbgen_region all = lbgen_whole(lx, ly);\nconst lbgen_walls *walls = 0;\nlbgen_bc(prv, nxt, lx, ly, walls, 0.0, 0.0);\n"
    assert not _compiles_against_some_header(stale, tmp_path, emitted)[0]
