"""What the README and docs/ promise about the repository itself: every file they name
exists, every link between them resolves, and the README's two set-up commands are the
ones CI runs."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: top-level folders of this repository: a path that starts with one must exist
TOP = ("lbgen/", "docs/", "tests/", "benchmarks/", "templates/", "backends/", "generated/", "examples/", ".ci/")


def _named_paths(doc: Path):
    """(name, path) for what a document names: backticked repository paths (a top-level
    folder first) and the targets of its relative markdown links."""
    text = doc.read_text()
    for m in re.finditer(r"`([^`\s]+)`", text):
        name = m.group(1)
        if name.startswith(TOP) and not re.search(r"[<>{}*]|-N\b|\bN\.", name):   # not a pattern (step-N.h5)
            yield name, ROOT / name.rstrip("/")
    for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        name = m.group(1)
        if not name.startswith(("http://", "https://", "mailto:")):
            yield name, doc.parent / name


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_named_file_exists(doc):
    missing = [name for name, path in _named_paths(doc)
               if not path.resolve().is_relative_to(ROOT) or not path.exists()]
    assert not missing, f"{doc.name} names files that are not in the repository: {missing}"


def test_readme_keeps_two_setup_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    setup = [b.strip() for b in blocks if "python3 -m venv .venv" in b]
    assert len(setup) == 2, setup
    assert "lbgen run" in setup[0] and "pytest" in setup[1]
    assert setup[1] in (ROOT / ".ci" / "run").read_text()


def test_the_performance_summary_names_scripts_that_exist_and_dates_every_row():
    """docs/performance.md is one screen: a table whose every row names its machine and date
    and the command that repeats it; the dated notes live in performance-history.md."""
    text = (ROOT / "docs" / "performance.md").read_text()
    assert len(text.splitlines()) < 60
    scripts = set(re.findall(r"benchmarks/[\w./-]+\.(?:py|sh)", text))
    assert scripts and all((ROOT / s).exists() for s in scripts), scripts
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| lbgen |")]
    assert len(rows) >= 6
    assert all(re.search(r"20\d\d-\d\d", row) for row in rows), [r for r in rows if not re.search(r"20\d\d-\d\d", r)]
    assert "performance-history.md" in text and (ROOT / "docs" / "performance-history.md").exists()
