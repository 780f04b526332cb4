#!/usr/bin/env python3
"""Hours of use: the whole system as a user runs it, fed a long recording at real time.

`stt-daemon up` runs the real daemon, assistant and local model (llama-server), with the voice
on (into a WAV file, the null sink), triage, speakers and memory on; `stt-tui --dump` is the
viewer. The recording (made here: real people's clips, espeak-ng sentences, silences and
noise) plays at real time while this script, as a user would, types commands, chats, sets
timers and dictates into an Xvfb window, one thing every ~30 s.

Every SAMPLE seconds it samples, per process: resident memory, open fds, threads, CPU seconds;
the memory database's size; the queue depths (`status`: the inference queue and each lane's);
and it times each transcript (the daemon's speech_stop to its transcript) and each command
(command-execute returning to the answer).

At the end: growth per hour of each figure after warm-up (a least-squares line), the latency at
the start and the end, every error and warning logged, and the turns lost: a command or chat
turn that got its answer but is not in the memory database. Prints a Markdown report; with
--write, replaces the "Soak" section of docs/RELIABILITY.md with it.

Usage: scripts/soak [--minutes N] [--write]     (scripts/soak --short: 5 minutes, as CI runs)
"""

import argparse
import collections
import atexit
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("STT_BIN_DIR", ""))
RATE = 16_000

COMMANDS = [
    "what time is it",
    "set a timer for one minute",
    "what is the capital of France",
    "remind me to water the plants tomorrow at nine",
    "what time is it in Tokyo",
    "add a task to buy milk",
]
CHATS = [
    "What is a good name for a cat?",
    "Tell me one fact about the moon.",
    "How many legs does a spider have?",
]
SAID = [
    "The meeting moved to Thursday afternoon.",
    "Please send the report to Maria by Friday.",
    "I think we should paint the kitchen blue.",
    "Remember to call the plumber about the leak.",
]


def models_dir():
    """Where the models are, found as the tests find them (the run's own data directory is
    a temporary one)."""
    var = lambda name: os.environ.get(name) or None
    if var("STT_MODELS_DIR"):
        return var("STT_MODELS_DIR")
    base = var("STT_DATA_DIR") or (var("XDG_DATA_HOME") and str(Path(var("XDG_DATA_HOME")) / "stt")) \
        or str(Path.home() / ".local/share/stt")
    return str(Path(base) / "models")


# What this run started, stopped when it ends however it ends (Ctrl-C, SIGTERM, an error):
# `up` stops its children; nothing is left running behind a stopped soak.
STARTED = []


def stop_started():
    for proc in reversed(STARTED):
        if proc.poll() is not None:
            continue
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


def espeak(text, path):
    subprocess.run(
        ["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(path) + ".raw.wav", text],
        check=True,
    )
    subprocess.run(
        ["sox", str(path) + ".raw.wav", "-r", str(RATE), "-c", "1", "-b", "16", str(path)],
        check=True,
    )
    os.remove(str(path) + ".raw.wav")


def frames_of(path):
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (RATE, 1, 2), path
        return w.readframes(w.getnframes())


def recording(out, seconds, work, rng):
    """A WAV of `seconds`: real clips, espeak sentences, silences and low noise, at random."""
    pieces = []
    speech = Path(os.environ.get("STT_SPEECH_DIR", Path.home() / ".cache/stt/speech"))
    for sub in ("real", "test"):
        pieces += sorted((speech / sub).glob("*.wav"))
    for i, text in enumerate(SAID):
        path = work / f"said{i}.wav"
        espeak(text, path)
        pieces.append(path)
    noise = work / "noise.wav"
    subprocess.run(
        ["sox", "-n", "-r", str(RATE), "-c", "1", "-b", "16", str(noise), "synth", "3",
         "pinknoise", "vol", "0.02"],
        check=True,
    )
    clips = [frames_of(p) for p in pieces]
    noise = frames_of(noise)
    total = seconds * RATE * 2
    body = bytearray()
    while len(body) < total:
        body += rng.choice(clips)
        body += bytes(2 * RATE * rng.randint(2, 8))
        if rng.random() < 0.2:
            body += noise
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(bytes(body[:total]))
    log(f"recording: {seconds} s from {len(clips)} clips")


class Viewer:
    """`stt-tui --dump`, each event stamped as it arrives."""

    def __init__(self, env, seconds):
        self.events = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [str(BIN / "stt-tui"), "--dump", str(seconds)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append((time.monotonic(), event))

    def since(self, start):
        with self.lock:
            return [(t, e) for t, e in self.events[start:]]

    def count(self):
        with self.lock:
            return len(self.events)


def ctl(env, *args, timeout=30):
    out = subprocess.run([str(BIN / "stt-ctl"), *args], env=env, capture_output=True,
                         text=True, timeout=timeout)
    return out.returncode, out.stdout + out.stderr


def status(env):
    code, out = ctl(env, "--json", "status")
    try:
        return json.loads(out) if code == 0 else None
    except ValueError:
        return None


def proc_figures(pid):
    try:
        st = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, IndexError):
        return None
    field = lambda name: int(next(l.split()[1] for l in st.splitlines() if l.startswith(name)))
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "rss_mib": field("VmRSS:") / 1024,
        "fds": fds,
        "threads": field("Threads:"),
        "cpu_s": (int(stat[11]) + int(stat[12])) / ticks,
    }


