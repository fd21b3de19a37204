#!/usr/bin/env python3
"""lockstep against an independent implementation (llama.cpp's or ik_llama.cpp's llama-server).

For each make-model shape: writes the random-weight model with `lockstep make-model`, loads it in the peer's
llama-server (f32 KV, one slot, the model's context so Phi-3's longrope picks the same factors), and asks it
for several prompts (token ids, no BOS) for 64 greedy tokens with the full log-softmax at every step. The
peer's outputs are written as golden JSON files (tests/model/testdata/peer/<shape>.json); the model tests
(tests/model/peer_golden_test.cc) regenerate the same file and compare lockstep's last-position
log-softmax (to the tolerance stated there) and its 64 greedy tokens. This script then runs that test on
the files it wrote.

Windowed llama files (tiny-mistral-swa) go to the peer as their phi3 twin (scripts/gguf_twin.py): llama.cpp
applies sliding windows to phi3 files only.

It builds nothing and downloads nothing: it takes the paths of the peer's llama-server and of a lockstep
build directory.

Quantized weights: `--type q5_k_m` (any make-model type) has lockstep's quantizer write the file both sides
read (the golden is then <shape>-<type>.json and, being reproducible, may be committed); `--llama-quantize
.../llama-quantize --llama-quantize-type Q5_K_M` has make-model write --type (f32 or f16) and llama.cpp's
quantizer convert it, and both sides read that file (the golden names it by path: for checking now, not for
committing). Their activations are quantized differently (lockstep: 32-element blocks with power-of-two
scales; llama.cpp: Q8_K, 256 elements with max/127 scales), so `--tolerance` states the allowed difference.

  scripts/compare_peer.py --peer /work/peers/llama.cpp/build/bin/llama-server --shapes tiny-gemma2,tiny-phi3
  scripts/compare_peer.py --peer .../llama-server --shapes all-llama.cpp --update   # rewrite the goldens
"""
import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_twin  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "model", "testdata", "peer")
# Shape -> the peer that checks it (mainline for what it runs, ik_llama.cpp for the newer architectures) and
# whether it goes as its phi3 twin.
SHAPES = {
    "tiny-nemo": ("llama.cpp", False),
    "tiny-mistral-swa": ("llama.cpp", True),
    "tiny-phi3": ("llama.cpp", False),
    "tiny-phi3.5": ("llama.cpp", False),
    "tiny-gemma2": ("llama.cpp", False),
    "tiny-qwen2": ("llama.cpp", False),
    "tiny-qwen3": ("ik_llama.cpp", False),
    "tiny-gemma3": ("ik_llama.cpp", False),
    "tiny-phi4-mini": ("llama.cpp", False),
    "tiny-qwen3moe": ("ik_llama.cpp", False),
    "tiny-smollm3": ("ik_llama.cpp", False),
    "tiny-granite": ("llama.cpp", False),
    "tiny-granitemoe": ("llama.cpp", False),
    "tiny-olmo2": ("llama.cpp", False),
    # ik_llama.cpp 8337e4cd3 hard-codes MiniCPM's multipliers (12, 1.4) and reads another key for the logit
    # one; mainline reads the three keys the converter writes, as lockstep does.
    "tiny-minicpm": ("llama.cpp", False),
    "tiny-exaone": ("llama.cpp", False),  # not in ik_llama.cpp 8337e4cd3
    "tiny-qwen2moe": ("llama.cpp", False),
    # Mixtral (llama with experts) goes to mainline: ik_llama.cpp 8337e4cd3's llama graph adds the normed FFN
    # input instead of the residual after its experts (build_llama.cpp passes the normed tensor to
    # llm_build_moe_ffn with add_input).
    "tiny-mixtral": ("llama.cpp", False),
    # gpt-oss: newer than llama.cpp c392e50.
    "tiny-gpt-oss": ("ik_llama.cpp", False),
    "tiny-glm4": ("ik_llama.cpp", False),  # GLM-4-0414 and ERNIE 4.5 came after llama.cpp c392e50
    "tiny-ernie4.5": ("ik_llama.cpp", False),
    "tiny-qwen2.5vl": ("ik_llama.cpp", False),  # the text of vision-language files
    "tiny-qwen3vl": ("ik_llama.cpp", False),
    "tiny-qwen3vlmoe": ("ik_llama.cpp", False),
    # mistral3 without YaRN or temperature: ik_llama.cpp 8337e4cd3 keeps ggml's YaRN magnitude where
    # transformers (and llama.cpp since its PR 17945) cancel it, and takes the temperature at position + 1.
    "tiny-mistral3": ("ik_llama.cpp", False),
    # deepseek2 with -mla 0 (--peer-flags '-fa off -mla 0'): ik_llama.cpp then stores each head's decompressed
    # K and V in its f16 cache, as lockstep does; its default -mla 3 keeps the latent instead (other
    # roundings).
    "tiny-deepseek2": ("ik_llama.cpp", False),
    "tiny-deepseek3": ("ik_llama.cpp", False),  # query LoRA, sigmoid scores with exp_probs_b, YaRN
    # tiny-deepseek3's weights in llama.cpp's split layout (attn_k_b / attn_v_b, head_count_kv 1): no peer.
    # ik_llama.cpp 8337e4cd3 converts split files to its own only at DeepSeek's widths (key_length 576,
    # value_length 512, 64 rope dims) and aborts on others; llama.cpp c392e50 predates the split. Its logits
    # equal its fused twin's bit for bit (tests/model/mla_test.cc), and the twin is checked above.
    "tiny-deepseek3-split": (None, False),
    # Group-limited routing: no peer. ik_llama.cpp 8337e4cd3 groups experts for bailingmoe2/3 only (its
    # deepseek2 routing ignores expert_group_count); llama.cpp c392e50 predates groups. The reference forward
    # pass checks it (tests/model/reference_test.cc); tiny-bailingmoe2's golden (ik with -ger) checks the same
    # group-limited sigmoid routing against the peer.
    "tiny-deepseek3-grouped": (None, False),
    "tiny-gemma4": ("ik_llama.cpp", False),  # Gemma 4 came after llama.cpp c392e50
    "tiny-qwen35": ("ik_llama.cpp", False),  # Qwen3.5 (Gated DeltaNet) came after llama.cpp c392e50
    "tiny-qwen35moe": ("ik_llama.cpp", False),
    "tiny-qwen3next": ("ik_llama.cpp", False),  # Qwen3-Next: the fused ssm_in / ssm_ba, grouped heads
    "tiny-glm4moe": ("ik_llama.cpp", False),  # GLM-4.5: DeepSeek's experts under llama's attention
    "tiny-glm4.6": ("ik_llama.cpp", False),  # with Q/K norms
    "tiny-seed-oss": ("ik_llama.cpp", False),
    "tiny-minimax-m2": ("ik_llama.cpp", False),
    "tiny-ernie4.5-moe": ("ik_llama.cpp", False),
    "tiny-dots1": ("ik_llama.cpp", False),
    # ik_llama.cpp groups bailingmoe2's experts only with -ger: compare with --peer-flags "-fa off -ger".
    "tiny-bailingmoe2": ("ik_llama.cpp", False),
    "tiny-cohere2": ("ik_llama.cpp", False),  # Command R7B: LayerNorms, parallel FFN, NoPE global layers
    "tiny-command-r": ("ik_llama.cpp", False),
    "tiny-command-r-plus": ("ik_llama.cpp", False),  # per-head Q/K LayerNorms (64 layers)
    "tiny-gemma": ("ik_llama.cpp", False),  # Gemma 1: gemma2's layers without post-norms, windows, soft-caps
    "tiny-internlm2": ("ik_llama.cpp", False),  # llama's layers under another name
    "tiny-xverse": ("ik_llama.cpp", False),  # llama's layers under another name
    # Orion and StarCoder2 go to mainline: ik_llama.cpp 8337e4cd3's graphs RMS-normalize with ffn_norm's
    # weight and drop its bias (mainline applies the LayerNorm with both); on Orion files, which carry no RMS
    # epsilon, ik aborts (GGML_ASSERT(eps > 0.0f)). Mainline's GELU goes through its f16 table, so
    # StarCoder2's golden holds a looser tolerance (peer_golden_test.cc).
    "tiny-orion": ("llama.cpp", False),
    "tiny-starcoder2": ("llama.cpp", False),
    # GPT-2 and StarCoder go to mainline: ik_llama.cpp 8337e4cd3's graphs RMS-normalize with ffn_norm's
    # weight (as its starcoder2 and orion graphs do) and abort on the RMS epsilon these files lack. Mainline's
    # GELU goes through its f16 table, so their goldens hold StarCoder2's looser tolerance.
    "tiny-gpt2": ("llama.cpp", False),  # learned positions, fused QKV, biases throughout
    "tiny-starcoder": ("llama.cpp", False),  # the same with one KV head, tied output
    "tiny-chatglm": ("llama.cpp", False),  # GLM-4-9B: fused QKV with bias, partial interleaved RoPE
    "tiny-nemotron": ("llama.cpp", False),  # LayerNorms with biases, the squared ReLU, partial NeoX RoPE
    # Llama-3_1-Nemotron-51B: per-layer KV heads and FFN widths, "linear attention" and attention-free layers.
    # No peer checks tiny-deci-ultra's layer of attention without an FFN: mainline c392e50 has no FFN-free
    # layers, and ik_llama.cpp 8337e4cd3's deci graph skips the rest of such a layer with its attention's
    # output (`continue` before the residual stream takes it); its layers with neither match.
    "tiny-deci": ("llama.cpp", False),
    "tiny-bloom": ("llama.cpp", False),  # ALiBi, token_embd_norm, gpt2's layers
    "tiny-mpt": ("llama.cpp", False),  # ALiBi, LayerNorms without biases, clamped fused QKV
    "tiny-codeshell": ("llama.cpp", False),  # gpt2's layers with GQA and NeoX RoPE
    "tiny-jais": ("llama.cpp", False),  # ALiBi, 1 / head_dim, SwiGLU with biases
    "tiny-qwen": ("llama.cpp", False),  # fused QKV with bias, NeoX, feed_forward_length twice n_ff
    "tiny-plamo": ("llama.cpp", False),  # the FFN beside the attention, RMSNorm
    "tiny-refact": ("llama.cpp", False),  # llama's layers with ALiBi (max bias 8, no key)
    "tiny-baichuan": ("llama.cpp", False),  # 32 layers: RoPE
    "tiny-baichuan-13b": ("llama.cpp", False),  # 40 layers: ALiBi (max bias 8, no key)
    "tiny-olmoe": ("llama.cpp", False),  # whole-width Q/K norms, experts weighted without renormalising
    "tiny-deepseek": ("llama.cpp", False),  # DeepSeek-MoE: a dense layer first, experts beside shared ones
    # OLMo 1 goes to mainline: ik_llama.cpp 8337e4cd3's olmo graph applies RoPE to K twice.
    "tiny-olmo": ("llama.cpp", False),  # LayerNorms without weights
    "tiny-olmo-0424": ("llama.cpp", False),  # Q/K/V clamped
    "tiny-falcon": ("ik_llama.cpp", False),  # MQA, attention and FFN in parallel from one LayerNorm
    "tiny-falcon-40b": ("ik_llama.cpp", False),  # attn_norm_2 for the attention, attn_norm for the FFN
    "tiny-phi2": ("ik_llama.cpp", False),  # LayerNorms with biases, parallel ungated GELU FFN, biases
    "tiny-phi2-qkv": ("ik_llama.cpp", False),  # its fused attn_qkv and bias
    # GPT-NeoX (Pythia): attention and FFN in parallel, each from its own LayerNorm; fused attn_qkv
    "tiny-gptneox": ("ik_llama.cpp", False),
    "tiny-gptneox-sequential": ("ik_llama.cpp", False),  # use_parallel_residual false
    "tiny-stablelm2": ("ik_llama.cpp", False),  # LayerNorms with biases, partial NeoX RoPE, QKV bias
    "tiny-stablelm2-12b": ("ik_llama.cpp", False),  # per-head Q/K LayerNorms, parallel FFN
    # Gemma 4 26B-A4B: ik 8337e4cd3 omits the router input's 1 / sqrt(n_embd) (mainline applies it): no golden.
    "tiny-gemma4moe": (None, False),
    # Rows of 256 elements: the K-quant types (--type q5_k_m ...); not an architecture of its own, so not in
    # all-llama.cpp.
    "tiny-256": (None, False),
    # SmolLM2-135M's widths (576: llama.cpp's Q5_0 / Q5_1 fallbacks in --type q4_k_m / q5_k_m files), 2 layers.
    "tiny-smollm2": (None, False),
}
# Flags for ik_llama.cpp beyond "-fa off", by shape: deepseek2 without its latent cache (see SHAPES).
IK_FLAGS = {shape: ["-mla", "0"] for shape in ("tiny-deepseek2", "tiny-deepseek3", "tiny-deepseek3-split",
                                                 "tiny-deepseek3-grouped")}
