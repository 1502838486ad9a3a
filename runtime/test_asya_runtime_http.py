"""Tests for asya_runtime_http.py, run against the real script in a subprocess
over a real Unix socket.

Run from the repository root:
    python3 -m unittest discover -s runtime -p 'test_*.py' -v

Nothing here asserts on time: a handler that must be "slow" blocks on a FIFO
that the test opens when it wants the handler to go on.
"""
import base64
import errno
import http.client
import http.server
import json
import os
import re
import signal
import socket
import socketserver
import stat
import threading
import unittest
import urllib.parse

import test_support
from test_support import WAIT, wait_for

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "asya_runtime_http.py")

HANDLERS = '''
import asyncio
import os


def wait_for(fifo):
    """Blocks until the test opens the FIFO and writes a byte."""
    with open(fifo, "rb") as f:
        f.read(1)


def double(p):
    return {"value": p["value"] * 2}


def echo(p):
    return p


def none(p):
    return None


def boom(p):
    raise KeyError("boom: %s" % p)


class AppError(RuntimeError):
    pass


def app_error(p):
    raise AppError("bad input")


def returns_object(p):
    return {"s": object()}


def returns_nan(p):
    return {"x": float("nan")}


async def async_double(p):
    await asyncio.sleep(0)
    return {"value": p["value"] * 2}


def gen(p):
    yield {"i": 1}
    yield "FLY", {"token": "half"}
    yield {"i": 2}


async def async_gen(p):
    yield {"i": 1}
    yield "FLY", {"token": "half"}
    yield {"i": 2}


def gen_nothing(p):
    return
    yield


def gen_blocking(p):
    yield {"step": 1}
    wait_for(p["fifo"])
    yield {"step": 2}


def gen_fails(p):
    yield {"step": 1}
    raise ValueError("midstream")


def blocking(p):
    if p.get("fifo"):
        open(p["marker"], "w").close()
        wait_for(p["fifo"])
    return {"done": p.get("n")}


def abi(p):
    trace = yield "GET", ".headers.trace"
    msg_id = yield "GET", ".id"
    yield "SET", ".headers.seen", True
    yield "DEL", ".headers.drop"
    yield "SET", ".route.next", ["x", "y"]
    yield {"trace": trace, "id": msg_id}


def abi_forbidden(p):
    yield "SET", p["path"], "evil"
    yield p


class Counter:
    instances = 0

    def __init__(self):
        Counter.instances += 1
        self.calls = 0

    def handle(self, p):
        self.calls += 1
        return {"instances": Counter.instances, "calls": self.calls}


class NeedsArgs:
    def __init__(self, model):
        self.model = model

    def handle(self, p):
        return p
'''

# Blocks its import on a FIFO, after leaving a marker, so that a test can
# look at the socket directory while the handler is loading.
SLOW_IMPORT = '''
import os
open(os.environ["TEST_MARKER"], "w").close()
with open(os.environ["TEST_FIFO"], "rb") as f:
    f.read(1)

def handle(p):
    return p
'''

BROKEN_IMPORT = '''
import asya_missing_dependency_xyz

def handle(p):
    return p
'''

LOUD_IMPORT = '''
raise RuntimeError("x" * 5000 + " the end")
'''


def envelope(payload, curr="a", nxt=("b", "c"), **extra):
    msg = {"id": "m-1", "route": {"prev": ["p"], "curr": curr, "next": list(nxt)}, "payload": payload}
    msg.update(extra)
    return msg


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=WAIT)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT)
        self.sock.connect(self.path)


class Response:
    def __init__(self, resp):
        self.status = resp.status
        self.headers = resp.headers
        self.body = resp.read()

    def json(self):
        return json.loads(self.body)


def parse_events(lines):
    """(event, data) pairs from SSE lines."""
    events, name, data = [], None, []
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and name is not None:
            events.append((name, json.loads("\n".join(data))))
            name, data = None, []
    return events


