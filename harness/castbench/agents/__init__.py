"""Agents: the protocols a policy, critic and simulated user implement, the built-in scripted and
model-backed agents, and the transports that carry an agent call into a worker, a thread or a service."""
