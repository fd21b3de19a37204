#!/usr/bin/env python3
"""lockstep's LoRA adapters against a peer llama-server's `--lora` (ik_llama.cpp or llama.cpp).

For each shape: writes a random model (`lockstep make-model`) and a random adapter (`lockstep make-lora`),
runs the peer with `--lora ADAPTER` (f16 KV, as scripts/compare_peer.py runs ik_llama.cpp) and
`lockstep serve --lora ADAPTER` (f16 KV), and asks both for the same token-id prompts: 64 greedy tokens and
the log-probabilities at the last prompt position. Prints, per shape, the largest |Δ log-prob| over
lockstep's 20 most likely tokens there, how far the adapter moves the peer's own log-probs (peer with vs
without --lora, the same tokens), and how many greedy tokens agree; the same without the adapter; and
lockstep's runtime adapter against the peer running a copy of the model with the adapter merged into its
f32 weights (W + s·B·A, computed here), which checks the adapter's meaning without the peer's LoRA code.
Builds and downloads nothing.

  scripts/compare_peer_lora.py --peer /work/peers/ik_llama.cpp/build/bin/llama-server --shapes tiny-qwen3
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peer import GREEDY_TOKENS, ROOT, free_port, model_info, post, prompts, run_peer  # noqa: E402
from gguf_twin import read_gguf, write_gguf  # noqa: E402


def merge(model, adapter, scale, out):
    """A copy of the f32 `model` with the f32 `adapter` merged in: W + s·B·A, s = scale·alpha/rank."""
    kvs, tensors, order = read_gguf(model)
    akvs, adapted, _ = read_gguf(adapter)
    alpha = next(struct.unpack("<f", v)[0] for k, _, v in akvs if k == "adapter.lora.alpha")
    for name in order:
        if name + ".lora_a" not in adapted:
            continue
        dims, ttype, blob, row_bytes = tensors[name]
        a_dims, _, a_blob, _ = adapted[name + ".lora_a"]
        b_dims, _, b_blob, _ = adapted[name + ".lora_b"]
        n_in, n_out, rank = dims[0], dims[1], b_dims[0]
        s = scale * alpha / rank if alpha else scale
        w = list(struct.unpack(f"<{n_in * n_out}f", blob))
        a = struct.unpack(f"<{n_in * rank}f", a_blob)
        b = struct.unpack(f"<{rank * n_out}f", b_blob)
        for o in range(n_out):
            for r in range(rank):
                sb = s * b[o * rank + r]
                row = a[r * n_in:(r + 1) * n_in]
                for i in range(n_in):
                    w[o * n_in + i] += sb * row[i]
        tensors[name][2] = struct.pack(f"<{n_in * n_out}f", *w)
    write_gguf(out, kvs, tensors, order)


def run_lockstep(lockstep, model, adapter, prompt_list, banned, eos, threads, log, scale):
    port = free_port()
    proc = subprocess.Popen([lockstep, "serve", "-m", model, "--port", str(port), "-t", str(threads),
                             "--kv-type", "f16", "--lora", adapter], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(base + "/ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        results = []
        for p in prompt_list:
            body = {"prompt": p, "n_predict": GREEDY_TOKENS, "n_probs": 20, "temperature": 0,
                    "ignore_eos": True, "logit_bias": [[t, False] for t in banned + [eos]],
                    "lora": [{"id": 0, "scale": scale}]}
            res = post(base + "/completion", body)
            steps = res["completion_probabilities"]
            first = {t["id"]: t["logprob"] for t in steps[0]["top_logprobs"]}
            results.append(([s["id"] for s in steps], first))
        return results
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the peer's llama-server binary")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="lockstep build directory")
    ap.add_argument("--shapes", default="tiny-qwen3", help="comma-separated make-model shapes (ASCII vocabulary)")
    ap.add_argument("--lora-args", default="--rank 8 --alpha 16", help="make-lora flags")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer-flags", default="-fa on", help="extra llama-server flags")
    args = ap.parse_args()
    lockstep = os.path.join(args.build, "lockstep")
    work = tempfile.mkdtemp(prefix="compare-peer-lora-")
    for shape in args.shapes.split(","):
        model = os.path.join(work, f"{shape}.gguf")
        adapter = os.path.join(work, f"{shape}.lora.gguf")
        subprocess.run([lockstep, "make-model", "--shape", shape, "-o", model], check=True, capture_output=True)
        subprocess.run([lockstep, "make-lora", "-m", model, *args.lora_args.split(), "-o", adapter], check=True,
                       capture_output=True)
        info = model_info(lockstep, model)
        vocab, n_ctx = int(info["n_vocab"]), int(info["context_length"])
        with open(os.path.join(work, f"{shape}.log"), "w") as log:
            try:
                peer, banned = run_peer(args.peer, model, n_ctx, prompts(vocab), args.threads, log, vocab - 1, "f16",
                                        [*args.peer_flags.split(), "--lora", adapter])
            except TypeError:  # a probability the peer reported as null (NaN)
                print(f"{shape}: the peer's probabilities with --lora are NaN (log: {log.name})")
                peer = None
            peer_base, banned = run_peer(args.peer, model, n_ctx, prompts(vocab), args.threads, log, vocab - 1, "f16",
                                    args.peer_flags.split())
            ours = run_lockstep(lockstep, model, adapter, prompts(vocab), banned, vocab - 1, args.threads, log, 1.0)
            merged = os.path.join(work, f"{shape}.merged.gguf")
            merge(model, adapter, 1.0, merged)
            peer_merged, _ = run_peer(args.peer, merged, n_ctx, prompts(vocab), args.threads, log, vocab - 1, "f16",
                                      args.peer_flags.split())
            ours_base = run_lockstep(lockstep, model, adapter, prompts(vocab), banned, vocab - 1, args.threads, log,
                                     0.0)
        for i, (base, merged_case) in enumerate(zip(peer_base, peer_merged)):
            greedy, first = ours[i]
            base_greedy, base_first = ours_base[i]
            first = {t: lp for t, lp in first.items() if base["logprobs"][t] is not None}  # not EOS (banned)
            base_first = {t: lp for t, lp in base_first.items() if base["logprobs"][t] is not None}
            base_delta = max(abs(lp - base["logprobs"][t]) for t, lp in base_first.items())
            base_same = sum(a == b for a, b in zip(base_greedy, base["greedy"]))
            print(f"{shape} prompt of {len(base['prompt'])} tokens: no adapter: max |Δ log-prob| {base_delta:.2e} "
                  f"over lockstep's top 20, greedy {base_same}/{len(base_greedy)} equal")
            if peer is not None:
                case = peer[i]
                delta = max(abs(lp - case["logprobs"][t]) for t, lp in first.items())
                moved = max(abs(case["logprobs"][t] - base["logprobs"][t]) for t in first)
                same = sum(a == b for a, b in zip(greedy, case["greedy"]))
                print(f"    the peer's --lora: max |Δ log-prob| {delta:.2e} (it moves the peer's by {moved:.2e}), "
                      f"greedy {same}/{len(greedy)} equal")
            merged_delta = max(abs(lp - merged_case["logprobs"][t]) for t, lp in first.items())
            merged_same = sum(a == b for a, b in zip(greedy, merged_case["greedy"]))
            moved = max(abs(merged_case["logprobs"][t] - base["logprobs"][t]) for t in first)
            print(f"    the peer on the merged weights: max |Δ log-prob| {merged_delta:.2e} (the adapter moves "
                  f"its log-probs by {moved:.2e}), greedy {merged_same}/{len(greedy)} equal")
    print(f"work files in {work}")


if __name__ == "__main__":
    main()
