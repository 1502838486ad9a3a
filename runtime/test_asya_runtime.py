"""Tests for asya_runtime.py, run against the real script in a subprocess.

Run from the repository root:
    python3 -m unittest discover -s runtime -p 'test_*.py' -v
"""
import json
import os
import signal
import socket
import stat
import struct
import threading
import time
import unittest

import test_support
from test_support import WAIT, wait_for

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "asya_runtime.py")

HANDLERS = '''
import os
import time

def double(p):
    return {"value": p["value"] * 2}

def echo(p):
    return p

def fan(p):
    return [{"i": i} for i in range(p["n"])]

def none(p):
    return None

def empty(p):
    return []

def boom(p):
    raise ValueError("boom: %s" % p)

def returns_set(p):
    return {1, 2}

def slow(p):
    open(p["marker"], "w").close()
    time.sleep(p["sleep"])
    return {"slept": p["sleep"]}

def advance(e):
    e["route"]["current"] += 1
    e["payload"] = {"seen": e["payload"]}
    return e

def erase(e):
    e["route"] = {"actors": ["elsewhere"], "current": 0}
    return e

def append(e):
    e["route"]["actors"].append("extra")
    e["route"]["current"] += 1
    return e

def extra_fields(e):
    e["route"]["current"] += 1
    e["parent_id"] = "p-1"
    e["debug"] = {"scratch": True}
    return e

def bad_current(e):
    e["route"]["current"] = "next"
    return e

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

not_callable = 42
'''

SLOW_IMPORT = '''
import time
time.sleep(1.0)

def handle(p):
    return p
'''

BROKEN_IMPORT = '''
import asya_missing_dependency_xyz

def handle(p):
    return p
'''


def frame(body):
    return struct.pack(">I", len(body)) + body


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def envelope(payload, actors=("a", "b", "c"), current=0, **extra):
    msg = {"id": "m-1", "route": {"actors": list(actors), "current": current}, "payload": payload}
    msg.update(extra)
    return msg


