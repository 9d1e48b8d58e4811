"""The interface every backend implements."""
from __future__ import annotations

import abc
from typing import Any

import numpy as np


class BackendUnavailable(RuntimeError):
    """A backend cannot run here (missing package, device or compiler); the message says why."""


class CompileError(RuntimeError):
    """A kernel failed to compile; the message carries the source path and the compiler log."""


class Program(abc.ABC):
    """Compiled kernels of one spec for one lattice size."""

    def __init__(self, source, lx: int, ly: int):
        from ..layouts import make_layout
        from ..model import velocity_set
        self.source = source
        self.spec = source.spec
        self.lx, self.ly = lx, ly
        if self.spec.compile_time_sizes and (lx, ly) != (self.spec.lx, self.spec.ly):
            raise ValueError(f"these kernels were generated for the lattice lx={self.spec.lx}, ly={self.spec.ly} "
                             f"(compile-time sizes); they cannot run on {lx} x {ly}")
        self.layout = make_layout(self.spec.layout, velocity_set(self.spec.velocity_set).Q, lx, ly, self.spec.vl)
        self.dtype = np.float64 if self.spec.precision == "double" else np.float32

    @abc.abstractmethod
    def allocate(self) -> Any: ...

    @abc.abstractmethod
    def upload(self, host: np.ndarray, buffer: Any = None) -> Any:
        """Copy a flat host array (layout order) into a (new or given) device buffer."""

    @abc.abstractmethod
    def download(self, buffer: Any) -> np.ndarray:
        """Flat host copy (layout order) of a device buffer."""

    @abc.abstractmethod
    def halo(self, f: Any) -> None: ...

    @abc.abstractmethod
    def propagate(self, prv: Any, nxt: Any) -> None: ...

    @abc.abstractmethod
    def collide(self, src: Any, dst: Any, **params) -> None: ...

    @abc.abstractmethod
    def fused(self, prv: Any, nxt: Any, **params) -> None: ...

    def bc(self, prv: Any, nxt: Any, T_bottom: float = 1.0, T_top: float = 1.0,
           adiabatic=(False, False), ax: float = 0.0, ay: float = 0.0) -> None:
        """Thermal walls after propagate(prv -> nxt); only for specs generated with walls."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no bc kernel yet")

    def _require_walls(self) -> None:
        if not self.spec.walls:
            raise ValueError("these kernels were generated without walls (KernelSpec(walls=True) adds the bc kernel)")

    def synchronize(self) -> None:
        pass

    # conveniences shared by every backend
    def upload_fields(self, f: np.ndarray, buffer: Any = None) -> Any:
        """(Q, LX, LY) populations -> device buffer in this layout (halo filled)."""
        return self.upload(self.layout.pack(np.asarray(f, dtype=self.dtype)), buffer)

    def download_fields(self, buffer: Any) -> np.ndarray:
        return self.layout.unpack(self.download(buffer)).astype(np.float64)

    def _param_values(self, params: dict):
        from ..codegen import OPERATOR_PARAMETERS
        names = OPERATOR_PARAMETERS[self.spec.collision]
        missing = [n for n in names if n not in params]
        extra = [n for n in params if n not in names]
        if missing or extra:
            raise TypeError(f"{self.spec.collision} collide takes parameters {', '.join(names)}; "
                            f"missing {missing}, unexpected {extra}")
        return [float(params[n]) for n in names]
