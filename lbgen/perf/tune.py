"""Auto-tuning of the layout and cluster length (VL) per machine and lattice shape.

``best_choice`` times a few steps of the runner's own time step (halo + fused, or halo +
fused_walls with walls) for every candidate layout/VL (and optionally a few
thread counts), stores the ranking in ``<cache>/tune/choices.json`` (JSON after a checksum
line, see ``lbgen.system.cache.checked_bytes``) under a key made of
the machine (hostname + CPU model from /proc/cpuinfo), the backend and its device, the
lattice shape, precision, collision operator, walls and the thread count asked for, and
returns the fastest (layout, vl).  ``cached_choice`` returns a stored choice without
timing anything (None when this machine never tuned that case); ``auto_choice`` is the
one for ``--vl auto``: the cached choice, else tune now.

On the C backend the winner's temporal-blocking depth (time steps per sweep, see
``fused_tb``) is tuned too, among ``TIME_BLOCKS``, and stored with the choice as
``time_block``; ``auto_time_block`` is the one for ``time_block='auto'``.  On the OpenCL
backend the choice is per device (``device``: 'P:D' or part of a name, else PYOPENCL_CTX or the
first; its name and platform are in the key), and the winner's work-group size is tuned too,
among ``WORK_GROUPS``, and stored as ``work_group``; ``tuned_work_group`` is the one a run of
that layout takes (``lbgen.run.construct``; the manifest records it).

In 3D (``lz`` and a 3D ``velocity_set`` given: ``lbgen tune --velocity-set d3q19``) the
candidates are the layouts and VLs that LZ admits for the set's hop, each timed on the
periodic step of that set (halo + fused, or fused_tb), and the key also holds LZ and the set;
3D runs without walls, a geometry or MPI use such a choice (``lbgen.run.construct.resolve``).
"""
from __future__ import annotations

import json
import os
import socket
import time
from typing import Dict, List, Optional, Sequence, Tuple

from filelock import FileLock

from lbgen.system.cache import DamagedEntry, cache_dir, digest, read_checked, warn_rebuilt, write_checked

Choice = Tuple[str, Optional[int]]
#: temporal-blocking depths tried by `lbgen tune` (1: one step per sweep)
TIME_BLOCKS = (1, 2, 3, 4)
#: OpenCL work-group sizes tried by `lbgen tune` on the winning layout (those the device allows)
WORK_GROUPS = (16, 32, 64, 128, 256)
CHOICES_FILE = "choices.json"


def _device(backend: str, device: Optional[str] = None) -> str:
    """What the runtime runs on (its compiler or device; OpenCL: the device ``device`` selects,
    with its platform); a stable key even when unavailable."""
    from lbgen.backends import runtime
    try:
        return runtime(backend).describe(device) if device is not None else runtime(backend).describe()
    except Exception as e:  # noqa: BLE001 - unavailable backend: still a stable key
        return f"{backend} ({type(e).__name__})"


def _device_options(backend: str, device: Optional[str] = None, work_group: Optional[int] = None) -> Dict:
    """The compile options of a timed program: the OpenCL device and work-group size (none
    elsewhere; ``device`` off OpenCL is refused in words)."""
    if backend != "opencl":
        if device is not None or work_group is not None:
            raise ValueError(f"a device and a work-group size choose an OpenCL device's kernels, not {backend}'s")
        return {}
    return {k: v for k, v in (("device", device), ("block_size", work_group)) if v is not None}


def machine_key(backend: str, device: Optional[str] = None) -> Dict[str, str]:
    from lbgen.backends.build import cpu_model
    return {"hostname": socket.gethostname(), "cpu": cpu_model(), "backend": backend,
            "device": _device(backend, device)}


def _case_key(backend: str, lx: int, ly: int, precision: str, collision: str, walls: bool, threads: int,
              lz: Optional[int] = None, velocity_set: Optional[str] = None,
              device: Optional[str] = None) -> Tuple[str, Dict]:
    fields = dict(machine_key(backend, device), lx=int(lx), ly=int(ly), precision=precision, collision=collision,
                  walls=bool(walls), threads=int(threads))
    if lz is not None:                       # 3D: the depth and the set too (2D keys stay as they were)
        fields.update(lz=int(lz), velocity_set=_set3d(velocity_set))
    return digest(json.dumps(fields, sort_keys=True)), fields


