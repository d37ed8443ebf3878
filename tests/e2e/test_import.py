#!/usr/bin/python3
"""Scenario: `llmrepro import` of recorded replays, then `report` and `diff` over the databases.

The public chain-determinism-bench v1 (tests/data/chain-determinism-bench-v1/, CC BY 4.0,
Cruxia-AI / Mars Ausili; raw_chains_v72: 11 models x 40 queries x 50 replays) is decompressed
into the test's directory and each model imported into its own database. Computed here,
independently of the tool, from the .jsonl.gz rows:
  - the dataset's own table: per model, the queries with more than one distinct tool-call
    sequence (name and args of each call) and with more than one distinct final answer, error
    rows excluded as the authors do: `report --compare-on tool_calls|answer` counts exactly these
    as unstable, and as prompts with more than one distinct completion;
  - ours, errors as failures: a query is stable only when every row succeeded and agrees; the
    others are the report's unstable plus inconclusive prompts. Gemini 2.5 Flash is 2,000 error
    rows of 2,000: 0 stable, 40 inconclusive, an ERROR verdict (nothing could be judged), never
    "agreement";
  - the error rates the datasheet quotes (Llama 3.1 70B 56.1%, Llama 3.3 70B 34.5%, Mistral
    Large 27.4%) are the report's failed requests over its requests;
  - under tool_calls, the step and field where a query's sequences first part from the modal
    one (the most frequent, ties to the first in file order), for every query of every model.
Our own JSONL (schemas/llmrepro.replay.v1.schema.json) with two levels, tokens and tool calls
reads back into the report; `diff` compares two imported models. Bad input (an unknown format,
a malformed line, a gzip file, two models, an existing --db without --overwrite, a --db that is
an input) is an error naming what is wrong, and leaves no database behind or the old one as it
was."""

import collections
import gzip
import json
import math
import os

import e2e_harness as h

DATASET = os.path.join("tests", "data", "chain-determinism-bench-v1")
MODELS = ["claude-opus-4-6", "claude-sonnet-4-5", "deepseek-v3.1", "gemini-2.5-flash", "gpt-4.1",
          "gpt-5.4", "llama-3.1-70b", "llama-3.3-70b", "mistral-large", "o3", "qwen-2.5-72b"]
# tests/data/chain-determinism-bench-v1/DATASHEET.md, "Are there any errors, sources of noise, or redundancies?": error rates in percent.
DATASHEET_ERROR_RATES = {"llama-3.1-70b": 56.1, "llama-3.3-70b": 34.5, "mistral-large": 27.4}


def raw_path(model):
    return os.path.join(h.ARGS.source_dir, DATASET, "raw_chains_v72",
                        f"phase1a_full_{model}.jsonl.gz")


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def calls_of(row):
    return [(call["name"], canonical(call.get("args"))) for call in row["tool_call_sequence"]]


def answer_of(row):
    answer = row["final_answer_norm"]
    return answer if isinstance(answer, str) else canonical(answer)


