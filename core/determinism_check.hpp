// The determinism check of `--profile deterministic`: on which level or shape a server's claim
// to answer bit for bit the same first broke, and whether tokens or only logprobs broke there.
// Definitions in docs/design.md "Determinism check".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/probe_analysis.hpp"

namespace llmrepro::core {

// Where the claim is tested: a probe kind at a level, for the prefix probe which side, and the
// restart probe's requests after a restart (its first and later ones against its first first).
enum class DeterminismShape { batch, cold_prefix, warm_prefix, restart };
const char* to_string(DeterminismShape shape);

// What broke: a completion left the prompt's reference (`tokens`), or the tokens held and a
// logprob or gap moved (`logprobs`).
enum class DeterminismBreak { tokens, logprobs };
const char* to_string(DeterminismBreak what);

// One probe kind at one level (or one side of the prefix probe), over every prompt.
struct DeterminismCell {
  ProbeKind probe = ProbeKind::sweep;
  int level = 1;
  DeterminismShape shape = DeterminismShape::batch;
  int prompts = 0;            // prompts with a successful run here
  int token_breaks = 0;       // of them, prompts with a run that left the reference
  int logprob_breaks = 0;     // prompts whose runs kept its tokens but moved a logprob or gap
  double max_drift = 0;       // the largest logprob or gap drift, nats
  int positions_compared = 0; // logprob positions compared with the reference
  // False for the cold side of the prefix probe where the endpoint offered no cold mode: its
  // "cold" trials ran on whatever the cache held, so the cell says nothing about a cold cache.
  // Also false for a mixed cell whose fillers the server refused (or none of which fit its
  // context per slot): its audited requests never shared a batch with the planned traffic. And
  // for the restart cell where no round restarted and became ready (no successful request).
  bool tested = true;
  std::string untested_reason; // why not, in words, where not tested
  // What a reader must know of a cell that ran: "31 of 48 fillers shortened to fit the server's
  // context per slot"; empty where nothing.
  std::string note;
  bool held() const { return tested && token_breaks == 0 && logprob_breaks == 0; }
};

// The first break: where, what, and the prompt that shows it.
struct DeterminismFinding {
  ProbeKind probe = ProbeKind::sweep;
  int level = 1;
  DeterminismShape shape = DeterminismShape::batch;
  DeterminismBreak what = DeterminismBreak::tokens;
  std::string prompt;
  // tokens: the leading tokens the differing run shares with the reference; logprobs: the first
  // position whose logprob or gap moved.
  std::optional<int> position;
  double drift = 0; // the prompt's largest logprob or gap drift there, nats
};

struct DeterminismCheck {
  // Every cell held and compared at least one logprob position: the claim stands on this audit.
  bool held = false;
  // Cells in the order the claim is tested: the sweep by ascending level, then the prefix
  // probe's cold and warm trials (level 1), the restart cell (level 1), then filler traffic
  // (mixed) and long prompts by ascending level.
  std::vector<DeterminismCell> cells;
  std::optional<DeterminismFinding> first_break; // empty when nothing broke
  // How the cold trials were made cold (core::cold_mode_text); empty where none ran or the
  // endpoint offered no cold mode.
  std::string cold_mode;
  // The restart probe was planned (--restart-cmd): without it the coverage line names the
  // restart cell as not tested.
  bool restart_planned = false;
  // Cells not tested (DeterminismCell::tested false): the claim is not checked there.
  int untested_cells() const;
};

// One probe kind's analysis of one endpoint; `prefix` is the prefix or restart probe's
// per-prompt drift (nullptr for the other kinds).
struct DeterminismInput {
  ProbeKind probe = ProbeKind::sweep;
  const AuditAnalysis* analysis = nullptr;
  const std::vector<PrefixPromptDrift>* prefix = nullptr;
  // The prefix probe only: how its cold trials were made cold (core::cold_mode_text); empty
  // leaves the cold cell untested.
  std::string cold_mode;
  // The endpoint's side traffic as the run counted it (null: unknown): the mixed probe's fillers
  // per level (a refusal or no filler fitting leaves that level's cell untested, shortened
  // fillers are noted) and the long probe's shortened contexts (noted).
  const ProbeActivity* activity = nullptr;
};

// Tests the claim on one endpoint's probe kinds. Sweep and mixed runs are compared, level by
// level, with each prompt's drift reference (LevelAnalysis::drift_from_reference and
// divergence_from_reference); the prefix probe's cold and warm trials with its first cold trial;
// the restart probe's first and later requests together with its first request after a restart
// (one cell, `restart`, not tested where none of them succeeded).
DeterminismCheck check_determinism(const std::vector<DeterminismInput>& inputs);

// The one line every report states near the verdict: "determinism claim broken at c=9 (sweep):
// logprobs drift 0.0039 nats, tokens identical (prompt q3, token 4)", "determinism claim held on
// every level and probe", or why it could not be checked.
std::string determinism_line(const DeterminismCheck& check);

// The probe activity a run stores: its own counts, but where it ran no cold prefix trial (a
// --resume that found every trial recorded), the cold mode the earlier run's trials had, since
// the records it reports are those trials'. Per endpoint, `now` in order.
std::vector<ProbeActivity> with_earlier_cold_modes(std::vector<ProbeActivity> now,
                                                   const std::vector<ProbeActivity>& before);

// The profile's coverage, one line every report prints beside determinism_line: the cells that
// ran, grouped by shape with their levels ("determinism coverage: ran sweep c=1,2,8; cold prefix
// cache; with filler traffic c=1,2"), then each note (". Sized to fit: with filler traffic c=1:
// 31 of 48 fillers shortened to fit the server's context per slot") and each cell not tested
// with its reason (". Not tested: with filler traffic c=8: 12 of 24 fillers refused (HTTP 400:
// ...)"), ending with "restart (no --restart-cmd)" where the restart probe was not planned.
std::string determinism_coverage_line(const DeterminismCheck& check);

// "sweep", "with filler traffic", "cold prefix cache", "warm prefix cache", "restart".
std::string shape_text(ProbeKind probe, DeterminismShape shape);

} // namespace llmrepro::core
