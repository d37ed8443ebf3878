#!/usr/bin/python3
"""A loopback inference endpoint scripted by a JSON file, for the end-to-end tests.

It speaks one API dialect (detection GETs and completion POSTs, streamed or not) and answers
each prompt with the entries the script lists for it, consumed in arrival order and cycling
when exhausted, so that every number an audit reports follows from the script. Entries are
completions or faults (HTTP 500, 503, 429, 404, 401, a connection closed mid-response, a
truncated or malformed body, an oversize body, a completion without logprobs). Every request
received is appended to a JSON Lines log so that tests can assert what the tool sent, with the
number of completion requests in flight when it arrived.

Script:
  {"model": "scripted-model", "fingerprint": "fp_scripted",       (both optional)
   "token_ids": false,                                             (vllm: "token_id:N" tokens)
   "flush_routes": ["/flush_cache"],                               (optional: cache-flush POSTs)
   "flush_refuses": true,                                          (flush routes answer 200
                                                                    {"success": false}, vLLM's
                                                                    refusal, and flush nothing)
   "api_tags": true,                                               (llamacpp, sglang: also answer
                                                                    GET /api/tags as those servers
                                                                    do, in their own shapes)
   "base_path": "/v1/openai",                                      (every route lives under this
                                                                    prefix, OpenAI ones without
                                                                    their "/v1": a hosted base URL)
   "router": true,                                                 (llamacpp: llama-server without
                                                                    -m; /completion answers 400
                                                                    unless it names the model)
   "build_info": "b10470-34af94cd9", "total_slots": 8, "n_ctx": 512,
                                                                   (llamacpp: what GET /props
                                                                    says; no build_info when not
                                                                    given, 4 slots of 4096)
   "context_limit": 256,                                           (a completion POST whose prompt
                                                                    has at least this many words,
                                                                    one token each, answers 400 as
                                                                    llama-server refuses a prompt
                                                                    longer than its slot:
                                                                    "request (N tokens) exceeds
                                                                    the available context size")
   "together": true,                                               (openai-chat: Together's shapes:
                                                                    `logprobs` read as the integer
                                                                    k, whole answers in parallel
                                                                    arrays, stream chunks with a
                                                                    number `logprobs` and a
                                                                    choice-level top_logprobs map)
   "max_completion_tokens": true,                                  (openai-chat: OpenAI's current
                                                                    spec for its reasoning models:
                                                                    a chat request naming
                                                                    max_tokens answers 400)
   "no_logprobs_model": "omit"|"reject",                           (openai-chat: a reasoning model
                                                                    answering without logprobs, or
                                                                    refusing a request that asks
                                                                    for them with a 400 naming
                                                                    `logprobs`)
   "method_not_allowed": true,                                     (a GET on a route the dialect
                                                                    serves by POST answers 405
                                                                    with Allow: POST, as FastAPI
                                                                    servers do; else 404)
   "gemini_generates": false,                                      (gemini: GET /v1beta/models
                                                                    lists the script's model with
                                                                    embedContent only)
   "embeddings": true,                                             (POST /v1/embeddings answers
                                                                    each input with the vector
                                                                    [1, 0], as an OpenAI
                                                                    embeddings server shapes it)
   "props_echo_auth": true,                                        (llamacpp: /props build_info
                                                                    repeats the Authorization
                                                                    header it was sent)
   "echo_headers_get": true,                                       (every GET answers 401 with the
                                                                    request's headers in its error
                                                                    message: a gateway refusing
                                                                    the detection GETs)
   "models_route": false,                                          (GET /v1/models answers 404:
                                                                    a proxy without a model list)
   "reasoning_shape": "sglang"|"vllm"|"openai",                    (openai-chat, vllm: how entries'
                                                                    "reasoning" come; see below)
   "metrics_hits": {"cold": 0, "warm": 160},                      (vllm: GET /metrics answers
                                                                    Prometheus text whose counter
                                                                    vllm:prefix_cache_hits_total,
                                                                    split over two engines, grows
                                                                    by "cold" for the first
                                                                    completion request after a
                                                                    flush and by "warm" for every
                                                                    other: a cache the flush
                                                                    empties, or one it does not)
   "refuse_params": {"temperature": "anthropic_deprecated"        (every dialect: a completion
                                    |"openai_default_only",         POST carrying the parameter
                     "top_p": "anthropic_deprecated",               where its dialect puts it
                     "seed": "unrecognized",                        answers 400 in the dialect's
                     "logprobs": "unsupported"},                    error shape, as a provider
                                                                    refuses it; each optional;
                                                                    see "refusals" below)
   "seeded": true,                                                 (a completion request carrying
                                                                    a seed where its dialect puts
                                                                    one, and sampling (no
                                                                    temperature, or one above 0),
                                                                    gets entries[seed % len] of
                                                                    its prompt's "entries" and
                                                                    moves no cursor: a server
                                                                    that honours the seed. Without
                                                                    it the seed is ignored and
                                                                    entries cycle, as LM Studio
                                                                    accepts `seed` and ignores it)
   "fallback": [entry, ...],                                       (optional: any other prompt)
                                                                   (the capability preflight's
                                                                    prompt, "Write one sentence
                                                                    about the sea.", is answered
                                                                    by PREFLIGHT_ENTRY unless the
                                                                    script lists it; its log
                                                                    items say "preflight": true)
   "prompts": {"<prompt text or last user message>": [entry, ...] or variants}}
  A prompt key matches a request whose prompt equals it, else the longest key the prompt
  contains (a chat prompt flattened for a text dialect, a probe's preamble before the prompt:
  "\n\nQuestion?" matches only the long probe's "Context: ...\n\nQuestion?").
variants: {"entries": [entry, ...],       what the prompt gets otherwise
           "busy": [entry, ...],          when another completion request was open at any time
                                          between its arrival and its answer (filler drift)
           "sampled_busy": [entry, ...],  when a sampled completion request (a temperature
                                          above 0, or TGI's do_sample, in the dialect's place)
                                          was open at any time between its arrival and its
                                          answer: an engine whose sampler choice per batch
                                          moves the greedy rows beside it
           "cold": [entry, ...],          when it is the first completion request after a flush
           "steps": [[entry, ...], ...],  a multi-step tool chain: the list of the request's
                                          step (steps[0] for the first request, steps[i] for
                                          one carrying i tool-calling assistant turns, the last
                                          list for a step beyond them; see "tool chains" below);
                                          "entries" may then be left out
           "hold_ms": N}                  how long it stays open before the choice is made
  Each list has its own cursor (a step's is keyed (prompt, "step", i)); "steps" is chosen before
  everything else, for every step, "cold" before "sampled_busy", and that before "busy". Log
  items name the list chosen in "variant" ("entries", "busy", "sampled_busy", "cold", "steps")
  and, for "steps", its index in "steps_list". A flush route answers 200
  "Cache flushed." (as SGLang does), is counted and logged with outcome "flush", and is never
  counted as a request in flight.
entry: {"tokens": [token, ...], "finish_reason": "length"|"stop",
        "fingerprint": "...",             system_fingerprint of this answer (else the script's)
        "model": "...",                   the answer's model (else the script's): a load balancer
        "bytes": [[226, 128], null, ...], optional, one per token: the token's real bytes
        "drop_logprobs_chunks": [i, ...], streamed OpenAI shapes: content chunk i (from 0; one
                                          token a chunk, vLLM chat two) keeps its text but
                                          carries "logprobs": null (Responses: a delta with
                                          "logprobs": [])
        "logprob_shift": X,               adds X nats to the chosen token's logprob and to
                                          the same token's candidate at every position; tokens,
                                          text and the other candidates stay as scripted, so
                                          the top-1/top-2 gap moves by X too (logprob drift
                                          without a token change; null logprobs and raw
                                          literals are left as they are)
        "reasoning": [token, ...],        a reasoning model's reasoning tokens, generated before
                                          "tokens" (the answer's); see "reasoning" below
        "cached_tokens": N,               the prompt's tokens the server says its prompt cache
                                          served: llama.cpp's timings.cache_n, openai-chat's
                                          usage.prompt_tokens_details.cached_tokens (vllm: its
                                          details, null when absent), SGLang's
                                          meta_info.cached_tokens (0 when absent), anthropic's
                                          usage.cache_read_input_tokens (0 when absent)
        "prompt_tokens": N,               the prompt's tokens the answer's usage reports (12
                                          when absent) in every dialect that reports them
                                          (usage.prompt_tokens, input_tokens, promptTokenCount,
                                          prompt_eval_count, meta_info.prompt_tokens)
        "tool_calls": [{"name": "search", "arguments": {"term": "x"}}, ...],
                                          the model calls these tools after its text:
                                          openai-chat's message.tool_calls ({id, type:
                                          "function", function: {name, arguments: the JSON
                                          string}}, content null without text), finish_reason
                                          "tool_calls", streamed as delta.tool_calls pieces (one
                                          naming the call, then its arguments a few characters
                                          at a time); anthropic's tool_use blocks, stop_reason
                                          "tool_use" (see "anthropic" below); gemini's
                                          functionCall parts {name, args} (no id), the first
                                          with "thoughtSignature": "sig_scripted<n>", after the
                                          text part (none without text), streamed whole in a
                                          last chunk of their own with the finishReason;
                                          openai-responses' function_call items {id
                                          "fc_scripted<n>_<i>", call_id, name, arguments: the
                                          JSON string} after the message (none without text),
                                          streamed as response.output_item.added (arguments
                                          ""), response.function_call_arguments.delta pieces,
                                          .done and response.output_item.done; ollama's
                                          message.tool_calls [{function: {index, name,
                                          arguments: the object}}] (no id; /api/chat only),
                                          streamed whole in a chunk of their own before the
                                          final one; ids unique per call (see "tool chains"
                                          below)
        "delay_ms": N,
        "echo_headers": true}             the request's headers ("Name: value; ...") come back:
                                          in a 500 or 401 entry's error message, or in a
                                          completion as two more tokens after the scripted ones
                                          (the text split in the middle), as a gateway or a
                                          model that repeats its input would
    or {"fault": "500"|"503"|"429"|"404"|"401"|"close"|"truncate"|"malformed"|"oversize"
                 |"no_logprobs"|"302",
        "retry_after": 1, "delay_ms": N, "tokens": [...] (no_logprobs: the text's tokens),
        "location": "URL" (302: its Location header, none when absent)}
  "tokens": [] is an empty completion.
token: ["tok", logprob, candidates] or ["tok", logprob, candidates, bytes]
  candidates: [["cand", lp], ...] (or ["cand", lp, bytes]), [] for none, or null: written as
  "top_logprobs": null (a null per-position entry in the shapes that list positions).
  A logprob (token or candidate) is a number, null, or one of the strings "NaN", "Infinity",
  "-Infinity", "1e400", "-1e400": those are written RAW into the response JSON (the literals
  NaN, Infinity, -Infinity, 1e400, -1e400, never strings) in every dialect, unclamped even for
  vLLM, and in llama.cpp's old probability shape in place of the probability.
  bytes: the token's real bytes (a list of 0..255), for a byte-fragment token whose string is
  "\ufffd": written as the token's `bytes` in the shapes that have them (OpenAI, vLLM, llama.cpp,
  Ollama), given to a candidate with the same string unless it has its own, and the completion's
  text is the UTF-8 decoding of all its tokens' bytes (streams hold back an incomplete
  character until the chunk that completes it).
faults: 500 and 503 (Retry-After only when the entry gives "retry_after") are retried by the
  tool, 429 too (Retry-After: retry_after, 1 by default, none when null); 404 ("the model does
  not exist") and 401 (an invalid API key) are not. Each is answered with the dialect's error
  body; anthropic's are {"type": "error", "error": {type, message}, "request_id"} with the
  type of the status (500 api_error, 429 rate_limit_error, 404 not_found_error "model: <model>",
  401 authentication_error), and "503" answers 529 overloaded_error "Overloaded", as Anthropic's
  API signals overload.
reasoning: an entry's "reasoning" tokens (markers included: ["<think>", "Two", "</think>",
  "\n\n"]) come before its answer "tokens". The reasoning TEXT is theirs without a leading
  "<think>" token and without a closing "</think>" token (with any whitespace tokens after it);
  the answer text is the answer tokens'. max_tokens cuts the answer tokens alone. By dialect:
  - openai-chat and vllm, by the script's "reasoning_shape" (default "sglang"):
    "sglang": message.reasoning_content = the reasoning text, logprobs.content = the reasoning
      tokens then the answer's (SGLang, sgl-project/sglang issue #25055); streamed: one chunk
      per reasoning token, delta.reasoning_content its piece of the reasoning text ("" for the
      markers and the whitespace after "</think>") with its logprobs attached, then the
      content chunks;
    "vllm": the same with message.reasoning / delta.reasoning;
    "openai": message.reasoning_content, but logprobs.content holds the answer's tokens only
      (streamed reasoning chunks carry "logprobs": null).
    usage.completion_tokens counts both; "drop_logprobs_chunks" counts content chunks only.
  - ollama (/api/chat and /api/generate): message.thinking / thinking, `logprobs` over the
    reasoning tokens then the answer's; streamed one object per token, each with its piece in
    thinking or in content / response.
  - openai-responses: an output item {"type": "reasoning", "summary": [], "content":
    [{"type": "reasoning_text", "text": ...}]} before the message, logprobs for the answer
    only; streamed as response.reasoning_text.delta events (one per token inside the markers).
  - gemini: a part {"text": ..., "thought": true} before the answer's part, logprobsResult for
    the answer only; streamed as one thought chunk before the answer's chunks.
  - anthropic: a {"type": "thinking", "thinking": ..., "signature": ...} block before the text
    block, counted in output_tokens; streamed as thinking_delta events (one per token inside
    the markers) and a signature_delta.
  - the others (openai-completions, llamacpp, sglang, tgi) parse no reasoning: their text and
    tokens are the raw generation, reasoning tokens then answer tokens.
  Without "reasoning" (or with []) nothing changes.
gemini: POST /v1beta/models/<script model>:generateContent, or :streamGenerateContent (which
  must ask for alt=sse; another model in the path is a 404); each stream chunk carries two
  tokens, and "drop_logprobs_chunks" counts those chunks.
  GET /v1beta/models lists "models/embedding-001" (embedContent only) and then
  "models/<script model>" (generateContent), as the Gemini API's models.list does.
anthropic: POST /v1/messages (Anthropic's Messages API, tests/data/formats/anthropic_*): the
  prompt is the last user message with text: a user message whose content holds only tool_result
  blocks is a tool-result turn and is skipped (`system` is not matched). The answer is {id
  "msg_...", type "message", role, model, content, stop_reason, stop_sequence null, usage}:
  content holds one text block of the entry's tokens' text (none when the entry has tool calls
  and no tokens), then a tool_use block {type, id "toolu_...", name, input: the arguments} per
  tool call; no logprobs anywhere (the API has none), whatever the request asks. stop_reason is
  "tool_use" with tool calls, else "max_tokens" for finish_reason "length" (max_tokens cuts the
  tokens as in every dialect) and "end_turn" for "stop". usage: input_tokens (the entry's
  "prompt_tokens"), cache_creation_input_tokens 0, cache_read_input_tokens (its
  "cached_tokens", 0 when absent), output_tokens (its tokens, reasoning included). With
  "stream": true: event:/data: pairs, message_start (content [], stop_reason null, the input
  usage, output_tokens 1), per block content_block_start (text "", or the tool_use block with
  input {}) then ping after the first one, content_block_delta events (a text_delta per token;
  input_json_delta partial_json pieces of the arguments' JSON, the first one ""),
  content_block_stop, then message_delta (stop_reason, usage.output_tokens) and message_stop;
  no [DONE]. A Messages request without an `anthropic-version` header answers 400
  invalid_request_error "anthropic-version: header is required", and one without max_tokens
  400 "max_tokens: Field required" (both logged with outcome "bad_request", no entry used).
  GET /v1/models answers List Models' shape ({data: [{type "model", id, display_name,
  created_at}], has_more false, first_id, last_id}), the script's model first and then
  "claude-opus-4-1-20250805"; without the version header it answers the same 400. Every other
  GET (/props, /health, /api/tags, ...) answers 404 not_found_error, so that detection takes it
  for no other server.
refusals ("refuse_params"): a completion POST carrying the parameter where its dialect puts it
  (temperature, top_p and seed at the top level for OpenAI's routes, Anthropic's and
  llama.cpp's; in Ollama's options, SGLang's sampling_params on /generate (seed:
  sampling_seed), Gemini's generationConfig (top_p: topP), TGI's parameters on its native
  routes; logprobs: `logprobs` or `top_logprobs` at the top level, Gemini's responseLogprobs or
  logprobs, llama.cpp's n_probs, SGLang's return_logprob or top_logprobs_num, TGI's
  top_n_tokens; a null is no value) answers 400 in the dialect's error shape (OpenAI's
  envelope names the parameter in `param`, the reason in `code`):
  - "anthropic_deprecated" (temperature, top_p): "`temperature` is deprecated for this model."
    ("`top_p` ..."), invalid_request_error, param the parameter, code null, whatever the value
    (tests/data/formats/anthropic_error_400_temperature_deprecated.json);
  - "openai_default_only" (temperature): any value but 1 answers "Unsupported value:
    'temperature' does not support <the value as sent> with this model. Only the default (1)
    value is supported.", param "temperature", code "unsupported_value"
    (openai_error_400_temperature_unsupported.json); temperature 1 passes;
  - "unrecognized" (seed): "Unrecognized request argument supplied: seed", param null, code
    null; in Anthropic's shape "seed: Extra inputs are not permitted";
  - "unsupported" (logprobs): "Unsupported parameter: '<key>' is not supported with this
    model.", param the key, code "unsupported_parameter"
    (openai_error_400_logprobs_unsupported.json).
  A refused request is logged with outcome "refused" and "refused": the key; it consumes no
  entry, moves no cursor, marks nothing sampled and leaves a flush before it pending for the
  next completion request. Where several are refused, the first of temperature, top_p, seed,
  logprobs is the one named.
seeded ("seeded": true): the request's log item carries "seeded": the seed, and its "entry" the
  index chosen; a request without a seed, or a greedy one, is answered as without the option.
  A prompt with "steps" answers a seeded request from its step's list, steps[i][seed % len].
tool chains (openai-chat's shape on /v1/chat/completions in every dialect serving it,
  anthropic, gemini, openai-responses and ollama's /api/chat): an agent that got tool calls
  sends the conversation again with the assistant turn and the tools' results, until the model
  answers without tool calls.
  - The prompt stays the user's text across the steps: OpenAI's and Ollama's tool results have
    role "tool", the Responses API's are function_call_output items (no role), Anthropic's
    tool-result user turns and Gemini's user turns of functionResponse parts are skipped.
  - A request's step is the number of assistant turns in it that called tools: OpenAI's and
    Ollama's assistant messages with a non-empty tool_calls, Anthropic's assistant messages whose
    content holds a tool_use block, Gemini's model turns holding a functionCall part, the
    Responses API's runs of consecutive function_call input items; 0 for the first request. A
    prompt's "steps" answers it.
  - Its tool results are the tool-result turns it carries, in order: OpenAI's {"role": "tool",
    "tool_call_id", "content"} messages, Anthropic's {"type": "tool_result", "tool_use_id",
    "content"} blocks of user messages, the Responses API's {"type": "function_call_output",
    "call_id", "output"} items, as {"id", "content"}; Ollama's {"role": "tool", "tool_name",
    "content"} messages as {"id": null, "name", "content"}; Gemini's {"functionResponse": {"name",
    "response", "id"?}} parts as {"id" (null without one), "name", "content": the response
    object as compact JSON}; content as text (a string, or its parts' text joined).
  - Every id an answer carries is unique ("call_scripted<n>_<i>", "toolu_scripted<n>_<i>": n
    the answer's number, i the call's; Gemini's thought signature "sig_scripted<n>") and is
    remembered once the answer is built (not for a "malformed" fault, whose answer carries none);
    Together's shapes and Ollama's issue none. A request with a tool result whose id was never
    issued (Ollama's and Gemini's results without an id are not checked) answers 400 in the
    dialect's error shape, "unknown tool call id "<id>": no tool call of this endpoint has it"
    (OpenAI's envelope: param "messages", code null), logged with outcome "bad_request" and
    "unknown_tool_call_id": the first such id; a Gemini model turn whose first functionCall part
    lacks the signature its answer gave answers 400 "Function call is missing a thought_signature
    in functionCall parts." (one with a signature never issued: "Corrupted thought signature."),
    as Gemini 3 does, logged with outcome "bad_request" and "thought_signature": the signature
    sent (null when absent). Either consumes no entry and leaves a flush pending, as the
    refusals do. They are checked after Anthropic's version and max_tokens checks and before
    "refuse_params".
  - Every completion request's log item (a POST on a route its dialect completes on, refused or
    not) carries "step": its step, "tool_results": [{"id", "content"}, ...] as above ([] for
    none; always [] and step 0 on the other routes) and "tools": the request's top-level
    "tools" list as sent (null when absent).

A request in absolute form ("POST http://api.openai.com/v1/chat/completions", as a client
sends it through an HTTP proxy) is served by its path, so that a test can give the tool a
provider's host name and reach this endpoint through http_proxy.

Usage: scripted_endpoint.py --script S.json --port 0 --port-file F [--dialect D] [--log L]
Standard library only.
"""

