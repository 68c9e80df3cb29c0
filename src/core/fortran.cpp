// The Fortran bindings' side of the call path. The generated entry points of fortran_entries.cpp
// note the program's return address and jump to the MPI's own binding, which calls the C entry
// point; this file finds those bindings and tells the MPI library's own code apart from the
// program's (the bindings' handle conversions are the library's business).
#include "core/core_internal.hpp"
#include "core/dispatch.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace strata::core {

extern const char* const fortran_entry_names[];
extern "C" void* strata_fortran_real[];

namespace {

struct address_range {
  uintptr_t begin;
  uintptr_t end;
};

std::vector<address_range>* g_mpi_ranges = nullptr;
std::once_flag g_mpi_ranges_found;

// The MPI library's objects: Open MPI's libmpi, its Fortran and C++ bindings and the libraries
// under them (libopen-pal, libopen-rte), or MPICH's libmpich and libmpichfort.
bool is_mpi_object(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  return std::strncmp(name, "libmpi", 6) == 0 || std::strncmp(name, "libopen-pal", 11) == 0 ||
         std::strncmp(name, "libopen-rte", 11) == 0;
}

int collect_mpi_segments(dl_phdr_info* info, size_t, void* raw) {
  auto* ranges = static_cast<std::vector<address_range>*>(raw);
  if (info->dlpi_name == nullptr || !is_mpi_object(info->dlpi_name))
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0)
      ranges->push_back({info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
  }
  return 0;
}

} // namespace

bool called_from_mpi_library(const void* return_address) {
  // Found on first use: the program's MPI objects are loaded before any MPI call returns to it.
  // Never freed (calls may come from atexit handlers).
  std::call_once(g_mpi_ranges_found, [] {
    auto* ranges = new std::vector<address_range>();
    ::dl_iterate_phdr(collect_mpi_segments, ranges);
    g_mpi_ranges = ranges;
  });
  const auto address = reinterpret_cast<uintptr_t>(return_address);
  for (const address_range& r : *g_mpi_ranges)
    if (address >= r.begin && address < r.end)
      return true;
  return false;
}

} // namespace strata::core

// Reached from a Fortran entry point on its first call, with the entry's index; returns the
// binding to jump to. Bindings are found on first use, one by one: a C program, which has none,
// pays nothing for the few hundred names.
extern "C" __attribute__((visibility("hidden"))) void* strata_fortran_resolve_index(int index) {
  strata::core::resolve_real_once();
  const char* name = strata::core::fortran_entry_names[index];
  void* binding = strata::core::find_real(name);
  if (binding == nullptr)
    strata::core::missing_real(name);
  __atomic_store_n(&strata::core::strata_fortran_real[index], binding, __ATOMIC_RELEASE);
  return binding;
}

// Open MPI's Fortran bindings of MPI_Waitall, _Waitany, _Waitsome, _Testall, _Testany and
// _Testsome return at once when the count is 0, without the C call by which every layer sees the
// program's call (they spare themselves a malloc(0)): such calls went uncounted. Their entry
// points (generate.py, zero_count_check) call this first, with the binding's note taken: it makes
// the call the binding skips, with a count of 0 and no request (the call MPICH's bindings make),
// at the program's line. The binding then returns as before, having called nothing.
extern "C" __attribute__((visibility("hidden"))) void strata_fortran_zero_count(int fid) {
  using namespace strata;
  if (core::chains[fid] == nullptr || core::tls.layer >= 0 || core::in_mpi_library(core::tls))
    return; // nothing counts it, or not the program's call: the binding's note stays as it was
  MPI_Request none = MPI_REQUEST_NULL;
  int index = 0;
  int flag = 0;
  int outcount = 0;
  int indices[1] = {0};
  switch (fid) {
  case gen::fid_MPI_Waitall:
    MPI_Waitall(0, &none, MPI_STATUSES_IGNORE);
    break;
  case gen::fid_MPI_Waitany:
    MPI_Waitany(0, &none, &index, MPI_STATUS_IGNORE);
    break;
  case gen::fid_MPI_Waitsome:
    MPI_Waitsome(0, &none, &outcount, indices, MPI_STATUSES_IGNORE);
    break;
  case gen::fid_MPI_Testall:
    MPI_Testall(0, &none, &flag, MPI_STATUSES_IGNORE);
    break;
  case gen::fid_MPI_Testany:
    MPI_Testany(0, &none, &index, &flag, MPI_STATUS_IGNORE);
    break;
  case gen::fid_MPI_Testsome:
    MPI_Testsome(0, &none, &outcount, indices, MPI_STATUSES_IGNORE);
    break;
  default:
    break;
  }
}

#if defined(__x86_64__)
// The entry points' call of strata_fortran_zero_count, with the routine's id in %r11d: every
// argument register kept (the binding is jumped to next with them). Eight pushes keep the stack
// 16-byte aligned at the call, as it was at this stub's first instruction (the entry point, 8
// off at its own, called it).
asm(".text\n"
    ".globl strata_fortran_zero_count_stub\n"
    ".hidden strata_fortran_zero_count_stub\n"
    ".type strata_fortran_zero_count_stub, @function\n"
    "strata_fortran_zero_count_stub:\n"
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  pushq %rdx\n"
    "  pushq %rcx\n"
    "  pushq %r8\n"
    "  pushq %r9\n"
    "  pushq %rax\n"
    "  pushq %r10\n"
    "  movl %r11d, %edi\n"
    "  call strata_fortran_zero_count\n"
    "  popq %r10\n"
    "  popq %rax\n"
    "  popq %r9\n"
    "  popq %r8\n"
    "  popq %rcx\n"
    "  popq %rdx\n"
    "  popq %rsi\n"
    "  popq %rdi\n"
    "  ret\n"
    ".size strata_fortran_zero_count_stub, .-strata_fortran_zero_count_stub\n");

// The generic way out of a Fortran entry point with no binding yet: every argument register
// kept across the resolution (Fortran passes pointers and lengths: integer registers only), then
// the jump with the arguments as they came. Seven pushes keep the stack 16-byte aligned at the
// call, as it was 8 off at the entry point's first instruction.
asm(".text\n"
    ".globl strata_fortran_resolve\n"
    ".hidden strata_fortran_resolve\n"
    ".type strata_fortran_resolve, @function\n"
    "strata_fortran_resolve:\n"
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  pushq %rdx\n"
    "  pushq %rcx\n"
    "  pushq %r8\n"
    "  pushq %r9\n"
    "  pushq %rax\n"
    "  movl %r11d, %edi\n"
    "  call strata_fortran_resolve_index\n"
    "  movq %rax, %r11\n"
    "  popq %rax\n"
    "  popq %r9\n"
    "  popq %r8\n"
    "  popq %rcx\n"
    "  popq %rdx\n"
    "  popq %rsi\n"
    "  popq %rdi\n"
    "  jmp *%r11\n"
    ".size strata_fortran_resolve, .-strata_fortran_resolve\n");
#endif
