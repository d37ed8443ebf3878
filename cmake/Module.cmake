# llmrepro_module(name deps...): one static library per folder, from every .cpp under it.
# Globbing keeps the module list in one place: adding a file needs no CMake edit.
function(llmrepro_module name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  # Folders holding executables (tools/) or CUDA sources (cuda/) are built by their own targets.
  list(FILTER sources EXCLUDE REGEX "/(cuda|tools)/")
  # A sub-folder with its own CMakeLists.txt is a room of its own (core/numerics, report/store):
  # its sources belong to its target, not to the folder above it.
  file(GLOB_RECURSE room_lists RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt)
  foreach(room_list IN LISTS room_lists)
    get_filename_component(room ${room_list} DIRECTORY)
    list(FILTER sources EXCLUDE REGEX "^${CMAKE_CURRENT_SOURCE_DIR}/${room}/")
  endforeach()
  add_library(llmrepro_${name} STATIC ${sources})
  target_link_libraries(llmrepro_${name} PUBLIC llmrepro_settings ${ARGN})
endfunction()
