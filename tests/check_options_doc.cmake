# Regenerates the option reference with the built binary and fails when the checked-in
# docs/options.md differs from it: the reference cannot drift from the command definitions.
# cmake -DLLMREPRO=<binary> -DCHECKED_IN=<docs/options.md> -DOUTPUT=<scratch file> -P this file
execute_process(COMMAND ${LLMREPRO} help-export --format markdown --output ${OUTPUT}
                RESULT_VARIABLE exported)
if(NOT exported EQUAL 0)
  message(FATAL_ERROR "llmrepro help-export --format markdown failed (exit ${exported})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CHECKED_IN} ${OUTPUT}
                RESULT_VARIABLE differs)
if(NOT differs EQUAL 0)
  message(FATAL_ERROR "${CHECKED_IN} is not what the binary prints; regenerate it with\n"
                      "  ${LLMREPRO} help-export --format markdown --output ${CHECKED_IN}\n"
                      "and check it in (diff ${CHECKED_IN} ${OUTPUT} shows what changed)")
endif()
