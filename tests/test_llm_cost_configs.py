"""llm_cost prints calls and tokens for every config, ``dollars=unknown`` when neither the user nor
litellm has a price, and never reaches for the network."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, python_env
from retrieval_response.reports import llm_cost

pytestmark = pytest.mark.unit

SHIPPED = ["config.yaml", *sorted(str(p.relative_to(REPO)) for p in REPO.glob("config/*.yaml")),
           *sorted(str(p.relative_to(REPO)) for p in REPO.glob(".test/*.yaml"))]
LAST_LINE = re.compile(r"^calls=\d+ prompt_tokens=\d+ completion_tokens=\d+ dollars=(unknown|\d+\.\d\d)$")


def _report(config: Path, capfd, monkeypatch) -> str:
    """The last line ``llm_cost`` prints for ``config``, run from the repository in this process
    (``python -m retrieval_response.reports.llm_cost`` calls the same ``main``); nothing it wrote
    to stderr is a traceback."""
    monkeypatch.chdir(REPO)
    llm_cost.main([str(config)])
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    return out.strip().splitlines()[-1]


@pytest.mark.parametrize("config", SHIPPED)
def test_every_shipped_config_prints_counts_without_traceback(config, capfd, monkeypatch):
    assert LAST_LINE.match(_report(REPO / config, capfd, monkeypatch))


@pytest.mark.parametrize("model", ["openai/my-alias", "llamacpp/some-local-model", "nosuchprovider/x"])
def test_unpriced_model_gives_unknown_dollars(tmp_path, model, capfd, monkeypatch):
    text = (REPO / ".test/config_smoke.yaml").read_text()
    config = tmp_path / "config.yaml"
    config.write_text(text.replace("openai/loopback", model))
    assert model in config.read_text()
    assert _report(config, capfd, monkeypatch).endswith("dollars=unknown")


def _tiny(tmp_path: Path, designs: list[dict], generator: str = "openai/loopback",
          grader: str = "openai/loopback") -> dict:
    """A tiny generic dataset with judgments on: query a-0 has positives a1, a2 and negatives x, y,
    z; query a-1 has positive b1 and the same negatives (a text shared by two queries is two pairs)."""
    records = [{"id": "a-0", "q": "Which is a?", "p": ["a one.", "a two."], "n": ["x text.", "y text.", "z text."]},
               {"id": "a-1", "q": "Which is b?", "p": ["b one."], "n": ["x text.", "y text.", "z text."]}]
    (tmp_path / "tiny.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return {"datasets": {"tiny": {"layout": "generic", "path": "tiny.jsonl"}}, "designs": designs, "K": [1],
            "rankers": {"ML6": {"backend": "gt_minilm_l6"}, "PML3": {"backend": "paraphrase_minilm_l3_onnx"}},
            "document_judgments": {"kinds": ["erag", "udcg", "umbrela"]},
            "llm": {"generator": {"model": generator}, "grader": {"model": grader}}}


def test_judgment_calls_match_a_hand_count_on_a_tiny_config(tmp_path):
    """Designs (Nc 3, Np 1, K 1 and 3) and (Nc 4, Np 2, K 1 and 2), two embedders.

    a-0 serves both: candidates {a1, x, y} and {a1, a2, x, y}, union 4 texts. a-1 (one positive)
    serves the first only: {b1, x, y}, 3 texts. 7 pairs, so 7 calls per kind, whatever the number
    of embedders (a pair is judged once). The second design's largest K (2) is below its Nc (4):
    the count is an upper bound. The first design alone (largest K 3 = Nc 3) gives 3 + 3 = 6
    pairs, exact: every candidate is in the top 3 of some ranking."""
    from retrieval_response.reports.llm_cost import estimate, report

    both = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}, {"Nc": 4, "Np": 2, "K": [1, 2]}])
    est = estimate(both, tmp_path)
    assert [est.workload.stages[kind].calls for kind in ("erag", "udcg", "umbrela")] == [7, 7, 7]
    assert not est.workload.judgments_exact
    assert all(est.workload.stages[kind].prompt_tokens > 7 * 10 for kind in ("erag", "udcg", "umbrela"))
    assert "7 distinct (query, text) pairs per kind, an upper bound" in report(est, "tiny")

    exact = estimate(_tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}]), tmp_path)
    assert exact.workload.stages["umbrela"].calls == 6 and exact.workload.judgments_exact
    assert "6 distinct (query, text) pairs per kind, exact" in report(exact, "tiny")

    off = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}])
    off["document_judgments"] = {"kinds": []}
    assert all(stage.calls == 0 for name, stage in estimate(off, tmp_path).workload.stages.items()
               if name in ("erag", "udcg", "umbrela"))


def test_judgments_are_priced_at_the_model_each_kind_uses(tmp_path):
    """erag and udcg at the generator's price, umbrela (like the grades) at the grader's."""
    import litellm

    from retrieval_response.reports.llm_cost import estimate

    est = estimate(_tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}], "openai/gpt-4o-mini", "openai/gpt-4o"),
                   tmp_path)
    stages = est.workload.stages

    def cost(model, names):
        return litellm.cost_per_token(model=model, prompt_tokens=round(sum(stages[n].prompt_tokens for n in names)),
                                      completion_tokens=round(sum(stages[n].completion_tokens for n in names)))

    generator = cost("openai/gpt-4o-mini", ("ideal", "topk", "erag", "udcg"))
    grader = cost("openai/gpt-4o", ("grade", "umbrela"))
    assert est.dollars() == pytest.approx((generator[0] + grader[0], generator[1] + grader[1]))
    assert stages["umbrela"].prompt_tokens > 0 and grader[0] > 0


def test_answers_and_grades_fan_out_over_the_workflows_units(tmp_path):
    """Top-K answers and grades: one per served query, K and unit of ``plan.dataset_units`` (the
    dataset's own embedder list, not the registry's two)."""
    from retrieval_response.reports.llm_cost import estimate
    from retrieval_response.workflow_config.defaults import with_defaults
    from retrieval_response.workflow_config.plan import dataset_units

    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}])
    config["datasets"]["tiny"]["rankers"] = ["PML3"]
    units = dataset_units(with_defaults(config))
    stages = estimate(config, tmp_path).workload.stages
    assert len(units) == 1 and stages["topk"].calls == stages["grade"].calls == 2 * 2 * len(units)


def test_ideal_answers_are_the_requests_the_answer_ideal_rule_makes(tmp_path):
    """The ideal answers priced are ``llm_requests.ideal_answer_requests`` of the prepared texts: a-0 has
    the 2 positives of the (Nc 6, Np 2) design but too few negatives to serve it, and its Np 2
    ideal answer is asked for all the same (one per (query, Np) of ``plan.dataset_nps``)."""
    from retrieval_response.datasets import prepare
    from retrieval_response.reports.llm_cost import estimate
    from retrieval_response.workflow_config.defaults import with_defaults
    from retrieval_response.workflow_config.llm_requests import ideal_answer_requests
    from retrieval_response.workflow_config.plan import dataset_nps

    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}, {"Nc": 6, "Np": 2, "K": [1]}])
    texts, _ = prepare("generic", tmp_path / "tiny.jsonl", n_queries=None, seed=0, designs=[(3, 1), (6, 2)])
    requests = ideal_answer_requests(texts, dataset_nps(with_defaults(config), "tiny"))
    assert sorted(requests.select("id", "Np").iter_rows()) == [("a-0", 1), ("a-0", 2), ("a-1", 1)]
    assert estimate(config, tmp_path).workload.stages["ideal"].calls == requests.height


def test_the_json_record_holds_the_printed_figures(tmp_path, capfd):
    """``--json``'s record holds what the command prints: each stage's calls and tokens, the
    total, the dollars; and each role's price per million tokens and, with a token rate, the
    hours the run's tokens take at it."""
    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}], "openai/gpt-4o-mini", "openai/gpt-4o")
    config["llm"]["pacing"] = {"tokens_per_minute": 1000}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    llm_cost.main([str(tmp_path / "config.yaml"), "--directory", str(tmp_path), "--json", str(tmp_path / "cost.json")])
    printed = capfd.readouterr().out
    record = json.loads((tmp_path / "cost.json").read_text())["results"]
    labels = {"ideal answers": "ideal", "top-K answers": "topk", "grades": "grade", "erag judgments": "erag",
              "udcg judgments": "udcg", "umbrela judgments": "umbrela"}
    rows = {m[0]: [int(v.replace(",", "")) for v in m[1:]]
            for m in re.findall(r"^(\w[\w -]*?)\s{2,}([\d,]+)\s+([\d,]+)\s+([\d,]+)", printed, re.M)}
    assert set(rows) == {*labels, "total"}
    for label, stage in labels.items():
        figures = record["stages"][stage]
        assert rows[label] == [figures["calls"], round(figures["prompt_tokens"]), round(figures["completion_tokens"])]
    total = re.search(r"^calls=(\d+) prompt_tokens=(\d+) completion_tokens=(\d+) dollars=([\d.]+)$", printed, re.M)
    assert rows["total"] == [int(total[1]), int(total[2]), int(total[3])]
    assert [record["total"][k] for k in ("calls", "prompt_tokens", "completion_tokens")] == rows["total"]
    assert f"{record['dollars']['total']:.2f}" == total[4]
    assert record["judgments"] == {"pairs": 6, "exact": True}
    assert record["dollars_per_million"]["generator"]["prompt"] > 0
    assert record["hours_at_token_limit"] == pytest.approx(record["total"]["tokens"] / 1000 / 60)


