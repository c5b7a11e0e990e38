"""The report's rows and totals: one bill per workflow and mode, and savings over the workflow set."""

from __future__ import annotations

from typing import Any

from tests.bench.token_savings.accounting import Charge, ModelCall, add, charge


def row(calls: list[ModelCall], right: bool, notes: list[str] | None = None) -> dict[str, Any]:
    bill = charge(calls)
    figures: dict[str, Any] = {
        "input": bill.input,
        "output": bill.output,
        "total": bill.total,
        "cost": bill.cost,
        "cached_cost": bill.cached_cost,
        "peak_context": bill.peak_context,
        "model_calls": bill.calls,
        "right": right,
    }
    if notes:
        figures["notes"] = notes
    return figures


def as_charge(figures: dict[str, Any]) -> Charge:
    return Charge(
        figures["input"],
        figures["output"],
        figures["cost"],
        figures["cached_cost"],
        figures["peak_context"],
        figures["model_calls"],
    )


def saving(mine: Charge, baseline: Charge) -> float:
    return round(mine.saving_against(baseline), 3)


def totals(rows: dict[str, dict[str, dict[str, Any]]], modes: list[str]) -> dict[str, Any]:
    """Per mode: the sum over workflows (price-weighted and cached cost, tokens, calls), and how many were right."""
    summed: dict[str, Any] = {}
    for mode in modes:
        bills = [as_charge(r[mode]) for r in rows.values() if mode in r]
        bill = add(bills)
        summed[mode] = {
            "input": bill.input,
            "output": bill.output,
            "total": bill.total,
            "cost": bill.cost,
            "cached_cost": bill.cached_cost,
            "model_calls": bill.calls,
            "right": f"{sum(bool(r[mode]['right']) for r in rows.values() if mode in r)}/{len(bills)}",
        }
    return summed


def table(rows: dict[str, dict[str, dict[str, Any]]], modes: list[str]) -> str:
    """A plain-text table: price-weighted cost per workflow and mode (calls, right)."""
    width = max(len(name) for name in rows) + 2
    lines = [" " * width + "".join(f"{mode:>26}" for mode in modes)]
    for name, by_mode in rows.items():
        cells = []
        for mode in modes:
            figures = by_mode.get(mode)
            if figures is None:
                cells.append(f"{'-':>26}")
                continue
            right = "ok" if figures["right"] else "NO"
            cells.append(f"{figures['cost']:>12,.0f} {figures['model_calls']:>3} calls {right:>3}")
        lines.append(f"{name:<{width}}" + "".join(cells))
    return "\n".join(lines)
