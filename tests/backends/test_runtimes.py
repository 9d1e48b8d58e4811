"""The runtime interface: one backend-name list, and no option silently swallowed."""
from __future__ import annotations

import importlib

import pytest

from lbgen import backends
from lbgen.codegen.render import generate
from lbgen.codegen.spec import BACKENDS, KernelSpec


@pytest.mark.parametrize("name", sorted(backends.RUNTIMES))
def test_a_runtime_refuses_an_option_it_does_not_know(name):
    """`compile(..., flagz=...)` is a TypeError naming the option, before anything is built
    (before: every runtime took **_ignored and a typo did nothing)."""
    module = importlib.import_module(f"lbgen.backends.{backends.RUNTIMES[name][0]}")
    source = generate(KernelSpec(backend=backends.spec_backend(name), layout="soa"))
    with pytest.raises(TypeError, match="flagz"):
        module.compile(source, 8, 32, flagz=("-O0",))


def test_every_runtime_runs_a_spec_backend_and_every_spec_backend_has_a_runtime():
    assert {spec for _, spec in backends.RUNTIMES.values()} == set(BACKENDS)
