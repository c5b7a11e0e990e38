"""The operator's store of what its watches brought: what reconciles read instead of the API server."""

from __future__ import annotations

from typing import Any

from controller.store import Store

POOL = "mcpexec.dev/pool"


def _pod(name: str, rv: str, uid: str = "u1", **labels: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "n", "uid": uid, "resourceVersion": rv, "labels": labels}
    return {
        "metadata": {**meta, "managedFields": [{"manager": "kubelet"}]},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def test_what_is_kept_is_what_reconciles_read() -> None:
    store = Store({"Pod": (POOL,)})
    store.put("Pod", _pod("a", "5", **{POOL: "p"}))
    kept = store.get("Pod", "n", "a")
    assert kept is not None and "managedFields" not in kept["metadata"] and "spec" not in kept, "no pod spec kept"
    assert kept["status"] == {"phase": "Running"}
    store.put("Job", {"metadata": {"name": "j", "namespace": "n", "uid": "j1"}, "spec": {"x": 1}, "status": {}})
    assert "spec" not in (store.get("Job", "n", "j") or {}), "a Job's pod template is not kept either"
    store.put("AgentTask", {"metadata": {"name": "t", "namespace": "n", "uid": "t1"}, "spec": {"code": "1"}})
    assert (store.get("AgentTask", "n", "t") or {})["spec"] == {"code": "1"}, "a task's spec is kept"


def test_objects_are_found_by_their_indexed_label_as_it_is_now() -> None:
    store = Store({"Pod": (POOL,)})
    assert store.labelled("Pod", "n", POOL, "p") is None, "nothing known: the caller asks the API server"
    store.put("Pod", _pod("b", "1", uid="ub", **{POOL: "p"}))
    store.put("Pod", _pod("a", "1", uid="ua", **{POOL: "p"}))
    assert [p["metadata"]["name"] for p in store.labelled("Pod", "n", POOL, "p") or []] == ["a", "b"]
    store.put("Pod", _pod("a", "2", uid="ua", **{POOL: "q"}))
    assert [p["metadata"]["name"] for p in store.labelled("Pod", "n", POOL, "p") or []] == ["b"]
    store.drop("Pod", "n", "b")
    assert store.labelled("Pod", "n", POOL, "p") is None and store.get("Pod", "n", "b") is None
    assert len(store) == 1


def test_an_older_version_never_replaces_a_newer_one() -> None:
    """A watch event overtaken by a write's answer (or a later event) is ignored; a re-created object is not older."""
    store = Store({})
    store.put("Pod", _pod("a", "10"))
    store.put("Pod", _pod("a", "9"))
    assert (store.get("Pod", "n", "a") or {})["metadata"]["resourceVersion"] == "10"
    store.put("Pod", _pod("a", "3", uid="u2"))
    assert (store.get("Pod", "n", "a") or {})["metadata"]["uid"] == "u2", "another object of that name"
    store.put("Pod", _pod("a", "opaque", uid="u2"))
    assert (store.get("Pod", "n", "a") or {})["metadata"]["resourceVersion"] == "opaque", "not comparable: newest wins"


def _listed(rv: str, *pods: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": list(pods)}


def test_a_listing_makes_a_label_value_complete_and_forgets_what_it_did_not_list() -> None:
    store = Store({"Pod": (POOL,)})
    assert not store.complete("Pod", "n", POOL, "p"), "nothing listed yet: the caller lists"
    store.put("Pod", _pod("ghost", "5", uid="ug", **{POOL: "p"}))  # deleted while no watch saw it
    store.put("Pod", _pod("new", "12", uid="un", **{POOL: "p"}))  # made after the list was read
    store.replace("Pod", "n", POOL, "p", _listed("10", _pod("a", "7", uid="ua", **{POOL: "p"})))
    assert store.complete("Pod", "n", POOL, "p") and not store.complete("Pod", "n", POOL, "q")
    names = [p["metadata"]["name"] for p in store.labelled("Pod", "n", POOL, "p") or []]
    assert names == ["a", "new"], "the unlisted older one is gone; the one newer than the list stays"


def test_a_deleted_object_is_not_put_back_by_an_answer_read_before_its_deletion() -> None:
    store = Store({"Pod": (POOL,)})
    store.put("Pod", _pod("a", "5", uid="ua", **{POOL: "p"}))
    store.drop("Pod", "n", "a", "ua")
    store.put("Pod", _pod("a", "5", uid="ua", **{POOL: "p"}))
    store.replace("Pod", "n", POOL, "p", _listed("4", _pod("a", "3", uid="ua", **{POOL: "p"})))
    assert store.get("Pod", "n", "a") is None and store.labelled("Pod", "n", POOL, "p") is None
    store.put("Pod", _pod("a", "9", uid="ua2", **{POOL: "p"}))
    assert store.get("Pod", "n", "a") is not None, "a new object of the same name is another uid"


def test_what_a_full_listing_lacks_is_gone_and_the_kind_is_complete_after() -> None:
    store = Store({"Pod": (POOL,)})
    store.put("Pod", _pod("gone", "5", uid="ug", **{POOL: "p"}))
    store.put("Pod", _pod("new", "12", uid="un", **{POOL: "p"}))
    store.put("Pod", _pod("kept", "3", uid="uk"))
    unlisted = store.unlisted("Pod", {("n", "kept")}, "10")
    assert [pod["metadata"]["name"] for pod in unlisted] == ["gone"], "the one made after the listing is not gone"
    assert not store.complete("Pod") and not store.complete("Pod", "n", POOL, "p")
    store.listed("Pod")
    assert store.complete("Pod") and store.complete("Pod", "n", POOL, "q") and not store.complete("Job")
    assert sorted(p["metadata"]["name"] for p in store.of_kind("Pod")) == ["gone", "kept", "new"]
