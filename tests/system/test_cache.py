"""Every cache entry is verified before use, and caches are keyed on what determines them.

A flipped bit in a cached render, model derivation or tune choice is caught by the entry's
checksum: the entry is rebuilt (one warning line naming it), never used.  The render key
follows the model, the codegen modules and the templates, and nothing else.
"""
import dataclasses
import gc
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from lbgen.codegen import render
from lbgen.codegen.spec import KernelSpec
from lbgen.model import assignments, derived
from lbgen.model import collision as model_collision
from lbgen.model.velocity_set import velocity_set
from lbgen.perf import tune
from lbgen.system import cache

SPEC = KernelSpec(backend="c", layout="aos", velocity_set="d2q9")


@pytest.fixture()
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _flip_bit(path: Path, needle: bytes, offset: int = 0, bit: int = 0) -> bytes:
    """Flip one bit of byte `offset` of `needle` in the entry's payload; the damaged payload."""
    data = bytearray(path.read_bytes())
    at = data.index(needle, data.index(b"\n") + 1) + offset     # inside the payload, past the header
    data[at] ^= 1 << bit
    path.write_bytes(bytes(data))
    return bytes(data[data.index(b"\n") + 1:])


def _warnings(err: str):
    return [line for line in err.splitlines() if "warning: cache entry" in line]


def test_entries_carry_a_checksum_and_every_damage_is_refused(tmp_path):
    path = tmp_path / "entry"
    cache.write_checked(path, b"payload bytes")
    assert cache.read_checked(path) == b"payload bytes"
    assert cache.read_checked(tmp_path / "absent") is None
    good = path.read_bytes()
    damaged = {"flipped payload bit": good[:-3] + bytes([good[-3] ^ 1]) + good[-2:],
               "flipped header bit": bytes([good[0] ^ 4]) + good[1:],
               "truncated": good[:-4],
               "header only": good[:30],
               "older format (bare payload)": b"payload bytes"}
    for what, data in damaged.items():
        path.write_bytes(data)
        with pytest.raises(cache.DamagedEntry):
            cache.read_checked(path)
            pytest.fail(f"{what}: accepted")


def test_flipped_bit_in_a_render_entry_is_rendered_again(cache_root, monkeypatch, capsys):
    first = render.generate(SPEC)
    (entry,) = (cache_root / "render").glob("*.pickle")
    assert entry.name == render.render_key(SPEC.validate()) + ".pickle"
    # one bit of a digit of the kernel text: the pickle still loads, with other C text
    damaged = _flip_bit(entry, b"0.5")
    assert pickle.loads(damaged).files != first.files, "the damage must be one an unchecked read would use"
    capsys.readouterr()

    renders = []
    real = render._render
    monkeypatch.setattr(render, "_render", lambda s: renders.append(s) or real(s))
    again = render.generate(SPEC)
    assert again.files == render._render(SPEC.validate()).files == first.files
    assert len(renders) == 2                       # the rebuild (and the reference render above)
    (line,) = _warnings(capsys.readouterr().err)
    assert f"render/{entry.name}" in line and "failed its checksum" in line and "rebuilt" in line
    assert pickle.loads(cache.read_checked(entry)).files == first.files   # rewritten, intact

    renders.clear()
    assert render.generate(SPEC).files == first.files
    assert renders == [] and _warnings(capsys.readouterr().err) == []     # served from the cache, silently


@pytest.mark.parametrize("damage", ["flip", "older-format", "truncate"])
def test_damaged_model_entry_is_derived_again(cache_root, capsys, damage):
    fresh = model_collision.collision(velocity_set("d2q9"), "bgk")
    derive = derived.collide.__wrapped__               # past the in-process lru_cache
    assert derive("bgk", "d2q9") == fresh
    entries = {p.stat().st_size: p for p in (cache_root / "model").glob("*.pickle")}
    entry = entries[max(entries)]                      # the collide list (the solve's entry is small)
    assert pickle.loads(cache.read_checked(entry)) == fresh
    if damage == "flip":
        damaged = _flip_bit(entry, b"tau")                 # the relaxation time's symbol: 'tau' -> 'uau'
        assert pickle.loads(damaged) != fresh, "the damage must be one an unchecked read would use"
    elif damage == "older-format":
        entry.write_bytes(pickle.dumps(fresh))             # a bare pickle: no checksum
    else:
        entry.write_bytes(entry.read_bytes()[:-50])
    capsys.readouterr()

    loaded = derive("bgk", "d2q9")
    assert loaded == fresh and [str(s) for s in loaded.parameters] == [str(s) for s in fresh.parameters]
    (line,) = _warnings(capsys.readouterr().err)
    assert f"model/{entry.name}" in line and "rebuilt" in line
    assert ("failed its checksum" in line) == (damage != "older-format")
    assert pickle.loads(cache.read_checked(entry)) == fresh
    assert derive("bgk", "d2q9") == fresh and _warnings(capsys.readouterr().err) == []


