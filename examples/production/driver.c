/*
 * A driver in the style of the production D2Q37 code (RRZE-HPC/DisCostiC-Sim,
 * staticanalysis/multifiles_LBM, lbm.c) running on lbgen's emitted kernels, with nothing but
 * the emitted header:
 *
 *   lbgen emit --layout soa --halo-y 16 --walls --collision regularized -o kernels
 *   mpicc -O2 -fopenmp -Ikernels driver.c kernels/lbgen_kernels.c -lm -o driver
 *   mpiexec -n 4 ./driver 64 96 2 2 100 1 fields.bin
 *
 * Arguments: global LX LY, ranks in X and Y (NMPIX * NMPIY = ranks), steps, overlap (1: the
 * bulk runs while the X halo exchange is in flight, then the borders; 0: exchange, then one
 * sweep), output file (rank 0 writes rho, ux, uy, T of the whole lattice, 4 x LX x LY
 * doubles, index (field*LX + x)*LY + y).
 *
 * The layout is the production code's (SoA, p*NX*NY + x*NY + y with HX = 3, HY = 16).  Each
 * step is the production code's: the Y halo first (blocking), then the X halo (its columns
 * include the fresh Y halo rows: the corners) posted non-blocking while the bulk sweeps, then
 * the left, right, bottom and top borders.  Walls only on the ranks that own them: the
 * bottom wall on the ranks of the first Y row of ranks, the top wall on the last.  A
 * Rayleigh-Taylor case: T = 1.05 below, 0.95 above, gravity, walls at those temperatures.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbgen_kernels.h"

#define H LBGEN_HALO   /* the reach of a hop: border width and halo cells read */

