#!/usr/bin/python3
"""Scenario: a reasoning model behind an SGLang-shaped chat endpoint (sgl-project/sglang#25055:
`logprobs.content` covers <think>…</think> and the answer, `message.content` holds the answer and
`reasoning_content` the reasoning). Two prompts, four serial runs each:
  - "reason": the reasoning alternates between "Two and two" and "Two plus two" (its token 2),
    the answer is always "Four.";
  - "answer": the reasoning is always "Two and two", the answer alternates "Four." and "4.".

Asserted, from one audit and `report --compare-on` re-judging its database:
  - both (the default): both prompts unstable; "reason" parts at token 2 of the stream, "answer"
    at token 6 (the reasoning's six tokens, markers included, then the answer's first);
  - answer: "reason" stable, "answer" unstable at token 0; every completion's text is the
    answer alone;
  - reasoning: "reason" unstable at token 2, "answer" stable;
  - summary.reasoning counts 8 completions, each with reasoning and tokens of its own, none
    joined; the database holds 8 × 6 reasoning tokens apart from 8 × 2 answer tokens;
  - the checker (contains "Four") reads the answer whatever is compared: 2 of 4 runs of
    "answer" pass, 4 of 4 of "reason";
  - --compare-on answer --max-unique 1 fails on "answer" alone; streamed, the same figures;
  - every shape, whole and streamed: vLLM's `message.reasoning`, OpenAI's (the answer's logprobs
    alone), Ollama's `thinking` with logprobs over both, the Responses API's `reasoning_text`
    item and Gemini's `thought` parts give the same verdict on each part, by tokens where the
    reasoning has its own and by text where it does not;
  - --compare-on reasoning against a model that never reasons is an ERROR (exit 3), and a bad
    --compare-on exits 2 before any request."""

import sqlite3

import e2e_harness as h
import token_blob

RUNS = 4


def token(text, logprob, rival, rival_logprob):
    return [text, logprob, [[text, logprob], [rival, rival_logprob]]]


THINK = token("<think>", -0.0002, "Four", -8.75)
CLOSE = token("</think>", -0.0031, "\n", -5.875)
BREAK = token("\n\n", -0.0001, "\n", -9.5)


def reasoning(middle):
    """<think> Two {middle} two </think> \\n\\n: six tokens."""
    return [THINK, token("Two", -0.0625, "The", -3.0), middle, token(" two", -0.0008, " 2", -7.25),
            CLOSE, BREAK]


AND = token(" and", -0.6875, " plus", -0.75)    # a near tie: the reasoning flips here
PLUS = token(" plus", -0.6875, " and", -0.75)
FOUR = [token("Four", -0.0124, "4", -4.5), token(".", -0.25, "!", -1.5)]
DIGIT = [token("4", -0.625, "Four", -0.75), token(".", -0.25, "!", -1.5)]


def entry(middle, answer):
    return {"reasoning": reasoning(middle), "tokens": answer, "finish_reason": "stop"}


PROMPTS = [{"id": "reason", "prompt": "Why is two plus two four?",
            "expect": {"type": "contains", "value": "Four"}},
           {"id": "answer", "prompt": "What is two plus two?",
            "expect": {"type": "contains", "value": "Four"}}]

SCRIPT = {"reasoning_shape": "sglang",
          "prompts": {"Why is two plus two four?": [entry(AND, FOUR), entry(PLUS, FOUR)],
                      "What is two plus two?": [entry(AND, FOUR), entry(AND, DIGIT)]}}


def by_id(report):
    return {p["id"]: p for p in report["prompts"]}


