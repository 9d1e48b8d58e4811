"""The one halo exchange of a distributed lattice, for any D: the slabs of one split axis
traded with the two neighbours along it (``post`` then ``finish``), called axis after axis
(X, then Y, then Z: each slab spans the ghosts the earlier axes filled, so edges and corners
travel through the consecutive trades and no diagonal message is sent; seed 002, Fig. 1).

A trade posts Irecv for the ghost slabs of the sides that receive and Isend of the owned
slabs of the sides that send (``lbgen.parallel.decomposition.ghost_sides``: none across a
wall face), counts what it sends in the rank's ``messages`` (per axis: messages and bytes,
the communication model's numbers), and ``finish`` waits and returns what arrived.  What a
slab is (padded columns or rows of a 2D program, planes of a 3D block through the layout's
site indices or through unpack/pack) is the caller's: the messages are plain arrays in an
order both sides share, whatever the ranks' layouts.
"""
from __future__ import annotations

import collections
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from lbgen.parallel.mpi import TAG_DOWNWARD, TAG_UPWARD

#: a split axis without walls: both sides receive and send
EVERY_SIDE = (True, True, True, True)

Pending = Tuple[list, list]


def post(comm, messages: collections.Counter, axis: str, neighbours: Tuple[int, int],
         slabs: Tuple[Callable[[], np.ndarray], Callable[[], np.ndarray]],
         sides: Sequence[bool] = EVERY_SIDE, receive: Optional[Sequence[Callable]] = None) -> Pending:
    """Start the trade along `axis` ('x', 'y', 'z'): `neighbours` are the (low, high) ranks,
    `slabs` give this rank's owned (low, high) slabs (called only where needed; what arrives
    on a side has the shape of the slab sent from it, into ``receive[side]()`` where given, a
    buffer MPI can write: a device slab on the device path), `sides` = (receive low, receive
    high, send low, send high)."""
    recv_low, recv_high, send_low, send_high = sides
    low, high = neighbours
    owned = [slabs[side]() if sides[side + 2] or (sides[side] and receive is None) else None for side in (0, 1)]
    requests, arriving = [], [None, None]
    for side, (wanted, source, tag) in enumerate(((recv_low, low, TAG_UPWARD), (recv_high, high, TAG_DOWNWARD))):
        if wanted:
            arriving[side] = np.empty_like(owned[side]) if receive is None else receive[side]()
            requests.append(comm.Irecv(arriving[side], source=source, tag=tag))
    for side, (send, dest, tag) in enumerate(((send_low, low, TAG_DOWNWARD), (send_high, high, TAG_UPWARD))):
        if send:
            data = np.ascontiguousarray(owned[side]) if isinstance(owned[side], np.ndarray) else owned[side]
            requests.append(comm.Isend(data, dest=dest, tag=tag))
            arriving.append(data)                  # kept alive until the sends complete
            messages[f"{axis} messages"] += 1
            messages[f"{axis} bytes"] += data.nbytes
    return requests, arriving


def finish(pending: Pending) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """Wait for a trade; the (low, high) ghost slabs that arrived (None: a side that receives none)."""
    from mpi4py import MPI
    requests, arriving = pending
    MPI.Request.Waitall(requests)
    return arriving[0], arriving[1]


def trade(comm, messages, axis, neighbours, slabs, sides=EVERY_SIDE, receive=None):
    """``post`` then ``finish``: the blocking trade of one axis."""
    return finish(post(comm, messages, axis, neighbours, slabs, sides, receive))