import argparse
import json
import codecs
import math
import os
import re
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIALECTS = ("openai-chat", "openai-completions", "openai-responses", "vllm", "llamacpp",
            "llamacpp-old", "sglang", "ollama", "tgi", "gemini", "anthropic")
FAULTS = ("500", "503", "429", "404", "401", "close", "truncate", "malformed", "oversize",
          "no_logprobs", "302")
# Log probabilities a script may give as strings, written raw (not as strings) into the JSON.
RAW_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400")
# Above the tool's default response cap (16 MiB).
OVERSIZE_BYTES = 17 * 1024 * 1024
CREATED = 1755000000
CREATED_AT = "2025-12-01T10:00:01.654321Z"
VLLM_FLOOR = -9999.0


class ScriptError(Exception):
    pass


class RawNumber:
    """A log probability written into the response as a non-standard JSON literal."""

    MARK = "\u0000scripted-raw-number:"
    ORDER = {"NaN": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf,
             "1e400": math.inf, "-1e400": -math.inf}

    def __init__(self, literal):
        self.literal = literal

    @property
    def marker(self):
        """What payload builders put in its place; dumps() splices the literal in."""
        return self.MARK + self.literal

    def __repr__(self):
        return f"RawNumber({self.literal!r})"


RAW_PATTERN = re.compile(r'"\\u0000scripted-raw-number:([^"]+)"')


def dumps(obj):
    """json.dumps, with every RawNumber marker replaced by its raw literal (NaN, 1e400, ...)."""
    return RAW_PATTERN.sub(lambda m: m.group(1), json.dumps(obj))


def sort_value(lp):
    """A logprob's place when a server sorts candidates: unknown values last."""
    if lp is None:
        return -math.inf
    if isinstance(lp, RawNumber):
        return RawNumber.ORDER[lp.literal]
    return lp


def wire_lp(lp, vllm=False):
    """A logprob as a payload value: RawNumbers raw and unclamped, numbers clamped for vLLM."""
    if lp is None:
        return None
    if isinstance(lp, RawNumber):
        return lp.marker
    return clamp(lp) if vllm else lp


def wire_prob(lp):
    """llama.cpp's old shape sends exp(logprob); a RawNumber or null takes its place as is."""
    if lp is None or isinstance(lp, RawNumber):
        return wire_lp(lp)
    return math.exp(lp)


class Token:
    def __init__(self, text, logprob, candidates, raw=None):
        self.text = text
        self.logprob = logprob  # float, None or RawNumber
        # [(text, logprob, bytes or None)] in the script's order, or None ("top_logprobs": null)
        self.candidates = candidates
        self.bytes = raw  # the token's real bytes (list of ints), or None: its UTF-8

    @property
    def id(self):
        return token_id(self.text)

    @property
    def raw_bytes(self):
        return bytes(self.bytes) if self.bytes is not None else self.text.encode("utf-8")

    def bytes_list(self):
        return list(self.raw_bytes)

    def candidate_bytes(self, text, own):
        """A candidate's bytes: its own, else the token's when it is the same string."""
        if own is not None:
            return list(own)
        if text == self.text and self.bytes is not None:
            return list(self.bytes)
        return utf8_bytes(text)

    def top(self, k):
        """The first k candidates as (text, logprob, bytes); None where the script says null."""
        if self.candidates is None:
            return None
        return [(t, lp, self.candidate_bytes(t, own)) for t, lp, own in self.candidates[:k]]


def token_id(text):
    # A stable id per token string, as a tokenizer would give.
    return zlib.crc32(text.encode("utf-8", "surrogatepass")) % 150000 + 1


def utf8_bytes(text):
    return list(text.encode("utf-8", "surrogatepass"))


def text_of(toks):
    """The completion's text: its tokens' strings, or the decoding of their real bytes."""
    if all(t.bytes is None for t in toks):
        return "".join(t.text for t in toks)
    return b"".join(t.raw_bytes for t in toks).decode("utf-8", "replace")


def pieces_of(toks):
    """Per token, the text a stream sends with it; they concatenate to text_of(toks). With
    real bytes, an incomplete character is held back until the token that completes it."""
    if all(t.bytes is None for t in toks):
        return [t.text for t in toks]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    out = [decoder.decode(t.raw_bytes) for t in toks]
    if out:
        out[-1] += decoder.decode(b"", final=True)
    return out


def parse_logprob(value, where):
    if isinstance(value, bool):
        raise ScriptError(f"{where} must be a number, null or one of {list(RAW_NUMBERS)}")
    if value is None:
        return None
    if isinstance(value, str):
        if value not in RAW_NUMBERS:
            raise ScriptError(f"{where}: {value!r} is not one of {list(RAW_NUMBERS)}")
        return RawNumber(value)
    if isinstance(value, (int, float)):
        value = float(value)
        if math.isnan(value):
            return RawNumber("NaN")
        if math.isinf(value):
            return RawNumber("Infinity" if value > 0 else "-Infinity")
        return value
    raise ScriptError(f"{where} must be a number, null or one of {list(RAW_NUMBERS)}")


def parse_bytes(value, where):
    if value is None:
        return None
    if (not isinstance(value, list)
            or not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255
                       for b in value)):
        raise ScriptError(f"{where}: bytes must be a list of integers 0..255")
    return list(value)


def parse_tokens(raw, where):
    if not isinstance(raw, list):
        raise ScriptError(f"{where}: 'tokens' must be a list")
    tokens = []
    shape = "[\"tok\", logprob, [[\"cand\", lp], ...] or null(, bytes)]"
    for i, item in enumerate(raw):
        if (not isinstance(item, list) or len(item) not in (3, 4) or not isinstance(item[0], str)
                or not (item[2] is None or isinstance(item[2], list))):
            raise ScriptError(f"{where}: token {i} must be {shape}")
        logprob = parse_logprob(item[1], f"{where}: token {i} logprob")
        candidates = None
        if item[2] is not None:
            candidates = []
            for cand in item[2]:
                if (not isinstance(cand, list) or len(cand) not in (2, 3)
                        or not isinstance(cand[0], str)):
                    raise ScriptError(f"{where}: token {i} candidates must be [\"cand\", lp] "
                                      "pairs (or [\"cand\", lp, bytes])")
                lp = parse_logprob(cand[1], f"{where}: token {i} candidate {cand[0]!r} logprob")
                own = (parse_bytes(cand[2], f"{where}: token {i} candidate") if len(cand) == 3
                       else None)
                candidates.append((cand[0], lp, own))
        raw_bytes = parse_bytes(item[3], f"{where}: token {i}") if len(item) == 4 else None
        tokens.append(Token(item[0], logprob, candidates, raw_bytes))
    return tokens


def parse_entry(raw, where):
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: entry must be an object")
    known = {"tokens", "finish_reason", "fingerprint", "delay_ms", "fault", "retry_after",
             "oversize_bytes", "model", "bytes", "drop_logprobs_chunks", "logprob_shift",
             "reasoning", "prompt_tokens", "echo_headers", "location", "cached_tokens",
             "tool_calls"}
    unknown = set(raw) - known
    if unknown:
        raise ScriptError(f"{where}: unknown fields {sorted(unknown)}")
    entry = {"delay_ms": raw.get("delay_ms", 0), "fault": raw.get("fault"),
             "retry_after": raw.get("retry_after", 1),
             "retry_after_given": "retry_after" in raw,
             "finish_reason": raw.get("finish_reason", "length"),
             "fingerprint": raw.get("fingerprint"), "model": raw.get("model"),
             "drop_logprobs_chunks": raw.get("drop_logprobs_chunks", []),
             "oversize_bytes": raw.get("oversize_bytes", OVERSIZE_BYTES), "tokens": None,
             "prompt_tokens": raw.get("prompt_tokens", 12),
             "cached_tokens": raw.get("cached_tokens"),
             "echo_headers": raw.get("echo_headers", False) is True, "location": raw.get("location")}
    if (not isinstance(entry["prompt_tokens"], int) or isinstance(entry["prompt_tokens"], bool)
            or entry["prompt_tokens"] < 0):
        raise ScriptError(f"{where}: 'prompt_tokens' must be an integer >= 0")
    cached = entry["cached_tokens"]
    if cached is not None and (not isinstance(cached, int) or isinstance(cached, bool)
                               or cached < 0):
        raise ScriptError(f"{where}: 'cached_tokens' must be an integer >= 0")
    if entry["fault"] is not None and entry["fault"] not in FAULTS:
        raise ScriptError(f"{where}: unknown fault {entry['fault']!r}")
    if entry["finish_reason"] not in ("length", "stop"):
        raise ScriptError(f"{where}: finish_reason must be 'length' or 'stop'")
    if entry["model"] is not None and not isinstance(entry["model"], str):
        raise ScriptError(f"{where}: 'model' must be a string")
    drops = entry["drop_logprobs_chunks"]
    if (not isinstance(drops, list)
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in drops)):
        raise ScriptError(f"{where}: 'drop_logprobs_chunks' must be a list of chunk indices >= 0")
    entry["drop_logprobs_chunks"] = set(drops)
    entry["tool_calls"] = parse_tool_calls(raw.get("tool_calls", []), where)
    entry["reasoning"] = (parse_tokens(raw["reasoning"], f"{where}: 'reasoning'")
                          if "reasoning" in raw else [])
    if "tokens" in raw:
        entry["tokens"] = parse_tokens(raw["tokens"], where)
    elif entry["fault"] in (None, "no_logprobs", "close", "truncate"):
        raise ScriptError(f"{where}: 'tokens' missing")
    if "bytes" in raw:
        per_token = raw["bytes"]
        tokens = entry["tokens"]
        if tokens is None or not isinstance(per_token, list) or len(per_token) != len(tokens):
            raise ScriptError(f"{where}: 'bytes' must list one entry (bytes or null) per token")
        for i, (tok, value) in enumerate(zip(tokens, per_token)):
            value = parse_bytes(value, f"{where}: 'bytes' {i}")
            if value is not None and tok.bytes is not None:
                raise ScriptError(f"{where}: token {i} has bytes twice")
            if value is not None:
                tok.bytes = value
    if "logprob_shift" in raw:
        shift = raw["logprob_shift"]
        if (isinstance(shift, bool) or not isinstance(shift, (int, float))
                or not math.isfinite(shift)):
            raise ScriptError(f"{where}: 'logprob_shift' must be a finite number of nats")
        if entry["tokens"] is None:
            raise ScriptError(f"{where}: 'logprob_shift' needs 'tokens'")
        entry["tokens"] = [shifted(tok, float(shift)) for tok in entry["tokens"]]
    return entry


