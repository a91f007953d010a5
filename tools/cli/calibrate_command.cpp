// `calibrate`: runs clustersim-probe (built beside this executable when nvcc was found), so that
// the CUDA libraries stay out of the main binary's start-up (TOOLCHAIN.md pitfall 7).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "sim/core/errors.hpp"
#include "tools/cli/commands.hpp"

namespace cs::cli {

Action add_calibrate(CLI::App& app, const Globals& g) {
  auto* cmd = app.add_subcommand("calibrate", "measure this machine's GPUs into a hardware profile (needs a GPU)");
  struct Opts {
    std::string gpus, out, base;
    bool quick = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--gpus", o->gpus, "GPU indices, e.g. 0,1,2,3 (default: all)");
  cmd->add_flag("--quick", o->quick, "fewer shapes and sizes (under a minute)");
  cmd->add_option("--out", o->out, "profile JSON to write")->required();
  cmd->add_option("--base", o->base, "datasheet profile to start from (default: matched from the GPU name)");
  return [o, &g]() -> int {
#ifndef CLUSTERSIM_HAVE_PROBE
    (void)g;
    throw DeviceError("built without CUDA (nvcc not found at configure time): clustersim calibrate needs the probe");
#else
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto probe = (ec ? std::filesystem::path(".") : self.parent_path()) / "clustersim-probe";
    if (!std::filesystem::exists(probe)) {
      throw DeviceError("the GPU probe is missing: expected " + probe.string() +
                        " beside clustersim (rebuild with nvcc present)");
    }
    std::vector<std::string> args{probe.string(), "--out", o->out, "--data-dir", g.data_dir};
    if (!o->gpus.empty()) args.insert(args.end(), {"--gpus", o->gpus});
    if (!o->base.empty()) args.insert(args.end(), {"--base", o->base});
    if (o->quick) args.push_back("--quick");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    execv(probe.c_str(), argv.data());
    throw DeviceError("cannot run " + probe.string() + ": " + std::strerror(errno));
#endif
  };
}

}  // namespace cs::cli
