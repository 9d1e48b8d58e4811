"""Fixtures of the wall tests (defined in wall_support, shared by this folder's modules)."""
from wall_support import wall_program, wall_reference, wall_state  # noqa: F401
