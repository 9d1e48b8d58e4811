"""The API every emitted backend offers: its entry points and the lattice sizes it accepts.

Written once here and rendered by the templates into every dialect: the C and CUDA
``<prefix>_check`` functions, the OpenCL example's ``check()``, and the rules stated in
every header and README.
"""
from __future__ import annotations

from typing import List

from lbgen.codegen.layouts import CLUSTERED
from lbgen.model.velocity_set import velocity_set
from lbgen.model.walls import wall_row_count

#: the entry points every backend emits (with the prefix), in this order; those of
#: WALL_ENTRY_POINTS only with walls
ENTRY_POINTS = ("halo", "propagate", "bc", "collide", "fused", "fused_walls", "init_equilibrium", "fields",
                "diagnostics", "pack", "unpack")
#: with walls only: the bc kernel and the fused propagate + bc + collide sweep
WALL_ENTRY_POINTS = ("bc", "fused_walls")
#: error codes of the emitted `<prefix>_check(lx, ly, ...)`, numbered from 1 (0: valid sizes)
SIZE_ERRORS = ("SIZE", "VL", "HALO", "WALLS", "COMPILED")


def size_rules(spec, min_ly_walls: int) -> List[dict]:
    """The lattice sizes the kernels of a validated KernelSpec accept, as the emitted checks
    state them (walls need LY >= min_ly_walls).

    Each rule: ``code`` (a name of SIZE_ERRORS), ``c`` (a C condition on ``lx``, ``ly`` that
    holds for valid sizes; ``/`` is integer division), ``message`` (printf format naming the
    bad value and the rule), ``args`` (its C arguments) and ``text`` (the rule in words).
    """
    vl = spec.vl if spec.layout in CLUSTERED else 1
    vs = velocity_set(spec.velocity_set)
    HALO, rows = vs.max_hop, wall_row_count(vs)
    rules = [dict(code="SIZE", c="lx >= 1 && ly >= 1", message="lattice %d x %d: lx and ly must be >= 1",
                  args="lx, ly", text="LX >= 1 and LY >= 1")]
    if vl > 1:
        rules.append(dict(code="VL", c=f"ly % {vl} == 0", message=f"ly=%d is not a multiple of VL={vl}",
                          args="ly", text=f"LY a multiple of VL = {vl}"))
        rules.append(dict(code="HALO", c=f"ly / {vl} >= {HALO}",
                          message=f"ly=%d gives LY/VL = %d cluster rows; the {HALO}-row halo needs "
                                  f"LY/VL >= {HALO} (ly >= {HALO * vl})",
                          args=f"ly, ly / {vl}", text=f"LY/VL >= {HALO}, i.e. LY >= {HALO * vl} (the halo is "
                                                      f"{HALO} cluster rows)"))
    if spec.walls:
        rules.append(dict(code="WALLS", c=f"ly >= {min_ly_walls}",
                          message=f"ly=%d is too small for walls: they need ly >= {min_ly_walls}", args="ly",
                          text=f"walls: LY >= {min_ly_walls} ({rows} wall row{'s' if rows > 1 else ''} at each "
                               f"side and the bulk row next to them)"))
    if spec.compile_time_sizes:
        rules.append(dict(code="COMPILED", c=f"lx == {spec.lx} && ly == {spec.ly}",
                          message=f"lattice %d x %d: these kernels were generated for {spec.lx} x {spec.ly}",
                          args="lx, ly", text=f"LX = {spec.lx}, LY = {spec.ly} (compile-time sizes)"))
    for rule in rules:
        rule["value"] = SIZE_ERRORS.index(rule["code"]) + 1
        rule["py"] = rule["c"].replace("&&", "and").replace(" / ", " // ")
    return rules