class Stream:
    """A POST /invoke sent at once, whose answer is read when asked for: its
    head, then (for a generator) one event at a time."""

    def __init__(self, socket_path, msg):
        body = json.dumps(msg).encode("utf-8")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT)
        self.sock.connect(socket_path)
        self.sock.sendall(b"POST /invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.f = self.sock.makefile("rb")
        self._status = None
        self._headers = {}

    def _read_head(self):
        if self._status is None:
            self._status = int(self.f.readline().split()[1])
            for line in iter(self.f.readline, b"\r\n"):
                name, _, value = line.decode().partition(":")
                self._headers[name.strip().lower()] = value.strip()

    @property
    def status(self):
        self._read_head()
        return self._status

    @property
    def headers(self):
        self._read_head()
        return self._headers

    def next_event(self):
        self._read_head()
        lines = []
        for line in iter(self.f.readline, b""):
            lines.append(line.decode().rstrip("\n"))
            if lines[-1] == "":
                return parse_events(lines)[0]
        raise EOFError("stream ended")

    def rest(self):
        self._read_head()
        return self.f.read()

    def close(self):
        self.f.close()
        self.sock.close()


class Runtime(test_support.Process):
    """asya_runtime_http.py, with an HTTP client over its socket."""

    SCRIPT = SCRIPT

    def request(self, method, path, body=None, headers=None):
        conn = UnixHTTPConnection(self.socket_path)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            return Response(conn.getresponse())
        finally:
            conn.close()

    def invoke(self, msg):
        return self.request("POST", "/invoke", json.dumps(msg).encode("utf-8"),
                            {"Content-Type": "application/json"})

    def stream(self, msg):
        return Stream(self.socket_path, msg)


class RuntimeHTTPTest(test_support.RuntimeTestCase):
    RUNTIME = Runtime
    MODULES = {"handlers": HANDLERS, "slow_import": SLOW_IMPORT,
               "broken_import": BROKEN_IMPORT, "loud_import": LOUD_IMPORT}

    def setUp(self):
        super().setUp()
        self.fifos = []

    def tearDown(self):
        for fifo in self.fifos:  # never leave a handler blocked
            self.release(fifo)
        super().tearDown()

    def fifo(self, name):
        path = os.path.join(self.tmp, name)
        os.mkfifo(path)
        self.fifos.append(path)
        return path

    @staticmethod
    def release(fifo):
        """Lets a handler waiting on the FIFO go on; False if none waits."""
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False  # no reader (yet, or any more)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
        return True

    def release_when_waited_on(self, fifo):
        self.assertTrue(wait_for(lambda: self.release(fifo)), "nobody waits on %s" % fifo)

    def assert_error(self, resp, status, kind, err_type):
        self.assertEqual(resp.status, status, resp.body)
        self.assertEqual(resp.headers["Content-Type"], "application/json")
        got = resp.json()
        self.assertEqual(got["error"], kind)
        self.assertEqual(got["details"]["type"], err_type)
        self.assertIsInstance(got["details"]["mro"], list)
        self.assertIn("Traceback", got["details"]["traceback"])
        return got["details"]

    # ---- POST /invoke: 200 frames, 204 ----

    def test_function_handler_answers_one_frame_with_route_shifted(self):
        rt = self.start("handlers.double")
        status = {"phase": "processing", "actor": "a", "attempt": 1}
        resp = rt.invoke(envelope({"value": 21}, headers={"trace": "t-1"}, status=status, parent_id="p-0"))
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.headers["Content-Type"], "application/json")
        self.assertEqual(resp.json(), {"frames": [{
            "payload": {"value": 42},
            "route": {"prev": ["p", "a"], "curr": "b", "next": ["c"]},
            "headers": {"trace": "t-1"},
            "status": status,
        }]})

    def test_last_actor_gets_an_empty_route(self):
        resp = self.start("handlers.echo").invoke(envelope("x", nxt=()))
        self.assertEqual(resp.json()["frames"][0]["route"], {"prev": ["p", "a"], "curr": "", "next": []})

    def test_list_result_is_one_payload(self):
        resp = self.start("handlers.echo").invoke(envelope([1, 2, 3]))
        self.assertEqual([f["payload"] for f in resp.json()["frames"]], [[1, 2, 3]])

    def test_none_answers_204(self):
        resp = self.start("handlers.none").invoke(envelope({"x": 1}))
        self.assertEqual(resp.status, 204)
        self.assertEqual(resp.body, b"")

    def test_async_function_handler(self):
        resp = self.start("handlers.async_double").invoke(envelope({"value": 4}))
        self.assertEqual(resp.json()["frames"][0]["payload"], {"value": 8})

    def test_class_handler_is_instantiated_once(self):
        rt = self.start("handlers.Counter.handle")
        for calls in (1, 2, 3):
            self.assertEqual(rt.invoke(envelope({})).json()["frames"][0]["payload"], {"instances": 1, "calls": calls})

    def test_large_unicode_payload_round_trips(self):
        text = "héllo 世界 " * 100000
        resp = self.start("handlers.echo").invoke(envelope({"text": text}))
        self.assertEqual(resp.json()["frames"][0]["payload"]["text"], text)

    def test_null_route_lists_count_as_empty(self):
        # Go's encoder writes an empty slice as null.
        msg = envelope(1)
        msg["route"] = {"prev": None, "curr": "a", "next": None}
        resp = self.start("handlers.echo").invoke(msg)
        self.assertEqual(resp.json()["frames"][0]["route"], {"prev": ["a"], "curr": "", "next": []})

    # ---- generators: SSE ----

    def test_generator_streams_events(self):
        st = self.start("handlers.gen").stream(envelope({}, headers={"h": 1}))
        try:
            self.assertEqual(st.status, 200)
            self.assertEqual(st.headers["content-type"], "text/event-stream")
            self.assertNotIn("content-length", st.headers)
            events = parse_events(st.rest().decode().split("\n"))
        finally:
            st.close()
        frame = {"route": {"prev": ["p", "a"], "curr": "b", "next": ["c"]}, "headers": {"h": 1}}
        self.assertEqual(events, [
            ("downstream", dict(frame, payload={"i": 1})),
            ("upstream", {"payload": {"token": "half"}}),
            ("downstream", dict(frame, payload={"i": 2})),
            ("done", {}),
        ])

    def test_async_generator_streams_events(self):
        st = self.start("handlers.async_gen").stream(envelope({}))
        try:
            events = parse_events(st.rest().decode().split("\n"))
        finally:
            st.close()
        self.assertEqual([name for name, _ in events], ["downstream", "upstream", "downstream", "done"])

    def test_first_frame_arrives_before_the_handler_yields_the_second(self):
        fifo = self.fifo("gen")
        st = self.start("handlers.gen_blocking").stream(envelope({"fifo": fifo}))
        try:
            # The handler is blocked on the FIFO until released below, so the
            # first event can only be read if it was sent as it was made.
            self.assertEqual(st.next_event()[1]["payload"], {"step": 1})
            self.release_when_waited_on(fifo)
            self.assertEqual(st.next_event()[1]["payload"], {"step": 2})
            self.assertEqual(st.next_event(), ("done", {}))
            self.assertEqual(st.rest(), b"")
        finally:
            st.close()

    def test_generator_failure_is_an_error_event_then_done(self):
        st = self.start("handlers.gen_fails").stream(envelope({}))
        try:
            events = parse_events(st.rest().decode().split("\n"))
        finally:
            st.close()
        self.assertEqual([name for name, _ in events], ["downstream", "error", "done"])
        err = events[1][1]
        self.assertEqual(err["error"], "processing_error")
        self.assertEqual(err["details"]["type"], "ValueError")
        self.assertEqual(err["details"]["message"], "midstream")
        self.assertIn("gen_fails", err["details"]["traceback"])

    def test_generator_yielding_nothing_sends_done_only(self):
        st = self.start("handlers.gen_nothing").stream(envelope({}))
        try:
            self.assertEqual(parse_events(st.rest().decode().split("\n")), [("done", {})])
        finally:
            st.close()

    def test_generator_abi(self):
        st = self.start("handlers.abi").stream(envelope({}, headers={"trace": "t", "drop": 1}))
        try:
            events = parse_events(st.rest().decode().split("\n"))
        finally:
            st.close()
        self.assertEqual(events[0], ("downstream", {
            "payload": {"trace": "t", "id": "m-1"},
            "route": {"prev": ["p", "a"], "curr": "x", "next": ["y"]},
            "headers": {"trace": "t", "seen": True},
        }))

    def test_generator_cannot_write_read_only_paths(self):
        rt = self.start("handlers.abi_forbidden")
        for path in (".route.prev", ".route.curr", ".id", ".parent_id"):
            with self.subTest(path=path):
                st = rt.stream(envelope({"path": path}))
                try:
                    events = parse_events(st.rest().decode().split("\n"))
                finally:
                    st.close()
                self.assertEqual([name for name, _ in events], ["error", "done"])
                self.assertEqual(events[0][1]["details"]["type"], "PermissionError")

    # ---- errors: 400, 500, 404, 413 ----

    def test_malformed_envelope_is_400(self):
        rt = self.start("handlers.echo")
        cases = [
            (b"not json{", "json.decoder.JSONDecodeError"),
            (b"\xff\xfe", "UnicodeDecodeError"),
            (b"", "json.decoder.JSONDecodeError"),
            (json.dumps([1, 2]).encode(), "ValueError"),
            (json.dumps({"route": {"prev": [], "curr": "a", "next": []}}).encode(), "ValueError"),
            (json.dumps({"payload": 1}).encode(), "ValueError"),
            (json.dumps({"payload": 1, "route": {"prev": [], "curr": 3, "next": []}}).encode(), "ValueError"),
            (json.dumps({"payload": 1, "route": {"prev": [1], "curr": "a", "next": []}}).encode(), "ValueError"),
            (json.dumps(dict(envelope(1), headers="h")).encode(), "ValueError"),
            (json.dumps(dict(envelope(1), id=7)).encode(), "ValueError"),
        ]
        for body, err_type in cases:
            with self.subTest(body=body):
                resp = rt.request("POST", "/invoke", body, {"Content-Type": "application/json"})
                self.assert_error(resp, 400, "msg_parsing_error", err_type)

    def test_validation_can_be_disabled(self):
        rt = self.start("handlers.echo", ASYA_ENABLE_VALIDATION="false")
        resp = rt.invoke({"payload": {"x": 1}, "route": {"curr": "x-sink"}})
        self.assertEqual(resp.status, 200, resp.body)
        self.assertEqual(resp.json()["frames"][0]["payload"], {"x": 1})

    def test_handler_exception_is_500_and_the_runtime_goes_on(self):
        rt = self.start("handlers.boom")
        details = self.assert_error(rt.invoke(envelope("x")), 500, "processing_error", "KeyError")
        self.assertEqual(details["message"], "'boom: x'")
        self.assertEqual(details["mro"], ["LookupError", "Exception"])
        self.assertIn('raise KeyError("boom: %s" % p)', details["traceback"])
        self.assert_error(rt.invoke(envelope("y")), 500, "processing_error", "KeyError")

    def test_user_exception_type_and_mro_are_qualified(self):
        details = self.assert_error(self.start("handlers.app_error").invoke(envelope(1)),
                                    500, "processing_error", "handlers.AppError")
        self.assertEqual(details["mro"], ["RuntimeError", "Exception"])

    def test_result_json_cannot_carry_is_500(self):
        for handler in ("handlers.returns_object", "handlers.returns_nan"):
            with self.subTest(handler=handler):
                self.assertEqual(self.start(handler).invoke(envelope(1)).status, 500)

    def test_healthz(self):
        resp = self.start("handlers.echo").request("GET", "/healthz")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.json(), {"status": "ready"})

    def test_other_paths_are_404(self):
        rt = self.start("handlers.echo")
        for method, path in (("GET", "/"), ("GET", "/invoke"), ("POST", "/healthz"), ("POST", "/invoke/x")):
            with self.subTest(method=method, path=path):
                self.assertEqual(rt.request(method, path, b"{}" if method == "POST" else None).status, 404)

    def test_body_over_the_limit_is_413(self):
        rt = self.start("handlers.echo", ASYA_MAX_MESSAGE_SIZE="1024")
        resp = rt.invoke(envelope("x" * 2048))
        self.assertEqual(resp.status, 413)
        details = resp.json()["details"]
        self.assertEqual(resp.json()["error"], "msg_parsing_error")
        self.assertIn("ASYA_MAX_MESSAGE_SIZE", details["message"])
        # A body just under the limit is served.
        self.assertEqual(rt.invoke(envelope("x" * 900)).status, 200)

    def test_413_comes_before_the_body(self):
        # Announce 10 GiB and send none of it: the answer must not wait for
        # (or hold) the body.
        rt = self.start("handlers.echo")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(WAIT)
            s.connect(rt.socket_path)
            s.sendall(b"POST /invoke HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n{" % (10 << 30))
            head = s.makefile("rb").readline()
        self.assertEqual(head.split()[1], b"413")
        self.assertEqual(rt.invoke(envelope(1)).status, 200)

    def test_probe_connection_is_harmless(self):
        rt = self.start("handlers.echo")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(rt.socket_path)
        self.assertEqual(rt.invoke(envelope(1)).status, 200)

    # ---- a handler that never returns ----

    def test_slow_handler_blocks_neither_healthz_nor_the_next_call(self):
        rt = self.start("handlers.blocking")
        fifo, marker = self.fifo("slow"), os.path.join(self.tmp, "marker")
        stuck = rt.stream(envelope({"fifo": fifo, "marker": marker}))  # only sends; the answer comes later
        try:
            self.assertTrue(wait_for(lambda: os.path.exists(marker)), "the slow call never started")
            self.assertEqual(rt.request("GET", "/healthz").status, 200)
            self.assertEqual(rt.invoke(envelope({"n": 2})).json()["frames"][0]["payload"], {"done": 2})
            self.release_when_waited_on(fifo)
            self.assertEqual(stuck.status, 200)
        finally:
            stuck.close()

    # ---- lifecycle ----

    def test_sigterm_finishes_the_call_in_hand(self):
        rt = self.start("handlers.blocking")
        fifo, marker = self.fifo("drain"), os.path.join(self.tmp, "marker")
        in_hand = rt.stream(envelope({"fifo": fifo, "marker": marker, "n": 1}))
        try:
            self.assertTrue(wait_for(lambda: os.path.exists(marker)), "the call never started")
            rt.proc.send_signal(signal.SIGTERM)
            # It stops accepting: the socket and ready file go first.
            self.assertTrue(wait_for(lambda: not os.path.exists(rt.socket_path)), rt.stderr())
            self.assertFalse(os.path.exists(rt.ready_path))
            self.assertIsNone(rt.proc.poll(), "exited with a call in hand")
            self.release_when_waited_on(fifo)
            self.assertEqual(in_hand.status, 200)
            self.assertEqual(json.loads(in_hand.rest())["frames"][0]["payload"], {"done": 1})
        finally:
            in_hand.close()
        self.assertEqual(rt.exit_code(), 0, rt.stderr())

    def test_sigterm_when_idle(self):
        rt = self.start("handlers.echo")
        rt.proc.send_signal(signal.SIGTERM)
        self.assertEqual(rt.exit_code(), 0, rt.stderr())
        self.assertFalse(os.path.exists(rt.socket_path))
        self.assertFalse(os.path.exists(rt.ready_path))

    def test_ready_file_is_written_after_the_handler_loads(self):
        socket_dir = os.path.join(self.tmp, "sock")
        os.mkdir(socket_dir)
        with open(os.path.join(socket_dir, "runtime-ready"), "w") as f:
            f.write("left by an earlier run")
        fifo, marker = self.fifo("import"), os.path.join(self.tmp, "marker")
        rt = self.start("slow_import.handle", ready=False, socket_dir=socket_dir, TEST_FIFO=fifo, TEST_MARKER=marker)
        self.assertTrue(wait_for(lambda: os.path.exists(marker)), rt.stderr())
        # Loading: no socket, and the old ready file is gone.
        self.assertFalse(os.path.exists(rt.socket_path))
        self.assertFalse(os.path.exists(rt.ready_path))
        self.release_when_waited_on(fifo)
        rt.wait_ready()
        with open(rt.ready_path) as f:
            self.assertEqual(f.read(), "ready")
        self.assertTrue(stat.S_ISSOCK(os.stat(rt.socket_path).st_mode))

    def test_socket_mode(self):
        for value, mode in (("", 0o666), ("0o600", 0o600), ("640", 0o640)):
            with self.subTest(value=value):
                env = {"ASYA_SOCKET_CHMOD": value} if value else {}
                rt = self.start("handlers.echo", **env)
                self.assertEqual(stat.S_IMODE(os.stat(rt.socket_path).st_mode), mode)

    def test_socket_name(self):
        rt = self.start("handlers.echo", ASYA_SOCKET_NAME="other.sock")
        self.assertTrue(rt.socket_path.endswith("other.sock"))
        self.assertEqual(rt.invoke(envelope(1)).status, 200)

    def test_stale_socket_is_replaced(self):
        socket_dir = os.path.join(self.tmp, "sock")
        os.mkdir(socket_dir)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as old:
            old.bind(os.path.join(socket_dir, "asya-runtime.sock"))
        rt = self.start("handlers.echo", socket_dir=socket_dir)
        self.assertEqual(rt.invoke(envelope(1)).status, 200)

    # ---- failed starts and the termination message ----

    def test_bad_handlers_do_not_start(self):
        for handler, needle in (
                ("", "expected module.function"),
                ("handlers", "expected module.function"),
                ("my-module.func", "expected module.function"),
                ("nonexistent_module_xyz.f", "no module named"),
                ("handlers.missing", "has no attribute 'missing'"),
                ("handlers.Counter", "is a class"),
                ("handlers.Counter.missing", "has no attribute 'missing'"),
                ("handlers.NeedsArgs.handle", "missing 1 required positional argument: 'model'"),
                ("handlers.Counter.handle.x", "too many names")):
            with self.subTest(handler=handler):
                self.assert_failed_start(handler, needle)

    def test_failed_start_leaves_termination_message(self):
        term = os.path.join(self.tmp, "termination-log")
        self.assert_failed_start("broken_import.handle", "asya_missing_dependency_xyz", ASYA_TERMINATION_LOG=term)
        with open(term) as f:
            message = f.read()
        self.assertTrue(message.startswith("cannot load handler 'broken_import.handle': import failed\nTraceback"),
                        message)
        self.assertTrue(message.endswith("No module named 'asya_missing_dependency_xyz'"), message)
        self.assertIsNone(re.search(r"\d{4}-\d\d-\d\d", message), "timestamp in the termination message")

    def test_termination_message_keeps_the_end_of_a_long_traceback(self):
        term = os.path.join(self.tmp, "termination-log")
        self.assert_failed_start("loud_import.handle", "the end", ASYA_TERMINATION_LOG=term)
        with open(term, "rb") as f:
            message = f.read()
        self.assertLessEqual(len(message), 2048)
        self.assertTrue(message.endswith(b"xxx the end"), message[-40:])

    def test_successful_start_leaves_no_termination_message(self):
        term = os.path.join(self.tmp, "termination-log")
        rt = self.start("handlers.echo", ASYA_TERMINATION_LOG=term)
        rt.proc.send_signal(signal.SIGTERM)
        self.assertEqual(rt.exit_code(), 0)
        self.assertFalse(os.path.exists(term))

    def test_bad_state_mounts_do_not_start(self):
        term = os.path.join(self.tmp, "termination-log")
        for mounts, why in (("media:/state/media", "expected name:path:options"),
                            ("media:state/media:write=buffered", "the path must be absolute"),
                            ("media:/state/media:write=stream", "write must be buffered or passthrough"),
                            ("../x:/state/media:write=buffered", "the name must be a file name")):
            with self.subTest(mounts=mounts):
                self.assert_failed_start("handlers.echo", "ASYA_STATE_PROXY_MOUNTS", why,
                                         ASYA_STATE_PROXY_MOUNTS=mounts, ASYA_TERMINATION_LOG=term)
                with open(term) as f:
                    self.assertIn(why, f.read())

    def test_bad_settings_do_not_start(self):
        self.assert_failed_start("handlers.echo", "ASYA_MAX_MESSAGE_SIZE must be a number of bytes",
                                 ASYA_MAX_MESSAGE_SIZE="lots")
        self.assert_failed_start("handlers.echo", "cannot listen", ASYA_SOCKET_CHMOD="rw")


