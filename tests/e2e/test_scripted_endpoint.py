#!/usr/bin/python3
"""Scenario: the scripted endpoint itself speaks each dialect in the reference shapes.

Every payload it sends has exactly the key paths of the matching example in
fixtures/formats/ (copies of the reference payloads), the vLLM quirks are there, and each
fault does what the tests that use it rely on. The extensions the verdict scenarios use: 404,
401 and 503 faults with each dialect's error body, an entry's own model, NaN / Infinity /
-Infinity / 1e400 / -1e400 / null log probabilities written raw in every dialect, byte-fragment
tokens carrying their real bytes, null and empty candidate lists, stream chunks whose logprobs
are dropped, an empty completion, and scripts that are rejected. Anthropic's Messages API
(bodies, typed stream events, the version header, its model list and error shapes, tool_use
blocks), tool calls in OpenAI's chat shape, multi-step tool chains in both and in Gemini's,
the Responses API's and Ollama's shapes (a prompt's "steps", each request's step, tool results
and tools in the log, a tool result for an id never issued refused, a Gemini model turn without
its thought signature refused, Anthropic's tool-result turns skipped as prompts), the provider refusals of
"refuse_params" in each dialect's place and shape, and a server that honours the seed
("seeded"). Needs no llmrepro binary.
"""

import http.client
import json
import math

import e2e_harness as h
import standard_audit as std
from scripted_endpoint import token_id

FIXTURES = h.os.path.join(h.HERE, "fixtures", "formats")
# The reference payloads themselves, for the shapes that have no copy under FIXTURES.
FORMATS = h.os.path.join(h.os.path.dirname(h.HERE), "data", "formats")
PROMPT = "Where was Feynman born?"
ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-scripted", "anthropic-version": "2023-06-01"}


def key_paths(obj, path=""):
    """Every key path in a payload; maps keyed by token text collapse to '{token}'."""
    out = set()
    if isinstance(obj, dict):
        token_map = path.endswith("top_logprobs[]")
        for key, value in obj.items():
            sub = f"{path}.{{token}}" if token_map else f"{path}.{key}"
            out.add(sub)
            out |= key_paths(value, sub)
    elif isinstance(obj, list):
        for value in obj:
            out |= key_paths(value, path + "[]")
    return out


