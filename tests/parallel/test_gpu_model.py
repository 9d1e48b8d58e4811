"""Seed 003's data-movement model of device ranks (lbgen.parallel.gpu_model): what one rank
moves per exchange, counted by hand; the step time per halo path by hand; the chooser."""
import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from lbgen.model.velocity_set import velocity_set
from lbgen.parallel import gpu_model
from lbgen.parallel import model as mpi_model
from lbgen.parallel.gpu_model import DeviceLinks, choose_halo_path, choose_path, halo_traffic, predict_gpu_step

WALLS_Y = (("y", "low"), ("y", "high"))


def test_a_2d_rank_sends_and_copies_its_four_slabs_by_hand():
    # 40 x 40 on 2x2, D2Q37 (Q 37, H 3), k = 1: 20 x 20 owned, 26 x 26 with 3 ghosts per split side;
    # a slab is 3 planes of 26 sites, 37 doubles each
    slab = 3 * 26 * 37 * 8
    t = halo_traffic((40, 40), (2, 2), (0, 0), 1, 37, 3)
    assert (t["owned"], t["computed"]) == (400, 26 * 26)
    assert t["x messages"] == t["y messages"] == 2 and t["x bytes"] == t["y bytes"] == 2 * slab
    assert (t["mpi messages"], t["mpi bytes"]) == (4, 4 * slab)
    assert (t["to host copies"], t["to host bytes"]) == (4, 4 * slab)           # one per sent slab
    assert (t["to device copies"], t["to device bytes"]) == (4, 4 * slab)       # one per received slab
    d = halo_traffic((40, 40), (2, 2), (0, 0), 1, 37, 3, path="device")
    assert (d["mpi messages"], d["mpi bytes"]) == (4, 4 * slab)
    assert d["to host copies"] == d["to host bytes"] == d["to device copies"] == d["to device bytes"] == 0


def test_a_3d_rank_with_depth_2_matches_rank_exchange_and_a_hand_count():
    # 30 x 20 x 24 on 2x1x2, D3Q19 (Q 19, H 1), k = 2: rank (1, 0, 1) owns 15 x 20 x 12; the split axes
    # get 2 ghosts per side: 19 x 20 x 16 computed; an X slab is 2 planes of 20 x 16 sites, a Z slab 2 of 19 x 20
    t = halo_traffic((30, 20, 24), (2, 1, 2), (1, 0, 1), 2, 19, 1)
    assert t["computed"] == 19 * 20 * 16
    assert t["x bytes"] == 2 * (2 * 20 * 16) * 19 * 8 and t["y messages"] == t["y bytes"] == 0
    assert t["z bytes"] == 2 * (2 * 19 * 20) * 19 * 8
    assert t["to host bytes"] == t["to device bytes"] == t["mpi bytes"] == t["x bytes"] + t["z bytes"]
    assert t["to host copies"] == t["to device copies"] == 4
    same = mpi_model.rank_exchange((30, 20, 24), (2, 1, 2), (1, 0, 1), 2, 19, 1)   # no walls: the same slabs
    assert all(t[k] == same[k] for k in same)


def test_walls_on_a_split_axis_send_and_copy_nothing_across_the_wall():
    # 40 x 30 on 1x2 with walls at y low and high, k = 2, D2Q9 (Q 9, H 1): each rank trades one slab
    # (towards the other rank), ghosts only on that side: 40 x (15 + 2); a slab is 2 rows of 40 sites
    slab = 2 * 40 * 9 * 8
    low = halo_traffic((40, 30), (1, 2), (0, 0), 2, 9, 1, wall_faces=WALLS_Y)
    high = halo_traffic((40, 30), (1, 2), (0, 1), 2, 9, 1, wall_faces=WALLS_Y)
    for t, step in ((low, 1), (high, -1)):
        assert t["computed"] == 40 * 17
        assert t["sends"] == [(1, step, slab)]
        assert (t["mpi messages"], t["to host copies"], t["to device copies"]) == (1, 1, 1)
        assert t["to host bytes"] == t["to device bytes"] == slab
    periodic = halo_traffic((40, 30), (1, 2), (0, 0), 2, 9, 1)
    assert periodic["to host copies"] == 2 and periodic["computed"] == 40 * 19


