"""The run guard of a Simulation: is the state healthy (finite, positive density and
temperature), and if not, where did it first go bad and why (a mixin of
``lbgen.simulation.runner.Simulation``; the fields come from the backends' kernels)."""
from __future__ import annotations

from typing import Dict

import numpy as np

from lbgen.codegen.diagnostics import healthy
from lbgen.simulation.parameters import SimulationError


#: temperatures within which the thermal sets ran stably for the default operators (measured
#: with 1 % noise over 3000 steps: BGK tau = 0.8 from 0.3 to 1.8, regularized C = 1e-3 from
#: 0.85 to 1.7; README, Physical numbers): wall temperatures outside are named in a hint
STABLE_TEMPERATURES = (0.85, 1.7)


class HealthChecks:
    """Needs ``diagnostic_rows``, ``populations``, ``_fields_of``, ``params``,
    ``vs`` and ``time_step`` of the simulation it is mixed into."""

    def looks_healthy(self) -> bool:
        """Cheap test: every site has finite fields and positive rho and T.  The per-row
        diagnostics kernel of each region on its backend answers it: one read of the
        populations, LY rows of counts and extremes back (no field arrays, no copy)."""
        return healthy(self.diagnostic_rows())

    def check_finite(self) -> None:
        """Raise SimulationError naming the step and the first bad site if the state went bad.

        Bad: NaN or Inf anywhere, or a non-positive density or temperature.  The cheap test
        runs first; only a failing state is gathered to find and describe the first bad site.
        """
        if self.looks_healthy():
            return
        bad = self._first_bad_site(self.populations())
        if bad is not None:
            raise self._divergence_error(*bad)

    def _first_bad_site(self, f: np.ndarray):
        """(x, y, what, fields at the site) of the first bad site of populations f, or None."""
        rho = f.sum(axis=0)
        finite = np.isfinite(f).all(axis=0)
        with np.errstate(all="ignore"):
            fields = self._fields_of(f) if finite.all() else None
            bad = ~finite | ~(rho > 0)
            if fields is not None:
                bad |= ~(fields["T"] > 0)
        if not bad.any():
            return None
        x, y = (int(v[0]) for v in np.nonzero(bad))
        if fields is None:
            with np.errstate(all="ignore"):
                values = {k: float(v.ravel()[0]) for k, v in self._fields_of(f[:, x:x + 1, y:y + 1]).items()}
        else:
            values = {k: float(fields[k][x, y]) for k in ("rho", "ux", "uy", "T")}
        what = "NaN/Inf" if not finite[x, y] else ("negative density" if not rho[x, y] > 0 else "negative temperature")
        return x, y, what, values

    def _divergence_error(self, x: int, y: int, what: str, values: Dict[str, float]) -> SimulationError:
        text = ", ".join(f"{k}={v:.6g}" for k, v in values.items())
        params = ", ".join(f"{k} = {v:g}" for k, v in self.params.values.items())
        walls = getattr(self, "walls", None)
        lo, hi = STABLE_TEMPERATURES
        far = walls is not None and not all(lo <= t <= hi for t in (walls.T_bottom, walls.T_top))
        wall_hint = (f"the wall temperatures (T_bottom = {walls.T_bottom:g}, T_top = {walls.T_top:g}) lie outside "
                     f"about {lo:g} to {hi:g}, where the thermal sets run stably (README, Physical numbers): "
                     f"bring them closer to 1. Otherwise " if far else "")
        return SimulationError(
            f"the run diverged by step {self.time_step} ({what}): first bad site (x={x}, y={y}) has {text}. "
            f"Hint: {wall_hint}the {self.params.collision} parameters ({params}) may put a relaxation time too "
            f"close to 1/2 (too little viscosity), velocities too large for the lattice "
            f"(|u| should stay well below r = {self.vs.r:.3f}), or gravity {self.params.gravity} too strong "
            f"for the lattice.")