def parse_tool_calls(raw, where):
    """An entry's tool calls: [{"name": str, "arguments": {...}}, ...] ([] for none)."""
    if (not isinstance(raw, list)
            or not all(isinstance(c, dict) and set(c) == {"name", "arguments"}
                       and isinstance(c["name"], str) and c["name"]
                       and isinstance(c["arguments"], dict) for c in raw)):
        raise ScriptError(f"{where}: 'tool_calls' must be a list of "
                          "{\"name\": \"...\", \"arguments\": {...}}")
    return [{"name": c["name"], "arguments": c["arguments"]} for c in raw]


def shifted(tok, shift):
    """The token with `shift` added to its logprob and to its own candidate's (numbers only)."""
    def move(lp):
        return lp + shift if isinstance(lp, float) else lp
    candidates = None
    if tok.candidates is not None:
        candidates = [(text, move(lp) if text == tok.text else lp, own)
                      for text, lp, own in tok.candidates]
    return Token(tok.text, move(tok.logprob), candidates, tok.bytes)


def parse_entries(entries, where):
    if not isinstance(entries, list) or not entries:
        raise ScriptError(f"script: {where} needs a non-empty list of entries")
    return [parse_entry(e, f"{where} entry {i}") for i, e in enumerate(entries)]


def parse_steps(raw, where):
    """A prompt's "steps": a non-empty list of non-empty entry lists, one per chain step."""
    if not isinstance(raw, list) or not raw:
        raise ScriptError(f"script: {where}: 'steps' must be a non-empty list of entry lists")
    return [parse_entries(step, f"{where} 'steps' {i}") for i, step in enumerate(raw)]


def entry_lists(variants):
    """Every entry list of a prompt's variants (None: none)."""
    if variants is None:
        return []
    lists = [variants.get(name) for name in ("entries", "busy", "sampled_busy", "cold")]
    return [l for l in lists + list(variants.get("steps") or []) if l]


def parse_variants(raw, where):
    """A prompt's entries: a list, or an object of variants (see the module docstring)."""
    if isinstance(raw, list):
        return {"entries": parse_entries(raw, where), "busy": None, "sampled_busy": None,
                "cold": None, "steps": None, "hold_ms": 0}
    if not isinstance(raw, dict):
        raise ScriptError(f"script: {where} must be a list of entries or an object of variants")
    unknown = set(raw) - {"entries", "busy", "sampled_busy", "cold", "steps", "hold_ms"}
    if unknown:
        raise ScriptError(f"script: {where}: unknown fields {sorted(unknown)}")
    hold = raw.get("hold_ms", 0)
    if not isinstance(hold, int) or hold < 0:
        raise ScriptError(f"script: {where}: 'hold_ms' must be a non-negative integer")
    steps = parse_steps(raw["steps"], where) if "steps" in raw else None
    # With "steps" every request is answered by a step's list: "entries" may be left out, and
    # is then the first step's list (with its own cursor, never chosen).
    entries = (steps[0] if steps is not None and "entries" not in raw
               else parse_entries(raw.get("entries"), f"{where} 'entries'"))
    variants = {"entries": entries, "steps": steps, "hold_ms": hold}
    for name in ("busy", "sampled_busy", "cold"):
        variants[name] = parse_entries(raw[name], f"{where} {name!r}") if name in raw else None
    return variants


REASONING_SHAPES = ("sglang", "vllm", "openai")
# "refuse_params": the refusals each request parameter may be given (see the module docstring).
REFUSALS = {"temperature": ("anthropic_deprecated", "openai_default_only"),
            "top_p": ("anthropic_deprecated",),
            "seed": ("unrecognized",),
            "logprobs": ("unsupported",)}


def refuse_params_of(raw):
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScriptError("script: 'refuse_params' must be an object")
    for param, how in raw.items():
        if param not in REFUSALS:
            raise ScriptError(f"script: 'refuse_params': unknown parameter {param!r} "
                              f"(one of {sorted(REFUSALS)})")
        if how not in REFUSALS[param]:
            raise ScriptError(f"script: 'refuse_params': {param!r} must be one of "
                              f"{list(REFUSALS[param])}")
    return dict(raw)


def reasoning_shape(raw):
    shape = raw.get("reasoning_shape", "sglang")
    if shape not in REASONING_SHAPES:
        raise ScriptError(f"script: 'reasoning_shape' must be one of {list(REASONING_SHAPES)}")
    return shape


# The prompt of the tool's capability preflight (probes/capability_preflight.cpp), and what a
# script that does not list it answers: the same greedy-looking answer every time, each token its
# position's top candidate, so that the preflight finds temperature 0 accepted.
PREFLIGHT_PROMPT = "Write one sentence about the sea."
PREFLIGHT_ENTRY = {"finish_reason": "stop", "tokens": [
    ["The", -0.1, [["The", -0.1], ["A", -2.0]]],
    [" sea", -0.2, [[" sea", -0.2], [" ocean", -1.5]]],
    [".", -0.05, [[".", -0.05], ["!", -3.0]]]]}


def load_script(path):
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    if not isinstance(raw.get("prompts"), dict) or not raw["prompts"]:
        raise ScriptError("script: 'prompts' must be a non-empty object")
    prompts = {}
    for key, entries in raw["prompts"].items():
        prompts[key] = parse_variants(entries, f"prompt {key!r}")
    if PREFLIGHT_PROMPT not in prompts:
        prompts[PREFLIGHT_PROMPT] = parse_variants([PREFLIGHT_ENTRY], "the preflight's prompt")
    flush_routes = raw.get("flush_routes", [])
    if not isinstance(flush_routes, list) or not all(isinstance(r, str) for r in flush_routes):
        raise ScriptError("script: 'flush_routes' must be a list of paths")
    fallback = parse_variants(raw["fallback"], "'fallback'") if "fallback" in raw else None
    if raw.get("together") and any(
            e["reasoning"] for v in list(prompts.values()) + [fallback]
            for entries in entry_lists(v) for e in entries):
        raise ScriptError("script: Together's shapes carry no 'reasoning'")
    return {"model": raw.get("model", "scripted-model"),
            "fingerprint": raw.get("fingerprint"),
            "token_ids": bool(raw.get("token_ids", False)),
            "flush_routes": flush_routes,
            "flush_refuses": bool(raw.get("flush_refuses", False)),
            "api_tags": bool(raw.get("api_tags", False)),
            "base_path": str(raw.get("base_path", "")).rstrip("/"),
            "router": bool(raw.get("router", False)),
            "build_info": raw.get("build_info"),
            "total_slots": int(raw.get("total_slots", 4)),
            "n_ctx": int(raw.get("n_ctx", 4096)),
            "context_limit": raw.get("context_limit"),
            "together": bool(raw.get("together", False)),
            "max_completion_tokens": bool(raw.get("max_completion_tokens", False)),
            "no_logprobs_model": raw.get("no_logprobs_model"),
            "method_not_allowed": bool(raw.get("method_not_allowed", False)),
            "models_route": bool(raw.get("models_route", True)),
            "metrics_hits": metrics_hits_of(raw.get("metrics_hits")),
            "embeddings": bool(raw.get("embeddings", False)),
            "echo_headers_get": bool(raw.get("echo_headers_get", False)),
            "props_echo_auth": bool(raw.get("props_echo_auth", False)),
            "gemini_generates": bool(raw.get("gemini_generates", True)),
            "reasoning_shape": reasoning_shape(raw),
            "refuse_params": refuse_params_of(raw.get("refuse_params")),
            "seeded": bool(raw.get("seeded", False)),
            "fallback": fallback,
            "prompts": prompts}


def message_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


def metrics_hits_of(raw):
    if raw is None:
        return None
    if (not isinstance(raw, dict) or set(raw) != {"cold", "warm"}
            or not all(isinstance(v, int) and v >= 0 for v in raw.values())):
        raise ScriptError("script: 'metrics_hits' must be {\"cold\": N, \"warm\": N}")
    return raw


def metrics_text(hits, model):
    """vLLM's /metrics as its PrometheusStatLogger writes it (vllm/v1/metrics/loggers.py): the
    counter per engine, beside its _created sample and another counter of a similar name."""
    first, second = hits - hits // 2, hits // 2
    return (f"# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of "
            f"queried tokens.\n# TYPE vllm:prefix_cache_queries_total counter\n"
            f'vllm:prefix_cache_queries_total{{engine="0",model_name="{model}"}} {hits * 2}.0\n'
            f"# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached "
            f"tokens.\n# TYPE vllm:prefix_cache_hits_total counter\n"
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="{model}"}} {first}.0\n'
            f'vllm:prefix_cache_hits_total{{engine="1",model_name="{model}"}} {second}.0\n'
            f'vllm:prefix_cache_hits_created{{engine="0",model_name="{model}"}} 1.7e+09\n')


def tool_results_only(content):
    """Whether a user message's content is a tool-result turn: a list holding only Anthropic's
    tool_result blocks, or only Gemini's functionResponse parts (no text of the user's)."""
    return (isinstance(content, list) and bool(content)
            and (all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
                 or all(isinstance(b, dict) and "functionResponse" in b for b in content)))


def prompt_of(body):
    """The prompt a request carries: the last user message (skipping the tool-result turns:
    Anthropic's user messages holding only tool_result blocks, Gemini's user turns holding only
    functionResponse parts), else the text field."""
    messages = body.get("messages")
    if messages is None and isinstance(body.get("contents"), list):
        # Gemini: contents of {role, parts: [{text}]}, as chat messages.
        messages = [{"role": c.get("role"), "content": c.get("parts")}
                    for c in body["contents"] if isinstance(c, dict)]
    if messages is None and isinstance(body.get("input"), list):
        messages = body.get("input")  # Responses: input items, as chat messages
    if isinstance(messages, list):
        for message in reversed(messages):
            if (isinstance(message, dict) and message.get("role") == "user"
                    and not tool_results_only(message.get("content"))):
                return message_text(message.get("content"))
        return None
    for field in ("prompt", "text", "inputs", "input"):
        value = body.get(field)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


def body_samples(body):
    """Whether a completion body asks for sampling: a temperature above 0 where its dialect puts
    one (top level; Ollama's options, SGLang's sampling_params, Gemini's generationConfig, TGI's
    parameters), or TGI's do_sample."""
    places = [body] + [body.get(k) for k in ("options", "sampling_params", "generationConfig",
                                             "parameters")]
    for place in places:
        if not isinstance(place, dict):
            continue
        temperature = place.get("temperature")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) \
                and temperature > 0:
            return True
        if place is body.get("parameters") and place.get("do_sample") is True:
            return True
    return False


NATIVE_PLACES = {"ollama": "options", "gemini": "generationConfig"}


def sampling_place(dialect, path, body):
    """The object holding a completion request's sampling parameters where its dialect puts
    them (Ollama's options, Gemini's generationConfig, SGLang's sampling_params on /generate,
    TGI's parameters on /generate and /generate_stream), else the body itself: OpenAI's and
    Anthropic's routes, llama.cpp's /completion and the OpenAI chat route the native servers
    serve beside their own. None where that object is absent."""
    key = NATIVE_PLACES.get(dialect)
    if dialect == "sglang" and path == "/generate":
        key = "sampling_params"
    if dialect == "tgi" and path in ("/generate", "/generate_stream"):
        key = "parameters"
    if key is None:
        return body
    place = body.get(key)
    return place if isinstance(place, dict) else None


def carried(dialect, path, body, name):
    """(key, value) of the sampling parameter `name` ("temperature", "top_p" or "seed") where the
    request carries it, else None. The key is the dialect's own (Gemini's topP, SGLang's
    sampling_seed); a JSON null asks for the default, so it is not a value carried."""
    place = sampling_place(dialect, path, body)
    key = name
    if dialect == "gemini" and name == "top_p":
        key = "topP"
    if dialect == "sglang" and path == "/generate" and name == "seed":
        key = "sampling_seed"
    if place is None or place.get(key) is None:
        return None
    return key, place[key]


def logprobs_key(dialect, path, body):
    """The key by which a completion request asks for logprobs, else None: `logprobs` or
    `top_logprobs` at the top level (OpenAI's routes, Ollama's), Gemini's responseLogprobs or
    logprobs in generationConfig, llama.cpp's n_probs on /completion, SGLang's return_logprob or
    top_logprobs_num on /generate, TGI's top_n_tokens on its native routes (null: not asked)."""
    wanted = [(body, "logprobs"), (body, "top_logprobs")]
    if dialect == "gemini":
        wanted = [(body.get("generationConfig"), "responseLogprobs"),
                  (body.get("generationConfig"), "logprobs")]
    elif dialect in ("llamacpp", "llamacpp-old") and path == "/completion":
        wanted.append((body, "n_probs"))
    elif dialect == "sglang" and path == "/generate":
        wanted += [(body, "return_logprob"), (body, "top_logprobs_num")]
    elif dialect == "tgi" and path in ("/generate", "/generate_stream"):
        wanted.append((body.get("parameters"), "top_n_tokens"))
    for place, key in wanted:
        if isinstance(place, dict) and place.get(key) is not None:
            return key
    return None


def refusal_body(dialect, message, param, code):
    """A 400 refusal of a request parameter in the dialect's error shape; OpenAI's envelope
    names the parameter in `param` and the reason in `code`, as OpenAI's API does."""
    error = error_body(dialect, 400, message, "invalid_request_error")
    if isinstance(error.get("error"), dict) and "param" in error["error"]:
        error["error"].update(param=param, code=code)
    return error


def param_refusal(dialect, path, body, refuse):
    """(key, error body) for the first parameter the script's "refuse_params" refuses that this
    completion request carries, else None (see the module docstring for each wording)."""
    for name in ("temperature", "top_p"):
        found = carried(dialect, path, body, name)
        how = refuse.get(name)
        if found is None or how is None:
            continue
        key, value = found
        if how == "anthropic_deprecated":
            # Anthropic's newest models refuse the parameter whatever its value.
            return key, refusal_body(dialect, f"`{key}` is deprecated for this model.", key, None)
        if isinstance(value, bool) or value != 1:
            # OpenAI's reasoning models take the default temperature alone and quote the value.
            shown = value if isinstance(value, str) else json.dumps(value)
            return key, refusal_body(dialect, f"Unsupported value: '{key}' does not support "
                                              f"{shown} with this model. Only the default (1) "
                                              "value is supported.", key, "unsupported_value")
    found = carried(dialect, path, body, "seed")
    if found is not None and refuse.get("seed"):
        key = found[0]
        # Anthropic's request validation refuses unknown fields; Azure OpenAI's older API
        # versions refused `seed` as an unknown argument, naming no param and no code.
        message = (f"{key}: Extra inputs are not permitted" if dialect == "anthropic"
                   else f"Unrecognized request argument supplied: {key}")
        return key, refusal_body(dialect, message, None, None)
    key = logprobs_key(dialect, path, body)
    if key is not None and refuse.get("logprobs"):
        return key, refusal_body(dialect, f"Unsupported parameter: '{key}' is not supported "
                                          "with this model.", key, "unsupported_parameter")
    return None


