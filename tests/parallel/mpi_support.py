"""What the MPI tests share: the venv's mpiexec (a failure under CI, a skip elsewhere) and a
clean environment for launching it."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path


from helpers import require

from lbgen.parallel import mpi


def mpiexec_path() -> str:
    exe = Path(sys.prefix) / "bin" / "mpiexec"
    found = str(exe) if exe.exists() else shutil.which("mpiexec")
    why = None
    if importlib.util.find_spec("mpi4py") is None:
        why = "mpi4py is not installed (pip install '.[mpi]')"
    elif found is None:
        why = "no mpiexec (pip install mpich)"
    require(why is None, why, "MPI")
    return found


def launch_env(**extra) -> dict:
    """This process's environment without any launcher's variables, one passive OpenMP thread."""
    env = {k: v for k, v in os.environ.items() if k not in mpi.MPI_ENV and not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive", LBGEN_TUNED="off", **extra)
    return env
