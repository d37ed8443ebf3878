// The determinism check, as docs/design.md "Determinism check" defines it.
//
// A server that claims determinism claims that every run of a prompt returns the same tokens
// and the same logprobs, whatever else is in the batch. The plan of --profile deterministic
// gives it the chances to fail: batch sizes where kernels change, filler traffic across 256
// tokens, cold and warm prefix caches. Every run is compared with one reference run of its prompt
// (never with the modal completion: the claim is that nothing moves, so the first run is as good
// a witness as any), and the cells are walked in the order a reader would test the claim: the
// sweep's batch sizes ascending (the bare batch-size question), then the shapes (cold prefix
// cache, warm prefix cache, after a restart, filler traffic by level, sampled filler traffic by
// level), so that the
// first broken cell is the simplest condition under which the claim stops being true. A cold cell
// counts only where the endpoint offered a real cold mode (a flush that answered, or a per-request
// switch): otherwise it is "not tested", never "held" and never "broken after a flush".
#include "core/determinism_check.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <utility>

#include "core/logprob_drift.hpp"
#include "core/probe_text.hpp"

namespace llmrepro::core {

const char* to_string(DeterminismShape shape) {
  switch (shape) {
  case DeterminismShape::batch: return "batch";
  case DeterminismShape::cold_prefix: return "cold";
  case DeterminismShape::warm_prefix: return "warm";
  case DeterminismShape::restart: return "restart";
  }
  return "batch";
}

const char* to_string(DeterminismBreak what) {
  return what == DeterminismBreak::tokens ? "tokens" : "logprobs";
}

std::string shape_text(ProbeKind probe, DeterminismShape shape) {
  switch (shape) {
  case DeterminismShape::cold_prefix: return "cold prefix cache";
  case DeterminismShape::warm_prefix: return "warm prefix cache";
  case DeterminismShape::restart: return "restart";
  case DeterminismShape::batch: break;
  }
  switch (probe) {
  case ProbeKind::mixed: return "with filler traffic";
  case ProbeKind::mixed_sampling: return "with sampled filler traffic";
  case ProbeKind::long_prompt: return "long prompts";
  case ProbeKind::prefix: return "prefix";
  case ProbeKind::restart: return "restart";
  case ProbeKind::sweep: break;
  }
  return "sweep";
}

namespace {

double drift_of(const LogprobDrift& drift) { return std::max(drift.max_abs, drift.max_abs_gap); }

// A cell and, for its first break, the prompt that shows it best: the earliest divergence for
// tokens, the largest drift for logprobs.
struct CellBuilder {
  DeterminismCell cell;
  std::optional<DeterminismFinding> token_witness;
  std::optional<DeterminismFinding> logprob_witness;

