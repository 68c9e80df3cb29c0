# What `cmake --install` gives module writers beside the command and its libraries: the public
# headers, a CMake package (find_package(Strata), cmake/package/StrataConfig.cmake) and one
# pkg-config file per MPI flavor. Everything of one flavor is in the install component named after
# it (what a packager splits into strata-openmpi and strata-mpich), the rest in `common`. Every
# installed file finds the prefix from where it lies, so the tree can be moved:
#   include/strata/{module,annotate,version}.h       include/strata/<flavor>/strata/zmpi.h
#   include/strata/option_binder.hpp                 lib/strata/libstrata_option_binder.a
#   lib/cmake/Strata/StrataConfig.cmake              lib/cmake/Strata/StrataFlavor-<flavor>.cmake
#   lib/pkgconfig/strata-<flavor>.pc                 lib/strata/<flavor>/{libstrata.so,modules/}
include(CMakePackageConfigHelpers)

set(_strata_package_dir lib/cmake/Strata)
install(FILES ${PROJECT_SOURCE_DIR}/include/strata/module.h
              ${PROJECT_SOURCE_DIR}/include/strata/annotate.h
              ${CMAKE_BINARY_DIR}/include/strata/version.h
        DESTINATION include/strata COMPONENT common)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/package/StrataConfig.cmake
              ${CMAKE_BINARY_DIR}/package/StrataConfigVersion.cmake
        DESTINATION ${_strata_package_dir} COMPONENT common)
# 0.x: a minor version may change the module ABI.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/StrataConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

foreach(flavor IN LISTS STRATA_MPI_FLAVORS)
  # The flavor's MPI as Strata was built with it (the compiler wrapper's flags): a module's
  # strata/zmpi.h includes that mpi.h, and Open MPI's handles are symbols of its libmpi.
  set(mpi_include_dirs "${STRATA_MPI_INCLUDE_${flavor}}")
  get_target_property(mpi_libraries strata::mpi_c_${flavor} INTERFACE_LINK_LIBRARIES)
  if(flavor STREQUAL "openmpi")
    set(flavor_title "Open MPI")
  else()
    set(flavor_title "MPICH")
  endif()
  list(TRANSFORM mpi_include_dirs PREPEND "-I" OUTPUT_VARIABLE mpi_cflags)
  list(JOIN mpi_cflags " " mpi_cflags)
  list(JOIN mpi_libraries " " mpi_libs)

  configure_file(${PROJECT_SOURCE_DIR}/cmake/package/StrataFlavor.cmake.in
                 ${CMAKE_BINARY_DIR}/package/StrataFlavor-${flavor}.cmake @ONLY)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/package/strata.pc.in
                 ${CMAKE_BINARY_DIR}/package/strata-${flavor}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/StrataFlavor-${flavor}.cmake
          DESTINATION ${_strata_package_dir} COMPONENT ${flavor})
  install(FILES ${CMAKE_BINARY_DIR}/package/strata-${flavor}.pc
          DESTINATION lib/pkgconfig COMPONENT ${flavor})
  # Both flavors' strata/zmpi.h side by side: a module adds include/strata/<flavor>.
  install(FILES ${CMAKE_BINARY_DIR}/gen/${flavor}/strata/zmpi.h
          DESTINATION include/strata/${flavor}/strata COMPONENT ${flavor})
endforeach()
