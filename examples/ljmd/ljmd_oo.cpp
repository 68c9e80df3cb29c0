/* Lennard-Jones molecular dynamics with Plimpton's force decomposition, written on the small
 * object-oriented layer in par/ (GridTopology, Group, DistVector) the way the HieraAnalyses
 * paper's OOPS version was written on OOPS. Same algorithm and same output as ljmd_mpi.cpp:
 *
 *   mpirun -np P ljmd_oo [CELLS [STEPS [PRINT_EVERY]]]       (P = q*q)
 *
 * The application's phases are Strata regions, so under `strata run --tools trace` the trace
 * has four levels: phase (md::...) -> DistVector method -> Group method -> MPI call. */
#include <mpi.h>

#include <strata/annotate.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "md_common.h"
#include "par/dist_vector.h"

namespace {

struct System {
  par::DistVector x, v, f;
  std::vector<double> x_row, x_col, f_row, f_col; // the blocks of the force matrix
};

/* expand, compute the block, fold: returns this process's share of the potential energy. */
double compute_forces(const md::Params& p, System& s) {
  STRATA_REGION("md::forces");
  s.x.expand_row(s.x_row);
  s.x.expand_col(s.x_col);
  s.f_row.resize(s.x_row.size());
  s.f_col.resize(s.x_col.size());
  const double energy =
      md::lj_block(p, s.x.row_begin(), s.x.row_size(), s.x_row.data(), s.x.col_begin(),
                   s.x.col_size(), s.x_col.data(), s.f_row.data(), s.f_col.data());
  s.f.fold_row(s.f_row);
  s.f.fold_col_add(s.f_col);
  return energy;
}

void initial_state(const md::Params& p, System& s) {
  STRATA_REGION("md::setup");
  const int n = s.x.local_size();
  for (int a = 0; a < n; ++a) {
    const long gid = s.x.local_to_global(a);
    md::lattice_position(p, gid, s.x.local() + 3 * a);
    for (int k = 0; k < 3; ++k) {
      s.v.local()[3 * a + k] = md::raw_velocity(gid, k);
    }
  }
  double mean[3];
  s.v.mean(mean);
  for (int a = 0; a < n; ++a) {
    for (int k = 0; k < 3; ++k) {
      s.v.local()[3 * a + k] -= mean[k];
    }
  }
  const double kinetic = 0.5 * s.v.norm2();
  const double scale =
      std::sqrt(1.5 * static_cast<double>(s.v.global_size() - 1) * p.temperature / kinetic);
  for (int k = 0; k < 3 * n; ++k) {
    s.v.local()[k] *= scale;
  }
}

void report(const md::Params& p, const par::GridTopology& grid, const System& s, int step,
            double potential) {
  STRATA_REGION("md::energies");
  double sums[2] = {md::kinetic_energy(s.v.local_size(), s.v.local()), potential};
  grid.all().sum_to(sums, 2, 0);
  if (grid.all().rank() == 0) {
    md::print_energies(p, step, sums[0], sums[1]);
  }
}

int run(const par::Group& world, const md::Params& p) {
  const par::GridTopology grid(world);
  System s{par::DistVector(grid, md::atom_count(p), 3),
           par::DistVector(grid, md::atom_count(p), 3),
           par::DistVector(grid, md::atom_count(p), 3),
           {},
           {},
           {},
           {}};
  initial_state(p, s);
  if (world.rank() == 0) {
    md::print_header("object-oriented layer", p, world.size(), grid.dim());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  double potential = compute_forces(p, s);
  report(p, grid, s, 0, potential);
  for (int step = 1; step <= p.steps; ++step) {
    {
      STRATA_REGION("md::integrate");
      md::kick_drift(p, s.x.local_size(), s.x.local(), s.v.local(), s.f.local());
    }
    potential = compute_forces(p, s);
    {
      STRATA_REGION("md::integrate");
      md::kick(p, s.v.local_size(), s.v.local(), s.f.local());
    }
    if (step % p.print_every == 0 || step == p.steps) {
      report(p, grid, s, step, potential);
    }
  }
  double elapsed = MPI_Wtime() - start;
  STRATA_REGION("md::finish");
  long first = s.v.local_size() > 0 ? s.v.local_to_global(0) : 0;
  double checksum = md::velocity_checksum(first, s.v.local_size(), s.v.local());
  world.sum_to(&checksum, 1, 0);
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (world.rank() == 0) {
    std::printf("checksum %.12e\ntime %.6f s\n", checksum, elapsed);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    const par::Group world = par::Group::world();
    if (md::grid_dimension(world.size()) == 0) {
      if (world.rank() == 0) {
        std::fprintf(stderr, "ljmd: error: %s\n", par::NotSquare(world.size()).what());
      }
      status = 2;
    } else {
      // Rank 0 reads the command line and broadcasts it; `ok` travels with it.
      struct {
        md::Params params;
        int ok;
      } setup{};
      if (world.rank() == 0) {
        std::string error;
        setup.ok = md::parse_options(argc, argv, setup.params, error) ? 1 : 0;
        if (setup.ok && md::atom_count(setup.params) < world.size()) {
          error = "fewer atoms than ranks";
          setup.ok = 0;
        }
        if (!setup.ok) {
          std::fprintf(stderr, "ljmd: error: %s\n%s", error.c_str(), md::usage());
        }
      }
      world.bcast(&setup, sizeof setup, 0);
      status = setup.ok ? run(world, setup.params) : 2;
    }
  }
  MPI_Finalize();
  return status;
}