# ---- the state layer (ASYA_STATE_PROXY_MOUNTS) ----

STATE_HANDLERS = '''
import base64
import builtins
import io
import os
import pathlib
import posix

ROOT = "/state/meta"


def path(p):
    return os.path.join(ROOT, p["name"])


def write(p):
    with open(path(p), p.get("mode", "w"), **p.get("kwargs", {})) as f:
        for part in p["parts"]:
            f.write(base64.b64decode(part) if "b" in p.get("mode", "") else part)
    return {"ok": True}


def read(p):
    with open(path(p), p.get("mode", "r"), **p.get("kwargs", {})) as f:
        return {"data": f.read()}


def read_streamed(p):
    with open(path(p), "rb") as f:
        first = f.read(3)
        rest = f.read()
        try:
            f.seek(0)
        except OSError as e:
            return {"first": first, "rest": rest, "seekable": f.seekable(), "seek_errno": e.errno}


def read_chars(p):
    with open(path(p), encoding="utf-8") as f:
        return {"chars": list(iter(lambda: f.read(1), "")), "at": f.tell()}


def read_lines(p):
    with open(path(p)) as f:
        first = next(f)
        return {"first": first, "rest": list(f)}


def write_then_fail(p):
    with open(path(p), "w") as f:
        f.write("partial")
        raise RuntimeError("midway")


def write_unclosed(p):
    open(path(p), "w").write(p["text"])
    return {"ok": True}


def look(p):
    d = os.path.join(ROOT, p["dir"])
    return {"exists": os.path.exists(path(p)), "isfile": os.path.isfile(path(p)),
            "pathlib": pathlib.Path(path(p)).exists(), "lexists": os.path.lexists(path(p)),
            "size": os.path.getsize(path(p)) if os.path.exists(path(p)) else None,
            "dir_isdir": os.path.isdir(d), "root_isdir": os.path.isdir(ROOT),
            "listdir": sorted(os.listdir(d)), "listdir_bytes": sorted(n.decode() for n in os.listdir(d.encode()))}


def remove(p):
    getattr(os, p.get("how", "remove"))(path(p))
    return {"exists": os.path.exists(path(p))}


def makedirs(p):
    os.makedirs(os.path.join(ROOT, "a", "b"))
    os.makedirs(os.path.join(ROOT, "a", "b"), exist_ok=True)
    local = os.path.join(p["local"], "x", "y")
    os.makedirs(local)
    return {"local": os.path.isdir(local)}


def xattrs(p):
    os.setxattr(path(p), "user.asya.tag", b"blue")
    return {"list": sorted(os.listxattr(path(p))), "url": os.getxattr(path(p), "user.asya.url").decode(),
            "tag": os.getxattr(path(p), "user.asya.tag").decode()}


def set_url(p):
    os.setxattr(path(p), "user.asya.url", b"elsewhere")


def local(p):
    with open(p["path"], "w") as f:
        f.write(p["text"])
    with open(p["path"]) as f:
        text = f.read()
    return {"text": text, "size": os.stat(p["path"]).st_size, "listed": os.listdir(os.path.dirname(p["path"]))}


def hooks(p):
    return {"open": builtins.open is io.open, "stat": os.stat is posix.stat, "listdir": os.listdir is posix.listdir,
            "remove": os.remove is posix.remove, "getxattr": os.getxattr is posix.getxattr}


class Config:
    def __init__(self):
        with open(os.path.join(ROOT, "config")) as f:
            self.config = f.read()

    def handle(self, p):
        return {"config": self.config}
'''


