"""A private Prefect API server for the adapter: the environment Prefect reads at import (a
temporary home, a loopback port, everything that could reach the network or act behind the
suite's back switched off), set when this module is imported, and the server on loopback in its
own process group. Part of the Prefect glue (NOTES.md), rendered into every Prefect reproducer."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path


# -- the environment, before Prefect is imported ---------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Home:
    """The temp dir and loopback port of this process's Prefect (one per process: Prefect's
    settings are process-wide)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="loomcheck-prefect-"))
        self.port = free_port()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def environment(self) -> dict[str, str]:
        off = "false"
        return {
            "PREFECT_HOME": str(self.dir / "home"),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{self.dir / 'prefect.db'}",
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(self.dir / "storage"),
            "PREFECT_PROFILES_PATH": str(self.dir / "profiles.toml"),
            # nothing may reach the network
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": off,
            "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": off,
            "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": off,
            "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": off,
            "PREFECT_SERVER_UI_ENABLED": off,
            "PREFECT_UI_ENABLED": off,
            "PREFECT_SERVER_EPHEMERAL_ENABLED": off,
            "PREFECT_LOGGING_TO_API_ENABLED": off,
            "PREFECT_LOGGING_LEVEL": "CRITICAL",
            # background services that would act on the runs behind the suite's back
            "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": off,
            "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_FOREMAN_ENABLED": off,
            "PREFECT_SERVER_SERVICES_PAUSE_EXPIRATIONS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_CANCELLATION_CLEANUP_ENABLED": off,
            "PREFECT_SERVER_SERVICES_REPOSSESSOR_ENABLED": off,
            "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_CLEANUP_RECONCILER_ENABLED": off,
        }


# -- the server ----------------------------------------------------------------------------
class Server:
    """A Prefect API server on loopback, in its own process group."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.process: subprocess.Popen[bytes] | None = None
        atexit.register(self.stop, remove=True)

    def start(self, timeout: float = 90.0) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self.home.dir.mkdir(parents=True, exist_ok=True)
        log = open(self.home.dir / "server.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(self.home.port), "--log-level", "error", "--lifespan", "on"],
            env={**os.environ, **self.home.environment()}, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Prefect server exited ({self.process.returncode}); "
                                   f"see {self.home.dir / 'server.log'}")
            try:
                with urllib.request.urlopen(f"{self.home.api_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the Prefect server did not answer within {timeout} s")

    def stop(self, remove: bool = False) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)  # the group: uvicorn and anything it forked
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            except ProcessLookupError:
                pass
        if remove:
            shutil.rmtree(self.home.dir, ignore_errors=True)


HOME = Home()
os.environ.update(HOME.environment())  # before Prefect is imported: it reads its settings then
SERVER = Server(HOME)