def seed_honoured(dialect, path, body):
    """The integer seed a "seeded" server answers by, else None: one carried where the dialect
    puts it, on a request that samples. Greedy decoding needs no seed, so a temperature of 0
    leaves the cursor in charge; no temperature is the server's default, which samples, but on
    TGI's native routes, whose default is greedy, only do_sample or a temperature above 0 does."""
    found = carried(dialect, path, body, "seed")
    if found is None or not isinstance(found[1], int) or isinstance(found[1], bool):
        return None
    if dialect == "tgi" and path in ("/generate", "/generate_stream"):
        return found[1] if body_samples(body) else None
    temperature = carried(dialect, path, body, "temperature")
    if temperature is not None and not (isinstance(temperature[1], (int, float))
                                        and not isinstance(temperature[1], bool)
                                        and temperature[1] > 0):
        return None
    return found[1]


def anthropic_refusal(headers, body):
    """The 400 Anthropic's API answers a Messages request without its version header or
    without the required max_tokens (tests/data/formats/anthropic_error_400.json), else None."""
    if not headers.get("anthropic-version"):
        message = "anthropic-version: header is required"
    elif "max_tokens" not in body:
        message = "max_tokens: Field required"
    else:
        return None
    return error_body("anthropic", 400, message, "invalid_request_error")


def compact(value):
    """A JSON value as compact JSON text, its members in the order sent."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def gemini_chain(body):
    """(step, tool results) of a Gemini request: its model turns holding a functionCall part,
    and its user turns' functionResponse parts as [{"id", "name", "content"}], the content the
    response object as compact JSON."""
    step, results = 0, []
    for content in body.get("contents") or []:
        if not isinstance(content, dict):
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role") == "model" and any("functionCall" in p for p in parts):
            step += 1
        elif content.get("role") == "user":
            results += [{"id": r.get("id"), "name": r.get("name"),
                         "content": compact(r.get("response"))}
                        for r in (p["functionResponse"] for p in parts
                                  if isinstance(p.get("functionResponse"), dict))]
    return step, results


def gemini_signatures(body):
    """The thoughtSignature of each model turn's first functionCall part, in order (None where
    that part has none): what Gemini 3 wants back unchanged."""
    out = []
    for content in body.get("contents") or []:
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        calls = [p for p in content.get("parts") or []
                 if isinstance(p, dict) and "functionCall" in p]
        if calls:
            out.append(calls[0].get("thoughtSignature"))
    return out


def responses_chain(body):
    """(step, tool results) of a Responses request: its runs of function_call input items (one
    turn of the model's calls each), and its function_call_output items as [{"id" (the
    call_id), "content"}]."""
    items = body.get("input")
    step, results, previous = 0, [], None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call" and previous != "function_call":
            step += 1
        elif kind == "function_call_output":
            results.append({"id": item.get("call_id"), "content": message_text(item.get("output"))})
        previous = kind
    return step, results


def chain_of(builder, body):
    """(step, tool results) of a chat request in a multi-step tool chain: the step is the
    number of assistant turns that called tools (OpenAI's chat shape and Ollama's: assistant
    messages with a non-empty tool_calls; Anthropic's: assistant messages whose content holds a
    tool_use block; Gemini's and the Responses API's: see gemini_chain and responses_chain), 0
    for the first request; the tool results are the tool-result turns it carries, in order, as
    [{"id", "content"}] (OpenAI's role "tool" messages, by tool_call_id; Anthropic's tool_result
    blocks in user messages, by tool_use_id; Ollama's role "tool" messages, which name no call,
    as {"id": null, "name": their tool_name, "content"}), the content as text. Other builders
    carry no chain: (0, [])."""
    if builder is gemini:
        return gemini_chain(body)
    if builder is openai_responses:
        return responses_chain(body)
    messages = body.get("messages")
    if builder not in (openai_chat, anthropic, ollama) or not isinstance(messages, list):
        return 0, []
    step, results = 0, []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if builder is anthropic:
            blocks = ([b for b in content if isinstance(b, dict)]
                      if isinstance(content, list) else [])
            if role == "assistant" and any(b.get("type") == "tool_use" for b in blocks):
                step += 1
            elif role == "user":
                results += [{"id": b.get("tool_use_id"), "content": message_text(b.get("content"))}
                            for b in blocks if b.get("type") == "tool_result"]
        elif role == "assistant" and isinstance(message.get("tool_calls"), list) \
                and message["tool_calls"]:
            step += 1
        elif role == "tool" and builder is ollama:
            results.append({"id": message.get("tool_call_id"), "name": message.get("tool_name"),
                            "content": message_text(content)})
        elif role == "tool":
            results.append({"id": message.get("tool_call_id"), "content": message_text(content)})
    return step, results


def issued_prefix(builder, script):
    """The prefix of the tool call ids this builder's answers carry, None where its shape
    carries no tool calls or none with an id (Together's chat, Ollama's and Gemini's calls, the
    text and native dialects)."""
    if builder is anthropic:
        return "toolu_scripted"
    if (builder is openai_chat and not script["together"]) or builder is openai_responses:
        return "call_scripted"
    return None


def gemini_signature(n):
    """The thoughtSignature on the first functionCall part of Gemini answer n."""
    return f"sig_scripted{n}"


def issued_for(builder, script, n, calls):
    """What answer n carrying `calls` issues for the next steps to send back: its call ids, or
    Gemini's thought signature."""
    if builder is gemini:
        return [gemini_signature(n)] if calls else []
    prefix = issued_prefix(builder, script)
    return [] if prefix is None else [tool_call_id(n, i, prefix) for i in range(len(calls))]


def unknown_tool_call(dialect, tool_id):
    """The 400 answering a tool-result turn whose id no answer of this endpoint issued."""
    message = f"unknown tool call id {json.dumps(tool_id)}: no tool call of this endpoint has it"
    return refusal_body(dialect, message, "messages", None)


class State:
    """The script, the per-prompt cursors and the request log, shared by handler threads."""

    def __init__(self, script, dialect, log_path):
        self.script = script
        self.dialect = dialect
        self.lock = threading.Lock()
        self.cursors = {}
        self.counter = 0
        self.in_flight = 0  # completion POSTs being answered now
        # Per open completion POST: {"overlapped": bool, "sampled": bool, "beside_sampled": bool}.
        self.open = []
        self.flushes = 0
        self.flushed = False  # a flush came after the last completion request
        self.cache_hits = 0  # the "metrics_hits" counter
        self.issued = set()  # the tool call ids its answers carried, for tool-result turns
        self.log = open(log_path, "a", encoding="utf-8") if log_path else None

    def match(self, prompt):
        if prompt is None:
            return None
        prompts = self.script["prompts"]
        if prompt in prompts:
            return prompt
        # A chat prompt flattened for a text dialect ("user: <text>\nassistant:") still matches.
        inside = [k for k in prompts if k and k in prompt]
        if inside:
            return max(inside, key=len)
        return None

    def variants(self, key):
        return self.script["fallback"] if key is None else self.script["prompts"][key]

    def entry_list(self, key, variant, listed=0):
        """(entries, cursor key) of a variant: "steps" names the list steps[listed], whose
        cursor is (prompt, "step", listed)."""
        variants = self.variants(key)
        if variant == "steps":
            return variants["steps"][listed], (key, "step", listed)
        return variants[variant], (key, variant)

    def next_entry(self, key, variant="entries", listed=0):
        with self.lock:
            entries, cursor = self.entry_list(key, variant, listed)
            index = self.cursors.get(cursor, 0)
            self.cursors[cursor] = index + 1
            self.counter += 1
            return index % len(entries), entries[index % len(entries)], self.counter

    def entry_at(self, key, seed, variant="entries", listed=0):
        """entries[seed % len(entries)] of the prompt's "entries" (or of its step's list): a
        server that honours the seed answers it alike every time, so the cursor does not
        move."""
        with self.lock:
            entries, _ = self.entry_list(key, variant, listed)
            self.counter += 1
            index = seed % len(entries)
            return index, entries[index], self.counter

    def open_request(self):
        """Registers a completion POST as open; returns (its flight, whether it follows a flush)."""
        with self.lock:
            flight = {"overlapped": bool(self.open), "sampled": False,
                      "beside_sampled": any(other["sampled"] for other in self.open)}
            for other in self.open:
                other["overlapped"] = True
            self.open.append(flight)
            after_flush, self.flushed = self.flushed, False
            return flight, after_flush

    def mark_sampled(self, flight):
        """The open request `flight` samples: every request open beside it saw a sampled one."""
        with self.lock:
            flight["sampled"] = True
            for other in self.open:
                if other is not flight:
                    other["beside_sampled"] = True

    def close_request(self, flight):
        with self.lock:
            self.open = [f for f in self.open if f is not flight]

    def issue(self, ids):
        """Records the tool call ids an answer carries."""
        with self.lock:
            self.issued.update(ids)

    def unknown_ids(self, ids):
        """The ids (or thought signatures) of `ids` that no answer issued, in order."""
        with self.lock:
            return [i for i in ids if i not in self.issued]

    def flush(self):
        with self.lock:
            self.flushes += 1
            self.flushed = True
            return self.flushes

    def record(self, item):
        if self.log is None:
            return
        with self.lock:
            self.log.write(json.dumps(item) + "\n")
            self.log.flush()


# ----------------------------------------------------------------------------------------------
# Payload builders: one per dialect, each following tests/data/formats exactly.

def prompt_tokens(gen):
    """The prompt's tokens the answer's usage reports: the entry's "prompt_tokens", else 12."""
    return gen["entry"]["prompt_tokens"]


