# Runs one scenario of ddprt-fault-scenarios under mpirun and checks that the
# job failed, within MAX_SECONDS, with output matching EXPECT.
#   cmake -DMPIEXEC=... -DMPIEXEC_ARGS="a|b" -DPROGRAM=... -DSCENARIO=...
#         -DEXPECT=regex -DMAX_SECONDS=n [-DENVIRONMENT="K=V"] -P this
string(REPLACE "|" ";" mpiexec_args "${MPIEXEC_ARGS}")
set(command ${MPIEXEC} ${mpiexec_args} ${PROGRAM} ${SCENARIO})
if(ENVIRONMENT)
  set(command ${CMAKE_COMMAND} -E env ${ENVIRONMENT} ${command})
endif()
string(TIMESTAMP started "%s")
execute_process(COMMAND ${command}
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output
  TIMEOUT 90)
string(TIMESTAMP ended "%s")
math(EXPR elapsed "${ended} - ${started}")
message("${output}")
if("${result}" STREQUAL "0")
  message(FATAL_ERROR "scenario ${SCENARIO}: the job exited 0; all ranks "
                      "should have ended with an error")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "scenario ${SCENARIO}: output does not match "
                      "'${EXPECT}'")
endif()
if(elapsed GREATER MAX_SECONDS)
  message(FATAL_ERROR "scenario ${SCENARIO}: took ${elapsed} s, more than "
                      "${MAX_SECONDS} s (result: ${result})")
endif()
message(STATUS "scenario ${SCENARIO}: failed as expected in ${elapsed} s "
               "(${result})")
