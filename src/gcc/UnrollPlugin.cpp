//===- gcc/UnrollPlugin.cpp - GCC plugin: unroll factors from a model -----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// mlbridge_gcc.so, a plugin for stock GCC 12: a GIMPLE pass at the start of
/// GCC's loop pipeline (after "loopinit") asks a model, through mlbridge's C
/// API, for every loop's unroll factor, and sets it as
/// `#pragma GCC unroll N` would (loop->unroll, which GCC's complete and RTL
/// unrollers honour). Loops that carry a pragma keep it. Without a model,
/// when the model fails, or when it answers 0, GCC decides: the object is
/// then the one plain GCC makes (docs/gcc-plugin.md).
///
//===----------------------------------------------------------------------===//

// The C++ library's headers come before GCC's, whose system.h poisons names
// they use.
#include "DecisionLog.h"
#include "LoopAnalysis.h"
#include "PluginOptions.h"
#include "UnrollAdvisor.h"
#include "support/PluginDescription.h"
#include "support/RunStats.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// GCC's headers, in the order they depend on one another.
#include "gcc-plugin.h"

#include "plugin-version.h"

#include "tree.h"

#include "tree-pass.h"

#include "opts.h"

#include "options.h"

#include "toplev.h"

#include "context.h"

#include "function.h"

#include "diagnostic-core.h"

#include "basic-block.h"

#include "tree-ssa-alias.h"

#include "gimple-expr.h"

#include "gimple.h"

#include "gimple-iterator.h"

#include "cfgloop.h"

/// GCC loads only plugins that declare this.
int plugin_is_GPL_compatible;

namespace mlbridge {
namespace gccplugin {
namespace {

/// Everything the plugin keeps for one compiler process.
struct PluginState {
  PluginOptions Options;
  UnrollAdvisor Advisor;
  DecisionLog Log;
  bool CreationReported = false;
  /// Loops seen, and those of them whose factor a pragma fixed.
  uint64_t Loops = 0, Pragmas = 0;

  explicit PluginState(PluginOptions O)
      : Options(std::move(O)), Advisor(Options.Runner, Options.MaxUnroll) {}
};

/// The process's state (made by plugin_init, freed at PLUGIN_FINISH).
std::unique_ptr<PluginState> State;

/// Where \p L starts in the source: the first located statement of its
/// header (or latch).
LoopPlace placeOf(function *Fn, class loop *L) {
  LoopPlace P;
  P.Function = function_name(Fn);
  P.Number = L->num;
  for (basic_block BB : {L->header, L->latch}) {
    if (!BB)
      continue;
    for (gimple_stmt_iterator G = gsi_start_bb(BB); !gsi_end_p(G);
         gsi_next(&G)) {
      location_t Loc = gimple_location(gsi_stmt(G));
      if (Loc == UNKNOWN_LOCATION)
        continue;
      expanded_location E = expand_location(Loc);
      P.File = E.file ? E.file : "";
      P.Line = E.line;
      return P;
    }
  }
  return P;
}

/// Decides (or leaves to GCC) the unroll factor of every loop of \p Fn.
void adviseLoops(PluginState &S, function *Fn) {
  for (class loop *L : loops_list(Fn, 0)) {
    const bool Pragma = L->unroll != 0;
    ++S.Loops;
    S.Pragmas += Pragma;
    if (Pragma && !S.Log.isOpen())
      continue;
    const LoopFeatures F = readLoopFeatures(L);
    UnrollAdvice A;
    if (Pragma)
      A.Factor = L->unroll;
    else
      A = S.Advisor.advise(function_name(Fn), F);
    if (A.From == UnrollAdvice::Source::Fallback &&
        !S.Advisor.creationProblem().empty() && !S.CreationReported) {
      S.CreationReported = true;
      inform(UNKNOWN_LOCATION, "mlbridge: %s; GCC decides every loop",
             S.Advisor.creationProblem().c_str());
    }
    if (!Pragma && A.Factor != KeepGccFactor) {
      L->unroll = static_cast<unsigned short>(A.Factor);
      if (A.Factor > 1)
        Fn->has_unroll = 1;
    }
    if (S.Log.isOpen() && !S.Log.write(placeOf(Fn, L), F, A, Pragma))
      inform(UNKNOWN_LOCATION, "mlbridge: cannot write the decision log '%s'",
             S.Options.LogPath.c_str());
  }
}

const pass_data UnrollPassData = {
    GIMPLE_PASS,
    "mlbridge_unroll",
    OPTGROUP_LOOP,
    TV_NONE,
    PROP_cfg | PROP_ssa,
    0,
    0,
    0,
    0,
};

/// The pass asking the model.
class UnrollPass final : public gimple_opt_pass {
public:
  explicit UnrollPass(gcc::context *Ctx)
      : gimple_opt_pass(UnrollPassData, Ctx) {}

  bool gate(function *) final {
    return State && (State->Advisor.hasModel() || State->Log.isOpen() ||
                     !State->Options.StatsPath.empty());
  }

