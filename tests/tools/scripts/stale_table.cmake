# ctest: a tuned table naming an id its space no longer has must fail to compile, saying how to regenerate.
# -D KTUNE=<ktune binary> -D DATA=<tests/tools/data> -D WORK=<scratch dir> -D NVCC=<nvcc> -D INCLUDE=<repo include>
#    -D SOURCE=<stale_table_check.cu>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/kernels/toyop)
file(COPY ${DATA}/kernels/toyop/spec.json DESTINATION ${WORK}/kernels/toyop)
execute_process(COMMAND ${KTUNE} select --raw ${DATA}/raw/sweep.json ${DATA}/raw/retest.json --kernels ${WORK}/kernels
                        --results ${WORK}/reports --build-json none
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ktune select failed (${rc})")
endif()
execute_process(COMMAND ${KTUNE} tables --results ${WORK}/reports --kernels ${WORK}/kernels RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ktune tables failed (${rc})")
endif()
# The space changes after the tune.
configure_file(${DATA}/kernels/toyop/space_changed.hpp ${WORK}/kernels/toyop/space.hpp COPYONLY)
execute_process(COMMAND ${NVCC} -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I${INCLUDE} -I${WORK}/kernels
                        -c ${SOURCE} -o ${WORK}/stale.o
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "a stale tuned table compiled; it must not")
endif()
# nvcc may print the backquotes around the command as '?' depending on the locale.
string(REGEX MATCH "regenerate it with .make tune. \\(or .ktune tables." said "${out}${err}")
if(NOT said)
  message(FATAL_ERROR "the compiler's message does not say how to regenerate the table:\n${out}${err}")
endif()
message(STATUS "stale table rejected by the compiler with the regenerate command")