def _path():
    return cache_dir("tune") / CHOICES_FILE


def _read(path) -> Dict:
    """The stored choices (empty when none); DamagedEntry when the file fails its checksum."""
    payload = read_checked(path)
    if payload is None:
        return {}
    try:
        data = json.loads(payload)
    except ValueError:
        raise DamagedEntry("holds no JSON although its checksum holds") from None
    return data if isinstance(data, dict) else {}


def _load() -> Dict:
    """The stored choices; a damaged file (checksum, truncation, older format) is removed
    with one warning, so the cases it held are tuned again when asked."""
    path = _path()
    try:
        return _read(path)
    except DamagedEntry:
        pass
    with FileLock(str(path) + ".lock"):
        try:
            return _read(path)              # rewritten meanwhile by another process
        except DamagedEntry as e:
            warn_rebuilt("tune", path, e.reason, "removed: its cases are tuned again when asked")
            path.unlink(missing_ok=True)
            return {}


def _store(key: str, entry: Dict) -> None:
    path = _path()
    with FileLock(str(path) + ".lock"):
        try:
            data = _read(path)
        except DamagedEntry as e:
            warn_rebuilt("tune", path, e.reason, "rewritten without its old choices")
            data = {}
        data[key] = entry
        write_checked(path, json.dumps(data, indent=1, sort_keys=True).encode())


def _set3d(velocity_set: Optional[str]) -> str:
    """The set of a 3D case (lz given), lower case; a missing or 2D set is refused in words."""
    from lbgen.model.catalog import set_entry
    if velocity_set is None or set_entry(velocity_set).D != 3:
        raise ValueError(f"a 3D tuning case (lz given) needs a 3D velocity set, not {velocity_set!r}")
    return str(velocity_set).lower()


def _halo(velocity_set: Optional[str] = None) -> int:
    """Halo width of the kernels lbgen tune measures: the given set's, else the default set's."""
    from lbgen.model.catalog import DEFAULT_VELOCITY_SET, set_entry
    return set_entry(velocity_set or DEFAULT_VELOCITY_SET).max_hop


def vl_misfit(n: int, vl: int, halo: int) -> Optional[str]:
    """Why a cluster length cannot cluster a line of ``n`` sites (LY; 3D: LZ) with kernels of
    halo width ``halo`` (the one rule of ``candidates``), or None when it can."""
    from lbgen.codegen.layouts import LayoutError, check_vl
    try:
        check_vl(vl)
    except LayoutError:
        return f"VL={vl} is not a power of two"
    if n % vl:
        return f"VL={vl} does not divide {n}"
    if n // vl < halo:
        return f"VL={vl} leaves {n // vl} clusters, fewer than the halo width {halo}"
    return None


def candidates(backend: str, ly: int, layouts: Optional[Sequence[str]] = None,
               vls: Sequence[int] = (4, 8, 16, 32), halo: Optional[int] = None) -> List[Choice]:
    """Every valid (layout, VL) for a column of LY sites (in 3D: a Z line of LZ sites): VL | LY
    and LY/VL >= the halo width (``halo``, default the default set's)."""
    from lbgen.codegen.spec import PREFERRED_VL
    from lbgen.codegen.layouts import CLUSTERED
    halo = _halo() if halo is None else halo
    names = list(layouts) if layouts else ["caosoa", "csoa", "soa", "aos"]
    order = list(dict.fromkeys(list(PREFERRED_VL.get(backend, ())) + list(vls)))
    out: List[Choice] = []
    for name in names:
        if name in CLUSTERED:
            out += [(name, v) for v in order if v in vls and vl_misfit(ly, v, halo) is None]
        else:
            out.append((name, None))
    return out


