#!/usr/bin/env python3
"""Asya actor runtime.

Serves the handler named by ASYA_HANDLER on a Unix socket for the asya-sidecar.
Each connection carries one request and one response, each framed as a 4-byte
big-endian length followed by that many bytes of UTF-8 JSON. The response is
always a JSON array. Python 3.7+, standard library only.

Environment: ASYA_HANDLER (module.function or module.Class.method),
ASYA_HANDLER_MODE (payload or envelope), ASYA_ENABLE_VALIDATION,
ASYA_SOCKET_DIR, ASYA_SOCKET_NAME, ASYA_SOCKET_CHMOD (octal, default 666; empty
leaves the mode alone), ASYA_MAX_MESSAGE_SIZE and ASYA_CHUNK_SIZE (bytes read at
a time), ASYA_LOG_LEVEL, ASYA_TERMINATION_LOG (default /dev/termination-log).
"""
import importlib
import inspect
import json
import logging
import os
import select
import signal
import socket
import stat
import struct
import sys
import traceback

log = logging.getLogger("asya-runtime")

READY_FILE = "runtime-ready"
# The envelope fields a handler's result keeps in envelope mode.
ENVELOPE_FIELDS = ("payload", "route", "id", "parent_id", "headers")
# A client that connects and then goes silent must not block this
# single-threaded server forever.
IO_TIMEOUT = 60.0
# Why the runtime could not start goes here too: Kubernetes reports the
# file as the container's termination message, which the actor's status
# quotes. The kubelet keeps 4096 bytes; the end of a traceback says most.
TERMINATION_LOG = "/dev/termination-log"
TERMINATION_LIMIT = 2048


class LoadError(Exception):
    """The handler named by ASYA_HANDLER cannot be used."""


def env_bool(env, name, default):
    value = env.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("false", "0", "no", "off")


def env_int(env, name, default, base):
    value = env.get(name) or default
    try:
        return int(value, base)
    except ValueError:
        raise ValueError("%s must be a base-%d integer, got %r" % (name, base, value))


class Config:
    def __init__(self, env):
        self.socket_dir = env.get("ASYA_SOCKET_DIR") or "/var/run/asya"
        self.socket_path = os.path.join(self.socket_dir, env.get("ASYA_SOCKET_NAME") or "asya-runtime.sock")
        self.ready_path = os.path.join(self.socket_dir, READY_FILE)
        self.handler = env.get("ASYA_HANDLER", "")
        self.mode = (env.get("ASYA_HANDLER_MODE") or "payload").strip().lower()
        self.validate = env_bool(env, "ASYA_ENABLE_VALIDATION", True)
        self.chmod = None  # set but empty: leave the socket's mode alone
        if env.get("ASYA_SOCKET_CHMOD") != "":
            self.chmod = env_int(env, "ASYA_SOCKET_CHMOD", "666", 8)
        self.max_size = env_int(env, "ASYA_MAX_MESSAGE_SIZE", str(64 << 20), 10)
        self.chunk_size = env_int(env, "ASYA_CHUNK_SIZE", str(1 << 20), 10)
        if self.chunk_size < 1:
            raise ValueError("ASYA_CHUNK_SIZE must be positive, got %d" % self.chunk_size)
        if self.mode not in ("payload", "envelope"):
            raise ValueError("ASYA_HANDLER_MODE must be payload or envelope, got %r" % self.mode)


# ---- handler loading ----

def load_handler(spec):
    parts = spec.split(".")
    if len(parts) < 2 or not all(parts):
        raise LoadError("expected module.function or module.Class.method")
    # The module may itself be dotted (package.module), so try the longest
    # importable prefix first. Only "this prefix is not a module" moves on to
    # a shorter one; any other import failure is the user's and is reported.
    for i in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:i])
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                continue
            raise
        return resolve(module, parts[i:])
    raise LoadError("no module named %r" % parts[0])


def resolve(module, rest):
    def attr(obj, name):
        value = getattr(obj, name, attr)  # attr itself: a sentinel no module holds
        if value is attr:
            raise LoadError("%r has no attribute %r" % (getattr(obj, "__name__", obj), name))
        return value

    if len(rest) == 1:
        fn = attr(module, rest[0])
        if inspect.isclass(fn):
            raise LoadError("%s is a class; name a method: module.Class.method" % rest[0])
    elif len(rest) == 2:
        cls = attr(module, rest[0])
        if not inspect.isclass(cls):
            raise LoadError("%s is not a class" % rest[0])
        fn = attr(instantiate(cls), rest[1])
    else:
        raise LoadError("cannot resolve %r in module %s" % (".".join(rest), module.__name__))
    if not callable(fn):
        raise LoadError("%s is not callable" % ".".join(rest))
    return fn


