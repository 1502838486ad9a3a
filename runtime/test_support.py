"""What the tests of both runtime scripts share: a script running in a
subprocess on a private socket directory, and a TestCase that starts such
runtimes with handler modules on PYTHONPATH and stops them after each test.
Each test module subclasses both with its own protocol's client.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

WAIT = 10.0  # upper bound for every wait in these tests; never an expectation


def wait_for(predicate, timeout=WAIT, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Process:
    """The script SCRIPT running in a subprocess on a private socket directory."""

    SCRIPT = None

    def __init__(self, tmp, handler, socket_dir, **env):
        self.socket_dir = socket_dir
        self.socket_path = os.path.join(socket_dir, env.get("ASYA_SOCKET_NAME", "asya-runtime.sock"))
        self.ready_path = os.path.join(socket_dir, "runtime-ready")
        self.stderr_path = os.path.join(tmp, "stderr-%d.log" % time.monotonic_ns())
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("ASYA_")}
        full_env.update({
            "PYTHONPATH": os.path.join(tmp, "mods"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "ASYA_SOCKET_DIR": socket_dir,
            "ASYA_HANDLER": handler,
            # Never the real /dev/termination-log.
            "ASYA_TERMINATION_LOG": os.path.join(tmp, "termination-log-unused"),
        })
        full_env.update(env)
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, self.SCRIPT], env=full_env,
                                     stdout=subprocess.DEVNULL, stderr=self._stderr)

    def wait_ready(self):
        ok = wait_for(lambda: os.path.exists(self.ready_path) or self.proc.poll() is not None)
        if not ok or self.proc.poll() is not None:
            raise AssertionError("runtime not ready; stderr:\n" + self.stderr())
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=WAIT)

    def exit_code(self):
        return self.proc.wait(timeout=WAIT)

    def stderr(self):
        self._stderr.flush()
        with open(self.stderr_path, "r", errors="replace") as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)
        self._stderr.close()


class RuntimeTestCase(unittest.TestCase):
    """Starts RUNTIME (a Process) with MODULES (name: source) on its
    PYTHONPATH, and stops every runtime a test started."""

    RUNTIME = Process
    MODULES = {}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="asya-rt-")
        self.mods = os.path.join(self.tmp, "mods")
        os.mkdir(self.mods)
        for name, src in self.MODULES.items():
            with open(os.path.join(self.mods, name + ".py"), "w") as f:
                f.write(textwrap.dedent(src))
        self.runtimes = []

    def tearDown(self):
        for rt in self.runtimes:
            rt.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, handler, ready=True, **env):
        # Every runtime of a test gets its own directory; the first uses
        # "sock", which some tests prepare beforehand.
        n = len(self.runtimes)
        socket_dir = env.pop("socket_dir", os.path.join(self.tmp, "sock%s" % (n or "")))
        rt = self.RUNTIME(self.tmp, handler, socket_dir, **env)
        self.runtimes.append(rt)
        return rt.wait_ready() if ready else rt

    def assert_failed_start(self, handler, *needles, **env):
        rt = self.start(handler, ready=False, **env)
        code = rt.exit_code()
        err = rt.stderr()
        self.assertNotEqual(code, 0, err)
        for needle in needles:
            self.assertIn(needle, err)
        self.assertFalse(os.path.exists(rt.ready_path), "ready file written by a failed start")
        self.assertFalse(os.path.exists(rt.socket_path), "socket left by a failed start")
        return err
