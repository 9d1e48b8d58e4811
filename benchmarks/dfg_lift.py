"""DFG 2D-1 (Schaefer & Turek 1996, Re = 20) variants for the lift's convergence (docs/physics.md, "Why
2D-1's lift converges at first order"): the set-up's lattice of `lbgen run cylinder` with the cylinder moved
(``--dx``, ``--dy`` in sites, or its centre's height ``--cy`` in metres: 0.205 puts it on the mid-line), another
inflow speed (``--u``, sites/step at the parabola's centre: the Mach number), TRT's Lambda (``--magic``),
the operator, the body's walls (``--scheme``: bouzidi, quadratic, halfway, or two linear schemes lbgen does not
offer, put into the bouzidi links' weights here: ``cli``, the central linear interpolation of Ginzburg &
d'Humieres, Phys. Rev. E 68, 066614 (2003), f~ = f*_i(x) + (1 - 2q)/(1 + 2q) (f*_i(x - c_i) - f*_ibar(x)), and
``yu``, the unified linear scheme of Yu, Mei, Luo & Shyy, Prog. Aerosp. Sci. 39, 329 (2003),
f~ = (q f*_i(x) + (1 - q) f*_i(x - c_i) + q f*_ibar(x))/(1 + q); both bouzidi's where x - c_i is not fluid), and
the wall distances q of the interpolated walls clipped to one of Bouzidi's two branches (``--q-branch low``: q > 1/2 taken as 1/2, only
the q < 1/2 branch interpolates; ``high``: only the q >= 1/2 branch).  Prints one JSON line: C_D, C_L (the free stream as reference,
``lbgen.run.flows.measure``), dp, the lift's relative change between the last two quarters of the samples
and the process's CPU time.  Not a test.

    python benchmarks/dfg_lift.py 20 16000                    # the default run: C_L 0.00902
    python benchmarks/dfg_lift.py 20 32000 --u 0.05           # half the Mach number
    python benchmarks/dfg_lift.py 20 16000 --dx 0.5           # the centre on a site in x
    python benchmarks/dfg_lift.py 20 16000 --q-branch low
    python benchmarks/dfg_lift.py 20 16000 --scheme quadratic   # Bouzidi's quadratic walls: C_L 0.00877
    python benchmarks/dfg_lift.py 20 16000 --scheme yu          # Yu et al.'s linear walls: C_L 0.00924
"""
from __future__ import annotations

import argparse
import json
import time
from types import SimpleNamespace

import numpy as np

import lbgen
import lbgen.geometry.bodies as geometry_bodies
import lbgen.simulation.bodies as simulation_bodies
from lbgen.geometry.bodies import DFG, Bodies
from lbgen.geometry.shapes import Cylinder
from lbgen.run.flows import FLOWS, measure


#: the linear schemes of the form f~ = k1 f*_i(x) + k0 f*_i(x - c_i) + kbar f*_ibar(x): (k1, k0, kbar) of q
LINEAR = {"cli": lambda q: (1 + 0 * q, (1 - 2 * q) / (1 + 2 * q), -(1 - 2 * q) / (1 + 2 * q)),
          "yu": lambda q: (q / (1 + q), (1 - q) / (1 + q), q / (1 + q))}


def linear_links(name):
    """find_links with the bouzidi links' weights replaced by LINEAR[name]'s where x - c_i is a fluid site."""
    exact = simulation_bodies.find_links

    def find_links(labels, e, opposite, walls, distance, scheme, closed=()):
        links = exact(labels, e, opposite, walls, distance, scheme, closed)
        site, p, q = links["site"], links["p"], links["q"]
        up = site - links["c"]
        ok = np.all((up >= 0) & (up < np.array(labels.shape)), axis=1)
        ok[ok] = labels[tuple(up[ok].T)] == 0
        links["w"][ok] = np.stack(LINEAR[name](q), axis=1)[ok]
        links["src"][ok] = np.stack([up, site], axis=1)[ok]
        links["src_p"][ok] = np.stack([p, np.asarray(opposite)[p]], axis=1)[ok]
        return links
    simulation_bodies.find_links = find_links


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cells", type=int, help="cells per diameter")
    p.add_argument("steps", type=int)
    p.add_argument("--u", type=float, default=0.1, help="the inflow's centre speed, sites/step")
    p.add_argument("--dx", type=float, default=0.0, help="move the cylinder downstream (sites)")
    p.add_argument("--dy", type=float, default=0.0, help="move the cylinder up (sites)")
    p.add_argument("--cy", type=float, default=DFG["centre"][1], help="the centre's height (m)")
    p.add_argument("--magic", type=float, default=3 / 16, help="TRT's Lambda")
    p.add_argument("--collision", default="trt")
    p.add_argument("--scheme", default="bouzidi", help="the body's walls: bouzidi (linear), quadratic, halfway, cli or yu")
    p.add_argument("--q-branch", choices=("", "low", "high"), default="")
    p.add_argument("--every", type=int, default=100, help="steps between force samples")
    a = p.parse_args()
    if a.q_branch:
        exact = geometry_bodies.Bodies.distance
        clip = np.minimum if a.q_branch == "low" else np.maximum
        geometry_bodies.Bodies.distance = lambda self, sites, dirs: clip(exact(self, sites, dirs), 0.5)
    scheme = a.scheme
    if scheme in LINEAR:
        linear_links(scheme)
        scheme = "bouzidi"
    t0 = time.process_time()
    flow, cells, r, u, re = FLOWS["cylinder"], a.cells, 3 ** 0.5, a.u, 20.0
    shape, _ = flow.geometry(cells)
    h = DFG["diameter"] / cells
    centre = (DFG["centre"][0] / h - 0.5 + a.dx, a.cy / h - 0.5 + a.dy)    # the walls at -1/2 site
    bodies = Bodies(shape, [Cylinder(centre, cells / 2, axis=None)], names=["cylinder"])
    extra = {"magic": a.magic} if a.collision.startswith("trt") else {}
    sim = lbgen.Simulation(*shape, velocity_set="d2q9", bodies=bodies, body_bc=scheme, walls="y",
                           collision=a.collision, inlet={"x-low": ("parabolic", u * r)}, outlet={"x-high": 1.0},
                           tau=flow.tau(re, cells, u), threads=1, **extra)
    start = flow.fields(cells, u * r, re)
    sim.set_fields(start["rho"], start["ux"], start["uy"])
    history = []
    for _ in range(a.steps // a.every):
        sim.step(a.every)
        history.append((sim.time_step, sim.forces()["cylinder"]))
    cfg = SimpleNamespace(velocity_set="d2q9", cells_per_diameter=cells, inlet_speed=u * r, re=re)
    fields = sim.fields()
    found = measure(flow, cfg, history, fields["rho"], fields["ux"])
    lift = np.array([f[1] for _, f in history])
    q = len(lift) // 4
    print(json.dumps({"args": vars(a), "centre": centre, "tau": flow.tau(re, cells, u), "C_D": found["C_D"],
                      "C_L": found["C_L"], "dp": found.get("dp"),
                      "lift_change": float(lift[-q:].mean() / lift[-2 * q:-q].mean() - 1),
                      "cpu_s": time.process_time() - t0}))


if __name__ == "__main__":
    main()
