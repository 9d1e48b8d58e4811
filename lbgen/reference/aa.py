"""In-place streaming by the AA pattern, typed from its paper on one NumPy array (periodic, any D):
Bailey, Myre, Walsh, Lilja & Pasaoglu, "Accelerating lattice Boltzmann fluid flow simulations
using graphics processors", ICPP 2009 (the "A-A" access pattern: one lattice array, two kinds of
step that alternate).

The array A holds, at the start and after every odd step, the post-collision populations in
their own slots: A[p][x] = f*_p(x) (the pull steppers' state, ``bulk.run`` / ``bulk3d.run``).
An even step reads, at every site, the populations streaming in, f*_p(x - c_p) = A[p][x - c_p],
collides them and writes each outgoing f*'_q(x) back against its direction, A[opp(q)][x + c_q]:
the very slots the site read.  The odd step then finds at every site the populations streaming in
in its own slots, f*'_p(x - c_p) = A[opp(p)][x], collides them and writes f*''_p(x) to A[p][x].
After an even step the state, read back, is A[opp(q)][x + c_q] for population q of site x.

``collide`` is any of the oracles' collisions as a function of the (Q, *shape) pre-collision
populations; ``hops`` the (Q, D) integer hops c_p and ``opposite`` opp(p) of the set.
"""
from __future__ import annotations

import numpy as np


def _shift(a, c, sign: int = 1):
    """a moved by sign * c along every axis (periodic): out[x + sign c] = a[x]."""
    return np.roll(a, shift=tuple(sign * int(k) for k in c), axis=tuple(range(a.ndim)))


def even_step(A, hops, opposite, collide) -> None:
    """In place: A[opp(q)][x + c_q] = collide(A[p][x - c_p])_q."""
    incoming = np.stack([_shift(A[p], c) for p, c in enumerate(hops)])
    post = collide(incoming)
    for q, c in enumerate(hops):
        A[opposite[q]] = _shift(post[q], c)


def odd_step(A, hops, opposite, collide) -> None:
    """In place: A[p][x] = collide(A[opp(p)][x])_p."""
    incoming = np.stack([A[opposite[p]] for p in range(len(hops))])
    A[...] = collide(incoming)


def natural(A, hops, opposite, odd: bool) -> np.ndarray:
    """The post-collision populations f*_q(x) of A: A itself after an even number of steps
    (``odd`` False), else (after an even step) A[opp(q)][x + c_q]."""
    if not odd:
        return A.copy()
    return np.stack([_shift(A[opposite[q]], c, -1) for q, c in enumerate(hops)])


def run(f, steps: int, hops, opposite, collide) -> np.ndarray:
    """``steps`` steps of the pattern from the post-collision populations f: the post-collision
    populations after them (the state a pull stepper reaches)."""
    A = np.array(f, dtype=np.float64, copy=True)
    for t in range(steps):
        (odd_step if t % 2 else even_step)(A, hops, opposite, collide)
    return natural(A, hops, opposite, odd=steps % 2 == 1)
