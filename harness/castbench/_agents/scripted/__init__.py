"""The scripted agents: deterministic offline policies, critics and simulated users (baselines, floors
and test opponents), driven by seeds only."""
