#include "sim/config/json_doc.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "sim/core/errors.hpp"

namespace cs::config {

namespace {

std::atomic<std::uint64_t>& max_file_bytes() {
  static std::atomic<std::uint64_t> limit{kDefaultMaxFileBytes};
  return limit;
}

/// `origin:line:col` of a byte offset (nlohmann 3.11 reports offsets only).
std::string where(const std::string& text, const std::string& origin, std::size_t offset) {
  std::size_t line = 1;
  std::size_t col = 1;
  const std::size_t end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return origin + ":" + std::to_string(line) + ":" + std::to_string(col);
}

/// Offset of the bracket that first nests deeper than kMaxJsonDepth (strings skipped).
std::size_t too_deep_at(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

/// Builds the document from nlohmann's SAX events, refusing what its DOM parser accepts silently
/// (duplicate keys) or what later code cannot walk safely (deep nesting).
class Builder {
 public:
  using json = nlohmann::json;

  explicit Builder(json& root) : root_(root) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return add(json(v)); }
  bool string(json::string_t& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t& v) { return add(json::binary(std::move(v))); }
  bool start_object(std::size_t /*elements*/) { return open(json::object(), true); }
  bool start_array(std::size_t /*elements*/) { return open(json::array(), false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    auto& f = stack_.back();
    if (!f.keys.insert(k).second) {
      error_ = Error::kDuplicate;
      pointer_ = pointer() + "/" + escape_pointer_token(k);
      message_ = "duplicate key '" + k + "' (JSON keeps only the last one; remove the other)";
      return false;
    }
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*token*/, const nlohmann::detail::exception& ex) {
    error_ = Error::kSyntax;
    position_ = position;
    message_ = ex.what();
    if (auto pos = message_.find("syntax error"); pos != std::string::npos) message_ = message_.substr(pos);
    if (auto pos = message_.find("number overflow"); pos != std::string::npos)
      message_ = message_.substr(pos) + " (beyond the range of a double)";
    return false;
  }

  enum class Error { kNone, kSyntax, kDuplicate, kTooDeep };
  [[nodiscard]] Error error() const { return error_; }
  [[nodiscard]] std::size_t position() const { return position_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] const std::string& error_pointer() const { return pointer_; }

 private:
  struct Frame {
    json* value = nullptr;
    bool object = false;
    std::string key;  ///< the key whose value comes next (objects)
    std::set<std::string> keys;
  };

  /// Places a value in the open container (or as the root); returns where it now lives.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    auto& f = stack_.back();
    if (f.object) return &((*f.value)[f.key] = std::move(v));
    f.value->push_back(std::move(v));
    return &f.value->back();
  }
  bool add(json&& v) {
    (void)place(std::move(v));
    return true;
  }
  bool open(json&& v, bool object) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth) {
      error_ = Error::kTooDeep;
      return false;
    }
    json* where = place(std::move(v));
    stack_.push_back(Frame{where, object, {}, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  [[nodiscard]] std::string pointer() const {
    std::string out;
    for (const auto& f : stack_) {
      if (&f == &stack_.back()) break;
      out += "/" + (f.object ? escape_pointer_token(f.key) : std::to_string(f.value->size() - 1));
    }
    return out;
  }

  json& root_;
  std::vector<Frame> stack_;
  Error error_ = Error::kNone;
  std::size_t position_ = 0;
  std::string message_;
  std::string pointer_;
};

}  // namespace

FileSizeLimit::FileSizeLimit(std::uint64_t max_bytes) : previous_(max_file_bytes().exchange(max_bytes)) {}
FileSizeLimit::~FileSizeLimit() { max_file_bytes().store(previous_); }
std::uint64_t FileSizeLimit::current() { return max_file_bytes().load(); }

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && !ec;
}

std::string read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  if (!fs::is_regular_file(st)) {
    throw InputError(path, "",
                     std::string("not a regular file (") + (fs::is_directory(st) ? "a directory" : "a device or pipe") +
                         "); expected a file");
  }
  const std::uint64_t limit = FileSizeLimit::current();
  const auto size = fs::file_size(path, ec);
  const auto too_big = [&](std::uint64_t bytes) {
    return InputError(path, "",
                      "file is " + std::to_string(bytes) + " bytes; the limit is " + std::to_string(limit) +
                          " (clustersim --max-file-size BYTES raises it)");
  };
  if (!ec && size > limit) throw too_big(size);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  // Read at most limit + 1 bytes: a file that grows while being read is still capped.
  std::string out;
  if (!ec) out.reserve(static_cast<std::size_t>(size) + 1);  // one allocation for the usual file
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > limit) throw too_big(out.size());
  }
  return out;
}

JsonDoc parse_text(const std::string& text, const std::string& origin) {
  JsonDoc doc{origin, nullptr};
  Builder b(doc.json);
  const bool ok = nlohmann::json::sax_parse(text, &b);
  if (ok && b.error() == Builder::Error::kNone) return doc;
  switch (b.error()) {
    case Builder::Error::kDuplicate: throw InputError(origin, b.error_pointer(), b.message());
    case Builder::Error::kTooDeep:
      throw InputError(where(text, origin, too_deep_at(text)), "",
                       "malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    default: break;
  }
  // A syntax error: nlohmann's offset counts the byte it stopped at.
  throw InputError(where(text, origin, b.position() == 0 ? 0 : b.position() - 1), "", "malformed JSON: " + b.message());
}

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

JsonDoc load(const std::string& path) { return parse_text(read_file(path), path); }

}  // namespace cs::config
