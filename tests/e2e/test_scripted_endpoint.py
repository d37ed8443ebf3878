#!/usr/bin/python3
"""Scenario: the scripted endpoint itself speaks each dialect in the reference shapes.

Every payload it sends has exactly the key paths of the matching example in
fixtures/formats/ (copies of the reference payloads), the vLLM quirks are there, and each
fault does what the tests that use it rely on. The extensions the verdict scenarios use: 404,
401 and 503 faults with each dialect's error body, an entry's own model, NaN / Infinity /
-Infinity / 1e400 / -1e400 / null log probabilities written raw in every dialect, byte-fragment
tokens carrying their real bytes, null and empty candidate lists, stream chunks whose logprobs
are dropped, an empty completion, and scripts that are rejected. Needs no llmrepro binary.
"""

import http.client
import json
import math

import e2e_harness as h
import standard_audit as std
from scripted_endpoint import token_id

FIXTURES = h.os.path.join(h.HERE, "fixtures", "formats")
PROMPT = "Where was Feynman born?"


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


def stream_paths(events):
    out = set()
    for event in events:
        out |= key_paths(event)
    return out


class ScriptedEndpoint(h.E2ETestCase):
    needs_binary = False

    def post(self, endpoint, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
        self.addCleanup(conn.close)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
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
                             "together reasoning": {"together": True}}.items():
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