def instantiate(cls):
    # Check the constructor before calling it, so that a class needing
    # arguments gets a clear message rather than a bare TypeError.
    try:
        inspect.signature(cls).bind()
    except TypeError as e:
        raise LoadError("class %s needs constructor arguments (%s); handler classes are created with none"
                        % (cls.__name__, e))
    except ValueError:
        pass  # no introspectable signature; just try
    return cls()


# ---- message processing ----

def parse(raw):
    """The request envelope; a bad one raises the ValueError (a JSON or
    UTF-8 decoding error included) that becomes msg_parsing_error."""
    msg = json.loads(raw.decode("utf-8"))
    check_envelope(msg, "request")
    if "payload" not in msg:
        raise ValueError("request: missing payload")
    return msg


def check_envelope(msg, what, done=False):
    """Checks an envelope in place; a route without current starts at 0.
    A result (done) may point one past the last actor: its route is over."""
    if not isinstance(msg, dict):
        raise ValueError("%s: envelope must be an object" % what)
    route = msg.get("route")
    if not isinstance(route, dict):
        raise ValueError("%s: missing or invalid route" % what)
    actors = route.get("actors")
    if not isinstance(actors, list) or not actors or not all(isinstance(a, str) for a in actors):
        raise ValueError("%s: route.actors must be a non-empty list of strings" % what)
    current = route.setdefault("current", 0)
    # bool is an int in Python; a JSON true is not a position.
    last = len(actors) if done else len(actors) - 1
    if not isinstance(current, int) or isinstance(current, bool) or not 0 <= current <= last:
        raise ValueError("%s: route.current must be 0 to %d for %d actors, got %r" % (what, last, len(actors), current))
    if "id" in msg and not isinstance(msg["id"], str):
        raise ValueError("%s: id must be a string" % what)
    if msg.get("headers") is not None and not isinstance(msg["headers"], dict):
        raise ValueError("%s: headers must be an object" % what)


def as_list(result):
    if result is None:
        return []
    return result if isinstance(result, list) else [result]


def run_payload(handler, msg):
    route = msg["route"]
    out = []
    for value in as_list(handler(msg["payload"])):
        item = {"payload": value, "route": {"actors": list(route["actors"]), "current": route["current"] + 1}}
        for key in ("headers", "id"):
            if key in msg:
                item[key] = msg[key]
        out.append(item)
    return out


def run_envelope(handler, msg, validate):
    # Copy before the call: the handler may edit the envelope in place.
    done = list(msg["route"]["actors"][:msg["route"]["current"] + 1])
    out = as_list(handler(msg))
    if validate:
        for i, item in enumerate(out):
            check_envelope(item, "result %d" % i, done=True)
            if item["route"]["actors"][:len(done)] != done:
                raise ValueError("result %d: route rewrites processed actors %s into %s"
                                 % (i, done, item["route"]["actors"][:len(done)]))
    # A result passes on the envelope's fields only; other keys a handler
    # left in it stay with the handler.
    return [{k: item[k] for k in ENVELOPE_FIELDS if k in item} if isinstance(item, dict) else item
            for item in out]


def error_response(kind, exc, with_traceback):
    details = {"message": str(exc), "type": type(exc).__name__}
    if with_traceback:
        details["traceback"] = traceback.format_exc()
    return [{"error": kind, "details": details}]


def process(raw, handler, cfg):
    """Turns one request into the encoded response; never raises."""
    try:
        msg = parse(raw)
    except ValueError as e:
        log.warning("rejecting message: %s", e)
        return encode(error_response("msg_parsing_error", e, False))
    try:
        if cfg.mode == "envelope":
            out = run_envelope(handler, msg, cfg.validate)
        else:
            out = run_payload(handler, msg)
        # Encoding is part of processing: a result JSON cannot carry
        # (a set, NaN) is the handler's error.
        return encode(out)
    except Exception as e:
        log.warning("handler failed: %s: %s", type(e).__name__, e)
        return encode(error_response("processing_error", e, True))


def encode(value):
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode("utf-8")


# ---- socket serving ----