def children(pid):
    """The processes `up` runs, by name."""
    found = {}
    for task in Path("/proc").iterdir():
        if not task.name.isdigit():
            continue
        try:
            stat = (task / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            name = (task / "comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found[name] = int(task.name)
    return found


def runs_here(work):
    """The processes whose environment points at this run's runtime directory: pid → name."""
    mark = f"XDG_RUNTIME_DIR={work}/run".encode()
    found = {}
    for task in Path("/proc").iterdir():
        if not task.name.isdigit():
            continue
        try:
            if mark in (task / "environ").read_bytes().split(b"\0"):
                found[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:
            continue
    return found


class Killer:
    """Kills a random child of `up` (the daemon, the assistant, llama-server) with SIGKILL,
    `count` times spread over `seconds`, never one killed three times in the last minute
    (`up` gives up on a child after five crashes in a minute); times each restart."""

    NAMES = ("stt-daemon", "stt-assistant", "llama-server")

    def __init__(self, up_pid, count, seconds, rng):
        self.up_pid, self.count, self.rng = up_pid, count, rng
        self.every = max(4.0, seconds / (count + 1))
        self.kills = []  # (name, killed at, back after s or None)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while len(self.kills) < self.count and not self.done.wait(self.every * self.rng.uniform(0.5, 1.0)):
            now = time.monotonic()
            recent = [k[0] for k in self.kills if now - k[1] < 60]
            names = [n for n in self.NAMES if recent.count(n) < 3]
            kids = children(self.up_pid)
            name = self.rng.choice([n for n in names if n in kids] or [None])
            if name is None:
                continue
            pid = kids[name]
            os.kill(pid, signal.SIGKILL)
            kill = [name, now, None]
            self.kills.append(kill)
            deadline = now + 60
            while time.monotonic() < deadline and not self.done.is_set():
                back = children(self.up_pid).get(name)
                if back and back != pid:
                    kill[2] = time.monotonic() - now
                    break
                time.sleep(0.1)

    def stop(self):
        self.done.set()
        self.thread.join(timeout=70)

    def failed(self):
        return any(k[2] is None for k in self.kills) or len(self.kills) < self.count

    def report(self):
        back = [k[2] for k in self.kills if k[2] is not None]
        per = {n: sum(1 for k in self.kills if k[0] == n) for n in self.NAMES}
        worst = f"{max(back):.1f} s" if back else "-"
        return (f"- kill -9: {len(self.kills)} of {self.count} done ("
                + ", ".join(f"{n} {c}" for n, c in per.items())
                + f"); restarted by `up`: {len(back)}, the slowest back after {worst}")


def growth_per_hour(points):
    """Least-squares slope of (seconds, value), per hour."""
    if len(points) < 3:
        return 0.0
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else 3600 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=120)
    ap.add_argument("--short", action="store_true", help="5 minutes, sampled every 20 s")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--profile", default="release", help="which build the binaries are")
    ap.add_argument("--kill", type=int, default=0,
                    help="kill -9 a random child of `up` this many times, spread over the run")
    args = ap.parse_args()
    minutes = 5 if args.short else args.minutes
    sample_every = 20 if args.short else 60
    seconds = int(minutes * 60)
    rng = random.Random(args.seed)

    work = Path(tempfile.mkdtemp(prefix="stt-soak-"))
    for d in ("run", "data", "state", "config/stt", "cache"):
        (work / d).mkdir(parents=True)
    os.chmod(work / "run", 0o700)
    env = dict(os.environ)
    env.update({
        "XDG_RUNTIME_DIR": str(work / "run"), "XDG_DATA_HOME": str(work / "data"),
        "XDG_STATE_HOME": str(work / "state"), "XDG_CONFIG_HOME": str(work / "config"),
        "HOME": os.environ.get("HOME", str(work)),
        "STT_MODELS_DIR": models_dir(),
    })
    (work / "config/stt/config.toml").write_text(
        f'[voice]\nenabled = true\ndevice = "wav:{work}/voice.wav"\n'
        "[triage]\nenabled = true\n[speakers]\nenabled = true\n"
        "[memory]\nenabled = true\n"
    )
    wav = work / "recording.wav"
    recording(wav, seconds + 60, work, rng)

    display = ":%d" % (90 + os.getpid() % 100)
    atexit.register(stop_started)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1024x768x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STARTED.append(xvfb)
    env["DISPLAY"] = display
    env.pop("WAYLAND_DISPLAY", None)
    time.sleep(1)
    typed = work / "typed.txt"
    xterm = subprocess.Popen(["xterm", "-e", f"cat > {typed}"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STARTED.append(xterm)

    up_log = work / "up.log"
    up = subprocess.Popen(
        [str(BIN / "stt-daemon"), "up", "--input", str(wav), "--play-at-once",
         "--log", str(up_log)],
        env=env, stdout=subprocess.DEVNULL, stderr=open(work / "up.stderr", "w"),
        start_new_session=True,
    )
    STARTED.append(up)
    started = time.monotonic()
    deadline = started + 600
    while time.monotonic() < deadline:
        if up.poll() is not None:
            log(f"stt-daemon up exited ({up.returncode}): {(work / 'up.stderr').read_text()[-2000:]}")
            sys.exit(1)
        s = status(env)
        if s and s.get("llm_reachable") and s.get("chat", {}).get("loading") is False:
            break
        time.sleep(1)
    else:
        log("the assistant and the model did not come up in 10 minutes: see " + str(up_log))
        sys.exit(1)
    log(f"up and answering after {time.monotonic() - started:.0f} s")
    viewer = Viewer(env, seconds + 300)
    STARTED.append(viewer.proc)
    time.sleep(2)

    killer = Killer(up.pid, args.kill, seconds, rng) if args.kill else None
    samples = []
    commands = []  # (text, executed at, answered at or None)
    chats = []
    t0 = time.monotonic()
    next_sample = t0
    step = 0
    db = work / "data/stt/memory.sqlite"
    while time.monotonic() - t0 < seconds:
        now = time.monotonic()
        if now >= next_sample:
            row = {"t": now - t0, "procs": {}}
            for name, pid in children(up.pid).items():
                figures = proc_figures(pid)
                if figures:
                    row["procs"][name] = figures
            row["db_kib"] = sum(p.stat().st_size for p in db.parent.glob("memory.sqlite*")) / 1024 if db.exists() else 0
            s = status(env) or {}
            row["queue"] = s.get("inference_queue")
            row["lanes"] = {l["name"]: l["queued"] for l in s.get("lanes", [])}
            samples.append(row)
            next_sample += sample_every
        kind = step % 4
        step += 1
        mark = viewer.count()
        if kind in (0, 2):
            text = COMMANDS[(step // 4) % len(COMMANDS)] if kind == 0 else "set a timer for one minute"
            ctl(env, "command-start")
            ctl(env, "command-edit", "--text", text)
            mark = viewer.count()
            at = time.monotonic()
            code, out = ctl(env, "command-execute", "--wait=15000")
            commands.append([text, at, mark, code, out.strip()])
        elif kind == 1:
            # Each chat turn's words its own, so each can be found in memory.
            text = f"{CHATS[(step // 4) % len(CHATS)]} (turn {step})"
            code, _ = ctl(env, "chat-send", text)
            chats.append([text, time.monotonic(), mark, code])
            # Chat stays on until toggled off once the reply is in.
            time.sleep(20)
            ctl(env, "chat-toggle")
        else:
            ctl(env, "dictate-start")
            time.sleep(15)
            ctl(env, "dictate-stop")
        time.sleep(max(0.0, 30 - (time.monotonic() - now)))

    # Let the last answers and writes land, then stop everything.
    if killer:
        killer.stop()
    time.sleep(20)
    events = viewer.since(0)
    ours = {pid: name for name, pid in children(up.pid).items()}
    up.send_signal(signal.SIGTERM)
    try:
        up.wait(timeout=60)
        up_exit = up.returncode
    except subprocess.TimeoutExpired:
        os.killpg(up.pid, signal.SIGKILL)
        up_exit = "killed: it did not stop within 60 s"
    time.sleep(1)
    left = runs_here(work)
    outlived = [f"{pid} {name}" for pid, name in ours.items() if left.get(pid) == name]
    stale = sorted(str(p.relative_to(work)) for p in (work / "run").rglob("*.sock"))
    viewer.proc.kill()
    xterm.kill()
    xvfb.kill()

    # Latencies: each command's execute to its answer; each transcript's speech_stop to it.
    def answer_after(mark):
        for t, e in events[mark:]:
            final = e.get("type") == "chat_message" and not e.get("partial")
            if final and e.get("role") in ("assistant", "error"):
                return t, e.get("role")
        return None, None
    command_ms = []
    answered = []
    for text, at, mark, code, out in commands:
        t, role = answer_after(mark)
        if t is not None and role == "assistant":
            command_ms.append((at - t0, (t - at) * 1000, text))
            answered.append(text)
    # Each transcript: from the end of its segment in the audio (its speech_start event plus the
    # segment's length, so the VAD's onset delay, less the pre-roll, is in it: the same each
    # time), and from the daemon's speech_stop.
    stops, starts = {}, {}
    transcript_ms, spoken_ms = [], []
    for t, e in events:
        seg = e.get("seg_id")
        if e.get("type") == "speech_start":
            starts[seg] = t
        elif e.get("type") == "speech_stop":
            stops[seg] = t
        elif e.get("type") == "transcript":
            if seg in stops:
                transcript_ms.append((t - t0, (t - stops.pop(seg)) * 1000))
            if seg in starts and "end" in e and "start" in e:
                spoken = (t - starts.pop(seg)) - (e["end"] - e["start"])
                spoken_ms.append((t - t0, spoken * 1000))
    with open(work / "events.jsonl", "w") as out:
        for t, e in events:
            out.write(json.dumps({"t": t - t0, "event": e}) + "\n")

    # Chat turns answered (a reply after it was sent).
    answered_chats = [c[0] for c in chats if c[3] == 0 and answer_after(c[2])[1] == "assistant"]
    # Lost turns: a command or chat turn answered but not in memory (counted: the same command
    # is said many times), and a chat turn acknowledged but neither answered nor in memory.
    lost = []
    unanswered = [c[0] for c in chats if c[3] == 0 and c[0] not in answered_chats]
    if db.exists():
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        kept = collections.Counter(
            r[0] for r in con.execute("SELECT text FROM log WHERE role = 'user'"))
        con.close()
        want = collections.Counter(answered) + collections.Counter(answered_chats)
        lost = [f"{t} ({want[t] - kept[t]} of {want[t]})" for t in want if kept[t] < want[t]]
        # What fails the run: a text answered and never kept at all (as before stop 56). A
        # shortfall of a text said many times is reported, not yet failed on: the two-hour
        # run found its causes (RELIABILITY.md), to be fixed first.
        # (Chat turns are reported only, for now: one sent while the model server is busy
        # can be dropped by a probe that calls it down, RELIABILITY.md.)
        missing = [t for t in set(answered) if kept[t] == 0]
        dropped = [t for t in unanswered if kept[t] == 0]
    else:
        lost = ["(no memory database)"]
        missing = lost
        dropped = unanswered
    errors = [l for l in up_log.read_text(errors="replace").splitlines()
              if " ERROR " in l or " WARN " in l]

    report = render(samples, command_ms, transcript_ms, spoken_ms, errors, lost, len(commands),
                    len(chats), minutes, sample_every, args.profile)
    report += (f"\n- chat turns acknowledged but not answered (the assistant or the model killed "
               f"meanwhile): {len(unanswered)}; of them not in memory either: {len(dropped)}"
               + (f" ({'; '.join(dropped)})" if dropped else ""))
    report += f"\n- `up` exited {up_exit} on SIGTERM; processes left after it: {len(outlived)}" + \
        (f" ({', '.join(outlived)})" if outlived else "") + f"; sockets left: {len(stale)}" + \
        (f" ({', '.join(stale)})" if stale else "")
    if killer:
        report += "\n" + killer.report()
    print(report)
    if args.write:
        doc = ROOT / "docs/RELIABILITY.md"
        text = doc.read_text()
        # A run with kills has a section of its own.
        mark = "soak-kill" if args.kill else "soak"
        start, end = f"<!-- {mark}: start -->", f"<!-- {mark}: end -->"
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        doc.write_text(f"{head}{start}\n{report}\n{end}{tail}")
    log(f"kept in {work}")
    failed = missing or outlived or stale or up_exit != 0 or (killer and killer.failed())
    sys.exit(1 if failed else 0)


def render(samples, command_ms, transcript_ms, spoken_ms, errors, lost, n_commands, n_chats, minutes,
           every, profile):
    warm = [s for s in samples if s["t"] >= min(120, samples[-1]["t"] / 4)] if samples else []
    lines = [
        f"`scripts/soak --minutes {minutes:g}` ({profile} build, {time.strftime('%Y-%m-%d')}): "
        f"sampled every {every} s ({len(samples)} samples; growth is the least-squares slope "
        "after the first 2 minutes or quarter, per hour).",
        "",
        "| process | RSS MiB (start → end) | RSS/h | fds (start → end) | fds/h | threads | CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    names = sorted({n for s in samples for n in s["procs"]})
    for name in names:
        pts = [(s["t"], s["procs"][name]) for s in warm if name in s["procs"]]
        if not pts:
            continue
        rss = growth_per_hour([(t, p["rss_mib"]) for t, p in pts])
        fds = growth_per_hour([(t, p["fds"]) for t, p in pts])
        a, b = pts[0][1], pts[-1][1]
        lines.append(
            f"| {name} | {a['rss_mib']:.0f} → {b['rss_mib']:.0f} | {rss:+.1f} | {a['fds']} → "
            f"{b['fds']} | {fds:+.1f} | {a['threads']} → {b['threads']} | {b['cpu_s']:.0f} |"
        )
    if warm:
        dbg = growth_per_hour([(s["t"], s["db_kib"]) for s in warm])
        lines.append("")
        lines.append(f"Memory database: {warm[0]['db_kib']:.0f} → {warm[-1]['db_kib']:.0f} KiB "
                     f"({dbg:+.0f} KiB/h). Deepest queue seen: inference "
                     f"{max((s['queue'] or 0) for s in samples)}, lanes "
                     + ", ".join(f"{n} {max(s['lanes'].get(n, 0) for s in samples)}"
                                 for n in sorted({n for s in samples for n in s['lanes']})) + ".")

    def quarter(points):
        if len(points) < 4:
            return None, None
        k = max(1, len(points) // 4)
        first = statistics.median(v for _, v in points[:k])
        last = statistics.median(v for _, v in points[-k:])
        return first, last

    lines.append("")
    lines.append("| command (execute → answer) | runs | median ms, first quarter | last quarter | change |")
    lines.append("|---|---|---|---|---|")
    for text in sorted({c[2] for c in command_ms}):
        pts = [(t, ms) for t, ms, said in command_ms if said == text]
        first, last = quarter(pts) if len(pts) >= 4 else (pts[0][1], pts[-1][1])
        change = f"{(last - first) / first * 100:+.0f}%" if first else "-"
        lines.append(f"| {text} | {len(pts)} | {first:.0f} | {last:.0f} | {change} |")
    lines.append("")
    for label, pts in (("transcript (the segment's end in the audio → transcript: from its speech_start event "
                        "plus its length)", spoken_ms),
                       ("transcript (speech stop, after the VAD's hangover → transcript)",
                        transcript_ms)):
        first, last = quarter(pts)
        if first is None:
            lines.append(f"- {label}: {len(pts)} timed, too few to compare")
        else:
            change = (last - first) / first * 100 if first else 0.0
            lines.append(f"- {label}: {len(pts)} timed; median of the first quarter {first:.0f} ms, "
                         f"of the last {last:.0f} ms ({change:+.0f}%)")
    lines.append(f"- turns: {n_commands} commands and {n_chats} chat turns sent; lost (answered "
                 f"but not in memory): {len(lost)}{': ' + ', '.join(lost) if lost else ''}")
    lines.append(f"- errors and warnings logged: {len(errors)}")
    for line in errors[:20]:
        lines.append(f"  - `{line[:160]}`")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
