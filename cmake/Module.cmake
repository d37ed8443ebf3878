# llmrepro_module(name deps...): one static library per top-level folder, from every .cpp in it.
# Globbing keeps the module list in one place: adding a file needs no CMake edit.
function(llmrepro_module name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  # Folders holding executables (tools/) or CUDA sources (cuda/) are built by their own targets.
  list(FILTER sources EXCLUDE REGEX "/(cuda|tools)/")
  add_library(llmrepro_${name} STATIC ${sources})
  target_link_libraries(llmrepro_${name} PUBLIC llmrepro_settings ${ARGN})
endfunction()
