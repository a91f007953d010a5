// clustersim: the command-line front end. Maps every error to its exit code (README, "Exit codes").
#include <cstdint>
#include <iostream>
#include <vector>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/parallel.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/work_bounds.hpp"

#ifndef CLUSTERSIM_DATA_DIR
#define CLUSTERSIM_DATA_DIR "."
#endif

namespace {

/// The message for arguments no option took: each unknown flag with the closest flag the chosen
/// subcommand (or the top level) has, and stray values as values. CLI11's own reads "The following
/// arguments were not expected: 2 --micro-bach" (reversed, no suggestion).
std::string unexpected_arguments(CLI::App& app) {
  CLI::App* where = &app;
  for (auto* sub = &app; sub != nullptr;) {
    const auto subs = sub->get_subcommands();
    sub = subs.empty() ? nullptr : subs.front();
    if (sub != nullptr) where = sub;
  }
  std::vector<std::string> flags;
  for (auto* a = where; a != nullptr; a = a->get_parent()) {
    for (const auto* o : a->get_options()) {
      for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
    }
  }
  std::string msg;
  const std::string help = where == &app ? "clustersim --help" : "clustersim " + where->get_name() + " --help";
  const auto rest = app.remaining(true);
  const auto is_flag = [](const std::string& a) { return a.size() > 1 && a[0] == '-'; };
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const auto& arg = rest[i];
    if (!msg.empty()) msg += "; ";
    if (is_flag(arg)) {
      const auto flag = arg.substr(0, arg.find('='));
      msg += "unknown flag " + flag;
      if (auto m = cs::config::closest_match(flag, flags)) msg += " (did you mean " + *m + "?)";
      if (arg.find('=') == std::string::npos && i + 1 < rest.size() && !is_flag(rest[i + 1]))
        msg += " with value '" + rest[++i] + "'";
    } else {
      msg += "unexpected value '" + arg + "'";
    }
  }
  return msg + " (see " + help + ")";
}

}  // namespace

int main(int argc, char** argv) {
  using cs::ExitCode;
  cs::cli::Globals globals{CLUSTERSIM_DATA_DIR, cs::cli::kDefaultMaxWork};
  CLI::App app{"clustersim: a discrete-event performance simulator for GPU clusters running LLMs"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags (--threads, --max-work, ...) also after the command
  app.add_option("--data-dir", globals.data_dir, "folder holding models/, calibration/ and scenarios/")
      ->capture_default_str();
  int threads = 0;
  app.add_option("--threads", threads,
                 "worker threads for independent simulations (variants, validation cases, sweep points, the "
                 "one-GPU baseline); 0 = all cores. Output is the same bytes for any count")
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-work", globals.max_work,
                 "the most work items (tasks, flows, request tokens, GPUs) one simulation may take; larger runs are "
                 "refused (exit 4) before they allocate. About 120 bytes of memory each (docs/testing.md)")
      ->capture_default_str()
      ->check(cs::cli::positive_number());
  bool progress_lines = false;
  app.add_flag("--progress", progress_lines,
               "progress of long runs (plan, sweep, claims, validate-published, serving) as plain lines on "
               "standard error even when it is not a terminal (on a terminal a bar is always drawn)");
  std::uint64_t max_file_bytes = cs::config::kDefaultMaxFileBytes;
  app.add_option("--max-file-size", max_file_bytes,
                 "the largest input file read, in bytes (larger files and non-regular files are refused)")
      ->capture_default_str()
      ->check(cs::cli::positive_number());
  std::vector<std::pair<CLI::App*, cs::cli::Action>> actions;
  auto reg = [&](auto add, const char* name) {
    auto action = add(app, globals);
    actions.emplace_back(app.get_subcommand(name), action);
  };
  reg(cs::cli::add_run, "run");
  reg(cs::cli::add_train, "train");
  reg(cs::cli::add_validate, "validate");
  reg(cs::cli::add_collective, "collective");
  reg(cs::cli::add_list, "list");
  reg(cs::cli::add_validate_published, "validate-published");
  reg(cs::cli::add_import, "import");
  reg(cs::cli::add_calibrate, "calibrate");
  reg(cs::cli::add_inspect, "inspect");
  reg(cs::cli::add_infer, "infer");
  reg(cs::cli::add_infer_sweep, "infer-sweep");
  reg(cs::cli::add_describe, "describe");
  reg(cs::cli::add_plan, "plan");
  reg(cs::cli::add_claims, "claims");
  reg(cs::cli::add_sweep, "sweep");
  reg(cs::cli::add_kernels, "kernels");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    std::cerr << "error: command line: " << unexpected_arguments(app) << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: command line: " << e.what() << " (see --help)\n";
    return static_cast<int>(ExitCode::kBadInput);
  }
  cs::cli::set_progress_lines(progress_lines);
  const cs::ThreadLimit limit(threads);
  const cs::config::FileSizeLimit file_limit(max_file_bytes);
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const cs::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.to_string() << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const cs::InfeasibleError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kInfeasible);
  } catch (const cs::DeviceError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kNoDevice);
  } catch (const std::exception& e) {
    std::cerr << "internal error, please report: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kInternal);
  }
}
