#!/usr/bin/python3
"""Scenario: the standard scripted audit against llama.cpp's native /completion (current top_logprobs shape),
streamed and not, with --api llamacpp: every number of the JSON report is exactly what the
script implies (see standard_audit.py), the report validates against the schema, and every
request asked for temperature 0, two candidates, the seed and the token limit."""

import e2e_harness as h
import standard_audit as std


class LlamacppDialect(h.E2ETestCase):
    def test_non_streaming(self):
        std.run_standard(self, "llamacpp", "llamacpp", stream=False)

    def test_streaming(self):
        std.run_standard(self, "llamacpp", "llamacpp", stream=True)


if __name__ == "__main__":
    h.main()
