"""How populations are stored, apart from the precision they are computed in: the one home of
the storage formats, their encoding (the kernels' load/store conversions are printed from
``StorageFormat``'s numbers by the templates, NumPy's pack/unpack use ``encode``/``decode``).

Formats (``STORAGES``):

* ``fp64`` -- IEEE double, 8 bytes; ``fp32`` -- IEEE single, 4 bytes;
* ``fp16s`` -- IEEE half, 2 bytes, scaled: stored s = (f - w_p) * 2^SCALE_EXP (FluidX3D's FP16S,
  Lehmann et al. 2022, with its "DDF shifting");
* ``fp16c`` -- 2 bytes of lbgen's own 1-4-11 format (sign, 4 exponent bits of bias 15, 11
  mantissa bits; the layout of FluidX3D's FP16C) of f - w_p: one mantissa bit more than a half
  (relative rounding 2^-12 instead of 2^-11) over the range the deviations take, 2^-14 <= |f - w|
  < 2, and steps of 2^-25 below it; the code 0x7fff (either sign) is NaN, an overflow stores it.
  Decoded with two integer operations and no table (``fp16c_decode``).

A store narrower than the arithmetic keeps the *deviation* f - w_p from the rest state
(rho = 1, u = 0, T = 1: f = w_p), not f: f_p = w_p (1 + O(rho - 1, u)), so the leading digits that
are the same at every site are not stored, and the rounding of the store is relative to
|f - w_p| (of the order of the density deviation and the velocity) instead of |f| ~ w_p.  A
store as wide as the arithmetic keeps f itself (no conversion at all: those builds give the bits
they always gave).  The density deviation follows: rho - 1 = sum_p (f_p - w_p) of the stored
values.

Why 2^15 for fp16s, every set: a stored population needs |s| <= 65504 (the largest half), so
|f - w_p| < 2 (65504 / 2^15 = 1.999); populations are >= 0 and sum to rho, so |f - w_p| < 2 for
every state with rho < 2 (a run whose density doubles somewhere has left the model's range).  A
smaller exponent would only move the bottom of half's normal range (2^-14 / 2^15 = 1.9e-9 of f)
up, where deviations of 1e-9 .. 1e-7 (the acoustic noise of a quiet run) start losing digits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

#: the arithmetic of each precision (KernelSpec.precision), as a storage name
ARITHMETIC = {"double": "fp64", "single": "fp32", "mixed": "fp64"}
#: the storage a precision takes when none is named (mixed: its float storage)
NATURAL = {"double": "fp64", "single": "fp32", "mixed": "fp32"}


@dataclass(frozen=True)
class StorageFormat:
    """One storage format: its name, bytes per population, NumPy dtype, C type and scale."""

    name: str
    nbytes: int
    dtype: str          # NumPy dtype of a stored population
    c_type: str         # the C type of the emitted API's <prefix>_real
    scale_exp: int      # stored deviations are multiplied by 2**scale_exp (0: unscaled)
    meaning: str
    #: the spacing of stored values at 1 relative to the value (machine epsilon): a store rounds
    #: by at most half of it, relative to what it stores (f, or f - w_p when shifted)
    eps: float = 0.0

    @property
    def scale(self) -> float:
        return float(2.0 ** self.scale_exp)


STORAGES = {
    "fp64": StorageFormat("fp64", 8, "float64", "double", 0, "IEEE double (8 bytes)", 2.0 ** -52),
    "fp32": StorageFormat("fp32", 4, "float32", "float", 0, "IEEE single (4 bytes)", 2.0 ** -23),
    "fp16s": StorageFormat("fp16s", 2, "float16", "_Float16", 15,
                           "IEEE half (2 bytes) of (f - w_p) * 2^15 (FluidX3D's FP16S)", 2.0 ** -10),
    "fp16c": StorageFormat("fp16c", 2, "uint16", "uint16_t", 0,
                           "lbgen's 1-4-11 format (2 bytes) of f - w_p: 12 significant bits for 2^-14 <= |f - w| < 2",
                           2.0 ** -11),
}
#: the bytes of each format, widest first (a store may not be wider than the arithmetic)
_ORDER = ("fp64", "fp32", "fp16s", "fp16c")
#: fp16c: the exponent bias (largest finite value 2 - 2^-10), its NaN code
FP16C_BIAS = 15
FP16C_NAN = 0x7FFF


def fp16c_encode(x: np.ndarray) -> np.ndarray:
    """Values -> uint16 codes of the 1-4-11 format, rounded as the kernels do: to float first,
    then to nearest even at 12 significant bits (half up in the steps of 2^-25 below 2^-14);
    NaN, and |x| beyond the largest finite value, to the NaN code; zero of either sign to 0."""
    v = np.asarray(x, dtype=np.float32)
    bits = v.view(np.uint32)
    sign = ((bits >> 16) & 0x8000).astype(np.uint32)
    a = bits & np.uint32(0x7FFFFFFF)
    with np.errstate(over="ignore", invalid="ignore"):
        normal = ((a + np.uint32(0x7FF) + ((a >> 12) & 1)) >> 12) - np.uint32((127 - FP16C_BIAS) << 11)
        tiny = np.floor(a.view(np.float32) * np.float32(2.0 ** 25) + np.float32(0.5)).astype(np.uint32)
    h = np.where(a >= np.uint32(0x38800000), normal, tiny)
    h = np.where((a >= np.uint32(0x40000000)) | (h >= FP16C_NAN), np.uint32(FP16C_NAN), h)  # |x| >= 2, NaN
    return np.where(h == 0, np.uint32(0), sign | h).astype(np.uint16)      # one zero: +0


def fp16c_decode(h: np.ndarray) -> np.ndarray:
    """uint16 codes of the 1-4-11 format -> float32 values (NaN for the NaN code)."""
    h = np.asarray(h, dtype=np.uint16).astype(np.uint32)
    a = h & np.uint32(0x7FFF)
    normal = ((a << 12) + np.uint32((127 - FP16C_BIAS) << 23)).view(np.float32)
    v = np.where(a >= 0x800, normal, a.astype(np.float32) * np.float32(2.0 ** -25))
    v = np.where(a == FP16C_NAN, np.float32(np.nan), v)
    return np.where(h & 0x8000, -v, v).astype(np.float32)


def check_storage(storage: str, precision: str) -> None:
    """Refuse an unknown storage, or one wider than the arithmetic, in words (ValueError)."""
    if storage not in STORAGES:
        raise ValueError(f"unknown storage {storage!r}; choose one of {', '.join(STORAGES)}")
    arith = ARITHMETIC.get(precision)
    if arith is not None and _ORDER.index(storage) < _ORDER.index(arith):
        raise ValueError(f"storage {storage!r} is wider than the {precision} arithmetic: it would store digits the "
                         f"arithmetic never computes; choose {', '.join(_ORDER[_ORDER.index(arith):])}")


def storage_name(precision: str, storage: Optional[str]) -> str:
    """The storage of a (precision, storage) pair: the named one, else the precision's own."""
    return storage or NATURAL[precision]