def usage(n, gen):
    p = prompt_tokens(gen)
    return {"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n}


def clamp(lp):
    return max(lp, VLLM_FLOOR)


def oa_candidates(tok, k, vllm):
    """OpenAI-style top_logprobs of one position as (text, logprob, bytes); None where the
    script says null. vLLM builds its dict sampled token first."""
    if tok.candidates is None:
        return None
    if not vllm:
        return tok.top(k)
    ordered = [(tok.text, tok.logprob, tok.bytes_list())]
    for text, lp, own in sorted(tok.candidates, key=lambda c: -sort_value(c[1])):
        if text not in {t for t, _, _ in ordered}:
            ordered.append((text, lp, tok.candidate_bytes(text, own)))
    return ordered


def vllm_text(text, script):
    return f"token_id:{token_id(text)}" if script["token_ids"] else text


def chat_logprob_entry(tok, k, dialect, script):
    vllm = dialect == "vllm"
    candidates = oa_candidates(tok, k, vllm)
    if not vllm:
        top = (None if candidates is None else
               [{"token": t, "logprob": wire_lp(lp), "bytes": b} for t, lp, b in candidates])
        return {"token": tok.text, "logprob": wire_lp(tok.logprob), "bytes": tok.bytes_list(),
                "top_logprobs": top}
    top = None
    if candidates is not None:
        top = []
        for i, (t, lp, b) in enumerate(candidates):
            if i < k:  # chat keeps the first top_logprobs items of the sampled-first dict
                shown = vllm_text(t, script)
                top.append({"token": shown, "logprob": wire_lp(lp, True),
                            "bytes": utf8_bytes(shown) if script["token_ids"] else b})
    shown = vllm_text(tok.text, script)
    return {"token": shown, "logprob": wire_lp(tok.logprob, True),
            "bytes": utf8_bytes(shown) if script["token_ids"] else tok.bytes_list(),
            "top_logprobs": top}


def completion_top_map(tok, k, dialect, script):
    candidates = oa_candidates(tok, k, dialect == "vllm")
    if candidates is None:
        return None
    if dialect == "vllm":
        # Completions keep i <= logprobs keys: k or k+1 of them.
        items = [(vllm_text(t, script), wire_lp(lp, True))
                 for i, (t, lp, _) in enumerate(candidates) if i <= k]
    else:
        items = [(t, wire_lp(lp)) for t, lp, _ in candidates]
    top = {}
    for t, lp in items:
        top.setdefault(t, lp)
    return top


def reasoning_span(rtoks):
    """(lo, hi): the reasoning tokens whose text is the reasoning text, without a leading
    "<think>" token and a closing "</think>" token (and the whitespace tokens after it)."""
    lo = 1 if rtoks and rtoks[0].text == "<think>" else 0
    hi = len(rtoks)
    while hi > lo and not rtoks[hi - 1].text.strip():
        hi -= 1
    if hi > lo and rtoks[hi - 1].text == "</think>":
        return lo, hi - 1
    return lo, len(rtoks)


def reasoning_text(rtoks):
    lo, hi = reasoning_span(rtoks)
    return text_of(rtoks[lo:hi])


def reasoning_pieces(rtoks):
    """Per reasoning token, the piece of the reasoning text a stream sends with it ("" for
    the markers and the whitespace after the closing one)."""
    lo, hi = reasoning_span(rtoks)
    inner = pieces_of(rtoks[lo:hi])
    return [inner[i - lo] if lo <= i < hi else "" for i in range(len(rtoks))]


def fingerprint(entry, script, dialect):
    if entry["fingerprint"] is not None:
        return entry["fingerprint"]
    if script["fingerprint"] is not None:
        return script["fingerprint"]
    return "vllm-0.31.0-5c1a7e2d" if dialect == "vllm" else "fp_5c1a7e2d"


def model_of(gen):
    """The model this answer names: the entry's (a load balancer's backend), else the script's."""
    return gen["entry"]["model"] or gen["script"]["model"]


def together_chat(gen, stream):
    """Together's chat shapes (together-python src/together/types/chat_completions.py and
    common.py): whole answers carry the legacy parallel arrays with {token: logprob} maps; a
    stream chunk carries one token, its logprob a number in choices[].logprobs and its
    candidates in a choice-level top_logprobs map."""
    script, toks = gen["script"], gen["tokens"]
    text = text_of(toks)
    pieces = pieces_of(toks)
    base = {"id": f"nrScripted-{gen['n']}", "object": "chat.completion", "created": CREATED,
            "model": model_of(gen)}
    tops = [completion_top_map(t, gen["k"], "openai-chat", script) for t in toks]
    if not stream:
        logprobs = None
        if gen["logprobs"]:
            logprobs = {"tokens": [t.text for t in toks],
                        "token_logprobs": [wire_lp(t.logprob) for t in toks],
                        "token_ids": [token_id(t.text) for t in toks],
                        "top_logprobs": tops}
        choice = {"index": 0, "logprobs": logprobs, "seed": gen["seed"],
                  "finish_reason": gen["finish"],
                  "message": {"role": "assistant", "content": text, "tool_calls": []}}
        return dict(base, prompt=[], choices=[choice], usage=usage(len(toks), gen))
    chunk = dict(base, object="chat.completion.chunk")
    events = []
    for i, t in enumerate(toks):
        last = i == len(toks) - 1
        choice = {"index": 0, "text": pieces[i], "finish_reason": gen["finish"] if last else None,
                  "seed": gen["seed"] if last else None,
                  "delta": {"token_id": token_id(t.text), "role": "assistant",
                            "content": pieces[i], "tool_calls": None}}
        if gen["logprobs"]:
            choice["logprobs"] = wire_lp(t.logprob)
            choice["top_logprobs"] = tops[i]
        events.append(dict(chunk, choices=[choice],
                           usage=usage(len(toks), gen) if last else None))
    if not toks:
        events.append(dict(chunk, choices=[{"index": 0, "text": "", "logprobs": None,
                                            "finish_reason": gen["finish"], "delta": {}}],
                           usage=usage(0, gen)))
    return events


def tool_call_id(n, i, prefix="call_scripted"):
    return f"{prefix}{n}_{i}"


def json_pieces(arguments, size=8):
    """A tool call's JSON arguments in the pieces a stream sends them in (a few characters each,
    cut anywhere, as a model generates them)."""
    text = json.dumps(arguments)
    return [text[i:i + size] for i in range(0, len(text), size)]


def openai_tool_calls(calls, n):
    """message.tool_calls: the arguments as a JSON string, as OpenAI's chat API sends them."""
    return [{"id": tool_call_id(n, i), "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
            for i, call in enumerate(calls)]


def openai_tool_call_deltas(calls, n):
    """Streamed tool calls: per call, a delta with its id, type and name and empty arguments,
    then deltas carrying only its index and a piece of the arguments."""
    out = []
    for i, call in enumerate(calls):
        out.append({"index": i, "id": tool_call_id(n, i), "type": "function",
                    "function": {"name": call["name"], "arguments": ""}})
        out += [{"index": i, "function": {"arguments": piece}}
                for piece in json_pieces(call["arguments"])]
    return out


def openai_chat(gen, stream):
    if gen["script"]["together"]:
        return together_chat(gen, stream)
    d, script, toks, entry = gen["dialect"], gen["script"], gen["tokens"], gen["entry"]
    vllm = d == "vllm"
    fp = fingerprint(entry, script, d)
    text = text_of(toks)
    # An entry's tool calls: message.tool_calls (content null without text) and finish_reason
    # "tool_calls"; without them no tool_calls key at all, as in the reference payloads.
    calls = gen["tool_calls"]
    finish = "tool_calls" if calls else gen["finish"]

    def with_tools(message):
        if calls:
            message.update(content=text or None, tool_calls=openai_tool_calls(calls, gen["n"]))
        return message
    drops = entry["drop_logprobs_chunks"]
    base = {"id": f"chatcmpl-scripted{gen['n']}", "object": "chat.completion", "created": CREATED,
            "model": model_of(gen)}
    # A reasoning model's reasoning (see the module docstring): its text beside the answer and,
    # but in OpenAI's shape, its tokens' logprobs before the answer's.
    rtoks, shape = gen["reasoning"], script["reasoning_shape"]
    reasoning_key = "reasoning" if shape == "vllm" else "reasoning_content"
    reasoning_lp = gen["logprobs"] and shape != "openai"
    listed = rtoks + toks if reasoning_lp else toks
    n_all = len(rtoks) + len(toks)

    def with_reasoning(message):
        if rtoks:
            message[reasoning_key] = reasoning_text(rtoks)
        return message

    def reasoning_chunks(extra_logprobs, **fields):
        """One chunk per reasoning token: its piece of the reasoning text and its logprobs."""
        out = []
        for t, piece in zip(rtoks, reasoning_pieces(rtoks)):
            lp = (dict({"content": [chat_logprob_entry(t, gen["k"], d, script)]}, **extra_logprobs)
                  if reasoning_lp else None)
            out.append(dict(chunk, choices=[{"index": 0, "delta": {reasoning_key: piece},
                                             "logprobs": lp, "finish_reason": None}], **fields))
        return out
    if not stream:
        content = ([chat_logprob_entry(t, gen["k"], d, script) for t in listed]
                   if gen["logprobs"] else None)
        if vllm:
            message = with_tools(with_reasoning({
                "role": "assistant", "content": text, "refusal": None, "annotations": None,
                "audio": None, "function_call": None, "reasoning": None}))
            logprobs = {"content": content} if content is not None else None
            choice = {"index": 0, "message": message, "logprobs": logprobs,
                      "finish_reason": finish, "stop_reason": None, "token_ids": None,
                      "routed_experts": None}
            return dict(base, choices=[choice], service_tier=None, system_fingerprint=fp,
                        usage=dict(usage(n_all, gen), prompt_tokens_details=None
                                   if gen["entry"]["cached_tokens"] is None else
                                   {"cached_tokens": gen["entry"]["cached_tokens"]}),
                        prompt_logprobs=None, prompt_token_ids=None, prompt_text=None,
                        kv_transfer_params=None, ec_transfer_params=None, metrics=None)
        message = with_tools(with_reasoning({"role": "assistant", "content": text,
                                             "refusal": None, "annotations": []}))
        logprobs = {"content": content, "refusal": None} if content is not None else None
        choice = {"index": 0, "message": message, "logprobs": logprobs,
                  "finish_reason": finish}
        details = {"prompt_tokens_details": {"cached_tokens": cached_tokens(gen),
                                             "audio_tokens": 0},
                   "completion_tokens_details": {"reasoning_tokens": len(rtoks), "audio_tokens": 0,
                                                 "accepted_prediction_tokens": 0,
                                                 "rejected_prediction_tokens": 0}}
        return dict(base, choices=[choice], usage=dict(usage(n_all, gen), **details),
                    service_tier="default", system_fingerprint=fp)
    chunk = dict(base, object="chat.completion.chunk")
    pieces = pieces_of(toks)
    events = []
    if vllm:
        # vLLM: exclude_unset, several tokens per chunk, fingerprint on the final chunk only.
        events.append(dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                            "logprobs": None, "finish_reason": None}]))
        events += reasoning_chunks({})
        groups = [list(range(i, min(i + 2, len(toks)))) for i in range(0, len(toks), 2)]
        for gi, group in enumerate(groups):
            last = gi == len(groups) - 1 and not calls  # else a tool call chunk ends it
            lp = ({"content": [chat_logprob_entry(toks[i], gen["k"], d, script) for i in group]}
                  if gen["logprobs"] and gi not in drops else None)
            choice = {"index": 0, "delta": {"content": "".join(pieces[i] for i in group)},
                      "logprobs": lp, "finish_reason": finish if last else None,
                      "token_ids": None}
            event = dict(chunk, choices=[choice])
            if last:
                choice["stop_reason"] = None
                event["system_fingerprint"] = fp
            events.append(event)
        events += [dict(chunk, choices=[{"index": 0, "delta": {"tool_calls": [delta]},
                                         "logprobs": None, "finish_reason": None}])
                   for delta in openai_tool_call_deltas(calls, gen["n"])]
        if not groups or calls:
            events.append(dict(chunk, choices=[{"index": 0, "delta": {}, "logprobs": None,
                                                "finish_reason": finish,
                                                "stop_reason": None}], system_fingerprint=fp))
    else:
        chunk = dict(chunk, service_tier="default", system_fingerprint=fp)
        events.append(dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": "",
                                                                  "refusal": None},
                                            "logprobs": None, "finish_reason": None}],
                           obfuscation="q8Zk"))
        events += reasoning_chunks({"refusal": None}, obfuscation="r2Vd")
        for i, t in enumerate(toks):
            lp = ({"content": [chat_logprob_entry(t, gen["k"], d, script)], "refusal": None}
                  if gen["logprobs"] and i not in drops else None)
            events.append(dict(chunk, choices=[{"index": 0, "delta": {"content": pieces[i]},
                                                "logprobs": lp, "finish_reason": None}],
                               obfuscation="x1"))
        events += [dict(chunk, choices=[{"index": 0, "delta": {"tool_calls": [delta]},
                                         "logprobs": None, "finish_reason": None}],
                        obfuscation="t7")
                   for delta in openai_tool_call_deltas(calls, gen["n"])]
        events.append(dict(chunk, choices=[{"index": 0, "delta": {}, "logprobs": None,
                                            "finish_reason": finish}], obfuscation="Ab3"))
    if gen["include_usage"]:
        events.append(dict(chunk, choices=[], usage=usage(n_all, gen)))
    return events


def openai_completion(gen, stream):
    d, script, toks, entry = gen["dialect"], gen["script"], gen["tokens"], gen["entry"]
    vllm = d == "vllm"
    fp = fingerprint(entry, script, d)

    def logprobs_of(part, offset):
        if not gen["logprobs"]:
            return None
        offsets, pos = [], offset
        for t in part:
            offsets.append(pos)
            pos += len(t.text)
        return {"tokens": [vllm_text(t.text, script) if vllm else t.text for t in part],
                "token_logprobs": [wire_lp(t.logprob, vllm) for t in part],
                "top_logprobs": [completion_top_map(t, gen["k"], d, script) for t in part],
                "text_offset": offsets}

    base = {"id": f"cmpl-scripted{gen['n']}", "object": "text_completion", "created": CREATED,
            "model": model_of(gen)}
    if not stream:
        choice = {"index": 0, "text": text_of(toks), "logprobs": logprobs_of(toks, 0),
                  "finish_reason": gen["finish"]}
        if vllm:
            choice.update(stop_reason=None, token_ids=None, prompt_logprobs=None,
                          prompt_token_ids=None)
            return dict(base, choices=[choice], service_tier=None, system_fingerprint=fp,
                        usage=dict(usage(len(toks), gen), prompt_tokens_details=None),
                        kv_transfer_params=None)
        return dict(base, choices=[choice], usage=usage(len(toks), gen), system_fingerprint=fp)
    events, offset = [], 0
    pieces = pieces_of(toks)
    for i, t in enumerate(toks):
        last = i == len(toks) - 1
        lp = None if i in entry["drop_logprobs_chunks"] else logprobs_of([t], offset)
        choice = {"index": 0, "text": pieces[i], "logprobs": lp,
                  "finish_reason": gen["finish"] if last else None}
        offset += len(t.text)
        events.append(dict(base, choices=[choice], system_fingerprint=fp))
    if not toks:
        events.append(dict(base, choices=[{"index": 0, "text": "", "logprobs": None,
                                           "finish_reason": gen["finish"]}], system_fingerprint=fp))
    if gen["include_usage"]:
        events.append(dict(base, choices=[], usage=usage(len(toks), gen)))
    return events


def responses_logprob_entry(tok, k, with_bytes):
    """One token of output_text.logprobs; stream deltas carry no bytes."""
    def item(text, lp, raw):
        out = {"token": text, "logprob": wire_lp(lp)}
        if with_bytes:
            out["bytes"] = raw
        return out
    top = tok.top(k)
    entry = item(tok.text, tok.logprob, tok.bytes_list())
    entry["top_logprobs"] = None if top is None else [item(t, lp, b) for t, lp, b in top]
    return entry


def openai_responses(gen, stream):
    """POST /v1/responses as OpenAI answers it (tests/data/formats/openai_responses_*)."""
    toks, n = gen["tokens"], gen["n"]
    length = gen["finish"] == "length" and not gen["tool_calls"]  # calls: completed
    status = "incomplete" if length else "completed"
    message_id = f"msg_scripted{n}"
    part = {"type": "output_text", "annotations": [],
            "logprobs": ([responses_logprob_entry(t, gen["k"], True) for t in toks]
                         if gen["logprobs"] else []),
            "text": text_of(toks)}
    message = {"id": message_id, "type": "message", "status": status, "content": [part],
               "role": "assistant"}
    # A reasoning model (vLLM's Responses route): a reasoning item before the message, its
    # text in content[] as reasoning_text; logprobs stay on output_text alone.
    rtoks = gen["reasoning"]
    reasoning_id = f"rs_scripted{n}"
    reasoning_item = ({"id": reasoning_id, "type": "reasoning", "summary": [],
                       "content": [{"type": "reasoning_text", "text": reasoning_text(rtoks)}],
                       "encrypted_content": None, "status": None} if rtoks else None)
    # Tool calls: function_call items after the message (none without text).
    calls = [{"id": f"fc_scripted{n}_{i}", "type": "function_call", "status": "completed",
              "arguments": json.dumps(call["arguments"]), "call_id": tool_call_id(n, i),
              "name": call["name"]} for i, call in enumerate(gen["tool_calls"])]
    with_message = bool(toks) or not calls
    output = ([reasoning_item] if rtoks else []) + ([message] if with_message else []) + calls
    n_all = len(rtoks) + len(toks)
    response = {"id": f"resp_scripted{n}", "object": "response", "created_at": CREATED,
                "status": status, "background": False, "error": None,
                "incomplete_details": {"reason": "max_output_tokens"} if length else None,
                "instructions": None, "max_output_tokens": gen["max_tokens"],
                "model": model_of(gen), "output": output, "parallel_tool_calls": True,
                "previous_response_id": None, "store": False, "temperature": 0.0,
                "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
                "top_logprobs": gen["k"], "top_p": 1.0, "truncation": "disabled",
                "usage": {"input_tokens": prompt_tokens(gen),
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": n_all,
                          "output_tokens_details": {"reasoning_tokens": len(rtoks)},
                          "total_tokens": prompt_tokens(gen) + n_all},
                "user": None, "metadata": {}}
    if not stream:
        return response
    events = []

    def event(kind, **fields):
        events.append(dict({"type": kind}, **fields, sequence_number=len(events)))

    pending = dict(response, status="in_progress", output=[], incomplete_details=None,
                   usage=None)
    at = 1 if rtoks else 0  # the message's output_index
    where = {"item_id": message_id, "output_index": at, "content_index": 0}
    event("response.created", response=pending)
    event("response.in_progress", response=pending)
    if rtoks:
        inside = {"item_id": reasoning_id, "output_index": 0, "content_index": 0}
        event("response.output_item.added", output_index=0,
              item=dict(reasoning_item, content=[]))
        for piece in reasoning_pieces(rtoks):
            if piece:
                event("response.reasoning_text.delta", **inside, delta=piece)
        event("response.reasoning_text.done", **inside, text=reasoning_text(rtoks))
        event("response.output_item.done", output_index=0, item=reasoning_item)
    if with_message:
        event("response.output_item.added", output_index=at,
              item=dict(message, status="in_progress", content=[]))
        event("response.content_part.added", **where, part=dict(part, logprobs=[], text=""))
        drops = gen["entry"]["drop_logprobs_chunks"]
        for i, (t, piece) in enumerate(zip(toks, pieces_of(toks))):
            logprobs = ([responses_logprob_entry(t, gen["k"], False)]
                        if gen["logprobs"] and i not in drops else [])
            event("response.output_text.delta", **where, delta=piece, logprobs=logprobs,
                  obfuscation="k3Yb")
        event("response.output_text.done", **where, text=part["text"],
              logprobs=part["logprobs"])
        event("response.content_part.done", **where, part=part)
        event("response.output_item.done", output_index=at, item=message)
    # Each call: its item added with empty arguments, the arguments in pieces, then whole.
    for index, call in enumerate(calls, start=output.index(calls[0]) if calls else 0):
        on = {"item_id": call["id"], "output_index": index}
        event("response.output_item.added", output_index=index,
              item=dict(call, status="in_progress", arguments=""))
        for piece in json_pieces(json.loads(call["arguments"])):
            event("response.function_call_arguments.delta", **on, delta=piece,
                  obfuscation="f4Qz")
        event("response.function_call_arguments.done", **on, arguments=call["arguments"])
        event("response.output_item.done", output_index=index, item=call)
    # OpenAI ends a stream cut at the token limit with response.incomplete.
    event("response.incomplete" if length else "response.completed", response=response)
    return events


GEMINI_FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}


def gemini_candidate(tok, k):
    return {"token": tok.text, "tokenId": tok.id, "logProbability": wire_lp(tok.logprob)}