def test_a_corpus_level_config_counts_one_ideal_and_one_answer_per_ranker_and_k(capfd, monkeypatch):
    monkeypatch.chdir(REPO)
    llm_cost.main([str(REPO / "config/corpus.yaml")])
    text = capfd.readouterr().out
    counts = {m[0]: int(m[1].replace(",", "")) for m in re.findall(r"^(ideal answers|top-K answers|grades)\s+([\d,]+)",
                                                                    text, re.M)}
    # 12 queries, 2 rankers (ML6, BM25), K = 1..10
    assert counts == {"ideal answers": 12, "top-K answers": 12 * 2 * 10, "grades": 12 * 2 * 10}


def test_a_given_price_prices_any_model_and_answers_count_at_max_tokens(tmp_path, capfd, monkeypatch):
    """A self-hosted model has no price in litellm's table: ``--price`` gives one per million
    tokens; answers count at the generator's ``max_tokens`` unless ``--answer-tokens`` says otherwise."""
    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}], "llamacpp/self-hosted", "llamacpp/self-hosted")
    config["llm"]["generator"]["max_tokens"] = 33
    est = llm_cost.estimate(config, tmp_path, prices={"llamacpp/self-hosted": (2.0, 8.0)})
    stages = est.workload.stages
    assert est.answer_tokens == est.max_answer_tokens == 33
    assert stages["topk"].completion_tokens == 33 * stages["topk"].calls
    prompt = sum(round(sum(stages[n].prompt_tokens for n in names))
                 for names in (llm_cost.GENERATOR_STAGES, ("grade", "umbrela")))
    assert est.dollars()[0] == pytest.approx(prompt * 2.0 / 1e6)
    assert llm_cost.estimate(config, tmp_path).dollars() is None
    assert llm_cost.estimate(config, tmp_path, answer_tokens=5).workload.stages["topk"].completion_tokens \
        == 5 * stages["topk"].calls

    (tmp_path / "config.yaml").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)
    llm_cost.main(["config.yaml", "--price", "llamacpp/self-hosted=2,8"])
    assert not capfd.readouterr().out.strip().endswith("dollars=unknown")
    with pytest.raises(SystemExit):
        llm_cost.main(["config.yaml", "--price", "llamacpp/self-hosted=2"])
    assert "expected MODEL=PROMPT,COMPLETION" in capfd.readouterr().err


