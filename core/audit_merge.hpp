// Joining the shards of one audit (`--shard i/n`) into the audit one unsharded run would store.
#pragma once

#include <vector>

#include "core/audit.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

// Merges shard audits into one unsharded audit: configuration with shard 0/1, the common suite,
// every shard's records (shards in index order, each shard's records in its recorded order, so
// each prompt keeps the order its one shard recorded it in), started at the earliest start and
// finished at the latest finish. Status "complete" only when every shard of 0..n-1 is present and
// complete; a missing shard adds an audit error naming it. Endpoint URLs that differ between
// shards (a fleet) are joined with ", ". The shards' probe activity is joined per endpoint: its
// counts (fillers, primes, flushes, fillers per level, shortened long contexts) add up, a filler
// level is unfit where any shard found it so, and the cold mode is the one every shard that ran
// cold prefix trials used.
// ErrorCode::usage when there are no shards, when shards disagree on the configuration (anything
// but the shard index), the suite, or the endpoints' dialect or model, when two shards have the
// same index, when a record's prompt does not belong to its shard, or when two shards made their
// cold prefix trials cold differently (a flush route against none, another route, or the cache
// off per request).
Result<AuditData> merge_shards(const std::vector<AuditData>& shards);

} // namespace llmrepro::core
