#!/usr/bin/python3
"""Scenario: the server's limits before the plan. A scripted llama.cpp endpoint refuses, as
llama-server does, any prompt of at least 256 tokens (one a word here) with 400 "request (N
tokens) exceeds the available context size (256 tokens), try increasing it"
(tools/server/server-context.cpp; the body's shape as tools/server/server-task.cpp words it).

- Its /props names 256 tokens per slot (8 slots): --profile deterministic cuts every filler to
  fit (its prompt's bound, one token per byte plus the template margins, and its max_tokens at
  most 256), the server refuses none, the claim holds, and the coverage line lists every cell
  that ran with the fillers it shortened. The long probe's 480-word context is cut to fit too,
  and the prefix probe's 160-word shared prefix is cut to one length that fits beside every
  prompt, noted on both prefix cells.
- Its /props names 4096 tokens per slot while it refuses at 256: the fillers above 256 words are
  refused, and the mixed and mixed-sampling cells are "not tested" (each counting its own
  fillers), naming how many fillers of how many were
  refused and the server's own words, never "held"; the determinism gate cannot judge the
  claim, and the verdict is an error (exit 3), not a failure."""

import html
import json
import re

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


ANSWER = {"tokens": [tok(" The"), tok(" same"), tok(" answer")], "delay_ms": 60}
FILLER = {"tokens": [tok(" filler")], "delay_ms": 10}
PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]
PROFILE = ["--profile", "deterministic", "--max-concurrency", "2", "--runs", "2",
           "--max-tokens", "8", "--retries", "0", "--timeout", "20"]
REFUSAL = re.compile(r"^HTTP 400: request \((\d+) tokens\) exceeds the available context size "
                     r"\(256 tokens\), try increasing it$")


def script(**extra):
    return {"fallback": [FILLER], "context_limit": 256, "build_info": "b1-scripted",
            "prompts": {p["prompt"]: [ANSWER] for p in PROMPTS}, **extra}


def fillers(endpoint, sampled=False):
    """The filler requests the endpoint received (bodies), refused or answered: the mixed
    probe's greedy ones, or (`sampled`) the mixed-sampling probe's, sent at temperature 1."""
    bodies = []
    for item in endpoint.posts():
        body = json.loads(item["body"])
        if body["prompt"].endswith(("one?", "two?")) or "Say ok." in body["prompt"]:
            continue
        if (body["temperature"] == 1.0) == sampled:
            bodies.append((body, item["outcome"]))
    return bodies