def _time_steps(backend: str, layout: str, vl: Optional[int], lx: int, ly: int, precision: str, collision: str,
                walls: bool, threads: int, steps: int, samples: int, time_block: int = 1,
                lz: Optional[int] = None, velocity_set: Optional[str] = None, device: Optional[str] = None,
                work_group: Optional[int] = None) -> Dict:
    from lbgen.backends import compile as compile_program, runtime, spec_backend
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import generate
    from lbgen.perf.timing import default_kernel_parameters, quiet_buffers
    from lbgen.system.timing import time_call
    if lz is not None:                      # 3D: the periodic step of the set (halo + fused, or fused_tb)
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=vl, precision=precision,
                          collision=collision, velocity_set=_set3d(velocity_set))
        program = compile_program(backend, generate(spec), (lx, ly, lz), threads=threads,
                                  **_device_options(backend, device, work_group))
        params = default_kernel_parameters(collision, dimension=3)
        buffers = list(quiet_buffers(program, lx, ly, lz))

        def step():
            if time_block > 1:
                program.halo(buffers[0])
                program.fused_tb(buffers[0], buffers[1], time_block, **params)
                buffers.reverse()
            else:
                program.step_halo(buffers[0])
                buffers[:] = program.step(buffers[0], buffers[1], params)
    else:
        spec = KernelSpec(backend=spec_backend(backend), layout=layout, vl=vl, precision=precision,
                          collision=collision, walls=walls).validate(lx, ly)
        program = runtime(backend).compile(generate(spec), lx, ly, threads=threads,
                                           **_device_options(backend, device, work_group))
        params = default_kernel_parameters(collision)
        buffers = list(quiet_buffers(program, lx, ly))
        wall_spec = _QuietWalls() if walls else None

        def step():
            program.halo(buffers[0])
            if time_block > 1:
                program.fused_tb(buffers[0], buffers[1], time_block, walls=wall_spec, **params)
                buffers.reverse()
            else:
                buffers[:] = program.step(buffers[0], buffers[1], params, wall_spec)

    st, n = time_call(step, program.synchronize, repeat=max(1, samples), warmup=1, min_sample=0.05)
    if steps:
        n = min(n, steps)
    ms = st["median"] / time_block                       # per time step
    per_step = {k: (v / time_block if k in ("median", "min", "max", "q1", "q3") else v) for k, v in st.items()}
    sites = lx * ly * (lz or 1)
    return {"ms_per_step": ms, "ms": per_step, "steps_per_sample": n * time_block,
            "time_block": time_block, "threads": getattr(program, "threads", None), "mlups": sites / (ms / 1e3) / 1e6,
            "work_group": program.block_size if backend == "opencl" else None}


class _QuietWalls:
    """Walls at T = 1 on both sides (timing only)."""
    T_bottom = T_top = 1.0
    adiabatic_bottom = adiabatic_top = False


def rank(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk", walls: bool = False,
         threads: int = 0, layouts: Optional[Sequence[str]] = None, vls: Sequence[int] = (4, 8, 16, 32),
         thread_counts: Optional[Sequence[int]] = None, steps: int = 20, samples: int = 3,
         progress: bool = False, lz: Optional[int] = None, velocity_set: Optional[str] = None,
         device: Optional[str] = None) -> List[Dict]:
    """Time every candidate; a list of dicts sorted fastest first (3D with ``lz`` and the set)."""
    from lbgen.codegen.spec import SpecError
    if lz is not None:
        cands = candidates(backend, lz, layouts, vls, halo=_halo(_set3d(velocity_set)))
    else:
        cands = candidates(backend, ly, layouts, vls)
    tcs = list(thread_counts) if thread_counts else [threads]
    work = [(c, t) for c in cands for t in tcs]
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(work), unit="candidate", leave=False, dynamic_ncols=True)
    out = []
    try:
        for (layout, vl), t in work:
            if bar is not None:
                bar.set_description(f"{layout}{'-vl' + str(vl) if vl else ''} threads={t or 'all'}")
            try:
                r = _time_steps(backend, layout, vl, lx, ly, precision, collision, walls, t, steps, samples,
                                lz=lz, velocity_set=velocity_set, device=device)
            except (SpecError, ValueError, NotImplementedError) as e:
                r = {"error": str(e).splitlines()[0]}
            r.update(layout=layout, vl=vl, threads_asked=t)
            out.append(r)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    ok = sorted((r for r in out if "error" not in r), key=lambda r: r["ms_per_step"])
    return ok + [r for r in out if "error" in r]


def best_choice(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk",
                walls: bool = False, threads: int = 0, **rank_options) -> Choice:
    """Tune now: time the candidates, store the ranking for this machine and lattice, return (layout, vl)."""
    entry = tune(backend, lx, ly, precision, collision, walls, threads, **rank_options)
    return entry["layout"], entry["vl"]


