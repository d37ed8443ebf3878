# Interface targets for warnings and numerics settings, shared by every module.
add_library(llmrepro_settings INTERFACE)
target_compile_options(llmrepro_settings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wdouble-promotion -Wimplicit-fallthrough
    -Wno-missing-field-initializers>
  # Rounding order matters in the engine and the probe: never contract a*b+c into an FMA.
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
if(LLMREPRO_WERROR)
  target_compile_options(llmrepro_settings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
target_include_directories(llmrepro_settings INTERFACE ${PROJECT_SOURCE_DIR})

if(LLMREPRO_SANITIZE)
  add_compile_options(-fsanitize=${LLMREPRO_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${LLMREPRO_SANITIZE})
  # GCC's sanitizer instrumentation makes -Wmaybe-uninitialized report libstdc++ internals
  # (std::regex) that the unsanitized build compiles cleanly.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
endif()
