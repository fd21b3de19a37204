#!/usr/bin/env python3
"""Measures llama.cpp's slot save / restore in lockstep: a long prompt's KV kept across a server restart.

  bench/slot_restore_bench.py --lockstep build/lockstep --model M.gguf [--prompt-words 1500] [--rounds 3]
                              [--threads 2] --out result.json

Each round, on fresh servers (`lockstep serve --slot-save-path DIR`), with a fresh document (the round's seed):
  cold      the first /completion of document + question on a new server (n_predict 16, greedy): its
            timings.prompt_ms, then POST /slots/0?action=save (save_ms, n_saved, n_written);
  restored  a second new server: POST /slots/0?action=restore (restore_ms), then the same /completion:
            prompt_ms, tokens_cached, and whether its reply equals the cold one (it must).
The JSON holds every reading, medians, the ratio restored / cold prompt_ms (restore_ms added), load averages
and the CPU.
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

WORDS = ("river stone light market winter garden letter engine story harbor signal forest window silver "
         "morning paper bridge orange number castle yellow travel animal summer doctor planet mirror").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{path}: {error.code} {error.read().decode(errors='replace')}") from None


class Server:
    def __init__(self, args, directory):
        self.port = free_port()
        self.process = subprocess.Popen(
            [args.lockstep, "serve", "-m", args.model, "--port", str(self.port), "-t", str(args.threads),
             "--slot-save-path", directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the server did not become ready")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


def median(values):
    return round(statistics.median(values), 3) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lockstep", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt-words", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="slot_restore_")
    rounds = []
    try:
        for r in range(args.rounds):
            rng = random.Random(r)
            prompt = " ".join(rng.choice(WORDS) for _ in range(args.prompt_words)) + "\nQuestion: what comes next?"
            body = {"prompt": prompt, "n_predict": 16, "temperature": 0, "cache_prompt": True}
            reading = {"round": r, "load_before": round(os.getloadavg()[0], 2)}
            server = Server(args, directory)
            cold = post(server.port, "/completion", body)
            save = post(server.port, "/slots/0?action=save", {"filename": f"round{r}.bin"})
            server.stop()
            server = Server(args, directory)
            restore = post(server.port, "/slots/0?action=restore", {"filename": f"round{r}.bin"})
            warm = post(server.port, "/completion", body)
            server.stop()
            reading.update({
                "prompt_tokens": cold["tokens_evaluated"],
                "cold_prompt_ms": cold["timings"]["prompt_ms"],
                "save_ms": save["timings"]["save_ms"], "n_saved": save["n_saved"], "n_written": save["n_written"],
                "restore_ms": restore["timings"]["restore_ms"], "n_restored": restore["n_restored"],
                "restored_prompt_ms": warm["timings"]["prompt_ms"], "tokens_cached": warm["tokens_cached"],
                "same_reply": warm["content"] == cold["content"],
                "load_after": round(os.getloadavg()[0], 2)})
            reading["ratio"] = round((reading["restored_prompt_ms"] + reading["restore_ms"]) /
                                     reading["cold_prompt_ms"], 4)
            print(json.dumps(reading), flush=True)
            rounds.append(reading)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    summary = {key: median([x[key] for x in rounds])
               for key in ("cold_prompt_ms", "restored_prompt_ms", "save_ms", "restore_ms", "ratio")}
    summary["every_reply_same"] = all(x["same_reply"] for x in rounds)
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    cpu = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "?")
    with open(args.out, "w") as f:
        json.dump({"model": args.model, "threads": args.threads, "cpu": cpu, "rounds": rounds, "median": summary},
                  f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
