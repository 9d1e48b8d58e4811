"""Backends: compile a ``KernelSource`` and run its kernels.

Every backend offers the same small interface (``Program``), so the runner and the
tests never branch on the backend: ``allocate``, ``upload``, ``download``, ``halo``,
``propagate``, ``collide``, ``fused``, ``synchronize``.
"""
from __future__ import annotations

import importlib

from .base import BackendUnavailable, Program

__all__ = ["BackendUnavailable", "Program", "load", "available"]


def load(name: str):
    """The backend module for a name ('c', 'opencl', 'cuda')."""
    from ..codegen import BACKENDS
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"{__name__}.{name}")


def available(name: str) -> tuple:
    """(True, description) when the backend can run here, else (False, reason)."""
    try:
        return load(name).available()
    except BackendUnavailable as e:
        return False, str(e)
    except ImportError as e:
        return False, f"{name}: {e}"
    except Exception as e:  # a broken installation must not break `lbgen info`
        return False, f"{name}: {type(e).__name__}: {e}"
