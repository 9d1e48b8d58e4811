"""The physical numbers of a run (lattice sites and steps): its header line, manifest and h5
attributes.  2D: ``lbgen.model.physics.run_numbers`` (the reference state of an --init file's
fields, thermal walls, Ra); 3D: ``physics3d`` (thermal walls on any axis; lids, channel walls on
any axis, Rayleigh-Taylor with Z up, or up the thermal walls' --wall-axis)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from lbgen.run.config import RunConfig
from lbgen.run.setups import RT_T_COLD, RT_T_HOT


def run_physics(cfg: RunConfig, fields: Optional[dict] = None) -> dict:
    """The numbers of a resolved run; ``fields``: its initial fields (an --init file's set the
    2D reference density and temperature; None on MPI ranks other than 0)."""
    if cfg.dimension == 3:
        return physics3d(cfg)
    from lbgen.model.physics import run_numbers
    reference = {"rho": float(fields["rho"].mean()), "T": float(fields["T"].mean())} \
        if cfg.init and fields is not None else {}
    return run_numbers(cfg, **reference)


def lid_speeds(cfg: RunConfig) -> list:
    """The speeds of the run's moving walls (model units)."""
    return [float(np.linalg.norm(u)) for u in (cfg.lid or {}).values()]


def reference_speeds(physics: dict) -> list:
    """The flow's reference speed of a run's numbers (``U``: a lid's, a channel's Poiseuille
    centre speed, a wave's amplitude) in model units, for the colour range of its pictures."""
    return [physics["U"] * physics["r"]] if "U" in physics else []


def physics3d(cfg: RunConfig) -> dict:
    """The physical numbers of a 3D run in lattice units (as ``lbgen.model.physics.run_numbers``
    for 2D): r, the reference state (rho = T = 1), nu, kappa and Pr (thermal sets), c_s
    (gamma = 5/3 on thermal sets), g (with gravity); Rayleigh-Taylor: the Atwood number of its
    1.05 / 0.95 contrast and, with gravity along z, t_unit, U_ff, Re, Ma; with a lid: its speed U
    (lattice units), the cavity size L (the lid's axis), Re = U L / nu, Ma = U / c_s and the
    lid transit L / U; a channel: its Poiseuille centre speed, Re, Ma and viscous time; a
    shear wave: its amplitude, Re, Ma and decay time; the Taylor-Green vortex: its amplitude, L = N / (2 pi),
    Re = U L / nu, Ma and convective time t_c = L / U (``lbgen.model.physics.lid_numbers``,
    ``channel_numbers``, ``wave_numbers``, ``taylor_green_numbers``)."""
    from lbgen.model.physics import (UNITS, channel_numbers, channel_width, gravity_to_lattice, hermite_order, is_thermal,
                                     kinematic_viscosity, lid_numbers, prandtl, rayleigh_taylor_numbers,
                                     scale_factor, sound_speed, taylor_green_numbers, thermal_diffusivity,
                                     velocity_to_lattice, wave_numbers)
    r = scale_factor(cfg.velocity_set)
    params = dict(cfg.parameters)
    thermal = is_thermal(cfg.velocity_set)
    nu = kinematic_viscosity(cfg.collision, params, r=r, T=1.0, rho=1.0)
    out = {"units": UNITS, "r": r, "rho_ref": 1.0, "T_ref": 1.0, "nu": nu}
    if thermal:
        out["kappa"] = thermal_diffusivity(cfg.collision, params, r=r, order=hermite_order(cfg.velocity_set))
        out["Pr"] = prandtl(nu, out["kappa"])
    out["c_s"] = c_s = sound_speed(1.0, r=r, thermal=thermal, dimension=3)
    g = float(np.linalg.norm(cfg.gravity))
    if g:
        out["g"] = gravity_to_lattice(g, r)
    up = "xyz".index(cfg.vertical_axis)           # z, or the thermal walls' --wall-axis
    if thermal and cfg.setup == "rayleigh-taylor":      # Z up: gravity across the interface is -g_z
        from lbgen.model.wall_frame import upright_shape
        out.update(rayleigh_taylor_numbers(RT_T_HOT, RT_T_COLD, gravity_to_lattice(-cfg.gravity[up], r),
                                           upright_shape(cfg.shape, cfg.wall_axis)[0], nu, c_s))
    if thermal and cfg.setup == "rayleigh-benard" and cfg.walls:
        out.update(convection3d(cfg, nu, out["kappa"], r))
    speeds = lid_speeds(cfg)
    if speeds and max(speeds) > 0:
        face = max(cfg.lid, key=lambda f: np.linalg.norm(cfg.lid[f]))
        U = velocity_to_lattice(max(speeds), r)
        L = cfg.shape["xyz".index(face[0])]
        out.update(lid_numbers(U, L, nu, c_s))
    elif cfg.setup == "channel" and g and not cfg.init and channel_width(cfg.shape, cfg.wall_axes, cfg.gravity):
        H = channel_width(cfg.shape, cfg.wall_axes, cfg.gravity)    # the walls parallel to the force
        out.update(channel_numbers(gravity_to_lattice(g, r), H, nu, c_s))
    elif cfg.setup == "taylor-green" and cfg.amplitude and not cfg.init:
        out.update(taylor_green_numbers(velocity_to_lattice(abs(cfg.amplitude), r), cfg.lx, nu, c_s))
    elif cfg.setup == "shear-wave" and cfg.amplitude and not cfg.init:
        out.update(wave_numbers(velocity_to_lattice(abs(cfg.amplitude), r), cfg.lx, nu, c_s))
    return out


def convection3d(cfg: RunConfig, nu: float, kappa: float, r: float) -> dict:
    """The numbers of a 3D rayleigh-benard run (walls across z, or --wall-axis x, y): the measured
    no-slip and isothermal planes (``z_no_slip``, ``z_isothermal``, or ``x_...``, ``y_...``;
    ``lbgen.model.wall_planes``), the effective depth H between the isothermal ones, Ra with it and
    the gravity along the walls' axis, the adiabatic ratio and the published Nu
    (``lbgen.model.convection.convection_numbers``)."""
    from lbgen.model.convection import convection_numbers
    from lbgen.model.physics import gravity_to_lattice, rayleigh, wall_plane_entries, wall_planes
    from lbgen.run.convection import run_planes
    walls = cfg.walls
    out = {}
    axis = cfg.thermal_axis
    out.update(wall_plane_entries(cfg, wall_planes(cfg, walls["T_bottom"], walls["T_top"]), axis))
    z0, z1 = run_planes(cfg)
    out[f"{axis}_isothermal"] = [z0, z1]
    g = gravity_to_lattice(-cfg.gravity["xyz".index(axis)], r)
    H = z1 - z0
    out["H"] = H
    out["Ra"] = rayleigh(g, walls["T_bottom"], walls["T_top"], H, nu, kappa)
    out.update(convection_numbers(out["Ra"], nu / kappa, H, g, walls["T_bottom"], walls["T_top"], r, 3))
    return out
