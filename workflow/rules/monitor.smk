"""Monitor what was chosen (docs/TRACES.md#monitor-what-was-chosen): with traces that have a time,
the verdict's recommended measure and each target per system and period, with bootstrap intervals
and control-band flags (decide.monitor); the figures rule draws a figure per system from it.
"""

MONITOR = RUN_MODE == RunMode.TRACES and TIMED_TRACES
"""True when the run monitors: traces, some of which have a time."""
MONITOR_TABLE = "results/analysis/monitor.parquet"


if RUN_MODE == RunMode.TRACES:

    rule monitor:
        input:
            graded="results/analysis/graded.parquet",
            verdict="results/analysis/verdict.parquet",
        output:
            table=MONITOR_TABLE,
        log:
            "logs/monitor.log",
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            period=config["monitor"]["period"],
            resamples=ANALYSIS["bootstrap_resamples"],
            seed=ANALYSIS["seed"],
        script:
            "../scripts/monitor.py"
