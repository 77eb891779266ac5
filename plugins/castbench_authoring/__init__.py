"""castbench's authoring tools, a satellite of the core (no extra: it ships in castbench's wheel):

- `castbench domains new NAME` (`castbench_authoring.template`, `castbench.new_domain`): a working
  domain pack copied from the template under `domain-template/` (package data);
- generating a domain's task splits (`castbench_authoring.generation`: `Generator`, the drafts and
  families a pack's `generate.py` declares) and the false claims its records rule out
  (`castbench_authoring.claims`), read through `castbench.domain`;
- `castbench tasks generate` (`castbench_authoring.private`, `castbench.generate_private`): a
  private test split;
- `castbench domains validate` (`castbench_authoring.validate`, `castbench_authoring.oracle_check`,
  `castbench.validate_domain`): every task's gold replays and is graded passing, the oracle solves
  it, the refusing floor passes none; a private split's file the same way;
- parity with a published benchmark's own grader (`castbench_authoring.parity`, the τ packs').

The commands come in through the `castbench.commands` entry point (`domains.new`,
`domains.validate`, `tasks.generate`: subcommands of the core's groups); the core names nothing
here but the public names its facades read.
"""
