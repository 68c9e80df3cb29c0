#include "dist_vector.h"

#include <strata/annotate.h>

namespace par {

DistVector::DistVector(const GridTopology& grid, long global_size, int width)
    : grid_(&grid), global_size_(global_size), width_(width), piece_(grid.all().rank()) {
  STRATA_FUNCTION();
  const int q = grid.dim();
  local_.assign(static_cast<size_t>(width_ * (piece_begin(piece_ + 1) - piece_begin(piece_))), 0.0);
  row_begin_ = piece_begin(grid.row() * q);
  row_size_ = piece_begin(grid.row() * q + q) - row_begin_;
  col_begin_ = piece_begin(grid.col() * q);
  col_size_ = piece_begin(grid.col() * q + q) - col_begin_;
  for (int k = 0; k < q; ++k) {
    const int row_piece = grid.row() * q + k, col_piece = grid.col() * q + k;
    row_counts_.push_back(
        static_cast<int>(width_ * (piece_begin(row_piece + 1) - piece_begin(row_piece))));
    col_counts_.push_back(
        static_cast<int>(width_ * (piece_begin(col_piece + 1) - piece_begin(col_piece))));
  }
  // The partner at (col, row) owns piece col*q + row, which is member `row` of this column.
  transposed_count_ = col_counts_[static_cast<size_t>(grid.row())];
  transposed_.resize(static_cast<size_t>(transposed_count_));
}

long DistVector::piece_begin(int piece) const {
  const long pieces = static_cast<long>(grid_->dim()) * grid_->dim();
  return global_size_ * piece / pieces;
}

int DistVector::local_size() const {
  STRATA_FUNCTION();
  return static_cast<int>(local_.size()) / width_;
}

long DistVector::local_to_global(int index) const {
  STRATA_FUNCTION();
  return piece_begin(piece_) + index;
}

void DistVector::expand_row(std::vector<double>& block) const {
  STRATA_FUNCTION();
  block.resize(static_cast<size_t>(width_ * row_size_));
  grid_->row_group().expand(local_.data(), block.data(), row_counts_);
}

void DistVector::expand_col(std::vector<double>& block) const {
  STRATA_FUNCTION();
  block.resize(static_cast<size_t>(width_ * col_size_));
  grid_->transpose(local_.data(), static_cast<int>(local_.size()), transposed_.data(),
                   transposed_count_);
  grid_->col_group().expand(transposed_.data(), block.data(), col_counts_);
}

void DistVector::fold_row(const std::vector<double>& block) {
  STRATA_FUNCTION();
  grid_->row_group().fold(block.data(), local_.data(), row_counts_);
}

void DistVector::fold_col_add(const std::vector<double>& block) {
  STRATA_FUNCTION();
  grid_->col_group().fold(block.data(), transposed_.data(), col_counts_);
  std::vector<double> back(local_.size());
  grid_->transpose(transposed_.data(), transposed_count_, back.data(),
                   static_cast<int>(back.size()));
  for (size_t k = 0; k < back.size(); ++k) {
    local_[k] += back[k];
  }
}

void DistVector::mean(double* out) const {
  STRATA_FUNCTION();
  std::vector<double> sums(static_cast<size_t>(width_), 0.0);
  for (size_t k = 0; k < local_.size(); ++k) {
    sums[k % static_cast<size_t>(width_)] += local_[k];
  }
  grid_->all().sum(sums.data(), width_);
  for (int d = 0; d < width_; ++d) {
    out[d] = sums[static_cast<size_t>(d)] / static_cast<double>(global_size_);
  }
}

double DistVector::norm2() const {
  STRATA_FUNCTION();
  double local_sum = 0;
  for (double value : local_) {
    local_sum += value * value;
  }
  return grid_->all().sum(local_sum);
}

} // namespace par
