"""Traffic that tests the platform's edges, shared by ``playtable bench race|malformed`` and the
fault-injection suite (``tests/faults``), beside the load of ``tools/traffic.py``:

- ``racing``: many clients send a move for one match at the same expected version at once
  (``race_round``).
- ``malformed``: malformed requests to every lobby and match route (``hostile_requests``), each
  of which must be refused with a 4xx problem document, never a 5xx.
- ``barrage``: those requests sent, and their answers summed up.

The races use aiohttp, whose cost per request is small enough that they measure the services
rather than their client; malformed requests are written byte for byte on sockets of their own.
"""
