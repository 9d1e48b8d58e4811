"""The tests' oracles: plain NumPy steppers (2D: bulk, walls; 3D: bulk3d) and `lbgen verify`."""

#: the lattices `lbgen verify` checks when none is given (verify.verify, the CLI), per dimension:
#: 2D, LY = 96 takes VL 4..32 with LY/VL >= 3; 3D, LZ = 32 takes VL 4, 8 and 32
VERIFY_LATTICE_2D = (6, 96)
VERIFY_LATTICE_3D = (6, 5, 32)
VERIFY_SHAPES = {2: VERIFY_LATTICE_2D, 3: VERIFY_LATTICE_3D}
#: the (layout, VL) pairs `lbgen verify` checks when none are given (those the lattice takes)
VERIFY_LAYOUTS = (("aos", None), ("soa", None), ("csoa", 8), ("caosoa", 8), ("caosoa", 32))
