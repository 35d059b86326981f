"""The `loomcheck` command line: every command's arguments, and the function each runs
(docs/cli.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loomcheck import __version__
from loomcheck.cli.commands import (catalogue_command, diff_command, docs_command, fleet_command, matrix_command,
                                    serve_command)
from loomcheck.cli.replay_commands import promote_command, replay_command, repro_command
from loomcheck.cli.run_command import run_command


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loomcheck", description="Conformance and model checking for Loom-semantics durable-execution kernels.")
    parser.add_argument("--version", action="version", version=f"loomcheck {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _run_arguments(commands)
    _serve_arguments(commands)
    _log_arguments(commands)
    _other_arguments(commands)
    return parser


def _run_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`loomcheck run`."""
    run = commands.add_parser("run", help="run the catalogue against an implementation and print the conformance table")
    run.add_argument("--impl", default="reference", help="reference (default, SQLite, synchronous=FULL), reference:sqlite:normal (synchronous=NORMAL: survives a process crash, not a power loss; docs/stores.md), reference:memory, python:MODULE:FACTORY, python:FILE.py:FACTORY or stdio:COMMAND (docs/protocol.md)")
    run.add_argument("--profile", default="ci", help="ci (default: fixed seeds, bounded), dev, campaign, peers-slow (a slow peer: 10 examples of 8 steps)")
    run.add_argument("--profile-checks", choices=("advisory", "strict"), default="advisory",
                     help="checks resting on a choice the ADRs leave open (spec/profiles.toml): advisory (default) "
                          "reports a disagreement apart from conformance, never in the exit status; strict counts it")
    run.add_argument("--only", nargs="+", metavar="ID", help="invariant ids (or prefixes such as gate.) to run")
    run.add_argument("--report", type=Path, default=Path("loomcheck-report"), metavar="DIR", help="where report.json, junit.xml and counterexamples go (default: ./loomcheck-report)")
    run.add_argument("--seed", type=int, help="a seed for the state machine (instead of the profile's fixed derandomised one; "
                     "a randomised profile without it draws one and records it in report.json)")
    run.add_argument("--database", metavar="DIR|URL|none", help="the Hypothesis example database failing examples are kept "
                     "in and replayed from: a directory, redis://host:port/db (pip install 'loomcheck[campaign]') or none "
                     "(default: .loomcheck/examples for the campaign profile, none for the others; docs/campaigns.md)")
    run.add_argument("--explore-depth", type=int, metavar="N", help="the explorer's bound: every history of N operations "
                     "per scenario (default: the profile's, 8 for ci, 14 for campaign; 0 skips it)")
    run.add_argument("--explore-budget", type=float, metavar="S", help="seconds the explorer may take in all (default: "
                     "the profile's); what it does not finish is reported unknown")
    run.add_argument("-v", "--verbose", action="count", default=0,
                     help="also every invariant's row (not-applicable ones included), what each documented hazard "
                          "showed, the explorer's table and each corpus")
    run.add_argument("-q", "--quiet", action="count", default=0,
                     help="only the failures' explanations and the verdict line (no progress in a log)")
    _transport_arguments(run)
    _manifest_arguments(run)
    run.set_defaults(command=run_command)


def _serve_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`loomcheck serve`."""
    serve = commands.add_parser("serve", help="serve a Python kernel (the reference by default) over the driver protocol on stdin/stdout")
    serve.add_argument("--impl", default="reference", help="reference (default: SQLite, durable under $LOOMCHECK_STORE_DIR, synchronous=FULL), reference:sqlite:normal (synchronous=NORMAL), reference:memory or python:MODULE:FACTORY")
    serve.set_defaults(command=serve_command)


def _log_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`loomcheck replay`, `repro` and `promote`: the commands on one counterexample or log."""
    rep = commands.add_parser("replay", help="re-run one regression log and show what differs")
    rep.add_argument("file", metavar="FILE|NAME", help="a regression log's path, or a committed one's name "
                                                        "(0057-three-gate-completion), found from any directory")
    rep.add_argument("--impl", default="reference")
    rep.add_argument("--record-expected", action="store_true",
                     help="maintainers: write this implementation's outcomes and logs into the file as its 'expect'")
    rep.add_argument("--html", type=Path, metavar="OUT",
                     help="also write the replay as a page: its timeline, with the events each violation cites")
    rep.set_defaults(command=replay_command)

    repro = commands.add_parser("repro", help="write a standalone reproducer of a counterexample for the implementation's "
                                              "maintainers: repro.py in process, or the exact stdio exchange and repro.sh")
    repro.add_argument("file", metavar="FILE|NAME", help="a counterexample's path, or a committed regression log's name")
    repro.add_argument("--impl", default="reference")
    repro.add_argument("--out", type=Path, metavar="DIR", help="where to write it (default: FILE's name + '.repro/' "
                                                                 "beside it; for a NAME, NAME.repro/ here)")
    repro.set_defaults(command=repro_command)

    promote = commands.add_parser("promote", help="copy a run's counterexamples into the committed regression logs")
    promote.add_argument("sources", nargs="*", type=Path, metavar="REPORT_DIR|COUNTEREXAMPLE.json",
                         help="a report folder (its counterexamples/) or counterexample files")
    promote.add_argument("--to", type=Path, metavar="DIR",
                         help="the folder of committed logs (default: spec/regressions/ of this source checkout)")
    promote.add_argument("--name", metavar="NAME", help="the promoted log's name, for one counterexample "
                         "(default: ADR-invariant, say 0057-gate-i-receives-entry-i)")
    promote.set_defaults(command=promote_command)