def storage_format(precision: str, storage: Optional[str] = None) -> StorageFormat:
    return STORAGES[storage_name(precision, storage)]


def is_shifted(precision: str, storage: Optional[str] = None) -> bool:
    """Whether stored values are deviations f - w_p: exactly when the store is narrower than the arithmetic."""
    return storage_name(precision, storage) != ARITHMETIC[precision]


def describe(precision: str, storage: Optional[str] = None) -> str:
    """The arithmetic and storage in words, as run lines print them: 'double', 'double, fp16s storage'."""
    return precision if storage is None else f"{precision}, {storage} storage"


class Codec:
    """Populations (Q, ...) in the arithmetic <-> stored values, for one (precision, storage) and set's weights."""

    def __init__(self, precision: str, storage: Optional[str], weights: Sequence[float]):
        self.format = storage_format(precision, storage)
        self.shifted = is_shifted(precision, storage)
        self.arithmetic = ARITHMETIC[precision]
        self.dtype = np.dtype(self.format.dtype)
        self.weights = np.asarray([float(w) for w in weights], dtype=np.float64)

    def _w(self, ndim: int) -> np.ndarray:
        return self.weights.reshape((-1,) + (1,) * (ndim - 1))

    def encode(self, f: np.ndarray) -> np.ndarray:
        """(Q, ...) populations -> stored values of the storage dtype (deviations where shifted)."""
        f = np.asarray(f)
        if not self.shifted:
            return f.astype(self.dtype, copy=False)
        d = (np.asarray(f, dtype=np.float64) - self._w(f.ndim)) * self.format.scale
        if self.format.name == "fp16c":
            return fp16c_encode(d)
        # a half through float, as the kernels round it (F16C converts from float)
        return (d.astype(np.float32) if self.format.name == "fp16s" else d).astype(self.dtype)

    def decode(self, s: np.ndarray) -> np.ndarray:
        """Stored values (Q, ...) -> float64 populations."""
        s = np.asarray(s)
        if not self.shifted:
            return s.astype(np.float64)
        d = fp16c_decode(s) if self.format.name == "fp16c" else s
        return d.astype(np.float64) / self.format.scale + self._w(s.ndim)

    @property
    def arith_dtype(self) -> np.dtype:
        """The NumPy dtype of the arithmetic (the kernels' ``real``: the body links' weights)."""
        return np.dtype(STORAGES[self.arithmetic].dtype)

    @property
    def range_dtype(self):
        """The float dtype whose range bounds the populations a lattice takes (set_populations'
        check): the storage's where it stores f, else the arithmetic's."""
        if not self.shifted:
            return self.dtype
        return np.dtype(np.float64 if self.arithmetic == "fp64" else np.float32)
