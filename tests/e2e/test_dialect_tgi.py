#!/usr/bin/python3
"""Scenario: the standard scripted audit against TGI's /generate and /generate_stream (details.top_tokens),
streamed and not, with --api tgi: every number of the JSON report is exactly what the
script implies (see standard_audit.py), the report validates against the schema, and every
request asked for temperature 0, two candidates, the seed and the token limit."""

import e2e_harness as h
import standard_audit as std


class TgiDialect(h.E2ETestCase):
    def test_non_streaming(self):
        std.run_standard(self, "tgi", "tgi", stream=False)

    def test_streaming(self):
        std.run_standard(self, "tgi", "tgi", stream=True)


if __name__ == "__main__":
    h.main()
