"""Development and measurement tools, run from a checkout of the repository and never shipped
in the service image (infra/deploy/Dockerfile leaves this folder out): the benchmarks
(``playtable bench``), the load and fault traffic that ``playtable copies`` and the fault suite
(``tests/faults``) play, and the building of the OpenAPI contract with its examples and its
breaking-change check (``playtable openapi``). What several of them share lives in
``tools/traffic.py`` (the client and the load) and ``tools/scratch.py`` (services started on a
database of their own); no tool takes another's private names, and production code
(``services``, ``shared``) never imports this package."""
