"""Checking a domain's tasks (`domains validate`, `--tasks-file`): every gold solvable, graded
passing, nothing unknowable. Generating tasks, their claims and the `domains new` template are the
castbench_authoring satellite's (plugins/), which uses this.

It sits above grading and the scripted agents, which it uses; the domain model below knows
nothing of it."""
