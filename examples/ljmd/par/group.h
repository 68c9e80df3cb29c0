/* par: a small object-oriented parallel layer over MPI, in the spirit of the OOPS framework the
 * HieraAnalyses paper traced (Seraphim et al.). Three classes, each a level of abstraction:
 *   Group         a set of processes and the collective operations on it (this file)
 *   GridTopology  processes arranged as a q x q grid, with row and column groups (topology.h)
 *   DistVector    an array of N small vectors split over the grid's processes (dist_vector.h)
 * Every method is annotated (strata/annotate.h), so a Strata trace nests the MPI calls inside
 * Group methods, inside DistVector methods, inside the application's phases. */
#ifndef PAR_GROUP_H
#define PAR_GROUP_H

#include <mpi.h>

#include <memory>
#include <vector>

namespace par {

class Group {
public:
  /* All processes of the job. */
  static Group world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return *comm_; }

  /* The members that pass the same color, ranked by key (MPI_Comm_split). */
  Group split(int color, int key) const;

  /* Copies `bytes` bytes from member `root` to every member. */
  void bcast(void* data, int bytes, int root) const;

  /* Element-wise sum over the members, in place, on every member. */
  void sum(double* values, int count) const;
  double sum(double value) const;

  /* Element-wise sum onto member `root` only (the others' values are unchanged). */
  void sum_to(double* values, int count, int root) const;

  /* Sends `send` to member `partner` and receives `recv` from it. */
  void exchange(int partner, const double* send, int send_count, double* recv,
                int recv_count) const;

  /* Expand: member m contributes counts[m] values (`mine`); every member receives all
   * contributions concatenated in member order (`all`). A ring of exchanges, size-1 steps. */
  void expand(const double* mine, double* all, const std::vector<int>& counts) const;

  /* Fold: every member holds a full array of sum(counts) values (`all`); member m receives the
   * sum over the members of its block m (`mine`, counts[m] values). A ring, size-1 steps. */
  void fold(const double* all, double* mine, const std::vector<int>& counts) const;

private:
  explicit Group(std::shared_ptr<MPI_Comm> comm);
  /* One step of a ring: send to the next member, receive from the previous one. */
  void shift(const double* send, int send_count, double* recv, int recv_count, int tag) const;

  std::shared_ptr<MPI_Comm> comm_;
  int rank_ = 0;
  int size_ = 0;
};

} // namespace par

#endif // PAR_GROUP_H
