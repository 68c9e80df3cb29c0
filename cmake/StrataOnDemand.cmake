# Libraries loaded on first need (src/common/on_demand_library.hpp) are compiled against but not
# linked; the code loads them by the name a link would have recorded:
#   strata_soname(OUT_VAR /path/to/libx.so)   ->  "libx.so.N" (the file's name without objdump)
function(strata_soname out library)
  get_filename_component(name "${library}" NAME)
  if(CMAKE_OBJDUMP)
    execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${library}" OUTPUT_VARIABLE dump ERROR_QUIET
                    RESULT_VARIABLE rc)
    if(rc EQUAL 0 AND dump MATCHES "SONAME +([^ \n]+)")
      set(name ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} ${name} PARENT_SCOPE)
endfunction()

# TARGET compiled with DEFINE="<soname>" of the first of LIBRARIES (a pkg-config link list)
# whose path matches REGEX, else FALLBACK:
#   strata_on_demand_soname(TARGET DEFINE "${X_LINK_LIBRARIES}" REGEX FALLBACK)
function(strata_on_demand_soname target define libraries regex fallback)
  set(soname ${fallback})
  foreach(library IN LISTS libraries)
    if(library MATCHES "${regex}")
      strata_soname(soname "${library}")
      break()
    endif()
  endforeach()
  target_compile_definitions(${target} PRIVATE "${define}=\"${soname}\"")
endfunction()
