"""The run guard of a Simulation of any D: is the state healthy (finite, positive density and
temperature), and if not, where did it first go bad and why (a mixin of
``lbgen.simulation.runner.Simulation``; the fields come from the backends' kernels)."""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from lbgen.codegen.diagnostics import healthy
from lbgen.simulation.parameters import SimulationError


#: temperatures within which the thermal sets ran stably for the default operators (measured
#: with 1 % noise over 3000 steps: BGK tau = 0.8 from 0.3 to 1.8, regularized C = 1e-3 from
#: 0.85 to 1.7; README, Physical numbers): wall temperatures outside are named in a hint
STABLE_TEMPERATURES = (0.85, 1.7)


class HealthChecks:
    """The guard of a lattice of any D.  Needs ``diagnostic_rows``, ``diagnostics``,
    ``populations``, ``_fields_of``, ``mask``, ``params``, ``vs``, ``dimension`` and ``time_step``
    of the simulation it is mixed into."""

    def looks_healthy(self, skip=None) -> bool:
        """Cheap test: every (fluid) site -- not in ``skip``, a mask of the lattice's shape -- has
        finite fields and positive rho and T.  The diagnostics kernel of each region on its
        backend answers it: one read of the populations, rows of counts and extremes back (no
        field arrays, no copy)."""
        rows = self.diagnostic_rows() if skip is None else self.diagnostic_rows(skip=skip)
        if self.dimension == 3:
            from lbgen.codegen.diagnostics import scalars3d
            rows = scalars3d(rows)
        return healthy(rows)

    def check_finite(self) -> None:
        """Raise SimulationError naming the step and the first bad site if the state went bad.

        Bad: NaN or Inf anywhere, or a non-positive density or temperature at a fluid site.
        The cheap test runs first; only a failing state is gathered to find and describe the
        first bad site.
        """
        if self.looks_healthy():
            return
        bad = self.first_bad_site()
        if bad is not None:
            raise self.divergence(*bad)

    def first_bad_site(self, f: Optional[np.ndarray] = None, skip: Optional[np.ndarray] = None):
        """(site, what, fields at the site) of the first bad site (not 1 in ``skip``) of populations
        f, or None; f left out: this lattice's (pulled from the backends), its solid cells skipped."""
        own = f is None
        f = self.populations() if own else f
        rho = f.sum(axis=0)
        finite = np.isfinite(f).all(axis=0)
        with np.errstate(all="ignore"):
            fields = self._fields_of(f) if finite.all() else None
            bad = ~finite | ~(rho > 0)
            if fields is not None:
                bad |= ~(fields["T"] > 0)
        for solid in (self.mask if own else None, skip):
            if solid is not None:
                bad &= solid == 0
        if not bad.any():
            return None
        site = tuple(int(v[0]) for v in np.nonzero(bad))
        if fields is None:
            one = f[(slice(None),) + tuple(slice(i, i + 1) for i in site)]
            with np.errstate(all="ignore"):
                values = {k: float(v.ravel()[0]) for k, v in self._fields_of(one).items()}
        else:
            values = {k: float(v[site]) for k, v in fields.items()}
        what = "NaN/Inf" if not finite[site] else ("negative density" if not rho[site] > 0 else "negative temperature")
        return site, what, values

    def divergence(self, site, what: str, values: Dict[str, float], where: str = "") -> SimulationError:
        """The divergence report of a bad site (``site``: the coordinates the caller names, a
        distributed run's global ones; ``where``: e.g. the rank), with hints naming the wall
        temperatures and the lids' Mach numbers where they may be the cause."""
        from lbgen.model.catalog import AXES
        from lbgen.model.physics import LID_MACH_MAX, LID_MACH_WARN, lid_mach
        text = ", ".join(f"{k}={v:.6g}" for k, v in values.items())
        at = ", ".join(f"{a}={i}" for a, i in zip(AXES, site)) + (f", {where}" if where else "")
        params = ", ".join(f"{k} = {v:g}" for k, v in self.params.values.items())
        walls = getattr(self, "walls", None)
        lo, hi = STABLE_TEMPERATURES
        far = walls is not None and not all(lo <= t <= hi for t in (walls.T_bottom, walls.T_top))
        hint = (f"the wall temperatures (T_bottom = {walls.T_bottom:g}, T_top = {walls.T_top:g}) lie outside "
                f"about {lo:g} to {hi:g}, where the thermal sets run stably (README, Physical numbers): "
                f"bring them closer to 1. Otherwise " if far else "")
        lids = [f"{a}-{s} at Mach {lid_mach(u, self.vs.name):.3g}" for (a, s), u in self.lid.items() if any(u)]
        if lids:
            hint += (f"the lid{'s' if len(lids) > 1 else ''} ({', '.join(lids)}; allowed up to Mach "
                     f"{LID_MACH_MAX:g}, unstable near tau = 1/2 above {LID_MACH_WARN:g}) may move too fast, or ")
        return SimulationError(
            f"the run diverged by step {self.time_step} ({what}): first bad site ({at}) has {text}. "
            f"Hint: {hint}the {self.params.collision} parameters ({params}) may put a relaxation time too "
            f"close to 1/2 (too little viscosity), velocities too large for the lattice "
            f"(|u| should stay well below r = {self.vs.r:.3f}), or gravity {self.params.gravity} too strong "
            f"for the lattice.")
