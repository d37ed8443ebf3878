"""The standard scripted audit every dialect test runs, and the exact report it implies.

Four prompts, five runs at each of three concurrency levels, each prompt's entries cycling
once per level:
- capital: always the same; its smallest gap in the window is 1.3 at index 4 (a 0.001 gap at
  index 5 lies outside --fragile-window 5): stable, not fragile (true negative).
- feynman: X four times and Y once per level, diverging at index 3 where X's top-2 gap is 0.02:
  unstable and fragile (true positive).
- primes: P three times and Q twice per level, diverging at index 1; every gap >= 0.5: unstable
  but not fragile (false negative).
- hello: always the same, with a 0.01 gap at index 2 whose candidates the script lists lowest
  first (the adapters must sort): fragile but stable (false positive).
Expected numbers are written out here from those definitions
(docs/design.md "Analysis: definitions"); the only arithmetic is the same double subtraction the
tool performs, and for llama.cpp's old shape the log of the probability the endpoint sent.
"""

import json
import math

LEVELS = [1, 2, 4]
RUNS = 5
WINDOW = 5
SEED = 7
MODEL = "scripted-model"

CAPITAL = [
    [" Paris", -0.01, [[" Paris", -0.01], [" The", -4.2]]],
    [",", -0.2, [[",", -0.2], [" is", -1.9]]],
    [" of", -0.05, [[" of", -0.05], [" the", -3.0]]],
    [" course", -0.1, [[" course", -0.1], [" France", -2.5]]],
    [".", -0.3, [[".", -0.3], ["!", -1.6]]],
    [" Done", -0.9, [[" Done", -0.9], [" End", -0.901]]],
]
FEYNMAN_X = [
    [" He", -0.05, [[" He", -0.05], [" Richard", -3.1]]],
    [" was", -0.02, [[" was", -0.02], [" is", -4.0]]],
    [" born", -0.1, [[" born", -0.1], [" raised", -2.4]]],
    [" in", -0.68, [[" in", -0.68], [" on", -0.70]]],
    [" Queens", -0.3, [[" Queens", -0.3], [" New", -1.4]]],
]
FEYNMAN_Y = FEYNMAN_X[:3] + [
    [" on", -0.69, [[" on", -0.69], [" in", -0.70]]],
    [" May", -0.2, [[" May", -0.2], [" the", -1.9]]],
]
PRIMES_P = [
    [" 2", -0.2, [[" 2", -0.2], [" 3", -0.9]]],
    [",", -0.3, [[",", -0.3], [" and", -0.9]]],
    [" 3", -0.25, [[" 3", -0.25], [" 5", -0.75]]],
    [",", -0.1, [[",", -0.1], [" and", -0.8]]],
    [" 5", -0.05, [[" 5", -0.05], [" 7", -0.95]]],
]
PRIMES_Q = PRIMES_P[:1] + [
    [" and", -0.3, [[" and", -0.3], [",", -0.9]]],
    [" 3", -0.2, [[" 3", -0.2], [" 5", -0.8]]],
]
HELLO = [
    [" Hello", -0.02, [[" Hello", -0.02], [" Hi", -4.0]]],
    ["!", -0.4, [["!", -0.4], [",", -1.3]]],
    [" there", -0.69, [[" world", -0.70], [" there", -0.69]]],
]

# (id, text, chat?): two prompts go as text, two as chat messages.
PROMPTS = [
    ("capital", "Name the capital of France.", False),
    ("feynman", "Where was Feynman born?", False),
    ("primes", "List three primes.", True),
    ("hello", "Say hello.", True),
]


def variant(tokens, finish="length"):
    return {"tokens": tokens, "finish_reason": finish}


def script():
    x, y = variant(FEYNMAN_X), variant(FEYNMAN_Y)
    p, q = variant(PRIMES_P), variant(PRIMES_Q, "stop")
    return {"model": MODEL, "prompts": {
        "Name the capital of France.": [variant(CAPITAL)],
        "Where was Feynman born?": [x, x, y, x, x],
        "List three primes.": [p, q, p, q, p],
        "Say hello.": [variant(HELLO, "stop")],
    }}


