"""Run output: field files (HDF5/npz + VTK), pictures, time series, manifest.

Layout of a run directory written by :class:`RunOutput`::

    run_dir/
      manifest.json                    write_manifest / read_manifest (config, colour_limits, versions, MLUPS,
                                       "files": every file RunOutput wrote -- what --overwrite may remove)
      series.csv, series.png           append_series / plot_series (one row every --series-every K steps)
      fields/step-000001000.h5         write_fields (or .npz)
      vtk/step-000001000.vti           write_fields (VTK XML ImageData via pyevtk, point data)
      vtk/fields.pvd                   ParaView time-series collection of the .vti files
      pictures/T-000001000.png         write_pictures (the run's fixed colour limits, window, time unit)
      frames/step-000000080.npz        write_frame (movie frames: the picture quantities, 16-bit, every
                                       --pictures-every K steps and at every picture; lbgen movie draws them)

A 3D run (``RunOutput(..., dimension=3)``) writes the same folder with (LX, LY, LZ) fields (h5/npz
datasets rho, ux, uy, uz, T; a 3D .vti image), the 3D series columns and, instead of
pictures and frames, ``pictures/<q>-<plane>-000001000.png``: the mid-plane slices xy, xz, yz.

Modules: :mod:`.fields` (files, vorticity, speed, host diagnostics), :mod:`.look` (quantities, sizes,
time units, titles), :mod:`.limits` (what is drawn, colour limits), :mod:`.windows`, :mod:`.frames`
(movie frames), :mod:`.pictures` (field pictures, 3D mid-plane slices; re-exports the four
before it), :mod:`.series`
(series.csv / series.png), :mod:`.manifest`, :mod:`.run` (RunOutput, the file list),
:mod:`.folder` (RunResults: a run folder read back; movies), :mod:`.plot` (notebooks).
"""
from lbgen.output.fields import (FIELD_NAMES, diagnostics, read_field_file, read_vti, saved_steps, speed, vorticity,
                     write_vti)
from lbgen.output.manifest import environment_versions, read_manifest
from lbgen.output.pictures import (PICTURE_QUANTITIES, TimeUnit, check_dpi, check_time_unit, check_window,
                                   colour_limits, default_pictures, default_pictures_every, dpi_range, drawn_data,
                                   field_figure, parse_clim, parse_window, picture_name, window_option)
from lbgen.output.records import recorded_files
from lbgen.output.run import RunOutput
from lbgen.output.series import SERIES_COLUMNS, default_series_every, read_series, series_figure

__all__ = [
    "FIELD_NAMES", "PICTURE_QUANTITIES", "SERIES_COLUMNS", "diagnostics", "vorticity", "speed", "RunOutput",
    "write_vti", "read_vti", "read_manifest", "read_series", "environment_versions", "read_field_file",
    "saved_steps", "colour_limits", "drawn_data", "field_figure", "parse_clim", "default_series_every",
    "series_figure", "check_dpi", "dpi_range", "picture_name", "recorded_files", "default_pictures",
    "default_pictures_every", "parse_window", "window_option", "check_window", "check_time_unit", "TimeUnit",
]
