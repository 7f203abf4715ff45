"""The commands are declared once (evaluator/harness/commands.py): each worker answers exactly its declared set, and
each client sends only commands its worker answers."""

from __future__ import annotations

import ast
import inspect

import pytest

from evaluator.harness.commands import CANDIDATE_COMMANDS, REFERENCE_COMMANDS, Command
from evaluator.harness.orchestrator import clients
from evaluator.harness.workers import candidate_worker, reference_worker


def _handler_table(module, monkeypatch) -> dict:
    """The table a worker's main() hands to its command loop (the loop itself is not started)."""
    tables = []
    monkeypatch.setattr(module, "serve", tables.append)
    module.main()
    return tables[0]


@pytest.mark.parametrize(
    ("module", "declared"), [(reference_worker, REFERENCE_COMMANDS), (candidate_worker, CANDIDATE_COMMANDS)]
)
def test_each_worker_answers_its_declared_commands(module, declared, monkeypatch):
    table = _handler_table(module, monkeypatch)
    assert set(table) == set(declared)
    assert all(isinstance(key, Command) for key in table)


def _commands_sent_by(cls) -> set[Command]:
    tree = ast.parse(inspect.getsource(cls))
    return {
        Command[node.attr]
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Command"
    }


def test_each_client_sends_only_what_its_worker_answers():
    assert _commands_sent_by(clients.ReferenceClient) <= REFERENCE_COMMANDS
    assert _commands_sent_by(clients.CandidateClient) <= CANDIDATE_COMMANDS
    # every declared command has a sender (EXIT is sent by sandbox.Worker.ask_exit)
    sent = _commands_sent_by(clients.ReferenceClient) | _commands_sent_by(clients.CandidateClient)
    assert sent | {Command.EXIT} == set(Command)


def test_a_command_travels_as_its_plain_string():
    import json

    assert json.dumps({"cmd": Command.RUN}) == '{"cmd": "run"}'
    assert {Command.RUN: 1}["run"] == 1  # the worker looks its handler up by the string it read