def suite():
    lines = []
    for pid, text, chat in PROMPTS:
        if chat:
            lines.append({"id": pid, "messages": [{"role": "user", "content": text}]})
        else:
            lines.append({"id": pid, "prompt": text})
    return lines


def audit_args(suite_path, url, api, db, report, stream):
    args = ["audit", "--suite", suite_path, "--endpoint", url, "--api", api, "--model", MODEL,
            "--runs", str(RUNS), "--concurrency", ",".join(map(str, LEVELS)),
            "--fragile-window", str(WINDOW), "--seed", str(SEED), "--timeout", "20",
            "--retries", "2", "--db", db, "--json", report]
    return args + (["--stream"] if stream else [])


def wire(dialect):
    """How a scripted logprob reaches the tool: llama.cpp's old shape sends exp(lp)."""
    if dialect == "llamacpp-old":
        return lambda lp: math.log(math.exp(lp))
    return lambda lp: lp


def text_of(tokens):
    return "".join(t[0] for t in tokens)


def text_divergence(texts):
    """Where texts first part: the leading bytes all share, and the whole UTF-8 characters in
    them (docs/design.md "Text divergence and fingerprints"); None where they are one text."""
    if len(set(texts)) < 2:
        return None
    raw = [t.encode("utf-8") for t in texts]
    shared = 0
    while all(shared < len(r) for r in raw) and len({r[shared] for r in raw}) == 1:
        shared += 1
    return {"bytes": shared, "characters": len(raw[0][:shared].decode("utf-8", "ignore"))}


def expected_prompts(dialect):
    lp = wire(dialect)

    def gap(a, b):
        return lp(a) - lp(b)

    def level(unique, divergence, texts=()):
        # Every level sees the same mix, so no level's modal completion leaves the serial one.
        return [{"concurrency": c, "runs": RUNS, "failed": 0, "unique_completions": unique,
                 "first_divergence": divergence, "text_divergence": text_divergence(texts),
                 "status": "unstable" if unique > 1 else "stable",
                 "differs_from_serial": False} for c in LEVELS]

    def per_level(n):
        return {str(c): n for c in LEVELS}

    n = len(LEVELS)
    feynman_texts = [text_of(FEYNMAN_X), text_of(FEYNMAN_Y)]
    primes_texts = [text_of(PRIMES_P), text_of(PRIMES_Q)]
    return {
        "capital": {"tokens": CAPITAL, "runs": RUNS * n, "failed": 0, "unique_completions": 1,
                    "first_divergence": None, "gap_at_divergence": None,
                    "min_gap": gap(-0.3, -1.6), "min_gap_position": 4, "fragile": False,
                    "unstable": False, "has_logprobs": True, "by_concurrency": level(1, None),
                  "text_divergence": None,
                    "text_divergence": None,
                    "completions": [(text_of(CAPITAL), RUNS * n, True, None, per_level(RUNS))]},
        "feynman": {"runs": RUNS * n, "failed": 0, "unique_completions": 2,
                    "first_divergence": 3, "gap_at_divergence": gap(-0.68, -0.70),
                    "min_gap": gap(-0.68, -0.70), "min_gap_position": 3, "fragile": True,
                    "unstable": True, "has_logprobs": True,
                    "by_concurrency": level(2, 3, feynman_texts),
                    "text_divergence": text_divergence(feynman_texts),
                    "candidates_at_divergence": [[" in", lp(-0.68)], [" on", lp(-0.70)]],
                    "completions": [(text_of(FEYNMAN_X), 4 * n, True, None, per_level(4)),
                                    (text_of(FEYNMAN_Y), 1 * n, False, 3, per_level(1))]},
        "primes": {"runs": RUNS * n, "failed": 0, "unique_completions": 2,
                   "first_divergence": 1, "gap_at_divergence": gap(-0.3, -0.9),
                   "min_gap": gap(-0.25, -0.75), "min_gap_position": 2, "fragile": False,
                   "unstable": True, "has_logprobs": True,
                   "by_concurrency": level(2, 1, primes_texts),
                   "text_divergence": text_divergence(primes_texts),
                   "candidates_at_divergence": [[",", lp(-0.3)], [" and", lp(-0.9)]],
                   "completions": [(text_of(PRIMES_P), 3 * n, True, None, per_level(3)),
                                   (text_of(PRIMES_Q), 2 * n, False, 1, per_level(2))]},
        "hello": {"tokens": HELLO, "runs": RUNS * n, "failed": 0, "unique_completions": 1,
                  "first_divergence": None, "gap_at_divergence": None,
                  "min_gap": gap(-0.69, -0.70), "min_gap_position": 2, "fragile": True,
                  "unstable": False, "has_logprobs": True, "by_concurrency": level(1, None),
                  "text_divergence": None,
                  "completions": [(text_of(HELLO), RUNS * n, True, None, per_level(RUNS))]},
    }


