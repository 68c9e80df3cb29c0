// The MPI library's own performance variables (MPI_T) over the ranks, without MPI: what one
// rank read becomes one value per variable (its elements folded), the values of all ranks are
// combined in one packed buffer by a commutative operation (sums, and minima and maxima with
// their rank, the lower rank on ties), and rank 0 turns the result into the record's "mpi_t"
// section. The profile module (module/mpi_t.cpp) does the MPI_T calls and wraps
// `combine_packed` in an MPI_Op.
#pragma once

#include "profiler/record/mpi_t_record.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler::mpi_t {

// How a value's 64 bits are read: the variable's datatype decides.
enum class value_kind : uint64_t { unsigned_integer = 0, signed_integer = 1, floating = 2 };

// How a rank's elements (one per peer of a communicator, say) become the rank's value.
enum class fold_rule { sum, highest, lowest };

struct pvar_description {
  int index = 0; // the library's index
  std::string name, description, var_class, binding, datatype;
  value_kind kind = value_kind::unsigned_integer;
  fold_rule fold = fold_rule::sum;
  uint64_t elements = 0;
  // Counted from a start (counters, timers, aggregates): MPI_Pcontrol(2) takes a baseline that
  // later readings subtract. The others (sizes, levels, watermarks, ...) are a state.
  bool accumulates = false;
  std::string unread; // why this rank cannot read it; empty when it can
};

// One rank's value of one variable, as 64 bits of its kind; `read` false when not read.
struct rank_value {
  bool read = false;
  uint64_t bits = 0;
};

// The class name of MPI_T_PVAR_CLASS_STATE + `offset` (the order of the MPI standard), whether
// such a variable accumulates and how its elements fold.
std::string class_name(int offset);
bool class_accumulates(int offset);
fold_rule class_fold(int offset);

uint64_t bits_of(double value);
uint64_t bits_of(int64_t value);
double double_of(uint64_t bits);

// A rank's elements (each as 64 bits of `kind`) folded into one value.
uint64_t fold(value_kind kind, fold_rule rule, const uint64_t* elements, size_t count);

// `now` less `baseline`, of one kind (MPI_Pcontrol(2) resets what accumulates).
uint64_t since(value_kind kind, uint64_t now, uint64_t baseline);

// Names, classes and kinds in order: ranks that expose different variables are told apart
// before their buffers are combined.
uint64_t layout_fingerprint(const std::vector<pvar_description>& pvars);

// What the ranks agree on before combining their variables, carried in 32-bit words reduced
// with MPI_MAX in the figures' own MPI_Allreduce (one collective fewer per reading): the most
// variables any rank lists and, over the ranks that list some, the largest fingerprint and the
// complement of the smallest, in 32-bit halves (the fingerprints agree exactly when each half's
// largest is the complement of its smallest complement).
inline constexpr size_t agreement_words = 5;
using agreement_layout = std::array<uint32_t, agreement_words>;
agreement_layout agreement_of_rank(size_t pvar_count, uint64_t fingerprint);
struct agreement {
  uint64_t most_pvars = 0;
  bool same_variables = true; // every rank that lists variables lists the same
};
agreement agreement_over_ranks(const agreement_layout& reduced);

// The buffer: word 0 the variable count, then per variable: kind, ranks, sum, min, min_rank,
// max, max_rank. Every rank packs the same count.
inline constexpr size_t words_per_pvar = 7;
size_t packed_words(uint64_t pvar_count);
std::vector<uint64_t> pack_rank(const std::vector<pvar_description>& pvars,
                                const std::vector<rank_value>& values, uint64_t rank);

// `inout` becomes the combination of `in` and `inout` (both whole buffers of the same count).
void combine_packed(const uint64_t* in, uint64_t* inout);

// Rank 0: the section's variables from the combined buffer and rank 0's descriptions.
std::vector<record::mpi_t_pvar> unpack_pvars(const std::vector<pvar_description>& pvars,
                                             const std::vector<uint64_t>& combined);

// The control variables of this MPI an environment variable sets, for `cvars_set` ("openmpi":
// OMPI_MCA_NAME sets NAME; "mpich": a variable is named as the environment variable that sets it,
// and MPICH_X also sets MPIR_CVAR_X). Asked once per environment variable, not once per control
// variable: Open MPI lists about 1,300.
std::vector<std::string> cvars_set_by(const std::string& flavor, std::string_view variable);

} // namespace strata::profiler::mpi_t