def _other_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`loomcheck catalogue`, `fleet`, `docs`, `diff` and `matrix`."""
    cat = commands.add_parser("catalogue", help="list the invariants (or print the JSON export)")
    cat.add_argument("--json", action="store_true")
    cat.set_defaults(command=catalogue_command)

    fleet = commands.add_parser("fleet", help="write a corpus of mixed-version fleet logs with their ADR 0104 D2 verdicts")
    # Taken as text and checked in _fleet, so a bad value exits 3 with a message (argparse would exit 2).
    fleet.add_argument("--count", metavar="N", help="how many generated cases (the fixed cases come on top)")
    fleet.add_argument("--seed", metavar="S", default="0", help="the seed (default 0): the same seed and count give the same file")
    fleet.add_argument("--out", metavar="DIR", help="the directory corpus.json is written to")
    fleet.set_defaults(command=fleet_command)

    docs = commands.add_parser("docs", help="render the catalogue as Markdown, with each invariant's status in the reports given")
    docs.add_argument("--report", type=Path, nargs="+", action="extend", default=[], metavar="REPORT.json",
                      help="a report.json whose statuses to show (repeatable)")
    docs.add_argument("--out", type=Path, metavar="FILE", help="write here (default: stdout)")
    docs.set_defaults(command=docs_command)

    # Positionals are optional to argparse and checked in the command, so a missing one exits 3 with a message.
    dif = commands.add_parser("diff", help="compare two report.json files: newly failing, fixed, still failing, changed")
    dif.add_argument("base", nargs="?", type=Path, metavar="BASE.json")
    dif.add_argument("candidate", nargs="?", type=Path, metavar="CANDIDATE.json")
    dif.set_defaults(command=diff_command)

    matrix = commands.add_parser("matrix", help="write the HTML conformance matrix of several report.json files")
    matrix.add_argument("reports", nargs="*", type=Path, metavar="REPORT.json")
    matrix.add_argument("--out", type=Path, default=Path("matrix.html"), metavar="FILE", help="default: ./matrix.html")
    matrix.set_defaults(command=matrix_command)


def _transport_arguments(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("stdio implementations (docs/protocol.md)")
    group.add_argument("--timeout", type=float, default=30.0, metavar="S", help="seconds one answer may take (default 30)")
    group.add_argument("--deadline", type=float, metavar="S", help="seconds the whole run may take; then it stops with a partial report")
    group.add_argument("--restarts", type=int, default=3, metavar="N", help="new processes after faults, per run (default 3)")
    group.add_argument("--max-line", type=int, default=64 * 1024 * 1024, metavar="BYTES", help="the longest line accepted (default 64 MiB)")
    group.add_argument("--validate-protocol", action="store_true", help="check every message, both ways, against spec/schemas/protocol/")


def _manifest_arguments(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("implementation manifests (known failures, unsupported features)")
    group.add_argument("--manifest", type=Path, metavar="FILE",
                       help="a TOML manifest: the failures it expects do not fail the run; its unsupported features count as undeclared")
    group.add_argument("--write-manifest", type=Path, metavar="FILE",
                       help="after the run, write the manifest it calls for (reasons kept from --manifest, or from FILE if it exists)")
    group.add_argument("--strict-manifest", action="store_true", help="exit 1 when an invariant the manifest expects to fail passes")
