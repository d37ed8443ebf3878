// The tokens of a prompt's records as an audit file streams them (store::AuditDatabase::
// load_streamed): read into a record on demand and dropped again, so that a reader that takes the
// records one at a time holds one record's tokens, not the prompt's.
#pragma once

#include <cstddef>
#include <vector>

#include "core/result.hpp"
#include "core/completion_facts.hpp"

namespace llmrepro::core {

class RecordTokens {
public:
  virtual ~RecordTokens() = default;
  // Reads record `index`'s tokens (its reasoning's too) into it, and any text the file spells by
  // them. A record whose tokens are in already is left as it is.
  virtual Result<void> read(std::size_t index) = 0;
  // Drops record `index`'s tokens; its text stays.
  virtual void drop(std::size_t index) = 0;

  // For a reader that reads ahead (audit::ReadAhead): the records about to be read, in order,
  // each read dropped before its record is read again; and a wait until every drop asked for has
  // taken effect, before the records are looked at whole again. Nothing to do here.
  virtual void will_read(const std::vector<std::size_t>& order) { static_cast<void>(order); }
  virtual void settle() {}
  // completion_facts of record `index`'s completion, where they were computed as it was read (null:
  // they were not); valid while its tokens are in.
  virtual const CompletionFacts* facts(std::size_t index) const {
    static_cast<void>(index);
    return nullptr;
  }
};

} // namespace llmrepro::core