def gemini_logprobs(toks, k):
    """logprobsResult of some positions: the chosen token and the top k apart (the chosen one
    is listed among them only where the script's candidates hold it)."""
    top = []
    for t in toks:
        listed = t.top(k)
        top.append({} if listed is None else
                   {"candidates": [{"token": c, "tokenId": token_id(c), "logProbability": wire_lp(lp)}
                                   for c, lp, _ in listed]})
    chosen = [gemini_candidate(t, k) for t in toks]
    return {"topCandidates": top, "chosenCandidates": chosen}


def gemini(gen, stream):
    """POST /v1beta/models/{model}:generateContent or :streamGenerateContent?alt=sse as the
    Gemini API answers it (tests/data/formats/gemini_*)."""
    toks, n = gen["tokens"], gen["n"]
    # An answer that calls tools stopped to let them run: STOP, as Gemini's do.
    finish = ("STOP" if gen["tool_calls"] else
              GEMINI_FINISH.get(gen["finish"], str(gen["finish"]).upper()))
    # A thinking model with includeThoughts: a thought part before the answer's, counted in
    # thoughtsTokenCount; logprobsResult covers the answer.
    rtoks = gen["reasoning"]
    thought = {"text": reasoning_text(rtoks), "thought": True} if rtoks else None
    p = prompt_tokens(gen)
    usage_of = {"promptTokenCount": p, "candidatesTokenCount": len(toks),
                "totalTokenCount": p + len(toks) + len(rtoks),
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": p}]}
    if rtoks:
        usage_of["thoughtsTokenCount"] = len(rtoks)

    # Tool calls: functionCall parts after the text (none without text), the first carrying
    # the thoughtSignature Gemini 3 puts beside a call; no ids, as generateContent sends none.
    calls = [{"functionCall": {"name": call["name"], "args": call["arguments"]}}
             for call in gen["tool_calls"]]
    if calls:
        calls[0]["thoughtSignature"] = gemini_signature(n)

    def response(pieces, positions, last, thought_part=None, call_parts=()):
        text = "".join(pieces)
        parts = [] if thought_part is None else [thought_part]
        if (pieces or thought_part is None) and (text or not call_parts):
            parts.append({"text": text})
        parts += call_parts
        candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if gen["logprobs"] and pieces:  # a stream's thought-only chunk carries none
            candidate["logprobsResult"] = gemini_logprobs(positions, gen["k"])
        if last:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": usage_of,
                "modelVersion": model_of(gen), "responseId": f"scripted{n}"}
    if not stream:
        return response([text_of(toks)], toks, True, thought, calls)
    # Google's server sends a few tokens a chunk; two a chunk here; the calls whole in a last
    # chunk of their own.
    pieces = pieces_of(toks)
    drops = gen["entry"]["drop_logprobs_chunks"]
    chunks = [response([], [], False, thought)] if rtoks else []
    for start in range(0, len(toks) if calls else max(len(toks), 1), 2):
        last = not calls and start + 2 >= len(toks)
        chunk = response(pieces[start:start + 2], toks[start:start + 2], last)
        if len(chunks) - (1 if rtoks else 0) in drops:
            chunk["candidates"][0].pop("logprobsResult", None)
        chunks.append(chunk)
    if calls:
        chunks.append(response([], [], True, call_parts=calls))
    return chunks


def gemini_refusal(path, full_path, model):
    """(status, error) where a Gemini route names another model or streams without alt=sse
    (Google then sends a JSON array, which no client reading SSE expects); else None."""
    named = path[len("/v1beta/models/"):].rsplit(":", 1)[0]
    if named != model:
        return 404, error_body("gemini", 404, f"models/{named} is not found for API version "
                                              "v1beta", "not_found")
    query = full_path.split("?", 1)[1] if "?" in full_path else ""
    if path.endswith(":streamGenerateContent") and "alt=sse" not in query.split("&"):
        return 400, error_body("gemini", 400, "scripted: stream requested without alt=sse",
                               "invalid_request_error")
    return None


def llamacpp_settings(gen):
    return {"n_predict": gen["max_tokens"] or -1, "seed": gen["seed"], "temperature": 0.0,
            "top_k": 40, "top_p": 0.95, "min_p": 0.05, "n_probs": gen["k"] if gen["logprobs"] else 0,
            "post_sampling_probs": False,
            "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p",
                         "xtc", "temperature"]}


def cached_tokens(gen):
    """The prompt tokens the answer says its prompt cache served: the entry's, else 0."""
    return gen["entry"]["cached_tokens"] or 0


def timings(n, cached=0):
    return {"cache_n": cached, "prompt_n": 12, "prompt_ms": 21.4, "prompt_per_token_ms": 1.78,
            "prompt_per_second": 560.7, "predicted_n": n, "predicted_ms": 41.2,
            "predicted_per_token_ms": 13.7, "predicted_per_second": 72.8}


def llamacpp_prob_entry(t, gen):
    top = t.top(gen["k"])
    if gen["dialect"] == "llamacpp-old":
        return {"content": t.text,
                "probs": None if top is None else
                [{"tok_str": c, "prob": wire_prob(lp)} for c, lp, _ in top]}
    return {"id": t.id, "token": t.text, "bytes": t.bytes_list(), "logprob": wire_lp(t.logprob),
            "top_logprobs": None if top is None else
            [{"id": token_id(c), "token": c, "bytes": b, "logprob": wire_lp(lp)}
             for c, lp, b in top]}


def llamacpp_final(gen, content, with_probs):
    toks, old = gen["tokens"], gen["dialect"] == "llamacpp-old"
    final = {"content": content}
    if old:
        final.update(id_slot=0, stop=True, model=model_of(gen),
                     tokens_predicted=len(toks), tokens_evaluated=prompt_tokens(gen), prompt=gen["prompt"],
                     truncated=False, stopped_eos=gen["finish"] == "stop", stopped_word=False,
                     stopped_limit=gen["finish"] == "length", stopping_word="", tokens_cached=12)
    else:
        final = {"index": 0, "content": content, "tokens": [], "id_slot": 0, "stop": True,
                 "model": model_of(gen), "tokens_predicted": len(toks),
                 "tokens_evaluated": prompt_tokens(gen), "generation_settings": llamacpp_settings(gen),
                 "prompt": gen["prompt"], "has_new_line": False, "truncated": False,
                 "stop_type": "limit" if gen["finish"] == "length" else "eos",
                 "stopping_word": "", "tokens_cached": 12 + len(toks),
                 "timings": timings(len(toks), cached_tokens(gen))}
    if with_probs and gen["logprobs"]:
        final["completion_probabilities"] = [llamacpp_prob_entry(t, gen) for t in toks]
    return final


def llamacpp(gen, stream):
    toks = gen["tokens"]
    if not stream:
        return llamacpp_final(gen, text_of(toks), True)
    events = []
    pieces = pieces_of(toks)
    for i, t in enumerate(toks):
        if gen["dialect"] == "llamacpp-old":
            event = {"content": pieces[i], "stop": False, "id_slot": 0, "multimodal": False}
        else:
            event = {"index": 0, "content": pieces[i], "tokens": [], "stop": False, "id_slot": -1,
                     "tokens_predicted": i + 1,
                     "tokens_evaluated": prompt_tokens(gen)}
        if gen["logprobs"]:
            event["completion_probabilities"] = [llamacpp_prob_entry(t, gen)]
        events.append(event)
    events.append(llamacpp_final(gen, "", False))
    return events


def sglang(gen, stream):
    toks = gen["tokens"]

    def triple(text, lp):
        return [wire_lp(lp), token_id(text), text]

    def top_triples(t):
        top = t.top(gen["k"])
        return None if top is None else [triple(c, lp) for c, lp, _ in top]

    def payload(part, finished):
        meta = {"id": f"scripted{gen['n']}",
                "finish_reason": None, "prompt_tokens": prompt_tokens(gen), "reasoning_tokens": 0,
                "completion_tokens": len(part), "cached_tokens": cached_tokens(gen),
                "e2e_latency": 0.0873}
        if finished:
            meta["finish_reason"] = ({"type": "length", "length": len(part)}
                                     if gen["finish"] == "length"
                                     else {"type": "stop", "matched": 151645})
        if gen["logprobs"]:
            meta.update(input_token_logprobs=[],
                        output_token_logprobs=[triple(t.text, t.logprob) for t in part],
                        input_top_logprobs=[],
                        output_top_logprobs=[top_triples(t) for t in part])
        return {"text": text_of(part), "output_ids": [t.id for t in part],
                "meta_info": meta}

    if not stream:
        return payload(toks, True)
    # Streamed /generate answers are cumulative: each event repeats everything so far.
    events = [payload(toks[:i + 1], i == len(toks) - 1) for i in range(len(toks))]
    return events or [payload([], True)]


def ollama_entry(t, k):
    top = t.top(k)
    return {"token": t.text, "logprob": wire_lp(t.logprob), "bytes": t.bytes_list(),
            "top_logprobs": None if top is None else
            [{"token": c, "logprob": wire_lp(lp), "bytes": b} for c, lp, b in top]}


def ollama(gen, stream):
    toks, chat = gen["tokens"], gen["path"] == "/api/chat"
    # A thinking model: `thinking` beside the answer, logprobs over both (server/routes.go).
    rtoks = gen["reasoning"]

    # Tool calls (/api/chat): message.tool_calls with the arguments as an object, no id.
    calls = [{"function": {"index": i, "name": call["name"], "arguments": call["arguments"]}}
             for i, call in enumerate(gen["tool_calls"])] if chat else []

    def with_text(obj, text, thinking="", tool_calls=()):
        if chat:
            obj["message"] = {"role": "assistant", "content": text}
            if thinking:
                obj["message"]["thinking"] = thinking
            if tool_calls:
                obj["message"]["tool_calls"] = list(tool_calls)
        else:
            obj["response"] = text
            if thinking:
                obj["thinking"] = thinking
        return obj

    def final(text, thinking="", tool_calls=()):
        obj = with_text({"model": model_of(gen), "created_at": CREATED_AT}, text, thinking,
                        tool_calls)
        obj.update(done=True, done_reason="stop" if calls else gen["finish"],
                   total_duration=398765432,
                   load_duration=18765432, prompt_eval_count=prompt_tokens(gen), prompt_eval_duration=29876543,
                   eval_count=len(rtoks) + len(toks), eval_duration=88765432)
        if not chat:
            obj["context"] = [151644, 872, 198]
        return obj

    if not stream:
        obj = final(text_of(toks), reasoning_text(rtoks) if rtoks else "", calls)
        if gen["logprobs"]:
            obj["logprobs"] = [ollama_entry(t, gen["k"]) for t in rtoks + toks]
        return obj
    events = []
    steps = ([(t, "", piece) for t, piece in zip(rtoks, reasoning_pieces(rtoks))]
             + [(t, piece, "") for t, piece in zip(toks, pieces_of(toks))])
    for t, text, thinking in steps:
        obj = with_text({"model": model_of(gen), "created_at": CREATED_AT}, text, thinking)
        obj["done"] = False
        if gen["logprobs"]:
            obj["logprobs"] = [ollama_entry(t, gen["k"])]
        events.append(obj)
    if calls:  # whole, in a chunk of their own before the final one
        events.append(dict(with_text({"model": model_of(gen), "created_at": CREATED_AT}, "",
                                     tool_calls=calls), done=False))
    events.append(final(""))
    return events


def tgi(gen, stream):
    toks = gen["tokens"]
    finish = "length" if gen["finish"] == "length" else "eos_token"

    def tok(text, lp):
        return {"id": token_id(text), "text": text, "logprob": wire_lp(lp), "special": False}

    def top_of(t):
        top = t.top(gen["k"])
        return None if top is None else [tok(c, lp) for c, lp, _ in top]

    top_tokens = [top_of(t) for t in toks]
    if not stream:
        out = {"generated_text": text_of(toks)}
        if gen["logprobs"]:
            details = {"finish_reason": finish, "generated_tokens": len(toks), "seed": None,
                       "prefill": [], "tokens": [tok(t.text, t.logprob) for t in toks]}
            if gen["k"] > 0:
                details["top_tokens"] = top_tokens
            out["details"] = details
        return out
    events = []
    for i, t in enumerate(toks):
        last = i == len(toks) - 1
        event = {"index": i + 1, "token": tok(t.text, t.logprob)}
        if gen["logprobs"] and gen["k"] > 0:
            event["top_tokens"] = top_tokens[i]
        event["generated_text"] = text_of(toks) if last else None
        event["details"] = ({"finish_reason": finish, "generated_tokens": len(toks), "seed": None}
                            if last else None)
        events.append(event)
    return events


ANTHROPIC_SIGNATURE = "EqQBCgIYAhIMscriptedSignature"


def anthropic(gen, stream):
    """POST /v1/messages as Anthropic's Messages API answers it (tests/data/formats/anthropic_*):
    content blocks (a thinking block for an entry's reasoning, the answer's text block, one
    tool_use block per tool call), stop_reason, usage with the cache's two input counts; no
    logprobs, which the API has not. Streamed as typed events, one text_delta per token."""
    toks, rtoks, calls, n = gen["tokens"], gen["reasoning"], gen["tool_calls"], gen["n"]
    if calls:
        stop = "tool_use"
    else:
        stop = "max_tokens" if gen["finish"] == "length" else "end_turn"
    thinking = ({"type": "thinking", "thinking": reasoning_text(rtoks),
                 "signature": ANTHROPIC_SIGNATURE} if rtoks else None)
    # A tool call's answer holds its text block only where the model wrote some text first.
    text = {"type": "text", "text": text_of(toks)} if toks or not calls else None
    tools = [{"type": "tool_use", "id": tool_call_id(n, i, "toolu_scripted"),
              "name": call["name"], "input": call["arguments"]} for i, call in enumerate(calls)]
    content = [b for b in (thinking, text) if b is not None] + tools
    n_out = len(rtoks) + len(toks)
    usage_of = {"input_tokens": prompt_tokens(gen), "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cached_tokens(gen), "output_tokens": n_out,
                "service_tier": "standard"}
    message = {"id": f"msg_scripted{n}", "type": "message", "role": "assistant",
               "model": model_of(gen), "content": content, "stop_reason": stop,
               "stop_sequence": None, "usage": usage_of}
    if not stream:
        return message
    # message_start carries the input usage and an output count of 1, as Anthropic's does.
    start_usage = {k: v for k, v in usage_of.items() if k != "service_tier"}
    events = [{"type": "message_start",
               "message": dict(message, content=[], stop_reason=None,
                               usage=dict(start_usage, output_tokens=1))}]

    def start(index, block):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        if index == 0:
            events.append({"type": "ping"})  # where Anthropic's streams send theirs

    def delta(index, **fields):
        events.append({"type": "content_block_delta", "index": index, "delta": fields})

    for index, block in enumerate(content):
        if block["type"] == "thinking":
            start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in reasoning_pieces(rtoks):
                if piece:
                    delta(index, type="thinking_delta", thinking=piece)
            delta(index, type="signature_delta", signature=ANTHROPIC_SIGNATURE)
        elif block["type"] == "text":
            start(index, {"type": "text", "text": ""})
            for piece in pieces_of(toks):
                delta(index, type="text_delta", text=piece)
        else:
            # tool_use: the block starts with an empty input; the JSON comes in pieces, the
            # first one empty as Anthropic's streams send it.
            start(index, dict(block, input={}))
            for piece in [""] + json_pieces(block["input"]):
                delta(index, type="input_json_delta", partial_json=piece)
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": n_out}})
    events.append({"type": "message_stop"})
    return events


