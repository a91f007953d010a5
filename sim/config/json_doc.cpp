#include "sim/config/json_doc.hpp"

#include <fstream>
#include <sstream>

#include "sim/core/errors.hpp"

namespace cs::config {

JsonDoc parse_text(const std::string& text, const std::string& origin) {
  try {
    return JsonDoc{origin, nlohmann::json::parse(text)};
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann 3.11 reports a byte offset only: turn it into line:col for editors.
    std::size_t line = 1;
    std::size_t col = 1;
    const std::size_t end = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    if (auto pos = what.find("syntax error"); pos != std::string::npos) what = what.substr(pos);
    throw InputError(origin + ":" + std::to_string(line) + ":" + std::to_string(col), "", "malformed JSON: " + what);
  }
}

JsonDoc load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse_text(buf.str(), path);
}

}  // namespace cs::config
