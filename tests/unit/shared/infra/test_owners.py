"""Services share data only through published events, the rules API and the read models their
owners publish: no service's SQL names another service's table (``shared/infra/owners.py`` says
who owns what), and every table and view the migrations create has an owner."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from shared.infra.owners import READ_MODELS, SHARED, TABLES, may_read

ROOT = Path(__file__).resolve().parents[4]
SERVICES = ROOT / "services"
MIGRATIONS = ROOT / "shared" / "infra" / "migrations"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

_RELATION = re.compile(
    r"\b(?:from|join|into|update|table|truncate)\s+(?:only\s+)?([a-z_][a-z0-9_]*)", re.IGNORECASE
)
_CREATED = re.compile(
    r"\bcreate\s+(?:unlogged\s+)?(?:table|(?:or\s+replace\s+)?view)\s+(?:if\s+not\s+exists\s+)?"
    r"([a-z_][a-z0-9_]*)",
    re.IGNORECASE,
)


def _strings(source: str) -> list[tuple[int, str]]:
    """The string literals of a module (an f-string with ``{}`` for what it formats), with
    their lines; docstrings left out (they are prose)."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    skipped.add(id(statement.value))
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(value) for value in node.values)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                value.value if isinstance(value, ast.Constant) else "{}" for value in node.values
            )
            found.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            found.append((node.lineno, node.value))
    return found


def relations_named(source: str) -> list[tuple[int, str]]:
    """The tables and views of the ownership map that the module's SQL names, with lines."""
    known = TABLES.keys() | READ_MODELS.keys()
    return [
        (line, name.lower())
        for line, text in _strings(source)
        for name in _RELATION.findall(text)
        if name.lower() in known
    ]


def _service_reads() -> dict[str, list[tuple[str, int, str]]]:
    reads: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted(SERVICES.rglob("*.py")):
        service = path.relative_to(SERVICES).parts[0]
        for line, relation in relations_named(path.read_text()):
            reads.setdefault(service, []).append((str(path.relative_to(ROOT)), line, relation))
    return reads


def test_no_service_names_another_services_table() -> None:
    crossing = [
        f"{where}:{line} ({service}) names {relation}, "
        + (
            f"a read model of {READ_MODELS[relation].owner} not published for it"
            if relation in READ_MODELS
            else f"a table of {TABLES[relation]}"
        )
        for service, reads in _service_reads().items()
        for where, line, relation in reads
        if not may_read(service, relation)
    ]
    assert crossing == [], "\n".join(crossing)


def test_the_scan_sees_the_services_sql() -> None:
    """The scan finds what the services are known to read, so a pattern gone stale cannot pass
    the rule above by finding nothing."""
    named = {service: {read[2] for read in reads} for service, reads in _service_reads().items()}
    assert {"lobby_tables", "lobby_seats", "match_statuses", "match_seat_holders"} <= named["lobby"]
    assert {"matches", "match_seats"} <= named["match"]
    assert "match_deadlines" in named["clocks"]
    assert "match_bot_turns" in named["bots"]
    assert "webhook_deliveries" in named["webhooks"]


def test_a_read_of_another_services_table_is_found() -> None:
    source = '''
"""A docstring that says select * from matches is prose."""
QUERY = "select status from matches where match_id = %s"
COLUMNS = "seat"
JOINED = f"select {COLUMNS} from match_seats"
'''
    assert relations_named(source) == [(3, "matches"), (5, "match_seats")]
    assert not may_read("lobby", "matches") and not may_read("clocks", "match_seats")
    assert may_read("lobby", "match_statuses") and not may_read("bots", "match_statuses")
    assert may_read("match", "matches") and may_read("webhooks", "events")


def test_every_table_and_view_the_migrations_create_has_an_owner() -> None:
    created = {
        name.lower()
        for path in MIGRATIONS.glob("*.sql")
        for name in _CREATED.findall(path.read_text())
    }
    unowned = created - TABLES.keys() - READ_MODELS.keys()
    assert unowned == set(), f"add these to shared/infra/owners.py: {sorted(unowned)}"
    assert READ_MODELS.keys() <= created, "a read model no migration creates"
    owners = {*TABLES.values(), *(model.owner for model in READ_MODELS.values())}
    services = {path.name for path in SERVICES.iterdir() if (path / "__init__.py").exists()}
    assert owners <= services | {SHARED}


def test_every_read_model_is_documented_with_its_readers() -> None:
    architecture = ARCHITECTURE.read_text()
    for name, model in READ_MODELS.items():
        line = next((line for line in architecture.splitlines() if f"`{name}`" in line), "")
        assert line, f"docs/architecture.md does not describe the read model {name}"
        for reader in model.readers:
            assert reader in line, f"docs/architecture.md does not say {reader} reads {name}"
