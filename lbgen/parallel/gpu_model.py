"""(Placeholder until the data-movement model lands: the device path where possible.)"""


def choose_halo_path(sim, possible, problem=None):
    if "device" in possible:
        return "device", "no copies"
    return "staged", problem
