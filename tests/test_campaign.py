"""Campaigns beyond CI (docs/campaigns.md): the seed a randomised run draws and records, the
example database (a directory, or Redis shared by several machines) whose failures
a later run replays first, and `loomcheck promote`, which turns a run's
counterexamples into committed regression logs. Each check is shown failing on a
mutant: a run without the database, a database without its scopes, a log the
promotion must refuse."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from loomcheck.cli import main
from loomcheck.fuzz import campaign
from loomcheck.fuzz.campaign import CampaignOptionError, DatabaseChoice, open_database, parse_database
from loomcheck.run.promotion import committed_folder, promote
from loomcheck.run.runner import Run
from loomcheck.contract.session import Session, hello_of
from loomcheck.machine.state_machine import PROFILES, Budget, StatefulResult, run_stateful
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.files import SPEC_ROOT
from loomcheck.spec.regressions import load_regression
from mutants import any_gate

FAILS = "resume.gate-mismatch"        # any_gate lets any gate answer a park: this fails ...
HOLDS = "gate.i-receives-entry-i"     # ... and this holds, so run_stateful runs a second round for it
SMALL = Budget(max_examples=20, steps=5, derandomize=False)
FIRST_SEED, LATER_SEED = 7, 1         # the later run draws other examples than the first


def mutant_run(seed: int, database: ExampleDatabase | None = None, budget: Budget = SMALL) -> StatefulResult:
    driver = any_gate.make()
    try:
        session = Session(driver, frozenset(hello_of(driver).features))
        return run_stateful(session, [FAILS, HOLDS], budget, seed=seed, database=database)
    finally:
        driver.close()


@pytest.fixture(scope="module")
def first_run() -> StatefulResult:
    return mutant_run(FIRST_SEED)


@pytest.fixture(scope="module")
def without_database() -> StatefulResult:
    """How far the later seed has to go on its own: the mutant check for every replay test."""
    result = mutant_run(LATER_SEED)
    assert FAILS in result.failures and HOLDS not in result.failures
    assert result.examples_to_failure[FAILS] > 1, "the later seed finds it at once anyway: pick another"
    return result


# -- seeds -----------------------------------------------------------------------------
def test_a_randomised_profile_draws_a_seed_and_records_it() -> None:
    catalogue = load_catalogue()
    drawn = [Run("reference:memory", catalogue, profile=profile, only=[HOLDS]) for profile in ("dev", "dev", "campaign")]
    for run in drawn:
        assert isinstance(run.seed, int) and run.report.seed == run.seed
    assert len({run.seed for run in drawn}) > 1  # drawn, not a constant
    assert Run("reference:memory", catalogue, profile="dev", only=[HOLDS], seed=5).report.seed == 5
    assert Run("reference:memory", catalogue, profile="ci", only=[HOLDS]).report.seed is None  # its fixed seed


def test_the_recorded_seed_draws_the_same_examples(first_run: StatefulResult) -> None:
    first, again = first_run, mutant_run(FIRST_SEED)
    assert first.examples_to_failure == again.examples_to_failure
    assert first.failures[FAILS].operations == again.failures[FAILS].operations


# -- the example database ------------------------------------------------------------
def test_a_later_run_replays_the_failure_from_a_directory_database(tmp_path: Path,
                                                                   without_database: StatefulResult) -> None:
    found = mutant_run(FIRST_SEED, DirectoryBasedExampleDatabase(tmp_path / "examples"))
    assert FAILS in found.failures and any((tmp_path / "examples").iterdir())
    replayed = mutant_run(LATER_SEED, DirectoryBasedExampleDatabase(tmp_path / "examples"))  # a new process would
    assert replayed.examples_to_failure[FAILS] == 1 < without_database.examples_to_failure[FAILS]


SCOPES = """
import json, sys
from hypothesis.database import InMemoryExampleDatabase
from loomcheck.machine import state_machine as machine
import test_campaign as t
if sys.argv[1] != "per round":
    machine.scoped = lambda database, *parts: database
