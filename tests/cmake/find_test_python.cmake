# strata_find_test_python(<out_var> <modules> <candidates...>): the first candidate Python that exists
# and runs `import <modules>` ("torch, numpy"), or empty when none does. Shared by the test folders
# that run Python with third-party modules (tests/python, tests/elastic).
function(strata_find_test_python out modules)
  set(found "")
  foreach(candidate IN LISTS ARGN)
    if(EXISTS ${candidate})
      execute_process(COMMAND ${candidate} -c "import ${modules}"
        RESULT_VARIABLE import_result OUTPUT_QUIET ERROR_QUIET)
      if(import_result EQUAL 0)
        set(found ${candidate})
        break()
      endif()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