class MemoryConnector:
    """A state connector on a real Unix socket, speaking upstream's connector
    protocol (asya-state-proxy's server.py) with its keys in a dict. It
    records each request as (method, path, headers, body), answers a key
    in `fail` with that status, and a key in `streamed` without a
    Content-Length (its end is the connection's)."""

    def __init__(self, path):
        self.store, self.attrs, self.requests, self.fail, self.streamed = {}, {}, [], {}, set()
        self.server = _ConnectorServer(path, _ConnectorHandler)
        self.server.connector = self
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def requests_for(self, method):
        return [r for r in self.requests if r[0] == method]


class _ConnectorServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = socket.AF_UNIX
    daemon_threads = True

    def server_bind(self):
        self.socket.bind(self.server_address)
        self.server_name, self.server_port = "connector", 0


class _ConnectorHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if status != 204 and self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status, value):
        self._answer(status, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def _body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            chunks = []
            while True:
                line = self.rfile.readline()
                if not line:  # the body was cut off: nothing is stored
                    return None
                size = int(line.strip(), 16)
                chunk = self.rfile.read(size)
                self.rfile.readline()
                if not size:
                    return b"".join(chunks)
                chunks.append(chunk)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self):
        c = self.server.connector
        url = urllib.parse.urlsplit(self.path)
        route = url.path[:6]
        key = urllib.parse.unquote(url.path[6:])
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        body = self._body() if self.command == "PUT" else b""
        c.requests.append((self.command, self.path, dict(self.headers), body))
        if body is None:
            return
        if key in c.fail:
            return self._json(c.fail[key], {"error": "injected", "message": "injected %d for %s" % (c.fail[key], key)})
        if route == "/keys/" and not key and self.command == "GET":
            prefix, delim = query.get("prefix", ""), query.get("delimiter", "")
            keys, prefixes = [], set()
            for k in sorted(c.store):
                rest = k[len(prefix):]
                if k.startswith(prefix) and delim and delim in rest:
                    prefixes.add(prefix + rest.split(delim)[0] + delim)
                elif k.startswith(prefix):
                    keys.append(k)
            return self._json(200, {"keys": keys, "prefixes": sorted(prefixes)})
        if route == "/meta/":
            if key not in c.store:
                return self._json(404, {"error": "key_not_found", "message": key})
            attrs = dict(c.attrs.get(key, {}), url="mem://" + key)
            attr = query.get("attr")
            if attr == "url" and self.command == "PUT":
                return self._json(403, {"error": "permission_denied", "message": "url is read-only"})
            if self.command == "PUT":
                c.attrs.setdefault(key, {})[attr] = json.loads(body)["value"]
                return self._answer(204)
            if attr is None:
                return self._json(200, {"attrs": sorted(attrs)})
            if attr not in attrs:
                return self._json(400, {"error": "unsupported_attribute", "message": attr})
            return self._json(200, {"attr": attr, "value": attrs[attr]})
        if self.command == "PUT":
            if self.headers.get("If-None-Match") == "*" and key in c.store:
                return self._json(412, {"error": "conflict", "message": "exists: " + key})
            c.store[key] = body
            return self._answer(204)
        if key not in c.store:
            return self._json(404, {"error": "key_not_found", "message": "no key " + key})
        if self.command == "DELETE":
            del c.store[key]
            return self._answer(204)
        if self.command == "HEAD":
            return self._answer(204, headers=[("Content-Length", str(len(c.store[key]))), ("X-Is-File", "true")])
        if key in c.streamed:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(c.store[key])
            return None
        return self._answer(200, c.store[key])

    do_GET = do_PUT = do_HEAD = do_DELETE = _serve