def recv_exact(conn, n, chunk_size):
    """Reads exactly n bytes, or returns what arrived before the peer closed."""
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(min(n - len(buf), chunk_size))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def serve_connection(conn, handler, cfg):
    conn.settimeout(IO_TIMEOUT)
    try:
        head = recv_exact(conn, 4, 4)
    except (ConnectionError, socket.timeout):
        head = b""
    if len(head) < 4:
        # The sidecar opens and closes the socket to check the runtime is up.
        log.debug("probe connection (%d bytes), ignored", len(head))
        return
    (size,) = struct.unpack(">I", head)
    if size > cfg.max_size:
        err = ValueError("message of %d bytes exceeds ASYA_MAX_MESSAGE_SIZE (%d)" % (size, cfg.max_size))
        log.warning("%s", err)
        body = encode(error_response("msg_parsing_error", err, False))
    else:
        raw = recv_exact(conn, size, cfg.chunk_size)
        if len(raw) < size:
            # The peer stopped sending mid-frame; it may still read.
            err = ConnectionError("connection closed after %d of %d bytes" % (len(raw), size))
            log.warning("%s; message dropped", err)
            body = encode(error_response("connection_error", err, False))
        else:
            body = process(raw, handler, cfg)
    conn.sendall(struct.pack(">I", len(body)) + body)


def bind(cfg):
    os.makedirs(cfg.socket_dir, exist_ok=True)
    # A socket left by a previous run (same emptyDir, restarted container)
    # would make bind fail.
    try:
        if not stat.S_ISDIR(os.lstat(cfg.socket_path).st_mode):
            os.unlink(cfg.socket_path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(cfg.socket_path)
    except OSError:
        sock.close()
        raise
    try:
        if cfg.chmod is not None:
            os.chmod(cfg.socket_path, cfg.chmod)
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        remove(cfg.socket_path)
        raise
    return sock


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def on_stop_signals():
    """Installs the SIGTERM/SIGINT handlers; returns (stop requests, wakeup socket)."""
    stopping = []
    # The signal handler only records the request; the wakeup socket makes
    # select return, so a message in hand is always finished first and a
    # signal arriving just before select is never missed.
    wake_r, wake_w = socket.socketpair()
    wake_w.setblocking(False)
    wake_r.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stopping.append(signum))
    return stopping, (wake_r, wake_w)


def serve(sock, handler, cfg, stopping, wake_r):
    while not stopping:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            try:
                wake_r.recv(64)
            except BlockingIOError:
                pass
            continue
        conn, _ = sock.accept()
        with conn:
            try:
                serve_connection(conn, handler, cfg)
            except OSError as e:
                log.warning("connection error: %s", e)
    log.info("signal %d received, shutting down", stopping[0])


def fail(message):
    """Logs why the runtime cannot serve, leaves the end of it as the
    termination message, and returns the exit code."""
    log.error("%s", message)
    tail = message.rstrip().encode("utf-8")[-TERMINATION_LIMIT:].decode("utf-8", "ignore")
    # The kubelet makes the file; outside a container there is none to fill.
    path = os.environ.get("ASYA_TERMINATION_LOG") or (TERMINATION_LOG if os.path.exists(TERMINATION_LOG) else "")
    try:
        if path:
            with open(path, "w") as f:
                f.write(tail)
    except OSError:
        pass  # the log has it
    return 1


def main():
    level = getattr(logging, os.environ.get("ASYA_LOG_LEVEL", "INFO").strip().upper(), None)
    logging.basicConfig(stream=sys.stderr, level=level if isinstance(level, int) else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = Config(os.environ)
        # A ready file from a previous run must not announce a handler that
        # has not loaded yet.
        remove(cfg.ready_path)
    except (ValueError, OSError) as e:
        return fail("cannot start: %s" % e)
    try:
        handler = load_handler(cfg.handler)
    except LoadError as e:
        return fail("cannot load handler %r: %s" % (cfg.handler, e))
    except Exception:
        return fail("cannot load handler %r: import failed\n%s" % (cfg.handler, traceback.format_exc()))
    # Handlers go in before the socket exists, so that no signal can leave
    # a socket or ready file behind.
    stopping, wake = on_stop_signals()
    try:
        sock = bind(cfg)
    except OSError as e:
        return fail("cannot listen on %s: %s" % (cfg.socket_path, e))
    try:
        with open(cfg.ready_path, "w") as f:
            f.write("%d\n" % os.getpid())
        log.info("serving %s (%s mode) on %s", cfg.handler, cfg.mode, cfg.socket_path)
        serve(sock, handler, cfg, stopping, wake[0])
    finally:
        sock.close()
        remove(cfg.socket_path)
        remove(cfg.ready_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
