"""Tests for asya_runtime_http.py, run against the real script in a subprocess
over a real Unix socket.

Run from the repository root:
    python3 -m unittest discover -s runtime -p 'test_*.py' -v

Nothing here asserts on time: a handler that must be "slow" blocks on a FIFO
that the test opens when it wants the handler to go on.
"""
import http.client
import json
import os
import re
import signal
import socket
import stat
import unittest

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

    def test_state_proxy_is_refused(self):
        term = os.path.join(self.tmp, "termination-log")
        self.assert_failed_start("handlers.echo", "ASYA_STATE_PROXY_MOUNTS",
                                 ASYA_STATE_PROXY_MOUNTS="media:/state/media:write=buffered", ASYA_TERMINATION_LOG=term)
        with open(term) as f:
            self.assertIn("no state proxy", f.read())

    def test_bad_settings_do_not_start(self):
        self.assert_failed_start("handlers.echo", "ASYA_MAX_MESSAGE_SIZE must be a number of bytes",
                                 ASYA_MAX_MESSAGE_SIZE="lots")
        self.assert_failed_start("handlers.echo", "cannot listen", ASYA_SOCKET_CHMOD="rw")


if __name__ == "__main__":
    unittest.main()
