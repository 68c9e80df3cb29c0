#include <mpi.h>
