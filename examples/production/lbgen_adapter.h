/*
 * lbgen_adapter.h: the production D2Q37 code (RRZE-HPC/DisCostiC-Sim,
 * staticanalysis/multifiles_LBM) on lbgen's emitted kernels, its own call sites unchanged.
 *
 * Emit the kernels with the production code's choices (its layout, its bc, its operator):
 *
 *   lbgen emit --layout soa --halo-y 16 --walls --wall-scheme reference --collision regularized -o kernels
 *
 * In lbm.c include this file instead of propagate_kernel.h, bc_kernel.h and collide_kernel.h,
 * and call lb_setup() once after the MPI decomposition (mpi_rank_y, n_mpi_y set).  The rest of
 * the code stays as it is: its layout is lbgen's soa with --halo-y 16 (p*NX*NY + x*NY + y,
 * HX = 3, HY = 16), so its allocation, AoStoSoA / SoAtoAoS, pack / unpack, MPI exchange,
 * initial state and mass check read and write the same buffers.
 *
 * The adapter lines are the lines below that are not comments or the include guard;
 * docs/embedding.md says what each maps and why, and tests/system/test_production_adapter.py
 * counts them and runs the production code's step on them against lbgen's own runner.
 */
#ifndef LBGEN_ADAPTER_H
#define LBGEN_ADAPTER_H
#include "lbgen_kernels.h"
static lbgen_params lb_par;
#define LB_REGION(x0, x1, y0, y1) (&(lbgen_region){(x0) - HX, (x1) - HX, (y0) - HY, (y1) - HY})
#define PROPAGATECOLLIDE(nxt, prv, x0, x1, y0, y1, yoff, q) lbgen_fused((prv), (nxt), LSIZEX, LSIZEY, LB_REGION(x0, x1, y0, y1), &lb_par)
#define COLLIDE(nxt, prv, x0, x1, y0, y1, yoff, q) lbgen_collide((prv), (nxt), LSIZEX, LSIZEY, LB_REGION(x0, x1, y0, y1), &lb_par)
#define propagate(nxt, prv, x0, x1, y0, y1, q) lbgen_propagate((prv), (nxt), LSIZEX, LSIZEY, LB_REGION(x0, x1, y0, y1), &lb_par)
#define bcBottom(nxt, prv, param, x0, x1, q) lbgen_bc((prv), (nxt), LSIZEX, LSIZEY, LB_REGION(x0, x1, HY, HY + hy + 1), &lb_par)
#define bcTop(nxt, prv, param, x0, x1, q) lbgen_bc((prv), (nxt), LSIZEX, LSIZEY, LB_REGION(x0, x1, HY + LSIZEY - hy - 1, HY + LSIZEY), &lb_par)
static void lb_setup(void) {
    lb_par.C1 = CONST1; lb_par.C2 = CONST2; lb_par.C3 = CONST3;
    lb_par.ay = GRAVITY * DELTAT;
    lb_par.T_bottom = TEMPWALLDOWN; lb_par.T_top = TEMPWALLUP;
#ifdef ADIABATIC
    lb_par.adiabatic_bottom = lb_par.adiabatic_top = 1;
#endif
    lb_par.wall_bottom = mpi_rank_y == 0; lb_par.wall_top = mpi_rank_y == n_mpi_y - 1;
}
#endif