# ----------------------------------------------------------------------------------------------
# Request side: what each dialect asks for.

def as_int(value, default):
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def request_params(dialect, path, body, together=False):
    """(logprobs wanted, k, max_tokens, seed, include_usage) as the server would read them."""
    if path in ("/v1/chat/completions",) and together:
        # Together: `logprobs` is the candidate count itself; there is no top_logprobs.
        k = as_int(body.get("logprobs"), 0)
        want = k > 0
        max_tokens = as_int(body.get("max_tokens"), None)
        seed = body.get("seed")
    elif path in ("/v1/chat/completions",):
        k = as_int(body.get("top_logprobs"), 0)
        want = body.get("logprobs") is True
        if dialect in ("llamacpp", "llamacpp-old") and want and "top_logprobs" not in body:
            k = 20
        max_tokens = as_int(body.get("max_tokens", body.get("max_completion_tokens")), None)
        seed = body.get("seed")
    elif path == "/v1/responses":
        k = as_int(body.get("top_logprobs"), 0)
        include = body.get("include")
        want = isinstance(include, list) and "message.output_text.logprobs" in include
        max_tokens = as_int(body.get("max_output_tokens"), None)
        seed = body.get("seed")
    elif dialect == "anthropic":
        # No logprobs and no seed in the Messages API; max_tokens is required.
        k, want, seed = 0, False, None
        max_tokens = as_int(body.get("max_tokens"), None)
    elif dialect == "gemini":
        config = body.get("generationConfig") or {}
        k = as_int(config.get("logprobs"), 0)
        want = config.get("responseLogprobs") is True
        max_tokens = as_int(config.get("maxOutputTokens"), None)
        seed = config.get("seed")
    elif path == "/v1/completions":
        k = as_int(body.get("logprobs"), 0)
        want = "logprobs" in body and body.get("logprobs") is not None
        max_tokens = as_int(body.get("max_tokens"), 16)
        seed = body.get("seed")
    elif dialect in ("llamacpp", "llamacpp-old"):
        k = as_int(body.get("n_probs"), 0)
        want = k > 0
        max_tokens = as_int(body.get("n_predict"), None)
        seed = body.get("seed", 4294967295)
    elif dialect == "sglang":
        sp = body.get("sampling_params") or {}
        k = as_int(body.get("top_logprobs_num"), 0)
        want = body.get("return_logprob") is True
        max_tokens = as_int(sp.get("max_new_tokens"), 128)
        seed = sp.get("sampling_seed")
    elif dialect == "ollama":
        opts = body.get("options") or {}
        k = as_int(body.get("top_logprobs"), 0)
        want = body.get("logprobs") is True
        max_tokens = as_int(opts.get("num_predict"), None)
        seed = opts.get("seed")
    else:  # tgi
        params = body.get("parameters") or {}
        k = as_int(params.get("top_n_tokens"), 0)
        want = params.get("details") is True
        max_tokens = as_int(params.get("max_new_tokens"), 100)
        seed = params.get("seed")
    stream_options = body.get("stream_options") or {}
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    if max_tokens is not None and max_tokens < 0:
        max_tokens = None
    return want, k, max_tokens, seed, include_usage


# The builders whose API carries a reasoning model's reasoning apart from its answer.
PARSED_REASONING = (openai_chat, ollama, openai_responses, gemini, anthropic)


def completion_route(dialect, path):
    """The payload builder serving `path` in this dialect, or None (404)."""
    if dialect == "openai-responses":
        return openai_responses if path == "/v1/responses" else None
    if dialect == "anthropic":
        return anthropic if path == "/v1/messages" else None
    if dialect == "gemini":
        served = (":generateContent", ":streamGenerateContent")
        return gemini if path.startswith("/v1beta/models/") and path.endswith(served) else None
    if dialect in ("openai-chat", "openai-completions", "vllm"):
        return {"/v1/chat/completions": openai_chat, "/v1/completions": openai_completion}.get(path)
    # llama-server, SGLang and TGI (its Messages API) serve OpenAI's chat route beside their own.
    if dialect in ("llamacpp", "llamacpp-old"):
        return {"/completion": llamacpp, "/v1/chat/completions": openai_chat}.get(path)
    if dialect == "sglang":
        return {"/generate": sglang, "/v1/chat/completions": openai_chat}.get(path)
    if dialect == "ollama":
        return ollama if path in ("/api/chat", "/api/generate") else None
    if path == "/v1/chat/completions":
        return openai_chat
    return tgi if path in ("/generate", "/generate_stream") else None


def llamacpp_tags(model):
    """llama.cpp's one model-list handler (tools/server, May 2025 to April 2026): the Ollama
    "models" array beside the OpenAI "data" array, served at /v1/models and /api/tags alike."""
    return {"models": [{"name": model, "model": model, "modified_at": "", "size": "", "digest": "",
                        "type": "model", "description": "", "tags": [""],
                        "capabilities": ["completion"], "parameters": "",
                        "details": {"parent_model": "", "format": "gguf", "family": "",
                                    "families": [""], "parameter_size": "",
                                    "quantization_level": ""}}]}


def detection_get(dialect, path, script):
    """(status, JSON body) for the GETs an auto-detecting client sends."""
    model = script["model"]
    models = {"object": "list", "data": [{"id": model, "object": "model", "created": CREATED,
                                          "owned_by": "scripted"}]}
    if dialect in ("openai-chat", "openai-completions", "openai-responses"):
        if path == "/v1/models":
            return 200, models
    elif dialect == "vllm":
        if path == "/v1/models":
            models["data"][0].update(owned_by="vllm", root=model, parent=None, max_model_len=32768,
                                     permission=[])
            return 200, models
        if path == "/health":
            return 200, None
        if path == "/version":
            return 200, {"version": "0.31.0"}
    elif dialect in ("llamacpp", "llamacpp-old") and script["router"]:
        # llama-server without -m (tools/server/server-models.cpp): its own /props and list.
        if path == "/health":
            return 200, {"status": "ok"}
        if path == "/props":
            return 200, {"role": "router", "max_instances": 4, "models_autoload": True,
                         "model_alias": "llama-server", "model_path": "none",
                         "default_generation_settings": {"params": {}, "n_ctx": 0}}
        if path == "/v1/models" or (path == "/api/tags" and script["api_tags"]):
            return 200, {"data": [{"id": model, "aliases": [], "tags": [], "object": "model",
                                   "owned_by": "llamacpp", "created": CREATED,
                                   "status": {"value": "loaded", "args": ["llama-server"]}}],
                         "object": "list"}
    elif dialect in ("llamacpp", "llamacpp-old"):
        if path == "/health":
            return 200, {"status": "ok"}
        if path == "/props":
            # tools/server/server-context.cpp get_props (tests/data/formats/llamacpp_props.json).
            props = {"default_generation_settings": {"n_ctx": script["n_ctx"]},
                     "total_slots": script["total_slots"],
                     "model_path": f"models/{model}.gguf", "chat_template": ""}
            if script["build_info"] is not None:
                props["build_info"] = script["build_info"]
            return 200, props
        if path == "/v1/models" or (path == "/api/tags" and script["api_tags"]):
            models["data"][0].update(owned_by="llamacpp", meta={"n_vocab": 151936})
            if script["api_tags"]:
                models.update(llamacpp_tags(model))
            return 200, models
    elif dialect == "sglang":
        if path == "/get_model_info":
            return 200, {"model_path": model, "tokenizer_path": model, "is_generation": True}
        if path == "/health":
            return 200, None
        if path == "/v1/models":
            models["data"][0].update(owned_by="sglang", root=model, max_model_len=32768)
            return 200, models
        if path == "/api/tags" and script["api_tags"]:
            # sglang/srt/entrypoints/ollama/serving.py get_tags()
            return 200, {"models": [{"name": model, "model": model,
                                     "modified_at": "2025-12-01T10:00:01.654Z", "size": 0,
                                     "digest": "sha256:sglang" + "0" * 58,
                                     "details": {"format": "sglang", "family": model,
                                                 "parameter_size": "unknown"}}]}
    elif dialect == "ollama":
        if path == "/api/tags":
            return 200, {"models": [{"name": model, "model": model,
                                     "modified_at": CREATED_AT, "size": 5225388164,
                                     "digest": "500a1f067a9f", "details": {"format": "gguf",
                                                                          "family": "qwen3"}}]}
        if path == "/api/version":
            return 200, {"version": "0.13.0"}
        if path == "/v1/models":
            models["data"][0].update(owned_by="library")
            return 200, models
    elif dialect == "anthropic":
        if path == "/v1/models":
            # List Models (tests/data/formats/anthropic_models_list.json): newest first, so the
            # script's model heads it and an older one follows. No other GET is served: a
            # detector finds no /props, /health or OpenAI-shaped list to mistake it by.
            listed = [model] + [m for m in ("claude-opus-4-1-20250805",) if m != model]
            return 200, {"data": [{"type": "model", "id": m, "display_name": m,
                                   "created_at": "2025-09-29T00:00:00Z" if m == model
                                   else "2025-08-05T00:00:00Z"} for m in listed],
                         "has_more": False, "first_id": listed[0], "last_id": listed[-1]}
    elif dialect == "gemini":
        if path == "/v1beta/models":
            # models.list (tests/data/formats/gemini_models_list.json): an embedding-only model
            # first, so that a client picking a model must skip it; one page, no nextPageToken.
            return 200, {"models": [
                {"name": "models/embedding-001", "version": "001",
                 "displayName": "Embedding 001", "inputTokenLimit": 2048, "outputTokenLimit": 1,
                 "supportedGenerationMethods": ["embedContent"]},
                {"name": f"models/{model}", "version": "2.0", "displayName": model,
                 "inputTokenLimit": 1048576, "outputTokenLimit": 8192,
                 "supportedGenerationMethods": (["generateContent", "countTokens"]
                                                if script["gemini_generates"]
                                                else ["embedContent"])}]}
    else:  # tgi
        if path == "/info":
            return 200, {"model_id": model, "model_sha": None, "model_pipeline_tag": None,
                         "max_concurrent_requests": 128, "max_best_of": 2,
                         "max_stop_sequences": 4, "max_input_tokens": 4095,
                         "max_total_tokens": 4096, "validation_workers": 2,
                         "max_client_batch_size": 4, "router": "text-generation-router",
                         "version": "3.3.6", "sha": None, "docker_label": None}
        if path == "/health":
            return 200, None
        if path == "/v1/models":
            models["data"][0].update(owned_by="text-generation-inference")
            return 200, models
    return 404, None


GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


# Anthropic's error type is its status's (the API reference, "Errors"); 503 is not one of them.
ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def error_body(dialect, status, message, kind, code=None):
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": ANTHROPIC_ERRORS.get(status, "api_error"),
                                           "message": message},
                "request_id": "req_011CScriptedEndpoint0000"}
    if dialect == "gemini":  # google.rpc.Status inside "error"
        return {"error": {"code": status, "message": message,
                          "status": GOOGLE_STATUS.get(status, "UNKNOWN")}}
    if dialect == "tgi":
        return {"error": message, "error_type": kind}
    if dialect == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": kind, "param": None,
                      "code": status if code is None else code}}


def fault_error(dialect, fault, model):
    """(status, error body) of a scripted 404, 401 or 503, as each kind of server words it."""
    if dialect == "anthropic":
        # Anthropic's API: a model it does not serve is named after "model: "; overload is 529.
        return {"404": (404, error_body(dialect, 404, f"model: {model}", "not_found_error")),
                "401": (401, error_body(dialect, 401, "invalid x-api-key",
                                        "authentication_error")),
                "503": (529, error_body(dialect, 529, "Overloaded", "overloaded_error"))}[fault]
    if fault == "404":
        if dialect == "ollama":
            return 404, {"error": f"model '{model}' not found"}
        if dialect == "tgi":
            return 404, error_body(dialect, 404, f"Model {model} not found", "not_found")
        return 404, error_body(dialect, 404, f"The model `{model}` does not exist or you do not "
                                             "have access to it.", "invalid_request_error",
                               "model_not_found")
    if fault == "401":
        if dialect in ("ollama", "tgi"):
            return 401, error_body(dialect, 401, "unauthorized", "authentication_error")
        return 401, error_body(dialect, 401, "Incorrect API key provided.",
                               "invalid_request_error", "invalid_api_key")
    if dialect == "tgi":
        return 503, error_body(dialect, 503, "Model is overloaded", "overloaded")
    if dialect == "ollama":
        return 503, {"error": "server busy, please try again.  maximum pending requests exceeded"}
    return 503, error_body(dialect, 503, "The server is overloaded or not ready yet.",
                           "unavailable_error")


def encode_stream(dialect, events):
    if dialect in ("openai-responses", "anthropic"):  # typed events, no [DONE]
        return [b"event: " + e["type"].encode() + b"\ndata: " + dumps(e).encode() + b"\n\n"
                for e in events]
    if dialect == "ollama":
        return [dumps(e).encode() + b"\n" for e in events]
    if dialect == "gemini":  # whole responses as data, CRLF-framed, no [DONE]
        return [b"data: " + dumps(e).encode() + b"\r\n\r\n" for e in events]
    # TGI's router writes "data:" without the optional space; the SSE parser must accept both.
    prefix = b"data:" if dialect == "tgi" else b"data: "
    out = [prefix + dumps(e).encode() + b"\n\n" for e in events]
    if dialect in ("openai-chat", "openai-completions", "vllm", "sglang"):
        out.append(b"data: [DONE]\n\n")
    return out