def expected_summary():
    n = len(LEVELS)
    return {"prompts": 4, "requests": 4 * RUNS * n, "failed_requests": 0, "unstable_prompts": 2,
            "stable_prompts": 2, "inconclusive_prompts": 0, "fragility_unknown_prompts": 0,
            "fragile_prompts": 2, "prompts_without_logprobs": 0, "tarr": 0.5,
            "predictor": {"true_positive": 1, "false_positive": 1, "false_negative": 1,
                          "true_negative": 1, "precision": 0.5, "recall": 0.5},
            "by_concurrency": [{"concurrency": c, "runs": 4 * RUNS, "unique_completions": 6,
                                "unstable_prompts": 2, "inconclusive_prompts": 0,
                                "differs_from_serial_prompts": 0, "failed": 0} for c in LEVELS]}


def check_report(test, report, dialect, token_view=None):
    """Asserts every analysis number of the standard audit, exactly. `token_view` maps a
    scripted token to what the endpoint sends for it (vLLM's token_id:N)."""
    view = token_view or (lambda t: t)
    summary = report["summary"]
    want = expected_summary()
    for key in ("prompts", "requests", "failed_requests", "unstable_prompts", "stable_prompts",
                "inconclusive_prompts", "fragility_unknown_prompts", "fragile_prompts",
                "prompts_without_logprobs", "tarr", "predictor"):
        test.assertEqual(summary[key], want[key], f"summary.{key}")
    got_levels = [{k: lv[k] for k in ("concurrency", "runs", "unique_completions",
                                      "unstable_prompts", "inconclusive_prompts",
                                      "differs_from_serial_prompts", "failed")}
                  for lv in summary["by_concurrency"]]
    test.assertEqual(got_levels, want["by_concurrency"], "summary.by_concurrency")
    test.assertEqual(summary["bitwise_stable_prompts"], 2)
    test.assertEqual(summary["max_logprob_drift"], 0.0)
    # Per level, the prompts' level drifts (none inconclusive here): the largest, positions summed.
    for i, level in enumerate(summary["by_concurrency"]):
        test.assertEqual(level["logprob_drift"],
                         {"max_abs": 0.0, "max_abs_gap": 0.0,
                          "positions_compared": sum(p["by_concurrency"][i]["logprob_drift"]
                                                    ["positions_compared"]
                                                    for p in report["prompts"])},
                         f"summary.by_concurrency[{i}].logprob_drift")
    # The same tokens always come with the same numbers, so wherever two runs share a context
    # the margin did not move: most samples are 0, and only a flip itself moves one.
    for level in summary["by_concurrency"]:
        test.assertGreater(level["noise"]["positions"], 0, f"c={level['concurrency']}")
        test.assertEqual(level["noise"]["median"], 0.0, f"c={level['concurrency']}")
    test.assertEqual(summary["flip_calibration"]["prompts"], len(PROMPTS))
    test.assertEqual(summary["verdict"]["status"], "pass")
    test.assertEqual(report["audit"]["status"], "complete")
    test.assertEqual(report["audit"]["planned_requests"], want["requests"])
    test.assertEqual(report["audit"]["recorded_requests"], want["requests"])
    test.assertEqual(report["errors"], [])
    test.assertEqual([p["id"] for p in report["prompts"]], [p[0] for p in PROMPTS])
    expected = expected_prompts(dialect)
    for prompt in report["prompts"]:
        want_p = expected[prompt["id"]]
        where = f"prompts[{prompt['id']}]"
        test.assertEqual(prompt["status"], "unstable" if want_p["unstable"] else "stable", where)
        test.assertEqual(prompt["fragility_reason"], None, where)
        for key in ("runs", "failed", "unique_completions", "first_divergence",
                    "text_divergence", "gap_at_divergence", "min_gap", "min_gap_position", "fragile", "unstable",
                    "has_logprobs"):
            test.assertEqual(prompt[key], want_p[key], f"{where}.{key}")
        # p_flip reads each level's noise, which the flips of other prompts feed in an order
        # the scripted endpoint decides by arrival: checked for presence here, for exact values
        # in test_flip_probability.py. The answers' distribution is test_hosted_frontier.py's.
        got_levels = [{k: v for k, v in lv.items()
                       if k not in ("logprob_drift", "p_flip", "distribution")}
                      for lv in prompt["by_concurrency"]]
        test.assertEqual((prompt["p_flip_reason"], prompt["fragile_by_gap"]),
                         (None, want_p["fragile"]), where)
        test.assertTrue(0.0 <= prompt["p_flip"] <= 1.0, where)
        test.assertEqual(got_levels, want_p["by_concurrency"], f"{where}.by_concurrency")
        # The scripted endpoint sends the same logprobs for the same tokens: no drift anywhere,
        # so a stable prompt is bitwise, over every other run's tokens.
        drifts = [prompt["logprob_drift"]] + [lv["logprob_drift"] for lv in prompt["by_concurrency"]]
        for drift in drifts:
            test.assertEqual((drift["max_abs"], drift["max_abs_gap"]), (0.0, 0.0), where)
            test.assertGreater(drift["positions_compared"], 0, where)
        test.assertEqual(prompt["tier"], "unstable" if want_p["unstable"] else "bitwise", where)
        if not want_p["unstable"]:
            length = len(want_p["tokens"])
            test.assertEqual(prompt["logprob_drift"]["positions_compared"],
                             (RUNS * len(LEVELS) - 1) * length, where)
            test.assertEqual([lv["logprob_drift"]["positions_compared"]
                              for lv in prompt["by_concurrency"]],
                             [(RUNS - 1) * length] * len(LEVELS), where)
        if "candidates_at_divergence" in want_p:
            got = [[c["token"], c["logprob"]] for c in prompt["candidates_at_divergence"]]
            want_c = [[view(t), lp] for t, lp in want_p["candidates_at_divergence"]]
            test.assertEqual(got, want_c,
                             f"{where}.candidates_at_divergence")
        got_c = [(c["text"], c["count"], c["reference"], c["divergence"],
                  c["count_by_concurrency"]) for c in prompt["completions"]]
        test.assertEqual(got_c, want_p["completions"], f"{where}.completions")


