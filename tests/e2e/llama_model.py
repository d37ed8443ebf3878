"""A small llama-architecture GGUF model with seeded random weights and a real byte-level BPE
tokenizer, for the end-to-end scenario against upstream llama-server (test_llama_cpp.py).

No weights can be downloaded where the tests run, and none are needed: the audit measures how
the server's arithmetic moves, which random weights show as well as trained ones. What a real
model must have is here: the llama tensor layout llama.cpp loads, a GPT-2 style byte-level BPE
vocabulary (256 byte tokens, merges learned from a fixed English text, ChatML control tokens) so
that prompts tokenize as they would on a real server, and a ChatML chat template so that chat
suites go through the server's template.

Two choices keep the server's own checks quiet. The output rows of byte tokens that are not
printable ASCII (a lone UTF-8 continuation byte) and of the control tokens are zero: their logit
is exactly 0 while the largest of the others is well above it, so greedy decoding never emits
invalid UTF-8 (llama.cpp's chat route answers 500 to that) and never ends early, and every
completion runs to max_tokens. The random scale gives logits a spread of a few nats, so that
some positions are near ties, where batching noise can flip the argmax.

    python3 tests/e2e/llama_model.py --gguf-py DIR --out model.gguf [--type f32|f16|q8_0] [--seed N]
"""

import argparse
import collections
import re
import sys

# Words the merges are learned from: everyday English, so that the prompts of the test suites
# tokenize into a few multi-byte tokens each, as they would with a real vocabulary.
_CORPUS = """
The quick brown fox jumps over the lazy dog. A model reads the prompt and writes the answer one
token at a time. When two tokens are nearly tied, a small change in the arithmetic can flip the
choice, and the rest of the answer follows the new path. Servers batch requests together, and
the order of additions inside a matrix product depends on the batch. Reproducible results need
the same numbers every time. Please answer the question in one short sentence. What is the
capital of France? Explain why the sky is blue. Write a haiku about the sea. List three prime
numbers. Translate hello into German. The weather today is sunny with a light wind from the
west. Our engine returns the log probability of every token it chooses and of its runner up.
Summarize the following text for a busy reader. Count from one to ten. Describe a cat, a house
and a tree. The system prompt says you are a helpful assistant. User and assistant take turns.
""".split()

_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def byte_to_unicode():
    """GPT-2's reversible map from bytes to printable characters (the byte-level BPE alphabet)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars)))


def learn_merges(count):
    """Byte-pair merges learned greedily from _CORPUS (each word with its leading space), ties
    broken by the pair itself so that the vocabulary is the same on every machine."""
    alphabet = byte_to_unicode()
    words = collections.Counter()
    for i, word in enumerate(_CORPUS):
        text = (" " if i else "") + word
        for piece in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+", text):
            words[tuple(alphabet[b] for b in piece.encode())] += 1
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        for symbols, n in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
        merges.append(best)
        merged = collections.Counter()
        for symbols, n in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return merges


def vocabulary(merge_count=250):
    """(tokens, token types, merges, ids of the tokens whose output row is zero)."""
    alphabet = byte_to_unicode()
    tokens = [alphabet[b] for b in range(256)]
    merges = learn_merges(merge_count)
    for left, right in merges:
        tokens.append(left + right)
    silent = [b for b in range(256) if not (0x20 <= b < 0x7f or b == 0x0a)]
    types = [1] * len(tokens)  # NORMAL
    for name in _SPECIAL:
        silent.append(len(tokens))
        tokens.append(name)
        types.append(3)  # CONTROL
    return tokens, types, [f"{a} {b}" for a, b in merges], silent


def write_model(gguf_py, out, weight_type="f32", seed=1234, n_embd=64, n_layer=2, n_head=4,
                n_head_kv=2, n_ff=128, n_ctx=2048):
    sys.path.insert(0, gguf_py)
    import numpy as np
    import gguf

    tokens, types, merges, silent = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(seed)
    quantized = gguf.GGMLQuantizationType.Q8_0

    def matrix(rows, cols, scale):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def add_matrix(name, values):
        # The weights are drawn the same way for every type, so the three models are one model
        # stored three ways.
        if weight_type == "q8_0":
            writer.add_tensor(name, gguf.quants.quantize(values, quantized), raw_dtype=quantized)
        else:
            writer.add_tensor(name, values.astype(np.float16 if weight_type == "f16" else
                                                  np.float32))

    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("llmrepro-test-llama")
    writer.add_file_type({"f32": 0, "f16": 1, "q8_0": 7}[weight_type])
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_vocab_size(n_vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(_CHAT_TEMPLATE)

    head_dim = n_embd // n_head
    add_matrix("token_embd.weight", matrix(n_vocab, n_embd, 1.0))
    for layer in range(n_layer):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(prefix + "attn_q.weight", matrix(n_embd, n_embd, n_embd ** -0.5))
        add_matrix(prefix + "attn_k.weight",
                          matrix(n_head_kv * head_dim, n_embd, n_embd ** -0.5))
        add_matrix(prefix + "attn_v.weight",
                          matrix(n_head_kv * head_dim, n_embd, n_embd ** -0.5))
        add_matrix(prefix + "attn_output.weight", matrix(n_embd, n_embd, n_embd ** -0.5))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        add_matrix(prefix + "ffn_gate.weight", matrix(n_ff, n_embd, n_embd ** -0.5))
        add_matrix(prefix + "ffn_up.weight", matrix(n_ff, n_embd, n_embd ** -0.5))
        add_matrix(prefix + "ffn_down.weight", matrix(n_embd, n_ff, n_ff ** -0.5))
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    output = matrix(n_vocab, n_embd, 0.35)
    output[silent, :] = 0
    add_matrix("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return n_vocab


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf-py", required=True, help="the llama.cpp tarball's gguf-py folder")
    parser.add_argument("--out", required=True)
    parser.add_argument("--type", choices=["f32", "f16", "q8_0"], default="f32")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    n_vocab = write_model(args.gguf_py, args.out, args.type, args.seed)
    print(f"{args.out}: llama, {n_vocab} tokens, {args.type}")


if __name__ == "__main__":
    main()