def test_the_step_time_of_each_path_by_hand():
    # 2x1 on one node (p = 2), 64 x 32 D2Q9 (H 1), k = 1: 32 x 32 owned, 34 x 32 computed; a slab is
    # 1 x 32 sites x 9 doubles = 2304 bytes; per rank 2 slabs sent, 2 received
    links = DeviceLinks(to_host_latency=1e-5, to_host_bandwidth=1e10, to_device_latency=2e-5, to_device_bandwidth=5e9,
                        direct_latency=3e-6, direct_bandwidth=2e10, memory_bandwidth=1e12)
    machine = mpi_model.Machine(latency=1e-6, bandwidth=4e9, memory_bandwidth=1.0, ranks_per_node=2)
    slab = 32 * 9 * 8
    staged = predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 1, 9, 8, 1)
    t_calc = 3 * 9 * 8 * 34 * 32 / 1e12                    # the device's bandwidth, not the machine's
    assert staged["t_calc"] == pytest.approx(t_calc)
    assert staged["t_copy"] == pytest.approx(2 * 1e-5 + 2 * slab / 1e10 + 2 * 2e-5 + 2 * slab / 5e9)
    # the node's 4 messages (both ranks, both sides) on one axis: one L_a, bytes over B_a / 2
    assert staged["t_mpi"] == pytest.approx(1e-6 + 4 * slab / 2e9)
    device = predict_gpu_step((64, 32), (2, 1), machine, links, "device", 1, 9, 8, 1)
    assert device["t_copy"] == 0 and device["t_mpi"] == pytest.approx(3e-6 + 4 * slab / 1e10)
    for row in (staged, device):
        assert row["t_step"] == pytest.approx(row["t_copy"] + row["t_mpi"] + t_calc)
        assert row["mlups"] == pytest.approx(64 * 32 / row["t_step"] / 1e6)
    assert staged["to_host_bytes_per_step"] == 2 * slab and device["to_host_bytes_per_step"] == 0
    # two nodes of one rank each: the messages leave the node (L_e, B_e of GPU-direct off node)
    two = dataclasses.replace(machine, ranks_per_node=1)
    off = predict_gpu_step((64, 32), (2, 1), two, links, "device", 1, 9, 8, 1)
    assert off["t_mpi"] == pytest.approx(links.direct_latency_inter + 2 * slab / (links.direct_bandwidth_inter / 2))
    # k = 2: the halo term every 2 steps, on 2 planes
    k2 = predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 2, 9, 8, 1)
    assert k2["t_copy"] == pytest.approx((2 * 1e-5 + 4 * slab / 1e10 + 2 * 2e-5 + 4 * slab / 5e9) / 2)
    # two ranks on one device: its bandwidth and its copies are shared
    shared = predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 1, 9, 8, 1, ranks_per_device=2)
    assert shared["t_calc"] == pytest.approx(2 * t_calc) and shared["t_copy"] == pytest.approx(2 * staged["t_copy"])