def check_requests(test, posts, dialect, stream):
    """Asserts what the tool sent: temperature 0, top-2 logprobs, the seed, max tokens."""
    test.assertEqual(len(posts), 4 * RUNS * len(LEVELS), "POST count")
    for item in posts:
        body = json.loads(item["body"])
        where = f"{item['path']} {item['body'][:300]}"
        if dialect in ("openai-chat", "vllm"):
            test.assertEqual(item["path"], "/v1/chat/completions", where)
            test.assertEqual((body.get("temperature"), body.get("logprobs"),
                              body.get("top_logprobs"), body.get("seed"), body.get("max_tokens"),
                              body.get("model")), (0, True, 2, SEED, 128, MODEL), where)
            test.assertIsInstance(body.get("messages"), list, where)
            if stream:
                test.assertEqual(body.get("stream_options"), {"include_usage": True}, where)
        elif dialect == "openai-responses":
            test.assertEqual(item["path"], "/v1/responses", where)
            test.assertEqual((body.get("temperature"), body.get("top_logprobs"),
                              body.get("include"), body.get("max_output_tokens"),
                              body.get("model"), body.get("store")),
                             (0, 2, ["message.output_text.logprobs"], 128, MODEL, False), where)
            # OpenAI's spec has no seed on this route and rejects unknown parameters.
            test.assertNotIn("seed", body, where)
            test.assertIsInstance(body.get("input"), (str, list), where)
        elif dialect == "gemini":
            # The model is in the path, the stream asks for SSE, the key is never in the URL.
            route = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
            test.assertEqual(item["path"], f"/v1beta/models/{MODEL}{route}", where)
            test.assertEqual(body.get("generationConfig"),
                             {"temperature": 0, "maxOutputTokens": 128, "responseLogprobs": True,
                              "logprobs": 2, "seed": SEED}, where)
            test.assertNotIn("model", body, where)
            test.assertIsInstance(body.get("contents"), list, where)
        elif dialect == "openai-completions":
            test.assertEqual(item["path"], "/v1/completions", where)
            test.assertEqual((body.get("temperature"), body.get("logprobs"), body.get("seed"),
                              body.get("max_tokens"), body.get("model")),
                             (0, 2, SEED, 128, MODEL), where)
            test.assertIsInstance(body.get("prompt"), str, where)
        elif dialect in ("llamacpp", "llamacpp-old"):
            test.assertEqual(item["path"], "/completion", where)
            test.assertEqual((body.get("temperature"), body.get("n_probs"), body.get("seed"),
                              body.get("n_predict")), (0, 2, SEED, 128), where)
            test.assertIsInstance(body.get("prompt"), str, where)
        elif dialect == "sglang":
            test.assertEqual(item["path"], "/generate", where)
            sp = body.get("sampling_params") or {}
            test.assertEqual((sp.get("temperature"), sp.get("max_new_tokens"),
                              body.get("return_logprob"), body.get("top_logprobs_num")),
                             (0, 128, True, 2), where)
            test.assertIsInstance(body.get("text"), str, where)
        elif dialect == "ollama":
            test.assertIn(item["path"], ("/api/chat", "/api/generate"), where)
            opts = body.get("options") or {}
            test.assertEqual((opts.get("temperature"), opts.get("seed"), opts.get("num_predict"),
                              body.get("logprobs"), body.get("top_logprobs"), body.get("model")),
                             (0, SEED, 128, True, 2, MODEL), where)
        elif dialect == "tgi":
            test.assertEqual(item["path"], "/generate_stream" if stream else "/generate", where)
            params = body.get("parameters") or {}
            test.assertEqual((params.get("details"), params.get("top_n_tokens"),
                              params.get("do_sample"), params.get("max_new_tokens"),
                              params.get("seed")), (True, 2, False, 128, SEED), where)
            test.assertIsInstance(body.get("inputs"), str, where)
        # Ollama streams unless told not to, so "stream" must be explicit there; TGI streams by
        # path (/generate_stream).
        if dialect == "ollama" or (stream and dialect not in ("tgi", "gemini")):
            test.assertEqual(body.get("stream"), stream, where)