def test_flipped_bit_in_the_tune_choices_drops_them(cache_root, monkeypatch, capsys):
    monkeypatch.setattr(tune, "machine_key", lambda backend, device=None: {"hostname": "h", "cpu": "c", "backend": backend,
                                                              "device": "d"})
    case = ("c", 8, 64, "double", "bgk", False, 0)
    key, fields = tune._case_key(*case)
    tune._store(key, {"key": fields, "layout": "caosoa", "vl": 8, "time_block": 2})
    path = tune._path()
    assert tune.cached_entry(*case)["time_block"] == 2
    damaged = _flip_bit(path, b'"time_block": 2', offset=len(b'"time_block": '))     # '2' -> '3'
    assert json.loads(damaged)[key]["time_block"] == 3, \
        "the damage must be one an unchecked read would use (a valid, wrong depth)"
    capsys.readouterr()

    assert tune.cached_entry(*case) is None            # never the damaged choice
    (line,) = _warnings(capsys.readouterr().err)
    assert f"tune/{path.name}" in line and "failed its checksum" in line
    assert not path.exists()
    assert tune.cached_entry(*case) is None and _warnings(capsys.readouterr().err) == []   # warned once

    tune._store(key, {"key": fields, "layout": "caosoa", "vl": 8, "time_block": 2})    # tuned again
    assert tune.cached_entry(*case)["time_block"] == 2
    assert json.loads(cache.read_checked(path))[key]["time_block"] == 2


def test_render_key_follows_model_codegen_and_templates_only(tmp_path, monkeypatch):
    package = Path(render.__file__).resolve().parents[1]          # lbgen/
    copy = tmp_path / "lbgen"
    for part in ("codegen", "model"):
        shutil.copytree(package / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("output/pictures.py", "run/driver.py", "__init__.py"):
        (copy / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(package / part, copy / part)
    templates = tmp_path / "templates"
    shutil.copytree(render._templates_dir(), templates, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(render, "CODEGEN_SOURCES", copy / "codegen")
    monkeypatch.setattr(derived, "MODEL_SOURCES", copy / "model")
    monkeypatch.setattr(render, "_templates_dir", lambda: templates)
    hashed = []

    def uncached_digest(root, patterns=("*.py",)):
        hashed.append(Path(root))
        return cache.source_digest.__wrapped__(root, patterns)
    monkeypatch.setattr(render, "source_digest", uncached_digest)
    monkeypatch.setattr(derived, "source_digest", uncached_digest)
    spec = SPEC.validate()
    key = render.render_key(spec)
    assert set(hashed) == {copy / "codegen", copy / "model", templates}, "the key reads these folders, no other"

    def edit(rel):
        path = copy / rel if not rel.startswith("templates/") else tmp_path / rel
        path.write_text(path.read_text() + "\n# edited\n")
        return render.render_key(spec)

    assert edit("output/pictures.py") == key
    assert edit("run/driver.py") == key
    assert edit("__init__.py") == key
    after_model = edit("model/collision.py")
    assert after_model != key
    after_codegen = edit("codegen/cprint.py")
    assert after_codegen != after_model
    assert edit("templates/common.j2") != after_codegen
    assert render.render_key(dataclasses.replace(spec, precision="single").validate()) != render.render_key(spec)
    before = render.render_key(spec)
    monkeypatch.setattr(render, "__version__", "99.0")          # printed in the kernels' header
    assert render.render_key(spec) != before


def test_evaluate_prints_its_numpy_function_once(monkeypatch):
    asg = dataclasses.replace(derived.collide("bgk", "d2q9"))    # a new list: nothing memoised yet
    printed = []
    real = assignments.AssignmentList.numpy_source
    monkeypatch.setattr(assignments.AssignmentList, "numpy_source", lambda self: printed.append(1) or real(self))
    rng = np.random.default_rng(5)
    f = 1.0 / 9 + 0.01 * rng.uniform(-1, 1, (9, 4, 6))
    params = dict(tau=0.8, ax=1e-4, ay=-2e-4, wall=0.0, tau_wall=1.0)
    first = asg.evaluate(list(f), **params)
    second = asg.evaluate(list(f), **params)
    assert len(printed) == 1, "the NumPy printer runs once per list"
    assert first.tobytes() == second.tobytes()
    namespace = {"numpy": np}                                  # the unmemoised function, as printed
    exec(compile(real(asg), "<reference>", "exec"), namespace)
    direct = np.array([np.broadcast_to(np.asarray(o, dtype=float), f.shape[1:])
                       for o in namespace[asg.name](*list(f), *[params[str(p)] for p in asg.parameters])])
    assert first.tobytes() == direct.tobytes()
    held = len(assignments._NUMPY_FUNCTIONS)
    del asg
    gc.collect()
    assert len(assignments._NUMPY_FUNCTIONS) == held - 1, "a list's function leaves with it"
