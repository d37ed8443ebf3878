#!/usr/bin/python3
"""Scenario: upstream llama.cpp's llama-server, built from source (scripts/build-llama-server.sh,
cached outside the clone), serving small llama models with seeded random weights and a real
byte-level BPE tokenizer (llama_model.py), on the CPU, on loopback.

- Every dialect llama.cpp serves (its native /completion, /v1/completions, /v1/chat/completions),
  streamed and not, gives the same tokens and logprobs, and they are exactly what this test's own
  client gets for the same request (Q8_0 weights: bit-identical from run to run).
- A chat suite under --api auto goes to the chat route, through the model's chat template (its
  prompt token count is that of the server's own /apply-template and /tokenize); sent to
  /completion it is flattened, and every output says so.
- F32 weights drift under batching: at -np 8 the logprobs at concurrency 8 move against serial.
- The prefix probe's cold trials carry "cache_prompt": false (llama.cpp has no flush route), and
  are then computed the same way every time.

Skipped, naming why, only where the llama.cpp source tarball is absent (the build script's exit
3). Labelled e2e-slow: it runs once, in the main build."""

import json
import os
import subprocess
import tempfile
import time
import unittest
import urllib.request

import e2e_harness as h
import llama_model
import token_blob

TEXT_PROMPTS = [
    "The quick brown fox",
    "Explain why the sky is blue.",
    "List three prime numbers:",
    "Write a haiku about the sea.",
    "Count from one to ten:",
    "Translate hello into German:",
]
CHAT_PROMPTS = [
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Describe a cat, a house and a tree."}],
    [{"role": "user", "content": "Summarize the following text for a busy reader: the weather "
                                 "today is sunny with a light wind from the west."}],
]
MAX_TOKENS = 16


