"""The runner: configuration, run identity, the execution plan and the executors that play episodes
and record trials into the store."""
