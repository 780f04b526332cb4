#!/usr/bin/env python3
"""Helper of scripts/bench-asr-under-llm (read that first): does speech stay real-time while the
local model thinks? The release daemon reads bench-asr's espeak-ng utterances at real time (its
clips, its session WAV and its daemon runner, imported from scripts/bench-asr.py) in three
scenes, and this times `speech_stop` -> `transcript` per utterance in each:

  idle    nothing else running;
  up      llama-server started with `stt-daemon up`'s arguments (bins/stt-daemon/src/up/model.rs,
          `Launch::args`, read from its test) at up's nice, generating without a break: streamed
          /v1/chat/completions requests in slot 1, back to back, from a thread;
  before  the same load with llama-server at normal priority and default polling (nice 0,
          without `--poll 0`), as it ran before `up` lowered it.

Scenes alternate within each round, so background load falls on all alike. Before the first
scene it waits for a quiet machine (no rustc, cargo or other llama-server for ~30 s). Prints a
Markdown section; --write FILE puts it between its markers in FILE (after bench-asr's section
when new). Its own imports are the standard library; bench-asr.py needs numpy, which the
wrapper provides. Every process it starts is stopped on the way out, Ctrl-C and errors included.

  bench-asr-under-llm.py --work DIR --daemon BIN --model GGML --llama-server BIN --llm-model GGUF
                         [--rounds N] [--clips N] [--max-wait S] [--no-wait] [--write FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import importlib.util
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
spec = importlib.util.spec_from_file_location("bench_asr", HERE / "bench-asr.py")
assert spec and spec.loader
asr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(asr)

SECTION = "bench-asr-under-llm"
AFTER = "<!-- bench-asr:end -->"
MODEL_RS = ROOT / "bins/stt-daemon/src/up/model.rs"
PROMPT = "Write a long story about a lighthouse keeper."
MAX_TOKENS = 400
SLOT = 1
CLK = os.sysconf("SC_CLK_TCK")
# What counts as "another heavy job" when waiting for a quiet machine.
BUSY_NAMES = ("rustc", "cargo", "llama-server")
# A run during which other processes took this much CPU on average (cores) is disturbed.
DISTURBED = 0.25


def log(msg: str) -> None:
    print(f"bench-asr-under-llm: {msg}", file=sys.stderr, flush=True)


# --- llama-server as `up` runs it ------------------------------------------------------------


def up_launch(model: str, port: int, threads: int) -> tuple[list[str], int, str]:
    """`up`'s llama-server arguments and nice, from model.rs: the arguments as its test
    `expected` spells them (for /m/q.gguf, port 9931, 2 threads), with ours put in."""
    src = MODEL_RS.read_text()
    m = re.search(r'let expected = "((?:[^"\\]|\\.)*)"', src, re.S)
    nice = re.search(r"pub const NICE: i32 = (-?\d+);", src)
    if not m or not nice:
        sys.exit(f"bench-asr-under-llm: cannot find Launch::args' expected string or NICE in {MODEL_RS}: "
                 "update up_launch() to match")
    spelled = re.sub(r"\\\n\s*", "", m.group(1)).split()
    args = []
    for i, x in enumerate(spelled):
        prev = spelled[i - 1] if i else ""
        if prev == "-m":
            x = model
        elif prev == "--port":
            x = str(port)
        elif prev in ("-t", "-tb"):
            x = str(threads)
        args.append(x)
    return args, int(nice.group(1)), " ".join(spelled)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Llama:
    """llama-server on a free loopback port, its output in a log file."""

    def __init__(self, program: str, args: list[str], nice: int, port: int, log_path: Path):
        self.port = port
        self.log_path = log_path
        self.log = open(log_path, "w")
        cmd = (["nice", "-n", str(nice)] if nice else []) + [program, *args]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"bench-asr-under-llm: llama-server exited ({self.proc.returncode}); see {self.log_path}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    return
                c.close()
            except OSError:
                pass
            time.sleep(0.25)
        raise SystemExit(f"bench-asr-under-llm: llama-server not ready after {timeout:.0f} s; see {self.log_path}")

    def cpu_s(self) -> float:
        try:
            return asr.proc_cpu_s(self.proc.pid)
        except OSError:
            return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


class Load(threading.Thread):
    """Streamed chat completions in one slot, back to back, until stopped: a command being
    answered, without a break. Each finished request's `timings` is kept."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.halt = threading.Event()
        self.generating = threading.Event()  # the first token has come
        self.done: list[dict] = []
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.one()
            except Exception as e:  # the server going away at the end, or a real error
                if self.halt.is_set():
                    return
                self.errors.append(f"{type(e).__name__}: {e}")
                time.sleep(0.5)

    def one(self) -> None:
        body = json.dumps({
            "messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_TOKENS,
            "stream": True, "id_slot": SLOT, "cache_prompt": True, "timings_per_token": True,
        })
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            started = time.monotonic()
            c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
            timings, pieces = None, 0
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                ev = json.loads(data)
                if ev.get("timings"):
                    timings = ev["timings"]
                for ch in ev.get("choices") or []:
                    if (ch.get("delta") or {}).get("content"):
                        pieces += 1
                        self.generating.set()
                if self.halt.is_set():
                    break
        finally:
            c.close()
        if timings is None:
            if self.halt.is_set():
                return
            raise RuntimeError("no timings in the stream")
        # A request cut off at the end of the scene counts with the tokens it had made.
        self.done.append({"start": started, "end": time.monotonic(), "n": timings.get("predicted_n", 0),
                          "ms": timings.get("predicted_ms", 0.0), "tps": timings.get("predicted_per_second"),
                          "prompt_n": timings.get("prompt_n"), "pieces": pieces,
                          "cut": self.halt.is_set()})


