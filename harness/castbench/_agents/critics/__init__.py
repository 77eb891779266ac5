"""Built-in critics: rules (deployable), oracle and noisy (privileged simulations)."""
