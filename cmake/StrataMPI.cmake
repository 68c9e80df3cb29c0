# Both MPI implementations, side by side (Debian: mpicc.openmpi / mpicc.mpich). For each one
# this defines imported targets strata::mpi_c_<flavor> and strata::mpi_fortran_<flavor> from the
# compiler wrappers' own flags, and STRATA_MPIRUN_<flavor>. FindMPI finds only one MPI.

set(STRATA_ALL_MPI_FLAVORS openmpi mpich)
set(STRATA_MPI_FLAVORS "" CACHE INTERNAL "")

function(_strata_wrapper_flags wrapper flavor out_incs out_libs)
  if(flavor STREQUAL "openmpi")
    set(show_args --showme)
  else()
    set(show_args -show)
  endif()
  execute_process(COMMAND ${wrapper} ${show_args} OUTPUT_VARIABLE line
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${wrapper} ${show_args} failed")
  endif()
  separate_arguments(tokens UNIX_COMMAND "${line}")
  set(incs "")
  set(dirs "")
  set(names "")
  foreach(t IN LISTS tokens)
    if(t MATCHES "^-I(.+)")
      list(APPEND incs "${CMAKE_MATCH_1}")
    elseif(t MATCHES "^-L(.+)")
      list(APPEND dirs "${CMAKE_MATCH_1}")
    elseif(t MATCHES "^-l(.+)")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(libs "")
  foreach(n IN LISTS names)
    find_library(_lib_${flavor}_${n} NAMES ${n} HINTS ${dirs} NO_DEFAULT_PATH)
    if(NOT _lib_${flavor}_${n})
      find_library(_lib_${flavor}_${n} NAMES ${n})
    endif()
    list(APPEND libs "${_lib_${flavor}_${n}}")
  endforeach()
  set(${out_incs} "${incs}" PARENT_SCOPE)
  set(${out_libs} "${libs}" PARENT_SCOPE)
endfunction()

foreach(flavor IN LISTS STRATA_ALL_MPI_FLAVORS)
  find_program(STRATA_MPICC_${flavor} mpicc.${flavor})
  find_program(STRATA_MPICXX_${flavor} mpicxx.${flavor})
  find_program(STRATA_MPIF90_${flavor} mpif90.${flavor})
  find_program(STRATA_MPIRUN_${flavor} mpirun.${flavor})
  if(NOT STRATA_MPICC_${flavor} OR NOT STRATA_MPIRUN_${flavor})
    message(WARNING "MPI flavor ${flavor} not found (mpicc.${flavor}); building without it")
    continue()
  endif()
  _strata_wrapper_flags(${STRATA_MPICC_${flavor}} ${flavor} incs libs)
  add_library(strata::mpi_c_${flavor} INTERFACE IMPORTED GLOBAL)
  set_target_properties(strata::mpi_c_${flavor} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${incs}" INTERFACE_LINK_LIBRARIES "${libs}"
    INTERFACE_COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1")
  set(STRATA_MPI_INCLUDE_${flavor} "${incs}" CACHE INTERNAL "")
  if(STRATA_MPIF90_${flavor})
    _strata_wrapper_flags(${STRATA_MPIF90_${flavor}} ${flavor} fincs flibs)
    add_library(strata::mpi_fortran_${flavor} INTERFACE IMPORTED GLOBAL)
    set_target_properties(strata::mpi_fortran_${flavor} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${fincs}" INTERFACE_LINK_LIBRARIES "${flibs}")
  endif()
  if(flavor STREQUAL "openmpi")
    # Where this Open MPI keeps its components, and its libmpi: the profile loads the components
    # ahead of MPI_T_init_thread when a job runs that very library
    # (src/profiler/module/open_mpi_components.hpp).
    get_filename_component(_ompi_bin "${STRATA_MPICC_openmpi}" DIRECTORY)
    find_program(STRATA_OMPI_INFO ompi_info HINTS "${_ompi_bin}")
    set(_ompi_components "")
    if(STRATA_OMPI_INFO)
      execute_process(COMMAND ${STRATA_OMPI_INFO} --parsable --path pkglibdir
                      OUTPUT_VARIABLE _ompi_path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_ompi_path MATCHES "^path:pkglibdir:(.+)$")
        set(_ompi_components "${CMAKE_MATCH_1}")
      endif()
    endif()
    set(STRATA_OPEN_MPI_COMPONENTS "${_ompi_components}" CACHE INTERNAL "")
    set(STRATA_OPEN_MPI_LIBRARY "${_lib_openmpi_mpi}" CACHE INTERNAL "")
  endif()
  list(APPEND _flavors ${flavor})
endforeach()
set(STRATA_MPI_FLAVORS "${_flavors}" CACHE INTERNAL "")
if(NOT STRATA_MPI_FLAVORS)
  message(FATAL_ERROR "Neither Open MPI nor MPICH found; run scripts/setup.sh first")
endif()

# Strata's own layout, in the build tree and installed alike:
#   bin/strata, lib/strata/<flavor>/libstrata.so, lib/strata/<flavor>/modules/<name>.so
function(strata_flavor_dirs flavor out_lib out_modules)
  set(${out_lib} "${CMAKE_BINARY_DIR}/lib/strata/${flavor}" PARENT_SCOPE)
  set(${out_modules} "${CMAKE_BINARY_DIR}/lib/strata/${flavor}/modules" PARENT_SCOPE)
endfunction()

# A module for one flavor: strata_add_module(NAME FLAVOR SOURCES...)
function(strata_add_module name flavor)
  set(target strata_module_${name}_${flavor})
  add_library(${target} MODULE ${ARGN})
  strata_flavor_dirs(${flavor} libdir moddir)
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${name} PREFIX ""
    LIBRARY_OUTPUT_DIRECTORY "${moddir}" C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden INSTALL_RPATH "$ORIGIN/..")
  target_link_libraries(${target} PRIVATE strata_core_${flavor} strata::mpi_c_${flavor})
  # What the module's static libraries define stays inside it: exported, each of the module's
  # own references to it was a symbol lookup through every loaded object when the core opened
  # it (the profile: 491 of its 722 symbol relocations). The core finds only the module's own
  # definitions (its descriptor, its MPI wrappers).
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL")
  # A wrapper's call to the next layer (ZMPI_X) jumps through the module's GOT slot, which
  # RTLD_NOW fills at load, instead of its PLT stub: one jump less per layer and call.
  target_compile_options(${target} PRIVATE -fno-plt)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  install(TARGETS ${target} LIBRARY DESTINATION lib/strata/${flavor}/modules COMPONENT ${flavor})
  set_property(GLOBAL APPEND PROPERTY STRATA_MODULE_TARGETS ${target})
endfunction()
