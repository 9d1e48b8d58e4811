"""Trust (issue 11) outside the run loop: the compile cache heals itself, emit keeps the
user's files, argument ranges are refused before any work."""
import pytest
from click.testing import CliRunner

from lbgen.system import cache
from lbgen.backends import build
from lbgen.backends import c as cbackend
from lbgen.cli.main import main
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import generate


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def source():
    return generate(KernelSpec(backend="c", layout="aos"))


def _runs(lib_path, source):
    """Load the library and call into it (a damaged one would SIGBUS / SIGILL here)."""
    program = cbackend.CProgram(source, (6, 32))
    assert program.library_path == lib_path
    f = program.allocate()
    program.halo(f)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "corrupt"])
def test_damaged_cached_library_is_rebuilt_not_loaded(fresh_cache, source, damage, capfd):
    lib = cbackend.build(source)
    good = lib.read_bytes()
    assert (lib.parent / "libkernels.so.sha256").read_text() == cache.file_digest(lib)
    if damage == "truncate":
        lib.write_bytes(good[:1000])
    else:
        lib.write_bytes(good[:4096] + bytes(b ^ 0xFF for b in good[4096:8192]) + good[8192:])
    assert cbackend.build(source) == lib
    assert "failed its checksum (damaged); rebuilding it" in capfd.readouterr().err
    assert lib.read_bytes() != good[:1000] and cache.file_digest(lib) == (lib.parent / "libkernels.so.sha256").read_text()
    assert _runs(lib, source)


def test_cache_key_holds_the_resolved_cpu_not_march_native(fresh_cache, source, monkeypatch):
    assert not build.native_target().startswith("unknown")
    here = cbackend.build(source)
    monkeypatch.setattr(build, "native_target", lambda cmd="": "othercpu-0123456789abcdef")
    elsewhere = cbackend.build(source)                       # the same source and flags
    assert here.parent != elsewhere.parent, "two CPU kinds must not share a cached library"


def test_unwritable_cache_falls_back_to_a_temporary_folder(tmp_path, monkeypatch, capfd):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(cache.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cache._root.cache_clear()
    folder = cache.cache_dir("c")
    assert folder.parent.parent == tmp_path / "tmp" and folder.is_dir()
    err = capfd.readouterr().err
    assert f"the cache folder {blocker / 'cache'} is not writable" in err and "LBGEN_CACHE_DIR" in err
    cache._root.cache_clear()


def test_emit_never_overwrites_a_file_it_did_not_write(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "Makefile").write_text("all:\n\techo my own build\n")
    (proj / "README.md").write_text("# my project\n")
    result = _cli("emit", "-o", proj)
    assert result.exit_code == 2
    assert "holds Makefile, README.md, not written by lbgen" in result.output
    assert (proj / "Makefile").read_text() == "all:\n\techo my own build\n"
    assert sorted(p.name for p in proj.iterdir()) == ["Makefile", "README.md"], "nothing may be written"
    mine = tmp_path / "mine"
    assert _cli("emit", "-o", mine).exit_code == 0
    (mine / "lbgen_kernels.c").write_text((mine / "lbgen_kernels.c").read_text() + "\n/* edited */\n")
    assert _cli("emit", "-o", mine).exit_code == 0, "emit replaces its own files"
    assert "/* edited */" not in (mine / "lbgen_kernels.c").read_text()


@pytest.mark.parametrize("args, message", [
    (["verify", "--steps", "-2"], "Invalid value for '--steps': -2 is not in the range x>=1"),
    (["verify", "--lx", "0"], "Invalid value for '--lx': 0 is not in the range x>=1"),
    (["emit", "--backend", "cuda", "--block-size", "-1"], "block size -1: allowed 0 (the backend's default) or 1 to 1024"),
    (["emit", "--backend", "opencl", "--block-size", "4096"], "block size 4096: allowed 0"),
    (["bench", "--limit-mb", "-5"], "Invalid value for '--limit-mb': -5 is not in the range x>=1"),
    (["bench", "--repeat", "0"], "Invalid value for '--repeat': 0 is not in the range x>=1"),
    (["bench", "--threads", "100000"], "Invalid value for '--threads': 100000 is not in the range 0<=x<="),
    (["tune", "--samples", "0"], "Invalid value for '--samples': 0 is not in the range x>=1"),
    (["model", "--ranks", "0"], "Invalid value for '--ranks': 0 is not in the range x>=1"),
    (["model", "--ranks", "2", "--latency", "-1"], "Invalid value for '--latency': -1.0 is not in the range x>=0"),
    (["model", "--ranks", "2", "--bandwidth", "0"], "Invalid value for '--bandwidth': 0.0 is not in the range x>0"),
    (["run", "--steps", "-2"], "steps=-2 must be >= 0"),            # the run description's checks
    (["run", "--ly", "-8"], "ly=-8 must be >= 1"),
])
def test_out_of_range_arguments_are_refused_before_any_work(args, message, monkeypatch):
    from lbgen.run import construct
    from lbgen.run import driver
    from lbgen.codegen import emit
    from lbgen.reference import verify
    for module, name in ((verify, "verify"), (emit, "emit"), (driver, "make_simulation"),
                         (construct, "make_simulation")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("work started before the refusal"))
    result = _cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
