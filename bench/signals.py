"""SIGINT and SIGTERM at random moments of a real `loomcheck run`: how many leave a valid
partial report (report.json: complete false, stopped "interrupted") and exit 2. Not a
section of `python -m loomcheck.bench`: it judges no speed (docs/bench.md#outside-the-sections).

    python -m loomcheck.bench.signals                  # 40 moments, about five minutes
    python -m loomcheck.bench.signals --count 10 --seed 3
    python -m loomcheck.bench.signals --pythonpath /tmp/base   # another checkout: a directory
                                                       # holding loomcheck/ (before and after a change)"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["-m", "loomcheck", "run", "--impl", "reference:memory", "--only", "gate.", "--profile", "ci"]


def handler_installed(pid: int, signum: int = signal.SIGTERM) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
    return bool(mask >> (signum - 1) & 1)


def one(moment: float, signum: int, env: dict[str, str], workdir: Path) -> dict[str, object]:
    report = workdir / "report"
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, *COMMAND, "--report", str(report)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=workdir)
    time.sleep(max(0.0, moment - (time.monotonic() - began)))
    ours = handler_installed(child.pid)
    ended_first = child.poll() is not None
    if not ended_first:
        child.send_signal(signum)
    try:
        out, err = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
    verdict = _read(report / "report.json")
    return {"moment": round(moment, 3), "signal": signal.Signals(signum).name, "handler": ours,
            "ended before the signal": ended_first, "exit": child.returncode, "report": verdict,
            "traceback": "Traceback" in out + err,
            "ok": child.returncode == 2 and verdict == "interrupted" and "Traceback" not in out + err}


def _read(path: Path) -> str:
    """"interrupted" for a valid partial report that says so; else what is wrong with it."""
    from loomcheck.reports.model import Report

    try:
        report = Report.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no report"
    except ValueError as exc:
        return f"invalid: {str(exc)[:60]}"
    if report.complete:
        return "complete"
    return "interrupted" if report.stopped == "interrupted" else f"partial, stopped {report.stopped!r}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loomcheck.bench.signals", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pythonpath", help="a directory put first on the child's PYTHONPATH")
    parser.add_argument("--json", type=Path, help="also write every line as JSON here")
    args = parser.parse_args(argv)
    draw = random.Random(args.seed)
    early = round(args.count * 0.4)
    moments = [draw.uniform(0.0, 1.0) for _ in range(early)] + [draw.uniform(1.0, 10.0) for _ in range(args.count - early)]
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([args.pythonpath, *filter(None, [env.get("PYTHONPATH")])])
    lines = []
    for number, moment in enumerate(moments):
        signum = (signal.SIGINT, signal.SIGTERM)[number % 2]
        with tempfile.TemporaryDirectory(prefix="loomcheck-signals-") as workdir:
            line = one(moment, signum, env, Path(workdir))
        lines.append(line)
        print(json.dumps(line), flush=True)
    sent = [line for line in lines if not line["ended before the signal"]]
    good = sum(bool(line["ok"]) for line in sent)
    early_ones = [line for line in sent if not line["handler"]]
    print(f"{good}/{len(sent)} signals left a valid partial report (stopped interrupted) and exit 2; "
          f"{len(early_ones)} were sent before loomcheck's handler was installed, "
          f"{sum(bool(line['ok']) for line in early_ones)} of them still did; "
          f"{len(lines) - len(sent)} runs ended before their moment (no signal sent)")
    if args.json:
        args.json.write_text(json.dumps(lines, indent=1) + "\n", encoding="utf-8")
    return 0 if good == len(sent) else 1


if __name__ == "__main__":
    raise SystemExit(main())
