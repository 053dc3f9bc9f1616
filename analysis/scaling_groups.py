"""Which runs belong together in a scaling study (analysis/scaling_table.py, analysis/perfmodel/validate_ranks.py).

A run's scaling group is its environment and its `config_key` (the runner's "k=v;..." of the trial's
parameters, sorted, ranks and nodes left out: experiments/runner.cpp run_start), as `v_scaling` groups them.
One rank reduces nothing, so a 1-rank run stands for every transport and reduction mode of its configuration:
its baseline key leaves those parameters out (experiments/scaling_cpu_16core.toml runs only the
shared-memory blocking one).
"""

# Parameters a 1-rank run does not depend on: its baseline is matched without them.
REDUCTION_PARAMS = frozenset({"transport", "non_blocking_mpi", "blocking_mpi", "gradient_bucket_mb",
                              "gradient_buckets_min"})


def parse_key(config_key):
    """The configuration key as a dict."""
    return dict(item.split("=", 1) for item in config_key.split(";") if "=" in item) if config_key else {}


def base_key(environment_id, config_key):
    """The key a multi-rank run and the 1-rank runs that are its baseline share."""
    params = parse_key(config_key)
    return environment_id, tuple(sorted((k, v) for k, v in params.items() if k not in REDUCTION_PARAMS))