FINGERPRINTS = {"openai-chat": ["fp_5c1a7e2d"], "openai-completions": ["fp_5c1a7e2d"],
                "vllm": ["vllm-0.31.0-5c1a7e2d"], "openai-responses": [], "gemini": []}


def run_standard(test, dialect, api, stream, script_obj=None, token_view=None, tag="std",
                 extra_args=(), env=None):
    """Runs the standard audit against a `dialect` endpoint with --api `api`; asserts it all.
    `tag` names this run's files, so that one test may run it more than once; `extra_args`
    and `env` go to the audit as they are."""
    endpoint = test.start_endpoint(script_obj or script(), dialect, name=tag)
    suite_path = test.write_suite(f"{tag}-suite.jsonl", suite())
    db, report_path = test.path(f"{tag}.db"), test.path(f"{tag}-report.json")
    run = test.run_llmrepro(
        audit_args(suite_path, endpoint.url, api, db, report_path, stream) + list(extra_args),
        env=env)
    test.assert_exit(run, 0)
    report = test.load_report(report_path)
    check_report(test, report, dialect, token_view)
    check_requests(test, endpoint.posts(), dialect, stream)
    ep = report["endpoints"][0]
    test.assertEqual((ep["url"], ep["dialect"], ep["model"], ep["embedded"]),
                     (endpoint.url, api, MODEL, False))
    if dialect in FINGERPRINTS:
        test.assertEqual(ep["fingerprints"], FINGERPRINTS[dialect])
    test.assertEqual(report["config"]["stream"], stream)
    test.assertEqual(report["config"]["concurrency"], LEVELS)
    return report, endpoint, run
