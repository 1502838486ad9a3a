"""Handlers baked into the node tier's runtime image, as a user's image has
its own module on the path. Named by ASYA_HANDLER=handlers.process."""

import builtins
import os
import time


def process(payload):
    """Echoes the payload with the pod's name and HANDLER_VERSION; sleeps
    payload["seconds"] first, and raises when payload["fail"] is set."""
    time.sleep(float(payload.get("seconds", 0)))
    if payload.get("fail"):
        raise ValueError("handler refused %r" % (payload,))
    return {
        "echo": payload,
        "pod": os.environ.get("HOSTNAME", ""),
        "version": os.environ.get("HANDLER_VERSION", ""),
    }


def fan(payload):
    """Yields payload["n"] results, one message each (the flat runtime
    streams a generator's results as they come)."""
    for i in range(int(payload.get("n", 3))):
        yield {"part": i, "of": payload}


def flaky(payload):
    """Raises payload["error"] (a builtin exception's name, ConnectionError
    by default) for the first payload["failures"] calls with payload["key"],
    then echoes with the number of calls. The calls are counted in a file
    of the pod's /tmp, so that retries, which come back as new messages,
    are seen."""
    path = os.path.join("/tmp", "flaky-" + payload["key"])
    with open(path, "a") as f:
        f.write(".")
    with open(path) as f:
        calls = len(f.read())
    if calls <= int(payload.get("failures", 0)):
        error = getattr(builtins, payload.get("error", "ConnectionError"))
        raise error("call %d of %s fails" % (calls, payload["key"]))
    return {"echo": payload, "calls": calls}


def notes(payload):
    """Keeps notes under the state proxy mounted at /state/notes: writes
    payload["text"] to the note payload["note"] when given, then answers
    the note as read back, with the pod's name."""
    path = os.path.join("/state/notes", payload["note"])
    if "text" in payload:
        with open(path, "w") as f:
            f.write(payload["text"])
    with open(path) as f:
        text = f.read()
    return {"note": payload["note"], "text": text, "pod": os.environ.get("HOSTNAME", "")}
