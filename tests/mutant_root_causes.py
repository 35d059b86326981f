"""Each seeded mutant run on a realistic selection (the invariants written for it, CATCHES, plus the
generic kernel invariants every bug also tends to break), in a fresh process as a user runs it:
per mutant, the invariants failed against the root causes reported, and whether the first root
cause names an invariant written for it.

    .venv/bin/python tests/mutant_root_causes.py [--jobs 2] [--kernel reference|permuted] [MUTANT ...]

tests/test_mutant_root_causes.py asserts the last column for every mutant."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from loomcheck.run.rootcauses import GENERIC  # noqa: E402
from loomcheck.reports.model import Report  # noqa: E402
from loomcheck.spec.catalogue import load_catalogue  # noqa: E402
from mutants import CATCHES  # noqa: E402

# A slow peer's budget (10 examples of 8 steps) and no explorer: the battery of pairs already proves
# each is caught at the ci budget; this one is about how what is caught is reported.
PROFILE = ("--profile", "peers-slow", "--explore-depth", "0")
# Mutants whose bug the state machine does not reach at that budget: the explorer runs for them too,
# or the state machine runs at the ci budget.
BUDGETS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("effect_twice_on_success", "parks_in_call_order", "resume_as_answers_crash", "always_full_scan",
                     "overwritten_decisions", "recovery_resumes", "loose_audit_records", "closed_audit_list"),
                    PROFILE[:2]),
    **dict.fromkeys(("normalised_answers", "pinned_resume_as"), ("--explore-depth", "0")),
}
# Mutants whose bug is in the view digest: the permuted reference digests views over a canonical JSON
# of its own, which would mend the bug, so these run in the permuted reference with loomcheck's bytes.
DIGEST_BUGS = ("short_digest", "sorted_dumps_digest", "shallow_views")
DEMONSTRATED = ("hazard", "residual", "not-reproduced")


@dataclass(frozen=True)
class Outcome:
    mutant: str
    failed: list[str]
    causes: list[str]   # heads, in the report's order
    demonstrations: list[str]
    seconds: float
    exit: int

    @property
    def first_is_written_for_it(self) -> bool:
        return bool(self.causes) and self.causes[0] in CATCHES[self.mutant]


def selection(mutant: str) -> list[str]:
    return list(dict.fromkeys([*CATCHES[mutant], *GENERIC]))


KERNELS = {"reference": "python:mutants.{}:make", "permuted": "python:permuted:{}"}  # tests/permuted


def impl(mutant: str, kernel: str) -> str:
    if kernel == "permuted" and mutant in DIGEST_BUGS:
        return f"python:permuted:{mutant}_with_loomcheck_digests"
    return KERNELS[kernel].format(mutant)


def profile_checks(mutant: str) -> tuple[str, ...]:
    """A mutant written against a profile choice only is reported as a root cause when profile
    checks are counted, which is how its user would look for it."""
    catalogue = load_catalogue()
    profiled = all(catalogue.get(i).profile is not None for i in CATCHES[mutant])
    return ("--profile-checks", "strict") if profiled else ()


def run(mutant: str, kernel: str = "permuted") -> Outcome:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as report_dir:
        done = subprocess.run([sys.executable, "-m", "loomcheck", "run", "--impl", impl(mutant, kernel),
                               "--only", *selection(mutant), "--report", report_dir,
                               *BUDGETS.get(mutant, PROFILE), *profile_checks(mutant)],
                              capture_output=True, text=True, timeout=600, env=env)
        report = Report.model_validate_json((Path(report_dir) / "report.json").read_text())
    return Outcome(mutant, [r.id for r in report.results if r.status == "fail"], [c.head for c in report.rootCauses],
                   [f"{r.id} {r.status}" for r in report.results if r.status in DEMONSTRATED],
                   round(time.monotonic() - began, 1), done.returncode)


def run_all(mutants: list[str], jobs: int = 2, kernel: str = "permuted") -> list[Outcome]:
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda mutant: run(mutant, kernel), mutants))


def table(outcomes: list[Outcome]) -> str:
    lines = ["| mutant | invariants failed | root causes | first root cause | written for it |",
             "| --- | ---: | ---: | --- | --- |"]
    for o in outcomes:
        first = o.causes[0] if o.causes else ("(demonstrated: " + ", ".join(o.demonstrations) + ")"
                                              if o.demonstrations else "(none)")
        verdict = "yes" if o.first_is_written_for_it else ("demonstration" if not o.causes and o.demonstrations else "NO")
        lines.append(f"| {o.mutant} | {len(o.failed)} | {len(o.causes)} | `{first}` | {verdict} |")
    failed, causes = sum(len(o.failed) for o in outcomes), sum(len(o.causes) for o in outcomes)
    lines.append(f"| **{len(outcomes)} mutants** | {failed} | {causes} | | "
                 f"{sum(o.first_is_written_for_it for o in outcomes)} yes |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="*", help="default: every mutant in CATCHES")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kernel", choices=list(KERNELS), default="permuted",
                        help="each mutant as written, or inside the permuted reference (default)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.mutants if m not in CATCHES]
    if unknown:
        parser.error(f"not a mutant: {', '.join(unknown)}")
    began = time.monotonic()
    outcomes = run_all(args.mutants or list(CATCHES), args.jobs, args.kernel)
    print(table(outcomes))
    print(f"\n{time.monotonic() - began:.0f} s wall, {sum(o.seconds for o in outcomes):.0f} s in runs, {args.jobs} jobs")
    return 0 if all(o.first_is_written_for_it or (not o.causes and o.demonstrations) for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
