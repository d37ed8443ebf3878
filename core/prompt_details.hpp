// The detail of each prompt's analysis kept out of memory: a report of a large audit holds, per
// prompt, only what its summary, verdict and global passes read, and each renderer reads the rest
// back one prompt at a time (docs/design.md "Report memory").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

// An unlinked temporary file (in $TMPDIR, else /tmp) holding the detail of prompt analyses: the
// distinct completions whole (texts, tokens and candidates), the answers' texts, the modal and
// shift-test answers, each level's answers and own noise samples. keep() moves them out of a
// PromptAnalysis into the file and leaves it slim, naming its entry in PromptAnalysis::detail;
// restore() puts them back into a copy of the slim prompt, so that the copy equals the prompt as
// it was analysed, with what the global passes judged since (p_flip, shifts, fragility).
//
// A slim prompt keeps every other member, its answers' counts (with empty texts) among them.
// Reading or writing the file fails only with the file system (a full disk); the first failure
// is kept, later calls do nothing, and error() returns it.
class PromptDetails {
public:
  static Result<std::shared_ptr<PromptDetails>> create();
  ~PromptDetails();
  PromptDetails(const PromptDetails&) = delete;
  PromptDetails& operator=(const PromptDetails&) = delete;

  // Moves the detail of `prompt` into the file; `prompt` is left slim.
  void keep(PromptAnalysis& prompt);
  // Puts the kept detail of `prompt` (slim, or a copy of a slim one) back; nothing for a prompt
  // that was never kept (detail < 0).
  void restore(PromptAnalysis& prompt) const;
  // The first failure to write or read the file; success while there was none.
  Result<void> error() const;
  std::size_t bytes() const { return m_end; }

private:
  explicit PromptDetails(int fd) : m_fd(fd) {}
  int m_fd = -1;
  std::uint64_t m_end = 0;           // bytes written
  std::vector<std::uint64_t> m_ends; // end of each entry; entry i starts at m_ends[i - 1]
  mutable std::string m_error;
  mutable std::string m_buffer;
};

// The prompt with its detail: `prompt` itself where it is whole (never kept), else `scratch`
// made a copy of it with the detail read back from `details`.
const PromptAnalysis& detailed(const PromptDetails* details, const PromptAnalysis& prompt,
                               PromptAnalysis& scratch);

} // namespace llmrepro::core