  unsigned int execute(function *Fn) final {
    if (current_loops && number_of_loops(Fn) > 1)
      adviseLoops(*State, Fn);
    return 0;
  }
};

/// At the end of the compilation: a note when decisions fell back.
void finish(void *, void *) {
  if (!State)
    return;
  const UnrollAdvisor &A = State->Advisor;
  if (A.fellBack() && A.creationProblem().empty())
    inform(UNKNOWN_LOCATION,
           "mlbridge: %llu of %llu loops fell back to the decision of GCC; the "
           "first because %s",
           static_cast<unsigned long long>(A.fellBack()),
           static_cast<unsigned long long>(A.asked()),
           A.firstProblem().c_str());
  if (!State->Options.StatsPath.empty()) {
    RunStats R;
    R.Tool = "gcc-unroll";
    R.Unit = main_input_filename ? main_input_filename : "";
    R.Runner = State->Options.Runner.empty() ? "none" : State->Options.Runner;
    R.Decisions = State->Loops;
    R.Answered = A.answered();
    R.Fallbacks = A.fellBack();
    R.FirstError =
        A.creationProblem().empty() ? A.firstProblem() : A.creationProblem();
    R.detail("pragmas", static_cast<int64_t>(State->Pragmas))
        .detail("max_unroll", State->Options.MaxUnroll);
    std::string Problem;
    if (!R.append(State->Options.StatsPath, Problem))
      inform(UNKNOWN_LOCATION, "mlbridge: %s", Problem.c_str());
  }
  State.reset();
}

plugin_info Info = {
    MLBRIDGE_VERSION_STRING,
    "Unroll factors of loops from an mlbridge model. Arguments: "
    "-fplugin-arg-mlbridge_gcc-runner=CONFIG (a runner configuration, e.g. "
    "pipe:BASE, aot:model.so, onnx:model.onnx; none: GCC decides), "
    "-fplugin-arg-mlbridge_gcc-max-unroll=N (default 16), "
    "-fplugin-arg-mlbridge_gcc-log=FILE (JSON lines, appended); or the "
    "environment variables MLBRIDGE_GCC_RUNNER, MLBRIDGE_GCC_MAX_UNROLL, "
    "MLBRIDGE_GCC_LOG."};

/// The plugin's (key, value) arguments. GCC's own parsing cuts a value that
/// holds '=' (-fplugin-arg-P-runner=pipe:B,format=json loses one character
/// for each '=' after the first), so they are read from the command line as
/// GCC decoded it when it has them, and from \p Info otherwise.
std::vector<std::pair<std::string, std::string>>
pluginArguments(const plugin_name_args &Info) {
  std::vector<std::pair<std::string, std::string>> Args;
  const std::string Prefix = std::string(Info.base_name) + "-";
  for (unsigned I = 0; I < save_decoded_options_count; ++I) {
    const cl_decoded_option &O = save_decoded_options[I];
    if (O.opt_index != OPT_fplugin_arg_ || !O.arg ||
        std::strncmp(O.arg, Prefix.c_str(), Prefix.size()) != 0)
      continue;
    const std::string KeyValue = O.arg + Prefix.size();
    const size_t Equals = KeyValue.find('=');
    if (Equals == std::string::npos)
      Args.emplace_back(KeyValue, "");
    else
      Args.emplace_back(KeyValue.substr(0, Equals),
                        KeyValue.substr(Equals + 1));
  }
  if (!Args.empty() || Info.argc == 0)
    return Args;
  for (int I = 0; I < Info.argc; ++I)
    Args.emplace_back(Info.argv[I].key,
                      Info.argv[I].value ? Info.argv[I].value : "");
  return Args;
}

/// The plugin's contract (support/PluginDescription.h).
PluginDescription description() {
  std::vector<TensorSpec> Features;
  for (unsigned I = 0; I < NumLoopFeatures; ++I)
    Features.push_back(TensorSpec::of<int64_t>(LoopFeatureNames[I], {1}));
  return {"gcc-unroll",
          "GCC",
          "-fplugin-arg-mlbridge_gcc-",
          "=",
          pluginOptionSpecs(),
          std::move(Features),
          {TensorSpec::of<int64_t>(UnrollFactorName, {1})}};
}

} // namespace
} // namespace gccplugin
} // namespace mlbridge

/// GCC's entry point: reads the arguments and registers the pass.
int plugin_init(plugin_name_args *PluginInfo, plugin_gcc_version *Version) {
  using namespace mlbridge::gccplugin;
  if (!plugin_default_version_check(Version, &gcc_version)) {
    error("mlbridge: this plugin was built for GCC %s, not %s",
          gcc_version.basever, Version->basever);
    return 1;
  }
  PluginOptions Options = parsePluginOptions(
      pluginArguments(*PluginInfo),
      [](const char *Name) -> const char * { return std::getenv(Name); });
  if (!Options.Problem.empty()) {
    inform(UNKNOWN_LOCATION, "mlbridge: %s; GCC decides every loop",
           Options.Problem.c_str());
    Options.Runner.clear();
    Options.LogPath.clear();
  } else if (!Options.DescribePath.empty()) {
    // Described, and nothing registered: GCC decides every loop.
    if (mlbridge::Error E = description().write(Options.DescribePath))
      inform(UNKNOWN_LOCATION, "mlbridge: %s", E.message().c_str());
    return 0;
  }
  State = std::make_unique<PluginState>(std::move(Options));
  std::string Problem;
  if (!State->Options.LogPath.empty() &&
      !State->Log.open(State->Options.LogPath, Problem))
    inform(UNKNOWN_LOCATION, "mlbridge: %s", Problem.c_str());

  register_callback(PluginInfo->base_name, PLUGIN_INFO, nullptr, &Info);
  register_pass_info Pass;
  // GCC's pass manager owns its passes (it deletes them when it is torn
  // down), plugin passes included.
  Pass.pass = new UnrollPass(g);
  Pass.reference_pass_name = "loopinit";
  Pass.ref_pass_instance_number = 1;
  Pass.pos_op = PASS_POS_INSERT_AFTER;
  register_callback(PluginInfo->base_name, PLUGIN_PASS_MANAGER_SETUP, nullptr,
                    &Pass);
  register_callback(PluginInfo->base_name, PLUGIN_FINISH, finish, nullptr);
  return 0;
}