budget = t.Budget(max_examples=200, steps=5, derandomize=False)
database = InMemoryExampleDatabase()
failed = t.FAILS in t.mutant_run(t.FIRST_SEED, database, budget).failures
kept = sum(len(values) for values in database.data.values())
later = t.mutant_run(t.LATER_SEED, database, budget).examples_to_failure[t.FAILS]
print(json.dumps({"failed": failed, "kept": kept, "later": later}))
"""


@pytest.mark.parametrize("scope", ["per round", "none (the mutant)"])
def test_the_failure_survives_the_round_that_leaves_its_invariant_out(scope: str) -> None:
    """Why run_stateful scopes the database by each round's invariants: Hypothesis keys a
    state machine's examples by the machine's source alone, and deletes a saved example
    that no longer fails when replayed. Unscoped, the round that runs HOLDS alone replays
    FAILS's examples (up to a tenth of max_examples of them: hence 200 here), they pass
    there, and it deletes them all: the later run then starts from nothing.
    In a process of its own: inside a long-lived test worker, what Hypothesis replays was
    seen to depend on the tests that ran before (the same defect test_mutants.run_fresh avoids)."""
    here = Path(__file__).parent
    done = subprocess.run([sys.executable, "-c", SCOPES, scope], capture_output=True, text=True, timeout=600,
                          cwd=here, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["failed"]
    if scope == "per round":
        assert seen["kept"] > 0 and seen["later"] == 1, seen
    else:
        assert seen["kept"] == 0 and seen["later"] > 1, seen


REDIS_MISSING = "needs Debian's redis-server on the PATH (apt-get install redis-server); CI installs redis-server"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5).ping())
    except redis.exceptions.ConnectionError:
        return False


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real Redis server of its own on loopback, with no persistence, stopped after the
    test whatever its outcome. Missing, it fails the test under CI and skips it elsewhere."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail(REDIS_MISSING)
        pytest.skip(REDIS_MISSING)
    log = tmp_path / "redis-server.log"
    for _ in range(3):  # another process may take the free port before the server binds it
        port = _free_port()
        with log.open("ab") as output:
            server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", str(tmp_path)],
                                      stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while server.poll() is None and not _answers(port) and time.monotonic() < deadline:
                time.sleep(0.05)
            if server.poll() is None and _answers(port):
                yield f"redis://127.0.0.1:{port}/0"
                return
        finally:
            _stop(server)
    pytest.fail(f"redis-server did not answer on loopback: {log.read_text(errors='replace')[-2000:]}")


def test_a_shared_redis_database_carries_a_failure_from_one_machine_to_another(
        redis_url: str, without_database: StatefulResult) -> None:
    one = open_database(parse_database(redis_url, "campaign"))   # two clients of one server stand for two machines
    other = open_database(parse_database(redis_url, "campaign"))
    assert type(one).__name__ == type(other).__name__ == "RedisExampleDatabase"
    assert FAILS in mutant_run(FIRST_SEED, one).failures
    assert mutant_run(LATER_SEED, other).examples_to_failure[FAILS] == 1 < without_database.examples_to_failure[FAILS]


@pytest.mark.parametrize(("option", "profile", "expected"), [
    (None, "campaign", DatabaseChoice("directory", str(Path(".loomcheck") / "examples"))),
    (None, "ci", DatabaseChoice("none")),
    (None, "dev", DatabaseChoice("none")),
    ("none", "campaign", DatabaseChoice("none")),
    ("NONE", "campaign", DatabaseChoice("none")),
    ("shared/examples", "ci", DatabaseChoice("directory", "shared/examples")),
    ("redis://db.example:6379/2", "campaign", DatabaseChoice("redis", "redis://db.example:6379/2")),
    ("rediss://db.example/0", "campaign", DatabaseChoice("redis", "rediss://db.example/0")),
    ("unix:///run/redis.sock", "campaign", DatabaseChoice("redis", "unix:///run/redis.sock")),
])
def test_database_option(option: str | None, profile: str, expected: DatabaseChoice) -> None:
    assert parse_database(option, profile) == expected


@pytest.mark.parametrize(("option", "complaint"), [
    ("http://db.example:6379/0", "redis://host:port/db"),
    ("redis://db.example:port/0", "port is not a number"),
    ("redis://db.example:6379/zero", "must be a number"),
    ("redis://:6379/0", "no host"),
    ("unix://", "socket's path"),
    ("  ", "give a directory"),
])
def test_a_bad_database_option_is_a_usage_error(option: str, complaint: str) -> None:
    with pytest.raises(CampaignOptionError, match=complaint):
        parse_database(option, "campaign")


def test_the_cli_refuses_a_bad_database_with_exit_3_and_no_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    for option, complaint in (("redis://db.example:port/0", "port is not a number"),
                              (str(a_file), "not a directory"),
                              ("redis://127.0.0.1:1/0", "cannot reach the Redis server")):
        assert main(["run", "--impl", "reference:memory", "--only", HOLDS, "--database", option,
                     "--report", str(tmp_path / "r")]) == 3
        out = " ".join(capsys.readouterr().out.split())  # the console wraps long paths
        assert complaint in out and "Traceback" not in out
    assert not (tmp_path / "r").exists()  # refused before the run began


def test_without_the_redis_package_the_message_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_redis(name: str, *args, **kwargs):
        if name == "redis" or name.startswith("hypothesis.extra.redis"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_redis)
    with pytest.raises(CampaignOptionError, match=r"pip install 'loomcheck\[campaign\]'"):
        open_database(DatabaseChoice("redis", "redis://db.example:6379/0"))


def test_only_the_campaign_profile_keeps_a_database_by_default() -> None:
    assert campaign.PROFILES_WITH_A_DATABASE == ("campaign",) and set(campaign.PROFILES_WITH_A_DATABASE) <= set(PROFILES)
    assert PROFILES["ci"].derandomize  # and ci's examples never depend on a database


# -- promote ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run's counterexample: a mutant that lets a gate pass with an answer nobody gave."""
    out = tmp_path_factory.mktemp("report")
    report = Run("python:mutants.skipped_gate:make", load_catalogue(), profile="peers-slow", only=[HOLDS],
                 report_dir=out).execute()
    assert report.results[0].status == "fail"
    return out