  void add(const std::string& prompt, const LogprobDrift& drift,
           const std::optional<int>& divergence) {
    ++cell.prompts;
    cell.max_drift = std::max(cell.max_drift, drift_of(drift));
    cell.positions_compared += drift.positions_compared;
    DeterminismFinding finding{cell.probe, cell.level, cell.shape,     DeterminismBreak::tokens,
                               prompt,     divergence, drift_of(drift)};
    if (divergence) {
      ++cell.token_breaks;
      if (!token_witness || *divergence < *token_witness->position) token_witness = finding;
    } else if (has_drift(drift)) {
      ++cell.logprob_breaks;
      finding.what = DeterminismBreak::logprobs;
      finding.position = drift.first_position;
      if (!logprob_witness || finding.drift > logprob_witness->drift) logprob_witness = finding;
    }
  }
};

// The sweep isolates the batch size, so its levels are tested first; then the shapes, simplest
// first: the serial prefix probe cold and warm, the serial restart probe, then filler traffic and
// long prompts by level.
int probe_order(ProbeKind probe, DeterminismShape shape) {
  if (shape == DeterminismShape::cold_prefix) return 1;
  if (shape == DeterminismShape::warm_prefix) return 2;
  if (shape == DeterminismShape::restart) return 3;
  switch (probe) {
  case ProbeKind::sweep: return 0;
  case ProbeKind::mixed: return 4;
  case ProbeKind::mixed_sampling: return 5;
  case ProbeKind::long_prompt: return 6;
  case ProbeKind::prefix:
  case ProbeKind::restart: return 7;
  }
  return 0;
}

// One prompt's two restart sides as one comparison with its first request after a restart: the
// larger drift maxima, the positions summed, the earlier first position and divergence.
LogprobDrift both_sides(const PrefixPromptDrift& prompt) {
  LogprobDrift drift = prompt.cold_drift_from_reference;
  join_logprob_drift(drift, prompt.warm_drift_from_reference);
  return drift;
}

std::optional<int> earlier_divergence(const PrefixPromptDrift& prompt) {
  const std::optional<int>& first = prompt.cold_divergence_from_reference;
  const std::optional<int>& later = prompt.warm_divergence_from_reference;
  if (first && later) return std::min(*first, *later);
  return first ? first : later;
}

// Why the restart cell is not tested when none of its requests succeeded: the restarts failed
// (each failed round's requests are recorded as failed, never sent), or what was sent failed.
std::string no_restart_reason(const ProbeActivity* activity) {
  if (activity != nullptr && activity->restarts_failed > 0)
    return "no round restarted and became ready (" + std::to_string(activity->restarts_failed) +
           " of " + std::to_string(activity->restarts_run) + " restarts failed)";
  return "no request after a restart succeeded";
}

// Why a cold cell without a cold mode is not tested; the line of determinism_line words it so.
constexpr const char* k_no_cold_mode =
    "the endpoint offered no cold mode (no cache flush route answered, no per-request cache "
    "switch), so its cold trials ran on whatever the cache held";

// What the shared prefix's sizing makes of a prefix cell: a prefix cut to fit is noted; none at
// all (not one word fit) leaves the cell untested, since a warm trial then found nothing of its
// own cached and a cold one had nothing to miss.
void prefix_sizing(DeterminismCell& cell, const ProbeActivity* activity) {
  if (activity == nullptr || !activity->prefix_shortened) return;
  if (activity->prefix_words > 0) {
    cell.note = prefix_sizing_text(*activity);
    return;
  }
  cell.tested = false;
  cell.untested_reason = prefix_sizing_text(*activity);
}

// What the side traffic of `cell`'s level makes of it: a mixed or mixed-sampling level whose
// fillers the server refused, or none of which fit, is not tested; shortened fillers and long
// contexts are noted. Each filler probe is judged by its own fillers (FillerLevel::sampled).
void side_traffic(DeterminismCell& cell, const ProbeActivity* activity) {
  if (activity == nullptr) return;
  if (cell.probe == ProbeKind::long_prompt && activity->long_shortened > 0)
    cell.note = std::to_string(activity->long_shortened) + " long prompts' context cut to as few " +
                "as " + std::to_string(activity->long_context_words_min) + " of " +
                std::to_string(k_long_context_words) +
                " words to fit the server's context per slot";
  if (!probe_uses_fillers(cell.probe)) return;
  const FillerLevel* fillers =
      find_filler_level(*activity, cell.level, fillers_sampled(cell.probe));
  if (fillers == nullptr) return;
  if (fillers->unfit) {
    cell.tested = false;
    cell.untested_reason = "no filler fits the server's context per slot, so none was sent";
  } else if (fillers->refused > 0) {
    cell.tested = false;
    cell.untested_reason = std::to_string(fillers->refused) + " of " +
                           std::to_string(fillers->sent) + " fillers refused (" + fillers->refusal +
                           ")";
  }
  if (fillers->shortened > 0)
    cell.note = std::to_string(fillers->shortened) + " of " + std::to_string(fillers->sent) +
                " fillers shortened to fit the server's context per slot";
}

// A cell in words: "cold prefix cache", "with filler traffic c=8".
std::string cell_text(const DeterminismCell& cell) {
  const std::string shape = shape_text(cell.probe, cell.shape);
  return cell.shape == DeterminismShape::batch ? shape + " c=" + std::to_string(cell.level) : shape;
}

// Where a cell is, in words: "on a cold prefix cache", "with filler traffic at c=8".
std::string cell_place(const DeterminismCell& cell) {
  if (cell.shape == DeterminismShape::restart) return "after a restart";
  if (cell.shape != DeterminismShape::batch) return "on a " + shape_text(cell.probe, cell.shape);
  const std::string shape = shape_text(cell.probe, cell.shape);
  const std::string level = "c=" + std::to_string(cell.level);
  return probe_uses_fillers(cell.probe) ? shape + " at " + level
                                        : "at " + level + " (" + shape + ")";
}

std::string format_drift(double drift) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2g", drift);
  return buffer;
}

} // namespace

