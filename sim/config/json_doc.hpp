#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace cs::config {

/// A parsed input file: its path (as the user gave it, for messages) and its JSON value.
struct JsonDoc {
  std::string path;
  nlohmann::json json;
};

/// Deepest nesting of arrays and objects accepted in any JSON input. Our files nest a handful of
/// levels; a limit keeps every later recursive walk (copies, dumps) off the end of the stack.
inline constexpr int kMaxJsonDepth = 64;

/// The default cap on the size of one input file (256 MiB); `clustersim --max-file-size` raises it.
inline constexpr std::uint64_t kDefaultMaxFileBytes = std::uint64_t{256} << 20;

/// The input size limit in force while alive (set once by main from `--max-file-size`, like
/// ThreadLimit); restores the previous one when it ends. A process-wide setting because every
/// reader of every stage must honour it, and threading it through each call would not add safety.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::uint64_t max_bytes);
  ~FileSizeLimit();
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  /// The limit now in force (bytes).
  [[nodiscard]] static std::uint64_t current();

 private:
  std::uint64_t previous_;
};

/// A regular file at `path`? Never throws: a name too long, a symlink loop or a permission problem
/// is just "no such file" here, and read_file() reports the details if it is read.
[[nodiscard]] bool is_regular_file(const std::string& path);

/// Reads a whole input file as bytes. Only regular files (not directories, devices, pipes) of at
/// most FileSizeLimit::current() bytes are read; anything else is an InputError naming the path.
[[nodiscard]] std::string read_file(const std::string& path);

/// Reads and parses one JSON file: the only function that opens JSON input files (STYLE.md stage 1).
/// A missing file or a syntax error throws InputError naming `path:line:col`.
[[nodiscard]] JsonDoc load(const std::string& path);

/// Parses JSON text that did not come from a file (tests, the command line). Besides syntax, it
/// refuses nesting deeper than kMaxJsonDepth, numbers beyond a double's range and duplicate keys
/// (which plain JSON parsers resolve silently, last one wins).
[[nodiscard]] JsonDoc parse_text(const std::string& text, const std::string& origin);

/// A key as one JSON pointer token (RFC 6901: '~' as "~0", '/' as "~1").
[[nodiscard]] std::string escape_pointer_token(const std::string& key);

}  // namespace cs::config
