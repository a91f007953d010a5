#include "tools/cli/field_flags.hpp"

#include <cctype>

namespace cs::cli {

using config::FieldType;

FieldFlags::FieldFlags(CLI::App* cmd, config::ScenarioKind kind, const std::set<std::string>& skip)
    : cmd_(cmd), kind_(kind) {
  std::set<std::string> done;
  for (const auto* f : config::fields_of(kind)) {
    if (f->flag.empty() || skip.count(f->flag) || !done.insert(f->flag).second) continue;
    const std::string help = f->meaning + (f->unit.empty() ? "" : " [" + f->unit + "]") +
                             (f->required ? "" : " (default: " + f->default_text + ")");
    CLI::Option* opt = nullptr;
    switch (f->type) {
      case FieldType::kInt: opt = cmd->add_option(f->flag, ints_[f->path], help); break;
      case FieldType::kNumber: opt = cmd->add_option(f->flag, numbers_[f->path], help); break;
      case FieldType::kBool: opt = cmd->add_flag(f->flag, bools_[f->path], help); break;
      case FieldType::kString:
      case FieldType::kEnum:
      case FieldType::kTime:
      case FieldType::kLength:
      case FieldType::kRate: opt = cmd->add_option(f->flag, texts_[f->path], help); break;
    }
    // Only unconditionally required fields make required flags ("(required)"); a field required
    // inside an optional object or one of several choices (workload, disaggregate) does not.
    if (f->required && f->default_text == "(required)") opt->required();
  }
}

void FieldFlags::put(nlohmann::json& doc) const {
  for (const auto* f : config::fields_of(kind_)) {
    if (f->flag.empty() || !cmd_->get_option_no_throw(f->flag) || cmd_->count(f->flag) == 0) continue;
    nlohmann::json v;
    if (auto it = ints_.find(f->path); it != ints_.end()) {
      v = it->second;
    } else if (auto n = numbers_.find(f->path); n != numbers_.end()) {
      v = n->second;
    } else if (auto b = bools_.find(f->path); b != bools_.end()) {
      v = b->second;
    } else if (auto t = texts_.find(f->path); t != texts_.end()) {
      v = config::value_from_text(f, t->second);
    } else {
      continue;  // a flag shared by several fields, registered for the first (the command reads it)
    }
    config::set_path(doc, f->path, v, kCommandLine);
  }
}

std::string FieldFlags::text(const std::string& flag) const {
  for (const auto* f : config::fields_of(kind_)) {
    if (f->flag == flag) {
      auto t = texts_.find(f->path);
      return t == texts_.end() ? std::string() : t->second;
    }
  }
  return {};
}

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Replaces each whole occurrence of `from` (not followed by more of a name) with `to`.
std::string replace_path(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    const std::size_t end = at + from.size();
    if (end < text.size() && name_char(text[end])) {
      at = end;
      continue;
    }
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

}  // namespace

InputError name_flags(const InputError& e, config::ScenarioKind kind, const std::map<std::string, std::string>& extra) {
  std::vector<InputProblem> out;
  for (auto p : e.problems()) {
    if (p.file == kCommandLine) {
      if (const auto* f = config::find_field(kind, p.pointer); f && !f->flag.empty()) {
        p.pointer = f->flag;
      } else if (auto it = extra.find(p.pointer); it != extra.end()) {
        p.pointer = it->second;
      }
      for (const auto* f : config::fields_of(kind)) {
        if (!f->flag.empty()) p.message = replace_path(p.message, f->path, f->flag);
      }
    }
    out.push_back(p);
  }
  return InputError(out);
}

}  // namespace cs::cli