def local_path(script, dialect, path):
    """The dialect's own path for a request path, or None where nothing is served: with a
    "base_path", only paths under it, and OpenAI's "/v1/..." routes as "<base>/..."."""
    base = script["base_path"]
    if not base:
        return path
    if path != base and not path.startswith(base + "/"):
        return None
    rest = path[len(base):]
    if dialect in ("openai-chat", "openai-completions", "vllm"):
        served = ("/models", "/chat/completions", "/completions")
        return "/v1" + rest if rest in served else None
    return rest


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-endpoint/1"

    def log_message(self, format, *args):  # noqa: A002 (base-class signature)
        pass

    @property
    def state(self):
        return self.server.state

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def log_request_item(self, body, **extra):
        item = {"t": time.time(), "method": self.command, "path": self.path,
                "in_flight": getattr(self, "in_flight", 0),
                "headers": [[k, v] for k, v in self.headers.items()],
                "body": body.decode("utf-8", "replace")}
        # The capability preflight's requests, which tests count apart from the audited ones.
        try:
            prompt = prompt_of(json.loads(item["body"]))
        except (ValueError, AttributeError):
            prompt = None
        item["preflight"] = isinstance(prompt, str) and PREFLIGHT_PROMPT in prompt
        item.update(getattr(self, "chain", None) or {})  # a completion POST's step and tools
        item.update(extra)
        self.state.record(item)

    def send_json(self, status, obj, extra_headers=()):
        data = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in extra_headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def origin_form(self):
        """The path of an absolute-form request target (one sent through a proxy)."""
        match = re.match(r"^https?://[^/]+(/.*)?$", self.path)
        if match:
            self.path = match.group(1) or "/"

    def do_GET(self):
        self.origin_form()
        self.in_flight = 0
        self.chain = None
        self.log_request_item(b"")
        path = local_path(self.state.script, self.state.dialect, self.path.split("?")[0])
        script = self.state.script
        if script["echo_headers_get"]:
            echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
            self.send_json(401, error_body(self.state.dialect, 401,
                                           f"Invalid credentials: {echoed}",
                                           "invalid_request_error"))
            return
        status, obj = (404, None) if path is None else detection_get(self.state.dialect, path,
                                                                      script)
        if path == "/v1/models" and not script["models_route"]:
            status = 404
        if (status == 200 and self.state.dialect == "anthropic"
                and not self.headers.get("anthropic-version")):
            # Anthropic's API refuses any request without its version, the model list too.
            self.send_json(400, error_body("anthropic", 400, "anthropic-version: header is "
                                                             "required", "invalid_request_error"))
            return
        if path == "/metrics" and script["metrics_hits"] is not None:
            with self.state.lock:
                hits = self.state.cache_hits
            data = metrics_text(hits, script["model"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if path == "/props" and status == 200 and script["props_echo_auth"]:
            # A hostile server repeating the key it was sent in what it says of itself.
            obj = dict(obj, build_info="b1-" + (self.headers.get("Authorization") or ""))
        if (status == 404 and script["method_not_allowed"] and path is not None
                and completion_route(self.state.dialect, path) is not None):
            # Starlette's router: the path exists, for another method.
            self.send_json(405, {"detail": "Method Not Allowed"}, [("Allow", "POST")])
            return
        if status == 404:
            obj = error_body(self.state.dialect, 404, f"no route for GET {self.path}", "not_found")
        self.send_json(status, obj)

    def do_POST(self):
        self.origin_form()
        self.chain = None  # set by answer_post once the body names a completion route
        if self.path.split("?")[0] in self.state.script["flush_routes"]:
            self.answer_flush()
            return
        # In flight from arrival until the answer starts: counted down before the first byte of
        # the response, so a client reusing the slot can never be seen as one more.
        with self.state.lock:
            self.state.in_flight += 1
            self.in_flight = self.state.in_flight
        self.counted = True
        self.flight, self.after_flush = self.state.open_request()
        try:
            self.answer_post()
        finally:
            self.leave_flight()

    def leave_flight(self):
        if self.counted:
            self.counted = False
            with self.state.lock:
                self.state.in_flight -= 1
            self.state.close_request(self.flight)

    def answer_flush(self):
        raw = self.read_body()
        self.in_flight = 0
        if self.state.script["flush_refuses"]:
            # vLLM's /reset_prefix_cache when it could not reset: 200 and a refusal in JSON.
            self.log_request_item(raw, outcome="flush_refused")
            self.send_json(200, {"success": False})
            return
        n = self.state.flush()
        self.log_request_item(raw, outcome="flush", flush=n)
        data = b"Cache flushed.\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def choose_variant(self, key, step):
        """(variant, step list) of the prompt's entry lists answering this request (after its
        hold): "steps" (the list of its chain step, the last one beyond them) before the rest;
        the step list is None for the others."""
        variants = self.state.variants(key)
        if variants["hold_ms"]:
            time.sleep(variants["hold_ms"] / 1000.0)
        if variants["steps"]:
            return "steps", min(step, len(variants["steps"]) - 1)
        if self.after_flush and variants["cold"]:
            return "cold", None
        with self.state.lock:
            overlapped = self.flight["overlapped"]
            beside_sampled = self.flight["beside_sampled"]
        if beside_sampled and variants["sampled_busy"]:
            return "sampled_busy", None
        return ("busy" if overlapped and variants["busy"] else "entries"), None

    def answer_post(self):
        raw = self.read_body()
        dialect = self.state.dialect
        path = local_path(self.state.script, dialect, self.path.split("?")[0])
        if path is None:
            path = f"{self.path.split('?')[0]} (outside {self.state.script['base_path']})"
        try:
            body = json.loads(raw.decode("utf-8"))
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self.log_request_item(raw, outcome="bad_request")
            self.send_json(400, error_body(dialect, 400, "request body is not a JSON object",
                                           "invalid_request_error"))
            return
        builder = completion_route(dialect, path)
        step, tool_results = chain_of(builder, body)
        if builder is not None:
            self.chain = {"step": step, "tool_results": tool_results, "tools": body.get("tools")}
        # Refusals at validation, before the request runs: no entry, no sampling, no cache.
        if builder is not None and dialect == "anthropic":
            refusal = anthropic_refusal(self.headers, body)
            if refusal is not None:
                self.refuse(raw, "bad_request", refusal)
                return
        # Ollama's results name no call, Gemini's only a call that had an id (this endpoint's
        # have none): an id they do name was never issued.
        unnamed = builder in (gemini, ollama)
        unknown = self.state.unknown_ids(r["id"] for r in tool_results
                                         if not (unnamed and r["id"] is None))
        if unknown:
            # A tool-result turn answering a call this endpoint never made.
            self.refuse(raw, "bad_request", unknown_tool_call(dialect, unknown[0]),
                        unknown_tool_call_id=unknown[0])
            return
        unsigned = self.state.unknown_ids(gemini_signatures(body)) if builder is gemini else []
        if unsigned:
            # Gemini 3: a model turn's calls must carry the signature their answer gave them.
            message = ("Function call is missing a thought_signature in functionCall parts."
                       if unsigned[0] is None else "Corrupted thought signature.")
            self.refuse(raw, "bad_request", error_body(dialect, 400, message, "invalid_argument"),
                        thought_signature=unsigned[0])
            return
        refused = (param_refusal(dialect, path, body, self.state.script["refuse_params"])
                   if builder is not None else None)
        if refused is not None:
            self.refuse(raw, "refused", refused[1], refused=refused[0])
            return
        if body_samples(body):
            self.state.mark_sampled(self.flight)
        if dialect in ("llamacpp", "llamacpp-old") and body.get("cache_prompt") is False:
            # llama-server leaves its prompt cache out of this request: as cold as after a flush.
            self.after_flush = True
        hits = self.state.script["metrics_hits"]
        if hits is not None and completion_route(dialect, path) is not None:
            with self.state.lock:
                self.state.cache_hits += hits["cold"] if self.after_flush else hits["warm"]
        if path == "/v1/embeddings" and self.state.script["embeddings"]:
            inputs = body.get("input")
            inputs = inputs if isinstance(inputs, list) else [inputs]
            self.log_request_item(raw, outcome="embeddings")
            self.send_json(200, {"object": "list", "model": body.get("model") or "scripted-embed",
                                 "data": [{"object": "embedding", "index": i,
                                           "embedding": [1.0, 0.0]}
                                          for i in range(len(inputs))]})
            return
        if builder is not None and self.state.script["router"] and not isinstance(
                body.get("model"), str):
            # tools/server/server-models.cpp: a router cannot tell which child to proxy to.
            self.log_request_item(raw, outcome="bad_request")
            self.send_json(400, error_body(dialect, 400, "model name is missing from the request",
                                           "invalid_request_error"))
            return
        limit = self.state.script["context_limit"]
        words = len((prompt_of(body) or "").split())
        if builder is not None and limit is not None and words >= limit:
            # tools/server/server-context.cpp: a prompt of at least n_ctx tokens is refused before
            # any is computed; server-task.cpp adds n_prompt_tokens and n_ctx to the error.
            self.log_request_item(raw, outcome="context_refused")
            refusal = error_body(dialect, 400, f"request ({words} tokens) exceeds the available "
                                               f"context size ({limit} tokens), try increasing it",
                                 "exceed_context_size_error", 400)
            if isinstance(refusal.get("error"), dict):
                refusal["error"].update(n_prompt_tokens=words, n_ctx=limit)
            self.send_json(400, refusal)
            return
        if builder is not None and dialect == "gemini":
            refusal = gemini_refusal(path, self.path, self.state.script["model"])
            if refusal is not None:
                self.log_request_item(raw, outcome="bad_request")
                self.send_json(*refusal)
                return
        if builder is openai_chat and self.refuse_as_reasoning_model(raw, body):
            return
        key = self.state.match(prompt_of(body))
        fallback = key is None and self.state.script["fallback"] is not None
        if builder is None or (key is None and not fallback):
            self.log_request_item(raw, outcome="not_found", prompt=key)
            what = f"no route for POST {path}" if builder is None else "no script for this prompt"
            self.send_json(404 if builder is None else 400,
                           error_body(dialect, 400, what, "invalid_request_error"))
            return
        variant, listed = self.choose_variant(key, step)
        seed = (seed_honoured(dialect, path, body) if self.state.script["seeded"] else None)
        if seed is None:
            index, entry, n = self.state.next_entry(key, variant, listed or 0)
        else:
            if variant != "steps":
                variant = "entries"  # a seeded sampler answers by its seed alone
            index, entry, n = self.state.entry_at(key, seed, variant, listed or 0)
        fault = entry["fault"]
        self.log_request_item(raw, prompt=key, entry=index, variant=variant,
                              fallback=fallback, outcome=fault or "completion",
                              **({} if seed is None else {"seeded": seed}),
                              **({} if listed is None else {"steps_list": listed}))
        if entry["delay_ms"]:
            time.sleep(entry["delay_ms"] / 1000.0)
        self.leave_flight()
        stream = (body.get("stream") is True or path == "/generate_stream"
                  or path.endswith(":streamGenerateContent"))
        if dialect == "ollama" and "stream" not in body:
            stream = True  # Ollama streams unless told not to
        want, k, max_tokens, seed, include_usage = request_params(
            dialect, path, body, self.state.script["together"])
        echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
        if fault == "500":
            message = "scripted internal error"
            if entry["echo_headers"]:
                message += f"; request headers: {echoed}"
            self.send_json(500, error_body(dialect, 500, message, "InternalServerError"))
            return
        if fault == "429":
            extra = [] if entry["retry_after"] is None else [("Retry-After",
                                                               str(entry["retry_after"]))]
            self.send_json(429, error_body(dialect, 429, "Rate limit reached (scripted)",
                                           "rate_limit_exceeded"), extra)
            return
        if fault in ("404", "401", "503"):
            model = body.get("model") if isinstance(body.get("model"), str) else None
            status, error = fault_error(dialect, fault, model or self.state.script["model"])
            if entry["echo_headers"]:
                error = error_body(dialect, status, f"Invalid credentials: {echoed}",
                                   "invalid_request_error")
            extra = ([("Retry-After", str(entry["retry_after"]))]
                     if fault == "503" and entry["retry_after_given"]
                     and entry["retry_after"] is not None else [])
            self.send_json(status, error, extra)
            return
        if fault == "oversize":
            self.send_oversize(entry["oversize_bytes"])
            return
        if fault == "302":
            self.send_json(302, None, [] if entry["location"] is None
                           else [("Location", entry["location"])])
            return
        tokens = entry["tokens"] or []
        finish = entry["finish_reason"]
        if max_tokens is not None and len(tokens) > max_tokens:
            tokens, finish = tokens[:max_tokens], "length"
        if entry["echo_headers"]:
            half = len(echoed) // 2
            tokens = tokens + [Token(text, lp, [(text, lp, None), ("~", lp - 1.0, None)])
                               for text, lp in ((echoed[:half], -0.25), (echoed[half:], -0.5))]
        reasoning = entry["reasoning"] if entry["tokens"] is not None else []
        if reasoning and builder not in PARSED_REASONING:
            tokens, reasoning = reasoning + tokens, []  # raw text: the generation as it came
        gen = {"dialect": dialect, "script": self.state.script, "entry": entry, "tokens": tokens,
               "reasoning": reasoning, "tool_calls": entry["tool_calls"],
               "finish": finish, "k": k,
               "logprobs": (want and fault != "no_logprobs"
                            and self.state.script["no_logprobs_model"] is None),
               "max_tokens": max_tokens, "seed": seed, "include_usage": include_usage,
               "prompt": prompt_of(body), "path": path, "n": n}
        payload = builder(gen, stream)
        if fault != "malformed":
            # Before the answer leaves: the next step may arrive as soon as it is read.
            self.state.issue(issued_for(builder, self.state.script, n, entry["tool_calls"]))
        if fault == "malformed":
            self.send_malformed(stream)
        elif stream:
            self.send_stream(encode_stream(dialect, payload), fault)
        else:
            self.send_whole(dumps(payload).encode(), fault)

    def refuse(self, raw, outcome, error, **extra):
        """Answers 400 `error` to a completion POST refused at validation: it consumes no entry
        and, as a server that never ran it, leaves the cache as it was (a flush before it still
        makes the next completion request the first one after the flush)."""
        if self.after_flush:
            self.after_flush = False
            with self.state.lock:
                self.state.flushed = True
        self.log_request_item(raw, outcome=outcome, **extra)
        self.send_json(400, error)

    def refuse_as_reasoning_model(self, raw, body):
        """OpenAI's reasoning models: 400 for a chat request naming max_tokens (the current
        spec wants max_completion_tokens) and, with "no_logprobs_model": "reject", for one
        asking for logprobs; the bodies are OpenAI's unsupported_parameter errors."""
        script = self.state.script
        param = None
        if script["max_completion_tokens"] and "max_tokens" in body:
            param, extra = "max_tokens", " Use 'max_completion_tokens' instead."
        elif script["no_logprobs_model"] == "reject" and (
                "logprobs" in body or "top_logprobs" in body):
            param, extra = "logprobs" if "logprobs" in body else "top_logprobs", ""
        if param is None:
            return False
        self.log_request_item(raw, outcome="bad_request")
        message = f"Unsupported parameter: '{param}' is not supported with this model.{extra}"
        self.send_json(400, {"error": {"message": message, "type": "invalid_request_error",
                                       "param": param, "code": "unsupported_parameter"}})
        return True

    def send_whole(self, data, fault):
        if fault == "truncate":
            data = data[:len(data) // 2]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fault == "close":
            self.wfile.write(data[:len(data) // 2])
            self.abort_connection()
            return
        self.wfile.write(data)

    def send_stream(self, chunks, fault):
        self.send_response(200)
        ctype = "application/x-ndjson" if self.state.dialect == "ollama" else "text/event-stream"
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if fault in ("close", "truncate"):
            chunks = chunks[:max(1, len(chunks) // 2)]
        for piece in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        if fault == "close":
            self.abort_connection()
            return
        self.wfile.write(b"0\r\n\r\n")

    def send_malformed(self, stream):
        if stream and self.state.dialect == "anthropic":  # a typed event, never [DONE]
            self.send_stream([b'event: message_start\ndata: {"type": "message_start", not json'
                              b'\n\n'], None)
        elif stream:
            line = b'{"choices": [ not json' + (b"\n" if self.state.dialect == "ollama" else b"")
            chunks = ([line] if self.state.dialect == "ollama"
                      else [b"data: " + line + b"\n\n", b"data: [DONE]\n\n"])
            self.send_stream(chunks, None)
        else:
            data = b'{"choices": [ this is not json'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def send_oversize(self, size):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b'{"padding":"' + b"x" * (1 << 20)
        try:
            sent = 0
            while sent < size:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
                piece = b"x" * (1 << 20)
            tail = b'"}'
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(tail), tail))
        except OSError:
            pass  # the client gave up at its cap: the point of this fault
        self.close_connection = True

    def abort_connection(self):
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's listen backlog is 5: a burst of more new connections than that loses SYNs,
    # and the kernel retries them a second later, so the burst would not arrive at once.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client that hung up (timeouts, caps) is expected here; keep stderr quiet for it.
        if isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--dialect", choices=DIALECTS, default="openai-chat")
    parser.add_argument("--log", help="JSON Lines file receiving every request")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError, ScriptError) as error:
        print(f"scripted_endpoint: {error}", file=sys.stderr)
        return 2
    server = Server(("127.0.0.1", args.port), Handler)
    server.state = State(script, args.dialect, args.log)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