# --absorbed: ik_llama.cpp's latent cache without flash attention. -mla 2 keeps [k_rope | latent] once per
# position and reads the values back out of it (as lockstep's absorbed form; -mla 1 keeps a transposed copy
# of the latent beside it, -mla 3 decompresses prompts of 128+ tokens).
IK_ABSORBED_FLAGS = ["-mla", "2"]
# Shapes whose ik_llama.cpp goldens are taken with its flash attention on (see run in main).
IK_FLASH_ATTENTION = {"tiny-gemma4"}
PROMPT_LENGTHS = (1, 9, 37, 100)  # the longest reaches past the 40-position windows, 64 more tokens further
GREEDY_TOKENS = 64
# Greedy never picks EOS (ignore_eos makes the peer bias it away). llama-server leaves out the probabilities
# of a token whose text is incomplete UTF-8 (ik_llama.cpp's fails on its JSON): the architecture shapes use
# make-model's ASCII vocabulary; for the others (tiny-qwen2: the bytes 0x80-0xFF) greedy is kept off those
# tokens too, on both sides (the raw logits reported are not affected).


def token_texts(path):
    """id -> text of the gpt2 vocabulary in a GGUF file (GPT-2's byte-to-unicode pieces decoded)."""
    kvs, _, _ = gguf_twin.read_gguf(path)
    raw = next(v for k, t, v in kvs if k == "tokenizer.ggml.tokens")
    r = gguf_twin.Reader(raw)
    r.take("<I")
    pieces = [r.string() for _ in range(r.take("<Q"))]
    byte_of = {}
    n = 0
    for b in range(256):
        printable = 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255
        byte_of[chr(b) if printable else chr(256 + n)] = b
        n += 0 if printable else 1
    return [bytes(byte_of[c] for c in p).decode("utf-8", "surrogateescape") if all(c in byte_of for c in p) else p
            for p in pieces]


