/* The core's interface to the `strata` command (dlopen + dlsym "strata_core_probe"). */
#ifndef STRATA_CORE_PROBE_H
#define STRATA_CORE_PROBE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strata_probe {
  char error[1024]; /* one line; empty when the module loads and accepts its arguments */
  char name[128];
  char path[1024];
  char description[512];
  int wrapped_count;     /* MPI functions the module defines (wrapper) */
  int event_count;       /* further functions it subscribed to (events), with these arguments */
  char functions[16384]; /* their names, comma-separated (truncated) */
  int takes_ranks;       /* takes processes out of the application's world: placed first */
  int extra_ranks;       /* the processes it takes beside the probe's application ranks */
  /* Its declared options, one line each: key TAB type TAB default TAB variables TAB help. */
  char options[8192];
} strata_probe;

/* app_ranks: the application's ranks, for extra_ranks (0: unknown). */
typedef int (*strata_probe_fn)(const char* name, const char* origin, int nargs,
                               const char* const* keys, const char* const* values, int app_ranks,
                               strata_probe* out);

#ifdef __cplusplus
}
#endif

#endif
