/* The physics both versions of the LJ example share: options, the FCC start, the Lennard-Jones
 * force on one block of the force matrix, and the atom-to-piece map of the force decomposition.
 * Only the parallel structure differs between ljmd_mpi.cpp (plain MPI) and ljmd_oo.cpp (the
 * object-oriented layer), so both must print the same energies.
 *
 * Reduced LJ units (sigma = epsilon = mass = 1). The potential is cut at r_c = 2.5 and shifted so
 * that it is zero there, which keeps the total energy continuous when a pair crosses the cut. */
#ifndef LJMD_MD_COMMON_H
#define LJMD_MD_COMMON_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace md {

struct Params {
  int cells = 5;        // FCC unit cells per box edge: 4 * cells^3 atoms
  int steps = 100;      // velocity-Verlet steps
  int print_every = 10; // energies every this many steps (and at the last one)
  double dt = 0.005;
  double density = 0.8442;
  double temperature = 1.0;
  double cutoff = 2.5;
};

inline long atom_count(const Params& p) {
  return 4L * p.cells * p.cells * p.cells;
}
inline double box_length(const Params& p) {
  return std::cbrt(atom_count(p) / p.density);
}

inline const char* usage() {
  return "usage: ljmd [CELLS [STEPS [PRINT_EVERY]]]\n"
         "  CELLS        FCC unit cells per box edge, 4*CELLS^3 atoms (default 5, at least 3)\n"
         "  STEPS        velocity-Verlet steps (default 100)\n"
         "  PRINT_EVERY  print energies every this many steps (default 10)\n"
         "  the number of ranks must be a square (force decomposition on a q x q grid)\n";
}

inline bool parse_positive(const char* text, const char* what, int& out, std::string& error) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0 || value > 1000000) {
    error = std::string(what) + " must be a positive integer, got '" + text + "'";
    return false;
  }
  out = static_cast<int>(value);
  return true;
}

/* Reads the command line; on a bad argument returns false with one sentence in `error`. */
inline bool parse_options(int argc, char** argv, Params& p, std::string& error) {
  if (argc > 4) {
    error = "too many arguments";
    return false;
  }
  if (argc > 1 && !parse_positive(argv[1], "CELLS", p.cells, error)) {
    return false;
  }
  if (argc > 2 && !parse_positive(argv[2], "STEPS", p.steps, error)) {
    return false;
  }
  if (argc > 3 && !parse_positive(argv[3], "PRINT_EVERY", p.print_every, error)) {
    return false;
  }
  if (p.cells > 40) {
    error = "CELLS must be at most 40 (256000 atoms)";
    return false;
  }
  if (box_length(p) < 2 * p.cutoff) {
    error = "CELLS must be at least 3: the box must be twice the cut-off for the minimum image";
    return false;
  }
  return true;
}

/* The integer square root of `ranks` when it is a perfect square, else 0. */
inline int grid_dimension(int ranks) {
  int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(ranks))));
  return q * q == ranks ? q : 0;
}

/* Atoms are numbered 0..N-1 and cut into P = q*q contiguous pieces; grid rank k = row*q + col
 * owns piece k. Row r of the grid then holds pieces r*q .. r*q+q-1, which is the contiguous
 * atom block r; the transposed pieces c*q + r' (r' = 0..q-1) make atom block c. */
inline long piece_begin(long atoms, int pieces, int piece) {
  return atoms * piece / pieces;
}
inline long piece_size(long atoms, int pieces, int piece) {
  return piece_begin(atoms, pieces, piece + 1) - piece_begin(atoms, pieces, piece);
}

/* Position of atom `gid` on the FCC lattice: 4 atoms per cubic cell. */
inline void lattice_position(const Params& p, long gid, double* x) {
  static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  const double a = box_length(p) / p.cells;
  const long cell = gid / 4;
  const int b = static_cast<int>(gid % 4);
  const long iz = cell % p.cells;
  const long iy = (cell / p.cells) % p.cells;
  const long ix = cell / (static_cast<long>(p.cells) * p.cells);
  x[0] = (static_cast<double>(ix) + basis[b][0] + 0.25) * a;
  x[1] = (static_cast<double>(iy) + basis[b][1] + 0.25) * a;
  x[2] = (static_cast<double>(iz) + basis[b][2] + 0.25) * a;
}

/* A velocity component in [-0.5, 0.5) from the atom's number alone (splitmix64), so the start
 * does not depend on the number of ranks. */