def test_the_estimate_never_fetches_litellms_price_map():
    """Run as a user would, without LITELLM_LOCAL_MODEL_COST_MAP, every request through a proxy that
    does not exist: litellm's remote price map would be a failed fetch and a warning on stderr."""
    env = {name: value for name, value in python_env().items() if name != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env |= {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    proc = subprocess.run([sys.executable, "-m", "retrieval_response.reports.llm_cost", "config/paper.yaml"],
                          capture_output=True, text=True, cwd=REPO, env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert LAST_LINE.match(proc.stdout.strip().splitlines()[-1])


def test_queries_scale_each_datasets_workload_per_query(tmp_path):
    """The tiny config has 2 queries; at 50 queries every stage has 25 times the calls and the same
    tokens per call; without the config's data --queries is refused."""
    from retrieval_response.reports.llm_cost import estimate, report

    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}])
    base, scaled = estimate(config, tmp_path), estimate(config, tmp_path, queries=50)
    for name, stage in base.workload.stages.items():
        assert scaled.workload.stages[name].calls == 25 * stage.calls
        if stage.calls:
            assert scaled.workload.stages[name].prompt_tokens == pytest.approx(25 * stage.prompt_tokens)
    assert "scaled from its sampled queries to 50 queries" in report(scaled, "tiny")
    missing = config | {"datasets": {name: d | {"path": str(tmp_path / "absent.jsonl")}
                                     for name, d in config["datasets"].items()}}
    with pytest.raises(ValueError, match="--queries"):
        estimate(missing, tmp_path, queries=50)


def test_a_price_in_the_config_prices_its_model_and_the_command_line_wins(tmp_path):
    """``llm.<role>.price_per_million`` prices a model litellm has no price for; ``--price`` (here
    ``prices``) wins over it; the key is no setting of the calls (``ModelConfig`` leaves it out)."""
    from retrieval_response.llm.config import ModelConfig

    config = _tiny(tmp_path, [{"Nc": 3, "Np": 1, "K": [1, 3]}], "llamacpp/self-hosted", "llamacpp/self-hosted")
    config["llm"]["generator"]["price_per_million"] = {"input": 2.0, "output": 8.0}
    est = llm_cost.estimate(config, tmp_path)
    assert est.price_per_million("llamacpp/self-hosted") == (2.0, 8.0) and est.dollars() is not None
    assert llm_cost.estimate(config, tmp_path, prices={"llamacpp/self-hosted": (1.0, 1.0)}).price_per_million(
        "llamacpp/self-hosted") == (1.0, 1.0)
    assert ModelConfig.from_mapping(config["llm"]["generator"]) == ModelConfig("llamacpp/self-hosted")
