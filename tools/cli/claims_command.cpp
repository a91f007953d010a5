// `claims`: the seed article's claims 1-12 run and judged (the logic is sim/claims).
#include <fstream>
#include <iostream>

#include "sim/claims/claims.hpp"
#include "sim/config/catalog.hpp"
#include "sim/core/errors.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

Action add_claims(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand(
      "claims",
      "run the seed article's claims (scenarios/seed-claims) and judge each: supported, contradicted, "
      "or depends on X");
  struct Opts {
    bool json = false, markdown = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_flag("--json", o->json, "print {\"claims\": [{\"id\", \"claim\", \"verdict\", \"figures\", ...}]}");
  cmd->add_flag("--markdown", o->markdown, "print docs/seed-claims.md");
  cmd->add_option("--out", o->out, "also write docs/seed-claims.md's text to this file");
  return [o, &g] {
    const config::Catalog catalog(g.data_dir);
    // Opened first: an unwritable path is reported before the runs, not after.
    std::ofstream file;
    if (!o->out.empty()) {
      file.open(o->out, std::ios::binary);
      if (!file) throw InputError(o->out, "", "cannot write this file");
    }
    // Some 40 runs: a bar on a terminal, plain lines otherwise (run_batch counts the real number).
    auto progress = batch_progress("claims' scenarios", 40);
    const auto claims = claims::run_seed_claims(catalog, progress.get());
    if (file.is_open()) file << claims::claims_markdown(claims);
    if (o->json) {
      std::cout << claims::claims_json(claims).dump(2) << "\n";
    } else if (o->markdown) {
      std::cout << claims::claims_markdown(claims);
    } else {
      std::cout << claims::claims_table(claims);
    }
    return 0;
  };
}

}  // namespace cs::cli
