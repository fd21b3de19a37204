#!/usr/bin/env python3
"""Measures issue 17's prefix-caching targets in one run, lockstep and llama.cpp's server side by side.

  bench/prefix_cache_targets.py --lockstep build/lockstep --model M.gguf [--llama-server PATH] [--rounds 3]
                                [--threads 2] --out DIR

Every figure comes from the project's own benchmarks (`lockstep bench compare`, `lockstep bench serve`) except
n:3 vs n:1, which times two plain chat requests. Each target is measured --rounds times; summary.json holds
every reading, its median and spread (min..max), the load average before and after each step, and the CPU.

  1. bench compare --context builtin (a ~620-token document, 5 questions x 200 tokens), in-process server:
     parallel / combined and fan-out / combined per round, caches warm across rounds, and with --cold
     (every run its own document line, so only the sharing among requests that arrive together helps).
  2. a repeated ~700-token prompt: `bench serve --prompt-len 700 --requests 1 --seed S` twice per round on a
     fresh prompt (seed); TTFT of the second / the first.
  3. n:3 vs n:1: wall time of one chat request with n 3 over one with n 1 (200 tokens each, fresh prompt each).
  4. multi-turn chat (600-word system prompt, 5 turns, 64-token replies, one conversation): TTFT per turn,
     lockstep vs llama-server -np 1 -fa (its slot keeps the last prompt), alternating, a fresh system prompt
     each round.
  5. parallel vs llama-server -np 5 -fa (prompt cache on), both servers up, bench compare alternating; llama's
     warm parallel is its rounds after the first.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load():
    return round(os.getloadavg()[0], 2)


def cpu():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in out.splitlines() if line.startswith("Flags")), [])
    levels = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
              if f in flags]
    return {"model": model, "cpus": os.cpu_count(), "flags": levels}


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"values": [], "median": None, "min": None, "max": None}
    return {"values": [round(v, 4) for v in values], "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4)}


def run(cmd, log):
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if code != 0:
        sys.exit(f"failed ({code}): {' '.join(cmd)}; see {log}")


class Server:
    def __init__(self, cmd, port, log):
        self.port = port
        self.log = open(log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                sys.exit(f"server exited: {' '.join(cmd)}; see {log}")
            time.sleep(0.5)
        sys.exit(f"server did not come up: {' '.join(cmd)}")

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=1800) as r:
        out = json.loads(r.read())
    return time.perf_counter() - start, out


def compare(lockstep, out, name, args, log_steps):
    d = os.path.join(out, name)
    before = load()
    run([lockstep, "bench", "compare", "--context", "builtin", "--max-tokens", "200", "--timeout", "1800", "--out", d]
        + args,
        d + ".log")
    log_steps.append({"step": name, "load_before": before, "load_after": load()})
    with open(os.path.join(d, "result.json")) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lockstep", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--llama-server")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="2")
    p.add_argument("--out", required=True)
    p.add_argument("--only", default="compare,repeat,n,chat,side", help="steps to run, comma separated")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = set(a.only.split(","))
    t = a.threads
    rounds = str(a.rounds)
    summary = {"cpu": cpu(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
               "threads": int(t), "model": a.model, "rounds": a.rounds, "steps": [], "targets": {}}
    path = os.path.join(a.out, "summary.json")
    if os.path.exists(path):  # a run of some steps (--only) adds to an earlier run's figures
        with open(path) as f:
            summary = json.load(f)
        summary["resumed"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    def save():
        with open(path, "w") as f:
            json.dump(summary, f, indent=1)
    steps = summary["steps"]
    targets = summary["targets"]

    if "compare" in only:
        modes = ["--modes", "combined,parallel,fan-out"]
        warm = compare(a.lockstep, a.out, "compare-warm", ["-m", a.model, "-t", t, "--repeat", rounds] + modes,
                       steps)
        cold = compare(a.lockstep, a.out, "compare-cold",
                       ["-m", a.model, "-t", t, "--repeat", rounds, "--cold"] + modes, steps)
        for label, r in (("warm", warm), ("cold", cold)):
            targets[f"parallel_over_combined_{label}"] = dict(stats(r["ratios_to_combined"]["parallel"]),
                                                              target="<= 0.45 every round")
            targets[f"fan_out_over_combined_{label}"] = dict(stats(r["ratios_to_combined"]["fan-out"]),
                                                             target="<= 0.45")
            targets[f"walls_s_{label}"] = {m: r["modes"][m]["walls_s"] for m in r["modes"]}
            save()

    port = free_port()
    if only & {"repeat", "n"}:
        before = load()
        srv = Server([a.lockstep, "serve", "-m", a.model, "-t", t, "--port", str(port)], port,
                     os.path.join(a.out, "serve.log"))
        try:
            if "repeat" in only:
                firsts, seconds, ratios = [], [], []
                for r in range(a.rounds):
                    ttft = []
                    for k in range(2):
                        d = os.path.join(a.out, f"repeat700-r{r}-{k}")
                        run([a.lockstep, "bench", "serve", "--url", srv.url(), "--prompt-len", "700",
                             "--output-len", "8", "--requests", "1", "--concurrency", "1", "--warmup", "0",
                             "--seed", str(1000 + r), "--timeout", "1800", "--out", d], d + ".log")
                        with open(os.path.join(d, "result.json")) as f:
                            res = json.load(f)
                        ttft.append(res["ttft_ms"]["median"])
                    firsts.append(ttft[0])
                    seconds.append(ttft[1])
                    ratios.append(ttft[1] / ttft[0])
                targets["repeat700_ttft_second_over_first"] = dict(stats(ratios), target="<= 0.1",
                                                                   first_ms=stats(firsts), second_ms=stats(seconds))
            if "n" in only:
                prompt = ("Write a long story about the lighthouse keeper of Kessel Point, his ledgers, the whale oil "
                          "and the storms of the winter of 1791. ") * 8
                walls = {1: [], 3: []}
                for r in range(a.rounds):
                    for n in ((1, 3) if r % 2 == 0 else (3, 1)):
                        body = {"messages": [{"role": "user", "content": f"Round {r}, n {n}. {prompt}"}], "n": n,
                                "max_tokens": 200, "ignore_eos": True, "temperature": 0.8, "seed": 1}
                        wall, res = post(srv.url() + "/v1/chat/completions", body)
                        assert len(res["choices"]) == n, res
                        walls[n].append(wall)
                ratios = [w3 / w1 for w1, w3 in zip(walls[1], walls[3])]
                targets["n3_over_n1_wall"] = dict(stats(ratios), target="<= 1.5", n1_s=stats(walls[1]),
                                                  n3_s=stats(walls[3]))
        finally:
            srv.stop()
        steps.append({"step": "repeat700 + n", "load_before": before, "load_after": load()})
        save()

    if "chat" in only:
        before = load()
        servers = {"lockstep": Server([a.lockstep, "serve", "-m", a.model, "-t", t, "--port", str(port)], port,
                                      os.path.join(a.out, "serve-chat.log"))}
        if a.llama_server:
            lport = free_port()
            servers["llama.cpp"] = Server([a.llama_server, "-m", a.model, "-t", t, "-np", "1", "-fa", "-c", "4096",
                                           "--port", str(lport)], lport, os.path.join(a.out, "llama-chat.log"))
        turns = {name: [] for name in servers}
        try:
            for r in range(a.rounds):
                for name in (list(servers) if r % 2 == 0 else list(servers)[::-1]):
                    d = os.path.join(a.out, f"chat-{name}-r{r}")
                    run([a.lockstep, "bench", "serve", "--url", servers[name].url(), "--multi-turn", "1", "--turns",
                         "5", "--system-words", "600", "--user-words", "30", "--output-len", "64", "--warmup", "0",
                         "--seed", str(2000 + r), "--timeout", "1800", "--out", d], d + ".log")
                    with open(os.path.join(d, "result.json")) as f:
                        turns[name].append(json.load(f)["multi_turn"]["ttft_ms_by_turn"])
        finally:
            for s in servers.values():
                s.stop()
        steps.append({"step": "multi-turn chat", "load_before": before, "load_after": load()})
        chat = {name: {f"turn{i + 1}_ms": stats([run_[i] for run_ in runs]) for i in range(5)}
                for name, runs in turns.items()}
        if "llama.cpp" in turns:
            ratios = [[ours[i] / theirs[i] for i in range(1, 5)] for ours, theirs in zip(turns["lockstep"],
                                                                                        turns["llama.cpp"])]
            chat["lockstep_over_llama_turns_2_to_5"] = [stats([r[i] for r in ratios]) for i in range(4)]
            chat["worst_ratio_after_turn_1"] = max(max(r) for r in ratios)
        chat["target"] = "turns 2..5 <= 0.5 x llama.cpp's, not growing with the history"
        targets["multi_turn"] = chat
        save()

    if "side" in only and a.llama_server:
        before = load()
        lport = free_port()
        srv = Server([a.lockstep, "serve", "-m", a.model, "-t", t, "--port", str(port)], port,
                     os.path.join(a.out, "serve-side.log"))
        llama = Server([a.llama_server, "-m", a.model, "-t", t, "-np", "5", "-fa", "-c", "10240", "--port",
                        str(lport)], lport, os.path.join(a.out, "llama-np5.log"))
        try:
            ours = compare(a.lockstep, a.out, "side-lockstep", ["--url", srv.url(), "--repeat", rounds, "--modes",
                                                                "combined,parallel,fan-out"], steps)
            theirs = compare(a.lockstep, a.out, "side-llama", ["--url", llama.url(), "--repeat", rounds, "--modes",
                                                               "combined,parallel"], steps)
        finally:
            srv.stop()
            llama.stop()
        steps.append({"step": "side by side", "load_before": before, "load_after": load()})
        our_parallel = ours["modes"]["parallel"]["walls_s"]
        llama_parallel = theirs["modes"]["parallel"]["walls_s"]
        warm = llama_parallel[1:] or llama_parallel
        targets["parallel_over_llama_warm_parallel"] = dict(
            stats([w / statistics.median(warm) for w in our_parallel]), target="<= 0.5",
            lockstep_parallel_s=stats(our_parallel), llama_parallel_cold_s=llama_parallel[0],
            llama_parallel_warm_s=stats(warm), lockstep_combined_s=stats(ours["modes"]["combined"]["walls_s"]),
            llama_combined_s=stats(theirs["modes"]["combined"]["walls_s"]),
            lockstep_fan_out_s=stats(ours["modes"]["fan-out"]["walls_s"]))

    summary["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    save()
    print(json.dumps(summary["targets"], indent=1))


if __name__ == "__main__":
    main()