DeterminismCheck check_determinism(const std::vector<DeterminismInput>& inputs) {
  std::vector<CellBuilder> builders;
  const auto cell_for = [&builders](ProbeKind probe, int level,
                                    DeterminismShape shape) -> CellBuilder& {
    for (auto& builder : builders)
      if (builder.cell.probe == probe && builder.cell.level == level && builder.cell.shape == shape)
        return builder;
    CellBuilder builder;
    builder.cell.probe = probe;
    builder.cell.level = level;
    builder.cell.shape = shape;
    builders.push_back(builder);
    return builders.back();
  };
  for (const auto& input : inputs) {
    if (input.prefix != nullptr && input.probe == ProbeKind::restart) {
      // Serial, level 1: every request after a restart, first or later, against the first.
      CellBuilder& restart = cell_for(input.probe, 1, DeterminismShape::restart);
      for (const auto& prompt : *input.prefix)
        if (prompt.cold_runs + prompt.warm_runs > 0)
          restart.add(prompt.id, both_sides(prompt), earlier_divergence(prompt));
      restart.cell.tested = restart.cell.prompts > 0;
      if (!restart.cell.tested) restart.cell.untested_reason = no_restart_reason(input.activity);
      continue;
    }
    if (input.prefix != nullptr) {
      // The prefix probe is serial: its cells are at level 1.
      int cold_trials = 0;
      int reused = 0;
      for (const auto& prompt : *input.prefix) {
        cold_trials += prompt.cold_runs;
        reused += prompt.cold_cache_reused;
      }
      for (const auto& prompt : *input.prefix) {
        if (prompt.cold_runs > 0) {
          CellBuilder& cold = cell_for(input.probe, 1, DeterminismShape::cold_prefix);
          cold.cell.tested = !input.cold_mode.empty() && reused == 0;
          if (input.cold_mode.empty())
            cold.cell.untested_reason = k_no_cold_mode;
          else if (reused > 0)
            cold.cell.untested_reason = "cold mode not confirmed: " + std::to_string(reused) +
                                        " of " + std::to_string(cold_trials) +
                                        " cold trials reused the cache";
          cold.add(prompt.id, prompt.cold_drift_from_reference,
                   prompt.cold_divergence_from_reference);
        }
        if (prompt.warm_runs > 0)
          cell_for(input.probe, 1, DeterminismShape::warm_prefix)
              .add(prompt.id, prompt.warm_drift_from_reference,
                   prompt.warm_divergence_from_reference);
      }
      for (auto& builder : builders)
        if (builder.cell.probe == input.probe) prefix_sizing(builder.cell, input.activity);
      continue;
    }
    if (input.analysis == nullptr) continue;
    for (const auto& prompt : input.analysis->prompts)
      for (const auto& level : prompt.by_concurrency)
        if (level.runs > 0) {
          CellBuilder& builder = cell_for(input.probe, level.concurrency, DeterminismShape::batch);
          if (builder.cell.prompts == 0) side_traffic(builder.cell, input.activity);
          builder.add(prompt.id, level.drift_from_reference, level.divergence_from_reference);
        }
  }
  std::stable_sort(builders.begin(), builders.end(), [](const auto& a, const auto& b) {
    return std::tuple(probe_order(a.cell.probe, a.cell.shape), a.cell.level) <
           std::tuple(probe_order(b.cell.probe, b.cell.shape), b.cell.level);
  });

  DeterminismCheck check;
  for (const auto& input : inputs) {
    if (input.probe == ProbeKind::prefix && input.prefix != nullptr)
      check.cold_mode = input.cold_mode;
    if (input.probe == ProbeKind::restart) check.restart_planned = true;
  }
  bool compared_everywhere = !builders.empty();
  for (const auto& builder : builders) {
    check.cells.push_back(builder.cell);
    if (builder.cell.positions_compared == 0 || !builder.cell.tested) compared_everywhere = false;
    // What an untested cell shows is not evidence either way.
    if (check.first_break || !builder.cell.tested) continue;
    if (builder.token_witness)
      check.first_break = builder.token_witness;
    else if (builder.logprob_witness)
      check.first_break = builder.logprob_witness;
  }
  check.held = !check.first_break && compared_everywhere;
  return check;
}

