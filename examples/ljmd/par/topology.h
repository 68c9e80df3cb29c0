/* GridTopology: the processes of a group as a q x q grid (row-major: member k is at row k / q,
 * column k % q), with a group per grid row and per grid column, and the transpose partner. */
#ifndef PAR_TOPOLOGY_H
#define PAR_TOPOLOGY_H

#include <stdexcept>
#include <string>

#include "group.h"

namespace par {

/* Thrown when the group's size is not a perfect square. */
class NotSquare : public std::invalid_argument {
public:
  explicit NotSquare(int size)
      : std::invalid_argument("force decomposition needs a square number of ranks (a q x q grid), "
                              "got " +
                              std::to_string(size)) {}
};

class GridTopology {
public:
  explicit GridTopology(const Group& all);

  int dim() const { return dim_; }
  int row() const { return row_; }
  int col() const { return col_; }
  const Group& all() const { return all_; }
  const Group& row_group() const { return row_group_; } // member index = column
  const Group& col_group() const { return col_group_; } // member index = row

  /* The member of all() at (row, col). */
  int member(int row, int col) const { return row * dim_ + col; }

  /* Sends `send` to the process at (col, row) and receives its message (the diagonal copies). */
  void transpose(const double* send, int send_count, double* recv, int recv_count) const;

private:
  Group all_;
  int dim_ = 0;
  int row_ = 0;
  int col_ = 0;
  Group row_group_;
  Group col_group_;
};

} // namespace par

#endif // PAR_TOPOLOGY_H
