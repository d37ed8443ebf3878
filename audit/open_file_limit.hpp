// The open-file limit an audit needs: one socket a request in flight (two with the embedded
// engine, which holds the server's end too), checked before anything is sent, so that running
// out of descriptors mid-run is never taken for an endpoint that cannot be reached.
#pragma once

#include <string>

#include "core/result.hpp"

namespace llmrepro::audit {

struct AuditRun;

// What a run holding `in_flight` requests at once needs: `per_request` descriptors for each
// (its socket, and a resolver's pair or the embedded server's end) plus a margin of 32 for the
// database, the suite, the reports and libcurl's own, beyond those open now.
long open_files_needed(long in_flight, long per_request, long open_now);

// Raises the soft RLIMIT_NOFILE towards the hard one when the soft one is below
// open_files_needed(); an ErrorCode::usage error (exit 2) naming both limits, the number
// needed, `flag` ("--concurrency 128") and how to raise it when even the hard one is below.
core::Result<void> ensure_open_file_limit(long in_flight, long per_request,
                                          const std::string& flag_text);

// The audit's pass: the most requests in flight at once is the highest level (twice that with
// the mixed or mixed-sampling probe's fillers), each with two descriptors (three against the
// embedded engine).
core::Result<void> check_open_file_limit(const AuditRun& run);

} // namespace llmrepro::audit
