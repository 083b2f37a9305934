"""Starting the services ``make_stack`` leaves out (the webhooks API and process, clocks and
bots) or all of them again, and where each answers ``/ready``: the HTTP services on their port,
the others on a metrics port of their own."""

from __future__ import annotations

from tests.faults.conftest import FaultStack
from tools.scratch import LOOPBACK, free_port

HTTP = ("match", "lobby", "webhooks-api")
EVERY_SERVICE = ("rules", "clocks", "bots", "webhooks", *HTTP)
BESIDE_MAKE_STACK = ("clocks", "bots", "webhooks", "webhooks-api")


def start_services(stack: FaultStack, names: tuple[str, ...]) -> dict[str, str]:
    """Start ``names`` (a process without HTTP serving ``/ready`` on a free port); the
    ``/ready`` URL of each."""
    if "webhooks-api" in names:
        stack.env["PLAYTABLE_WEBHOOKS_PORT"] = str(free_port())
    stack.env["PLAYTABLE_MATCH_URL"] = stack.match_url()  # where the bots play
    ready = {}
    for name in names:
        if name in HTTP:
            stack.start(name)
            port = {"match": stack.match_ports.get("match"), "lobby": stack.lobby_port}.get(
                name, stack.env.get("PLAYTABLE_WEBHOOKS_PORT")
            )
        else:
            port = free_port()
            stack.env["PLAYTABLE_METRICS_PORT"] = str(port)
            try:
                stack.start(name)
            finally:
                stack.env.pop("PLAYTABLE_METRICS_PORT")
        ready[name] = f"http://{LOOPBACK}:{port}/ready"
    return ready