# --- the machine -----------------------------------------------------------------------------


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def our_family() -> set[int]:
    """This process and everything it started (by parent id), transitively."""
    parent: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    fam = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in fam and pid not in fam:
                fam.add(pid)
                grew = True
    return fam


def busy_jobs() -> list[str]:
    """Other rustc, cargo and llama-server processes (`pgrep -a`), ours left out."""
    mine = our_family()
    out = []
    for name in BUSY_NAMES:
        r = subprocess.run(["pgrep", "-a", "-x", name], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            pid, _, cmd = line.partition(" ")
            if pid.isdigit() and int(pid) not in mine:
                out.append(f"{pid} {cmd[:140]}")
    return out


def heavy_processes(seconds: float = 2.0, floor: float = 0.2) -> list[str]:
    """Processes not ours that used at least `floor` of a core over `seconds`."""

    def snap() -> dict[int, tuple[str, float]]:
        out = {}
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    text = (p / "stat").read_text()
                except OSError:
                    continue
                name = text[text.index("(") + 1 : text.rindex(")")]
                f = text.rsplit(")", 1)[1].split()
                out[int(p.name)] = (name, (int(f[11]) + int(f[12])) / CLK)
        return out

    a = snap()
    time.sleep(seconds)
    b = snap()
    mine = our_family()
    rows = []
    for pid, (name, t) in b.items():
        if pid in mine or pid not in a:
            continue
        cores = (t - a[pid][1]) / seconds
        if cores >= floor:
            rows.append((cores, f"{name} ({pid}) {cores:.1f} cores"))
    return [r for _, r in sorted(rows, reverse=True)]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def wait_quiet(max_wait: float, quiet_for: float = 30, every: float = 20) -> dict:
    """Polls for other heavy jobs every `every` s until none has been seen for `quiet_for` s,
    or `max_wait` s have gone by."""
    t0 = time.monotonic()
    quiet_since = None
    seen: list[str] = []
    while True:
        now = time.monotonic()
        jobs = busy_jobs()
        if jobs:
            quiet_since = None
            seen = jobs
            log(f"waiting for a quiet machine (load {loadavg()}): " + "; ".join(j[:90] for j in jobs[:4]))
        else:
            quiet_since = now if quiet_since is None else quiet_since
            if now - quiet_since >= quiet_for:
                return {"waited_s": now - t0, "quiet": True, "seen": seen}
        if now - t0 >= max_wait:
            return {"waited_s": now - t0, "quiet": False, "seen": jobs}
        time.sleep(min(every, max(1.0, max_wait - (now - t0))))


def kill_children() -> None:
    """Stops whatever of ours is still running (a daemon an error left behind)."""
    kids = [p for p in our_family() if p != os.getpid()]
    for pid in kids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while kids and time.monotonic() < deadline:
        kids = [p for p in kids if Path(f"/proc/{p}").exists() and not _zombie(p)]
        time.sleep(0.1)
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# --- one scene -------------------------------------------------------------------------------


def run_scene(a, scene: dict, rnd: int, clips: list[dict], session: Path, work: Path) -> dict:
    tag = f"{scene['key']}-r{rnd}"
    waited = 0.0
    if a.scene_wait > 0 and busy_jobs():  # a build or test started since: let it finish first
        waited = wait_quiet(a.scene_wait, quiet_for=0, every=10)["waited_s"]
    before = {"load": loadavg(), "jobs": busy_jobs(), "heavy": heavy_processes(), "waited_s": waited}
    log(f"round {rnd}: {scene['key']} (load {before['load']}"
        + (f"; busy: {', '.join(before['heavy'])}" if before["heavy"] else "") + ")")
    llama = load = None
    out: dict = {"scene": scene["key"], "round": rnd, **before}
    try:
        with asr.Phase(tag):
            if scene.get("llama"):
                port = free_port()
                args = scene["args"](port)
                llama = Llama(a.llama_server, args, scene["nice"], port, work / f"llama-{tag}.log")
                llama.wait_ready()
                load = Load(port)
                load.start()
                if not load.generating.wait(120):
                    raise SystemExit(f"bench-asr-under-llm: the model produced nothing in 120 s; "
                                     f"errors {load.errors[:3]}; see {llama.log_path}")
                out["llama_cmd"] = llama.cmd
            c0 = llama.cpu_s() if llama else 0.0
            t0 = time.monotonic()
            lat = asr.run_latency(a.daemon, a.model, session, clips, work, tag)
            t1 = time.monotonic()
            if llama:
                out["llama_cores"] = (llama.cpu_s() - c0) / (t1 - t0)
                if llama.proc.poll() is not None:
                    raise SystemExit(f"bench-asr-under-llm: llama-server died during the scene; see {llama.log_path}")
                load.halt.set()
                load.join(15)  # it stops at its next token, keeping what the request made
                llama.stop()
                reqs = [r for r in load.done if r["end"] > t0 and r["start"] < t1]
                out["requests"] = reqs
                out["load_errors"] = load.errors
                if not reqs:
                    raise SystemExit(f"bench-asr-under-llm: no request finished during the scene; errors "
                                     f"{load.errors[:3]}; see {llama.log_path}")
    finally:
        if load:
            load.halt.set()
        if llama:
            llama.stop()
    p = asr.Phase.totals[tag]
    out["others_cores"] = p["others"] / p["wall"]
    out["load_end"] = loadavg()
    out["a_ms"] = {n: r["a_ms"] for n, r in lat["clips"].items() if r.get("a_ms") is not None}
    out["text"] = {n: r.get("text") for n, r in lat["clips"].items()}
    out["segments"] = {n: r.get("segments", 0) for n, r in lat["clips"].items()}
    a_all = list(out["a_ms"].values())
    msg = f"  {len(a_all)}/{len(clips)} timed, median {statistics.median(a_all):.0f} ms" if a_all else "  none timed"
    if out.get("requests"):
        msg += f", model {tps(out['requests']):.1f} tokens/s, llama-server {out['llama_cores']:.2f} cores"
    log(msg + f", others {out['others_cores']:.2f} cores")
    time.sleep(a.settle)
    return out


def tps(reqs: list[dict]) -> float:
    n = sum(r["n"] for r in reqs)
    ms = sum(r["ms"] for r in reqs)
    return n / ms * 1000 if ms else 0.0


def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile, as scripts/bench-speakers-cost.py takes it."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


# --- report ----------------------------------------------------------------------------------


def aggregate(scenes: list[dict], runs: list[dict], clips: list[dict]) -> dict:
    """Per scene, over `runs`: the times, their median, p90, max and ratios to idle's, the WER,
    the model's tokens/s and CPU, the others' CPU."""
    agg = {}
    for s in scenes:
        rs = [r for r in runs if r["scene"] == s["key"]]
        xs = [x for r in rs for x in r["a_ms"].values()]
        errs = [asr.errors(c["text"], r["text"].get(c["n"])) for r in rs for c in clips]
        reqs = [q for r in rs for q in r.get("requests", [])]
        agg[s["key"]] = {
            "runs": len(rs), "xs": xs, "median": statistics.median(xs) if xs else None,
            "p90": pct(xs, 90) if xs else None, "max": max(xs) if xs else None,
            "wer": asr.wer_of(errs) if errs else None,
            "tps": tps(reqs) if reqs else None, "req_tps": [q["tps"] for q in reqs if q.get("tps")],
            "requests": len(reqs),
            "llama_cores": statistics.mean([r["llama_cores"] for r in rs]) if s.get("llama") and rs else None,
            "others": statistics.mean([r["others_cores"] for r in rs]) if rs else None,
        }
    idle = agg["idle"]
    for g in agg.values():
        for f in ("median", "p90"):
            g[f"x_{f}"] = g[f] / idle[f] if g[f] is not None and idle[f] else None
    return agg


def results_table(w, scenes: list[dict], agg: dict, n_clips: int) -> None:
    w("| scene | timed | speech_stop → transcript median | p90 | max | × idle, median | × idle, p90 | "
      "model tokens/s | llama-server CPU, cores | others, cores | WER |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in scenes:
        g = agg[s["key"]]
        if not g["runs"]:
            continue
        tok = "–" if g["tps"] is None else (
            f"{g['tps']:.1f} ({statistics.median(g['req_tps']):.1f}), {g['requests']} "
            f"request{'s' if g['requests'] != 1 else ''}")
        w(f"| {s['label']} | {len(g['xs'])}/{n_clips * g['runs']} | {asr.fmt(g['median'])} ms | "
          f"{asr.fmt(g['p90'])} ms | {asr.fmt(g['max'])} ms | {asr.fmt(g['x_median'], '.2f')}× | "
          f"{asr.fmt(g['x_p90'], '.2f')}× | {tok} | {asr.fmt(g['llama_cores'], '.2f')} | "
          f"{asr.fmt(g['others'], '.2f')} | {asr.fmt(g['wer'], '.1%')} |")
    w("")


def report(a, scenes: list[dict], runs: list[dict], clips: list[dict], quiet: dict,
           launch_text: dict[str, str], up_spelled: str, minutes: float) -> str:
    out: list[str] = []
    w = out.append
    agg = aggregate(scenes, runs, clips)
    disturbed = [r for r in runs if r["others_cores"] >= DISTURBED]
    calm = [r for r in runs if r["others_cores"] < DISTURBED]
    calm_agg = aggregate(scenes, calm, clips) if disturbed else agg
    # The verdict is taken on the undisturbed runs when there are idle and `up` runs among them.
    judged = calm_agg if calm_agg["idle"]["xs"] and calm_agg["up"]["xs"] else agg
    n_cpu = cpus()
    w("## Speech while the local model thinks (`scripts/bench-asr-under-llm`)\n")
    w(f"Measured {dt.date.today().isoformat()} on {asr.cpu_model()} ({n_cpu} CPUs available), Linux "
      f"{platform.release()}, release `stt-daemon` with the default config (whisper `{Path(a.model).name}` "
      f"on its default 2 threads), local model `{Path(a.llm_model).name}` served by llama-server "
      f"(`{home(a.llama_server)}`). Reproduce with `{a.command}` (about {max(1, round(minutes))} minute{'s' if round(minutes) > 1 else ''} here, "
      f"{a.rounds} round{'s' if a.rounds != 1 else ''}; it builds `stt-daemon` in release, needs espeak-ng, sox, "
      f"python3 with venv (numpy, for bench-asr.py's clips), llama-server and the model from "
      f"`scripts/fetch-llm`); `scripts/bench-asr-under-llm.py` measures and rewrites this section.\n")
    w(f"**Method.** bench-asr's {len(clips)} espeak-ng utterances ({min(c['speech_s'] for c in clips):.1f}–"
      f"{max(c['speech_s'] for c in clips):.1f} s of speech, {asr.GAP_S} s apart) in one WAV that the daemon "
      f"reads at real time (`--input session.wav --wait-for-subscriber`); a subscriber on its socket times "
      f"`speech_stop` → `transcript` for each utterance (the daemon's own work after the VAD's hangover: "
      f"queue, whisper, publish). Three scenes, alternating within each of {a.rounds} round"
      f"{'s' if a.rounds != 1 else ''}:\n")
    for s in scenes:
        w(f"- **{s['label']}**: {s['what']}")
    w("")
    w(f"While a model scene runs, a thread sends streamed `/v1/chat/completions` requests back to back "
      f"(\"{PROMPT}\", `max_tokens` {MAX_TOKENS}, `\"id_slot\": {SLOT}`), so the model is generating "
      f"through every utterance; the daemon starts once the first token has come. *Model tokens/s* = "
      f"generated tokens / generation time summed over the requests that overlapped the daemon's run, "
      f"from llama-server's own `timings` (`predicted_n`, `predicted_ms`; in brackets the median of "
      f"the requests' `predicted_per_second`). *llama-server CPU* is its utime + stime over the "
      f"daemon's run; *others* is the CPU used by processes that are not this benchmark's during the "
      f"scene (`/proc/stat` less our own), in cores out of {n_cpu}.\n")
    w(f"`up`'s arguments, as `Launch::args` spells them in its test: `{up_spelled}` (here with the "
      f"model's path, a free port and -t/-tb {n_cpu}).\n")
    for s in scenes:
        if s["key"] in launch_text:
            w(f"- {s['label']}: `{launch_text[s['key']]}`")
    w("")
    if quiet["quiet"]:
        w(f"**Machine.** Waited {quiet['waited_s']:.0f} s for a quiet machine (no other rustc, cargo or "
          f"llama-server for 30 s, polled every 20 s) before the first scene; load then "
          f"{quiet['load']}.")
    elif quiet.get("skipped"):
        w("**Machine.** Not waited for a quiet machine (`--no-wait`).")
    else:
        w(f"**Machine.** Gave up waiting for a quiet machine after {quiet['waited_s'] / 60:.0f} minutes and ran "
          f"anyway; still running then: " + "; ".join(f"`{j[:100]}`" for j in quiet["seen"][:4]) + ".")
    noisy = max(r["others_cores"] for r in runs)
    w(f"Before each scene: the load average (1, 5, 15 min) and any process not ours using ≥ 0.2 of a core "
      f"over 2 s (*busy before*; *also*: other rustc, cargo and llama-server processes alive then; when there "
      f"were, the scene first waited up to {a.scene_wait:.0f} s for them to end)."
      + (f" Other processes took up to {noisy:.2f} cores on average during a run (*others during*): "
         f"a shared machine, not a quiet one." if noisy >= 0.3 else "") + "\n")
    w("| round | scene | load before | busy before | others during, cores | median ms | p90 ms | model tokens/s |")
    w("|---:|---|---|---|---:|---:|---:|---:|")
    for r in runs:
        xs = list(r["a_ms"].values())
        busy = ", ".join(r["heavy"]) or "–"
        if r.get("waited_s", 0) >= 1:
            busy = f"(waited {r['waited_s']:.0f} s) " + busy
        if r["jobs"]:
            names = [j.split(" ", 1)[1].split()[0].rsplit("/", 1)[-1] for j in r["jobs"]]
            busy += "; also " + ", ".join(f"{n} ×{names.count(n)}" if names.count(n) > 1 else n
                                          for n in dict.fromkeys(names))
        w(f"| {r['round']} | {r['scene']} | {r['load']} | {busy} | {r['others_cores']:.2f} | "
          f"{statistics.median(xs):.0f} | {pct(xs, 90):.0f} | "
          f"{asr.fmt(tps(r['requests']) if r.get('requests') else None, '.1f')} |")
    w("")
    w(f"**Results**, all runs ({len(clips)} utterances × {a.rounds} round{'s' if a.rounds != 1 else ''} per "
      f"scene; utterances the VAD split or merged are left out of the times, and counted under *timed*):\n")
    results_table(w, scenes, agg, len(clips))
    if disturbed:
        w(f"Runs during which other processes took ≥ {DISTURBED} of a core on average (a build or test that "
          f"started meanwhile): " + ", ".join(f"{r['scene']} round {r['round']} ({r['others_cores']:.2f} cores)"
                                             for r in disturbed)
          + (". Without them:\n" if calm else "; no run was undisturbed.\n"))
        if calm:
            results_table(w, scenes, calm_agg, len(clips))
    up, bf, idle = judged["up"], judged["before"], judged["idle"]
    rm_up, rm_bf = up["x_median"], bf["x_median"]
    met = rm_up is not None and rm_up <= 1.5
    which = "the undisturbed runs" if judged is not agg else "all runs"
    also = (f" (over all runs, disturbed ones included: {asr.fmt(agg['up']['median'])} ms against "
            f"{asr.fmt(agg['idle']['median'])} ms, {asr.fmt(agg['up']['x_median'], '.2f')}×)") if judged is not agg else ""
    w(f"**Target** (the issue): speech_stop → transcript while a command is being answered within 1.5× "
      f"its idle figure: {'**met**' if met else '**not met**'} on {which}: median {asr.fmt(up['median'])} ms as "
      f"`up` runs the model against {asr.fmt(idle['median'])} ms idle, {asr.fmt(rm_up, '.2f')}× (p90 "
      f"{asr.fmt(up['x_p90'], '.2f')}×){also}.\n")
    helps = (rm_bf or 0) > (rm_up or 0) * 1.2
    w(f"**Reading.** As `up` runs it (nice {scenes[1]['nice']}, threads that sleep rather than spin), the "
      f"model generating through every utterance {'keeps' if met else 'does not keep'} the daemon within "
      f"1.5× idle: median {asr.fmt(rm_up, '.2f')}× (p90 {asr.fmt(up['x_p90'], '.2f')}×), while it still "
      f"generates {asr.fmt(up['tps'], '.1f')} tokens/s on {asr.fmt(up['llama_cores'], '.2f')} cores. At normal "
      f"priority with polling threads (the \"before\") the median is {asr.fmt(rm_bf, '.2f')}× idle (p90 "
      f"{asr.fmt(bf['x_p90'], '.2f')}×) at {asr.fmt(bf['tps'], '.1f')} tokens/s"
      + (", so the lower priority is what keeps speech near real time.\n" if helps
         else ", so here the priority changes little.\n"))
    return "\n".join(out) + "\n"


def home(path: str) -> str:
    h = os.path.expanduser("~")
    return "~" + path[len(h):] if h not in ("", "/") and path.startswith(h + "/") else path


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--model", required=True, help="the daemon's GGML whisper model")
    p.add_argument("--llama-server", required=True)
    p.add_argument("--llm-model", required=True, help="the GGUF llama-server serves")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--clips", type=int, default=len(asr.UTTERANCES), help="use only the first N utterances")
    p.add_argument("--max-wait", type=float, default=25 * 60, help="longest wait for a quiet machine, s")
    p.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    p.add_argument("--scene-wait", type=float, default=180,
                   help="longest wait before each scene for other rustc, cargo or llama-server to end, s")
    p.add_argument("--settle", type=float, default=3, help="pause after each scene, s")
    p.add_argument("--command", default="scripts/bench-asr-under-llm", help="the command the report names")
    p.add_argument("--write")
    a = p.parse_args()
    started = time.monotonic()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    n_cpu = cpus()

    up_args = lambda port: up_launch(a.llm_model, port, n_cpu)[0]
    nice, up_spelled = up_launch(a.llm_model, 0, n_cpu)[1:]

    def before_args(port: int) -> list[str]:
        args = up_args(port)
        i = args.index("--poll")
        del args[i : i + 2]
        for flag in ("-t", "-tb"):
            args[args.index(flag) + 1] = "2"
        return args

    scenes = [
        {"key": "idle", "label": "idle", "what": "the daemon alone."},
        {"key": "up", "label": "model busy, as `up` runs it", "llama": True, "nice": nice, "args": up_args,
         "what": f"llama-server with `up`'s arguments (`Launch::args`) under `nice -n {nice}`, generating throughout."},
        {"key": "before", "label": "model busy, normal priority", "llama": True, "nice": 0, "args": before_args,
         "what": "the same, at nice 0, `-t 2 -tb 2` and llama.cpp's default polling (no `--poll 0`), as it ran "
                 "before `up` lowered it."},
    ]
    shown = lambda args: " ".join(Path(x).name if x in (a.llm_model,) else ("PORT" if i and args[i - 1] == "--port" else x)
                                  for i, x in enumerate(args))
    launch_text = {
        "up": f"nice -n {nice} llama-server {shown(up_args(0))}",
        "before": f"llama-server {shown(before_args(0))}",
    }

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        log(f"making {a.clips} clips")
        clips, session = asr.make_clips(work, asr.UTTERANCES[: a.clips])
        if a.no_wait:
            quiet = {"waited_s": 0.0, "quiet": False, "skipped": True, "seen": busy_jobs()}
        else:
            log(f"waiting for a quiet machine (up to {a.max_wait / 60:.0f} min)")
            quiet = wait_quiet(a.max_wait)
            quiet["load"] = loadavg()
            log(f"{'quiet' if quiet['quiet'] else 'still busy'} after {quiet['waited_s']:.0f} s; load {loadavg()}")
        runs = []
        for rnd in range(1, a.rounds + 1):
            for s in scenes:
                runs.append(run_scene(a, s, rnd, clips, session, work))
    finally:
        kill_children()

    (work / "runs.json").write_text(json.dumps({"clips": clips, "runs": runs, "quiet": quiet}, default=str))
    body = report(a, scenes, runs, clips, quiet, launch_text, up_spelled, (time.monotonic() - started) / 60)
    print(body)
    for c in clips:  # the transcripts, to check by eye
        print(f"{c['n']:2} ref: {c['text']}", file=sys.stderr)
        for r in runs:
            print(f"   {r['scene']} r{r['round']}: {r['text'].get(c['n'])}", file=sys.stderr)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, AFTER)
        log(f"wrote the {SECTION} section of {a.write}")


if __name__ == "__main__":
    main()