def tune(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk", walls: bool = False,
         threads: int = 0, time_blocks: Sequence[int] = TIME_BLOCKS, lz: Optional[int] = None,
         velocity_set: Optional[str] = None, device: Optional[str] = None,
         work_groups: Sequence[int] = WORK_GROUPS, **rank_options) -> Dict:
    """Like best_choice, returning the stored entry (choice, ranking, machine).  In 3D (``lz``
    and a 3D ``velocity_set``) on a periodic box only: ``walls`` is refused.  OpenCL: on
    ``device``, and the winner's work-group size among ``work_groups`` too."""
    _device_options(backend, device)
    case3d = dict(lz=lz, velocity_set=velocity_set)
    if lz is not None:
        _set3d(velocity_set)
        if walls:
            raise ValueError("3D tuning times the periodic step of the set: the 3D thermal walls' step (--walls: "
                             "propagate, bc, collide) is not tuned")
    ranking = rank(backend, lx, ly, precision, collision, walls, threads, **case3d, device=device, **rank_options)
    good = [r for r in ranking if "error" not in r]
    if not good:
        raise ValueError(f"no layout/VL candidate runs for {backend} at {_shape_text(lx, ly, lz)}: "
                         + "; ".join(r.get("error", "") for r in ranking[:3]))
    key, fields = _case_key(backend, lx, ly, precision, collision, walls, threads, **case3d, device=device)
    from lbgen import __version__
    best = good[0]
    entry = {"key": fields, "layout": best["layout"], "vl": best["vl"], "threads": best.get("threads_asked", threads),
             "ms_per_step": best["ms_per_step"], "mlups": best["mlups"], "ranking": ranking,
             "lbgen_version": __version__, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if backend == "c":
        blocks = rank_time_blocks(backend, best["layout"], best["vl"], lx, ly, precision, collision, walls,
                                  best.get("threads_asked", threads), time_blocks=time_blocks,
                                  samples=rank_options.get("samples", 3), **case3d)
        entry.update(time_block=blocks[0]["time_block"], time_block_ranking=blocks)
    if backend == "opencl":
        groups = rank_work_groups(best["layout"], best["vl"], lx, ly, precision, collision, walls, threads,
                                  work_groups=work_groups, samples=rank_options.get("samples", 3), device=device,
                                  **case3d)
        good_groups = [r for r in groups if "error" not in r]
        if good_groups:
            entry.update(work_group=good_groups[0]["work_group"], work_group_ranking=groups)
    _store(key, entry)
    return entry


#: the depth `--time-block auto` takes where `lbgen tune` stored none for the case: the
#: fastest on the Rayleigh-Taylor step of the paper's size, measured with
#: benchmarks/production_compare.py and benchmarks/time_block_ab.py (docs/performance-history.md)
DEFAULT_TIME_BLOCK = 3
#: 3D sets hopping farther than this many sites take no temporal blocking under `auto`: D3Q39's
#: 3-site hop makes each level a ring of 7 X planes and widens every overlap to 3 sites per
#: level, and its fused_tb ran at 0.49x / 0.43x of fused at depth 3 and 0.86x / 0.80x at depth
#: 2 (64^3 / 96^3, CAoSoA VL 8, 2 threads), where D3Q19 and D3Q27 (1-site hops) ran at
#: 1.4-1.5x at depth 3 (docs/performance-history.md, "3D temporal blocking")
TIME_BLOCK_MAX_HOP_3D = 1


def default_time_block3d(max_hop: int) -> int:
    """The depth `--time-block auto` takes in 3D where ``lbgen tune`` stored none for the case:
    DEFAULT_TIME_BLOCK for a set hopping at most TIME_BLOCK_MAX_HOP_3D sites, else 1."""
    return DEFAULT_TIME_BLOCK if max_hop <= TIME_BLOCK_MAX_HOP_3D else 1


def rank_time_blocks(backend: str, layout: str, vl: Optional[int], lx: int, ly: int, precision: str = "double",
                     collision: str = "bgk", walls: bool = False, threads: int = 0,
                     time_blocks: Sequence[int] = TIME_BLOCKS, samples: int = 3, lz: Optional[int] = None,
                     velocity_set: Optional[str] = None) -> List[Dict]:
    """Time the step of one layout with each temporal-blocking depth; fastest first."""
    out = [_time_steps(backend, layout, vl, lx, ly, precision, collision, walls, threads, 20, samples, time_block=d,
                       lz=lz, velocity_set=velocity_set)
           for d in dict.fromkeys(time_blocks)]
    return sorted(out, key=lambda r: r["ms_per_step"])


def rank_work_groups(layout: str, vl: Optional[int], lx: int, ly: int, precision: str = "double",
                     collision: str = "bgk", walls: bool = False, threads: int = 0,
                     work_groups: Sequence[int] = WORK_GROUPS, samples: int = 3, lz: Optional[int] = None,
                     velocity_set: Optional[str] = None, device: Optional[str] = None) -> List[Dict]:
    """Time the OpenCL step of one layout with each work-group size; fastest first (a size the
    device or the kernels do not allow: an entry with its error, last)."""
    out = []
    for wg in dict.fromkeys(work_groups):
        try:
            out.append(_time_steps("opencl", layout, vl, lx, ly, precision, collision, walls, threads, 20, samples,
                                   lz=lz, velocity_set=velocity_set, device=device, work_group=int(wg)))
        except ValueError as e:
            out.append({"work_group": int(wg), "error": str(e).splitlines()[0]})
    ok = sorted((r for r in out if "error" not in r), key=lambda r: r["ms_per_step"])
    return ok + [r for r in out if "error" in r]


def tuned_work_group(backend: str, layout: str, vl: Optional[int], lx: int, ly: int, precision: str = "double",
                     collision: str = "bgk", walls: bool = False, threads: int = 0, lz: Optional[int] = None,
                     velocity_set: Optional[str] = None, device: Optional[str] = None) -> Optional[int]:
    """The work-group size ``lbgen tune`` stored for this OpenCL device and case when its choice
    is this layout and VL, else None (the backend's default).  Nothing is timed here."""
    if backend != "opencl" or not _use_stored():
        return None
    entry = cached_entry(backend, lx, ly, precision, collision, walls, threads, lz=lz, velocity_set=velocity_set,
                         device=device) or {}
    wg = entry.get("work_group")
    if (entry.get("layout"), entry.get("vl")) != (layout, vl) or isinstance(wg, bool) or not isinstance(wg, int) \
            or wg < 1:
        return None
    return wg


def auto_time_block(backend: str, layout: str, vl: Optional[int], lx: int, ly: int, precision: str = "double",
                    collision: str = "bgk", walls: bool = False, threads: int = 0, lz: Optional[int] = None,
                    velocity_set: Optional[str] = None, device: Optional[str] = None) -> int:
    """For `time_block='auto'` (the default of a run): the depth stored with this machine's tuned
    choice (`lbgen tune`) when it is the same layout, else DEFAULT_TIME_BLOCK (3D:
    ``default_time_block3d`` of the set's hop); 1 off the C backend (no temporal blocking
    there).  Nothing is timed here: a run starts at once."""
    if backend != "c":
        return 1
    entry = (cached_entry(backend, lx, ly, precision, collision, walls, threads, lz=lz, velocity_set=velocity_set)
             if _use_stored() else None) or {}
    if (entry.get("layout"), entry.get("vl")) == (layout, vl) and isinstance(entry.get("time_block"), int):
        return entry["time_block"]
    return DEFAULT_TIME_BLOCK if lz is None else default_time_block3d(_halo(_set3d(velocity_set)))


def cached_entry(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk",
                 walls: bool = False, threads: int = 0, lz: Optional[int] = None,
                 velocity_set: Optional[str] = None, device: Optional[str] = None) -> Optional[Dict]:
    key, _ = _case_key(backend, lx, ly, precision, collision, walls, threads, lz, velocity_set, device)
    return _load().get(key)


def _use_stored() -> bool:
    """LBGEN_TUNED=off: ignore the stored choices (the tests use it)."""
    return os.environ.get("LBGEN_TUNED", "").lower() not in ("off", "0", "no")


def cached_choice(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk",
                  walls: bool = False, threads: int = 0, lz: Optional[int] = None,
                  velocity_set: Optional[str] = None, device: Optional[str] = None) -> Optional[Choice]:
    """The stored best (layout, vl) for this machine and case, or None (never times anything).

    LBGEN_TUNED=off ignores stored choices (the built-in defaults apply; the tests use it).
    """
    if not _use_stored():
        return None
    entry = cached_entry(backend, lx, ly, precision, collision, walls, threads, lz, velocity_set, device)
    if not entry or "layout" not in entry:
        return None
    layout, vl = entry["layout"], entry.get("vl")
    column, halo = (ly, _halo()) if lz is None else (lz, _halo(_set3d(velocity_set)))
    if vl is not None and (not isinstance(vl, int) or column % vl or column // vl < halo):   # damaged: ignore it
        return None
    return layout, (int(vl) if vl is not None else None)


def auto_choice(backend: str, lx: int, ly: int, precision: str = "double", collision: str = "bgk",
                walls: bool = False, threads: int = 0, layout: Optional[str] = None, lz: Optional[int] = None,
                velocity_set: Optional[str] = None, device: Optional[str] = None, **rank_options) -> Choice:
    """For `--vl auto`: the cached choice (restricted to `layout` when given), else tune now and store.

    With a fixed layout only that layout's VLs are timed, and the result is not stored as the
    machine's overall best.
    """
    case3d = dict(lz=lz, velocity_set=velocity_set, device=device)
    if layout is None:
        hit = cached_choice(backend, lx, ly, precision, collision, walls, threads, **case3d)
        if hit is not None:
            return hit
        return best_choice(backend, lx, ly, precision, collision, walls, threads, **case3d, **rank_options)
    entry = cached_entry(backend, lx, ly, precision, collision, walls, threads, **case3d)
    for r in (entry or {}).get("ranking", []):
        if r.get("layout") == layout and "error" not in r:
            return layout, r.get("vl")
    ranking = [r for r in rank(backend, lx, ly, precision, collision, walls, threads, layouts=[layout],
                               **case3d, **rank_options) if "error" not in r]
    if not ranking:
        raise ValueError(f"no VL of layout {layout} runs at {_shape_text(lx, ly, lz)}")
    return layout, ranking[0]["vl"]


def _shape_text(lx: int, ly: int, lz: Optional[int] = None) -> str:
    return f"{lx} x {ly}" + (f" x {lz}" if lz is not None else "")


def format_ranking(entry: Dict) -> str:
    k = entry["key"]
    shape = _shape_text(k["lx"], k["ly"], k.get("lz")) + (f" {k['velocity_set']}" if "velocity_set" in k else "")
    lines = [f"tuning {k['backend']} on {k['hostname']} ({k['cpu']}; {k['device']}), {shape}, "
             f"{k['precision']}, {k['collision']}{', walls' if k['walls'] else ''}, threads={k['threads'] or 'all'}",
             f"{'rank':>4} {'layout':<12} {'threads':>7} {'ms/step':>10} {'[min-max]':>21} {'MLUPS':>8}"]
    for i, r in enumerate(entry["ranking"], 1):
        tag = r["layout"] + (f"-vl{r['vl']}" if r.get("vl") else "")
        if "error" in r:
            lines.append(f"{'-':>4} {tag:<12} {'':>7} {'':>10} {'':>21} {'':>8}  skipped: {r['error']}")
            continue
        ms = r["ms"]
        lines.append(f"{i:>4} {tag:<12} {str(r.get('threads') or r.get('threads_asked') or 'all'):>7} "
                     f"{r['ms_per_step']:>10.3f} {'[' + format(ms['min'], '.3f') + '-' + format(ms['max'], '.3f') + ']':>21} "
                     f"{r['mlups']:>8.1f}")
    best = entry["layout"] + (f"-vl{entry['vl']}" if entry.get("vl") else "")
    for r in entry.get("time_block_ranking", []):
        lines.append(f"     {best} time block {r['time_block']}: {r['ms_per_step']:.3f} ms/step, {r['mlups']:.1f} MLUPS")
    for r in entry.get("work_group_ranking", []):
        if "error" in r:
            lines.append(f"     {best} work-group {r['work_group']}: skipped: {r['error']}")
        else:
            lines.append(f"     {best} work-group {r['work_group']}: {r['ms_per_step']:.3f} ms/step, "
                         f"{r['mlups']:.1f} MLUPS")
    if "time_block" in entry:
        best += f", time block {entry['time_block']}"
    if "work_group" in entry:
        best += f", work-group {entry['work_group']}"
    lines.append(f"best: {best} (stored in {_path()})")
    return "\n".join(lines)