static void die(const char *what)
{
    fprintf(stderr, "driver: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* one halo exchange along one axis: our border strips go to the neighbours, their border
   strips fill our halo strips (lbgen_get_region / lbgen_put_region name the cells) */
typedef struct {
    int peer[2];                 /* lower / upper neighbour (MPI_PROC_NULL: a wall) */
    lbgen_region send[2], recv[2];
    double *sbuf[2], *rbuf[2];
    int count[2];
    MPI_Request req[4];
} exchange;

static void exchange_init(exchange *e, int lower, int upper, lbgen_region s0, lbgen_region s1, lbgen_region r0,
                          lbgen_region r1)
{
    e->peer[0] = lower; e->peer[1] = upper;
    e->send[0] = s0; e->send[1] = s1; e->recv[0] = r0; e->recv[1] = r1;
    for (int i = 0; i < 2; ++i) {
        e->count[i] = LBGEN_Q * (e->send[i].x1 - e->send[i].x0) * (e->send[i].y1 - e->send[i].y0);
        e->sbuf[i] = malloc(sizeof(double) * e->count[i]);
        e->rbuf[i] = malloc(sizeof(double) * e->count[i]);
        if (!e->sbuf[i] || !e->rbuf[i]) die("out of memory");
    }
}

static void exchange_start(exchange *e, const lbgen_real *f, int lx, int ly)
{
    for (int i = 0; i < 2; ++i) {
        MPI_Irecv(e->rbuf[i], e->count[i], MPI_DOUBLE, e->peer[i], 1 - i, MPI_COMM_WORLD, &e->req[i]);
        lbgen_get_region(f, e->sbuf[i], lx, ly, &e->send[i]);
        MPI_Isend(e->sbuf[i], e->count[i], MPI_DOUBLE, e->peer[i], i, MPI_COMM_WORLD, &e->req[2 + i]);
    }
}

static void exchange_finish(exchange *e, lbgen_real *f, int lx, int ly)
{
    MPI_Waitall(4, e->req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 2; ++i)
        if (e->peer[i] != MPI_PROC_NULL) lbgen_put_region(f, e->rbuf[i], lx, ly, &e->recv[i]);
}

static lbgen_region box(int x0, int x1, int y0, int y1)
{
    lbgen_region g = {x0, x1, y0, y1};
    return g;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 8) die("usage: driver LX LY NMPIX NMPIY steps overlap output");
    const int GLX = atoi(argv[1]), GLY = atoi(argv[2]), NMX = atoi(argv[3]), NMY = atoi(argv[4]);
    const int steps = atoi(argv[5]), overlap = atoi(argv[6]);
    if (NMX * NMY != size || GLX % NMX || GLY % NMY) die("NMPIX * NMPIY must be the ranks and divide LX, LY");
    const int px = rank % NMX, py = rank / NMX;
    const int lx = GLX / NMX, ly = GLY / NMY, x0 = px * lx, y0 = py * ly;
    char why[256];
    if (lbgen_check(lx, ly, why, sizeof why) != LBGEN_STATUS_OK) die(why);
    if (lx < 2 * H || ly < 2 * H) die("each rank needs at least 2*HALO columns and rows");

    /* the physics of the production code's Rayleigh-Taylor run (lbgen units: a = g / R) */
    const double T_hot = 1.05, T_cold = 0.95, g = 8.33e-5 / 32;
    lbgen_params par = {0};
    par.C1 = 1e-3; par.C2 = 1e-3; par.C3 = 0.5;
    par.ax = 0.0; par.ay = -g / LBGEN_R;
    par.wall_bottom = py == 0;           /* walls only on the ranks that own them */
    par.wall_top = py == NMY - 1;
    par.T_bottom = T_hot; par.T_top = T_cold;

    /* initial state: hot below, cold above (a smooth interface), a small perturbation */
    const size_t n = (size_t)lx * ly;
    double *rho = malloc(n * sizeof *rho), *ux = calloc(n, sizeof *ux), *uy = calloc(n, sizeof *uy),
           *T = malloc(n * sizeof *T);
    lbgen_real *f = lbgen_alloc(lx, ly), *f2 = lbgen_alloc(lx, ly);
    if (!rho || !ux || !uy || !T || !f || !f2) die("out of memory");
    const double pi = 3.14159265358979323846;
    for (int x = 0; x < lx; ++x)
        for (int y = 0; y < ly; ++y) {
            const double X = x0 + x, Y = y0 + y + 0.5;
            const double s = tanh((Y - 0.5 * GLY + 2.0 * cos(2 * pi * X / GLX)) / 3.0);
            T[(size_t)x * ly + y] = 1.0 - 0.05 * s;
            rho[(size_t)x * ly + y] = 1.0 / T[(size_t)x * ly + y];
        }
    lbgen_init_equilibrium(f, lx, ly, rho, ux, uy, T, par.ax, par.ay);

    /* neighbours: periodic in X; in Y walls below rank row 0 and above the last */
    const int left = py * NMX + (px + NMX - 1) % NMX, right = py * NMX + (px + 1) % NMX;
    const int down = py > 0 ? rank - NMX : MPI_PROC_NULL, up = py < NMY - 1 ? rank + NMX : MPI_PROC_NULL;
    exchange ey, ex;
    exchange_init(&ey, down, up, box(0, lx, 0, H), box(0, lx, ly - H, ly), box(0, lx, -H, 0), box(0, lx, ly, ly + H));
    exchange_init(&ex, left, right, box(0, H, -H, ly + H), box(lx - H, lx, -H, ly + H), box(-H, 0, -H, ly + H),
                  box(lx, lx + H, -H, ly + H));
    const lbgen_region all = lbgen_whole(lx, ly), bulk = box(H, lx - H, H, ly - H);
    const lbgen_region borders[4] = {box(0, H, 0, ly), box(lx - H, lx, 0, ly), box(H, lx - H, 0, H),
                                     box(H, lx - H, ly - H, ly)};

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int s = 0; s < steps; ++s) {
        exchange_start(&ey, f, lx, ly);          /* 1. the Y halo (blocking, as the production code) */
        exchange_finish(&ey, f, lx, ly);
        exchange_start(&ex, f, lx, ly);          /* 2. the X halo, corners included: in flight ... */
        if (overlap) {
            lbgen_fused_walls(f, f2, lx, ly, &bulk, &par);   /* ... while the bulk sweeps */
            exchange_finish(&ex, f, lx, ly);
            for (int b = 0; b < 4; ++b) lbgen_fused_walls(f, f2, lx, ly, &borders[b], &par);   /* 3. borders */
        } else {
            exchange_finish(&ex, f, lx, ly);
            lbgen_fused_walls(f, f2, lx, ly, &all, &par);
        }
        lbgen_real *t = f; f = f2; f2 = t;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - t0;

    /* the physical fields of the whole lattice, gathered on rank 0 */
    lbgen_fields(f, lx, ly, rho, ux, uy, T, par.ax, par.ay);
    double *mine = malloc(4 * n * sizeof *mine), *all_f = rank == 0 ? malloc((size_t)4 * size * n * sizeof *all_f) : NULL;
    if (!mine || (rank == 0 && !all_f)) die("out of memory");
    memcpy(mine, rho, n * sizeof *mine); memcpy(mine + n, ux, n * sizeof *mine);
    memcpy(mine + 2 * n, uy, n * sizeof *mine); memcpy(mine + 3 * n, T, n * sizeof *mine);
    MPI_Gather(mine, (int)(4 * n), MPI_DOUBLE, all_f, (int)(4 * n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double *out = malloc((size_t)4 * GLX * GLY * sizeof *out);
        if (!out) die("out of memory");
        for (int r = 0; r < size; ++r)
            for (int q = 0; q < 4; ++q)
                for (int x = 0; x < lx; ++x)
                    for (int y = 0; y < ly; ++y)
                        out[((size_t)q * GLX + (r % NMX) * lx + x) * GLY + (r / NMX) * ly + y] =
                            all_f[(size_t)r * 4 * n + (size_t)q * n + (size_t)x * ly + y];
        FILE *fo = fopen(argv[7], "wb");
        if (!fo || fwrite(out, sizeof *out, (size_t)4 * GLX * GLY, fo) != (size_t)4 * GLX * GLY) die("cannot write");
        fclose(fo);
        printf("%d steps on %d x %d, %d x %d ranks, overlap %d: %.3f s, %.2f MLUPS\n", steps, GLX, GLY, NMX, NMY,
               overlap, seconds, (double)GLX * GLY * steps / seconds / 1e6);
        free(out);
    }
    MPI_Finalize();
    return 0;
}
