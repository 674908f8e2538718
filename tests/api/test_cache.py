"""The response cache: content-addressed, whole files only."""

from __future__ import annotations

from mmconvert.api.cache import ResponseCache, default_cache_dir, request_key


def test_keys_are_content_addresses():
    request = {"endpoint": "images/generations", "params": {"prompt": "p", "size": "1024x1024"},
               "item": "a-0001", "seed": 0}
    same = {"seed": 0, "item": "a-0001", "params": {"size": "1024x1024", "prompt": "p"},
            "endpoint": "images/generations"}
    assert request_key(request) == request_key(same)
    for change in ({"seed": 1}, {"item": "a-0002"}, {"params": {"prompt": "q"}}):
        assert request_key({**request, **change}) != request_key(request)


def test_a_response_is_kept_as_received(tmp_path):
    cache = ResponseCache(tmp_path)
    body = b'{"data": [{"b64_json": "..."}]}\n\xff raw bytes'
    cache.put("ab" * 32, {"status": 200, "params": {"prompt": "p"}}, body)
    hit = cache.get("ab" * 32)
    assert hit.body == body and hit.header["status"] == 200
    assert ("ab" * 32) in cache and cache.get("cd" * 32) is None
    assert not list(tmp_path.rglob("*.tmp"))
    cache.path("ef" * 32).parent.mkdir(parents=True)
    cache.path("ef" * 32).write_bytes(b"not a header\nbody")
    assert cache.get("ef" * 32) is None  # not written whole by us: ask again


def test_the_default_cache_lives_outside_the_run_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("MMCONVERT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "mmconvert" / "responses"
    monkeypatch.setenv("MMCONVERT_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
