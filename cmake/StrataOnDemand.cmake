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