def fixture(name):
    with open(h.os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


def reference(name):
    with open(h.os.path.join(FORMATS, name), encoding="utf-8") as f:
        return json.load(f)


def typed_events(text):
    """(event name, data JSON) of each event of a typed SSE body ("event: x\ndata: {...}")."""
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            out.append((lines.get("event"), json.loads(lines["data"])))
    return out


def stream_paths(events):
    out = set()
    for event in events:
        out |= key_paths(event)
    return out


class ScriptedEndpoint(h.E2ETestCase):
    needs_binary = False

    def post(self, endpoint, path, body, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
        self.addCleanup(conn.close)
        conn.request("POST", path, json.dumps(body),
                     dict({"Content-Type": "application/json"}, **(headers or {})))
        response = conn.getresponse()
        return response, response.read()

    def get(self, endpoint, path, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
        self.addCleanup(conn.close)
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()

    def events(self, data, ndjson=False):
        text = data.decode()
        if ndjson:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        out = []
        for block in text.split("\n\n"):
            if block.startswith("data:"):
                payload = block[5:].strip()
                if payload != "[DONE]":
                    out.append(json.loads(payload))
        return out

    def check_shapes(self, dialect, path, body, fixture_name, stream=False):
        endpoint = self.start_endpoint(std.script(), dialect, name=dialect)
        response, data = self.post(endpoint, path, dict(body, stream=stream))
        self.assertEqual(response.status, 200, data[:300])
        if stream:
            got = stream_paths(self.events(data, ndjson=dialect == "ollama"))
            want = stream_paths(fixture(fixture_name))
        else:
            got, want = key_paths(json.loads(data)), key_paths(fixture(fixture_name))
        self.assertEqual(sorted(got - want), [], f"{dialect} {path}: keys not in {fixture_name}")
        self.assertEqual(sorted(want - got), [], f"{dialect} {path}: keys missing vs {fixture_name}")
        return data

    def test_payload_shapes_match_reference(self):
        chat = {"model": std.MODEL, "messages": [{"role": "user", "content": PROMPT}],
                "temperature": 0, "logprobs": True, "top_logprobs": 2, "seed": 7,
                "max_tokens": 128}
        chat_stream = dict(chat, stream_options={"include_usage": True})
        legacy = {"model": std.MODEL, "prompt": PROMPT, "temperature": 0, "logprobs": 2,
                  "seed": 7, "max_tokens": 128}
        native = {"prompt": PROMPT, "n_predict": 128, "temperature": 0, "n_probs": 2, "seed": 7}
        sglang = {"text": PROMPT, "sampling_params": {"temperature": 0, "max_new_tokens": 128},
                  "return_logprob": True, "top_logprobs_num": 2, "return_text_in_logprobs": True}
        ollama_opts = {"temperature": 0, "seed": 7, "num_predict": 128}
        ollama_chat = {"model": std.MODEL, "messages": [{"role": "user", "content": PROMPT}],
                       "options": ollama_opts, "logprobs": True, "top_logprobs": 2}
        ollama_gen = {"model": std.MODEL, "prompt": PROMPT, "options": ollama_opts,
                      "logprobs": True, "top_logprobs": 2}
        tgi = {"inputs": PROMPT, "parameters": {"details": True, "top_n_tokens": 2,
                                                "do_sample": False, "max_new_tokens": 128,
                                                "seed": 7}}
        cases = [
            ("openai-chat", "/v1/chat/completions", chat, "openai_chat_completion_logprobs.json", False),
            ("openai-chat", "/v1/chat/completions", chat_stream,
             "openai_chat_completion_stream_chunks.json", True),
            ("vllm", "/v1/chat/completions", chat, "vllm_chat_completion_logprobs.json", False),
            ("vllm", "/v1/chat/completions", chat, "vllm_chat_completion_stream_chunks.json", True),
            ("vllm", "/v1/completions", legacy, "vllm_completion_logprobs.json", False),
            ("llamacpp", "/completion", native, "llamacpp_completion_native_n_probs.json", False),
            ("llamacpp-old", "/completion", native, "llamacpp_completion_native_old_probs_tok_str.json", False),
            ("sglang", "/generate", sglang, "sglang_generate_logprobs.json", False),
            ("ollama", "/api/chat", ollama_chat, "ollama_chat_logprobs.json", False),
            ("ollama", "/api/generate", ollama_gen, "ollama_generate_logprobs.json", False),
            ("tgi", "/generate", tgi, "tgi_generate_details_top_tokens.json", False),
        ]
        for dialect, path, body, name, stream in cases:
            with self.subTest(dialect=dialect, path=path, stream=stream):
                self.check_shapes(dialect, path, body, name, stream)
        # Legacy OpenAI completions add system_fingerprint, which the spec has and the example lacks.
        endpoint = self.start_endpoint(std.script(), "openai-completions", name="legacy")
        response, data = self.post(endpoint, "/v1/completions", legacy)
        got = key_paths(json.loads(data)) - {".system_fingerprint"}
        self.assertEqual(got, key_paths(fixture("openai_legacy_completion_logprobs.json")))

    def test_vllm_quirks(self):
        script = std.script()
        script["token_ids"] = True
        # The reference's -0.70 candidate at index 3 pushed below vLLM's floor.
        x = json.loads(json.dumps(std.FEYNMAN_X))
        x[3][2][1][1] = -12000.0
        script["prompts"][PROMPT] = [{"tokens": x}]
        endpoint = self.start_endpoint(script, "vllm")
        body = {"messages": [{"role": "user", "content": PROMPT}], "logprobs": True,
                "top_logprobs": 2}
        _, data = self.post(endpoint, "/v1/chat/completions", body)
        content = json.loads(data)["choices"][0]["logprobs"]["content"]
        self.assertEqual(content[3]["token"], f"token_id:{token_id(' in')}")
        self.assertEqual([(c["token"], c["logprob"]) for c in content[3]["top_logprobs"]],
                         [(f"token_id:{token_id(' in')}", -0.68),
                          (f"token_id:{token_id(' on')}", -9999.0)])
        # Sampled token first even when the script lists candidates lowest first.
        hello = std.script()
        endpoint = self.start_endpoint(hello, "vllm", name="hello")
        body = {"messages": [{"role": "user", "content": "Say hello."}], "logprobs": True,
                "top_logprobs": 2}
        _, data = self.post(endpoint, "/v1/chat/completions", body)
        top = json.loads(data)["choices"][0]["logprobs"]["content"][2]["top_logprobs"]
        self.assertEqual([(c["token"], c["logprob"]) for c in top],
                         [(" there", -0.69), (" world", -0.70)])

    def test_llamacpp_old_sends_probabilities(self):
        endpoint = self.start_endpoint(std.script(), "llamacpp-old")
        _, data = self.post(endpoint, "/completion", {"prompt": PROMPT, "n_probs": 2})
        probs = json.loads(data)["completion_probabilities"][3]["probs"]
        self.assertEqual(probs, [{"tok_str": " in", "prob": math.exp(-0.68)},
                                 {"tok_str": " on", "prob": math.exp(-0.70)}])

    def test_entries_cycle_and_faults(self):
        x = {"tokens": std.FEYNMAN_X}
        script = {"prompts": {PROMPT: [{"fault": "429", "retry_after": 1}, {"fault": "500"},
                                       {"fault": "truncate", "tokens": std.FEYNMAN_X},
                                       {"fault": "malformed"},
                                       {"fault": "close", "tokens": std.FEYNMAN_X},
                                       {"fault": "oversize"},
                                       {"fault": "no_logprobs", "tokens": std.FEYNMAN_X}, x]}}
        endpoint = self.start_endpoint(script, "openai-chat")
        body = {"messages": [{"role": "user", "content": PROMPT}], "logprobs": True,
                "top_logprobs": 2}
        response, _ = self.post(endpoint, "/v1/chat/completions", body)
        self.assertEqual((response.status, response.getheader("Retry-After")), (429, "1"))
        response, _ = self.post(endpoint, "/v1/chat/completions", body)
        self.assertEqual(response.status, 500)
        for _ in ("truncate", "malformed"):
            response, data = self.post(endpoint, "/v1/chat/completions", body)
            self.assertEqual(response.status, 200)
            with self.assertRaises(ValueError):
                json.loads(data)
        with self.assertRaises(http.client.IncompleteRead):
            self.post(endpoint, "/v1/chat/completions", body)
        response, data = self.post(endpoint, "/v1/chat/completions", body)
        self.assertGreater(len(data), 16 << 20)
        response, data = self.post(endpoint, "/v1/chat/completions", body)
        self.assertIsNone(json.loads(data)["choices"][0]["logprobs"])
        response, data = self.post(endpoint, "/v1/chat/completions", body)
        self.assertEqual(len(json.loads(data)["choices"][0]["logprobs"]["content"]), 5)
        response, data = self.post(endpoint, "/v1/chat/completions", body)  # cycles
        self.assertEqual(response.status, 429)
        log = endpoint.posts()
        self.assertEqual([i["outcome"] for i in log],
                         ["429", "500", "truncate", "malformed", "close", "oversize",
                          "no_logprobs", "completion", "429"])
        self.assertEqual([i["entry"] for i in log], [0, 1, 2, 3, 4, 5, 6, 7, 0])

    def test_stream_faults_end_early(self):
        script = {"prompts": {PROMPT: [{"fault": "truncate", "tokens": std.FEYNMAN_X}]}}
        for dialect, path, body, final in [
                ("openai-chat", "/v1/chat/completions",
                 {"messages": [{"role": "user", "content": PROMPT}], "logprobs": True}, None),
                ("llamacpp", "/completion", {"prompt": PROMPT, "n_probs": 2}, "stop"),
                ("ollama", "/api/chat", {"messages": [{"role": "user", "content": PROMPT}]}, "done"),
                ("tgi", "/generate_stream", {"inputs": PROMPT}, "generated_text")]:
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                response, data = self.post(endpoint, path, dict(body, stream=True))
                self.assertEqual(response.status, 200)
                self.assertNotIn(b"[DONE]", data)
                events = self.events(data, ndjson=dialect == "ollama")
                self.assertGreater(len(events), 0)
                if final:
                    self.assertFalse(any(e.get(final) for e in events), data[-300:])


    # ------------------------------------------------------------------------------------------
    # Extensions the verdict scenarios rely on.

    def chat_body(self, stream=False, k=2):
        return {"messages": [{"role": "user", "content": PROMPT}], "logprobs": True,
                "top_logprobs": k, "stream": stream}

    def test_error_faults_404_401_503(self):
        script = {"model": "served-model", "prompts": {PROMPT: [
            {"fault": "404"}, {"fault": "401"}, {"fault": "503"},
            {"fault": "503", "retry_after": 0}]}}
        requests = {"openai-chat": ("/v1/chat/completions", self.chat_body()),
                    "vllm": ("/v1/chat/completions", self.chat_body()),
                    "llamacpp": ("/completion", {"prompt": PROMPT, "n_probs": 2}),
                    "sglang": ("/generate", {"text": PROMPT}),
                    "ollama": ("/api/chat", {"model": "asked-model", "stream": False,
                                             "messages": [{"role": "user", "content": PROMPT}]}),
                    "tgi": ("/generate", {"inputs": PROMPT})}
        for dialect, (path, body) in requests.items():
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                got = []
                for _ in range(4):
                    response, data = self.post(endpoint, path, body)
                    got.append((response.status, response.getheader("Retry-After"),
                                json.loads(data)))
                self.assertEqual([(status, retry) for status, retry, _ in got],
                                 [(404, None), (401, None), (503, None), (503, "0")])
                for status, _, error in got:
                    if dialect == "ollama":
                        self.assertEqual(list(error), ["error"])
                        self.assertIsInstance(error["error"], str)
                    elif dialect == "tgi":
                        self.assertEqual(sorted(error), ["error", "error_type"])
                    else:
                        self.assertEqual(sorted(error["error"]),
                                         ["code", "message", "param", "type"])
                not_found = got[0][2]
                if dialect == "ollama":
                    self.assertEqual(not_found["error"], "model 'asked-model' not found")
                elif dialect not in ("tgi",):
                    self.assertEqual(not_found["error"]["code"], "model_not_found")
                    self.assertIn("`served-model` does not exist", not_found["error"]["message"])
                self.assertEqual([i["outcome"] for i in endpoint.posts()],
                                 ["404", "401", "503", "503"])

    def test_entry_model_overrides_the_script_model(self):
        entries = [{"tokens": std.FEYNMAN_X, "model": "m-a"}, {"tokens": std.FEYNMAN_X}]
        script = {"model": "m-default", "prompts": {PROMPT: entries}}
        cases = [("openai-chat", "/v1/chat/completions", self.chat_body(), ["model"]),
                 ("openai-completions", "/v1/completions", {"prompt": PROMPT, "logprobs": 2},
                  ["model"]),
                 ("llamacpp", "/completion", {"prompt": PROMPT, "n_probs": 2}, ["model"]),
                 ("ollama", "/api/generate", {"prompt": PROMPT, "stream": False}, ["model"])]
        for dialect, path, body, key in cases:
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                models = [json.loads(self.post(endpoint, path, body)[1])[key[0]]
                          for _ in range(3)]
                self.assertEqual(models, ["m-a", "m-default", "m-a"])
        # Streamed chunks name the entry's model too.
        endpoint = self.start_endpoint(script, "openai-chat", name="stream")
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body(stream=True))
        self.assertEqual({e["model"] for e in self.events(data)}, {"m-a"})

    @staticmethod
    def raw_loads(data):
        """JSON with the non-standard literals kept as markers: 'RAW NaN', 'RAW 1e400', ..."""
        def as_float(text):
            value = float(text)
            return f"RAW {text}" if math.isinf(value) else value
        return json.loads(data, parse_constant=lambda name: f"RAW {name}", parse_float=as_float)

    def test_raw_numbers_in_every_dialect(self):
        tokens = [["a", "NaN", [["a", "Infinity"], ["b", "-Infinity"]]],
                  ["c", "1e400", [["c", "-1e400"], ["d", None]]],
                  ["e", None, [["e", -0.5], ["f", "NaN"]]]]
        script = {"prompts": {PROMPT: [{"tokens": tokens}]}}
        want_tokens = ["RAW NaN", "RAW 1e400", None]
        want_top = [["RAW Infinity", "RAW -Infinity"], ["RAW -1e400", None], [-0.5, "RAW NaN"]]
        chat, chat_stream = self.chat_body(), self.chat_body(stream=True)
        legacy = {"prompt": PROMPT, "logprobs": 2}
        native = {"prompt": PROMPT, "n_probs": 2}

        def chat_view(doc):
            content = doc["choices"][0]["logprobs"]["content"]
            return ([c["logprob"] for c in content],
                    [[t["logprob"] for t in c["top_logprobs"]] for c in content])

        def stream_view(events):
            content = [c for e in events for ch in e["choices"] if ch.get("logprobs")
                       for c in ch["logprobs"]["content"]]
            return ([c["logprob"] for c in content],
                    [[t["logprob"] for t in c["top_logprobs"]] for c in content])

        def legacy_view(doc):
            lp = doc["choices"][0]["logprobs"]
            return lp["token_logprobs"], [list(m.values()) for m in lp["top_logprobs"]]

        def llamacpp_view(doc):
            probs = doc["completion_probabilities"]
            return ([p["logprob"] for p in probs],
                    [[t["logprob"] for t in p["top_logprobs"]] for p in probs])

        def old_view(doc):
            probs = doc["completion_probabilities"]
            return None, [[t["prob"] for t in p["probs"]] for p in probs]

        def sglang_view(doc):
            meta = doc["meta_info"]
            return ([t[0] for t in meta["output_token_logprobs"]],
                    [[t[0] for t in top] for top in meta["output_top_logprobs"]])

        def ollama_view(doc):
            return ([t["logprob"] for t in doc["logprobs"]],
                    [[c["logprob"] for c in t["top_logprobs"]] for t in doc["logprobs"]])

        def tgi_view(doc):
            details = doc["details"]
            return ([t["logprob"] for t in details["tokens"]],
                    [[c["logprob"] for c in top] for top in details["top_tokens"]])

        cases = [("openai-chat", "/v1/chat/completions", chat, chat_view, False),
                 ("openai-chat", "/v1/chat/completions", chat_stream, stream_view, True),
                 ("openai-completions", "/v1/completions", legacy, legacy_view, False),
                 ("llamacpp", "/completion", native, llamacpp_view, False),
                 ("llamacpp-old", "/completion", native, old_view, False),
                 ("sglang", "/generate", {"text": PROMPT, "return_logprob": True,
                                          "top_logprobs_num": 2}, sglang_view, False),
                 ("ollama", "/api/chat", {"messages": [{"role": "user", "content": PROMPT}],
                                          "logprobs": True, "top_logprobs": 2,
                                          "stream": False}, ollama_view, False),
                 ("tgi", "/generate", {"inputs": PROMPT, "parameters": {
                     "details": True, "top_n_tokens": 2}}, tgi_view, False)]
        for dialect, path, body, view, stream in cases:
            with self.subTest(dialect=dialect, stream=stream):
                endpoint = self.start_endpoint(script, dialect, name=f"{dialect}-{stream}")
                response, data = self.post(endpoint, path, body)
                self.assertEqual(response.status, 200)
                for quoted in (b'"NaN"', b'"Infinity"', b'"-Infinity"', b'"1e400"',
                               b"scripted-raw"):
                    self.assertNotIn(quoted, data)
                for literal in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"):
                    self.assertIn(literal, data)
                if stream:
                    events = [self.raw_loads(b[5:].strip()) for b in data.split(b"\n\n")
                              if b.startswith(b"data:") and b[5:].strip() != b"[DONE]"]
                    got_tokens, got_top = view(events)
                else:
                    got_tokens, got_top = view(self.raw_loads(data))
                if got_tokens is not None:
                    self.assertEqual(got_tokens, want_tokens)
                if dialect == "llamacpp-old":  # probabilities: exp() of the finite logprobs
                    self.assertEqual(got_top, want_top[:2] + [[math.exp(-0.5), "RAW NaN"]])
                else:
                    self.assertEqual(got_top, want_top)
        # vLLM: the raw values are not clamped; a finite one below the floor still is.
        vllm_tokens = [["a", "-Infinity", [["a", "-Infinity"], ["b", -12000.0]]]]
        endpoint = self.start_endpoint({"prompts": {PROMPT: [{"tokens": vllm_tokens}]}}, "vllm",
                                       name="vllm")
        _, data = self.post(endpoint, "/v1/chat/completions", chat)
        entry = self.raw_loads(data)["choices"][0]["logprobs"]["content"][0]
        self.assertEqual((entry["logprob"], [t["logprob"] for t in entry["top_logprobs"]]),
                         ("RAW -Infinity", ["RAW -Infinity", -9999.0]))

    def test_byte_fragment_tokens(self):
        # U+2500 is e2 94 80: two tokens whose strings are both U+FFFD.
        frag = [["\ufffd", -0.1, [["\ufffd", -0.1], ["x", -3.0]], [0xE2]],
                ["\ufffd", -0.2, [["\ufffd", -0.2], ["y", -3.0, [0x79]]]]]
        script = {"prompts": {PROMPT: [{"tokens": frag, "bytes": [None, [0x94, 0x80]]}]}}
        endpoint = self.start_endpoint(script, "openai-chat")
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
        choice = json.loads(data)["choices"][0]
        self.assertEqual(choice["message"]["content"], "\u2500")
        content = choice["logprobs"]["content"]
        self.assertEqual([(c["token"], c["bytes"]) for c in content],
                         [("\ufffd", [0xE2]), ("\ufffd", [0x94, 0x80])])
        self.assertEqual([[(t["token"], t["bytes"]) for t in c["top_logprobs"]] for c in content],
                         [[("\ufffd", [0xE2]), ("x", [0x78])],
                          [("\ufffd", [0x94, 0x80]), ("y", [0x79])]])
        # Streamed: the incomplete character is held back to the chunk that completes it.
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body(stream=True))
        deltas = [e["choices"][0]["delta"].get("content") for e in self.events(data)
                  if e["choices"] and e["choices"][0].get("logprobs")]
        self.assertEqual(deltas, ["", "\u2500"])
        # vLLM chat and Ollama carry the bytes too; a dialect without them gets the decoded text.
        for dialect, path, body, read in [
                ("vllm", "/v1/chat/completions", self.chat_body(),
                 lambda d: [c["bytes"] for c in d["choices"][0]["logprobs"]["content"]]),
                ("ollama", "/api/chat", {"messages": [{"role": "user", "content": PROMPT}],
                                         "logprobs": True, "top_logprobs": 2, "stream": False},
                 lambda d: [c["bytes"] for c in d["logprobs"]]),
                ("tgi", "/generate", {"inputs": PROMPT, "parameters": {"details": True}},
                 lambda d: [d["generated_text"]] + [t["text"] for t in d["details"]["tokens"]])]:
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                _, data = self.post(endpoint, path, body)
                got = read(json.loads(data))
                if dialect == "tgi":
                    self.assertEqual(got, ["\u2500", "\ufffd", "\ufffd"])
                else:
                    self.assertEqual(got, [[0xE2], [0x94, 0x80]])

    def test_null_and_empty_candidates(self):
        tokens = [["a", -0.1, None], ["b", -0.2, []], ["c", -0.3, [["c", -0.3], ["d", -0.4]]]]
        script = {"prompts": {PROMPT: [{"tokens": tokens}]}}
        cases = [("openai-chat", "/v1/chat/completions", self.chat_body(),
                  lambda d: [c["top_logprobs"] for c in d["choices"][0]["logprobs"]["content"]],
                  "top_logprobs"),
                 ("openai-completions", "/v1/completions", {"prompt": PROMPT, "logprobs": 2},
                  lambda d: d["choices"][0]["logprobs"]["top_logprobs"], None),
                 ("llamacpp", "/completion", {"prompt": PROMPT, "n_probs": 2},
                  lambda d: [p["top_logprobs"] for p in d["completion_probabilities"]],
                  "top_logprobs"),
                 ("llamacpp-old", "/completion", {"prompt": PROMPT, "n_probs": 2},
                  lambda d: [p["probs"] for p in d["completion_probabilities"]], "probs"),
                 ("sglang", "/generate", {"text": PROMPT, "return_logprob": True,
                                          "top_logprobs_num": 2},
                  lambda d: d["meta_info"]["output_top_logprobs"], None),
                 ("ollama", "/api/generate", {"prompt": PROMPT, "logprobs": True,
                                              "top_logprobs": 2, "stream": False},
                  lambda d: [t["top_logprobs"] for t in d["logprobs"]], "top_logprobs"),
                 ("tgi", "/generate", {"inputs": PROMPT, "parameters": {"details": True,
                                                                         "top_n_tokens": 2}},
                  lambda d: d["details"]["top_tokens"], None)]
        for dialect, path, body, read, key in cases:
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                _, data = self.post(endpoint, path, body)
                got = read(json.loads(data))
                self.assertIsNone(got[0])
                self.assertEqual(len(got[1]), 0)
                self.assertEqual(len(got[2]), 2)
                if key:
                    self.assertIn(f'"{key}": null'.encode(), data)

    def test_drop_logprobs_chunks(self):
        script = {"prompts": {PROMPT: [{"tokens": std.FEYNMAN_X, "drop_logprobs_chunks": [1, 3]}]}}
        endpoint = self.start_endpoint(script, "openai-chat")
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body(stream=True))
        chunks = [e["choices"][0] for e in self.events(data)
                  if e["choices"] and e["choices"][0]["delta"].get("content")]
        self.assertEqual([c["delta"]["content"] for c in chunks],
                         [t[0] for t in std.FEYNMAN_X])
        self.assertEqual([c["logprobs"] is None for c in chunks],
                         [False, True, False, True, False])
        # Not streamed: nothing to drop.
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
        self.assertEqual(len(json.loads(data)["choices"][0]["logprobs"]["content"]), 5)
        # Legacy completions streams and vLLM's two-token chunks too.
        endpoint = self.start_endpoint(script, "openai-completions", name="legacy")
        _, data = self.post(endpoint, "/v1/completions",
                            {"prompt": PROMPT, "logprobs": 2, "stream": True})
        self.assertEqual([e["choices"][0]["logprobs"] is None for e in self.events(data)],
                         [False, True, False, True, False])
        endpoint = self.start_endpoint(script, "vllm", name="vllm")
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body(stream=True))
        chunks = [e["choices"][0] for e in self.events(data)
                  if e["choices"] and e["choices"][0]["delta"].get("content")]
        self.assertEqual([(c["delta"]["content"], c["logprobs"] is None) for c in chunks],
                         [(" He was", False), (" born in", True), (" Queens", False)])

    def test_empty_completion(self):
        script = {"prompts": {PROMPT: [{"tokens": [], "finish_reason": "stop"}]}}
        endpoint = self.start_endpoint(script, "openai-chat")
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
        choice = json.loads(data)["choices"][0]
        self.assertEqual((choice["message"]["content"], choice["logprobs"]["content"],
                          choice["finish_reason"]), ("", [], "stop"))
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body(stream=True))
        events = self.events(data)
        self.assertEqual("".join(e["choices"][0]["delta"].get("content") or ""
                                 for e in events if e["choices"]), "")
        self.assertEqual([e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1],
                         "stop")

    def test_bad_scripts_are_rejected(self):
        import subprocess
        bad = {
            "unknown fault": {"fault": "418"},
            "logprob string": {"tokens": [["a", "nan", []]]},
            "logprob bool": {"tokens": [["a", True, []]]},
            "candidate logprob": {"tokens": [["a", -0.1, [["a", "inf"]]]]},
            "byte range": {"tokens": [["a", -0.1, [], [256]]]},
            "bytes length": {"tokens": [["a", -0.1, []]], "bytes": [[97], [98]]},
            "bytes twice": {"tokens": [["a", -0.1, [], [97]]], "bytes": [[97]]},
            "model type": {"tokens": [], "model": 7},
            "drop index": {"tokens": [], "drop_logprobs_chunks": [-1]},
            "token shape": {"tokens": [["a", -0.1, [], [97], "x"]]},
            "reasoning shape": {"tokens": [], "reasoning": "<think>"},
            "tool call shape": {"tokens": [], "tool_calls": [{"name": "search"}]},
            "tool call arguments": {"tokens": [], "tool_calls": [{"name": "search",
                                                                  "arguments": "{}"}]},
        }
        for name, entry in bad.items():
            with self.subTest(case=name):
                path = self.write_json(f"bad-{len(name)}-{name[:4]}.json",
                                       {"prompts": {PROMPT: [entry]}})
                done = subprocess.run([h.PYTHON, h.os.path.join(h.HERE, "scripted_endpoint.py"),
                                       "--script", path, "--port-file", self.path("never.port")],
                                      capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("scripted_endpoint: ", done.stderr)

        for name, script in {"unknown reasoning_shape": {"reasoning_shape": "deepseek"},
                             "together reasoning": {"together": True},
                             "refused unknown": {"refuse_params": {"top_k": "unsupported"}},
                             "refusal kind": {"refuse_params": {"seed": "ignored"}},
                             "refusal shape": {"refuse_params": ["seed"]}}.items():
            with self.subTest(case=name):
                script = dict(script, prompts={PROMPT: [{"tokens": [], "reasoning": REASON}]})
                path = self.write_json(f"bad-script-{len(name)}.json", script)
                done = subprocess.run([h.PYTHON, h.os.path.join(h.HERE, "scripted_endpoint.py"),
                                       "--script", path, "--port-file", self.path("never.port")],
                                      capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("scripted_endpoint: script: ", done.stderr)

    # ------------------------------------------------------------------------------------------
    # Reasoning models: an entry's "reasoning" in each dialect's shape.

    def reasoning_endpoint(self, dialect, shape=None):
        script = {"prompts": {PROMPT: [{"reasoning": REASON, "tokens": ANSWER,
                                        "finish_reason": "stop"}]}}
        if shape is not None:
            script["reasoning_shape"] = shape
        return self.start_endpoint(script, dialect, name=f"{dialect}-{shape}")

    def test_reasoning_openai_chat_shapes(self):
        everything = [t[0] for t in REASON + ANSWER]
        for dialect, shape, key, listed in [
                ("openai-chat", "sglang", "reasoning_content", everything),
                ("openai-chat", None, "reasoning_content", everything),  # sglang by default
                ("openai-chat", "vllm", "reasoning", everything),
                ("vllm", "vllm", "reasoning", everything),
                ("openai-chat", "openai", "reasoning_content", ["Four", "."])]:
            with self.subTest(dialect=dialect, shape=shape):
                endpoint = self.reasoning_endpoint(dialect, shape)
                _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
                doc = json.loads(data)
                message = doc["choices"][0]["message"]
                self.assertEqual((message["content"], message[key]), ("Four.", "Two and two"))
                self.assertEqual([c["token"] for c in doc["choices"][0]["logprobs"]["content"]],
                                 listed)
                self.assertEqual(doc["usage"]["completion_tokens"], 8)
                body = dict(self.chat_body(stream=True), stream_options={"include_usage": True})
                _, data = self.post(endpoint, "/v1/chat/completions", body)
                choices = [e["choices"][0] for e in self.events(data) if e["choices"]]
                self.assertEqual("".join(c["delta"].get(key) or "" for c in choices),
                                 "Two and two")
                self.assertEqual("".join(c["delta"].get("content") or "" for c in choices),
                                 "Four.")
                streamed = [t["token"] for c in choices if c["logprobs"]
                            for t in c["logprobs"]["content"]]
                self.assertEqual(streamed, listed)
                # Each reasoning chunk carries its own token's logprobs (SGLang's order).
                first = next(c for c in choices if key in c["delta"])
                self.assertEqual(first["delta"][key], "")
                if listed == everything:
                    self.assertEqual(first["logprobs"]["content"][0]["token"], "<think>")

    def test_reasoning_ollama_responses_gemini(self):
        everything = [t[0] for t in REASON + ANSWER]
        ollama = self.reasoning_endpoint("ollama")
        for path, body in [("/api/chat", {"messages": [{"role": "user", "content": PROMPT}]}),
                           ("/api/generate", {"prompt": PROMPT})]:
            body = dict(body, logprobs=True, top_logprobs=2, stream=False)
            _, data = self.post(ollama, path, body)
            doc = json.loads(data)
            holder = doc["message"] if path == "/api/chat" else doc
            self.assertEqual((holder.get("content", doc.get("response")), holder["thinking"]),
                             ("Four.", "Two and two"))
            self.assertEqual([t["token"] for t in doc["logprobs"]], everything)
            _, data = self.post(ollama, path, dict(body, stream=True))
            lines = self.events(data, ndjson=True)
            holders = [line["message"] if path == "/api/chat" else line for line in lines]
            self.assertEqual("".join(x.get("thinking", "") for x in holders), "Two and two")
            self.assertEqual([t["token"] for line in lines for t in line.get("logprobs", [])],
                             everything)
        responses = self.reasoning_endpoint("openai-responses")
        body = {"input": PROMPT, "top_logprobs": 2, "include": ["message.output_text.logprobs"]}
        _, data = self.post(responses, "/v1/responses", body)
        doc = json.loads(data)
        self.assertEqual([item["type"] for item in doc["output"]], ["reasoning", "message"])
        self.assertEqual(doc["output"][0]["content"],
                         [{"type": "reasoning_text", "text": "Two and two"}])
        self.assertEqual([t["token"] for t in doc["output"][1]["content"][0]["logprobs"]],
                         ["Four", "."])
        _, data = self.post(responses, "/v1/responses", dict(body, stream=True))
        events = [json.loads(block.split("\ndata: ", 1)[1])  # typed: "event: <type>\ndata: ..."
                  for block in data.decode().split("\n\n") if "\ndata: " in block]
        self.assertEqual("".join(e["delta"] for e in events
                                 if e["type"] == "response.reasoning_text.delta"), "Two and two")
        self.assertEqual("".join(e["delta"] for e in events
                                 if e["type"] == "response.output_text.delta"), "Four.")
        gemini = self.reasoning_endpoint("gemini")
        path = f"/v1beta/models/{std.MODEL}"
        body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
                "generationConfig": {"responseLogprobs": True, "logprobs": 2}}
        _, data = self.post(gemini, path + ":generateContent", body)
        parts = json.loads(data)["candidates"][0]["content"]["parts"]
        self.assertEqual(parts, [{"text": "Two and two", "thought": True}, {"text": "Four."}])
        _, data = self.post(gemini, path + ":streamGenerateContent?alt=sse", body)
        chunks = [json.loads(block[5:]) for block in data.decode().split("\r\n\r\n")
                  if block.startswith("data:")]
        self.assertEqual(chunks[0]["candidates"][0]["content"]["parts"],
                         [{"text": "Two and two", "thought": True}])
        self.assertNotIn("logprobsResult", chunks[0]["candidates"][0])
        self.assertEqual([c["token"] for chunk in chunks[1:] for c in
                          chunk["candidates"][0]["logprobsResult"]["chosenCandidates"]],
                         ["Four", "."])

    def test_reasoning_raw_in_dialects_without_it(self):
        endpoint = self.reasoning_endpoint("llamacpp")
        _, data = self.post(endpoint, "/completion", {"prompt": PROMPT, "n_probs": 2})
        doc = json.loads(data)
        self.assertEqual(doc["content"], "<think>Two and two</think>\n\nFour.")
        self.assertEqual([p["token"] for p in doc["completion_probabilities"]],
                         [t[0] for t in REASON + ANSWER])

    # ------------------------------------------------------------------------------------------
    # Anthropic's Messages API.

    def anthropic_endpoint(self, entries, name="anthropic", **script):
        return self.start_endpoint(dict({"model": "claude-scripted", "prompts": {PROMPT: entries}},
                                        **script), "anthropic", name=name)

    def messages_body(self, stream=False, **extra):
        return dict({"model": "claude-scripted", "max_tokens": 64, "stream": stream,
                     "system": "Answer briefly.",
                     "messages": [{"role": "user", "content": PROMPT}]}, **extra)

    def test_anthropic_message(self):
        endpoint = self.anthropic_endpoint([
            {"tokens": std.FEYNMAN_X, "finish_reason": "stop", "prompt_tokens": 14,
             "cached_tokens": 4},
            {"tokens": std.FEYNMAN_X, "model": "claude-other"}])
        response, data = self.post(endpoint, "/v1/messages", self.messages_body(),
                                   ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 200, data)
        doc = json.loads(data)
        self.assertEqual(key_paths(doc), key_paths(reference("anthropic_message.json")))
        self.assertEqual(doc["content"], [{"type": "text",
                                           "text": "".join(t[0] for t in std.FEYNMAN_X)}])
        self.assertEqual((doc["type"], doc["role"], doc["model"], doc["stop_reason"],
                          doc["stop_sequence"]),
                         ("message", "assistant", "claude-scripted", "end_turn", None))
        self.assertTrue(doc["id"].startswith("msg_"))
        self.assertEqual(doc["usage"], {"input_tokens": 14, "cache_creation_input_tokens": 0,
                                        "cache_read_input_tokens": 4, "output_tokens": 5,
                                        "service_tier": "standard"})
        self.assertNotIn(b"logprob", data)  # the API has none, whatever is asked
        # finish_reason "length" is max_tokens; the entry's model; max_tokens cuts the tokens.
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(max_tokens=2),
                            ANTHROPIC_HEADERS)
        doc = json.loads(data)
        self.assertEqual((doc["stop_reason"], doc["model"], doc["content"][0]["text"],
                          doc["usage"]["output_tokens"], doc["usage"]["input_tokens"],
                          doc["usage"]["cache_read_input_tokens"]),
                         ("max_tokens", "claude-other", " He was", 2, 12, 0))
        self.assertEqual([(i["path"], i["outcome"], i["entry"]) for i in endpoint.posts()],
                         [("/v1/messages", "completion", 0), ("/v1/messages", "completion", 1)])

    def test_anthropic_stream(self):
        endpoint = self.anthropic_endpoint([{"tokens": std.FEYNMAN_X, "finish_reason": "stop",
                                             "prompt_tokens": 14, "cached_tokens": 4}])
        response, data = self.post(endpoint, "/v1/messages", self.messages_body(stream=True),
                                   ANTHROPIC_HEADERS)
        self.assertEqual((response.status, response.getheader("Content-Type")),
                         (200, "text/event-stream"))
        self.assertNotIn(b"[DONE]", data)
        events = typed_events(data.decode())
        with open(h.os.path.join(FORMATS, "anthropic_stream_events.txt"), encoding="utf-8") as f:
            want = typed_events(f.read())
        self.assertEqual(stream_paths(e for _, e in events), stream_paths(e for _, e in want))
        self.assertEqual([name for name, _ in events], [e["type"] for _, e in events])
        self.assertEqual([name for name, _ in events],
                         ["message_start", "content_block_start", "ping"]
                         + ["content_block_delta"] * 5
                         + ["content_block_stop", "message_delta", "message_stop"])
        start = events[0][1]["message"]
        self.assertEqual((start["content"], start["stop_reason"], start["usage"]),
                         ([], None, {"input_tokens": 14, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 4, "output_tokens": 1}))
        deltas = [e["delta"] for name, e in events if name == "content_block_delta"]
        self.assertEqual([d["type"] for d in deltas], ["text_delta"] * 5)
        self.assertEqual([d["text"] for d in deltas], [t[0] for t in std.FEYNMAN_X])
        self.assertEqual(events[-2][1], {"type": "message_delta",
                                         "delta": {"stop_reason": "end_turn",
                                                   "stop_sequence": None},
                                         "usage": {"output_tokens": 5}})
        # A truncated stream ends before message_stop, as a cut connection would.
        endpoint = self.anthropic_endpoint([{"fault": "truncate", "tokens": std.FEYNMAN_X}],
                                           name="cut")
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(stream=True),
                            ANTHROPIC_HEADERS)
        self.assertNotIn(b"message_stop", data)

    def test_anthropic_version_header_and_max_tokens(self):
        endpoint = self.anthropic_endpoint([{"tokens": std.FEYNMAN_X}])
        response, data = self.post(endpoint, "/v1/messages", self.messages_body(),
                                   {"x-api-key": "sk-ant-scripted"})
        self.assertEqual(response.status, 400)
        error = json.loads(data)
        self.assertEqual(key_paths(error), key_paths(reference("anthropic_error_400.json")))
        self.assertEqual((error["type"], error["error"]),
                         ("error", {"type": "invalid_request_error",
                                    "message": "anthropic-version: header is required"}))
        body = self.messages_body()
        del body["max_tokens"]
        response, data = self.post(endpoint, "/v1/messages", body, ANTHROPIC_HEADERS)
        self.assertEqual((response.status, json.loads(data)["error"]["message"]),
                         (400, "max_tokens: Field required"))
        response, data = self.post(endpoint, "/v1/messages", self.messages_body(),
                                   ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 200)
        log = endpoint.posts()
        self.assertEqual([i["outcome"] for i in log], ["bad_request", "bad_request", "completion"])
        self.assertEqual(log[-1]["entry"], 0)  # the refused requests consumed none
        self.assertIn(["anthropic-version", "2023-06-01"], log[-1]["headers"])

    def test_anthropic_get_routes(self):
        endpoint = self.anthropic_endpoint([{"tokens": std.FEYNMAN_X}])
        response, data = self.get(endpoint, "/v1/models", ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 200)
        listed = json.loads(data)
        self.assertEqual(key_paths(listed), key_paths(reference("anthropic_models_list.json")))
        self.assertEqual([m["id"] for m in listed["data"]],
                         ["claude-scripted", "claude-opus-4-1-20250805"])
        self.assertEqual((listed["first_id"], listed["last_id"], listed["has_more"]),
                         ("claude-scripted", "claude-opus-4-1-20250805", False))
        self.assertEqual({m["type"] for m in listed["data"]}, {"model"})
        response, data = self.get(endpoint, "/v1/models")  # no version header
        self.assertEqual((response.status, json.loads(data)["error"]["type"]),
                         (400, "invalid_request_error"))
        for path in ("/props", "/health", "/api/tags", "/info", "/get_model_info", "/version",
                     "/v1beta/models", "/api/version"):
            with self.subTest(path=path):
                response, data = self.get(endpoint, path, ANTHROPIC_HEADERS)
                self.assertEqual((response.status, json.loads(data)["error"]["type"]),
                                 (404, "not_found_error"))
        # Nothing but /v1/messages is served by POST.
        response, _ = self.post(endpoint, "/v1/chat/completions", self.chat_body(),
                                ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 404)

    def test_anthropic_faults(self):
        endpoint = self.anthropic_endpoint([{"fault": "500"}, {"fault": "429"}, {"fault": "404"},
                                            {"fault": "401"}, {"fault": "503"},
                                            {"fault": "503", "retry_after": 3}])
        got = []
        for _ in range(6):
            response, data = self.post(endpoint, "/v1/messages", self.messages_body(),
                                       ANTHROPIC_HEADERS)
            error = json.loads(data)
            self.assertEqual(key_paths(error), key_paths(reference("anthropic_error_400.json")))
            got.append((response.status, response.getheader("Retry-After"),
                        error["error"]["type"]))
        self.assertEqual(got, [(500, None, "api_error"), (429, "1", "rate_limit_error"),
                               (404, None, "not_found_error"), (401, None, "authentication_error"),
                               (529, None, "overloaded_error"), (529, "3", "overloaded_error")])
        self.assertEqual([i["outcome"] for i in endpoint.posts()],
                         ["500", "429", "404", "401", "503", "503"])
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        self.assertEqual(json.loads(data)["error"]["message"], "scripted internal error")
        endpoint = self.anthropic_endpoint([{"fault": "404"}, {"fault": "503"}], name="shapes")
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        self.assertEqual(json.loads(data)["error"]["message"], "model: claude-scripted")
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        overloaded = reference("anthropic_error_529_overloaded.json")
        self.assertEqual(json.loads(data)["error"], overloaded["error"])

    def test_anthropic_tool_use(self):
        search = {"name": "search", "arguments": {"term": "Feynman", "limit": 3}}
        clock = {"name": "clock", "arguments": {}}
        endpoint = self.anthropic_endpoint([
            {"tokens": std.FEYNMAN_X[:2], "tool_calls": [search, clock]},
            {"tokens": [], "tool_calls": [search]}])
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        doc = json.loads(data)
        self.assertEqual(doc["stop_reason"], "tool_use")
        self.assertEqual([b["type"] for b in doc["content"]], ["text", "tool_use", "tool_use"])
        self.assertEqual(doc["content"][0]["text"], " He was")
        uses = doc["content"][1:]
        self.assertEqual([(b["name"], b["input"]) for b in uses],
                         [("search", search["arguments"]), ("clock", {})])
        self.assertTrue(all(b["id"].startswith("toolu_") for b in uses))
        self.assertEqual(len({b["id"] for b in uses}), 2)
        # Without text, the tool_use block alone.
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        self.assertEqual([b["type"] for b in json.loads(data)["content"]], ["tool_use"])
        # Streamed: the text block, then per call a start with empty input, the arguments'
        # JSON in input_json_delta pieces (the first empty) and a stop.
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(stream=True),
                            ANTHROPIC_HEADERS)
        events = [e for _, e in typed_events(data.decode())]
        starts = [e for e in events if e["type"] == "content_block_start"]
        self.assertEqual([(e["index"], e["content_block"]["type"]) for e in starts],
                         [(0, "text"), (1, "tool_use"), (2, "tool_use")])
        self.assertEqual([e["content_block"].get("input") for e in starts[1:]], [{}, {}])
        self.assertEqual([e["content_block"]["name"] for e in starts[1:]], ["search", "clock"])
        ids = [e["content_block"]["id"] for e in starts[1:]]
        self.assertTrue(all(i.startswith("toolu_") for i in ids) and len(set(ids)) == 2, ids)
        for index, call in ((1, search), (2, clock)):
            pieces = [e["delta"]["partial_json"] for e in events
                      if e["type"] == "content_block_delta" and e["index"] == index]
            self.assertEqual({e["delta"]["type"] for e in events
                              if e["type"] == "content_block_delta" and e["index"] == index},
                             {"input_json_delta"})
            self.assertEqual(pieces[0], "")
            self.assertEqual(json.loads("".join(pieces)), call["arguments"])
        self.assertEqual([e["index"] for e in events if e["type"] == "content_block_stop"],
                         [0, 1, 2])
        self.assertEqual(events[-2]["delta"]["stop_reason"], "tool_use")
        self.assertEqual(events[-1], {"type": "message_stop"})

    def test_anthropic_thinking(self):
        endpoint = self.anthropic_endpoint([{"reasoning": REASON, "tokens": ANSWER,
                                             "finish_reason": "stop"}])
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(), ANTHROPIC_HEADERS)
        doc = json.loads(data)
        self.assertEqual([(b["type"], b.get("thinking", b.get("text"))) for b in doc["content"]],
                         [("thinking", "Two and two"), ("text", "Four.")])
        self.assertEqual(doc["usage"]["output_tokens"], 8)
        _, data = self.post(endpoint, "/v1/messages", self.messages_body(stream=True),
                            ANTHROPIC_HEADERS)
        deltas = [e["delta"] for _, e in typed_events(data.decode())
                  if e["type"] == "content_block_delta"]
        self.assertEqual("".join(d.get("thinking", "") for d in deltas), "Two and two")
        self.assertEqual("".join(d.get("text", "") for d in deltas), "Four.")
        self.assertIn("signature_delta", [d["type"] for d in deltas])

    # ------------------------------------------------------------------------------------------
    # Tool calls in OpenAI's chat shape.

    def test_openai_chat_tool_calls(self):
        search = {"name": "search", "arguments": {"term": "Feynman", "limit": 3}}
        script = {"prompts": {PROMPT: [{"tokens": [], "tool_calls": [search]},
                                       {"tokens": std.FEYNMAN_X[:2], "tool_calls": [search]}]}}
        for dialect in ("openai-chat", "vllm"):
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
                choice = json.loads(data)["choices"][0]
                self.assertEqual(choice["finish_reason"], "tool_calls")
                self.assertIsNone(choice["message"]["content"])
                calls = choice["message"]["tool_calls"]
                self.assertEqual([(c["type"], c["function"]["name"]) for c in calls],
                                 [("function", "search")])
                self.assertTrue(calls[0]["id"].startswith("call_"))
                self.assertIsInstance(calls[0]["function"]["arguments"], str)
                self.assertEqual(json.loads(calls[0]["function"]["arguments"]),
                                 search["arguments"])
                _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
                message = json.loads(data)["choices"][0]["message"]
                self.assertEqual(message["content"], " He was")
                self.assertEqual(len(message["tool_calls"]), 1)
                # Streamed: the content, then the call's pieces by index, then the finish.
                _, data = self.post(endpoint, "/v1/chat/completions",
                                    self.chat_body(stream=True))
                choices = [e["choices"][0] for e in self.events(data) if e["choices"]]
                pieces = [t for c in choices for t in c["delta"].get("tool_calls") or []]
                self.assertEqual({t["index"] for t in pieces}, {0})
                self.assertEqual((pieces[0]["type"], pieces[0]["function"]["name"],
                                  pieces[0]["function"]["arguments"]), ("function", "search", ""))
                self.assertTrue(pieces[0]["id"].startswith("call_"))
                self.assertEqual(json.loads("".join(t["function"]["arguments"] for t in pieces)),
                                 search["arguments"])
                self.assertTrue(all("id" not in t for t in pieces[1:]))
                self.assertEqual([c["finish_reason"] for c in choices if c["finish_reason"]],
                                 ["tool_calls"])
                self.assertEqual(choices[-1]["finish_reason"], "tool_calls")
                self.assertEqual("".join(c["delta"].get("content") or "" for c in choices),
                                 "")

    # ------------------------------------------------------------------------------------------
    # Multi-step tool chains: "steps", the step and tool results of each request, issued ids.

    def openai_step(self, calls, results, text=""):
        """The chat messages after a tool-calling answer: the prompt, the assistant turn with
        its tool calls as the server sent them, one role "tool" turn per (id, result)."""
        return [{"role": "user", "content": PROMPT},
                {"role": "assistant", "content": text, "tool_calls": calls}] + [
                    {"role": "tool", "tool_call_id": tid, "content": result}
                    for tid, result in results]

    def test_openai_chat_tool_chain(self):
        search = {"name": "search", "arguments": {"term": "Feynman"}}
        tools = [{"type": "function", "function": {
            "name": "search", "description": "Searches the web.",
            "parameters": {"type": "object", "properties": {"term": {"type": "string"}}}}}]
        script = {"prompts": {PROMPT: {"steps": [
            [{"tokens": [], "tool_calls": [search]}],
            [{"tokens": std.FEYNMAN_X, "finish_reason": "stop"},
             {"tokens": std.FEYNMAN_X[:2], "finish_reason": "stop"}]]}}}
        for dialect in ("openai-chat", "vllm"):
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=f"chain-{dialect}")
                body = {"messages": [{"role": "user", "content": PROMPT}], "tools": tools}
                response, data = self.post(endpoint, "/v1/chat/completions", body)
                self.assertEqual(response.status, 200, data)
                choice = json.loads(data)["choices"][0]
                self.assertEqual(choice["finish_reason"], "tool_calls")
                calls = choice["message"]["tool_calls"]
                call_id = calls[0]["id"]
                # Step 1: the assistant turn and the tool's result; the answer is text.
                step1 = dict(body, messages=self.openai_step(calls, [(call_id, "Queens, NY")]))
                response, data = self.post(endpoint, "/v1/chat/completions", step1)
                self.assertEqual(response.status, 200, data)
                choice = json.loads(data)["choices"][0]
                self.assertEqual((choice["finish_reason"], choice["message"]["content"]),
                                 ("stop", "".join(t[0] for t in std.FEYNMAN_X)))
                self.assertNotIn("tool_calls", choice["message"])
                # A tool result for an id never issued: 400 in OpenAI's envelope, no entry.
                bogus = dict(body, messages=self.openai_step(calls, [("call_bogus", "x")]))
                response, data = self.post(endpoint, "/v1/chat/completions", bogus)
                self.assertEqual(response.status, 400, data)
                error = json.loads(data)["error"]
                self.assertTrue(error["message"].startswith('unknown tool call id "call_bogus"'),
                                error)
                self.assertEqual((error["type"], error["param"], error["code"]),
                                 ("invalid_request_error", "messages", None))
                # Another first request: a new id; a step beyond the list uses the last one,
                # whose cursor the refused request did not move.
                _, data = self.post(endpoint, "/v1/chat/completions", body)
                again = json.loads(data)["choices"][0]["message"]["tool_calls"]
                self.assertNotEqual(again[0]["id"], call_id)
                step2 = dict(body, messages=self.openai_step(calls, [(call_id, "Queens, NY")])
                             + [{"role": "assistant", "content": None, "tool_calls": again},
                                {"role": "tool", "tool_call_id": again[0]["id"],
                                 "content": [{"type": "text", "text": "1918"}]}])
                _, data = self.post(endpoint, "/v1/chat/completions", step2)
                self.assertEqual(json.loads(data)["choices"][0]["message"]["content"], " He was")
                log = endpoint.posts()
                self.assertEqual([(i["outcome"], i["step"], i.get("variant"), i.get("steps_list"),
                                   i.get("entry"), i.get("prompt")) for i in log],
                                 [("completion", 0, "steps", 0, 0, PROMPT),
                                  ("completion", 1, "steps", 1, 0, PROMPT),
                                  ("bad_request", 1, None, None, None, None),
                                  ("completion", 0, "steps", 0, 0, PROMPT),
                                  ("completion", 2, "steps", 1, 1, PROMPT)])
                self.assertEqual([i["tool_results"] for i in log],
                                 [[], [{"id": call_id, "content": "Queens, NY"}],
                                  [{"id": "call_bogus", "content": "x"}], [],
                                  [{"id": call_id, "content": "Queens, NY"},
                                   {"id": again[0]["id"], "content": "1918"}]])
                self.assertEqual([i["tools"] for i in log], [tools] * 5)
                self.assertEqual(log[2]["unknown_tool_call_id"], "call_bogus")

    def anthropic_step(self, content, results):
        """The Messages conversation after a tool_use answer: the prompt, the assistant turn as
        the server sent it, and one user turn holding a tool_result block per (id, result)."""
        return [{"role": "user", "content": PROMPT},
                {"role": "assistant", "content": content},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                              "content": result} for tid, result in results]}]

    def test_anthropic_tool_chain(self):
        search = {"name": "search", "arguments": {"term": "Feynman"}}
        clock = {"name": "clock", "arguments": {}}
        tools = [{"name": "search", "description": "Searches the web.",
                  "input_schema": {"type": "object",
                                   "properties": {"term": {"type": "string"}}}},
                 {"name": "clock", "description": "The time.", "input_schema": {"type": "object"}}]
        endpoint = self.anthropic_endpoint({"steps": [
            [{"tokens": std.FEYNMAN_X[:2], "tool_calls": [search, clock]}],
            [{"tokens": std.FEYNMAN_X, "finish_reason": "stop"}]]})
        body = self.messages_body(tools=tools)
        response, data = self.post(endpoint, "/v1/messages", body, ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 200, data)
        doc = json.loads(data)
        self.assertEqual(doc["stop_reason"], "tool_use")
        uses = [b for b in doc["content"] if b["type"] == "tool_use"]
        ids = [b["id"] for b in uses]
        self.assertEqual(len(set(ids)), 2)
        step1 = dict(body, messages=self.anthropic_step(doc["content"], [
            (ids[0], "Queens, NY"), (ids[1], [{"type": "text", "text": "12:00"}])]))
        response, data = self.post(endpoint, "/v1/messages", step1, ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 200, data)
        doc = json.loads(data)
        self.assertEqual((doc["stop_reason"], [b["type"] for b in doc["content"]],
                          doc["content"][0]["text"]),
                         ("end_turn", ["text"], "".join(t[0] for t in std.FEYNMAN_X)))
        # Streamed too: the same step, by its own cursor (one entry: it cycles).
        response, data = self.post(endpoint, "/v1/messages", dict(step1, stream=True),
                                   ANTHROPIC_HEADERS)
        events = [e for _, e in typed_events(data.decode())]
        self.assertEqual(events[-2]["delta"]["stop_reason"], "end_turn")
        # An unknown tool_use_id: Anthropic's 400 error shape.
        bogus = dict(body, messages=self.anthropic_step(uses, [("toolu_bogus", "x")]))
        response, data = self.post(endpoint, "/v1/messages", bogus, ANTHROPIC_HEADERS)
        self.assertEqual(response.status, 400, data)
        error = json.loads(data)
        self.assertEqual(key_paths(error), key_paths(reference("anthropic_error_400.json")))
        self.assertEqual(error["error"]["type"], "invalid_request_error")
        self.assertTrue(error["error"]["message"].startswith(
            'unknown tool call id "toolu_bogus"'), error)
        log = endpoint.posts()
        self.assertEqual([(i["outcome"], i["step"], i.get("steps_list"), i.get("prompt"))
                          for i in log],
                         [("completion", 0, 0, PROMPT), ("completion", 1, 1, PROMPT),
                          ("completion", 1, 1, PROMPT), ("bad_request", 1, None, None)])
        want = [{"id": ids[0], "content": "Queens, NY"}, {"id": ids[1], "content": "12:00"}]
        self.assertEqual([i["tool_results"] for i in log],
                         [[], want, want, [{"id": "toolu_bogus", "content": "x"}]])
        self.assertEqual([i["tools"] for i in log], [tools] * 4)
        self.assertEqual(log[3]["unknown_tool_call_id"], "toolu_bogus")

    # Tool chains in Gemini's, the Responses API's and Ollama's shapes.

    def chain_script(self):
        search = {"name": "search", "arguments": {"term": "Feynman"}}
        clock = {"name": "clock", "arguments": {}}
        return {"prompts": {PROMPT: {"steps": [
            [{"tokens": std.FEYNMAN_X[:2], "tool_calls": [search, clock]}],
            [{"tokens": std.FEYNMAN_X, "finish_reason": "stop"}]]}}}

    def test_gemini_tool_chain(self):
        endpoint = self.start_endpoint(self.chain_script(), "gemini", name="chain-gemini")
        path = f"/v1beta/models/{std.MODEL}"
        tools = [{"functionDeclarations": [{"name": "search"}, {"name": "clock"}]}]
        body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": tools}
        _, data = self.post(endpoint, path + ":generateContent", body)
        candidate = json.loads(data)["candidates"][0]
        self.assertEqual(candidate["finishReason"], "STOP")
        parts = candidate["content"]["parts"]
        signature = parts[1]["thoughtSignature"]
        self.assertTrue(signature.startswith("sig_scripted"), signature)
        self.assertEqual(parts, [
            {"text": "".join(t[0] for t in std.FEYNMAN_X[:2])},
            {"functionCall": {"name": "search", "args": {"term": "Feynman"}},
             "thoughtSignature": signature},
            {"functionCall": {"name": "clock", "args": {}}}])
        # Streamed: the text, then the calls whole in a last chunk with the finish reason.
        _, data = self.post(endpoint, path + ":streamGenerateContent?alt=sse", body)
        chunks = [json.loads(block[5:])["candidates"][0]
                  for block in data.decode().split("\r\n\r\n") if block.startswith("data:")]
        self.assertEqual([c.get("finishReason") for c in chunks], [None, "STOP"])
        streamed = chunks[-1]["content"]["parts"]
        self.assertEqual([p["functionCall"]["name"] for p in streamed], ["search", "clock"])
        self.assertNotEqual(streamed[0]["thoughtSignature"], signature)
        # The next step: the model turn as given, the results as one user turn.
        results = {"role": "user", "parts": [
            {"functionResponse": {"name": "search", "response": {"output": "Queens"}}},
            {"functionResponse": {"name": "clock", "response": {"output": "12:00"}}}]}
        step1 = dict(body, contents=body["contents"] + [
            {"role": "model", "parts": parts}, results])
        response, data = self.post(endpoint, path + ":generateContent", step1)
        self.assertEqual(response.status, 200, data)
        self.assertEqual(json.loads(data)["candidates"][0]["content"]["parts"],
                         [{"text": "".join(t[0] for t in std.FEYNMAN_X)}])
        # Gemini 3's check: the signature must come back on the turn's first call.
        unsigned = [dict(p) for p in parts]
        unsigned[1].pop("thoughtSignature")
        forged = [dict(p) for p in parts]
        forged[1]["thoughtSignature"] = "sig_forged"
        for turn, message in ((unsigned, "Function call is missing a thought_signature in "
                                         "functionCall parts."),
                              (forged, "Corrupted thought signature.")):
            bad = dict(body, contents=body["contents"] + [
                {"role": "model", "parts": turn}, results])
            response, data = self.post(endpoint, path + ":generateContent", bad)
            self.assertEqual(response.status, 400, data)
            self.assertEqual(json.loads(data)["error"]["message"], message)
        log = endpoint.posts()
        self.assertEqual([(i["outcome"], i["step"], i.get("steps_list")) for i in log],
                         [("completion", 0, 0), ("completion", 0, 0), ("completion", 1, 1),
                          ("bad_request", 1, None), ("bad_request", 1, None)])
        want = [{"id": None, "name": "search", "content": '{"output":"Queens"}'},
                {"id": None, "name": "clock", "content": '{"output":"12:00"}'}]
        self.assertEqual([i["tool_results"] for i in log], [[], [], want, want, want])
        self.assertEqual([i.get("thought_signature", "-") for i in log[3:]],
                         [None, "sig_forged"])
        self.assertEqual([i["tools"] for i in log], [tools] * 5)

    def test_openai_responses_tool_chain(self):
        endpoint = self.start_endpoint(self.chain_script(), "openai-responses",
                                       name="chain-responses")
        tools = [{"type": "function", "name": "search"}, {"type": "function", "name": "clock"}]
        body = {"input": [{"role": "user", "content": PROMPT}], "tools": tools}
        _, data = self.post(endpoint, "/v1/responses", body)
        doc = json.loads(data)
        self.assertEqual(doc["status"], "completed")
        self.assertEqual([i["type"] for i in doc["output"]],
                         ["message", "function_call", "function_call"])
        calls = doc["output"][1:]
        self.assertEqual([(c["name"], json.loads(c["arguments"])) for c in calls],
                         [("search", {"term": "Feynman"}), ("clock", {})])
        self.assertTrue(all(c["call_id"].startswith("call_scripted") for c in calls))
        # Streamed: per call, the item added, the argument pieces, .done, the item done.
        _, data = self.post(endpoint, "/v1/responses", dict(body, stream=True))
        events = [e for _, e in typed_events(data.decode())]
        on_calls = [e for e in events if e.get("output_index") in (1, 2)]
        self.assertEqual([e["type"] for e in on_calls if "delta" not in e["type"]],
                         ["response.output_item.added", "response.function_call_arguments.done",
                          "response.output_item.done"] * 2)
        added = [e["item"] for e in on_calls if e["type"] == "response.output_item.added"]
        self.assertEqual([(i["type"], i["name"], i["arguments"]) for i in added],
                         [("function_call", "search", ""), ("function_call", "clock", "")])
        pieces = "".join(e["delta"] for e in on_calls if e["output_index"] == 1
                         and e["type"] == "response.function_call_arguments.delta")
        self.assertEqual(json.loads(pieces), {"term": "Feynman"})
        self.assertEqual(events[-1]["type"], "response.completed")
        # The next step: the calls and their outputs as input items.
        items = [{"type": "function_call", "call_id": c["call_id"], "name": c["name"],
                  "arguments": c["arguments"]} for c in calls]
        outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": out}
                   for c, out in zip(calls, ("Queens", "12:00"))]
        step1 = dict(body, input=body["input"] + items + outputs)
        response, data = self.post(endpoint, "/v1/responses", step1)
        self.assertEqual(response.status, 200, data)
        self.assertEqual([i["type"] for i in json.loads(data)["output"]], ["message"])
        bogus = dict(body, input=body["input"] + items[:1] + [dict(outputs[0], call_id="call_x")])
        response, data = self.post(endpoint, "/v1/responses", bogus)
        self.assertEqual(response.status, 400, data)
        self.assertTrue(json.loads(data)["error"]["message"].startswith(
            'unknown tool call id "call_x"'), data)
        log = endpoint.posts()
        self.assertEqual([(i["outcome"], i["step"]) for i in log],
                         [("completion", 0), ("completion", 0), ("completion", 1),
                          ("bad_request", 1)])
        self.assertEqual(log[2]["tool_results"],
                         [{"id": calls[0]["call_id"], "content": "Queens"},
                          {"id": calls[1]["call_id"], "content": "12:00"}])
        self.assertEqual(log[3]["unknown_tool_call_id"], "call_x")

    def test_ollama_tool_chain(self):
        endpoint = self.start_endpoint(self.chain_script(), "ollama", name="chain-ollama")
        tools = [{"type": "function", "function": {"name": "search"}},
                 {"type": "function", "function": {"name": "clock"}}]
        body = {"messages": [{"role": "user", "content": PROMPT}], "tools": tools,
                "stream": False}
        _, data = self.post(endpoint, "/api/chat", body)
        message = json.loads(data)["message"]
        want = [{"function": {"index": 0, "name": "search", "arguments": {"term": "Feynman"}}},
                {"function": {"index": 1, "name": "clock", "arguments": {}}}]
        self.assertEqual((message["content"], message["tool_calls"]),
                         ("".join(t[0] for t in std.FEYNMAN_X[:2]), want))
        # Streamed: the calls whole in one chunk, just before the final one.
        _, data = self.post(endpoint, "/api/chat", dict(body, stream=True))
        lines = self.events(data, ndjson=True)
        self.assertEqual([i for i, line in enumerate(lines) if "tool_calls" in line["message"]],
                         [len(lines) - 2])
        self.assertEqual(lines[-2]["message"]["tool_calls"], want)
        self.assertTrue(lines[-1]["done"])
        step1 = dict(body, messages=body["messages"] + [
            {"role": "assistant", "content": "", "tool_calls": want},
            {"role": "tool", "content": "Queens", "tool_name": "search"},
            {"role": "tool", "content": "12:00", "tool_name": "clock"}])
        response, data = self.post(endpoint, "/api/chat", step1)
        self.assertEqual(response.status, 200, data)
        self.assertNotIn("tool_calls", json.loads(data)["message"])
        log = endpoint.posts()
        self.assertEqual([(i["outcome"], i["step"]) for i in log],
                         [("completion", 0), ("completion", 0), ("completion", 1)])
        self.assertEqual(log[2]["tool_results"],
                         [{"id": None, "name": "search", "content": "Queens"},
                          {"id": None, "name": "clock", "content": "12:00"}])

    def test_tool_chain_prompt_and_step(self):
        from scripted_endpoint import anthropic, chain_of, openai_chat, prompt_of, tgi
        results = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Queens"}]
        use = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}
        anthropic_chain = {"messages": [
            {"role": "user", "content": PROMPT},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, use]},
            {"role": "user", "content": results}]}
        # Anthropic: a user turn holding only tool_result blocks is no prompt; one with text is.
        self.assertEqual(prompt_of(anthropic_chain), PROMPT)
        with_text = {"messages": anthropic_chain["messages"][:2] + [
            {"role": "user", "content": results + [{"type": "text", "text": "And then?"}]}]}
        self.assertEqual(prompt_of(with_text), "And then?")
        self.assertEqual(prompt_of({"messages": [{"role": "user", "content": results}]}), None)
        self.assertEqual(chain_of(anthropic, anthropic_chain),
                         (1, [{"id": "toolu_1", "content": "Queens"}]))
        # OpenAI: tool results have role "tool"; the step counts tool-calling assistant turns.
        call = {"id": "call_1", "type": "function",
                "function": {"name": "search", "arguments": "{}"}}
        openai_chain = {"messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Queens"},
            {"role": "assistant", "content": "Queens.", "tool_calls": []}]}
        self.assertEqual(prompt_of(openai_chain), PROMPT)
        self.assertEqual(chain_of(openai_chat, openai_chain),
                         (1, [{"id": "call_1", "content": "Queens"}]))
        self.assertEqual(chain_of(openai_chat, {"messages": [{"role": "user", "content": PROMPT}]}),
                         (0, []))
        self.assertEqual(chain_of(tgi, {"inputs": PROMPT}), (0, []))
        # The other dialects' prompts are as before.
        for body in ({"prompt": PROMPT}, {"text": PROMPT}, {"inputs": PROMPT},
                     {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]},
                     {"input": [{"role": "user", "content": [{"type": "input_text",
                                                              "text": PROMPT}]}]},
                     {"messages": [{"role": "user",
                                    "content": [{"type": "text", "text": PROMPT}]}]}):
            with self.subTest(body=body):
                self.assertEqual(prompt_of(body), PROMPT)
        # Log items: step 0, no tool results and the tools on other routes; none on GETs.
        endpoint = self.start_endpoint(std.script(), "llamacpp", name="chain-llamacpp")
        self.get(endpoint, "/health")
        self.post(endpoint, "/completion", {"prompt": PROMPT, "n_probs": 2})
        get, post = endpoint.requests()
        self.assertNotIn("step", get)
        self.assertEqual((post["step"], post["tool_results"], post["tools"]), (0, [], None))

    def test_tool_chain_steps_seeded_and_bad_scripts(self):
        import subprocess
        search = {"name": "search", "arguments": {}}
        words = [{"tokens": [[w, -0.1, []]], "finish_reason": "stop"} for w in ("B", "C")]
        script = {"seeded": True, "prompts": {PROMPT: {
            "entries": [{"tokens": [[w, -0.1, []]]} for w in ("X", "Y")],
            "cold": [{"tokens": [["Z", -0.1, []]]}],
            "steps": [[{"tokens": [], "tool_calls": [search]}], words]}}}
        endpoint = self.start_endpoint(script, "openai-chat", name="chain-seeded")
        first = {"messages": [{"role": "user", "content": PROMPT}]}
        _, data = self.post(endpoint, "/v1/chat/completions", dict(first, seed=3, temperature=1))
        calls = json.loads(data)["choices"][0]["message"]["tool_calls"]  # steps[0], not entries
        got = []
        for seed in (5, 4, 5):
            body = dict(first, seed=seed, temperature=1,
                        messages=self.openai_step(calls, [(calls[0]["id"], "r")]))
            _, data = self.post(endpoint, "/v1/chat/completions", body)
            got.append(json.loads(data)["choices"][0]["message"]["content"])
        self.assertEqual(got, ["C", "B", "C"])  # steps[1][seed % 2], by the seed alone
        self.assertEqual([(i["variant"], i["steps_list"], i["entry"], i["seeded"])
                          for i in endpoint.posts()],
                         [("steps", 0, 0, 3), ("steps", 1, 1, 5), ("steps", 1, 0, 4),
                          ("steps", 1, 1, 5)])
        for name, variants in {"steps empty": {"steps": []},
                               "step empty": {"steps": [[]]},
                               "steps shape": {"steps": [{"tokens": []}]},
                               "step entry": {"steps": [[{"tokens": [], "fault": "418"}]]},
                               "unknown variant": {"entries": [{"tokens": []}], "stepz": []},
                               "no entries": {"busy": [{"tokens": []}]}}.items():
            with self.subTest(case=name):
                path = self.write_json(f"bad-steps-{len(name)}.json",
                                       {"prompts": {PROMPT: variants}})
                done = subprocess.run([h.PYTHON, h.os.path.join(h.HERE, "scripted_endpoint.py"),
                                       "--script", path, "--port-file", self.path("never.port")],
                                      capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("scripted_endpoint: ", done.stderr)
                self.assertIn(PROMPT, done.stderr)

    # ------------------------------------------------------------------------------------------
    # Provider refusals of request parameters ("refuse_params").

    def refusing(self, dialect, refuse, name, prompts=None):
        script = {"model": std.MODEL, "refuse_params": refuse,
                  "prompts": prompts or {PROMPT: [{"tokens": std.FEYNMAN_X}]}}
        return self.start_endpoint(script, dialect, name=name)

    def test_refusals_openai_chat(self):
        chat = self.chat_body()
        cases = [
            ({"temperature": "openai_default_only"}, dict(chat, temperature=0),
             reference("openai_error_400_temperature_unsupported.json")),
            ({"temperature": "openai_default_only"}, dict(chat, temperature=0.2),
             {"error": {"message": "Unsupported value: 'temperature' does not support 0.2 with "
                                   "this model. Only the default (1) value is supported.",
                        "type": "invalid_request_error", "param": "temperature",
                        "code": "unsupported_value"}}),
            ({"temperature": "anthropic_deprecated"}, dict(chat, temperature=1),
             {"error": {"message": "`temperature` is deprecated for this model.",
                        "type": "invalid_request_error", "param": "temperature", "code": None}}),
            ({"top_p": "anthropic_deprecated"}, dict(chat, top_p=1),
             {"error": {"message": "`top_p` is deprecated for this model.",
                        "type": "invalid_request_error", "param": "top_p", "code": None}}),
            ({"seed": "unrecognized"}, dict(chat, seed=7),
             {"error": {"message": "Unrecognized request argument supplied: seed",
                        "type": "invalid_request_error", "param": None, "code": None}}),
            ({"logprobs": "unsupported"}, chat,
             reference("openai_error_400_logprobs_unsupported.json")),
        ]
        for i, (refuse, body, want) in enumerate(cases):
            with self.subTest(refuse=refuse, body=body):
                endpoint = self.refusing("openai-chat", refuse, f"chat-{i}")
                response, data = self.post(endpoint, "/v1/chat/completions", body)
                self.assertEqual((response.status, json.loads(data)), (400, want))
                # Refused twice, then answered: the refusals consumed no entry.
                self.post(endpoint, "/v1/chat/completions", body)
                param = list(refuse)[0]
                dropped = {param, "top_logprobs"} if param == "logprobs" else {param}
                allowed = {k: v for k, v in body.items() if k not in dropped}
                response, data = self.post(endpoint, "/v1/chat/completions", allowed)
                self.assertEqual(response.status, 200, data)
                log = endpoint.posts()
                self.assertEqual([i["outcome"] for i in log], ["refused", "refused", "completion"])
                self.assertEqual(log[0]["refused"], param)
                self.assertEqual(log[-1]["entry"], 0)
                self.assertNotIn("entry", log[0])
        # The default temperature passes; a parameter not sent is never refused.
        endpoint = self.refusing("openai-chat", {"temperature": "openai_default_only",
                                                 "seed": "unrecognized"}, "passes")
        for body in (dict(chat, temperature=1), dict(chat, temperature=1.0), chat,
                     dict(chat, seed=None)):
            response, data = self.post(endpoint, "/v1/chat/completions", body)
            self.assertEqual(response.status, 200, (body, data))

    def test_refusals_anthropic(self):
        messages = self.messages_body()
        deprecated = reference("anthropic_error_400_temperature_deprecated.json")
        cases = [({"temperature": "anthropic_deprecated"}, dict(messages, temperature=0),
                  deprecated["error"]["message"]),
                 ({"temperature": "anthropic_deprecated"}, dict(messages, temperature=1),
                  deprecated["error"]["message"]),
                 ({"top_p": "anthropic_deprecated"}, dict(messages, top_p=0.9),
                  "`top_p` is deprecated for this model."),
                 ({"temperature": "openai_default_only"}, dict(messages, temperature=0),
                  "Unsupported value: 'temperature' does not support 0 with this model. Only "
                  "the default (1) value is supported."),
                 ({"seed": "unrecognized"}, dict(messages, seed=7),
                  "seed: Extra inputs are not permitted"),
                 ({"logprobs": "unsupported"}, dict(messages, logprobs=True),
                  "Unsupported parameter: 'logprobs' is not supported with this model.")]
        for i, (refuse, body, message) in enumerate(cases):
            with self.subTest(refuse=refuse, body=body):
                endpoint = self.refusing("anthropic", refuse, f"anthropic-{i}")
                response, data = self.post(endpoint, "/v1/messages", body, ANTHROPIC_HEADERS)
                error = json.loads(data)
                self.assertEqual(response.status, 400)
                self.assertEqual(key_paths(error), key_paths(deprecated))
                self.assertEqual(error["error"], {"type": "invalid_request_error",
                                                  "message": message})
                param = list(refuse)[0]
                response, _ = self.post(endpoint, "/v1/messages",
                                        {k: v for k, v in body.items() if k != param},
                                        ANTHROPIC_HEADERS)
                self.assertEqual(response.status, 200)
                self.assertEqual([(i["outcome"], i.get("entry")) for i in endpoint.posts()],
                                 [("refused", None), ("completion", 0)])

    def test_refusals_in_each_dialects_place(self):
        chat_msgs = [{"role": "user", "content": PROMPT}]
        cases = [
            # (dialect, path, refused, the same request with the parameter elsewhere or absent)
            ("ollama", "/api/chat",
             {"messages": chat_msgs, "stream": False, "options": {"temperature": 0}},
             {"messages": chat_msgs, "stream": False, "temperature": 0}, "temperature",
             {"temperature": "openai_default_only"}),
            ("ollama", "/api/generate",
             {"prompt": PROMPT, "stream": False, "options": {"seed": 7}},
             {"prompt": PROMPT, "stream": False, "options": {}}, "seed",
             {"seed": "unrecognized"}),
            ("sglang", "/generate", {"text": PROMPT, "sampling_params": {"sampling_seed": 7}},
             {"text": PROMPT, "sampling_params": {}}, "sampling_seed", {"seed": "unrecognized"}),
            ("sglang", "/v1/chat/completions", dict(self.chat_body(), seed=7), self.chat_body(),
             "seed", {"seed": "unrecognized"}),
            ("gemini", f"/v1beta/models/{std.MODEL}:generateContent",
             {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
              "generationConfig": {"topP": 0.9}},
             {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
              "generationConfig": {}, "topP": 0.9}, "topP", {"top_p": "anthropic_deprecated"}),
            ("gemini", f"/v1beta/models/{std.MODEL}:generateContent",
             {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
              "generationConfig": {"responseLogprobs": True}},
             {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}, "responseLogprobs",
             {"logprobs": "unsupported"}),
            ("tgi", "/generate", {"inputs": PROMPT, "parameters": {"seed": 7}},
             {"inputs": PROMPT, "seed": 7}, "seed", {"seed": "unrecognized"}),
            ("llamacpp", "/completion", {"prompt": PROMPT, "n_probs": 2}, {"prompt": PROMPT},
             "n_probs", {"logprobs": "unsupported"}),
            ("openai-completions", "/v1/completions", {"prompt": PROMPT, "temperature": 0.5},
             {"prompt": PROMPT}, "temperature", {"temperature": "anthropic_deprecated"}),
            ("openai-responses", "/v1/responses", {"input": PROMPT, "top_logprobs": 2},
             {"input": PROMPT}, "top_logprobs", {"logprobs": "unsupported"}),
        ]
        for i, (dialect, path, refused, passes, key, refuse) in enumerate(cases):
            with self.subTest(dialect=dialect, path=path, key=key):
                endpoint = self.refusing(dialect, refuse, f"place-{i}")
                response, data = self.post(endpoint, path, refused)
                self.assertEqual(response.status, 400, data)
                error = json.loads(data)
                text = json.dumps(error)
                self.assertIn(key, text)
                if dialect == "ollama":
                    self.assertEqual(list(error), ["error"])
                elif dialect == "tgi":
                    self.assertEqual(sorted(error), ["error", "error_type"])
                elif dialect == "gemini":
                    self.assertEqual((error["error"]["code"], error["error"]["status"]),
                                     (400, "INVALID_ARGUMENT"))
                else:
                    self.assertEqual(error["error"]["type"], "invalid_request_error")
                    self.assertEqual(error["error"]["param"],
                                     None if refuse.get("seed") else key)
                response, data = self.post(endpoint, path, passes)
                self.assertEqual(response.status, 200, data)
                self.assertEqual([(i["outcome"], i.get("refused")) for i in endpoint.posts()],
                                 [("refused", key), ("completion", None)])

    def test_refusal_leaves_a_flush_pending(self):
        script = {"flush_routes": ["/flush_cache"], "refuse_params": {"seed": "unrecognized"},
                  "prompts": {PROMPT: {"entries": [{"tokens": std.FEYNMAN_X}],
                                       "cold": [{"tokens": std.FEYNMAN_X[:1]}]}}}
        endpoint = self.start_endpoint(script, "openai-chat")
        self.post(endpoint, "/flush_cache", {})
        response, _ = self.post(endpoint, "/v1/chat/completions", dict(self.chat_body(), seed=1))
        self.assertEqual(response.status, 400)
        _, data = self.post(endpoint, "/v1/chat/completions", self.chat_body())
        self.assertEqual(json.loads(data)["choices"][0]["message"]["content"], " He")
        self.assertEqual([(i["outcome"], i.get("variant")) for i in endpoint.posts()],
                         [("flush", None), ("refused", None), ("completion", "cold")])

    # ------------------------------------------------------------------------------------------
    # "seeded": a server that honours the seed.

    def test_seeded(self):
        entries = [{"tokens": [[word, -0.1, []]]} for word in ("A", "B", "C")]
        prompts = {PROMPT: entries}
        endpoint = self.start_endpoint({"seeded": True, "prompts": prompts}, "openai-chat")

        def answer(**params):
            body = dict({"messages": [{"role": "user", "content": PROMPT}]}, **params)
            _, data = self.post(endpoint, "/v1/chat/completions", body)
            return json.loads(data)["choices"][0]["message"]["content"]

        got = [answer(seed=4, temperature=1), answer(seed=4, temperature=0.7), answer(seed=5),
               answer(temperature=0, seed=4), answer(temperature=0, seed=4),
               answer(seed=4, temperature=1), answer(temperature=1), answer(seed=None)]
        # Seeded sampled requests by their seed (4 % 3, 5 % 3); greedy or unseeded ones by the
        # cursor, which the seeded ones never moved.
        self.assertEqual(got, ["B", "B", "C", "A", "B", "B", "C", "A"])
        log = endpoint.posts()
        self.assertEqual([i.get("seeded") for i in log], [4, 4, 5, None, None, 4, None, None])
        self.assertEqual([i["entry"] for i in log], [1, 1, 2, 0, 1, 1, 2, 0])
        # Without the option the seed is ignored: entries cycle, as LM Studio answers.
        endpoint = self.start_endpoint({"prompts": prompts}, "openai-chat", name="ignored")
        got = [answer(seed=4, temperature=1) for _ in range(4)]
        self.assertEqual(got, ["A", "B", "C", "A"])
        self.assertEqual({i.get("seeded") for i in endpoint.posts()}, {None})
        # In each dialect's place: Ollama's options, SGLang's sampling_seed, TGI sampling only
        # with do_sample.
        for i, (dialect, path, body, want) in enumerate([
                ("ollama", "/api/generate", {"prompt": PROMPT, "stream": False,
                                             "options": {"seed": 2, "temperature": 0.8}}, 2),
                ("ollama", "/api/generate", {"prompt": PROMPT, "stream": False, "seed": 2},
                 None),
                ("sglang", "/generate", {"text": PROMPT,
                                         "sampling_params": {"sampling_seed": 7}}, 1),
                ("tgi", "/generate", {"inputs": PROMPT, "parameters": {"seed": 2}}, None),
                ("tgi", "/generate", {"inputs": PROMPT, "parameters": {"seed": 2,
                                                                       "do_sample": True}}, 2),
                ("anthropic", "/v1/messages", dict(self.messages_body(), seed=8,
                                                   temperature=1), 2)]):
            with self.subTest(dialect=dialect, body=body):
                endpoint = self.start_endpoint({"seeded": True, "prompts": prompts}, dialect,
                                               name=f"seeded-{i}")
                for _ in range(2):
                    response, data = self.post(endpoint, path, body, ANTHROPIC_HEADERS)
                    self.assertEqual(response.status, 200, data)
                # None: the seed is not honoured there, and the cursor answers.
                self.assertEqual([i["entry"] for i in endpoint.posts()],
                                 [0, 1] if want is None else [want, want])


# A reasoning model thinking "Two and two" between its markers, then answering "Four.".
REASON = [["<think>", -0.0002, [["<think>", -0.0002], ["Four", -8.75]]],
          ["Two", -0.0513, [["Two", -0.0513], ["The", -3.0513]]],
          [" and", -0.2204, [[" and", -0.2204], [" plus", -1.6204]]],
          [" two", -0.0008, [[" two", -0.0008], [" 2", -7.25]]],
          ["</think>", -0.0031, [["</think>", -0.0031], ["\n", -5.8781]]],
          ["\n\n", -0.0001, [["\n\n", -0.0001], ["\n", -9.5]]]]
ANSWER = [["Four", -0.0124, [["Four", -0.0124], ["4", -4.4]]],
          [".", -0.2513, [[".", -0.2513], ["!", -1.5013]]]]


if __name__ == "__main__":
    h.main()
