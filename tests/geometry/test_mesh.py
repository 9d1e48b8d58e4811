"""Bodies from STL files (lbgen.geometry.Mesh, through trimesh): a sphere's mesh gives the analytic
sphere's sites and wall distances to the mesh's faceting; scale, rotation and offset place it; a
mesh that cannot be a body is refused in words."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.simulation.parameters import SimulationError

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("rtree")

from lbgen.geometry import Bodies, Sphere  # noqa: E402
from lbgen.geometry.mesh import Mesh  # noqa: E402

SHAPE = (16, 16, 16)


@pytest.fixture(scope="module")
def sphere_stl(tmp_path_factory):
    path = tmp_path_factory.mktemp("stl") / "ball.stl"
    trimesh.creation.icosphere(subdivisions=4, radius=1.0).export(path)
    return path


def test_an_stl_sphere_matches_the_analytic_sphere(sphere_stl):
    """Radius 1 scaled to 4.6 and moved to (7.3, 7.9, 8.2): the same sites (but those within the
    faceting's depth of the surface) and q within the faceting's error along each link."""
    centre, R = (7.3, 7.9, 8.2), 4.6
    mesh = Bodies(SHAPE, [Mesh(sphere_stl, scale=R, offset=centre, rotate=(10, 20, 30))])
    exact = Bodies(SHAPE, [Sphere(centre, R)])
    pts = np.argwhere(mesh.labels != exact.labels)
    r = np.linalg.norm(pts - np.array(centre), axis=1)
    sag = R * (1 - np.cos(np.deg2rad(4.0)))             # icosphere(4): edges of about 4 degrees
    assert np.all(np.abs(r - R) <= sag + 1e-9)
    assert (mesh.labels > 0).sum() == pytest.approx((exact.labels > 0).sum(), rel=0.02)
    both = (exact.labels == 0) & (mesh.labels == 0)
    sites = np.argwhere(both)
    c = np.array([1, 1, 0])
    end = sites + c
    inside = np.all(end < 16, axis=1)
    sites, end = sites[inside], end[inside]
    cut = (exact.labels[tuple(end.T)] > 0) & (mesh.labels[tuple(end.T)] > 0)
    dirs = np.broadcast_to(c, (cut.sum(), 3))
    qm, qe = mesh.distance(sites[cut], dirs), exact.distance(sites[cut], dirs)
    # along a link the faceting's radial error sag grows where the link grazes the surface
    assert cut.sum() > 20 and np.median(np.abs(qm - qe)) < sag and np.abs(qm - qe).max() < 0.05


def test_rotation_and_offset_place_a_box(tmp_path):
    """A 2.5 x 6.5 x 2.5 box turned 90 degrees about z lies along x: the sites it covers."""
    path = tmp_path / "bar.stl"
    trimesh.creation.box(extents=(2.5, 6.5, 2.5)).export(path)
    b = Bodies(SHAPE, [Mesh(path, offset=(8, 8, 8), rotate=(0, 0, 90))])
    sites = np.argwhere(b.labels > 0)
    assert sites[:, 0].min() == 5 and sites[:, 0].max() == 11 and sites[:, 1].min() == 7 and sites[:, 1].max() == 9


def test_bad_meshes_are_refused_in_words(tmp_path, sphere_stl):
    empty = tmp_path / "empty.stl"
    empty.write_bytes(b"")
    holes = tmp_path / "holes.stl"
    m = trimesh.creation.icosphere(subdivisions=2)
    m.update_faces(np.arange(len(m.faces)) > 3)
    m.export(holes)
    text = tmp_path / "junk.stl"
    text.write_text("solid nothing\nendsolid nothing\n")
    cases = [(lambda: Mesh(tmp_path / "nope.stl"), ["nope.stl: no such file"]),
             (lambda: Mesh(empty), ["the file is empty"]),
             (lambda: Mesh(holes), ["not watertight", "open edges"]),
             (lambda: Mesh(text), ["junk.stl"]),
             (lambda: Mesh(sphere_stl, scale=0), ["scale=0.0", "> 0"]),
             (lambda: Mesh(sphere_stl, offset=(1, 2)), ["offset=(1, 2)", "three finite numbers"]),
             (lambda: Bodies(SHAPE, [Mesh(sphere_stl, scale=2, offset=(40, 8, 8))]), ["outside the box", "x 38..42"])]
    for make, words in cases:
        with pytest.raises(SimulationError) as e:
            make()
        for w in words:
            assert w in str(e.value), (w, str(e.value))
