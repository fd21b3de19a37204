#!/usr/bin/env python3
"""lockstep's encoder embeddings against llama.cpp's (not in CI; records the golden that CI checks).

Writes `make-model --shape SHAPE --vocab-from VOCAB` (SHAPE tiny-bert, tiny-nomic-bert or tiny-jina-bert; the
bge WordPiece vocabulary of the test data),
serves it with the peer's `llama-server --embedding --pooling cls` and with `lockstep serve`, and for each
input compares the token ids (POST /tokenize with special tokens) and the unit-length CLS vectors (POST
/v1/embeddings, which both normalise). --update records the peer's ids and vectors, and the largest |diff|
measured, in tests/model/testdata/peer_embeddings/SHAPE.json for tests/model/peer_embeddings_golden_test.cc.
Builds nothing, downloads nothing.

  scripts/compare_peer_embeddings.py --lockstep build/lockstep \\
      --peer /work/peers/llama.cpp/build/bin/llama-server --vocab ../shared/testdata/vocab/ggml-vocab-bert-bge.gguf
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from compare_peer_rerank import Server, post

INPUTS = [
    "Hello, world!",
    "What is the capital of France? Paris is the capital and largest city of France.",
    "Café Müller's naïve résumé — 42 items, $3.50 each!",
    "tokenization of unbelievably long words: antidisestablishmentarianism",
    "混合 text with 日本語 and emoji 🦙.",
    "A sentence about retrieval, embeddings and vector search, long enough to span a few dozen word pieces so "
    "that attention over many positions is exercised in both directions.",
]
SEED = 1


def vector(server, text, shape):
    data = post(server.base + "/v1/embeddings", {"input": text, "model": shape})["data"]
    return data[0]["embedding"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lockstep", required=True, help="the lockstep binary")
    ap.add_argument("--peer", required=True, help="the peer's llama-server binary")
    ap.add_argument("--vocab", required=True, help="ggml-vocab-bert-bge.gguf")
    ap.add_argument("--shape", default="tiny-bert", help="tiny-bert, tiny-nomic-bert or tiny-jina-bert")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--update", action="store_true", help="write the golden file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lockstep-peer-embd-") as work:
        model = os.path.join(work, args.shape + ".gguf")
        subprocess.run([args.lockstep, "make-model", "--shape", args.shape, "--vocab-from", args.vocab, "--seed",
                        str(SEED), "-o", model], check=True, capture_output=True)
        with Server([args.peer, "-m", model, "--host", "127.0.0.1", "--port", "{port}", "--embedding", "--pooling",
                     "cls", "-c", "512", "-b", "512", "-ub", "512", "-np", "1", "-t", str(args.threads)],
                    os.path.join(work, "peer.log")) as peer:
            theirs = [(post(peer.base + "/tokenize", {"content": t, "add_special": True})["tokens"], vector(peer, t, args.shape))
                      for t in INPUTS]
        with Server([args.lockstep, "serve", "-m", model, "--port", "{port}", "-t", str(args.threads)],
                    os.path.join(work, "lockstep.log")) as ls:
            ours = [(post(ls.base + "/tokenize", {"content": t, "add_special": True})["tokens"], vector(ls, t, args.shape))
                    for t in INPUTS]
    worst = 0.0
    for text, (ids, vec), (our_ids, our_vec) in zip(INPUTS, theirs, ours):
        diff = max(abs(a - b) for a, b in zip(vec, our_vec))
        worst = max(worst, diff)
        same = "same ids" if ids == our_ids else f"IDS DIFFER: peer {ids} lockstep {our_ids}"
        print(f"{len(ids):3d} tokens, {same}, max |diff| {diff:.2e}: {text[:40]!r}")
    print(f"{args.shape}: largest |diff| {worst:.2e}")
    if args.update:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model", "testdata",
                            "peer_embeddings", args.shape + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"peer": "llama.cpp c392e5094 llama-server --embedding --pooling cls (normalised)",
                       "shape": args.shape, "type": "f32", "seed": SEED, "measured_max_diff": worst,
                       "cases": [{"text": t, "ids": ids, "embedding": vec}
                                 for t, (ids, vec) in zip(INPUTS, theirs)]}, f)
            f.write("\n")
        print("wrote", path)
    return 0 if all(a[0] == b[0] for a, b in zip(theirs, ours)) else 1


if __name__ == "__main__":
    sys.exit(main())