class ReasoningModel(h.E2ETestCase):
    def audit(self, tag, extra=(), script=SCRIPT):
        endpoint = self.start_endpoint(script, name=tag)
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--runs", str(RUNS), "--concurrency", "1", "--max-tokens", "16", *extra], tag=tag)
        return run, report, paths, endpoint

    def rejudge(self, paths, compare_on):
        out = self.path(f"rejudged-{compare_on}.json")
        run = self.run_llmrepro(["report", "--db", paths["db"], "--compare-on", compare_on,
                                 "--json", out, "--quiet"])
        self.assertIn(run.returncode, (0, 1), run.describe())
        return self.load_report(out)

    def check_compared(self, report, compare_on, unstable, divergence):
        """`unstable`: the ids of the unstable prompts; `divergence`: id -> first divergence."""
        self.assertEqual(report["config"]["compare_on"], compare_on)
        prompts = by_id(report)
        self.assertEqual(sorted(i for i, p in prompts.items() if p["status"] == "unstable"),
                         sorted(unstable))
        self.assertEqual({i: p["first_divergence"] for i, p in prompts.items()}, divergence)
        # Compared by tokens: each part's own, never one part's tokens beside the other's text.
        self.assertEqual({p["divergence_unit"] for p in prompts.values()}, {"token"})
        reasoning = report["summary"]["reasoning"]
        self.assertEqual(reasoning, {"compare_on": compare_on, "completions": 2 * RUNS,
                                     "with_reasoning": 2 * RUNS,
                                     "with_reasoning_tokens": 2 * RUNS, "joined": 0})
        # The checker reads the answer, whichever part is compared.
        self.assertEqual((prompts["reason"]["passes"], prompts["answer"]["passes"]), (RUNS, 2))

    def test_each_part_compared_apart(self):
        run, report, paths, endpoint = self.audit("both")
        self.assert_exit(run, 0)
        self.assertEqual(len(endpoint.posts()), 2 * RUNS)
        self.check_compared(report, "both", ["reason", "answer"], {"reason": 2, "answer": 6})
        texts = {c["text"] for c in by_id(report)["answer"]["completions"]}
        self.assertEqual(texts, {"<reasoning>Two and two</reasoning>Four.",
                                 "<reasoning>Two and two</reasoning>4."})
        self.assertIn("reasoning  compared: both \u00b7 8 of 8 completions carried reasoning, "
                      "8 with tokens of their own", run.stdout)

        answer = self.rejudge(paths, "answer")
        self.check_compared(answer, "answer", ["answer"], {"reason": None, "answer": 0})
        self.assertEqual({c["text"] for c in by_id(answer)["answer"]["completions"]},
                         {"Four.", "4."})
        self.assertEqual([t["token"] for t in by_id(answer)["reason"]["completions"][0]["tokens"]],
                         ["Four", "."])

        reasoning = self.rejudge(paths, "reasoning")
        self.check_compared(reasoning, "reasoning", ["reason"], {"reason": 2, "answer": None})
        self.assertEqual({c["text"] for c in by_id(reasoning)["reason"]["completions"]},
                         {"Two and two", "Two plus two"})

        with sqlite3.connect(paths["db"]) as db:
            self.assertEqual(token_blob.token_count(db, "reasoning"), 2 * RUNS * 6)
            self.assertEqual(token_blob.token_count(db), 2 * RUNS * 2)
            self.assertEqual(db.execute("SELECT DISTINCT reasoning_text, reasoning_split FROM "
                                        "requests WHERE prompt_index = 1").fetchall(),
                             [("Two and two", "separate")])

    def test_gate_on_the_answer_and_streamed(self):
        run, report, _, _ = self.audit("answer-gate", ["--compare-on", "answer", "--max-unique",
                                                       "1", "--stream"])
        self.assert_exit(run, 1)
        self.check_compared(report, "answer", ["answer"], {"reason": None, "answer": 0})
        failed = [g for g in report["summary"]["verdict"]["gates"] if not g["passed"]]
        self.assertEqual([g["name"] for g in failed], ["max_unique"])
        self.assertIn("answer", failed[0]["message"])

    def test_every_shape(self):
        # (scripted dialect, --api, reasoning_shape, whether the reasoning has tokens of its own)
        shapes = [("openai-chat", "openai-chat", "vllm", True),
                  ("openai-chat", "openai-chat", "openai", False),
                  ("ollama", "ollama", None, True),
                  ("openai-responses", "openai-responses", None, False),
                  ("gemini", "gemini", None, False)]
        for (dialect, api, shape, own_tokens), stream in [(s, t) for s in shapes
                                                          for t in (False, True)]:
            tag = f"{dialect}-{shape}-{'stream' if stream else 'whole'}"
            with self.subTest(tag):
                script = dict(SCRIPT, model="served-model")
                if shape:
                    script["reasoning_shape"] = shape
                else:
                    del script["reasoning_shape"]
                endpoint = self.start_endpoint(script, dialect, name=tag)
                suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
                run, report, paths = self.audit_reports(
                    suite, ["--endpoint", endpoint.url],
                    ["--model", "served-model", "--runs", str(RUNS), "--concurrency", "1",
                     "--compare-on", "answer", *(["--stream"] if stream else [])],
                    tag=tag, api=api)
                self.assert_exit(run, 0)
                self.assertEqual(report["summary"]["reasoning"],
                                 {"compare_on": "answer", "completions": 2 * RUNS,
                                  "with_reasoning": 2 * RUNS,
                                  "with_reasoning_tokens": 2 * RUNS if own_tokens else 0,
                                  "joined": 0})
                prompts = by_id(report)
                self.assertEqual({i: (p["status"], p["first_divergence"], p["divergence_unit"])
                                  for i, p in prompts.items()},
                                 {"reason": ("stable", None, "token"),
                                  "answer": ("unstable", 0, "token")})
                self.assertEqual((prompts["reason"]["passes"], prompts["answer"]["passes"]),
                                 (RUNS, 2))
                reasoning = by_id(self.rejudge(paths, "reasoning"))
                self.assertEqual({i: (p["status"], p["first_divergence"], p["divergence_unit"])
                                  for i, p in reasoning.items()},
                                 {"reason": ("unstable", 2 if own_tokens else 4,
                                             "token" if own_tokens else "char"),
                                  "answer": ("stable", None, "token" if own_tokens else "char")})

    def test_reasoning_asked_of_a_model_that_never_reasons(self):
        plain = {"prompts": {p["prompt"]: [{"tokens": FOUR, "finish_reason": "stop"}]
                             for p in PROMPTS}}
        run, report, _, _ = self.audit("no-reasoning", ["--compare-on", "reasoning"], plain)
        self.assert_exit(run, 3)
        self.assertIn("--compare-on reasoning, but none of the 8 successful completions carried "
                      "reasoning", report["summary"]["verdict"]["errors"])
        self.assertEqual(report["summary"]["reasoning"]["with_reasoning"], 0)

    def test_bad_compare_on_is_refused_before_any_request(self):
        endpoint = self.start_endpoint(SCRIPT, name="bad")
        suite = self.write_suite("bad.jsonl", PROMPTS)
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--compare-on", "thinking",
                                 "--db", self.path("bad.db")])
        self.assert_exit(run, 2)
        self.assertIn("unknown --compare-on 'thinking' (expected answer, reasoning, both or "
                      "tool_calls)", run.stderr)
        self.assertEqual(endpoint.posts(), [])


if __name__ == "__main__":
    h.main()
