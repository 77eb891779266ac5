"""The agents: their registry and specs, the views they are handed, the built-in scripted agents and
critics, model-backed agents, the sandbox and the transports that run an agent in a worker."""
