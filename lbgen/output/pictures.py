"""Pictures of fields and of the mid-plane slices of a 3D state.

Every picture of a quantity has the same geometry whatever the data: the image box, the
colour bar (its extension arrows are fixed per quantity, never chosen from the data), its
ticks and labels (mathtext; lengths in sites, velocities in sites per step when the
velocity set's r is known).  A *window* ``((x0, x1), (y0, y1))`` in sites (half-open, as
Python slices) crops the picture; ``'auto'`` crops y to the rows where any recorded step
differs visibly from the uniform layers at the walls (:mod:`.windows`).  The title gives
the step and, with a *time_unit* ``(steps per unit, label)``, the time in the flow's own
unit: ``step 2000 = 0.66 t_RT``.  Pictures of the speed can carry arrows of the in-plane
velocity (``arrows=True``): the direction of the flow over its magnitude.

The picture modules, imported one way: :mod:`.look` (quantities, style, sizes, time units,
titles, figures) <- :mod:`.limits` (what is drawn, colour limits), :mod:`.windows` <-
:mod:`.frames` (movie frames) <- this module.  Their names are re-exported here.
"""
from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np

from lbgen.output.fields import field_array
from lbgen.output.frames import (FRAME_MAX_SIDE, FRAMES_DIR, Frame, frame_name, frame_stride,  # noqa: F401
                                 read_frame_file, write_frame_file)
from lbgen.output.limits import (REST_VELOCITY, ROUNDOFF, clean, clim_of, colour_limits,  # noqa: F401
                                 default_limits, drawn_data, parse_clim, picture_data, velocity_scale)
from lbgen.output.look import (EXTEND, ISOTHERMAL_PICTURES, LONG_SIDE_PX, MARGINS_IN, MAX_LONG_SIDE_PX,  # noqa: F401
                               MIN_DPI, MOVIE_FRAMES, PICTURE_QUANTITIES, PICTURES_DIR, SHORT_BAR_IN, STYLE,
                               THERMAL_PICTURES, VELOCITY_QUANTITIES, TimeUnit, check_dpi, check_quantity,
                               check_time_unit, default_dpi, default_pictures, default_pictures_every, dpi_range,
                               drawn_scale, figure_layout, figure_rgb, long_side_in, new_figure, picture_name,
                               save_png, title_of, unit_text)
from lbgen.output.fields import stem
from lbgen.output.windows import (AUTO, AUTO_KEEP, AUTO_MARGIN, AUTO_MIN_MARGIN, AUTO_TOLERANCE,  # noqa: F401
                                  FULL, Window, active_rows, auto_window, check_window, parse_window, union_rows,
                                  window_option, window_text)

PathLike = Union[str, os.PathLike]


