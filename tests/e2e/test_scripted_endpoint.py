#!/usr/bin/python3
"""Scenario: the scripted endpoint itself speaks each dialect in the reference shapes.

Every payload it sends has exactly the key paths of the matching example in
fixtures/formats/ (copies of the reference payloads), the vLLM quirks are there, and each
fault does what the tests that use it rely on. Needs no llmrepro binary.
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


if __name__ == "__main__":
    h.main()
