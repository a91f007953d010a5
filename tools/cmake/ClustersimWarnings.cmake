# cs_warnings: the warning set every clustersim target uses (STYLE.md, "Build").
add_library(cs_warnings INTERFACE)
target_compile_options(cs_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wno-maybe-uninitialized>)
if(CLUSTERSIM_WERROR)
  target_compile_options(cs_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(CLUSTERSIM_SANITIZE)
  target_compile_options(cs_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(cs_warnings INTERFACE -fsanitize=address,undefined)
endif()