def _samples(lo: int, hi: int, stride: int, count: int) -> Tuple[int, int]:
    """[i0, i1): the samples i (at site stride i + stride // 2) inside sites [lo, hi)."""
    off = stride // 2
    i0 = min(max(0, -((off - lo) // stride)), max(count - 1, 0))
    i1 = min(max(i0 + 1, -((off - hi) // stride)), count)
    return i0, i1


class FieldPicture:
    """One figure of one quantity, drawn again for every frame: the image box, the colour bar,
    its extension arrows, ticks and label are fixed when it is made -- only the image and the
    title change (:meth:`draw`) -- so every frame of a movie has the same geometry.

    *shape*: the lattice (LX, LY); the data given to :meth:`draw` are values at the sites
    (stride * i + stride // 2) (a movie frame's; (1, 1): every site).  *window*: None (the
    lattice) or ``((x0, x1), (y0, y1))`` in sites.  Size: *long_side_px* pixels on the long
    side, or *dpi* (checked against :func:`dpi_range` of the window before anything is drawn).
    """

    def __init__(self, quantity: str, shape: Tuple[int, int], *, limits: Sequence[float], window=None,
                 cmap: Optional[str] = None, dpi: Optional[float] = None, long_side_px: int = LONG_SIDE_PX,
                 time_unit=None, stride: Tuple[int, int] = (1, 1), axes: Tuple[str, str] = ("x", "y"),
                 r: Optional[float] = None):
        import matplotlib

        name, _symbol, definition, default_cmap, _diverging = STYLE[check_quantity(quantity)]
        self.quantity = quantity
        self.shape = tuple(int(n) for n in shape)
        self.window = check_window(window, self.shape)
        self.time_unit = check_time_unit(time_unit)
        self.limits = (float(limits[0]), float(limits[1]))
        #: velocity-derived quantities are drawn in sites per step (model values / r) when the
        #: velocity set's r is known; the data given to draw() stay model values
        self._scale = drawn_scale(quantity, r)
        self._quiver = None
        (x0, x1), (y0, y1) = self.window
        wx, wy = x1 - x0, y1 - y0
        left, _right, bottom, _top = MARGINS_IN
        width, height, img_w, img_h = figure_layout((wx, wy))
        dpi = default_dpi((wx, wy), long_side_px) if dpi is None else check_dpi(dpi, (wx, wy))
        fx, fy = (int(s) for s in stride)
        nx, ny = -(-self.shape[0] // fx), -(-self.shape[1] // fy)
        ix, iy = _samples(x0, x1, fx, nx), _samples(y0, y1, fy, ny)
        # nearest-neighbour sampling at the picture's resolution: keep every k-th sample (k =
        # samples per pixel, rounded down) before matplotlib colour-maps the array, which it
        # otherwise does for every site (0.7 s a picture at 1024 x 4096, 0.1 s this way)
        kx, ky = max(1, int(wx // (img_w * dpi)) // fx), max(1, int(wy // (img_h * dpi)) // fy)
        self._take = (slice(ix[0] + kx // 2, ix[1], kx), slice(iy[0] + ky // 2, iy[1], ky))
        self._samples = (nx, ny)
        fig = self.figure = new_figure((width, height), float(dpi))
        ax = fig.add_axes((left / width, bottom / height, img_w / width, img_h / height))
        cax = fig.add_axes(((left + img_w + 0.15) / width, bottom / height, 0.2 / width, img_h / height))
        colours = matplotlib.colormaps[cmap or default_cmap].with_extremes(bad="0.6")   # NaN: grey
        blank = np.zeros((len(range(*self._take[1].indices(ny))), len(range(*self._take[0].indices(nx)))))
        self.axes = ax
        self.image = ax.imshow(blank, origin="lower", aspect="auto", cmap=colours, vmin=self.limits[0] * self._scale,
                               vmax=self.limits[1] * self._scale, extent=(x0 - 0.5, x1 - 0.5, y0 - 0.5, y1 - 0.5),
                               interpolation="nearest")
        ax.set_xlabel(rf"${axes[0]}$ (sites)")
        ax.set_ylabel(rf"${axes[1]}$ (sites)")
        self.title = ax.set_title("", fontsize=11)
        self.colorbar = fig.colorbar(self.image, cax=cax, extend=EXTEND.get(quantity, "both"))
        label = f"{name} {definition}" if img_h >= SHORT_BAR_IN else definition
        self.colorbar.set_label(f"{label} ({unit_text(quantity, r)})")

    def draw(self, data: np.ndarray, step: Optional[int] = None, time: Optional[float] = None):
        """The figure showing *data* (drawn values at the picture's stride, the whole lattice)."""
        data = np.asarray(data)
        if data.shape != self._samples:
            raise ValueError(f"{self.quantity}: data of shape {data.shape}, the picture samples {self._samples}")
        self.image.set_data(data[self._take].T * self._scale)
        self.title.set_text(title_of(self.quantity, step, time, self.time_unit))
        return self.figure

    def rgb(self, data: np.ndarray, step: Optional[int] = None, time: Optional[float] = None) -> np.ndarray:
        """(H, W, 3) pixels of the picture of *data*."""
        return figure_rgb(self.draw(data, step, time))

    def arrows(self, u: np.ndarray, v: np.ndarray, scale: Optional[float] = None):
        """Arrows of the in-plane velocity (*u*, *v*: model values at every site of the lattice)
        over the picture: the direction of the flow, on a grid of about ARROWS sites along the
        window's long side; an arrow of the length of one grid spacing is a speed *scale* (model
        units; default: the picture's upper colour limit), so their lengths compare between
        pictures of a run.  Drawn again (same arrows, new values) on every call."""
        u, v = np.nan_to_num(np.asarray(u, dtype=np.float64)), np.nan_to_num(np.asarray(v, dtype=np.float64))
        if u.shape != self.shape or v.shape != self.shape:
            raise ValueError(f"arrows: velocity of shape {u.shape}, the picture shows {self.shape}")
        (x0, x1), (y0, y1) = self.window
        step = max(1, -(-max(x1 - x0, y1 - y0) // ARROWS))
        xs, ys = np.arange(x0 + step // 2, x1, step), np.arange(y0 + step // 2, y1, step)
        U, V = u[np.ix_(xs, ys)].T, v[np.ix_(xs, ys)].T
        scale = float(scale if scale is not None else self.limits[1]) or 1.0
        if self._quiver is None:
            X, Y = np.meshgrid(xs, ys)
            # scale_units="xy" and scale: a speed `scale` draws an arrow `step` sites long
            self._quiver = self.axes.quiver(X, Y, U, V, angles="xy", scale_units="xy", scale=scale / step,
                                            color="white", edgecolor="black", linewidth=0.3, width=0.004,
                                            pivot="mid", minlength=0.0)
        else:
            self._quiver.set_UVC(U, V)
        return self.figure


def field_figure(quantity: str, fields: dict, *, limits: Optional[Sequence[float]] = None, step: Optional[int] = None,
                 time: Optional[float] = None, cmap: Optional[str] = None, dpi: Optional[float] = None,
                 long_side_px: int = LONG_SIDE_PX, window=None, time_unit=None, r: Optional[float] = None,
                 arrows: Optional[bool] = None):
    """One field as a picture for slides: the lattice's (or the window's) aspect exactly, y up,
    axes in sites, a colour bar with the fixed *limits* (default: this state's range,
    symmetric for diverging fields) and fixed extension arrows, a title with the step and,
    with *time_unit* ``(steps per unit, label)``, the time in the flow's unit.  With the
    velocity set's *r*, velocities are drawn in sites per step (else in model units, named so).
    *arrows* (default: for the speed) draws the in-plane velocity's direction over it
    (:meth:`FieldPicture.arrows`).

    *window*: None (the lattice), ``((x0, x1), (y0, y1))`` in sites, or ``'auto'`` (the rows
    where this field differs visibly from its wall layers, with a margin: :func:`auto_window`).
    Size: the long side is *long_side_px* pixels (more for lattices so tall that this would
    be under MIN_DPI), or the figure is drawn at *dpi* (within :func:`dpi_range` of the
    window, else ValueError before anything is drawn).
    """
    check_quantity(quantity)
    if limits is None:
        limits = default_limits(quantity, picture_data(quantity, fields))
    lo, hi = float(limits[0]), float(limits[1])
    data = drawn_data(quantity, fields, (lo, hi))
    if isinstance(window, str) and window.strip().lower() == AUTO:
        window = auto_window(active_rows(data, (lo, hi)), data.shape)
    picture = FieldPicture(quantity, data.shape, limits=(lo, hi), window=window, cmap=cmap, dpi=dpi,
                           long_side_px=long_side_px, time_unit=time_unit, r=r)
    picture.draw(data, step, time)
    if (quantity in ARROW_QUANTITIES if arrows is None else arrows):
        u, v = in_plane_velocity(fields)
        picture.arrows(u, v)
    return picture.figure


#: quantities whose pictures carry arrows of the in-plane velocity by default
ARROW_QUANTITIES = ("speed",)
#: about this many arrows along the long side of a picture
ARROWS = 24


def in_plane_velocity(fields: dict) -> Tuple[np.ndarray, np.ndarray]:
    """The velocity's components in a picture's plane: ``ua``, ``ub`` of a 3D slice
    (:func:`mid_planes`), else ``ux``, ``uy`` of a 2D state."""
    if "ua" in fields:
        return field_array(fields, "ua"), field_array(fields, "ub")
    return field_array(fields, "ux"), field_array(fields, "uy")


# --------------------------------------------------------------------------- 3D: mid-plane slices
#: the mid-plane slices of a 3D state: (name, normal axis, in-plane axes)
MID_PLANES = (("xy", 2, (0, 1)), ("xz", 1, (0, 2)), ("yz", 0, (1, 2)))
_AXIS = "xyz"


def mid_planes(fields: dict, periodic: Sequence[bool] = (True, True, True)) -> Dict[str, tuple]:
    """{plane: (axes, index, slice fields)} of a 3D state (rho, ux, uy, uz, T of shape (LX, LY,
    LZ)) at the middle of each axis (index L // 2 along the normal): the slice fields are
    2D arrays over the plane's two axes (a, b): rho, T, ux, uy (the velocity's own x and y
    components), ua, ub (its components along a and b), speed = |u| (all three) and vorticity = the component normal to the plane,
    omega_n = d_p u_q - d_q u_p with (n, p, q) a cyclic order of (x, y, z) (central
    differences; one-sided across walls: ``periodic`` per axis).
    A picture of a slice is drawn by :class:`FieldPicture` like a 2D state's."""
    from lbgen.output.slabbed import is_slabbed
    if is_slabbed(fields):                # made by slabs: each plane's values alone (no whole field)
        source = getattr(fields, "fields", fields)
        shape = source.shape
    else:
        u = [field_array(fields, c) for c in ("ux", "uy", "uz")]
        shape = u[0].shape
    out = {}
    for name, normal, (a, b) in MID_PLANES:
        index = shape[normal] // 2
        if is_slabbed(fields):
            at = tuple(index if k == normal else slice(None) for k in range(3))
            plane = {k: np.asarray(v, dtype=np.float64) for k, v in source.part(("rho", "T", "ux", "uy", "uz"),
                                                                                at).items()}
            uc = [plane[c] for c in ("ux", "uy", "uz")]
        else:
            def cut(v, normal=normal, index=index):
                return np.take(np.asarray(v, dtype=np.float64), index, axis=normal)
            plane = {k: cut(field_array(fields, k)) for k in ("rho", "T", "ux", "uy")}
            uc = [cut(c) for c in u]
        sl = {k: plane[k] for k in ("rho", "T", "ux", "uy")}
        sl["speed"] = np.sqrt(sum(c ** 2 for c in uc))
        sl["ua"], sl["ub"] = uc[a], uc[b]              # the in-plane components (arrows)
        p, q = (normal + 1) % 3, (normal + 2) % 3           # right-handed: omega_n = d_p u_q - d_q u_p
        side = {a: 0, b: 1}
        w = _derivative(uc[q], side[p], periodic[p]) - _derivative(uc[p], side[q], periodic[q])
        sl["vorticity"] = w
        out[name] = ((_AXIS[a], _AXIS[b]), index, sl)
    return out


def _derivative(v: np.ndarray, axis: int, periodic: bool) -> np.ndarray:
    """Central difference along ``axis`` (periodic, or one-sided at the ends: np.gradient)."""
    if periodic:
        return 0.5 * (np.roll(v, -1, axis) - np.roll(v, 1, axis))
    return np.gradient(v, axis=axis, edge_order=1) if v.shape[axis] >= 2 else np.zeros_like(v)


def slice_picture_name(quantity: str, plane: str, step: int) -> str:
    """``speed-xy-000001000.png``: a picture of the mid-plane slice of a 3D run."""
    return f"{check_quantity(quantity)}-{plane}-{stem(step)}.png"