class Runtime(test_support.Process):
    """asya_runtime.py, with a client of its framed socket protocol."""

    SCRIPT = SCRIPT

    def raw(self, data):
        """Sends raw bytes and returns the decoded response array."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(WAIT)
            s.connect(self.socket_path)
            s.sendall(data)
            (n,) = struct.unpack(">I", recv_exact(s, 4))
            return json.loads(recv_exact(s, n).decode("utf-8"))

    def call(self, msg):
        return self.raw(frame(json.dumps(msg).encode("utf-8")))


class RuntimeTest(test_support.RuntimeTestCase):
    RUNTIME = Runtime
    MODULES = {"handlers": HANDLERS, "slow_import": SLOW_IMPORT, "broken_import": BROKEN_IMPORT}

    # ---- payload mode ----

    def test_function_handler(self):
        rt = self.start("handlers.double")
        got = rt.call(envelope({"value": 21}, headers={"trace": "t-1"}))
        self.assertEqual(got, [{
            "id": "m-1",
            "payload": {"value": 42},
            "route": {"actors": ["a", "b", "c"], "current": 1},
            "headers": {"trace": "t-1"},
        }])

    def test_payload_mode_without_headers_or_id(self):
        rt = self.start("handlers.echo", ASYA_HANDLER_MODE="payload")
        got = rt.call({"route": {"actors": ["a", "b"], "current": 1}, "payload": "hello"})
        self.assertEqual(got, [{"payload": "hello", "route": {"actors": ["a", "b"], "current": 2}}])

    def test_class_handler_instantiated_once(self):
        rt = self.start("handlers.Counter.handle")
        for calls in (1, 2, 3):
            self.assertEqual(rt.call(envelope({}))[0]["payload"], {"instances": 1, "calls": calls})

    def test_fan_out(self):
        rt = self.start("handlers.fan")
        got = rt.call(envelope({"n": 3}, headers={"h": 1}))
        self.assertEqual([g["payload"] for g in got], [{"i": 0}, {"i": 1}, {"i": 2}])
        for g in got:
            self.assertEqual(g["route"], {"actors": ["a", "b", "c"], "current": 1})
            self.assertEqual(g["headers"], {"h": 1})

    def test_none_and_empty_give_empty_array(self):
        for handler in ("handlers.none", "handlers.empty"):
            with self.subTest(handler=handler):
                self.assertEqual(self.start(handler).call(envelope(1)), [])

    def test_handler_exception(self):
        rt = self.start("handlers.boom")
        got = rt.call(envelope("x"))
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["error"], "processing_error")
        details = got[0]["details"]
        self.assertEqual(details["type"], "ValueError")
        self.assertEqual(details["message"], "boom: x")
        self.assertIn("Traceback", details["traceback"])
        self.assertIn('raise ValueError("boom: %s" % p)', details["traceback"])
        # The runtime keeps serving after a failure.
        self.assertEqual(rt.call(envelope("y"))[0]["error"], "processing_error")

    def test_unencodable_result_is_processing_error(self):
        got = self.start("handlers.returns_set").call(envelope(1))
        self.assertEqual(got[0]["error"], "processing_error")
        self.assertEqual(got[0]["details"]["type"], "TypeError")

    # ---- envelope mode ----

    def test_envelope_mode(self):
        rt = self.start("handlers.advance", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope({"v": 1}, current=1, headers={"h": "x"}))
        self.assertEqual(got, [{
            "id": "m-1",
            "route": {"actors": ["a", "b", "c"], "current": 2},
            "payload": {"seen": {"v": 1}},
            "headers": {"h": "x"},
        }])

    def test_route_rewrite_erasing_processed_actors_is_rejected(self):
        rt = self.start("handlers.erase", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope(1, current=1))
        self.assertEqual(got[0]["error"], "processing_error")
        self.assertIn("rewrites processed actors", got[0]["details"]["message"])
        self.assertIn("traceback", got[0]["details"])

    def test_route_rewrite_appending_actors_is_accepted(self):
        rt = self.start("handlers.append", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope(1, current=1))
        self.assertEqual(got[0]["route"], {"actors": ["a", "b", "c", "extra"], "current": 2})
        self.assertNotIn("error", got[0])

    def test_invalid_result_route_is_rejected(self):
        rt = self.start("handlers.bad_current", ASYA_HANDLER_MODE="envelope")
        self.assertEqual(rt.call(envelope(1))[0]["error"], "processing_error")

    def test_validation_can_be_disabled(self):
        for value in ("false", "0", "no"):
            with self.subTest(value=value):
                rt = self.start("handlers.erase", ASYA_HANDLER_MODE="envelope", ASYA_ENABLE_VALIDATION=value)
                got = rt.call(envelope(1, current=1))
                self.assertEqual(got[0]["route"], {"actors": ["elsewhere"], "current": 0})

    def test_envelope_mode_passes_on_envelope_fields_only(self):
        rt = self.start("handlers.extra_fields", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope(1, headers={"h": "x"}))
        self.assertEqual(got, [{"id": "m-1", "parent_id": "p-1", "route": {"actors": ["a", "b", "c"], "current": 1},
                                "payload": 1, "headers": {"h": "x"}}])

    def test_last_actor_may_end_the_route(self):
        rt = self.start("handlers.advance", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope(1, current=2))
        self.assertEqual(got[0]["route"], {"actors": ["a", "b", "c"], "current": 3})

    # ---- bad requests ----

    def test_route_without_current_starts_at_the_first_actor(self):
        rt = self.start("handlers.double")
        got = rt.raw(frame(b'{"route": {"actors": ["a", "b"]}, "payload": {"value": 1}}'))
        self.assertEqual(got, [{"route": {"actors": ["a", "b"], "current": 1}, "payload": {"value": 2}}])

    def test_error_types(self):
        rt = self.start("handlers.echo")
        for name, data, want in (
            ("bad envelope", frame(b'{"payload": 1}'), "ValueError"),
            ("not json", frame(b"{not json"), "JSONDecodeError"),
            ("not utf-8", frame(b"\xff\xfe"), "UnicodeDecodeError"),
        ):
            with self.subTest(name):
                got = rt.raw(data)[0]
                self.assertEqual((got["error"], got["details"]["type"]), ("msg_parsing_error", want))
        rt = self.start("handlers.erase", ASYA_HANDLER_MODE="envelope")
        got = rt.call(envelope(1, current=1))[0]
        self.assertEqual((got["error"], got["details"]["type"]), ("processing_error", "ValueError"))

    def test_truncated_frame_gets_connection_error(self):
        rt = self.start("handlers.echo")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(WAIT)
            s.connect(rt.socket_path)
            s.sendall(struct.pack(">I", 100) + b'{"payload":')
            s.shutdown(socket.SHUT_WR)  # closed for writing; still reading
            (n,) = struct.unpack(">I", recv_exact(s, 4))
            got = json.loads(recv_exact(s, n))
        self.assertEqual(got[0]["error"], "connection_error")
        self.assertIn("11 of 100 bytes", got[0]["details"]["message"])
        self.assertEqual(rt.call(envelope("next"))[0]["payload"], "next")


    def test_invalid_json_and_envelopes(self):
        rt = self.start("handlers.echo")
        cases = {
            "not json": frame(b"{not json"),
            "not utf-8": frame(b"\xff\xfe\x00"),
            "array": frame(b"[1, 2]"),
            "no route": frame(b'{"payload": 1}'),
            "no actors": frame(b'{"route": {"current": 0}, "payload": 1}'),
            "empty actors": frame(b'{"route": {"actors": [], "current": 0}, "payload": 1}'),
            "current past the last actor": frame(b'{"route": {"actors": ["a"], "current": 1}, "payload": 1}'),
            "negative current": frame(b'{"route": {"actors": ["a"], "current": -1}, "payload": 1}'),
            "id not a string": frame(b'{"id": 7, "route": {"actors": ["a"], "current": 0}, "payload": 1}'),
            "headers not an object": frame(b'{"headers": [1], "route": {"actors": ["a"], "current": 0}, "payload": 1}'),
            "actors not list": frame(b'{"route": {"actors": "a", "current": 0}, "payload": 1}'),
            "current string": frame(b'{"route": {"actors": ["a"], "current": "0"}, "payload": 1}'),
            "current bool": frame(b'{"route": {"actors": ["a"], "current": true}, "payload": 1}'),
            "no payload": frame(b'{"route": {"actors": ["a"], "current": 0}}'),
        }
        for name, data in cases.items():
            with self.subTest(name):
                got = rt.raw(data)
                self.assertEqual(len(got), 1)
                self.assertEqual(got[0]["error"], "msg_parsing_error")
                self.assertTrue(got[0]["details"]["message"])
        self.assertEqual(rt.call(envelope(7))[0]["payload"], 7)

    def test_oversized_message_is_refused(self):
        rt = self.start("handlers.echo", ASYA_MAX_MESSAGE_SIZE="1000")
        got = rt.call(envelope("x" * 2000))
        self.assertEqual(got[0]["error"], "msg_parsing_error")
        self.assertIn("ASYA_MAX_MESSAGE_SIZE", got[0]["details"]["message"])
        self.assertEqual(rt.call(envelope("small"))[0]["payload"], "small")

    # ---- framing and load ----

    def test_large_payload(self):
        rt = self.start("handlers.echo")
        data = "0123456789abcdef" * (5 * 1024 * 1024 // 16)
        got = rt.call(envelope({"data": data}))
        self.assertEqual(len(got[0]["payload"]["data"]), 5 * 1024 * 1024)
        self.assertEqual(got[0]["payload"]["data"], data)

    def test_partial_writes(self):
        rt = self.start("handlers.double")
        data = frame(json.dumps(envelope({"value": 2})).encode())
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(WAIT)
            s.connect(rt.socket_path)
            for piece in (data[:2], data[2:5], data[5:20], data[20:]):
                s.sendall(piece)
                time.sleep(0.02)
            (n,) = struct.unpack(">I", recv_exact(s, 4))
            self.assertEqual(json.loads(recv_exact(s, n))[0]["payload"], {"value": 4})

    def test_many_sequential_requests(self):
        rt = self.start("handlers.double")
        for i in range(200):
            self.assertEqual(rt.call(envelope({"value": i}))[0]["payload"], {"value": 2 * i})

    # ---- lifecycle ----

    def test_ready_file_only_after_handler_loaded(self):
        sock_dir = os.path.join(self.tmp, "sock")
        os.makedirs(sock_dir)
        ready = os.path.join(sock_dir, "runtime-ready")
        open(ready, "w").close()  # left by a previous run
        started = time.monotonic()
        rt = self.start("slow_import.handle", ready=False)
        self.assertTrue(wait_for(lambda: not os.path.exists(ready)), "stale ready file kept")
        time.sleep(0.3)
        self.assertFalse(os.path.exists(ready), "ready before the handler module finished importing")
        self.assertTrue(wait_for(lambda: os.path.exists(ready)), rt.stderr())
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertTrue(stat.S_ISSOCK(os.stat(rt.socket_path).st_mode))
        self.assertEqual(rt.call(envelope(5))[0]["payload"], 5)

    def test_probe_connections_are_ignored(self):
        rt = self.start("handlers.echo", ASYA_LOG_LEVEL="DEBUG")
        for sent in (b"", b"\x00", b"\x00\x00\x01"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(rt.socket_path)
                s.sendall(sent)
        self.assertEqual(rt.call(envelope("after probes"))[0]["payload"], "after probes")
        self.assertEqual(rt.stop(), 0)
        err = rt.stderr()
        self.assertIn("probe", err)  # logged, at debug level only
        self.assertNotIn("WARNING", err)
        self.assertNotIn("ERROR", err)

    def test_socket_setup(self):
        sock_dir = os.path.join(self.tmp, "a", "b")  # created by the runtime
        rt = self.start("handlers.echo", socket_dir=sock_dir, ASYA_SOCKET_NAME="custom.sock", ASYA_SOCKET_CHMOD="600")
        self.assertEqual(rt.socket_path, os.path.join(sock_dir, "custom.sock"))
        self.assertEqual(stat.S_IMODE(os.stat(rt.socket_path).st_mode), 0o600)
        self.assertEqual(rt.call(envelope(1))[0]["payload"], 1)

    def test_default_socket_mode(self):
        rt = self.start("handlers.echo")
        self.assertEqual(stat.S_IMODE(os.stat(rt.socket_path).st_mode), 0o666)

    def test_empty_socket_chmod_leaves_the_mode_alone(self):
        umask = os.umask(0o027)
        try:
            rt = self.start("handlers.echo", ASYA_SOCKET_CHMOD="")
        finally:
            os.umask(umask)
        self.assertEqual(stat.S_IMODE(os.stat(rt.socket_path).st_mode), 0o750)

    def test_chunk_size(self):
        rt = self.start("handlers.echo", ASYA_CHUNK_SIZE="7")
        data = "x" * 100000
        self.assertEqual(rt.call(envelope(data))[0]["payload"], data)
        self.assert_failed_start("handlers.echo", "ASYA_CHUNK_SIZE", ASYA_CHUNK_SIZE="0")

    def test_stale_socket_is_replaced(self):
        sock_dir = os.path.join(self.tmp, "sock")
        os.makedirs(sock_dir)
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(os.path.join(sock_dir, "asya-runtime.sock"))
        stale.close()  # the file stays, nobody listens
        rt = self.start("handlers.echo")
        self.assertEqual(rt.call(envelope("fresh"))[0]["payload"], "fresh")

    def test_unloadable_handlers(self):
        cases = [
            ("handlers.missing", ["missing"]),
            ("no_such_module_xyz.handle", ["no_such_module_xyz"]),
            ("broken_import.handle", ["asya_missing_dependency_xyz"]),
            ("handlers", ["module.function"]),
            ("", ["module.function"]),
            ("handlers.Counter", ["is a class"]),
            ("handlers.not_callable", ["not callable"]),
            ("handlers.Counter.missing", ["missing"]),
        ]
        for handler, needles in cases:
            with self.subTest(handler=handler):
                err = self.assert_failed_start(handler, *needles)
                self.assertIn("ERROR", err)

    def test_failed_start_leaves_termination_message(self):
        # Kubernetes reports the file as the container's termination
        # message; it must end with what went wrong and carry no timestamp.
        term = os.path.join(self.tmp, "termination-log")
        self.assert_failed_start("broken_import.handle", "asya_missing_dependency_xyz", ASYA_TERMINATION_LOG=term)
        with open(term) as f:
            message = f.read()
        self.assertTrue(message.startswith("cannot load handler 'broken_import.handle': import failed\nTraceback"), message)
        self.assertTrue(message.endswith("No module named 'asya_missing_dependency_xyz'"), message)

    def test_termination_message_keeps_the_end_of_a_long_traceback(self):
        term = os.path.join(self.tmp, "termination-log")
        with open(os.path.join(self.tmp, "mods", "loud_import.py"), "w") as f:
            f.write("raise RuntimeError('x' * 5000 + ' the end')\n")
        self.assert_failed_start("loud_import.handle", "the end", ASYA_TERMINATION_LOG=term)
        with open(term, "rb") as f:
            message = f.read()
        self.assertLessEqual(len(message), 2048)
        self.assertTrue(message.endswith(b"xxx the end"), message[-40:])

    def test_class_needing_arguments(self):
        err = self.assert_failed_start("handlers.NeedsArgs.handle", "NeedsArgs", "constructor arguments")
        self.assertIn("model", err)

    def test_invalid_configuration(self):
        self.assert_failed_start("handlers.echo", "ASYA_HANDLER_MODE", ASYA_HANDLER_MODE="batch")
        self.assert_failed_start("handlers.echo", "ASYA_SOCKET_CHMOD", ASYA_SOCKET_CHMOD="rw")

    def test_sigterm_finishes_message_in_hand(self):
        rt = self.start("handlers.slow")
        marker = os.path.join(self.tmp, "started")
        result = {}

        def client():
            try:
                result["got"] = rt.call(envelope({"marker": marker, "sleep": 0.5}))
            except Exception as e:  # reported by the assertions below
                result["err"] = e

        t = threading.Thread(target=client)
        t.start()
        self.assertTrue(wait_for(lambda: os.path.exists(marker)), rt.stderr())
        rt.proc.send_signal(signal.SIGTERM)
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertEqual(result.get("got"), [{
            "id": "m-1",
            "payload": {"slept": 0.5},
            "route": {"actors": ["a", "b", "c"], "current": 1},
        }], result.get("err"))
        self.assertEqual(rt.exit_code(), 0, rt.stderr())
        self.assertFalse(os.path.exists(rt.socket_path))
        self.assertFalse(os.path.exists(rt.ready_path))

    def test_idle_shutdown(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig):
                rt = self.start("handlers.echo")
                started = time.monotonic()
                self.assertEqual(rt.stop(sig), 0, rt.stderr())
                self.assertLess(time.monotonic() - started, 2.0)
                self.assertFalse(os.path.exists(rt.socket_path))
                self.assertFalse(os.path.exists(rt.ready_path))


if __name__ == "__main__":
    unittest.main()