def llama_build():
    """(directory holding llama-server and gguf-py, None) or (None, why it is absent)."""
    script = os.path.join(h.ARGS.source_dir, "scripts", "build-llama-server.sh")
    done = subprocess.run([script], capture_output=True, text=True, timeout=3600)
    if done.returncode == 3:
        return None, done.stderr.strip()
    if done.returncode != 0:
        raise AssertionError(f"build-llama-server.sh exited {done.returncode}:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1], None


class LlamaServer:
    """A running llama-server on a free loopback port."""

    def __init__(self, binary, model, slots, log_path, context=None):
        self.port = h.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log_path, "w", encoding="utf-8")
        # -c is the whole context, shared by the slots; two threads, as CI has two cores.
        self.process = subprocess.Popen(
            [binary, "-m", model, "--host", "127.0.0.1", "--port", str(self.port),
             "-np", str(slots), "-c", str(context or 512 * slots), "-t", "2", "--metrics"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"llama-server exited {self.process.returncode}; see "
                                     f"{log_path}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("llama-server did not answer /health within 60 s")
            time.sleep(0.1)

    def post(self, path, body):
        return h.post_json(self.url + path, body)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def request_tokens(db_path):
    """(prompt index, concurrency, repeat) -> [(token bytes, logprob, [(text, logprob)...])] for
    every successful sweep request of endpoint 0, read from the database directly."""
    conn = h.open_db(db_path)
    try:
        rows = conn.execute("SELECT id, prompt_index, concurrency, repeat FROM requests WHERE ok = 1 "
                            "AND endpoint_index = 0 AND probe = 'sweep'").fetchall()
        tokens = token_blob.tokens_by_request(conn)
    finally:
        conn.close()
    return {(p, c, r): [(t.text, t.logprob, t.top) for t in tokens[i]] for i, p, c, r in rows}


class LlamaCpp(h.E2ETestCase):
    @classmethod
    def setUpClass(cls):
        cls.llama_dir, absent = llama_build()
        if cls.llama_dir is None:
            raise unittest.SkipTest(f"llama.cpp scenario skipped: {absent}")
        cls.models = tempfile.mkdtemp(prefix="llmrepro-llama-models-")
        for weight_type in ("q8_0", "f32"):
            llama_model.write_model(os.path.join(cls.llama_dir, "gguf-py"),
                                    os.path.join(cls.models, f"{weight_type}.gguf"), weight_type)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "models", None):
            subprocess.run(["rm", "-rf", cls.models], check=False)

    def start_server(self, weight_type, slots, context=None):
        server = LlamaServer(os.path.join(self.llama_dir, "llama-server"),
                             os.path.join(self.models, f"{weight_type}.gguf"), slots,
                             self.path(f"llama-server-{weight_type}.log"), context)
        self.addCleanup(server.stop)
        return server

    def audit(self, server, suite, api, name, levels="1,4", runs=2, extra=()):
        report_path = self.path(f"{name}.json")
        md_path = self.path(f"{name}.md")
        db_path = self.path(f"{name}.db")
        args = ["audit", "--endpoint", server.url, "--api", api, "--suite", suite,
                "--runs", str(runs), "--concurrency", levels, "--max-tokens", str(MAX_TOKENS),
                "--db", db_path, "--json", report_path, "--markdown", md_path, "--fail-on", "none",
                *extra]
        run = self.run_llmrepro(args, timeout=180)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        self.assertEqual(report["summary"]["failed_requests"], 0, run.describe())
        with open(md_path, encoding="utf-8") as f:
            markdown = f.read()
        return run, report, markdown, db_path

    def client_completion(self, server, prompt):
        """This test's own request to /completion: greedy, two candidates, no prompt cache."""
        answer = server.post("/completion", {
            "prompt": prompt, "n_predict": MAX_TOKENS, "temperature": 0, "n_probs": 2,
            "cache_prompt": False, "seed": 0})
        tokens = []
        for entry in answer["completion_probabilities"]:
            top = [(bytes(c["bytes"]), c["logprob"]) for c in entry["top_logprobs"]]
            tokens.append((bytes(entry["bytes"]), entry["logprob"], top))
        return answer["content"], tokens

    def test_every_dialect_gives_the_same_tokens_as_an_independent_client(self):
        server = self.start_server("q8_0", 4)
        suite = self.write_suite("text.jsonl", [{"id": f"t{i}", "prompt": p}
                                                for i, p in enumerate(TEXT_PROMPTS)])
        expected = {}
        for index, prompt in enumerate(TEXT_PROMPTS):
            text, tokens = self.client_completion(server, prompt)
            self.assertEqual(len(tokens), MAX_TOKENS, f"the model never ends early: {text!r}")
            expected[index] = (text, tokens)
        for api in ("llamacpp", "openai-completions"):
            for stream in (False, True):
                name = f"{api}-{'stream' if stream else 'whole'}"
                with self.subTest(dialect=name):
                    _, report, _, db_path = self.audit(
                        server, suite, api, name, extra=["--stream"] if stream else [])
                    self.assertEqual(report["summary"]["unstable_prompts"], 0,
                                     "Q8_0 weights are bit-identical from run to run")
                    # Its /props, read through either route: 4 slots of 512 tokens (-c 2048).
                    described = report["endpoints"][0]["server"]
                    self.assertEqual((described["kind"], described["facts"][:2]),
                                     ("llama.cpp", [{"name": "slots", "value": "4"},
                                                    {"name": "context per slot", "value": "512"}]))
                    self.assertRegex(described["version"], r"^b[0-9]+-[0-9a-f]+$")
                    recorded = request_tokens(db_path)
                    self.assertEqual(len(recorded), len(TEXT_PROMPTS) * 2 * 2)
                    for (prompt_index, _, _), tokens in recorded.items():
                        text, want = expected[prompt_index]
                        self.assertEqual([t[0] for t in tokens], [t[0] for t in want])
                        self.assertEqual(b"".join(t[0] for t in tokens), text.encode())
                        for got, wanted in zip(tokens, want):
                            self.assertAlmostEqual(got[1], wanted[1], places=5)
                            self.assertEqual([c[0] for c in got[2][:2]],
                                             [c[0] for c in wanted[2][:2]])
                            for (_, a), (_, b) in zip(got[2][:2], wanted[2][:2]):
                                self.assertAlmostEqual(a, b, places=5)

    def test_a_chat_suite_goes_through_the_chat_template(self):
        server = self.start_server("q8_0", 4)
        suite = self.write_suite("chat.jsonl", [{"id": f"c{i}", "messages": m}
                                                for i, m in enumerate(CHAT_PROMPTS)])
        run, report, markdown, db_path = self.audit(server, suite, "auto", "chat-auto")
        self.assertIn("--api auto chose openai-chat", run.stderr)
        self.assertEqual(report["endpoints"][0]["dialect"], "openai-chat")
        self.assertFalse([w for w in report["warnings"] if "flattened" in w], report["warnings"])
        # The prompt the server saw is its own template's: /apply-template then /tokenize.
        conn = h.open_db(db_path)
        try:
            counts = dict(conn.execute("SELECT prompt_index, MAX(usage_prompt_tokens) FROM "
                                       "requests GROUP BY prompt_index").fetchall())
        finally:
            conn.close()
        for index, messages in enumerate(CHAT_PROMPTS):
            templated = server.post("/apply-template", {"messages": messages})["prompt"]
            tokens = server.post("/tokenize", {"content": templated})["tokens"]
            self.assertEqual(counts[index], len(tokens), f"chat prompt {index}")

        # Sent to /completion, the same suite is flattened, and every output says so.
        _, flat, flat_markdown, _ = self.audit(server, suite, "llamacpp", "chat-flat")
        warning = [w for w in flat["warnings"] if "flattened" in w]
        self.assertEqual(len(warning), 1, flat["warnings"])
        self.assertIn("the suite's 3 chat prompts were sent flattened", warning[0])
        self.assertIn("sent flattened", flat_markdown)
        self.assertNotIn("sent flattened", markdown)

    def test_f32_weights_drift_under_batching(self):
        server = self.start_server("f32", 8)
        prompts = TEXT_PROMPTS + ["Please answer the question in one short sentence.",
                                  "Our engine returns the log probability of every token."]
        suite = self.write_suite("drift.jsonl", [{"id": f"d{i}", "prompt": p}
                                                 for i, p in enumerate(prompts)])
        _, report, _, db_path = self.audit(server, suite, "llamacpp", "drift", levels="1,8",
                                           runs=3)
        recorded = request_tokens(db_path)
        moved = 0
        compared = 0
        for index in range(len(prompts)):
            serial = recorded[(index, 1, 0)]
            for repeat in range(3):
                batched = recorded[(index, 8, repeat)]
                for a, b in zip(serial, batched):
                    if a[0] != b[0]:
                        break
                    compared += 1
                    moved += a[1] != b[1]
        # Counted here from the database alone, and by the audit's own noise figures.
        self.assertGreater(compared, 0)
        self.assertGreater(moved, 0, "F32 logprobs at concurrency 8 move against serial")
        by_level = {e["concurrency"]: e for e in report["summary"]["by_concurrency"]}
        self.assertGreater(by_level[8]["noise"]["nonzero"], 0, json.dumps(by_level[8]))

    def test_cold_trials_leave_the_prompt_cache_out(self):
        # F32 on one slot: no batching, so what moves between trials is the prompt cache alone.
        # The probe's 160-word shared prefix is about 1,000 tokens of this small vocabulary.
        server = self.start_server("f32", 1, context=2048)
        suite = self.write_suite("prefix.jsonl", [{"id": f"p{i}", "prompt": p}
                                                  for i, p in enumerate(TEXT_PROMPTS[:3])])
        run, report, markdown, db_path = self.audit(server, suite, "llamacpp", "prefix",
                                                    levels="1", runs=4,
                                                    extra=["--probe", "prefix"])
        prefix = {p["probe"]: p for p in report["probes"]}["prefix"]
        self.assertEqual(prefix["activity"]["cold_mode"], "per_request")
        self.assertEqual(prefix["activity"]["flushes_sent"], 0, "llama.cpp has no flush route")
        self.assertIn("cold trials with the prompt cache off per request", markdown)
        conn = h.open_db(db_path)
        try:
            rows = conn.execute("SELECT id, prompt_index, repeat FROM requests WHERE ok = 1 AND "
                                "probe = 'prefix'").fetchall()
            tokens = token_blob.tokens_by_request(conn)
        finally:
            conn.close()
        self.assertEqual(len(rows), 3 * 4 * 2, "each run is a cold and a warm trial")
        for index in range(3):
            trials = {r: [(t.text, t.logprob) for t in tokens[i]]
                      for i, p, r in rows if p == index}
            # Even repeats are cold: with the cache left out, each is computed from scratch,
            # the same way every time.
            for repeat in (2, 4, 6):
                self.assertEqual(trials[repeat], trials[0], f"prompt {index}: cold trials agree")
        # And the server said so: its own count of cached prompt tokens for a cold request is 0.
        answer = server.post("/completion", {"prompt": TEXT_PROMPTS[0], "n_predict": 1,
                                             "cache_prompt": False})
        self.assertEqual(answer["timings"]["cache_n"], 0)


if __name__ == "__main__":
    h.main()
