"""Campaigns beyond CI (docs/campaigns.md): the seed a randomised run draws and logs, and the
Hypothesis example database a long run keeps its failing examples in.

    --database none                    no database (every profile but campaign)
    --database DIR                     DirectoryBasedExampleDatabase (campaign's default: .loomcheck/examples)
    --database redis://host:port/db    RedisExampleDatabase, one database for several machines
                                       (needs the `redis` package: pip install 'loomcheck[campaign]')

The database is a cache Hypothesis may invalidate (an edit to the state machine
changes its key); the committed regression logs are the record, and
`loomcheck promote` copies a run's counterexamples there."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

DEFAULT_DIRECTORY = Path(".loomcheck") / "examples"
REDIS_SCHEMES = ("redis", "rediss", "unix")
PROFILES_WITH_A_DATABASE = ("campaign",)  # ci stays reproducible: a replayed example would change its report


class CampaignOptionError(ValueError):
    """A usage error (exit 3): a bad --database value, or Redis asked for without its package or server."""


def draw_seed() -> int:
    """A fresh seed for a randomised run: logged in report.json so `--seed N` draws the same examples."""
    return secrets.randbits(32)


def run_seed(seed: int | None, derandomize: bool) -> int | None:
    """The seed a run uses and records: the one given; none for a derandomised profile (it
    has its fixed seed); else a fresh one, so no randomised run goes unrecorded."""
    if seed is not None or derandomize:
        return seed
    return draw_seed()


@dataclass(frozen=True)
class DatabaseChoice:
    kind: Literal["none", "directory", "redis"]
    where: str = ""

    def describe(self) -> str:
        return {"none": "none", "directory": f"{self.where} (directory)", "redis": f"{self.where} (Redis)"}[self.kind]


def parse_database(option: str | None, profile: str) -> DatabaseChoice:
    """What `--database` asks for; without it, the profile's default."""
    if option is None:
        return DatabaseChoice("directory", str(DEFAULT_DIRECTORY)) if profile in PROFILES_WITH_A_DATABASE \
            else DatabaseChoice("none")
    text = option.strip()
    if not text:
        raise CampaignOptionError("--database: give a directory, redis://host:port/db or none")
    if text.lower() == "none":
        return DatabaseChoice("none")
    if "://" in text:
        return DatabaseChoice("redis", _checked_redis_url(text))
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise CampaignOptionError(f"--database {text}: exists and is not a directory")
    return DatabaseChoice("directory", text)


def _checked_redis_url(url: str) -> str:
    """redis-py reads a malformed URL leniently (a non-numeric db is silently dropped):
    check the parts it would misread here, with a message naming them."""
    parts = urlsplit(url)
    if parts.scheme not in REDIS_SCHEMES:
        raise CampaignOptionError(f"--database {url}: a URL must be redis://host:port/db, rediss://... or "
                                  f"unix:///path (not {parts.scheme}://)")
    if parts.scheme == "unix":
        if not parts.path:
            raise CampaignOptionError(f"--database {url}: a unix:// URL needs the socket's path")
        return url
    if not parts.hostname:
        raise CampaignOptionError(f"--database {url}: no host (redis://host:port/db)")
    try:
        parts.port
    except ValueError:
        raise CampaignOptionError(f"--database {url}: the port is not a number from 0 to 65535") from None
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise CampaignOptionError(f"--database {url}: the database must be a number (redis://host:port/0), not {db!r}")
    return url


def open_database(choice: DatabaseChoice) -> ExampleDatabase | None:
    """The Hypothesis database for a choice. A Redis server is pinged here, so an
    unreachable one stops the run before it starts instead of failing it at its first
    saved example."""
    if choice.kind == "none":
        return None
    if choice.kind == "directory":
        return DirectoryBasedExampleDatabase(choice.where)
    try:
        from hypothesis.extra.redis import RedisExampleDatabase
        import redis
    except ImportError:
        raise CampaignOptionError(f"--database {choice.where}: needs the redis package: "
                                  f"pip install 'loomcheck[campaign]'") from None
    client = redis.Redis.from_url(choice.where, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        raise CampaignOptionError(f"--database {choice.where}: cannot reach the Redis server: {exc}") from None
    return RedisExampleDatabase(client)


class ScopedDatabase(ExampleDatabase):
    """Another database's entries under a prefix of its keys.

    Hypothesis keys a state machine's examples by the machine class's source text
    alone, so without a scope every selection of invariants and every kernel would
    share one key: and Hypothesis deletes a saved example that no longer fails when
    replayed. A later round of run_stateful (which leaves out the invariants already
    failed) would then delete the failures the first round saved, and a kernel that
    passes would delete another kernel's."""

    def __init__(self, inner: ExampleDatabase, scope: bytes) -> None:
        super().__init__()
        self.inner = inner
        self.scope = scope

    def __repr__(self) -> str:
        return f"ScopedDatabase({self.inner!r}, {self.scope!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScopedDatabase) and (self.inner, self.scope) == (other.inner, other.scope)

    def __hash__(self) -> int:
        return hash((id(self.inner), self.scope))

    def _key(self, key: bytes) -> bytes:
        return self.scope + b":" + key

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(self._key(key))

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self._key(key), value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self._key(key), value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self._key(src), self._key(dest), value)


def scoped(database: ExampleDatabase | None, *parts: str) -> ExampleDatabase | None:
    """`database` with its keys scoped to `parts` (say, a kernel's name, or a round's invariants)."""
    if database is None:
        return None
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return ScopedDatabase(database, b"loomcheck." + digest.encode("ascii"))
