/* The C side of the Fortran `strata` module (strata.f90): the Fortran names with the compilers'
 * convention (lower case, one trailing underscore, the string's length as a hidden trailing
 * argument), turned into C strings and handed to the core through the weak entry points of
 * strata/annotate.h. The call site is this function's return address: the Fortran caller. */
#include <strata/annotate.h>

#include <stddef.h>
#include <string.h>

enum { name_capacity = 256 };

/* Fortran strings are blank-padded and not terminated; an absent optional argument is NULL. */
static void c_string(char* out, const char* name, size_t length) {
  if (name == NULL) {
    out[0] = '\0';
    return;
  }
  while (length > 0 && name[length - 1] == ' ')
    --length;
  if (length >= name_capacity)
    length = name_capacity - 1;
  memcpy(out, name, length);
  out[length] = '\0';
}

__attribute__((noinline)) void strata_region_begin_(const char* name, size_t length) {
  if (strata_annotate_region_begin_at == NULL)
    return;
  char text[name_capacity];
  c_string(text, name, length);
  strata_annotate_region_begin_at(text, __builtin_return_address(0));
}

__attribute__((noinline)) void strata_region_end_(const char* name, size_t length) {
  if (strata_annotate_region_end_at == NULL)
    return;
  char text[name_capacity];
  c_string(text, name, length);
  strata_annotate_region_end_at(text, __builtin_return_address(0));
}
