#!/usr/bin/python3
"""Scenario: the mixed-sampling cell of `--profile deterministic` against a scripted openai-chat
endpoint. Every greedy prompt is held open 150 ms, so the fillers of its wave share its time on
the server; the mixed probe's fillers are greedy, the mixed-sampling probe's are sent with
sampling on (temperature 1, top_p 1, a seed each).

- An endpoint whose greedy answers move when a sampled request shares their time (the script's
  `sampled_busy` entries: the same answer, then one that leaves it at token 1) breaks the
  mixed-sampling cell at c=1, while the sweep, prefix and mixed cells hold: the audit fails
  (exit 1) and names "with sampled filler traffic" in every report.
- The same endpoint without that variant holds every cell, the mixed-sampling ones included, and
  the coverage line lists them.

Either way the fillers' bodies carry what the probe sends, each filler probe counts its own
fillers, and their completions are never recorded. The stored audit resumes to the same cells,
two shards merge to them (but for the cold cell: merge keeps no probe activity), and --dry-run
lists the mixed-sampling waves and says their fillers are outside its totals."""

import html
import json

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


ANSWER = {"tokens": [tok(" The"), tok(" same"), tok(" answer")]}
MOVED = {"tokens": [tok(" The"), tok(" other"), tok(" answer")]}
FILLER = {"tokens": [tok(" filler")], "delay_ms": 10}
PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]
PROFILE = ["--profile", "deterministic", "--max-concurrency", "2", "--runs", "2",
           "--max-tokens", "8", "--retries", "0", "--timeout", "20", "--seed", "40"]
CELLS = [("sweep", 1, "batch"), ("sweep", 2, "batch"), ("prefix", 1, "cold"),
         ("prefix", 1, "warm"), ("mixed", 1, "batch"), ("mixed", 2, "batch"),
         ("mixed-sampling", 1, "batch"), ("mixed-sampling", 2, "batch")]
COVERAGE = ("determinism coverage: ran sweep c=1,2; cold prefix cache; warm prefix cache; with "
            "filler traffic c=1,2; with sampled filler traffic c=1,2. Not tested: restart (no "
            "--restart-cmd)")


def script(moves):
    prompts = {}
    for prompt in PROMPTS:
        variants = {"entries": [ANSWER], "hold_ms": 150}
        if moves:
            variants["sampled_busy"] = [ANSWER, MOVED]
        prompts[prompt["prompt"]] = variants
    return {"fallback": [FILLER], "flush_routes": ["/flush_cache"], "prompts": prompts}


def fillers(endpoint):
    """The filler bodies the endpoint received, in arrival order."""
    bodies = []
    for item in endpoint.posts():
        if item["path"] != "/v1/chat/completions":
            continue
        body = json.loads(item["body"])
        text = body["messages"][-1]["content"]
        if text.endswith(("one?", "two?")) or "Say ok." in text:
            continue
        bodies.append(body)
    return bodies


