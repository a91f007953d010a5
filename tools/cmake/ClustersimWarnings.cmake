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
# Under the sanitizers, the sources that only parse arguments and print (the CLI) or drive the tests
# compile at -O0: instrumented, they build 2.6x faster there (plan_command.cpp, CLI11's whole
# implementation inside: 59 s at -O1, 22 s at -O0), while the libraries that simulate keep -O1, so
# the instrumented suite runs as fast as before (-O0 everywhere made a serving test take minutes).
# A later -O wins over the build type's -O1.
function(cs_unoptimised_under_sanitizers target)
  if(CLUSTERSIM_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()