def test_the_staged_paths_overlap_hides_the_halo_behind_the_interior_sweep():
    # 2x1, 64 x 32 D2Q9 (H 1), k = 1: rank 0 owns 32 x 32, receives on both X sides: interior 30 x 32,
    # edges 2 x 32; only owned sites are swept
    t = halo_traffic((64, 32), (2, 1), (0, 0), 1, 9, 1)
    assert (t["owned"], t["interior"]) == (32 * 32, 30 * 32)
    machine = mpi_model.Machine(latency=1e-6, bandwidth=4e9, memory_bandwidth=1.0, ranks_per_node=2)

    def calc(n, M):
        return 3 * 9 * 8 * n / M
    for M, hidden in ((1e8, True), (1e13, False)):            # slow device: the halo hides; fast: it shows
        links = DeviceLinks(memory_bandwidth=M)
        serial = predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 1, 9, 8, 1)
        over = predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 1, 9, 8, 1, overlap=True)
        assert over["overlap"] and not serial["overlap"]
        t_int, t_edge = calc(30 * 32, M), calc(2 * 32, M)
        assert over["t_calc"] == pytest.approx(t_int + t_edge)
        assert over["t_step"] == pytest.approx(max(over["t_halo"], t_int) + t_edge)
        assert (over["t_step"] == pytest.approx(over["t_calc"])) == hidden
        assert serial["t_step"] == pytest.approx(serial["t_halo"] + calc(34 * 32, M))
    # no overlap on the device path, with a time block or a Z split
    links = DeviceLinks()
    assert not predict_gpu_step((64, 32), (2, 1), machine, links, "device", 1, 9, 8, 1, overlap=True)["overlap"]
    assert not predict_gpu_step((64, 32), (2, 1), machine, links, "staged", 2, 9, 8, 1, overlap=True)["overlap"]
    assert not predict_gpu_step((8, 8, 16), (1, 1, 2), machine, links, "staged", 1, 19, 8, 1, overlap=True)["overlap"]


def _case(direct_latency, direct_bandwidth):
    links = DeviceLinks(direct_latency=direct_latency, direct_bandwidth=direct_bandwidth)
    machine = mpi_model.Machine(latency=1e-6, bandwidth=5e9, memory_bandwidth=1e11, ranks_per_node=4)
    return dict(shape=(256, 256), grid=(2, 2), machine=machine, links=links, Q=37, halo=3)


def test_the_chooser_takes_the_path_with_the_smaller_predicted_step():
    fast = _case(1e-7, 1e12)                     # GPU-direct far faster than copies + host MPI
    path, why, predicted = choose_path(**fast, device_possible=True)
    assert predicted["device"]["t_step"] < predicted["staged"]["t_step"]
    assert path == "device" and why.startswith("halo path device")
    slow = _case(1e-3, 1e8)                      # GPU-direct slow: the staged copies win
    path, why, predicted = choose_path(**slow, device_possible=True)
    assert predicted["staged"]["t_step"] < predicted["device"]["t_step"]
    assert path == "staged"
    # faster but not possible (the MPI library takes no device buffers): staged, and it says why
    path, why, _ = choose_path(**fast, device_possible=False, device_why_not="MPI is not GPU-aware")
    assert path == "staged" and "MPI is not GPU-aware" in why


@pytest.mark.parametrize("field, value", [("to_host_latency", -1e-6), ("to_host_bandwidth", 0.0),
                                          ("direct_bandwidth", float("nan")), ("memory_bandwidth", float("inf"))])
def test_links_refuse_bad_values_naming_them(field, value):
    with pytest.raises(ValueError, match=f"{field}="):
        DeviceLinks(**{field: value})


def test_bad_paths_and_shapes_are_refused():
    with pytest.raises(ValueError, match="halo path 'gpu'"):
        halo_traffic((40, 40), (2, 1), (0, 0), path="gpu")
    with pytest.raises(ValueError, match="one entry per axis"):
        halo_traffic((40, 40), (2, 1, 1), (0, 0, 0))


def _sim(shares_host_memory, overlap=False):
    """What choose_halo_path reads of a DistributedSimulation (2x2 ranks of 256 x 256 D2Q37 double)."""
    program = SimpleNamespace(shares_host_memory=shares_host_memory)
    inner = SimpleNamespace(regions=[SimpleNamespace(program=program)], vs=velocity_set("d2q37"), dtype=np.float64,
                            walls=None, fused=True)
    sim = SimpleNamespace(shape=(256, 256), dims=(2, 2), time_block=1, wall_faces=(), sim=inner, overlap=overlap)
    sim.overlap_boxes = lambda: ((0, 1, 0, 1), []) if sim.overlap else None     # the one-program case's boxes
    return sim


