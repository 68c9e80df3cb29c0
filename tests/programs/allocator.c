/* Where glibc's malloc puts a program's buffers after MPI_Init: in a mapping of their own or in
 * the heap. A tool that frees a large block of its own raises glibc's mmap threshold, and the
 * program's buffers of that size move to the heap; the profile must leave this as it is
 * without it. Prints, per rank, one word per size: "mapped" or "heap". */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glibc keeps a chunk's size just before it, with bit 1 set for a chunk that has its own
 * mapping (IS_MMAPPED). */
static int mapped(const void* p) {
  size_t size = 0;
  /* Through an integer: the compiler would otherwise warn of a read before the block. */
  memcpy(&size, (const void*)((uintptr_t)p - sizeof(size)), sizeof(size));
  return (size & 2) != 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const size_t kib[] = {160, 256, 512, 1024, 4096};
  char line[256] = "";
  for (size_t i = 0; i < sizeof(kib) / sizeof(kib[0]); ++i) {
    char* p = malloc(kib[i] * 1024);
    if (p == NULL)
      return 1;
    p[0] = 1;
    char word[32];
    snprintf(word, sizeof(word), " %zuK=%s", kib[i], mapped(p) ? "mapped" : "heap");
    strncat(line, word, sizeof(line) - strlen(line) - 1);
    free(p);
  }
  printf("allocator: rank %d%s\n", rank, line);
  MPI_Finalize();
  return 0;
}