def test_promote_copies_a_counterexample_that_then_replays_as_a_committed_log(
        report_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    assert main(["promote", str(report_dir), "--to", str(corpus)]) == 0
    promoted = corpus / "0057-gate-i-receives-entry-i.json"
    assert f"-> {promoted}" in capsys.readouterr().out
    log = load_regression(promoted)
    assert (log.origin, log.name, log.invariants) == ("promoted", promoted.stem, [HOLDS])
    assert "loomcheck promote" in log.description and log.found is not None and log.expect is not None
    assert main(["replay", str(promoted), "--impl", "python:mutants.skipped_gate:make"]) == 1  # still catches it
    assert main(["replay", str(promoted), "--impl", "reference"]) == 0


def test_promote_skips_a_log_whose_operations_are_already_there(report_dir: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    assert main(["promote", str(report_dir), "--to", str(corpus)]) == 0
    capsys.readouterr()
    assert main(["promote", str(report_dir / "counterexamples" / f"{HOLDS}.json"), "--to", str(corpus),
                 "--name", "0057-another-name"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert [p.name for p in corpus.iterdir()] == ["0057-gate-i-receives-entry-i.json"]


def test_promote_renames_on_a_name_collision(report_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    taken = SPEC_ROOT / "regressions" / "0057-two-gate-ordering.json"  # other operations under the same name
    (corpus / "0057-gate-i-receives-entry-i.json").write_text(taken.read_text(encoding="utf-8"), encoding="utf-8")
    [done] = promote([report_dir], to=corpus)
    assert done.action == "promoted" and done.target.name == "0057-gate-i-receives-entry-i-2.json"
    assert load_regression(done.target).name == "0057-gate-i-receives-entry-i-2"  # the name is the file's stem


def test_promote_refuses_what_is_not_a_promotable_log(report_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    good = report_dir / "counterexamples" / f"{HOLDS}.json"
    raw = json.loads(good.read_text(encoding="utf-8"))
    broken = {"not-json.json": "{", "no-operations.json": json.dumps({**raw, "operations": []}),
              "unknown-op.json": json.dumps({**raw, "operations": [{"op": "teleport"}]}),
              "no-expect.json": json.dumps({k: v for k, v in raw.items() if k != "expect"}),
              "an-adr-log.json": json.dumps({**raw, "origin": "adr"})}
    for name, text in broken.items():
        bad = tmp_path / name
        bad.write_text(text, encoding="utf-8")
        assert main(["promote", str(good), str(bad), "--to", str(corpus)]) == 3, name
        out = capsys.readouterr().out
        assert str(bad) in out and "Traceback" not in out, out
    assert not corpus.exists()  # every source is checked before anything is written
    for args, complaint in ((["--name", "Not A Name", str(good)], "lower case letters"),
                            (["--name", "0057-x", str(good), str(tmp_path / "no-expect.json")], "names one counterexample")):
        assert main(["promote", "--to", str(corpus), *args]) == 3
        assert complaint in capsys.readouterr().out
    assert main(["promote", str(tmp_path / "missing"), "--to", str(corpus)]) == 3
    assert main(["promote"]) == 3


def test_promote_defaults_to_this_checkouts_regression_folder() -> None:
    assert committed_folder() == Path(str(SPEC_ROOT)).resolve() / "regressions"
