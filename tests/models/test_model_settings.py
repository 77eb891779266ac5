"""Per-role settings: where they come from, which wins, what is recorded, and the checks made
before any trial starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from castbench._agents.models.settings import ModelSettings, load_models_config
from castbench._agents.registry import AgentSpecError
from castbench._cli.app import app
from castbench._records.store import ResultsStore
from castbench._run.api import build_config

LOCAL = "http://127.0.0.1:9/v1"


def test_query_string_settings_are_typed_recorded_and_passed_on() -> None:
    config, agents = build_config(
        domains="retail",
        policy=f"openai/x?temperature=0.2&max_tokens=512&seed=1&api_base={LOCAL}&style=prompted&top_p=0.9",
    )
    assert config.extra["models"]["policy"] == {
        "model": "openai/x",
        "api_base": LOCAL,
        "style": "prompted",
        "temperature": 0.2,
        "max_tokens": 512,
        "seed": 1,
        "top_p": 0.9,
    }
    assert agents.policy.kind == "model" and agents.policy.params["top_p"] == 0.9


def test_more_specific_settings_win(tmp_path: Path) -> None:
    file = tmp_path / "models.toml"
    file.write_text(
        'api_base = "http://file-top/v1"\ntemperature = 0.5\n'
        "[policy]\ntemperature = 0.1\nmax_tokens = 64\n"
        '[user]\napi_base = "http://file-user/v1"\n'
    )
    config, _ = build_config(
        domains="retail",
        policy="openai/p?max_tokens=32",
        user="openai/u",
        critic="openai/c",
        models_config=file,
        api_base="http://flag/v1",
    )
    models = config.extra["models"]
    assert models["policy"] == {
        "model": "openai/p",
        "api_base": "http://flag/v1",
        "temperature": 0.1,
        "max_tokens": 32,
    }
    assert models["user"]["api_base"] == "http://file-user/v1" and models["user"]["temperature"] == 0.5
    assert models["critic"]["api_base"] == "http://flag/v1"
    assert config.critic == "openai/c"


def test_json_models_config(tmp_path: Path) -> None:
    file = tmp_path / "models.json"
    file.write_text('{"critic": {"response_format": "json_schema"}}')
    assert load_models_config(file) == {"*": {}, "critic": {"response_format": "json_schema"}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[planner]\ntemperature = 1\n", "unknown table"),
        ('[policy]\nmodel = "openai/x"\n', "name models with --policy"),
        ('[policy]\napi_key = "sk-123"\n', "API keys in the environment"),
        ("temperature = \n", "cannot read"),
    ],
)
def test_bad_models_config_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "models.toml"
    file.write_text(text)
    with pytest.raises(AgentSpecError, match=message):
        load_models_config(file)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai/x?temperature=hot", "'temperature'"),
        ("openai/x?style=telepathy", "'style'"),
        ("openai/x?api_key=sk-1", "API keys in the environment"),
        ("nonsense/x", "unknown provider"),
    ],
)
def test_bad_model_specs_fail_before_any_trial(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        build_config(domains="retail", policy=spec + ("&" if "?" in spec else "?") + f"api_base={LOCAL}")


def test_a_missing_key_fails_fast_with_exit_2(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = db_url
    result = CliRunner().invoke(
        app, ["eval", "--policy", "openai/gpt-4o-mini", "--user", "openai/gpt-4o-mini", "--db", db]
    )
    assert result.exit_code == 2 and "needs OPENAI_API_KEY" in result.output
    assert ResultsStore(db).runs() == []  # nothing started


def test_a_named_key_variable_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_SERVER_KEY", raising=False)
    with pytest.raises(AgentSpecError, match="MY_SERVER_KEY is not set"):
        build_config(domains="retail", policy=f"openai/x?api_base={LOCAL}&api_key_env=MY_SERVER_KEY")
    monkeypatch.setenv("MY_SERVER_KEY", "secret")
    config, _ = build_config(domains="retail", policy=f"openai/x?api_base={LOCAL}&api_key_env=MY_SERVER_KEY")
    assert "secret" not in config.model_dump_json()


def test_a_server_of_ones_own_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    build_config(domains="retail", policy="openai/my-model", api_base=LOCAL)
    build_config(domains="retail", policy="hosted_vllm/Qwen/Qwen3-8B", api_base=LOCAL)


def test_the_cache_is_not_part_of_the_run_identity(tmp_path: Path) -> None:
    plain, _ = build_config(domains="retail", policy=f"openai/x?api_base={LOCAL}")
    cached, agents = build_config(
        domains="retail", policy=f"openai/x?api_base={LOCAL}", cache_dir=str(tmp_path)
    )
    assert plain.config_hash() == cached.config_hash()
    assert agents.policy.params["cache_dir"] == str(tmp_path)


def test_generation_settings_leave_castbench_keys_out() -> None:
    settings = ModelSettings.model_validate(
        {
            "model": "openai/x",
            "temperature": 0,
            "max_tokens": 8,
            "top_p": 0.5,
            "style": "prompted",
            "timeout": 3,
        }
    )
    assert settings.generation == {"temperature": 0, "max_tokens": 8, "top_p": 0.5}
    assert settings.concurrency_key == "default|openai/x"
