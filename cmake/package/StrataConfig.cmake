# find_package(Strata [REQUIRED] [COMPONENTS openmpi mpich]): Strata's module interface, for
# modules built outside Strata's tree (docs/writing-modules.md).
#
# For each MPI flavor installed in this prefix:
#   Strata::module_<flavor>     strata/module.h, strata/annotate.h, strata/version.h, the flavor's
#                               strata/zmpi.h, libstrata and the flavor's MPI (link a module to it)
#   Strata_<flavor>_FOUND       TRUE
#   Strata_<flavor>_MODULE_DIR  where the installed `strata` finds modules by name
# Strata::option_binder        strata/option_binder.hpp and its library (C++20, no MPI): a
#                               module's options declared once each with the fields they set,
#                               and the values its load gets checked into them (link it beside
#                               Strata::module_<flavor>)
# Strata_FLAVORS                the flavors installed here
# Strata::module                one of them: Strata_MPI_FLAVOR if set, else the only component
#                               asked for, else the first installed (openmpi before mpich)
# Strata_MPI_FLAVOR             that flavor
# strata_add_module(<name> <flavor> <sources>...)
#                               a module <name>.so for one flavor, target <name>_<flavor>, built
#                               into ${CMAKE_CURRENT_BINARY_DIR}/<flavor>/
#
# A component (or Strata_MPI_FLAVOR) naming a flavor this prefix lacks makes the package not
# found, with a reason that names the flavor.

get_filename_component(_strata_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(Strata_FLAVORS "")
foreach(_strata_flavor IN ITEMS openmpi mpich)
  set(_strata_file "${CMAKE_CURRENT_LIST_DIR}/StrataFlavor-${_strata_flavor}.cmake")
  if(NOT EXISTS "${_strata_file}")
    continue()
  endif()
  include("${_strata_file}")
  list(APPEND Strata_FLAVORS ${_strata_flavor})
  set(Strata_${_strata_flavor}_FOUND TRUE)
  set(_strata_libdir "${_strata_prefix}/lib/strata/${_strata_flavor}")
  set(Strata_${_strata_flavor}_MODULE_DIR "${_strata_libdir}/modules")
  if(NOT TARGET Strata::module_${_strata_flavor})
    add_library(Strata::core_${_strata_flavor} SHARED IMPORTED)
    set_target_properties(Strata::core_${_strata_flavor} PROPERTIES
      IMPORTED_LOCATION "${_strata_libdir}/libstrata.so" IMPORTED_SONAME "libstrata.so")
    add_library(Strata::module_${_strata_flavor} INTERFACE IMPORTED)
    set_target_properties(Strata::module_${_strata_flavor} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES
        "${_strata_prefix}/include;${_strata_prefix}/include/strata/${_strata_flavor};${Strata_${_strata_flavor}_MPI_INCLUDE_DIRS}"
      INTERFACE_LINK_LIBRARIES
        "Strata::core_${_strata_flavor};${Strata_${_strata_flavor}_MPI_LIBRARIES}"
      # A module in C++ wants MPI's C interface only: Open MPI's C++ bindings would make it
      # need libmpi_cxx, which the core does not load.
      INTERFACE_COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1"
      # A wrapper's call to the next layer jumps through its GOT slot, not a PLT stub.
      INTERFACE_COMPILE_OPTIONS "-fno-plt")
  endif()
endforeach()

if(NOT TARGET Strata::option_binder)
  add_library(Strata::option_binder STATIC IMPORTED)
  set_target_properties(Strata::option_binder PROPERTIES
    IMPORTED_LOCATION "${_strata_prefix}/lib/strata/libstrata_option_binder.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES CXX
    INTERFACE_INCLUDE_DIRECTORIES "${_strata_prefix}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()

# Why the package is not found, naming the flavor it lacks.
macro(_strata_not_found flavor)
  if(NOT "${flavor}" MATCHES "^(openmpi|mpich)$")
    set(Strata_NOT_FOUND_MESSAGE
        "'${flavor}' is not an MPI flavor of Strata (openmpi or mpich)")
  elseif(Strata_FLAVORS)
    string(REPLACE ";" ", " _strata_have "${Strata_FLAVORS}")
    string(CONCAT Strata_NOT_FOUND_MESSAGE
        "Strata in ${_strata_prefix} has no build for the MPI flavor '${flavor}' (installed: "
        "${_strata_have}); install its ${flavor} part, or build Strata where mpicc.${flavor} is "
        "found")
  else()
    string(CONCAT Strata_NOT_FOUND_MESSAGE
        "Strata in ${_strata_prefix} has no MPI flavor installed (no lib/cmake/Strata/"
        "StrataFlavor-<flavor>.cmake); install its openmpi or mpich part")
  endif()
  set(Strata_FOUND FALSE)
endmacro()

if(NOT Strata_FLAVORS)
  _strata_not_found("")
endif()
foreach(_strata_flavor IN LISTS Strata_FIND_COMPONENTS)
  if(NOT _strata_flavor IN_LIST Strata_FLAVORS AND Strata_FIND_REQUIRED_${_strata_flavor})
    _strata_not_found(${_strata_flavor})
  endif()
endforeach()

if(NOT DEFINED Strata_MPI_FLAVOR)
  list(LENGTH Strata_FIND_COMPONENTS _strata_asked)
  if(_strata_asked EQUAL 1)
    set(Strata_MPI_FLAVOR ${Strata_FIND_COMPONENTS})
  elseif(Strata_FLAVORS)
    list(GET Strata_FLAVORS 0 Strata_MPI_FLAVOR)
  endif()
endif()
if(DEFINED Strata_MPI_FLAVOR AND NOT Strata_MPI_FLAVOR IN_LIST Strata_FLAVORS)
  _strata_not_found(${Strata_MPI_FLAVOR})
endif()

if(NOT DEFINED Strata_FOUND OR Strata_FOUND)
  if(NOT TARGET Strata::module)
    add_library(Strata::module INTERFACE IMPORTED)
    set_target_properties(Strata::module PROPERTIES
      INTERFACE_LINK_LIBRARIES Strata::module_${Strata_MPI_FLAVOR})
  endif()

  function(strata_add_module name flavor)
    if(NOT TARGET Strata::module_${flavor})
      message(FATAL_ERROR "strata_add_module(${name}): Strata has no MPI flavor '${flavor}' "
                          "(installed: ${Strata_FLAVORS})")
    endif()
    add_library(${name}_${flavor} MODULE ${ARGN})
    set_target_properties(${name}_${flavor} PROPERTIES OUTPUT_NAME ${name} PREFIX ""
                          LIBRARY_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/${flavor}")
    target_link_libraries(${name}_${flavor} PRIVATE Strata::module_${flavor})
  endfunction()
endif()
unset(_strata_file)
unset(_strata_libdir)
unset(_strata_asked)
