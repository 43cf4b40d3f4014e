"""The run summary's provenance: CPU kind, local engine, model file hash and sampling settings."""

from __future__ import annotations

import hashlib

import pytest

from retrieval_response.llm.config import ModelConfig
from retrieval_response.reports.provenance import SAMPLING_FIELDS, cpu, file_sha256, llm_roles, local_engine, provenance

pytestmark = pytest.mark.unit

AVX512 = "processor\t: 0\nmodel name\t: Intel Xeon X\nflags\t\t: fpu sse avx avx2 fma avx512f avx512bw avx512_vnni\n"
AVX2 = "processor\t: 0\nmodel name\t: AMD EPYC Y\nflags\t\t: fpu sse avx avx2 fma f16c\n"


@pytest.mark.parametrize("text, model, features", [
    (AVX512, "Intel Xeon X", ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni"]),
    (AVX2, "AMD EPYC Y", ["avx", "avx2", "fma", "f16c"]),
    ("", None, []),
])
def test_cpu_kind_names_the_instruction_sets_that_decide_the_kernels(text, model, features):
    found = cpu(text)
    assert found["model"] == model and found["features"] == features and found["machine"]


@pytest.mark.parametrize("size", [0, 1, (1 << 22) + 7])
def test_file_hash_is_sha256_of_the_whole_file(tmp_path, size):
    path = tmp_path / "model.gguf"
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_roles_record_sampling_settings_and_the_local_model_hash_never_the_api_base(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"weights")
    local = ModelConfig("llamacpp/m", model_path=str(gguf), temperature=0, max_tokens=48).param_form()
    hosted = ModelConfig("openai/gpt-4o-mini", api_base="https://u:pw@api.example.com/v1?token=t",
                         api_key_env="KEY", logprobs=True).param_form()
    roles = llm_roles({"generator": local, "grader": hosted, "judge": None})
    assert set(roles) == {"generator", "grader"}
    assert roles["generator"]["model_sha256"] == hashlib.sha256(b"weights").hexdigest()
    assert "model_sha256" not in roles["grader"]
    assert all(set(entry) - {"model_sha256"} == set(SAMPLING_FIELDS) for entry in roles.values())
    assert "pw" not in repr(roles) and "api.example.com" not in repr(roles)


def test_the_local_engine_is_recorded_only_when_a_role_runs_a_local_model(tmp_path):
    (tmp_path / "cpuinfo").write_text(AVX2)
    hosted = {"grader": ModelConfig("openai/gpt-4o-mini").param_form()}
    assert provenance(hosted, tmp_path / "cpuinfo")["local_engine"] is None
    local = {"generator": ModelConfig("llamacpp/m", model_path=str(tmp_path / "absent.gguf")).param_form()}
    recorded = provenance(local, tmp_path / "cpuinfo")
    assert recorded["cpu"]["features"] == ["avx", "avx2", "fma", "f16c"]
    assert recorded["local_engine"] == local_engine()
    engine = local_engine()
    assert engine is None or engine["version"].startswith("version")