class StateLayerTest(test_support.RuntimeTestCase):
    """The runtime with ASYA_STATE_PROXY_MOUNTS, its handlers' files under
    /state/meta served by a MemoryConnector."""

    RUNTIME = Runtime
    MODULES = {"state": STATE_HANDLERS, "handlers": HANDLERS}

    def setUp(self):
        super().setUp()
        self.state_dir = os.path.join(self.tmp, "state")
        os.mkdir(self.state_dir)
        self.connector = MemoryConnector(os.path.join(self.state_dir, "meta.sock"))
        self.addCleanup(self.connector.close)

    def runtime(self, handler="state.write", write="buffered", **env):
        return self.start(handler, ASYA_STATE_PROXY_MOUNTS="meta:/state/meta:write=" + write,
                          ASYA_STATE_SOCKET_DIR=self.state_dir, **env)

    def call(self, rt, handler, **payload):
        """The handler's result; the test fails on an error answer."""
        resp = rt.invoke(envelope(dict(payload, handler=handler)))
        self.assertEqual(resp.status, 200, resp.body)
        return resp.json()["frames"][0]["payload"]

    def call_fails(self, rt, handler, **payload):
        """The error details of a call that must fail."""
        resp = rt.invoke(envelope(dict(payload, handler=handler)))
        self.assertEqual(resp.status, 500, resp.body)
        return resp.json()["details"]

    def test_a_file_written_by_one_call_is_read_by_the_next(self):
        for write in ("buffered", "passthrough"):
            with self.subTest(write=write):
                writer = self.runtime("state.write", write)
                self.assertEqual(self.call(writer, "w", name="notes/today.txt", parts=["héllo ", "wörld"]), {"ok": True})
                self.assertEqual(self.connector.store["notes/today.txt"], "héllo wörld".encode())
                reader = self.runtime("state.read", write)
                self.assertEqual(self.call(reader, "r", name="notes/today.txt"), {"data": "héllo wörld"})
                self.assertEqual(self.connector.requests[-1][:2], ("GET", "/keys/notes/today.txt"))

    def test_buffered_write_is_one_put_with_its_length(self):
        rt = self.runtime()
        self.call(rt, "w", name="k", parts=["a" * 10, "", "b" * 5])
        (put,) = self.connector.requests_for("PUT")
        self.assertEqual(put[1], "/keys/k")
        self.assertEqual(put[2]["Content-Length"], "15")
        self.assertNotIn("If-None-Match", put[2])
        self.assertEqual(put[3], b"a" * 10 + b"b" * 5)

    def test_passthrough_write_is_one_chunked_put(self):
        rt = self.runtime(write="passthrough")
        # An empty write must not send the empty chunk that ends the body.
        self.call(rt, "w", name="big.bin", mode="wb", parts=["AAEC", "", "/w=="])
        (put,) = self.connector.requests_for("PUT")
        self.assertEqual(put[2]["Transfer-Encoding"], "chunked")
        self.assertNotIn("Content-Length", put[2])
        self.assertEqual(self.connector.store["big.bin"], b"\x00\x01\x02\xff")

    def test_exclusive_create(self):
        for write in ("buffered", "passthrough"):
            with self.subTest(write=write):
                rt = self.runtime(write=write)
                self.connector.store.pop("once", None)
                self.call(rt, "w", name="once", mode="x", parts=["first"])
                self.assertEqual(self.connector.requests_for("PUT")[-1][2]["If-None-Match"], "*")
                details = self.call_fails(rt, "w", name="once", mode="x", parts=["second"])
                self.assertEqual(details["type"], "FileExistsError")
                self.assertEqual(self.connector.store["once"], b"first")

    def test_append_keeps_what_the_key_holds(self):
        rt = self.runtime(write="passthrough")
        self.call(rt, "w", name="log", mode="a", parts=["one\n"])  # a new key
        self.call(rt, "w", name="log", mode="a", parts=["two\n"])
        self.assertEqual(self.connector.store["log"], b"one\ntwo\n")

    def test_nothing_is_written_when_the_with_block_raises(self):
        for write in ("buffered", "passthrough"):
            with self.subTest(write=write):
                self.connector.store["kept"] = b"before"
                details = self.call_fails(self.runtime("state.write_then_fail", write), "f", name="kept")
                self.assertEqual(details["message"], "midway")
                self.assertEqual(self.connector.store["kept"], b"before")
                # passthrough: the PUT was begun, then cut off (which the
                # connector may see after the runtime has answered)
                puts = lambda: [r[3] for r in self.connector.requests_for("PUT")]  # noqa: E731
                want = [] if write == "buffered" else [None]
                wait_for(lambda: puts() == want)
                self.assertEqual(puts(), want)

    def test_a_file_dropped_unclosed_is_written(self):
        for write in ("buffered", "passthrough"):
            with self.subTest(write=write):
                self.call(self.runtime("state.write_unclosed", write), "w", name="dropped-" + write, text="kept")
                self.assertEqual(self.connector.store["dropped-" + write], b"kept")

    def test_reading(self):
        self.connector.store["t"] = "naïve\nline 2\nline 3".encode()
        self.connector.store["latin"] = "café".encode("latin-1")
        rt = self.runtime("state.read")
        self.assertEqual(self.call(rt, "r", name="t", mode="rb"), {"data": base64.b64encode(self.connector.store["t"]).decode()})
        self.assertEqual(self.call(rt, "r", name="latin", kwargs={"encoding": "latin-1"}), {"data": "café"})
        details = self.call_fails(rt, "r", name="latin")  # not UTF-8
        self.assertEqual(details["type"], "UnicodeDecodeError")
        chars = self.call(self.runtime("state.read_chars"), "r", name="t")
        self.assertEqual("".join(chars["chars"]), "naïve\nline 2\nline 3")
        self.assertEqual(chars["chars"][:4], ["n", "a", "ï", "v"])  # read(1) never splits a character
        self.assertEqual(chars["at"], len(self.connector.store["t"]))
        lines = self.runtime("state.read_lines")
        self.assertEqual(self.call(lines, "r", name="t"), {"first": "naïve\n", "rest": ["line 2\n", "line 3"]})
        self.connector.store["cut"] = b"ok\n\xc3"  # ends inside a character
        self.assertEqual(self.call_fails(lines, "r", name="cut")["type"], "UnicodeDecodeError")

    def test_a_read_without_a_length_is_streamed(self):
        self.connector.store["s"] = b"0123456789" * 1000
        self.connector.streamed.add("s")
        got = self.call(self.runtime("state.read_streamed"), "r", name="s")
        self.assertEqual(base64.b64decode(got.pop("first")) + base64.b64decode(got.pop("rest")), b"0123456789" * 1000)
        self.assertEqual(got, {"seekable": False, "seek_errno": errno.ESPIPE})

    def test_missing_key_is_file_not_found(self):
        details = self.call_fails(self.runtime("state.read"), "r", name="nope")
        self.assertEqual(details["type"], "FileNotFoundError")
        self.assertIn("no key nope", details["message"])

    def test_connector_errors_are_exceptions(self):
        rt = self.runtime("state.read")
        for status, err in ((403, "PermissionError"), (400, "ValueError"), (409, "FileExistsError"),
                            (503, "ConnectionError"), (504, "TimeoutError"), (500, "OSError"), (413, "OSError")):
            with self.subTest(status=status):
                self.connector.fail["k"] = status
                details = self.call_fails(rt, "r", name="k")
                self.assertEqual(details["type"], err)
                self.assertIn("injected %d for k" % status, details["message"])

    def test_an_unreachable_connector_is_not_a_missing_file(self):
        rt = self.runtime("state.read")
        self.connector.close()
        for gone in ("refusing", "no socket"):
            with self.subTest(gone=gone):
                if gone == "no socket":
                    os.unlink(os.path.join(self.state_dir, "meta.sock"))
                details = self.call_fails(rt, "r", name="k")
                self.assertEqual(details["type"], "ConnectionError")
                self.assertIn("state connector unreachable at", details["message"])

    def test_stat_exists_and_listdir(self):
        self.connector.store.update({"d/a.txt": b"12345", "d/b.txt": b"", "d/sub/c": b"x", "other": b"y"})
        rt = self.runtime("state.look")
        self.assertEqual(self.call(rt, "l", name="d/a.txt", dir="d"), {
            "exists": True, "isfile": True, "pathlib": True, "lexists": True, "size": 5, "dir_isdir": False, "root_isdir": True,
            "listdir": ["a.txt", "b.txt", "sub"], "listdir_bytes": ["a.txt", "b.txt", "sub"]})
        self.assertIn(("GET", "/keys/?prefix=d/&delimiter=/"), [r[:2] for r in self.connector.requests])
        self.assertEqual(self.call(rt, "l", name="missing", dir=""), {
            "exists": False, "isfile": False, "pathlib": False, "lexists": False, "size": None, "dir_isdir": True, "root_isdir": True,
            "listdir": ["d", "other"], "listdir_bytes": ["d", "other"]})

    def test_remove_and_unlink(self):
        rt = self.runtime("state.remove")
        for how in ("remove", "unlink"):
            with self.subTest(how=how):
                self.connector.store["gone"] = b"x"
                self.assertEqual(self.call(rt, "r", name="gone", how=how), {"exists": False})
                self.assertNotIn("gone", self.connector.store)
                self.assertEqual(self.call_fails(rt, "r", name="gone", how=how)["type"], "FileNotFoundError")

    def test_makedirs_is_a_no_op_under_a_mount_only(self):
        n = len(self.connector.requests)
        self.assertEqual(self.call(self.runtime("state.makedirs"), "m", local=self.tmp), {"local": True})
        self.assertEqual(len(self.connector.requests), n)

    def test_xattrs(self):
        self.connector.store["x"] = b"1"
        rt = self.runtime("state.xattrs")
        self.assertEqual(self.call(rt, "x", name="x"),
                         {"list": ["user.asya.tag", "user.asya.url"], "url": "mem://x", "tag": "blue"})
        self.assertEqual(self.connector.attrs, {"x": {"tag": "blue"}})
        self.assertEqual(self.call_fails(self.runtime("state.set_url"), "x", name="x")["type"], "PermissionError")

    def test_keys_are_percent_encoded(self):
        rt = self.runtime()
        name = "a b?c#d%e+é"
        self.call(rt, "w", name=name, parts=["v"])
        self.assertEqual(self.connector.store[name], b"v")
        self.assertEqual(self.connector.requests_for("PUT")[-1][1], "/keys/a%20b%3Fc%23d%25e+%C3%A9")
        self.assertEqual(self.call(self.runtime("state.read"), "r", name=name), {"data": "v"})

    def test_paths_outside_the_mounts_are_local_files(self):
        local = os.path.join(self.tmp, "local", "f.txt")
        os.mkdir(os.path.dirname(local))
        n = len(self.connector.requests)
        got = self.call(self.runtime("state.local"), "l", path=local, text="here")
        self.assertEqual(got, {"text": "here", "size": 4, "listed": ["f.txt"]})
        with open(local) as f:
            self.assertEqual(f.read(), "here")
        self.assertEqual(len(self.connector.requests), n)

    def test_the_handler_can_read_state_as_it_loads(self):
        self.connector.store["config"] = b"model=v2"
        self.assertEqual(self.call(self.runtime("state.Config.handle"), "c"), {"config": "model=v2"})

    def test_without_mounts_nothing_is_patched(self):
        unpatched = {"open": True, "stat": True, "listdir": True, "remove": True, "getxattr": True}
        self.assertEqual(self.call(self.start("state.hooks"), "h"), unpatched)
        self.assertEqual(self.call(self.start("state.hooks", ASYA_STATE_PROXY_MOUNTS=" ; "), "h"), unpatched)
        self.assertEqual(self.call(self.runtime("state.hooks"), "h"), {k: False for k in unpatched})

    def test_a_directory_cannot_be_opened(self):
        rt = self.runtime("state.read")
        for name in ("", "d/"):
            with self.subTest(name=name):
                self.assertEqual(self.call_fails(rt, "r", name=name)["type"], "IsADirectoryError")


if __name__ == "__main__":
    unittest.main()