std::vector<ProbeActivity> with_earlier_cold_modes(std::vector<ProbeActivity> now,
                                                   const std::vector<ProbeActivity>& before) {
  for (std::size_t e = 0; e < now.size() && e < before.size(); ++e) {
    ProbeActivity& activity = now[e];
    if (activity.flush_looked_up || activity.cold_per_request) continue;
    activity.flush_looked_up = before[e].flush_looked_up;
    activity.flush_route = before[e].flush_route;
    activity.cold_per_request = before[e].cold_per_request;
  }
  return now;
}

int DeterminismCheck::untested_cells() const {
  return static_cast<int>(
      std::count_if(cells.begin(), cells.end(), [](const auto& cell) { return !cell.tested; }));
}

std::string determinism_line(const DeterminismCheck& check) {
  if (check.first_break) {
    const DeterminismFinding& found = *check.first_break;
    std::string shape = shape_text(found.probe, found.shape);
    if (found.shape == DeterminismShape::cold_prefix) shape += " " + check.cold_mode;
    std::string line =
        "determinism claim broken at c=" + std::to_string(found.level) + " (" + shape + "): ";
    if (found.what == DeterminismBreak::tokens) {
      line += "tokens differ from the reference";
      if (found.position) line += " from token " + std::to_string(*found.position);
    } else {
      line += "logprobs drift " + format_drift(found.drift) + " nats, tokens identical";
      if (found.position) line += " (from token " + std::to_string(*found.position) + ")";
    }
    return line + ", prompt " + found.prompt;
  }
  if (check.held) return "determinism claim held on every level and probe";
  if (check.untested_cells() > 0) {
    const bool rest_compared =
        std::all_of(check.cells.begin(), check.cells.end(),
                    [](const auto& cell) { return !cell.tested || cell.positions_compared > 0; });
    std::string line = "determinism claim not checked ";
    bool first = true;
    for (const auto& cell : check.cells) {
      if (cell.tested) continue;
      line += (first ? "" : "; ") + cell_place(cell) + ": " + cell.untested_reason;
      first = false;
    }
    return line + (rest_compared ? "; every other level and probe held" : "");
  }
  if (check.cells.empty()) return "determinism claim not checked: no successful run to compare";
  return "determinism claim not checked: no logprobs to compare at some level or probe";
}

std::string determinism_coverage_line(const DeterminismCheck& check) {
  // The cells that ran, grouped by shape in the check's order, each group's levels joined.
  std::vector<std::pair<std::string, std::string>> groups;
  std::string notes;
  std::string untested;
  for (const auto& cell : check.cells) {
    if (!cell.tested) {
      untested += (untested.empty() ? "" : "; ") + cell_text(cell) + ": " + cell.untested_reason;
      continue;
    }
    const std::string shape = shape_text(cell.probe, cell.shape);
    const std::string level =
        cell.shape == DeterminismShape::batch ? std::to_string(cell.level) : std::string();
    if (groups.empty() || groups.back().first != shape)
      groups.push_back({shape, level});
    else if (!level.empty())
      groups.back().second += "," + level;
    if (!cell.note.empty())
      notes += (notes.empty() ? "" : "; ") + cell_text(cell) + ": " + cell.note;
  }
  std::string line = "determinism coverage: ran ";
  if (groups.empty()) line += "no cell";
  for (std::size_t i = 0; i < groups.size(); ++i)
    line += (i > 0 ? "; " : "") + groups[i].first +
            (groups[i].second.empty() ? "" : " c=" + groups[i].second);
  if (!check.restart_planned)
    untested += std::string(untested.empty() ? "" : "; ") + "restart (no --restart-cmd)";
  if (!notes.empty()) line += ". Sized to fit: " + notes;
  if (!untested.empty()) line += ". Not tested: " + untested;
  return line;
}

} // namespace llmrepro::core
