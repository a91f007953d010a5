# cs_warnings: the warning set every clustersim target uses (STYLE.md, "Build"). GCC 12 false
# positives are off: -Wmaybe-uninitialized inside nlohmann::json, -Wrestrict on std::string
# concatenation (GCC bug 105329).
add_library(cs_warnings INTERFACE)
target_compile_options(cs_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wno-maybe-uninitialized -Wno-restrict>)
if(CLUSTERSIM_WERROR)
  target_compile_options(cs_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(CLUSTERSIM_SANITIZE)
  target_compile_options(cs_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(cs_warnings INTERFACE -fsanitize=address,undefined)
endif()
