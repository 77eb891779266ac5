"""A trial: its spec, the episode that plays it (policy, critic, user, tools), its deadlines and seeds,
and the replay of a recorded one."""
