#include "profiler/mpi_t_totals.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string_view>

namespace strata::profiler::mpi_t {

namespace {

// The classes in the order of the MPI standard (MPI_T_PVAR_CLASS_STATE first).
constexpr std::array<std::string_view, 10> class_names = {
    "state",        "level",   "size",      "percentage", "highwatermark",
    "lowwatermark", "counter", "aggregate", "timer",      "generic"};

// Less-than of two values of one kind.
bool less(value_kind kind, uint64_t a, uint64_t b) {
  switch (kind) {
  case value_kind::signed_integer:
    return static_cast<int64_t>(a) < static_cast<int64_t>(b);
  case value_kind::floating:
    return double_of(a) < double_of(b);
  case value_kind::unsigned_integer:
    break;
  }
  return a < b;
}

uint64_t add(value_kind kind, uint64_t a, uint64_t b) {
  if (kind == value_kind::floating)
    return bits_of(double_of(a) + double_of(b));
  return a + b; // two's complement: the same bits for signed and unsigned
}

struct packed_pvar {
  uint64_t kind, ranks, sum, min, min_rank, max, max_rank;
};
static_assert(sizeof(packed_pvar) == words_per_pvar * sizeof(uint64_t));

// The i-th variable of a buffer (copied: the buffer is 64-bit words).
packed_pvar packed_at(const uint64_t* buffer, size_t i) {
  packed_pvar p{};
  std::memcpy(&p, buffer + 1 + i * words_per_pvar, sizeof(p));
  return p;
}
void store_at(uint64_t* buffer, size_t i, const packed_pvar& p) {
  std::memcpy(buffer + 1 + i * words_per_pvar, &p, sizeof(p));
}

} // namespace

std::string class_name(int offset) {
  if (offset < 0 || offset >= static_cast<int>(class_names.size()))
    return "class " + std::to_string(offset);
  return std::string(class_names[static_cast<size_t>(offset)]);
}

bool class_accumulates(int offset) {
  const std::string name = class_name(offset);
  return name == "counter" || name == "aggregate" || name == "timer";
}

fold_rule class_fold(int offset) {
  const std::string name = class_name(offset);
  if (name == "lowwatermark")
    return fold_rule::lowest;
  if (name == "highwatermark" || name == "state" || name == "percentage")
    return fold_rule::highest;
  return fold_rule::sum;
}

uint64_t bits_of(double value) {
  return std::bit_cast<uint64_t>(value);
}
uint64_t bits_of(int64_t value) {
  return static_cast<uint64_t>(value);
}
double double_of(uint64_t bits) {
  return std::bit_cast<double>(bits);
}

uint64_t fold(value_kind kind, fold_rule rule, const uint64_t* elements, size_t count) {
  if (count == 0)
    return kind == value_kind::floating ? bits_of(0.0) : 0;
  uint64_t out = elements[0];
  for (size_t i = 1; i < count; ++i) {
    switch (rule) {
    case fold_rule::sum:
      out = add(kind, out, elements[i]);
      break;
    case fold_rule::highest:
      out = less(kind, out, elements[i]) ? elements[i] : out;
      break;
    case fold_rule::lowest:
      out = less(kind, elements[i], out) ? elements[i] : out;
      break;
    }
  }
  return out;
}

uint64_t since(value_kind kind, uint64_t now, uint64_t baseline) {
  if (kind == value_kind::floating)
    return bits_of(double_of(now) - double_of(baseline));
  return now - baseline;
}

uint64_t layout_fingerprint(const std::vector<pvar_description>& pvars) {
  uint64_t hash = 14695981039346656037ULL; // FNV-1a
  const auto mix = [&hash](std::string_view text) {
    for (const char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
    hash ^= 0xff;
    hash *= 1099511628211ULL;
  };
  for (const pvar_description& p : pvars) {
    mix(p.name);
    mix(p.var_class);
    mix(std::to_string(static_cast<uint64_t>(p.kind)));
  }
  return hash;
}

agreement_layout agreement_of_rank(size_t pvar_count, uint64_t fingerprint) {
  if (pvar_count == 0)
    return {}; // takes part without constraining the others
  const auto high = static_cast<uint32_t>(fingerprint >> 32);
  const auto low = static_cast<uint32_t>(fingerprint);
  return {static_cast<uint32_t>(std::min<size_t>(pvar_count, UINT32_MAX)), high, low, ~high, ~low};
}

agreement agreement_over_ranks(const agreement_layout& reduced) {
  return {reduced[0], reduced[0] == 0 || (reduced[1] == static_cast<uint32_t>(~reduced[3]) &&
                                          reduced[2] == static_cast<uint32_t>(~reduced[4]))};
}

size_t packed_words(uint64_t pvar_count) {
  return 1 + static_cast<size_t>(pvar_count) * words_per_pvar;
}

std::vector<uint64_t> pack_rank(const std::vector<pvar_description>& pvars,
                                const std::vector<rank_value>& values, uint64_t rank) {
  std::vector<uint64_t> out(packed_words(pvars.size()), 0);
  out[0] = pvars.size();
  for (size_t i = 0; i < pvars.size(); ++i) {
    packed_pvar p{};
    p.kind = static_cast<uint64_t>(pvars[i].kind);
    if (i < values.size() && values[i].read) {
      p.ranks = 1;
      p.sum = p.min = p.max = values[i].bits;
      p.min_rank = p.max_rank = rank;
    }
    store_at(out.data(), i, p);
  }
  return out;
}

void combine_packed(const uint64_t* in, uint64_t* inout) {
  const uint64_t count = std::min(in[0], inout[0]);
  for (size_t i = 0; i < count; ++i) {
    const packed_pvar x = packed_at(in, i);
    packed_pvar y = packed_at(inout, i);
    if (x.ranks == 0)
      continue;
    if (y.ranks == 0) {
      store_at(inout, i, x);
      continue;
    }
    const auto kind = static_cast<value_kind>(y.kind);
    y.ranks += x.ranks;
    y.sum = add(kind, y.sum, x.sum);
    if (less(kind, x.min, y.min) || (x.min == y.min && x.min_rank < y.min_rank)) {
      y.min = x.min;
      y.min_rank = x.min_rank;
    }
    if (less(kind, y.max, x.max) || (x.max == y.max && x.max_rank < y.max_rank)) {
      y.max = x.max;
      y.max_rank = x.max_rank;
    }
    store_at(inout, i, y);
  }
}

namespace {

record::pvar_number number_of(value_kind kind, uint64_t bits) {
  switch (kind) {
  case value_kind::signed_integer:
    if (static_cast<int64_t>(bits) < 0)
      return {static_cast<int64_t>(bits)};
    break;
  case value_kind::floating:
    return {double_of(bits)};
  case value_kind::unsigned_integer:
    break;
  }
  return {bits};
}

} // namespace

std::vector<record::mpi_t_pvar> unpack_pvars(const std::vector<pvar_description>& pvars,
                                             const std::vector<uint64_t>& combined) {
  std::vector<record::mpi_t_pvar> out;
  if (combined.empty() || combined.size() < packed_words(combined[0]))
    return out;
  const size_t count = std::min<size_t>(pvars.size(), combined[0]);
  for (size_t i = 0; i < count; ++i) {
    const pvar_description& d = pvars[i];
    const packed_pvar p = packed_at(combined.data(), i);
    record::mpi_t_pvar r;
    r.name = d.name;
    r.description = d.description;
    r.var_class = d.var_class;
    r.binding = d.binding;
    r.datatype = d.datatype;
    r.elements = d.elements;
    r.ranks = p.ranks;
    if (p.ranks == 0) {
      r.unread = d.unread.empty() ? "no rank could read it" : d.unread;
      r.sum = r.min = r.max = number_of(d.kind, d.kind == value_kind::floating ? bits_of(0.0) : 0);
    } else {
      r.sum = number_of(d.kind, p.sum);
      r.min = number_of(d.kind, p.min);
      r.max = number_of(d.kind, p.max);
      r.min_rank = p.min_rank;
      r.max_rank = p.max_rank;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> cvars_set_by(const std::string& flavor, std::string_view variable) {
  if (flavor == "openmpi") {
    constexpr std::string_view prefix = "OMPI_MCA_";
    if (variable.starts_with(prefix) && variable.size() > prefix.size())
      return {std::string(variable.substr(prefix.size()))};
    return {};
  }
  if (flavor == "mpich") {
    // MPICH names its variables as their environment variables, which MPICH_ also sets.
    constexpr std::string_view short_prefix = "MPICH_";
    if (variable.starts_with(short_prefix))
      return {std::string(variable),
              "MPIR_CVAR_" + std::string(variable.substr(short_prefix.size()))};
    return {std::string(variable)};
  }
  return {};
}

} // namespace strata::profiler::mpi_t