class MixedSampling(h.E2ETestCase):
    def audit(self, endpoint, tag):
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        return self.audit_reports(suite, ["--endpoint", endpoint.url], extra=PROFILE, tag=tag,
                                  timeout=120)

    def assert_fillers(self, endpoint, report):
        """Greedy fillers for the mixed probe, sampled ones for mixed-sampling, each counted by
        its own probe; the fillers' numbering (and so each sampled one's seed) runs across the
        run."""
        sent = fillers(endpoint)
        sampled = [b for b in sent if b["temperature"] == 1.0]
        greedy = [b for b in sent if b["temperature"] == 0.0]
        self.assertEqual(len(sampled) + len(greedy), len(sent))
        self.assertGreaterEqual(len(sampled), 4)
        self.assertGreaterEqual(len(greedy), 4)
        for body in greedy:
            self.assertNotIn("top_p", body)
            self.assertEqual(body["seed"], 40)
        seeds = [body["seed"] for body in sampled]
        self.assertEqual(len(set(seeds)), len(seeds))
        for body in sampled:
            self.assertEqual(body["top_p"], 1.0)
            self.assertFalse(body["stream"])
            # Seed 40 + 1 + the filler's number; the mixed probe's fillers came first.
            self.assertGreater(body["seed"], 40 + len(greedy))
        probes = {p["probe"]: p for p in report["probes"]}
        self.assertEqual(report["config"]["probes"], ["sweep", "mixed", "mixed-sampling",
                                                      "prefix"])
        for name, bodies in (("mixed", greedy), ("mixed-sampling", sampled)):
            activity = probes[name]["activity"]
            self.assertEqual((activity["filler_sent"], activity["filler_failed"]),
                             (len(bodies), 0), name)
            levels = {level["level"]: level for level in activity["filler_levels"]}
            self.assertEqual(sorted(levels), [1, 2], name)
            self.assertEqual(sum(level["sent"] for level in levels.values()), len(bodies), name)
            # Only the audited requests are records: 2 prompts x 2 runs x 2 levels.
            self.assertEqual(probes[name]["summary"]["requests"], 8, name)

    def assert_everywhere(self, run, paths, *lines):
        for line in lines:
            self.assertIn(line, run.stdout)
            with open(paths["markdown"], encoding="utf-8") as f:
                self.assertIn(line, html.unescape(f.read()))
        with open(paths["html"], encoding="utf-8") as f:
            page = f.read()
        self.assertEqual(h.ElementText.of(page, "determinism"), (1, lines[0]))
        self.assertEqual(h.ElementText.of(page, "determinism-coverage"), (1, lines[1]))

    def test_sampled_neighbours_move_the_greedy_answers(self):
        endpoint = self.start_endpoint(script(moves=True))
        run, report, paths = self.audit(endpoint, "moves")
        self.assert_exit(run, 1)
        self.assert_fillers(endpoint, report)
        determinism = report["summary"]["determinism"]
        cells = {(c["probe"], c["level"], c["shape"]): c for c in determinism["cells"]}
        self.assertEqual(list(cells), CELLS)
        for key, cell in cells.items():
            broken = key[0] == "mixed-sampling"
            self.assertEqual((cell["tested"], cell["held"]), (True, not broken), key)
            self.assertEqual(cell["token_breaks"], 2 if broken else 0, key)
        line = ("determinism claim broken at c=1 (with sampled filler traffic): tokens differ "
                "from the reference from token 1, prompt alpha")
        self.assertEqual(determinism["line"], line)
        self.assertEqual(determinism["coverage"], COVERAGE)
        found = determinism["first_break"]
        self.assertEqual((found["probe"], found["level"], found["what"], found["position"]),
                         ("mixed-sampling", 1, "tokens", 1))
        verdict = report["summary"]["verdict"]
        self.assertTrue(verdict["headline"].startswith("FAIL: "), verdict["headline"])
        self.assertIn(line, verdict["headline"])
        self.assertEqual(verdict["gates"][0]["scope"],
                         {"endpoint": 0, "probe": "mixed-sampling", "level": 1})
        self.assert_everywhere(run, paths, line, COVERAGE)
        self.assertIn("sampled filler", run.stdout)
        # The greedy answers that moved were the ones beside sampled fillers, and only those.
        variants = {item.get("variant") for item in endpoint.posts()
                    if item.get("prompt") in (p["prompt"] for p in PROMPTS)}
        self.assertEqual(variants, {"entries", "sampled_busy"})

    def test_an_endpoint_that_ignores_sampled_neighbours_holds(self):
        endpoint = self.start_endpoint(script(moves=False))
        run, report, paths = self.audit(endpoint, "holds")
        self.assert_exit(run, 0)
        self.assert_fillers(endpoint, report)
        determinism = report["summary"]["determinism"]
        self.assertEqual([(c["probe"], c["level"], c["shape"]) for c in determinism["cells"]],
                         CELLS)
        for cell in determinism["cells"]:
            self.assertEqual((cell["tested"], cell["held"], cell["prompts"]), (True, True, 2),
                             cell)
        line = "determinism claim held on every level and probe"
        self.assertEqual(determinism["line"], line)
        self.assertEqual(determinism["coverage"], COVERAGE)
        self.assert_everywhere(run, paths, line, COVERAGE)

        # The stored audit resumes with the cell and its fillers' counts as they were.
        posts = len(endpoint.posts())
        again = self.path("resumed.json")
        run = self.run_llmrepro(["audit", "--resume", "--db", paths["db"], "--json", again],
                                timeout=60)
        self.assert_exit(run, 0)
        resumed = self.load_report(again)
        self.assertEqual(resumed["summary"]["determinism"], determinism)
        self.assertEqual(len(endpoint.posts()), posts, "a complete audit sends nothing more")

    def test_shards_merge_to_the_unsharded_cell(self):
        endpoint = self.start_endpoint(script(moves=True))
        suite = self.write_suite("shards.jsonl", PROMPTS)
        dbs, shards = [], []
        for shard in ("1/2", "2/2"):
            db = self.path(f"shard{shard[0]}.db")
            report = self.path(f"shard{shard[0]}.json")
            run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                     "--api", "openai-chat", "--db", db, "--shard", shard,
                                     "--json", report, *PROFILE], timeout=120)
            self.assert_exit(run, 1)
            dbs.append(db)
            shards.append({p["probe"]: p["activity"] for p in self.load_report(report)["probes"]})
        merged = self.path("merged.json")
        run = self.run_llmrepro(["merge", self.path("merged.db"), *dbs, "--json", merged])
        self.assert_exit(run, 1)
        report = self.load_report(merged)
        determinism = report["summary"]["determinism"]
        cells = {(c["probe"], c["level"], c["shape"]): c for c in determinism["cells"]}
        self.assertEqual(list(cells), CELLS)
        # The merged cells are the unsharded audit's, the cold one among them: merge keeps the
        # shards' cold mode (a flush through /flush_cache) with their probe activity.
        for key, cell in cells.items():
            broken = key[0] == "mixed-sampling"
            self.assertEqual((cell["tested"], cell["held"], cell["prompts"], cell["token_breaks"]),
                             (True, not broken, 2, 2 if broken else 0), key)
        self.assertEqual(determinism["line"],
                         "determinism claim broken at c=1 (with sampled filler traffic): tokens "
                         "differ from the reference from token 1, prompt alpha")
        self.assertEqual(determinism["coverage"], COVERAGE)
        self.assertIn("(flushed via /flush_cache)", run.stdout)
        # Each count is the two shards' added up, and the fillers counted are those the endpoint
        # received from both shard runs, greedy ones for mixed and sampled for mixed-sampling.
        activity = {p["probe"]: p["activity"] for p in report["probes"]}
        sent = fillers(endpoint)
        received = {"mixed": len([b for b in sent if b["temperature"] == 0.0]),
                    "mixed-sampling": len([b for b in sent if b["temperature"] == 1.0])}
        for name in ("mixed", "mixed-sampling"):
            self.assertGreaterEqual(received[name], 4, name)
            self.assertEqual((activity[name]["filler_sent"], activity[name]["filler_failed"]),
                             (received[name], 0), name)
            self.assertEqual(activity[name]["filler_sent"],
                             sum(shard[name]["filler_sent"] for shard in shards), name)
            levels = {level["level"]: level["sent"] for level in activity[name]["filler_levels"]}
            self.assertEqual(levels, {level: sum(l["sent"] for shard in shards
                                                 for l in shard[name]["filler_levels"]
                                                 if l["level"] == level)
                                      for level in (1, 2)}, name)
            label = "sampled filler" if name == "mixed-sampling" else "filler"
            self.assertIn(f"{label} {received[name]} sent, 0 failed", run.stdout)
        prefix = activity["prefix"]
        self.assertEqual((prefix["flush_route"], prefix["cold_mode"]), ("/flush_cache", "flush"))
        for count in ("primes_sent", "flushes_sent"):
            self.assertGreater(prefix[count], 0, count)
            self.assertEqual(prefix[count], sum(shard["prefix"][count] for shard in shards))

    def test_dry_run_counts_the_sampled_waves_and_names_their_fillers(self):
        endpoint = self.start_endpoint(script(moves=False))
        suite = self.write_suite("dry.jsonl", PROMPTS)
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url, "--api",
                                 "openai-chat", "--dry-run", *PROFILE], timeout=30)
        self.assert_exit(run, 0)
        for level in (1, 2):
            self.assertIn(f"       0  mixed-sampling  {level:>5}         4", run.stdout)
        self.assertIn("the mixed and mixed-sampling probes also send filler requests, as many as "
                      "their waves last; they are not in these totals, and a budget counts each "
                      "at its bound", run.stdout)
        self.assertEqual(endpoint.posts(), [])


if __name__ == "__main__":
    h.main()
