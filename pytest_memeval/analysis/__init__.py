"""Analysis, pytest-free: aggregation, statistics, gates, regression, published baselines."""
