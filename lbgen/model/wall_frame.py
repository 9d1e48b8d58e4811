"""The frame of thermal walls across any axis: a state seen with its wall axis last.

The thermal set-ups and their numbers (Rayleigh-Benard's Nusselt number and profiles, the
Rayleigh-Taylor start) are written with the vertical axis last (y in 2D, z in 3D).  Walls
across another axis of a 3D lattice (``Walls(axis='x')``, ``lbgen run --wall-axis x``) are the
same layer with that axis and the last one swapped: :func:`upright` swaps the two axes of every
field and the two velocity components along them (a swap is its own inverse: it also turns an
upright state back), :func:`upright_shape` the lattice lengths, :func:`upright_vector` a
vector's components (gravity).  One rule for every user: the z run of the swapped lattice is
the run across the other axis, transposed.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES


def vertical(D: int, axis: Optional[str] = None) -> int:
    """The index of the wall axis ``axis`` (None: the last one, y in 2D, z in 3D) of a D-dimensional lattice."""
    return D - 1 if axis is None else AXES.index(axis)


def _order(D: int, axis: Optional[str]) -> list:
    """The axis permutation that swaps ``axis`` and the last one (the identity for None or the last)."""
    order = list(range(D))
    k = vertical(D, axis)
    order[k], order[-1] = order[-1], order[k]
    return order


def upright_shape(shape: Sequence[int], axis: Optional[str] = None) -> Tuple[int, ...]:
    """The lattice lengths with ``axis`` and the last one swapped."""
    return tuple(shape[i] for i in _order(len(shape), axis))


def upright_vector(vector: Sequence[float], axis: Optional[str] = None) -> Tuple[float, ...]:
    """A vector's components (gravity) with those along ``axis`` and the last axis swapped."""
    return tuple(float(vector[i]) for i in _order(len(vector), axis))


def upright(fields: Mapping[str, np.ndarray], axis: Optional[str] = None) -> Dict[str, np.ndarray]:
    """The fields (rho, T, ux, uy[, uz], ...; arrays over the lattice) with ``axis`` and the last
    axis swapped: each array transposed (a view), the velocity components along the two axes
    exchanged.  Fields that are not lattice arrays pass unchanged; ``axis`` None (or the last
    axis) returns the fields as they are."""
    first = next((np.asarray(v) for v in fields.values() if np.ndim(v) >= 2), None)
    if first is None:
        return dict(fields)
    D = first.ndim
    order = _order(D, axis)
    if order == list(range(D)):
        return dict(fields)
    names = [f"u{a}" for a in AXES[:D]]
    out = {}
    for key, value in fields.items():
        if np.ndim(value) != D:
            out[key] = value
            continue
        name = names[order[names.index(key)]] if key in names else key
        out[name] = np.transpose(np.asarray(value), order)
    return out
