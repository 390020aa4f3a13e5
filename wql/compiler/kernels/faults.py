"""Faults a test injects at a named point of a trigger or a drain, to show that a stream stopped there
restarts to every window and late row once (docs/semantics.md §8.11; docs/cli.md lists the points).

Copied into every streaming job; unset, a fault point does nothing.
"""


def fault(point, batch=None):
    """WQL_FAULT="POINT[@TRIGGER][:kill]" raises at POINT, or with ":kill" ends the process group at once, as a
    crash would."""
    import os

    wanted = os.environ.get("WQL_FAULT")
    if not wanted:
        return
    spec, _, how = wanted.partition(":")
    name, _, at = spec.partition("@")
    if name != point or (at and at != str(batch)):
        return
    if how == "kill":
        import signal

        os.killpg(os.getpgrp(), signal.SIGKILL)
    raise RuntimeError(f"WQL_FAULT: a fault injected at {point}" + ("" if batch is None else f" ({batch})"))
