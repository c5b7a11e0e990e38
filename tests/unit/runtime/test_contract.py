"""The sandbox contract has one owner (runtime/contract.py); these pin that its users agree with it."""

from __future__ import annotations

import dataclasses
import keyword
from pathlib import Path

import pytest

from mcpexec.api.usage import Usage as StatusUsage
from runtime import contract
from runtime.client import Gateway
from runtime.config import Environment
from runtime.result import Usage as ResultUsage


def test_usage_fields_are_the_runtime_result_and_the_status_keys() -> None:
    assert tuple(f.name for f in dataclasses.fields(ResultUsage)) == contract.USAGE_FIELDS
    assert tuple(f.alias for f in StatusUsage.model_fields.values()) == contract.USAGE_FIELDS


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get-customer", "get_customer"),
        ("2fa.check", "_2fa_check"),
        ("", "_"),
        ("if", "if_"),
        ("class", "class_"),
        ("None", "None_"),
        ("ok_name", "ok_name"),
    ],
)
def test_python_identifier_gives_a_usable_name(name: str, expected: str) -> None:
    ident = contract.python_identifier(name)
    assert ident == expected
    assert ident.isidentifier() and not keyword.iskeyword(ident)


def test_sandbox_environment_names_exactly_one_credential() -> None:
    common = {"gateway_url": "unix:///run/mcpexec/gateway.sock", "result_file": "/r", "tmpdir": "/t"}
    with_file = contract.sandbox_environment(**common, token_file="/var/run/secrets/mcpexec/token")
    with_token = contract.sandbox_environment(**common, token="jwt")
    assert contract.TOKEN_FILE_ENV in with_file and contract.TOKEN_ENV not in with_file
    assert with_token[contract.TOKEN_ENV] == "jwt" and contract.TOKEN_FILE_ENV not in with_token
    for neither_or_both in ({}, {"token_file": "/f", "token": "jwt"}):
        with pytest.raises(ValueError, match="exactly one gateway credential"):
            contract.sandbox_environment(**common, **neither_or_both)


def test_sandbox_environment_keeps_writes_in_the_writable_places() -> None:
    env = contract.sandbox_environment(
        gateway_url="http://gw:8080", result_file="/r", tmpdir=contract.LOCAL_TMP, token="t"
    )
    assert env["HOME"] == contract.WORKSPACE
    assert env["TMPDIR"].startswith(contract.WORKSPACE + "/")
    assert (env[contract.WORKSPACE_ENV], env[contract.SKILLS_ENV]) == (contract.WORKSPACE, contract.SKILLS)
    assert env[contract.TASK_FILE_ENV] == contract.TASK_FILE


def _environment(ready_file: Path | None) -> Environment:
    return Environment(
        gateway_url="http://gateway:8000",
        token_file=None,
        token="t",
        task_file=Path(contract.TASK_FILE),
        result_file=Path(contract.TERMINATION_LOG),
        workspace=Path(contract.WORKSPACE),
        skills=Path(contract.SKILLS),
        ready_file=ready_file,
    )


def test_a_pool_sandbox_marks_itself_ready_once_asked_where(tmp_path: Path) -> None:
    """The marker the pod's startup probe waits for (written when the gateway first answers), only where asked."""
    marker = tmp_path / "ready"
    gateway = Gateway(_environment(marker))
    assert not marker.exists()
    gateway.mark_ready()
    gateway.mark_ready()
    assert marker.read_text() == "ready\n"
    Gateway(_environment(None)).mark_ready()  # nothing asked: nothing written, nothing raised
    assert [p.name for p in tmp_path.iterdir()] == ["ready"]


def test_only_a_sandbox_whose_result_is_the_termination_message_reports_it_first() -> None:
    """The termination message reaches the operator after the pod's exit and its kubelet's word; a result file the
    host reads at the sandbox's exit (local mode) needs no report."""
    common = {"gateway_url": "http://gw:8000", "tmpdir": "/t", "token": "t"}
    cluster = contract.sandbox_environment(result_file=contract.TERMINATION_LOG, **common)
    local = contract.sandbox_environment(result_file=contract.LOCAL_RESULT_FILE, **common)
    assert cluster[contract.REPORT_RESULT_ENV] == "1"
    assert contract.REPORT_RESULT_ENV not in local
