"""The physics of lbgen: exact, symbolic, and free of any code text.

``catalog`` names what the model offers (velocity sets as shells, wall schemes) and
``operators`` the collision operators' records -- both light, for command lines and run
descriptions.  ``velocity_set`` solves lattices from the Gauss-Hermite conditions;
``hermite`` has the tensor Hermite polynomials; ``collision`` and ``walls`` turn them into
CSE'd assignment lists; ``derived`` holds the cached entry points and the one ``Model``
value.  The names of ``derived`` are reachable from here but loaded (with sympy) only when
first used; the solved sets come from ``lbgen.model.velocity_set`` (a module of that name
cannot also be a lazy attribute here).
"""
from __future__ import annotations

import importlib

from lbgen.model.catalog import (AXES, CHANNEL_WALLS, DEFAULT_SCHEME, DEFAULT_VELOCITY_SET, SCHEMES, SIDES, VELOCITY_SETS,
                                 set_entry)
from lbgen.model.operators import OPERATOR_RECORDS, OPERATORS, Operator, Parameter, ParameterError, operator

#: heavy names (sympy) -> the module that defines them, imported on first use
_LAZY = {
    "AssignmentList": "lbgen.model.assignments",
    "Model": "lbgen.model.derived", "build_model": "lbgen.model.derived", "collide": "lbgen.model.derived",
    "equilibrium_assignments": "lbgen.model.derived", "macroscopic_assignments": "lbgen.model.derived",
    "physical_assignments": "lbgen.model.derived", "physical_fields": "lbgen.model.derived",
    "wall_assignments": "lbgen.model.derived",
}

__all__ = ["AXES", "CHANNEL_WALLS", "DEFAULT_SCHEME", "DEFAULT_VELOCITY_SET", "SCHEMES", "SIDES", "VELOCITY_SETS", "set_entry",
           "OPERATOR_RECORDS", "OPERATORS", "Operator", "Parameter", "ParameterError", "operator", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lbgen.model' has no attribute {name!r}")