def test_the_simulations_auto_path_is_the_models_choice_among_the_possible_ones():
    shape, grid, vs = (256, 256), (2, 2), velocity_set("d2q37")
    links = DeviceLinks()
    machine = mpi_model.Machine(mpi_model.DEFAULT_COMM.latency, mpi_model.DEFAULT_COMM.bandwidth,
                                links.memory_bandwidth, 4)
    want, why_want, predicted = choose_path(shape, grid, machine, links, 1, vs.Q, 8, vs.max_hop, device_possible=True)
    path, why = choose_halo_path(_sim(False), possible=("staged", "device"))
    assert (path, why) == (want, why_want)
    path, why = choose_halo_path(_sim(False), possible=("staged",), problem="this MPI library is not CUDA-aware")
    assert path == "staged" and "not CUDA-aware" in why
    # device memory that is host memory: the device path's messages take the host MPI's terms
    host = dataclasses.replace(links, direct_latency=mpi_model.DEFAULT_COMM.latency,
                               direct_bandwidth=mpi_model.DEFAULT_COMM.bandwidth,
                               direct_latency_inter=mpi_model.DEFAULT_COMM.latency,
                               direct_bandwidth_inter=mpi_model.DEFAULT_COMM.bandwidth)
    t = predict_gpu_step(shape, grid, machine, host, "device", 1, vs.Q, 8, vs.max_hop)["t_step"]
    assert f"device {t * 1e3:.4g} ms" in choose_halo_path(_sim(True))[1]
    # the run's staged path overlaps its halo with the interior sweep: the model's staged time says so
    over = choose_path(shape, grid, machine, links, 1, vs.Q, 8, vs.max_hop, device_possible=True, overlap=True)[1]
    assert choose_halo_path(_sim(False, overlap=True))[1] == over != why_want


@pytest.mark.slow
def test_under_mpiexec_each_path_is_measured_beside_the_prediction_and_its_counts_are_the_models(tmp_path):
    from helpers import require
    from test_mpi import mpirun

    from lbgen.backends import available
    require(*available("opencl"), "OpenCL")
    proc = mpirun(2, ["model", "--ranks-grid", "2x1", "--lx", 24, "--ly", 16, "--backend", "opencl", "--steps", 2,
                      "--memory-bandwidth", 1e10, "--max-ranks", 2, "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert set(out["measured"]) == {"staged", "device"}
    # rank 0 of 2x1 on 24 x 16, D2Q37 (H 3): an X slab is 3 columns of 16 rows, 37 doubles; per exchange
    # 2 sent, 2 received; the staged path copies each, the device path none
    slab = 3 * 16 * 37 * 8
    for path, m in out["measured"].items():
        assert m["halo_path"] == path and m["exchanges"] == 2 and m["t_step"] > 0 and m["counts_agree"]
        counted = m["ranks"][0]["counted"]
        assert counted["x bytes"] == 2 * 2 * slab
        copies = 2 * 2 if path == "staged" else 0
        assert counted["to host copies"] == counted["to device copies"] == copies
        assert counted["to host bytes"] == counted["to device bytes"] == copies * slab
    assert out["chosen"] in ("staged", "device")


def test_predicted_for_a_simulation_is_its_cases_prediction_and_cuda_ranks_share_the_devices():
    shape, grid, vs = (256, 256), (2, 2), velocity_set("d2q37")
    links = DeviceLinks()
    machine = mpi_model.Machine(mpi_model.DEFAULT_COMM.latency, mpi_model.DEFAULT_COMM.bandwidth,
                                links.memory_bandwidth, 4)
    sim = _sim(False, overlap=True)
    sim.halo_path = "staged"
    want = predict_gpu_step(shape, grid, machine, links, "staged", 1, vs.Q, 8, vs.max_hop, overlap=True)
    assert gpu_model.predicted_for(sim) == want
    serial = predict_gpu_step(shape, grid, machine, links, "staged", 1, vs.Q, 8, vs.max_hop)
    sim.overlap = False
    assert gpu_model.predicted_for(sim, "staged-serial") == serial
    # four CUDA ranks on one node with 2 GPUs: two ranks to a device
    sim.sim.regions[0].program.rt = SimpleNamespace(device_count=lambda: 2)
    shared = gpu_model.predicted_for(sim, "device")
    assert shared == predict_gpu_step(shape, grid, machine, links, "device", 1, vs.Q, 8, vs.max_hop,
                                      ranks_per_device=2)
