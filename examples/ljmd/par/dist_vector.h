/* DistVector: an array of N elements of `width` doubles (3 for positions, velocities and forces),
 * split into P contiguous pieces over the P processes of a GridTopology: member k owns piece k.
 * Grid row r then owns the contiguous row block r (pieces r*q .. r*q+q-1) and the same atom range
 * is column block r, reached through the transpose. The expand and fold operations are the
 * communication steps of Plimpton's force decomposition. */
#ifndef PAR_DIST_VECTOR_H
#define PAR_DIST_VECTOR_H

#include <vector>

#include "topology.h"

namespace par {

class DistVector {
public:
  DistVector(const GridTopology& grid, long global_size, int width);

  long global_size() const { return global_size_; }
  int width() const { return width_; }
  int local_size() const;
  long local_to_global(int index) const;
  double* local() { return local_.data(); }
  const double* local() const { return local_.data(); }

  /* The elements of this process's grid row and grid column: [begin, begin + size). */
  long row_begin() const { return row_begin_; }
  long row_size() const { return row_size_; }
  long col_begin() const { return col_begin_; }
  long col_size() const { return col_size_; }

  /* Every element of the row block (expand within the grid row). */
  void expand_row(std::vector<double>& block) const;
  /* Every element of the column block (transpose, then expand within the grid column). */
  void expand_col(std::vector<double>& block) const;
  /* local = the sum over the grid row of each member's row-block array, own piece only. */
  void fold_row(const std::vector<double>& block);
  /* local += the sum over the grid column of each member's column-block array (fold within the
   * column, then transpose back to the owner). */
  void fold_col_add(const std::vector<double>& block);

  /* The mean element over all N (every process gets it; `out` has width() values). */
  void mean(double* out) const;
  /* The sum of the squares of all N * width values, on every process. */
  double norm2() const;

private:
  long piece_begin(int piece) const;

  const GridTopology* grid_;
  long global_size_;
  int width_;
  int piece_;
  std::vector<double> local_;
  long row_begin_ = 0, row_size_ = 0, col_begin_ = 0, col_size_ = 0;
  std::vector<int> row_counts_, col_counts_; // in doubles, per member of the row / column
  int transposed_count_ = 0;                 // doubles in the partner's piece
  mutable std::vector<double> transposed_;   // scratch for the partner's piece
};

} // namespace par

#endif // PAR_DIST_VECTOR_H
