"""Tools for domain authors: drawing task splits from a generator, the claims a task's records
rule out, and validating a domain (every gold solvable, graded passing, nothing unknowable).

They sit above grading and the scripted agents, which they use; the domain model below knows
nothing of them."""
