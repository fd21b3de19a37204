#!/usr/bin/env python3
"""lockstep's yes/no-token reranking against llama.cpp's next-token log-probabilities (not in CI).

llama.cpp c392e50 cannot load a qwen3 file with a cls.output head (its rank pooling is BERT's), so what is
compared is the other path, which is the same computation: lockstep `serve --reranking --rerank-tokens Y,N
--kv-type f32` on a plain make-model file answers POST /v1/rerank; the peer's llama-server (f32 KV) gets the
very prompt ids lockstep scores ([BOS] query [EOS] document [EOS], lockstep's layout without a template; BOS
and EOS are the built-in vocabulary's <|endoftext|>) on POST /completion with n_predict 1 and every token's
log-probability, and its score is sigmoid(logprob(Y) - logprob(N)). Builds nothing, downloads nothing.

  scripts/compare_peer_rerank.py --lockstep build/lockstep \\
      --peer /work/peers/llama.cpp/build/bin/llama-server --shapes tiny-qwen2,tiny,tiny-gemma2
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

QUERY = "Where is the Eiffel Tower?"
DOCUMENTS = ["The Eiffel Tower is in Paris.", "Cats sleep most of the day.", "Bread needs flour and water.",
             "Paris is the capital of France, on the Seine."]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


class Server:
    """A server process, up once /health answers 200; stopped on exit."""

    def __init__(self, cmd, log_path):
        self.port = free_port()
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([c.replace("{port}", str(self.port)) for c in cmd], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode} (log: {self.log.name})")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not come up")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def compare(args, shape, work):
    model = os.path.join(work, shape + ".gguf")
    subprocess.run([args.lockstep, "make-model", "--shape", shape, "-o", model], check=True, capture_output=True)
    yes_text, no_text = args.tokens.split(",")
    with Server([args.lockstep, "serve", "-m", model, "--port", "{port}", "-t", str(args.threads), "--kv-type",
                 "f32", "--reranking", "--rerank-tokens", args.tokens], os.path.join(work, "lockstep.log")) as ls:
        ranked = post(ls.base + "/v1/rerank", {"query": QUERY, "documents": DOCUMENTS})
        ours = {r["index"]: r["relevance_score"] for r in ranked["results"]}

        def tokens(text):
            return post(ls.base + "/tokenize", {"content": text, "add_special": False})["tokens"]

        query, docs = tokens(QUERY), [tokens(d) for d in DOCUMENTS]
        yes_id, no_id, eos = tokens(yes_text)[0], tokens(no_text)[0], tokens("<|endoftext|>")[0]
    prompts = [[eos] + query + [eos] + d + [eos] for d in docs]
    if sum(map(len, prompts)) != ranked["usage"]["prompt_tokens"]:
        raise RuntimeError("lockstep scored other prompts than the ones rebuilt here")
    worst = 0.0
    with Server([args.peer, "-m", model, "--host", "127.0.0.1", "--port", "{port}", "-c", "256", "-np", "1", "-ctk",
                 "f32", "-ctv", "f32", "-t", str(args.threads)], os.path.join(work, "peer.log")) as peer:
        for i, ids in enumerate(prompts):
            res = post(peer.base + "/completion", {"prompt": ids, "n_predict": 1, "n_probs": 1 << 20,
                                                   "temperature": 0, "top_k": 1, "cache_prompt": False,
                                                   "samplers": ["top_k", "temperature"]})
            lp = {t["id"]: t["logprob"] for t in res["completion_probabilities"][0]["top_logprobs"]}
            theirs = 1.0 / (1.0 + math.exp(lp[no_id] - lp[yes_id]))
            worst = max(worst, abs(theirs - ours[i]))
            print(f"{shape} doc {i} ({len(ids)} tokens): lockstep {ours[i]:.7f}  peer {theirs:.7f}  "
                  f"|diff| {abs(theirs - ours[i]):.2e}")
    print(f"{shape}: largest |diff| {worst:.2e}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lockstep", required=True, help="the lockstep binary")
    ap.add_argument("--peer", required=True, help="the peer's llama-server binary")
    ap.add_argument("--shapes", default="tiny-qwen2,tiny,tiny-gemma2", help="make-model shapes, comma-separated")
    ap.add_argument("--tokens", default="y,n", help="--rerank-tokens (one token each in the built-in vocabulary)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lockstep-peer-rerank-") as work:
        for shape in args.shapes.split(","):
            compare(args, shape, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
