"""The largest lattice that fits a memory (issue 38, `lbgen info`): for a velocity set, each
(precision, storage, streaming) a run can take, the largest N^D by the estimate of what a
run holds (lbgen.system.limits.largest_lattice): on the host, `lbgen run`'s estimate (the one
it refuses a lattice by); on a GPU, the population buffers plus one event's fields there, and the
buffers alone (a `Simulation` stepped without field events)."""
from __future__ import annotations

from typing import Dict, Optional

from lbgen.codegen.spec import KernelSpec, SpecError, arithmetic_bytes, population_buffers, storage_bytes
from lbgen.model.velocity_set import velocity_set as get_velocity_set
from lbgen.system.limits import largest_lattice

#: the choices listed: (precision, storage or None for the precision's own, streaming)
CHOICES = (("double", None, "pull"), ("double", None, "inplace"), ("single", None, "pull"),
           ("single", None, "inplace"), ("single", "fp16s", "pull"), ("single", "fp16s", "inplace"))
#: the last axis's halo clusters counted: the host's default CAoSoA VL 8, the GPUs' VL 32
LANES = {"host": 8, "device": 32}


def choice_name(precision: str, storage: Optional[str], streaming: str) -> str:
    return f"{precision}{'/' + storage if storage else ''}/{streaming}"


def largest_lattices(name: str, memory: int, device: bool) -> Dict[str, Dict[str, int]]:
    """{choice: {"run": N, "populations": N}} for the set ``name`` and ``memory`` bytes; the
    choices the set refuses (e.g. a 16-bit storage of a thermal set) are left out."""
    vs = get_velocity_set(name)
    out = {}
    for precision, storage, streaming in CHOICES:
        try:
            KernelSpec(velocity_set=name, precision=precision, storage=storage, streaming=streaming).validate()
        except SpecError:
            continue
        kw = dict(memory=memory, dimension=vs.D, Q=vs.Q, itemsize=storage_bytes(precision, storage),
                  halo=vs.max_hop, buffers=population_buffers(streaming), lanes=LANES["device" if device else "host"])
        real = 8 if device else arithmetic_bytes(precision)        # the GPU runtimes' field arrays: float64
        out[choice_name(precision, storage, streaming)] = {
            "run": largest_lattice(real=real, device=device, **kw),
            "populations": largest_lattice(device=True, fields=False, **kw)}
    return out
