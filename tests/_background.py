"""Long test runs started in a background process as soon as collection selects a test that
needs them (tests/conftest.py), so that they overlap with the rest of the suite: the CUDA
simulator suite (tests/test_cuda.py) and the CUDA compile check (tests/test_cuda_compile.py) each
take a core for minutes while the main suite runs on the other."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = str(Path(__file__).parent.parent / "src")
_RUNS: dict = {}


class Run:
    """One background process: its folder (for the files it writes) and its output."""

    def __init__(self, name: str, argv: list, env: dict):
        self.folder = Path(tempfile.mkdtemp(prefix=f"numgrad-{name}-"))
        env = dict(os.environ, **env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
        self.output = open(self.folder / "output.txt", "w+")
        self.process = subprocess.Popen(
            [sys.executable, *[str(a).format(folder=self.folder) for a in argv]],
            cwd=Path(SRC).parent, env={k: v.format(folder=self.folder) for k, v in env.items()},
            stdout=self.output, stderr=subprocess.STDOUT, text=True)
        self.text = None

    def wait(self, timeout: float) -> str:
        """Waits for the process (killing it after ``timeout`` s); its output."""
        if self.text is None:
            late = False
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:  # (killed, its output kept for the message)
                self.process.kill()
                self.process.wait()
                late = True
            self.output.seek(0)
            self.text = self.output.read()
            self.output.close()
            if late:
                self.text += f"\n[killed after {timeout:.0f} s: it had not finished]\n"
        return self.text

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self.output.closed:
            self.output.close()


def start(name: str, argv: list, env: dict | None = None) -> Run:
    """Starts the run ``name`` once (``{folder}`` in ``argv`` and ``env`` is its folder)."""
    if name not in _RUNS:
        _RUNS[name] = Run(name, argv, env or {})
    return _RUNS[name]


def stop_all() -> None:
    """Ends the runs still going when the session ends (an interrupted session) and removes
    their folders."""
    for run in _RUNS.values():
        run.stop()
        shutil.rmtree(run.folder, ignore_errors=True)
