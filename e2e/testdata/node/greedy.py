"""A handler module that takes 256 MiB as it loads: under a small memory
limit its runtime is OOMKilled at every start."""

_HELD = bytearray(256 * 1024 * 1024)
for _i in range(0, len(_HELD), 4096):
    _HELD[_i] = 1


def process(payload):
    return payload