class ServerLimits(h.E2ETestCase):
    def audit(self, endpoint, tag, extra):
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        return self.audit_reports(suite, ["--endpoint", endpoint.url], extra=extra, tag=tag,
                                  api="llamacpp", timeout=120)

    def test_fillers_and_long_prompts_sized_to_the_slot(self):
        endpoint = self.start_endpoint(script(n_ctx=256, total_slots=8), "llamacpp")
        run, report, paths = self.audit(endpoint, "sized", PROFILE)
        self.assert_exit(run, 0)
        determinism = report["summary"]["determinism"]
        self.assertEqual(determinism["line"], "determinism claim held on every level and probe")
        self.assertTrue(determinism["held"])
        notes = []
        for probe, sampled, shape in (("mixed", False, "with filler traffic"),
                                      ("mixed-sampling", True, "with sampled filler traffic")):
            sent = fillers(endpoint, sampled)
            self.assertGreaterEqual(len(sent), 3, probe)
            for body, outcome in sent:
                self.assertEqual(outcome, "completion", body["prompt"][:40])
                # Sized by its bound: 64 + (bytes + 64) + n_predict tokens at most 256.
                self.assertLessEqual(128 + len(body["prompt"].encode()) + body["n_predict"], 256)
            activity = {p["probe"]: p for p in report["probes"]}[probe]["activity"]
            levels = {level["level"]: level for level in activity["filler_levels"]}
            self.assertEqual(sorted(levels), [1, 2], probe)
            self.assertEqual(sum(level["sent"] for level in levels.values()), len(sent), probe)
            self.assertEqual(activity["filler_sent"], len(sent), probe)
            self.assertEqual([level["refused"] for level in levels.values()], [0, 0], probe)
            # The mixed probe's filler 1 (odd-numbered: 300 to 480 words) cannot fit uncut; the
            # sampled fillers' numbers follow, half of them odd.
            shortened = sum(level["shortened"] for level in levels.values())
            self.assertGreaterEqual(shortened, 1, probe)
            notes += [f"{shape} c={lvl}: {levels[lvl]['shortened']} of {levels[lvl]['sent']} "
                      "fillers shortened to fit the server's context per slot"
                      for lvl in (1, 2) if levels[lvl]["shortened"] > 0]
        # The prefix probe: its 160-word shared prefix cut to one count of words that fits the
        # slot beside every prompt and the priming request (the unit test of
        # prefix_words_fitting checks it is the most that does).
        prefixed = [json.loads(item["body"]) for item in endpoint.posts()
                    if json.loads(item["body"])["prompt"].startswith("Read the following notes.")]
        self.assertGreaterEqual(len(prefixed), 4 * len(PROMPTS))
        words = {len(body["prompt"].split("\n\n")[0].split()) - 4 for body in prefixed}
        self.assertEqual(len(words), 1, words)
        (prefix_words,) = words
        self.assertTrue(0 < prefix_words < 160, prefix_words)
        for body in prefixed:
            self.assertLessEqual(128 + len(body["prompt"].encode()) + body["n_predict"], 256)
        prefix_activity = {p["probe"]: p for p in report["probes"]}["prefix"]["activity"]
        self.assertEqual(prefix_activity["prefix_words"], prefix_words)
        self.assertEqual(prefix_activity["primes_failed"], 0)
        cut = (f"shared prefix cut to {prefix_words} of 160 words to fit the server's context "
               "per slot")
        notes = [f"cold prefix cache: {cut}", f"warm prefix cache: {cut}"] + notes
        coverage = ("determinism coverage: ran sweep c=1,2; cold prefix cache; warm prefix cache; "
                    "with filler traffic c=1,2; with sampled filler traffic c=1,2. Sized to fit: "
                    + "; ".join(notes) + ". Not tested: restart (no --restart-cmd)")
        self.assertEqual(determinism["coverage"], coverage)
        self.assertIn(coverage, run.stdout)
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertIn(coverage, html.unescape(f.read()))
        with open(paths["html"], encoding="utf-8") as f:
            self.assertEqual(h.ElementText.of(f.read(), "determinism-coverage"), (1, coverage))

        # The long probe: its 480-word context cut to the slot, every prompt then fits.
        long_endpoint = self.start_endpoint(script(n_ctx=256, total_slots=8), "llamacpp",
                                            name="long")
        run, report, _ = self.audit(long_endpoint, "long",
                                    ["--probe", "long", "--concurrency", "1", "--runs", "2",
                                     "--max-tokens", "8"])
        self.assert_exit(run, 0)
        self.assertEqual(report["summary"]["failed_requests"], 0)
        posts = long_endpoint.posts()
        self.assertEqual([p["outcome"] for p in posts], ["completion"] * 4)
        for item in posts:
            body = json.loads(item["body"])
            self.assertTrue(body["prompt"].startswith("Context: "))
            self.assertLessEqual(128 + len(body["prompt"].encode()) + body["n_predict"], 256)
        activity = {p["probe"]: p for p in report["probes"]}["long"]["activity"]
        self.assertEqual(activity["long_shortened"], 4)
        words = len(json.loads(posts[0]["body"])["prompt"].split("\n\n")[0].split()) - 1
        self.assertEqual(activity["long_context_words_min"], words)
        self.assertLess(words, 480)

    def test_refused_fillers_leave_the_mixed_cells_untested(self):
        # /props says 4096 tokens per slot, but the server refuses at 256.
        endpoint = self.start_endpoint(script(n_ctx=4096, total_slots=1), "llamacpp")
        run, report, paths = self.audit(endpoint, "refused", PROFILE)
        determinism = report["summary"]["determinism"]
        self.assertFalse(determinism["held"])
        self.assertIsNone(determinism["first_break"])
        cells = {(c["probe"], c["level"], c["shape"]): c for c in determinism["cells"]}
        untested = []
        for probe, sampled, shape in (("mixed", False, "with filler traffic"),
                                      ("mixed-sampling", True, "with sampled filler traffic")):
            sent = fillers(endpoint, sampled)
            refused = [body for body, outcome in sent if outcome == "context_refused"]
            self.assertGreaterEqual(len(refused), 1, probe)
            for body in refused:
                self.assertGreaterEqual(len(body["prompt"].split()), 256)
            activity = {p["probe"]: p for p in report["probes"]}[probe]["activity"]
            levels = {level["level"]: level for level in activity["filler_levels"]}
            self.assertEqual(sum(level["refused"] for level in levels.values()), len(refused))
            self.assertEqual(sum(level["sent"] for level in levels.values()), len(sent))
            self.assertEqual(sum(level["shortened"] for level in levels.values()), 0)
            for level in (1, 2):
                counts = levels[level]
                cell = cells[(probe, level, "batch")]
                if counts["refused"] == 0:
                    self.assertTrue(cell["tested"], cell)
                    continue
                self.assertRegex(counts["refusal"], REFUSAL)
                reason = (f"{counts['refused']} of {counts['sent']} fillers refused "
                          f"({counts['refusal']})")
                self.assertEqual((cell["tested"], cell["held"], cell["untested_reason"]),
                                 (False, False, reason))
                untested.append((shape, level, reason))
        self.assertTrue(untested)
        self.assertEqual(determinism["line"], "determinism claim not checked " + "; ".join(
            f"{shape} at c={level}: {reason}" for shape, level, reason in untested) +
            "; every other level and probe held")
        self.assertIn("Not tested: " + "; ".join(
            f"{shape} c={level}: {reason}" for shape, level, reason in untested),
            determinism["coverage"])
        # Nothing broke where it was tested: the claim was not judged, an error (exit 3).
        verdict = report["summary"]["verdict"]
        gate = verdict["gates"][0]
        self.assertEqual((gate["name"], gate["passed"]), ("determinism", False))
        self.assertEqual(gate["message"],
                         "not judged: " + determinism["line"] + " (--profile deterministic)")
        self.assertEqual(verdict["status"], "error")
        self.assertTrue(verdict["headline"].startswith(
            "ERROR: the audit could not be judged: " + determinism["line"]), verdict["headline"])
        self.assert_exit(run, 3)


if __name__ == "__main__":
    h.main()