def wilson(successes, trials, z=1.959963984540054):
    """Wilson score interval at 95%; [0, 1] for no trials."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def first_difference(a, b):
    """(step, field) where call sequences a and b first differ, as docs/design.md defines it."""
    for step, ((name_a, args_a), (name_b, args_b)) in enumerate(zip(a, b)):
        if name_a != name_b:
            return step, "name"
        if args_a != args_b:
            x, y = json.loads(args_a), json.loads(args_b)
            if not isinstance(x, dict) or not isinstance(y, dict):
                return step, "arguments"
            for key in sorted(set(x) | set(y), key=lambda k: k.encode()):
                if key not in x or key not in y or canonical(x[key]) != canonical(y[key]):
                    return step, f"arguments.{key}"
    if len(a) != len(b):
        return min(len(a), len(b)), "end"
    return None


def expected_figures(rows):
    """The per-model figures, from the rows alone."""
    by_query = collections.OrderedDict()
    for row in rows:
        by_query.setdefault(row["query_id"], []).append(row)
    figures = {"tool_diverged": 0, "answer_diverged": 0, "tool_not_stable": 0,
               "answer_not_stable": 0, "errors": 0, "divergence": {}}
    for query, runs in by_query.items():
        ok = [r for r in runs if r["error_category"] is None]
        figures["errors"] += len(runs) - len(ok)
        sequences = [calls_of(r) for r in ok]
        distinct_tools = {canonical(s) for s in sequences}
        distinct_answers = {answer_of(r) for r in ok}
        figures["tool_diverged"] += len(distinct_tools) > 1
        figures["answer_diverged"] += len(distinct_answers) > 1
        failed = len(ok) < len(runs) or len(ok) < 2
        figures["tool_not_stable"] += len(distinct_tools) > 1 or failed
        figures["answer_not_stable"] += len(distinct_answers) > 1 or failed
        divergence = None
        if len(distinct_tools) > 1:
            counts = collections.Counter(canonical(s) for s in sequences)
            best = max(counts.values())
            reference = next(s for s in sequences if counts[canonical(s)] == best)
            for sequence in sequences:
                difference = first_difference(reference, sequence)
                if difference and (divergence is None or difference[0] < divergence[0]):
                    divergence = difference
        figures["divergence"][query] = divergence
    return figures


class ImportChainDeterminism(h.E2ETestCase):
    def decompressed(self, model):
        path = self.path(f"{model}.jsonl")
        with gzip.open(raw_path(model), "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        return path

    def imported(self, model):
        source = self.decompressed(model)
        db = self.path(f"{model}.db")
        run = self.run_llmrepro(["import", "--format", "chain-determinism", source, "--db", db])
        self.assert_exit(run, 0)
        return db, run

    def report(self, db, compare_on, tag):
        path = self.path(f"{tag}-{compare_on}.json")
        run = self.run_llmrepro(["report", "--db", db, "--compare-on", compare_on, "--json", path,
                                 "--quiet"])
        # 3: an audit where no prompt had two successes to compare cannot be judged.
        self.assertIn(run.returncode, (0, 1, 3), run.describe())
        report = self.load_report(path)
        self.assertEqual(run.returncode, h.EXIT_CODES[report["summary"]["verdict"]["status"]][0],
                         run.describe())
        return report, run

    def test_reproduces_the_dataset_table(self):
        table = {}
        for model in MODELS:
            with gzip.open(raw_path(model), "rt", encoding="utf-8") as f:
                rows = [json.loads(line) for line in f]
            self.assertEqual(len(rows), 2000, model)
            expected = expected_figures(rows)
            db, run = self.imported(model)
            self.assertIn(f"imported 2000 recorded responses ({expected['errors']} failed) of 40 "
                          f"prompts for model '{model}'", run.stderr)
            tools, _ = self.report(db, "tool_calls", model)
            answers, answer_run = self.report(db, "answer", model)
            for report, kind in ((tools, "tool"), (answers, "answer")):
                summary = report["summary"]
                where = f"{model} --compare-on {kind}"
                self.assertEqual(summary["prompts"], 40, where)
                self.assertEqual(summary["requests"], 2000, where)
                self.assertEqual(summary["failed_requests"], expected["errors"], where)
                self.assertEqual(summary["unstable_prompts"], expected[f"{kind}_diverged"], where)
                self.assertEqual(sum(p["unique_completions"] > 1 for p in report["prompts"]),
                                 expected[f"{kind}_diverged"], where)
                self.assertEqual(summary["unstable_prompts"] + summary["inconclusive_prompts"],
                                 expected[f"{kind}_not_stable"], where)
                # The divergence rate over judged prompts, with its Wilson interval.
                judged = 40 - summary["inconclusive_prompts"]
                rate = summary["unstable_rate"]
                self.assertEqual(rate["judged"], judged, where)
                if judged:
                    self.assertAlmostEqual(rate["rate"], summary["unstable_prompts"] / judged)
                else:
                    self.assertIsNone(rate["rate"], where)
                low, high = wilson(summary["unstable_prompts"], judged)
                self.assertAlmostEqual(rate["low"], low, places=6, msg=where)
                self.assertAlmostEqual(rate["high"], high, places=6, msg=where)
            for prompt in tools["prompts"]:
                divergence = expected["divergence"][prompt["id"]]
                got = prompt["tool_call_divergence"]
                self.assertEqual(None if got is None else (got["step"], got["field"]), divergence,
                                 f"{model} {prompt['id']}")
            for prompt in answers["prompts"]:
                self.assertIsNone(prompt["tool_call_divergence"], model)
            if model in DATASHEET_ERROR_RATES:
                self.assertEqual(round(100 * expected["errors"] / 2000, 1),
                                 DATASHEET_ERROR_RATES[model], model)
            rate = tools["summary"]["unstable_rate"]
            table[model] = (expected["tool_diverged"], expected["answer_diverged"],
                            expected["tool_not_stable"], expected["answer_not_stable"],
                            tools["summary"]["unstable_prompts"], rate["judged"], rate["low"],
                            rate["high"])
            if model == "gemini-2.5-flash":
                # Every row an error: nothing agrees, nothing is stable, and no verdict passes:
                # there is nothing to judge.
                summary = answers["summary"]
                self.assertEqual((summary["stable_prompts"], summary["inconclusive_prompts"]),
                                 (0, 40))
                self.assertEqual(summary["tarr"], 0.0)
                self.assertEqual(summary["tara"], 0.0)
                self.assertEqual(summary["verdict"]["status"], "error")
                self.assertIn("no prompt has two successful completions to compare",
                              answer_run.stderr)
                self.assertEqual(answer_run.returncode, 3)
        # The table docs/import.md prints (tool sequences, final answers; errors excluded, then
        # errors as failures), for the reader of this log.
        for model, figures in table.items():
            print(f"{model:20} {figures[0]:3} {figures[1]:3} | {figures[2]:3} {figures[3]:3} | "
                  f"{figures[4]}/{figures[5]} [{figures[6]:.3f}, {figures[7]:.3f}]")

    def test_diff_of_two_imported_models(self):
        a, _ = self.imported("gpt-4.1")
        b, _ = self.imported("gpt-5.4")
        path = self.path("diff.json")
        run = self.run_llmrepro(["diff", a, b, "--json", path, "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        with open(path, encoding="utf-8") as f:
            diff = json.load(f)
        self.assertEqual(len(diff["prompts"]), 40, json.dumps(diff)[:2000])


class ImportJsonl(h.E2ETestCase):
    def test_our_jsonl(self):
        lines = []
        for level in (1, 8):
            for repeat in range(3):
                # p-calls: repeat 2 at level 8 asks for another argument; p-fail: one error.
                term = "y" if (level, repeat) == (8, 2) else "x"
                lines.append({"prompt_id": "p-calls", "prompt": "Find x", "model": "m",
                              "level": level, "repeat": repeat, "text": "found",
                              "tool_calls": [{"name": "search", "arguments": {"term": term}}],
                              "latency_ms": 100})
                lines.append({"prompt_id": "p-fail", "level": level, "repeat": repeat,
                              **({"error": "HTTP 429"} if repeat == 1 else {"text": "4"}),
                              "tokens": [{"token": "4", "logprob": -0.25,
                                          "top": [{"token": "4", "logprob": -0.25},
                                                  {"token": "5", "logprob": -2.0}]}]})
        import jsonschema
        with open(os.path.join(h.ARGS.source_dir, "schemas", "llmrepro.replay.v1.schema.json"),
                  encoding="utf-8") as f:
            validator = jsonschema.Draft202012Validator(json.load(f))
        for line in lines:
            self.assertEqual([e.message for e in validator.iter_errors(line)], [], line)
        self.assertTrue(list(validator.iter_errors({"prompt_id": "p", "repeat": 0})))
        source = self.write_suite("replay.jsonl", lines)
        db = self.path("replay.db")
        run = self.run_llmrepro(["import", "--format", "jsonl", source, "--db", db])
        self.assert_exit(run, 0)
        self.assertIn("imported 12 recorded responses (2 failed) of 2 prompts for model 'm'",
                      run.stderr)
        path = self.path("replay.json")
        run = self.run_llmrepro(["report", "--db", db, "--compare-on", "tool_calls", "--json",
                                 path, "--quiet"])
        self.assert_exit(run, 1)
        report = self.load_report(path)
        self.assertEqual(report["config"]["concurrency"], [1, 8])
        self.assertEqual(report["config"]["runs"], 3)
        prompts = {p["id"]: p for p in report["prompts"]}
        calls = prompts["p-calls"]
        self.assertEqual((calls["status"], calls["unique_completions"]), ("unstable", 2))
        self.assertEqual(calls["tool_call_divergence"], {"step": 0, "field": "arguments.term"})
        self.assertEqual(calls["completions"][0]["text"],
                         '[{"arguments":{"term":"x"},"name":"search"}]')
        self.assertEqual([level["status"] for level in calls["by_concurrency"]],
                         ["stable", "unstable"])
        failing = prompts["p-fail"]
        self.assertEqual((failing["status"], failing["failed"]), ("inconclusive", 2))
        # Compared on the answer, the tokens and logprobs came along: 4 runs at a 1.75 nat gap.
        path = self.path("replay-answer.json")
        run = self.run_llmrepro(["report", "--db", db, "--compare-on", "answer", "--json", path,
                                 "--quiet"])
        self.assert_exit(run, 1)
        answer = {p["id"]: p for p in self.load_report(path)["prompts"]}["p-fail"]
        self.assertEqual((answer["runs"], answer["has_logprobs"]), (4, True))
        self.assertEqual(answer["min_gap"], 1.75)


class ImportBadInput(h.E2ETestCase):
    def chain_line(self, model="o3", run_idx=0):
        return json.dumps({"model": model, "query_id": "q", "run_idx": run_idx,
                           "final_answer_norm": "a", "tool_call_sequence": [],
                           "error_category": None, "latency_s": 1.0})

    def assert_refused(self, args, message, db, code=2):
        run = self.run_llmrepro(["import", *args, "--db", db])
        self.assert_exit(run, code)
        self.assertIn(message, run.stderr, run.describe())

    def test_errors_before_anything_is_written(self):
        good = self.write_suite("good.jsonl", [self.chain_line()])
        db = self.path("out.db")
        self.assert_refused(["--format", "csv", good],
                            "unknown --format 'csv' (expected jsonl or chain-determinism)", db)
        bad = self.write_suite("bad.jsonl", [self.chain_line(), '{"model": "o3", "query_id": '])
        self.assert_refused(["--format", "chain-determinism", bad], f"{bad}:2: JSON: ", db)
        missing = self.write_suite("missing.jsonl", ['{"model": "o3", "run_idx": 0}'])
        self.assert_refused(["--format", "chain-determinism", missing],
                            f"{missing}:1: missing `query_id`", db)
        other = self.write_suite("other.jsonl", [self.chain_line("gpt-4.1", 1)])
        self.assert_refused(["--format", "chain-determinism", good, other],
                            f"{other}:1: model 'gpt-4.1' where {good}:1 named 'o3': import each "
                            "model into a database of its own", db)
        again = self.write_suite("again.jsonl", [self.chain_line()])
        self.assert_refused(["--format", "chain-determinism", good, again],
                            f"{again}:1: prompt 'q' level 1 repeat 0 was recorded at {good}:1 "
                            "already", db)
        self.assert_refused(["--format", "chain-determinism", raw_path("o3")],
                            "is gzip-compressed: decompress it first (gunzip -k FILE)", db)
        self.assertFalse(os.path.exists(db))
        self.assert_refused(["--format", "chain-determinism", good], "--db", good)
        with open(good, encoding="utf-8") as f:
            self.assertEqual(f.read(), self.chain_line() + "\n")

    def test_existing_database_needs_overwrite(self):
        first = self.write_suite("first.jsonl", [self.chain_line(run_idx=0),
                                                 self.chain_line(run_idx=1)])
        db = self.path("out.db")
        self.assert_exit(self.run_llmrepro(["import", "--format", "chain-determinism", first,
                                            "--db", db]), 0)
        before = h.recorded_rows(db)
        self.assertEqual(before, 2)
        second = self.write_suite("second.jsonl", [self.chain_line()])
        self.assert_refused(["--format", "chain-determinism", second],
                            "already exists: pass --overwrite to replace it", db)
        self.assertEqual(h.recorded_rows(db), 2)
        self.assert_exit(self.run_llmrepro(["import", "--format", "chain-determinism", second,
                                            "--db", db, "--overwrite"]), 0)
        self.assertEqual(h.recorded_rows(db), 1)


if __name__ == "__main__":
    h.main()
