# llmrepro_module(name deps...): one static library per folder, from every .cpp under it.
# Globbing keeps the module list in one place: adding a file needs no CMake edit. A room is a
# top-level folder, its name, namespace and target the same (docs/design.md "Module map").
function(llmrepro_module name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  # Folders holding executables (tools/) or CUDA sources (cuda/) are built by their own targets.
  list(FILTER sources EXCLUDE REGEX "/(cuda|tools)/")
  add_library(llmrepro_${name} STATIC ${sources})
  target_link_libraries(llmrepro_${name} PUBLIC llmrepro_settings ${ARGN})
endfunction()
