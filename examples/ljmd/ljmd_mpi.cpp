/* Lennard-Jones molecular dynamics with Plimpton's force decomposition, plain MPI.
 *
 *   mpirun -np P ljmd_mpi [CELLS [STEPS [PRINT_EVERY]]]      (P = q*q)
 *
 * The P ranks form a q x q grid; rank (r, c) owns piece r*q + c of the atoms (positions,
 * velocities, forces) and computes block (r, c) of the force matrix: the atoms of row block r
 * against those of column block c. Each step (S. Plimpton, J. Comp. Phys. 117, 1995, the FD
 * algorithm):
 *   expand   the positions of row block r within the grid row          (MPI_Allgatherv)
 *   transpose  exchange the own piece with rank (c, r)                  (MPI_Sendrecv)
 *   expand   the positions of column block c within the grid column    (MPI_Allgatherv)
 *   compute  the block, each pair once (Newton's third law, checkerboard)
 *   fold     the row forces within the row onto the own piece          (MPI_Reduce_scatter)
 *   fold     the column forces within the column, transpose them back  (MPI_Reduce_scatter,
 *            MPI_Sendrecv) and add them to the own piece.
 * ljmd_oo.cpp is the same algorithm on the object-oriented layer in this directory. */
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "md_common.h"

namespace {

enum { kTagPositions = 1, kTagForces = 2 };

struct Decomposition {
  int q = 0, row = 0, col = 0, rank = 0, ranks = 0;
  int partner = 0; // world rank of (col, row): the owner of the transposed piece
  long atoms = 0;
  long own_begin = 0, own_n = 0;     // the piece this rank owns
  long trans_begin = 0, trans_n = 0; // the transposed piece (owned by the partner)
  long row_begin = 0, row_n = 0;     // atom block of this grid row
  long col_begin = 0, col_n = 0;     // atom block of this grid column
  std::vector<int> row_counts, row_displs, col_counts, col_displs; // in doubles
  MPI_Comm row_comm = MPI_COMM_NULL, col_comm = MPI_COMM_NULL;
};

Decomposition decompose(long atoms, int rank, int q) {
  Decomposition d;
  d.q = q;
  d.rank = rank;
  d.ranks = q * q;
  d.row = rank / q;
  d.col = rank % q;
  d.partner = d.col * q + d.row;
  d.atoms = atoms;
  d.own_begin = md::piece_begin(atoms, d.ranks, rank);
  d.own_n = md::piece_size(atoms, d.ranks, rank);
  d.trans_begin = md::piece_begin(atoms, d.ranks, d.partner);
  d.trans_n = md::piece_size(atoms, d.ranks, d.partner);
  d.row_begin = md::piece_begin(atoms, d.ranks, d.row * q);
  d.row_n = md::piece_begin(atoms, d.ranks, d.row * q + q) - d.row_begin;
  d.col_begin = md::piece_begin(atoms, d.ranks, d.col * q);
  d.col_n = md::piece_begin(atoms, d.ranks, d.col * q + q) - d.col_begin;
  for (int k = 0; k < q; ++k) {
    const int row_piece = d.row * q + k, col_piece = d.col * q + k;
    d.row_counts.push_back(static_cast<int>(3 * md::piece_size(atoms, d.ranks, row_piece)));
    d.row_displs.push_back(
        static_cast<int>(3 * (md::piece_begin(atoms, d.ranks, row_piece) - d.row_begin)));
    d.col_counts.push_back(static_cast<int>(3 * md::piece_size(atoms, d.ranks, col_piece)));
    d.col_displs.push_back(
        static_cast<int>(3 * (md::piece_begin(atoms, d.ranks, col_piece) - d.col_begin)));
  }
  MPI_Comm_split(MPI_COMM_WORLD, d.row, d.col, &d.row_comm);
  MPI_Comm_split(MPI_COMM_WORLD, d.col, d.row, &d.col_comm);
  return d;
}

struct State {
  std::vector<double> x, v, f;  // own piece
  std::vector<double> x_t, f_t; // transposed piece
  std::vector<double> f_back;   // the column forces on the own piece, back from the partner
  std::vector<double> x_row, x_col, f_row, f_col;
};

/* Sends `send` to the partner and receives its message into `recv` (a copy on the diagonal). */
void transpose(const Decomposition& d, const double* send, long send_n, double* recv, long recv_n,
               int tag) {
  if (d.partner == d.rank) {
    std::copy(send, send + 3 * send_n, recv);
    return;
  }
  MPI_Sendrecv(send, static_cast<int>(3 * send_n), MPI_DOUBLE, d.partner, tag, recv,
               static_cast<int>(3 * recv_n), MPI_DOUBLE, d.partner, tag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
}

/* One force evaluation; returns this rank's share of the potential energy. */
double compute_forces(const md::Params& p, const Decomposition& d, State& s) {
  MPI_Allgatherv(s.x.data(), static_cast<int>(3 * d.own_n), MPI_DOUBLE, s.x_row.data(),
                 d.row_counts.data(), d.row_displs.data(), MPI_DOUBLE, d.row_comm);
  transpose(d, s.x.data(), d.own_n, s.x_t.data(), d.trans_n, kTagPositions);
  MPI_Allgatherv(s.x_t.data(), static_cast<int>(3 * d.trans_n), MPI_DOUBLE, s.x_col.data(),
                 d.col_counts.data(), d.col_displs.data(), MPI_DOUBLE, d.col_comm);
  const double energy = md::lj_block(p, d.row_begin, d.row_n, s.x_row.data(), d.col_begin, d.col_n,
                                     s.x_col.data(), s.f_row.data(), s.f_col.data());
  MPI_Reduce_scatter(s.f_row.data(), s.f.data(), d.row_counts.data(), MPI_DOUBLE, MPI_SUM,
                     d.row_comm);
  MPI_Reduce_scatter(s.f_col.data(), s.f_t.data(), d.col_counts.data(), MPI_DOUBLE, MPI_SUM,
                     d.col_comm);
  // The column fold leaves the forces on the transposed piece here; its owner is the partner.
  transpose(d, s.f_t.data(), d.trans_n, s.f_back.data(), d.own_n, kTagForces);
  for (long k = 0; k < 3 * d.own_n; ++k) {
    s.f[k] += s.f_back[k];
  }
  return energy;
}

void initial_state(const md::Params& p, const Decomposition& d, State& s) {
  s.x.resize(3 * d.own_n);
  s.v.resize(3 * d.own_n);
  s.f.resize(3 * d.own_n);
  s.x_t.resize(3 * d.trans_n);
  s.f_back.resize(3 * d.own_n);
  s.f_t.resize(3 * d.trans_n);
  s.x_row.resize(3 * d.row_n);
  s.f_row.resize(3 * d.row_n);
  s.x_col.resize(3 * d.col_n);
  s.f_col.resize(3 * d.col_n);
  double momentum[4] = {0, 0, 0, 0}; // sum of v (3) and the atom count
  for (long a = 0; a < d.own_n; ++a) {
    md::lattice_position(p, d.own_begin + a, &s.x[3 * a]);
    for (int k = 0; k < 3; ++k) {
      s.v[3 * a + k] = md::raw_velocity(d.own_begin + a, k);
      momentum[k] += s.v[3 * a + k];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, momentum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (long a = 0; a < d.own_n; ++a) {
    for (int k = 0; k < 3; ++k) {
      s.v[3 * a + k] -= momentum[k] / static_cast<double>(d.atoms);
    }
  }
  double kinetic = md::kinetic_energy(d.own_n, s.v.data());
  MPI_Allreduce(MPI_IN_PLACE, &kinetic, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double scale = std::sqrt(1.5 * static_cast<double>(d.atoms - 1) * p.temperature / kinetic);
  for (double& value : s.v) {
    value *= scale;
  }
}

void report(const md::Params& p, const Decomposition& d, const State& s, int step,
            double potential) {
  double sums[2] = {md::kinetic_energy(d.own_n, s.v.data()), potential};
  MPI_Reduce(d.rank == 0 ? MPI_IN_PLACE : sums, sums, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (d.rank == 0) {
    md::print_energies(p, step, sums[0], sums[1]);
  }
}

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int q = md::grid_dimension(ranks);
  if (q == 0) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "ljmd: error: force decomposition needs a square number of ranks "
                   "(a q x q grid), got %d\n",
                   ranks);
    }
    MPI_Finalize();
    return 2;
  }
  // Rank 0 reads the command line and broadcasts it; `ok` travels with it.
  struct {
    md::Params params;
    int ok;
  } setup{};
  std::string error;
  if (rank == 0) {
    setup.ok = md::parse_options(argc, argv, setup.params, error) ? 1 : 0;
    if (setup.ok && md::atom_count(setup.params) < ranks) {
      error = "fewer atoms than ranks";
      setup.ok = 0;
    }
    if (!setup.ok) {
      std::fprintf(stderr, "ljmd: error: %s\n%s", error.c_str(), md::usage());
    }
  }
  MPI_Bcast(&setup, sizeof setup, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (!setup.ok) {
    MPI_Finalize();
    return 2;
  }
  const md::Params& p = setup.params;
  Decomposition d = decompose(md::atom_count(p), rank, q);
  State s;
  initial_state(p, d, s);
  if (rank == 0) {
    md::print_header("plain MPI", p, ranks, q);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  double potential = compute_forces(p, d, s);
  report(p, d, s, 0, potential);
  for (int step = 1; step <= p.steps; ++step) {
    md::kick_drift(p, d.own_n, s.x.data(), s.v.data(), s.f.data());
    potential = compute_forces(p, d, s);
    md::kick(p, d.own_n, s.v.data(), s.f.data());
    if (step % p.print_every == 0 || step == p.steps) {
      report(p, d, s, step, potential);
    }
  }
  double elapsed = MPI_Wtime() - start;
  double checksum = md::velocity_checksum(d.own_begin, d.own_n, s.v.data());
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &checksum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0,
             MPI_COMM_WORLD);
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &elapsed, &elapsed, 1, MPI_DOUBLE, MPI_MAX, 0,
             MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("checksum %.12e\ntime %.6f s\n", checksum, elapsed);
  }
  MPI_Comm_free(&d.row_comm);
  MPI_Comm_free(&d.col_comm);
  MPI_Finalize();
  return 0;
}
