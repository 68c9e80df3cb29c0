/* Where a thread of the application is with respect to MPI, kept by libstrata on the
 * application's timed calls (the usual path of the profile) for the hang diagnosis: the call's
 * function, its call site and the arguments the diagnosis reads as they were passed, stored raw
 * (a few stores per call; turning them into ranks and source lines is left to whoever reads
 * them). Read by another thread of the same process (the profile's describer), never by the
 * thread itself. */
#ifndef STRATA_WHERE_H
#define STRATA_WHERE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_WHERE_ARGS 12

typedef struct strata_where {
  /* Odd while the thread is inside the call described; one more when it returns. A reader
   * copies the record between two reads of it and keeps the copy when both are equal: even, the
   * last call, returned; odd, the call in progress. */
  uint64_t seq;
  int32_t function;      /* function id (strata_host::function_id); seq 0: no call yet */
  int32_t thread;        /* the thread's OS id (gettid), set once it is listed */
  const void* call_site; /* the application's return address */
  /* By position, as passed, those of the roles the diagnosis reads (the routine table's
   * argument positions: peer, tag, communicator, root, count and type, a Sendrecv's source and
   * receive tag, a completion's requests and their count); the others are left as they were.
   * Pointers and 8-byte handles whole; an int or a 4-byte handle (MPICH's) in the low half, the
   * high half left as it was (read the low half alone). */
  uint64_t args[STRATA_WHERE_ARGS];
  /* A call that took the long way (a Fortran binding's, or one whose communicators the core
   * renamed) may note a return address inside libstrata as its call site: its own site is this
   * one when marked_seq is the seq of that call, in progress (odd) or returned (one more). Kept
   * apart so that the usual call does not test for it. */
  const void* marked_site;
  uint64_t marked_seq;
} strata_where;

/* A request the thread made (MPI_Isend, MPI_Irecv, MPI_Send_init, MPI_Imrecv, MPI_Ibarrier and
 * the other nonblocking collectives, ...), noted when the call returned: the handle MPI wrote,
 * where it wrote it (the caller's variable, which MPI sets to MPI_REQUEST_NULL when a completion
 * frees the request), and three of the call's arguments as passed: args[0] its peer (a
 * collective's root), args[1] its tag, args[2] its communicator. A routine without one of these
 * (MPI_Ibarrier has no peer or tag, MPI_Imrecv none of them) leaves that slot as it was: the
 * function says which ones hold (routines::info::at). Plain stores on the timed call's exit,
 * copied from the call's strata_where: decoding them is the reader's. */
typedef struct strata_where_post {
  uint64_t handle;
  const void* request;
  int32_t function;
  int32_t reserved;
  uint64_t args[3];
  int64_t bytes;    /* the message's size in bytes; -1 unknown */
  uint64_t padding; /* to 64 bytes: an entry's place is a shift, not a multiply */
} strata_where_post;

#define STRATA_WHERE_POSTS 32 /* a power of two */

/* The thread's latest requests: post number i (from 0) is in posts[i % STRATA_WHERE_POSTS] once
 * `made` is above i. A reader copies the posts between two reads of `made` and keeps those
 * numbered from (made after) - STRATA_WHERE_POSTS + 1 up to (made before): the writer may be
 * writing the next one. Nothing is removed on completion: whether a request is still pending
 * is for the reader to tell (its variable, the thread's current wait). */
typedef struct strata_where_posts {
  uint64_t made;
  const strata_where* owner; /* the thread's record */
  strata_where_post posts[STRATA_WHERE_POSTS];
} strata_where_posts;

/* The requests of the thread whose record is `where`; NULL when that thread is not listed
 * (strata_where_threads). A listed thread has its table from its listing; one that ends gives it
 * back, and the next thread listed takes it with its posts cleared (function -1). A thread beyond
 * the list writes a table of its own that nobody reads. */
const strata_where_posts* strata_where_posts_of(const strata_where* where) __attribute__((weak));

#define STRATA_WHERE_THREADS 64

/* The records of the threads that made an MPI call a module sees (listed on the first, which
 * may be one without a record of its own: seq 0) and have not ended (at most
 * STRATA_WHERE_THREADS at a time; the threads beyond are not kept, only counted:
 * strata_where_unlisted_threads): at most `max` of them into `out`, in no particular order;
 * returns how many. A thread that ends leaves the list before its record's memory goes, but a
 * reader that took the record just before may be reading it then: copy it with
 * process_vm_readv, which fails rather than faults. */
int strata_where_threads(const strata_where** out, int max) __attribute__((weak));

/* How many threads now alive made an MPI call a module sees but are not listed (the list was
 * full): neither their calls nor their requests can be described. */
int strata_where_unlisted_threads(void) __attribute__((weak));

/* The calling thread's record (it lives as long as the thread). */
const strata_where* strata_where_of_this_thread(void) __attribute__((weak));

/* A communicator the core has seen, looked up without calling MPI (safe from any thread):
 * 1 with its size and its members' world ranks (NULL: the world itself, member i is rank i),
 * 0 when the core has not seen it. `comm` points at an MPI_Comm. */
int strata_where_comm(const void* comm, int32_t* size, const int** world_ranks)
    __attribute__((weak));

/* The size in bytes of a predefined datatype, without calling MPI; -1 for any other type.
 * `type` points at an MPI_Datatype. */
int64_t strata_where_type_size(const void* type) __attribute__((weak));

/* The Python line a listed thread's MPI call came from, in a process running CPython whose MPI
 * calls come from an extension module (mpi4py): `call_site` (the record's) lies in one, and
 * the innermost Python frame of the thread whose OS id is `thread` is read without the GIL and
 * without that thread's help (a blocking call from mpi4py released the GIL: its frames stay as
 * they are), each read of its thread state and frames one that fails rather than faults. 1 with
 * the file, line and function copied (NUL-terminated, a longer text cut); 0 when the process
 * runs no Python, the site is not an extension module's, or the frames cannot be read. Valid
 * only if the thread was inside that one call all along: the caller reads the record's seq before
 * and after, odd and unchanged. */
int strata_where_python_site(int32_t thread, const void* call_site, char* file, size_t file_size,
                             int32_t* line, char* function, size_t function_size)
    __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
