"""The import arrows of the repository: no circle (lbgen, its backends and the benchmark
scripts, which import each other as top-level modules), and the backends take nothing from
``lbgen.perf`` (a layer above them: the timing primitives they need are ``lbgen.system.timing``); the
names of axes and sides have one home."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: module name prefix -> folder (pyproject.toml's package-dir: lbgen.backends is backends/)
PACKAGES = {"lbgen": ROOT / "lbgen", "lbgen.backends": ROOT / "backends"}


def _modules():
    mods = {}
    for pkg, folder in PACKAGES.items():
        for f in folder.rglob("*.py"):
            parts = list(f.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg] + parts)] = f
    for f in (ROOT / "benchmarks").glob("*.py"):      # scripts: importable by their stem
        mods[f.stem] = f
    return mods


def _imports(path, name, mods):
    """The modules of ``mods`` that a file imports anywhere (inside functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            # a package's __init__ is not imported "back" by its own submodules' relative names
            if t and t != name and not (mods[t].name == "__init__.py" and name.startswith(t + ".")):
                found.add(t)
    return found


def _graph():
    mods = _modules()
    return {m: _imports(f, m, mods) for m, f in mods.items()}


def test_no_import_circle_in_lbgen_backends_or_benchmarks():
    graph = _graph()
    assert "bench3d" in graph and "lbgen.backends.c" in graph and "lbgen.perf.timing" in graph, "modules not found"
    state, circles = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                circles.append(" -> ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_backends_import_nothing_from_perf():
    wrong = {m: sorted(t for t in targets if t == "lbgen.perf" or t.startswith("lbgen.perf."))
             for m, targets in _graph().items() if m.startswith("lbgen.backends")}
    assert not {m: t for m, t in wrong.items() if t}, wrong


def test_the_names_of_axes_and_sides_are_defined_once():
    """AXES, SIDES and CHANNEL_WALLS are assigned in lbgen.model.catalog only (the 3D NumPy
    oracle, lbgen.reference.bulk3d, keeps its own: it imports nothing from lbgen on purpose)."""
    homes = {}
    for name, path in _modules().items():
        for node in ast.parse(path.read_text(), str(path)).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id in ("AXES", "SIDES", "CHANNEL_WALLS"):
                    homes.setdefault(t.id, []).append(name)
    oracle = "lbgen.reference.bulk3d"
    assert {k: [m for m in v if m != oracle] for k, v in homes.items()} == \
        {"AXES": ["lbgen.model.catalog"], "SIDES": ["lbgen.model.catalog"], "CHANNEL_WALLS": ["lbgen.model.catalog"]}