def incomplete_utf8(text):
    return any(0xDC80 <= ord(c) <= 0xDCFF for c in text)


def parse_step(step, id_of):
    """(chosen id, {id: logprob}) from either server's format: mainline's ids and log-probabilities, or
    ik_llama.cpp's token texts and probabilities."""
    if "top_logprobs" in step:
        return step["id"], {t["id"]: t["logprob"] for t in step["top_logprobs"]}
    # ik_llama.cpp sets EOS's logit to -inf for ignore_eos before it reports: probability 0, kept as None.
    return id_of[step["content"]], {id_of[t["tok_str"]]: math.log(t["prob"]) if t["prob"] > 0 else None
                                    for t in step["probs"]}


def prompts(vocab):
    """Deterministic token-id prompts of PROMPT_LENGTHS (the golden test uses the file's copy)."""
    return [[(i * 37 + 11 * (n + 1)) % vocab for i in range(n)] for n in PROMPT_LENGTHS]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def model_info(lockstep, path):
    """n_vocab and n_ctx_train from `lockstep info`."""
    out = subprocess.run([lockstep, "info", "-m", path], check=True, capture_output=True, text=True).stdout
    info = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def run_peer(server, model, n_ctx, prompt_list, threads, log, eos, kv, extra_flags=()):
    texts = token_texts(model)
    id_of = {t: i for i, t in enumerate(texts)}
    if len(id_of) != len(texts):
        raise RuntimeError(f"{model}: token texts are not unique")
    banned = [i for i, t in enumerate(texts) if incomplete_utf8(t)]
    port = free_port()
    cmd = [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", str(n_ctx), "-np", "1",
           "-ctk", kv, "-ctv", kv, "-t", str(threads), "-b", "512", "-ub", "512", *extra_flags]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=os.path.dirname(log.name))
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"peer server exited with {proc.returncode} (log: {log.name})")
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):  # a loaded machine: try again
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError("peer server did not come up")
        cases = []
        for p in prompt_list:
            body = {"prompt": p, "n_predict": GREEDY_TOKENS, "n_probs": 1 << 20, "temperature": 0, "top_k": 1,
                    "cache_prompt": False, "ignore_eos": True, "samplers": ["top_k", "temperature"],
                    "return_tokens": True, "logit_bias": [[t, False] for t in banned]}
            res = post(base + "/completion", body)
            steps = res["completion_probabilities"]
            steps = [parse_step(step, id_of) for step in steps]
            tokens = res.get("tokens") or [chosen for chosen, _ in steps]  # ik_llama.cpp has no return_tokens
            if len(steps) != GREEDY_TOKENS or tokens != [chosen for chosen, _ in steps]:
                raise RuntimeError(f"peer gave {len(steps)} steps' probabilities for {len(tokens)} tokens, "
                                   f"asked for {GREEDY_TOKENS}")
            greedy, margins, first = [], [], None
            for i, (chosen, logprobs) in enumerate(steps):
                if len(logprobs) != len(texts):
                    raise RuntimeError(f"peer listed {len(logprobs)} of {len(texts)} tokens' probabilities")
                allowed = {t: lp for t, lp in logprobs.items() if t != eos and lp is not None and t not in banned}
                best = max(allowed, key=allowed.get)
                if best != chosen:
                    raise RuntimeError("peer's greedy token is not its most probable one but EOS")
                ranked = sorted(allowed.values(), reverse=True)
                greedy.append(chosen)
                margins.append(ranked[0] - ranked[1])
                if i == 0:
                    first = [logprobs[t] for t in range(len(logprobs))]
            cases.append({"prompt": p, "logprobs": first, "greedy": greedy, "greedy_margins": margins})
        return cases, banned
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the peer's llama-server binary")
    ap.add_argument("--peer-name", help="llama.cpp or ik_llama.cpp (default: from the path)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="lockstep build directory")
    ap.add_argument("--shapes", required=True,
                    help="comma-separated make-model shapes, or all-llama.cpp / all-ik_llama.cpp")
    ap.add_argument("--type", default="f32", help="make-model weight type")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer-flags", default="", help="extra llama-server flags (e.g. '-fa off')")
    ap.add_argument("--update", action="store_true", help="write the goldens into tests/model/testdata/peer")
    ap.add_argument("--llama-quantize", help="llama.cpp's llama-quantize: convert the make-model file with it")
    ap.add_argument("--llama-quantize-type", default="Q5_K_M", help="llama-quantize's type argument")
    ap.add_argument("--tolerance", type=float, help="largest |log-prob diff| allowed (quantized weights)")
    ap.add_argument("--absorbed", action="store_true",
                    help="deepseek2 shapes with ik_llama.cpp's latent cache (-mla 2): <shape>-absorbed.json, "
                         "checked against lockstep's absorbed form only")
    args = ap.parse_args()
    if args.llama_quantize and args.update:
        sys.exit("--update with --llama-quantize: the test could not write that file again")
    peer_name = args.peer_name or ("ik_llama.cpp" if "ik_llama" in args.peer else "llama.cpp")
    shapes = args.shapes.split(",")
    if len(shapes) == 1 and shapes[0].startswith("all-"):
        shapes = [s for s, (peer, _) in SHAPES.items() if peer == shapes[0][4:]]
    lockstep = os.path.join(args.build, "lockstep")
    tests = os.path.join(args.build, "tests", "model_tests")
    work = tempfile.mkdtemp(prefix="compare-peer-")
    golden_dir = GOLDEN_DIR if args.update else os.path.join(work, "goldens")
    os.makedirs(golden_dir, exist_ok=True)
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.dirname(os.path.dirname(args.peer))), "log",
                             "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    failed = False
    for shape in shapes:
        if shape not in SHAPES:
            sys.exit(f"unknown shape {shape}; known: {', '.join(SHAPES)}")
        model = os.path.join(work, f"{shape}.gguf")
        subprocess.run([lockstep, "make-model", "--shape", shape, "--type", args.type, "--seed", str(args.seed),
                        "-o", model], check=True, capture_output=True)
        if args.llama_quantize:
            quantized = os.path.join(work, f"{shape}.{args.llama_quantize_type}.gguf")
            with open(os.path.join(work, f"{shape}.quantize.log"), "w") as qlog:
                subprocess.run([args.llama_quantize, model, quantized, args.llama_quantize_type], check=True,
                               stdout=qlog, stderr=subprocess.STDOUT)
            model = quantized
        info = model_info(lockstep, model)
        vocab, n_ctx = int(info["n_vocab"]), int(info["context_length"])
        peer_model = model
        if SHAPES[shape][1]:
            peer_model = os.path.join(work, f"{shape}.phi3-twin.gguf")
            gguf_twin.twin(model, peer_model)
        with open(os.path.join(work, f"{shape}.peer.log"), "w") as log:
            # ik_llama.cpp keeps KV in f16 or bf16 only (f32 V "needs flash attention", whose CPU kernels take
            # no f32 KV): both sides then store f16 KV, rounded alike.
            kv = "f16" if peer_name == "ik_llama.cpp" else "f32"
            # Its flash attention (on by default) rounds Q and the weights to f16 (~1e-3 here); without it,
            # only the f16 matrix products of Q and of the weights with the f16 KV do. Its non-flash path
            # gave wrong results for 8-dim heads (a qwen3 shape, ~1 in log-probabilities past one position):
            # the shapes it checks have heads of 16.
            # Gemma 4 takes its flash attention: its non-flash gemma4 graph gave wrong logits even for a
            # one-token prompt (1.2 in log-probabilities; with -fa on 8e-7).
            ik_fa = "on" if shape in IK_FLASH_ATTENTION else "off"
            ik_flags = IK_ABSORBED_FLAGS if args.absorbed else IK_FLAGS.get(shape, [])
            extra = args.peer_flags.split() or (["-fa", ik_fa, *ik_flags] if peer_name == "ik_llama.cpp" else [])
            cases, banned = run_peer(args.peer, peer_model, n_ctx, prompts(vocab), args.threads, log, vocab - 1, kv,
                                     extra)
        golden = {"peer": f"{peer_name} {commit} llama-server, {kv} KV, -c {n_ctx} -np 1 {' '.join(extra)}".strip(),
                  "kv": kv,
                  "shape": shape, "type": args.type, "seed": args.seed,
                  "via_phi3_twin": SHAPES[shape][1], "greedy_excludes": banned + [vocab - 1], "cases": cases}
        name = shape if args.type == "f32" else f"{shape}-{args.type}"
        if args.absorbed:
            golden["form"] = "absorbed"
            name += "-absorbed"
        if args.llama_quantize:
            golden["model_file"] = model
            name = f"{shape}-{args.llama_quantize_type.lower()}-llama-quantize"
        if args.tolerance is not None:
            golden["tolerance"] = args.tolerance
        path = os.path.join(golden_dir, f"{name}.json")
        with open(path, "w") as f:
            json.dump(golden, f, separators=(",", ":"))
            f.write("\n")
        margin = min(min(c["greedy_margins"]) for c in cases)
        print(f"{shape}: {len(cases)} prompts recorded (smallest top-2 margin of the peer's greedy steps "
              f"{margin:.2e}): {path}")
    # The logits, to the stated tolerances, and greedy tokens through the engine's Forward.
    env = dict(os.environ, LOCKSTEP_PEER_GOLDEN_DIR=golden_dir)
    run = subprocess.run([tests, "--gtest_filter=*PeerGolden*"], env=env)
    failed = failed or run.returncode != 0
    print(f"work files in {work}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