inline double raw_velocity(long gid, int dim) {
  uint64_t z = static_cast<uint64_t>(gid) * 3 + static_cast<uint64_t>(dim) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0) - 0.5;
}

/* Whether block (i, j) of the force matrix computes the pair (i, j): each unordered pair once
 * over the whole matrix, balanced across the blocks (Plimpton's checkerboard of Newton's third
 * law: below the diagonal on odd i + j, above it on even). */
inline bool owns_pair(long i, long j) {
  if (i == j) {
    return false;
  }
  return (i < j) == (((i + j) & 1) == 0);
}

/* Forces of one block: atoms [row_begin, row_begin + row_n) (positions xr) against atoms
 * [col_begin, col_begin + col_n) (positions xc). Adds the force on each row atom to fr and the
 * reaction on each column atom to fc (both zeroed here); returns the block's potential energy. */
inline double lj_block(const Params& p, long row_begin, long row_n, const double* xr,
                       long col_begin, long col_n, const double* xc, double* fr, double* fc) {
  const double box = box_length(p);
  const double rc2 = p.cutoff * p.cutoff;
  const double inv_rc6 = 1.0 / (rc2 * rc2 * rc2);
  const double shift = 4.0 * inv_rc6 * (inv_rc6 - 1.0);
  std::memset(fr, 0, sizeof(double) * 3 * static_cast<size_t>(row_n));
  std::memset(fc, 0, sizeof(double) * 3 * static_cast<size_t>(col_n));
  double energy = 0;
  for (long a = 0; a < row_n; ++a) {
    const long i = row_begin + a;
    for (long b = 0; b < col_n; ++b) {
      const long j = col_begin + b;
      if (!owns_pair(i, j)) {
        continue;
      }
      double d[3];
      for (int k = 0; k < 3; ++k) {
        d[k] = xr[3 * a + k] - xc[3 * b + k];
        d[k] -= box * std::nearbyint(d[k] / box);
      }
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 >= rc2) {
        continue;
      }
      const double inv_r2 = 1.0 / r2;
      const double inv_r6 = inv_r2 * inv_r2 * inv_r2;
      const double f_over_r = 48.0 * inv_r6 * (inv_r6 - 0.5) * inv_r2;
      energy += 4.0 * inv_r6 * (inv_r6 - 1.0) - shift;
      for (int k = 0; k < 3; ++k) {
        fr[3 * a + k] += f_over_r * d[k];
        fc[3 * b + k] -= f_over_r * d[k];
      }
    }
  }
  return energy;
}

/* The first half of a velocity-Verlet step on n atoms: half kick, drift, wrap into the box. */
inline void kick_drift(const Params& p, long n, double* x, double* v, const double* f) {
  const double box = box_length(p);
  for (long k = 0; k < 3 * n; ++k) {
    v[k] += 0.5 * p.dt * f[k];
    x[k] += p.dt * v[k];
    x[k] -= box * std::floor(x[k] / box);
  }
}

/* The second half: half kick with the new forces. */
inline void kick(const Params& p, long n, double* v, const double* f) {
  for (long k = 0; k < 3 * n; ++k) {
    v[k] += 0.5 * p.dt * f[k];
  }
}

inline double kinetic_energy(long n, const double* v) {
  double sum = 0;
  for (long k = 0; k < 3 * n; ++k) {
    sum += 0.5 * v[k] * v[k];
  }
  return sum;
}

/* A weighted sum of the final velocities: sensitive to which atom has which velocity. */
inline double velocity_checksum(long first_gid, long n, const double* v) {
  double sum = 0;
  for (long a = 0; a < n; ++a) {
    const double w = static_cast<double>((first_gid + a) % 7 + 1);
    sum += w * (v[3 * a] - 2 * v[3 * a + 1] + 3 * v[3 * a + 2]);
  }
  return sum;
}

inline void print_header(const char* version, const Params& p, int ranks, int q) {
  std::printf("ljmd (%s): %ld atoms, box %.6f, %d ranks on a %d x %d grid, %d steps, dt %g\n",
              version, atom_count(p), box_length(p), ranks, q, q, p.steps, p.dt);
  std::printf("%8s %18s %18s %18s\n", "step", "total/N", "kinetic/N", "potential/N");
}

inline void print_energies(const Params& p, int step, double kinetic, double potential) {
  const double n = static_cast<double>(atom_count(p));
  std::printf("%8d %18.12f %18.12f %18.12f\n", step, (kinetic + potential) / n, kinetic / n,
              potential / n);
}

} // namespace md

#endif // LJMD_MD_COMMON_H
