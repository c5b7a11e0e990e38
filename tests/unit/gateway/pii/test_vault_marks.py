"""The vault's chain of mint stamps and the caller's mark (gateway/pii/vault_marks.py), over the in-memory vault: the
same contract as Redis' (tests/integration/gateway/test_vault_loss.py loses a real one). A new MemoryVault is what
a restarted `mcpexec serve` has: a sandbox still holding tokens of the last one is refused."""

from __future__ import annotations

import asyncio

import pytest

from gateway.context import TaskContext
from gateway.errors import InvalidVaultMarks, UnknownToken, VaultLost
from gateway.pii.protection import DEFAULT_MINIMUM, protection_for
from gateway.pii.tokenizer import PiiTokenizer
from gateway.pii.vault import MemoryVault
from gateway.pii.vault_marks import CHAIN_WINDOW, Mark, VaultView, viewing
from tests.support.tasks import make_task

ALICE, BOB = ("EMAIL", "alice@example.org"), ("EMAIL", "bob@example.org")


def _told(view: VaultView) -> Mark:
    """The mark a runtime sends after `view`'s answer: the chain's length and its last stamp."""
    answer = view.answer()
    assert answer is not None
    length, _, stamps = answer.partition(":")
    return Mark(int(length), stamps.split(",")[-1])


def test_marks_parse_only_as_the_gateway_gives_them() -> None:
    assert Mark.parse(None) is None
    assert Mark.parse("12:Ab3dE_9x") == Mark(12, "Ab3dE_9x")
    for bad in ("0:Ab3dE_9x", "12:Ab3dE_9", "12:Ab3dE_9x,Ab3dE_9x", "x" * 5000, "1234567890123:Ab3dE_9x", "12"):
        with pytest.raises(InvalidVaultMarks):
            Mark.parse(bad)


def test_the_chain_grows_with_each_mint_that_hands_out_new_tokens_and_answers_what_the_caller_has_not_seen() -> None:
    vault = MemoryVault()

    async def scenario() -> tuple[VaultView, VaultView, VaultView]:
        first, again, second = VaultView(None), VaultView(None), VaultView(None)
        await vault.tokens_for("s", [ALICE], 600, first)
        await vault.tokens_for("s", [ALICE], 600, again)  # nothing new: no stamp
        again_mark = _told(again)
        second = VaultView(again_mark)
        await vault.tokens_for("s", [ALICE, BOB], 600, second)
        return first, again, second

    first, again, second = asyncio.run(scenario())
    assert first.answer() == again.answer()
    first_answer, second_answer = first.answer(), second.answer()
    assert first_answer is not None and first_answer.startswith("1:") and len(first_answer) == 10
    assert second_answer is not None and second_answer.startswith("2:") and len(second_answer) == 10  # one stamp


def test_a_lost_or_restarted_vault_refuses_the_mark_of_the_last_one() -> None:
    async def scenario() -> Mark:
        view = VaultView(None)
        await MemoryVault().tokens_for("s", [ALICE], 600, view)
        return _told(view)

    mark = asyncio.run(scenario())
    restarted = MemoryVault()
    for call in (
        restarted.values_for("s", ["[EMAIL_1]"], VaultView(mark)),
        restarted.entries("s", 0, VaultView(mark)),
        restarted.tokens_for("s", [BOB], 600, VaultView(mark)),
    ):
        with pytest.raises(VaultLost):
            asyncio.run(call)
    assert asyncio.run(restarted.values_for("s", ["[EMAIL_1]"])) == [None]  # nothing minted by the refusals

    async def minted_anew() -> None:
        await restarted.tokens_for("s", [BOB], 600, VaultView(None))  # another history: the same place, other stamp
        await restarted.values_for("s", ["[EMAIL_1]"], VaultView(mark))

    with pytest.raises(VaultLost):
        asyncio.run(minted_anew())


def test_an_older_mark_still_in_the_chain_passes_and_the_answer_tells_the_rest() -> None:
    vault = MemoryVault()

    async def scenario() -> tuple[list[str | None], str | None]:
        first = VaultView(None)
        await vault.tokens_for("s", [ALICE], 600, first)
        for n in range(CHAIN_WINDOW + 5):
            await vault.tokens_for("s", [("EMAIL", f"p{n}@example.org")], 600)
        late = VaultView(_told(first))
        return await vault.values_for("s", ["[EMAIL_1]"], late), late.answer()

    values, answer = asyncio.run(scenario())
    assert values == ["alice@example.org"]
    assert answer is not None
    length, _, stamps = answer.partition(":")
    assert int(length) == CHAIN_WINDOW + 6 and len(stamps.split(",")) == CHAIN_WINDOW  # the window, not all


def test_two_histories_within_one_request_are_a_lost_vault() -> None:
    view = VaultView(None)
    view.record(2, ["AAAAAAAA", "BBBBBBBB"])
    view.record(3, ["BBBBBBBB", "CCCCCCCC"])
    with pytest.raises(VaultLost):
        view.record(3, ["XXXXXXXX"])


def test_the_tokenizer_checks_the_requests_mark_and_tells_the_gateway_of_a_loss() -> None:
    lost: list[tuple[str, str]] = []

    async def on_lost(ctx: TaskContext, reason: str) -> None:
        lost.append((ctx.scope, reason))

    def tokenizer(vault: MemoryVault) -> PiiTokenizer:
        return PiiTokenizer(vault, 600, protection_for(DEFAULT_MINIMUM, lambda _c, _n: None), on_vault_lost=on_lost)

    ctx = TaskContext(task=make_task("marks-unit", []), uid="uid-1", expires_at=2**40)

    async def scenario() -> Mark:
        with viewing(VaultView(None)) as view:
            assert await tokenizer(MemoryVault()).tokenize(ctx, {"to": "alice@example.org"}) == {"to": "[EMAIL_1]"}
        return _told(view)

    mark = asyncio.run(scenario())
    restarted = tokenizer(MemoryVault())

    async def after(value: object, detokenize: bool) -> object:
        with viewing(VaultView(mark)):
            return await (restarted.detokenize if detokenize else restarted.tokenize)(ctx, value)

    with pytest.raises(VaultLost):
        asyncio.run(after({"to": "[EMAIL_1]"}, detokenize=True))
    with pytest.raises(VaultLost):
        asyncio.run(after({"text": "bob@example.org"}, detokenize=False))
    assert lost == [(ctx.scope, lost[0][1])] * 2 and lost[0][1].startswith("vault_lost: ")
    assert asyncio.run(after({"text": "no token"}, detokenize=True)) == {"text": "no token"}  # no vault call
    with pytest.raises(UnknownToken):
        asyncio.run(restarted.detokenize(ctx, {"to": "[EMAIL_1]"}))  # no mark: a token this vault never minted
