# cs_warnings: the warning set every clustersim target uses (STYLE.md, "Build"). GCC 12 false
# positives are off: -Wmaybe-uninitialized inside nlohmann::json, -Wrestrict on std::string
# concatenation (GCC bug 105329).
add_library(cs_warnings INTERFACE)
target_compile_options(cs_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-maybe-uninitialized -Wno-restrict>)
if(CLUSTERSIM_WERROR)
  target_compile_options(cs_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
# Sanitizers (tools/scripts/sanitize): ON = address + undefined behaviour, every report fatal, so a
# finding fails its test; thread = ThreadSanitizer for the parallel engine.
if(CLUSTERSIM_SANITIZE STREQUAL "thread")
  target_compile_options(cs_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(cs_warnings INTERFACE -fsanitize=thread)
elseif(CLUSTERSIM_SANITIZE)
  target_compile_options(cs_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  target_link_options(cs_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all)
endif()
# libFuzzer (tests/fuzz): coverage instrumentation in every target; the fuzz targets link the driver.
if(CLUSTERSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CLUSTERSIM_FUZZ needs clang (libFuzzer): configure with CXX=clang++")
  endif()
  target_compile_options(cs_warnings INTERFACE -fsanitize=fuzzer-no-link)
endif()
